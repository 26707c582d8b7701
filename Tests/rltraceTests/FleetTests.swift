import Foundation
import LTTngControl
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Reports across hosts (docs/production.md, "Reports across hosts"): a relay daemon's tree of
// several hosts read at once. Two sources of hosts: copies of the committed demo trace re-hosted
// by Tests/Tools/ctf_rehost.py (another host name, trace UUID and wall clock; the same monotonic
// readings and pids — the hard case: every pid, tid and loop id collides), and two real session
// daemons with host names of their own (UTS namespaces) streaming to one real lttng-relayd.

private let rehostTool = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../Tools/ctf_rehost.py").standardizedFileURL.path

/// A tree `HOST/SESSION/…` of the demo trace as host `alpha` (its own clock) and as host `beta`,
/// whose wall clock is `shiftNs` ahead.
private func fleetTree(shiftNs: Int64) throws -> String {
    let dir = try scratchDirectory("fleet")
    for (host, shift) in [("alpha", Int64(0)), ("beta", shiftNs)] {
        let r = try runProgram("/usr/bin/python3", [rehostTool, demoTrace, "\(dir)/\(host)/rltrace-demo-20261127-000000", host, String(shift)], timeout: 60)
        if r.status != 0 { throw TestSetupError(message: "ctf_rehost.py: \(r.stderr)") }
    }
    return dir
}

private func json(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text.prefix(300))")
}

/// Every leaf of `a` and `b` (same shape) that differs, by key path: (path, a's value, b's value).
private func differences(_ a: Any, _ b: Any, _ path: String = "") -> [(String, Any, Any)] {
    switch (a, b) {
    case (let x as [String: Any], let y as [String: Any]):
        guard Set(x.keys) == Set(y.keys) else { return [(path + ".{keys}", x.keys.sorted(), y.keys.sorted())] }
        return x.keys.sorted().flatMap { differences(x[$0]!, y[$0]!, path + "." + $0) }
    case (let x as [Any], let y as [Any]):
        guard x.count == y.count else { return [(path + ".count", x.count, y.count)] }
        return zip(x, y).enumerated().flatMap { differences($1.0, $1.1, path + "[\($0)]") }
    default:
        return (a as? NSObject) == (b as? NSObject) ? [] : [(path, a, b)]
    }
}

