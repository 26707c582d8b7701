import Foundation
import LTTngControl
import Testing
#if canImport(Glibc)
import Glibc
#endif

// `rltrace top net://HOST:PORT` on a relay daemon that two hosts stream live sessions to
// (docs/production.md, "Reports across hosts"; docs/live.md): as FleetTests' two-host set-up, two
// real session daemons with host names of their own (UTS namespaces), each with a live session
// (LTTngControl's LiveRecording) recording rl-example, one real lttng-relayd. What top shows of
// each host is checked against `rltrace report` on the relay daemon's copy of the trace.

/// "host pid tid loop procname" of a top row or a report loop: how both name a loop.
private func loopName(_ l: [String: Any]) -> String {
    "\(l["host"] ?? "-") pid \(l["pid"] ?? "-") tid \(l["tid"] ?? "-") loop \(l["loop"] ?? "-") \(l["procname"] ?? "-")"
}

@Suite("rltrace top on a relay daemon of two hosts", .serialized)
struct TopFleetTests {
    @Test("top net://… --all --host GLOB: only that host's sessions and loops; without --host both hosts', each named by host as report names it, its totals report's")
    func hostSelectionOnTwoHosts() throws {
        guard geteuid() == 0 else { return }    // a host name of its own needs a UTS namespace
        let fleet = try TwoHostFleet(tag: "topfleet")
        defer { fleet.stop() }
        let relayOut = fleet.relayOut, relay = fleet.relay, names = TwoHostFleet.names, daemons = fleet.daemons
        let sessions = names.map { "top-fleet-\($0.suffix(1))-\(getpid())" }
        var recordings: [LiveRecording] = []
        defer { for r in recordings { r.discard() } }
        for (i, d) in daemons.enumerated() {
            recordings.append(try LiveRecording.start(sessionName: sessions[i], channels: [RecordingChannel(name: "runloop", eventPatterns: ["runloop:*"])],
                                                      livePeriodMicroseconds: 100_000,
                                                      relay: .running(sessionURL: relay.sessionURL, liveHost: "127.0.0.1", livePort: relay.livePort), cli: d.cli))
        }
        let url = "net://127.0.0.1:\(relay.livePort)"
        // The listing: every session with its host, and with --host only that host's.
        let deadline = Date().addingTimeInterval(10)
        var list = try rltraceTop(["top", url])
        while list.out.split(separator: "\n").count < 2 && Date() < deadline { usleep(100_000); list = try rltraceTop(["top", url]) }
        let lines = { (r: Run) in r.out.split(separator: "\n").map { String($0.prefix { $0 != " " }) } }
        #expect(list.status == 0 && lines(list).sorted() == (0..<2).map { "\(url)/host/\(names[$0])/\(sessions[$0])" }, "\(list.out)\(list.err)")
        let listA = try rltraceTop(["top", url, "--host", "rl-fleet-a"])
        #expect(listA.status == 0 && lines(listA) == ["\(url)/host/rl-fleet-a/\(sessions[0])"], "\(listA.out)\(listA.err)")

        // One rl-example per host, 2 s each, both run to their end before top attaches.
        let programs = try daemons.map { d in
            let p = Process()
            p.executableURL = binDir.appendingPathComponent("rl-example")
            p.arguments = ["--duration", "2", "--requests", "1000"]
            p.environment = d.applicationEnvironment
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            return p
        }
        for p in programs { p.waitUntilExit(); #expect(p.terminationStatus == 0) }

        // Four snapshots of 1 s from each session's first event: everything the programs recorded.
        let topArgs = ["top", url, "--all", "--from-beginning", "--batch", "--interval", "1s", "--count", "4", "--format", "json"]
        let onlyA = try rltraceTop(topArgs + ["--host", "rl-fleet-a"], timeout: 60)
        #expect(onlyA.status == 0, "\(onlyA.err)")
        let both = try rltraceTop(topArgs, timeout: 60)
        #expect(both.status == 0, "\(both.err)")
        // The text snapshots: each loop's line begins with its host (a column of its own).
        let textArgs = ["top", url, "--all", "--from-beginning", "--batch", "--interval", "1s", "--count", "2"]
        let hostColumn = { (r: Run) in Set(r.out.split(separator: "\n").filter { $0.contains("rl-example[") }.map { String($0.prefix { $0 != " " }) }) }
        let textA = try rltraceTop(textArgs + ["--host", "rl-fleet-*a"], timeout: 60)
        #expect(textA.status == 0 && hostColumn(textA) == ["rl-fleet-a"], "\(textA.out)\(textA.err)")
        let textBoth = try rltraceTop(textArgs, timeout: 60)
        #expect(textBoth.status == 0 && hostColumn(textBoth) == Set(names), "\(textBoth.out)\(textBoth.err)")
        let none = try rltraceTop(topArgs + ["--host", "rl-fleet-z*"], timeout: 60)
        #expect(none.status == 4 && none.err.contains("--host \"rl-fleet-z*\"") && none.err.contains("\"rl-fleet-a\", \"rl-fleet-b\""), "\(none.err)")

        // The relay daemon's copy, complete once the sessions ended.
        for r in recordings { try r.end() }
        let report = try run("rltrace", ["report", "--format", "json", relayOut.path])
        #expect(report.status == 0, "\(report.err)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(report.out.utf8)) as? [String: Any])
        let reported = doc["loops"] as? [[String: Any]] ?? []
        #expect(Set(reported.compactMap { $0["host"] as? String }) == Set(names))
        #expect(Set(reported.compactMap { $0["procname"] as? String }) == ["rl-example"])

        for (r, hosts) in [(onlyA, ["rl-fleet-a"]), (both, names)] {
            let snaps = try topSnapshots(r.out)
            #expect(snaps.count == 4, "\(r.out)")
            let last = try #require(snaps.last)
            // Its sessions: those of the hosts asked for, named with their hosts.
            let shown = (last["sessions"] as? [[String: Any]] ?? []).map { "\($0["host"] ?? "")/\($0["session"] ?? "")" }
            #expect(shown.sorted() == hosts.map { "\($0)/\(sessions[names.firstIndex(of: $0)!])" }, "\(shown)")
            // Its loops: exactly report's loops of those hosts, named as report names them.
            let rows = snaps.flatMap(loops)
            let mine = reported.filter { hosts.contains($0["host"] as? String ?? "") }
            #expect(!mine.isEmpty && Set(rows.map(loopName)) == Set(mine.map(loopName)), "top \(Set(rows.map(loopName))) report \(mine.map(loopName))")
            #expect(Set(rows.compactMap { $0["host"] as? String }) == Set(hosts))
            // The totals of the last snapshot: report's iterations and callouts, loop by loop.
            let live = loops(last).map { "\(loopName($0)): \($0["totalIterations"]!) iterations, \($0["totalCallouts"]!) callouts" }
            let fromFile = mine.map { "\(loopName($0)): \($0["iterations"]!) iterations, \($0["callouts"]!) callouts" }
            #expect(live.sorted() == fromFile.sorted())
        }
    }
}