@Suite("reports across hosts: --host, each host's clock, every command", .serialized)
struct FleetTests {
    @Test("a tree of two hosts: each host's loops as its traces alone give them, its times moved by exactly its clock's shift", arguments: [Int64(3_600_000_000_000), -3_600_000_000_000])
    func eachHostAsAlone(shiftNs: Int64) throws {
        let tree = try fleetTree(shiftNs: shiftNs)
        defer { try? FileManager.default.removeItem(atPath: tree) }
        let fleet = try run("rltrace", ["report", "--format", "json", tree])
        #expect(fleet.status == 0, "\(fleet.err)")
        let doc = try json(fleet.out)
        let trace = try #require(doc["trace"] as? [String: Any])
        let hosts = try #require(trace["hosts"] as? [[String: Any]])
        #expect(hosts.map { $0["name"] as? String } == ["alpha", "beta"])
        #expect(hosts.map { $0["shiftNs"] as? Int64 } == [0, shiftNs])
        #expect(hosts.map { $0["loops"] as? Int } == [2, 2])
        // Nothing was clamped: one host's clock never holds another's events back.
        #expect(!(doc["warnings"] as? [String] ?? []).contains { $0.contains("earlier than the event before") }, "\(doc["warnings"] ?? "")")
        let loops = try #require(doc["loops"] as? [[String: Any]])
        #expect(loops.map { $0["host"] as? String } == ["alpha", "alpha", "beta", "beta"])
        for (host, shift) in [("alpha", Int64(0)), ("beta", shiftNs)] {
            let alone = try json(try run("rltrace", ["report", "--format", "json", "\(tree)/\(host)"]).out)
            let mine = loops.filter { $0["host"] as? String == host }
            let diffs = differences(mine, try #require(alone["loops"] as? [[String: Any]]))
            // Only absolute times differ, each by exactly the shift (durations, counts, names,
            // lateness of timers, pids and loop ids are the host's own).
            for (path, a, b) in diffs {
                let x = (a as? NSNumber)?.int64Value, y = (b as? NSNumber)?.int64Value
                #expect(path.hasSuffix("Ns") && x != nil && y != nil && x! - y! == shift, "\(host) \(path): \(a) vs \(b)")
            }
            #expect(shift == 0 ? diffs.isEmpty : diffs.count > 10, "\(host): \(diffs.count) times differ")
        }
    }

    @Test("--host with every command equals the command on that host's traces alone; unknown host: exit 4 naming the hosts")
    func hostSelectionEveryCommand() throws {
        let tree = try fleetTree(shiftNs: 2_000_000_000)
        defer { try? FileManager.default.removeItem(atPath: tree) }
        let out = try scratchDirectory("fleet-out")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let commands: [[String]] = [
            ["report"], ["report", "--format", "json"], ["report", "--format", "csv"], ["report", "--format", "html"],
            ["report", "--format", "lami"], ["hangs"], ["hangs", "--format", "json"],
            ["histogram", "--of", "iteration", "--by", "loop"], ["histogram", "--of", "callout", "--by", "item"],
            ["timeline"], ["timeline", "--begin", "300ms", "--end", "700ms"], ["report", "--begin", "1s", "--end", "2s", "--kind", "timer"],
            ["export", "--format", "chrome", "-o", "OUT"], ["export", "--format", "perfetto", "-o", "OUT"],
        ]
        for (i, c) in commands.enumerated() {
            for (j, pattern) in ["beta", "b*"].enumerated() {
                let a = c.map { $0 == "OUT" ? "\(out)/a\(i)-\(j)" : $0 }, b = c.map { $0 == "OUT" ? "\(out)/b\(i)-\(j)" : $0 }
                let selected = try run("rltrace", a + ["--host", pattern, tree])
                let alone = try run("rltrace", b + ["\(tree)/beta"])
                #expect(selected.status == 0 && alone.status == 0, "\(c): \(selected.err) \(alone.err)")
                #expect(selected.out == alone.out, "\(c) --host \(pattern) differs from the host alone")
                if c.contains("OUT") {
                    let x = FileManager.default.contents(atPath: "\(out)/a\(i)-\(j)"), y = FileManager.default.contents(atPath: "\(out)/b\(i)-\(j)")
                    #expect(x != nil && x == y, "\(c)")
                }
            }
        }
        let none = try run("rltrace", ["report", "--host", "gamma", tree])
        #expect(none.status == 4 && none.err.contains("--host \"gamma\"") && none.err.contains("\"alpha\", \"beta\""), "\(none.err)")
        // --host narrows with the other selections: --pid is the pid on each host.
        let both = try json(try run("rltrace", ["report", "--format", "json", "--pid", "5117", tree]).out)
        #expect((both["loops"] as? [[String: Any]])?.count == 4)
        let one = try json(try run("rltrace", ["report", "--format", "json", "--pid", "5117", "--host", "alpha", "--loop", "18", tree]).out)
        #expect((one["loops"] as? [[String: Any]])?.map { "\($0["host"] ?? "")/\($0["loop"] ?? "")" } == ["alpha/18"])
    }

    @Test("every command names each loop with its host; colliding pids stay apart in the exports; diff pairs loops by host")
    func everyCommandNamesHosts() throws {
        let tree = try fleetTree(shiftNs: 5_000_000_000)
        defer { try? FileManager.default.removeItem(atPath: tree) }
        let text = try run("rltrace", ["report", tree])
        #expect(text.out.contains("host alpha: 2 loops, 1 trace") && text.out.contains("host beta: 2 loops, 1 trace"), "\(text.out.prefix(600))")
        #expect(text.out.contains("loop 17 — host alpha pid 5117") && text.out.contains("loop 17 — host beta pid 5117"))
        let hangs = try run("rltrace", ["hangs", tree]).out
        #expect(hangs.contains("loop 17 (alpha rl-example") && hangs.contains("loop 17 (beta rl-example"), "\(hangs)")
        let hist = try run("rltrace", ["histogram", "--of", "iteration", "--by", "loop", tree]).out
        let groups = hist.split(separator: "\n").filter { $0.contains(" values · ") }.map { String($0.prefix { $0 != ":" }) }
        #expect(groups == ["loop 17 on alpha \"rl-example\"", "loop 17 on beta \"rl-example\"", "loop 18 on alpha \"compute-worker\"", "loop 18 on beta \"compute-worker\""], "\(groups)")
        let timeline = try run("rltrace", ["timeline", tree]).out
        #expect(timeline.contains("(host alpha pid 5117") && timeline.contains("(host beta pid 5117"))
        let csv = try run("rltrace", ["report", "--format", "csv", tree]).out.split(separator: "\n")
        #expect(csv.first?.hasSuffix(",host") == true && Set(csv.dropFirst().map { $0.split(separator: ",").last.map(String.init) ?? "" }) == ["alpha", "beta"])
        // Chrome: the same pid on two hosts is two processes, each named with its host.
        let dir = try scratchDirectory("fleet-chrome")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try run("rltrace", ["export", "--format", "chrome", "-o", "\(dir)/c.json", tree]).status == 0)
        let chrome = try json(String(decoding: try #require(FileManager.default.contents(atPath: "\(dir)/c.json")), as: UTF8.self))
        let processes = (chrome["traceEvents"] as? [[String: Any]] ?? []).filter { $0["name"] as? String == "process_name" }
            .map { "\($0["pid"] ?? "")=\(($0["args"] as? [String: Any])?["name"] ?? "")" }
        #expect(processes.sorted() == ["4199421=beta: rl-example", "5117=alpha: rl-example"], "\(processes)")
        // Perfetto: the same, in its process descriptors (the default, deflated export, inflated
        // as Perfetto's reader does and decoded by protoc).
        #expect(try run("rltrace", ["export", "--format", "perfetto", "-o", "\(dir)/p.pftrace", tree]).status == 0)
        let plain = try PerfettoExportTests().inflate("\(dir)/p.pftrace")
        #expect(plain.runs >= 1)
        let decoded = try runProgram("/usr/bin/protoc", ["--proto_path=\(PerfettoExportTests.protoDir)", "--decode=perfetto.protos.Trace", "perfetto_subset.proto"],
                                     stdin: FileHandle(forReadingAtPath: plain.path))
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let described = decoded.stdout.components(separatedBy: "process {").dropFirst().map { block in
            block.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.prefix { $0 != "}" }.filter { $0.hasPrefix("pid:") || $0.hasPrefix("process_name:") }.joined(separator: " ")
        }
        #expect(Set(described) == ["pid: 5117 process_name: \"alpha: rl-example\"", "pid: 4199421 process_name: \"beta: rl-example\""], "\(Set(described))")
        // diff of a fleet with itself: every loop paired with its own host's, nothing added or removed.
        let d = try json(try run("rltrace", ["diff", "--format", "json", tree, tree]).out)
        let statuses = (d["loops"] as? [[String: Any]] ?? []).map { $0["status"] as? String ?? "" }
        #expect(statuses == ["both", "both", "both", "both"], "\(statuses)")
        // diff --host: the host's loops on both sides.
        let one = try json(try run("rltrace", ["diff", "--format", "json", "--host", "beta", tree, tree]).out)
        #expect((one["loops"] as? [[String: Any]] ?? []).map { $0["status"] as? String ?? "" } == ["both", "both"])
        // top runs a program on this host: a --host naming another refuses before running it.
        let marker = "\(tree)/ran"
        let top = try run("rltrace", ["top", "--batch", "--count", "1", "--host", "no-such-host", "--", "/bin/touch", marker])
        #expect(top.status == 4 && top.err.contains("--host \"no-such-host\""), "\(top.err)")
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test("two hosts (session daemons with host names of their own) streaming to one relay daemon, one a flight recorder: report on its tree names both, and equals each host's report")
    func twoHostsToOneRelay() throws {
        guard geteuid() == 0 else { return }    // a host name of its own needs a UTS namespace
        let hosts = try TwoHostFleet(tag: "fleet")
        defer { hosts.stop() }
        let relayOut = hosts.relayOut, relay = hosts.relay, names = TwoHostFleet.names, daemons = hosts.daemons
        // Host a records everything; host b is a flight recorder sending a snapshot per hang.
        let recorders = try daemons.enumerated().map { i, d in
            try BackgroundRecorder(d, ["record", "--all"] + (i == 1 ? ["--on-hang", "250ms"] : []) + ["-o", relay.sessionURL])
        }
        for d in daemons { try waitActiveSessions(1, daemon: d) }
        // One service per host, one hang each (host b's twice as long).
        let services = try daemons.enumerated().map { i, d in
            try Service(["--hangs", "1", "--first", "400", "--hold", "\(300 * (i + 1))", "--duration", "1500"], daemon: d)
        }
        for s in services { #expect(try s.finish().hangsAt.count == 1) }
        for r in recorders { let (status, err) = r.stop(SIGINT); #expect(status == 0, "\(err)") }
        #expect(contents(relayOut.path) == names, "\(contents(relayOut.path))")
        #expect(snapshotDirectories(below: relayOut.appendingPathComponent(names[1])).count == 1)
        let fleet = try reportJSON(relayOut.path)
        let loops = try #require(fleet["loops"] as? [[String: Any]])
        #expect(Set(loops.compactMap { $0["host"] as? String }) == Set(names))
        #expect(((fleet["trace"] as? [String: Any])?["hosts"] as? [[String: Any]])?.map { $0["name"] as? String } == names)
        for (i, n) in names.enumerated() {
            // `--host` on the tree is the host's directory alone, byte for byte.
            let selected = try run("rltrace", ["report", "--format", "json", "--host", n, relayOut.path])
            let alone = try run("rltrace", ["report", "--format", "json", relayOut.path + "/" + n])
            #expect(selected.status == 0 && selected.out == alone.out, "\(selected.err)")
            let mine = try json(alone.out)
            let perLoop = { (r: [String: Any]) in reportCounts(r).filter { $0.hasPrefix("pid ") } }
            #expect(!perLoop(mine).isEmpty && perLoop(mine) == perLoop(["loops": loops.filter { $0["host"] as? String == n }]), "\(n)")
            let h = reportHangDurations(mine)
            #expect(h.count == 1 && abs(h[0] - 300_000_000 * (i + 1)) < 60_000_000, "\(n): \(h)")
        }
        let hangs = try run("rltrace", ["hangs", relayOut.path]).out
        #expect(names.allSatisfy { hangs.contains("(\($0) hang-workload") }, "\(hangs)")
    }
}
