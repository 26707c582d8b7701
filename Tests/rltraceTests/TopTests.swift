import Foundation
import LTTngControl
import Testing
#if canImport(Glibc)
import Glibc
#endif

// `rltrace top` (docs/live.md), a live view over LTTng's live protocol (whose wire structs
// LTTngLiveTests checks against lttng-viewer-abi.h): real lttng-sessiond and lttng-relayd daemons (started
// here, or by `rltrace top -- COMMAND`, and stopped by pid): a hang seen in progress, totals equal
// to `rltrace report` on the relay daemon's copy of the trace, the full-screen view driven
// through tmux, and bad input.

/// The snapshots of `top --batch --format json` (one JSON object per line).
func topSnapshots(_ out: String) throws -> [[String: Any]] {
    try out.split(separator: "\n").map { line in
        try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
    }
}

func loops(_ snap: [String: Any]) -> [[String: Any]] { snap["loops"] as? [[String: Any]] ?? [] }

/// Runs rltrace with `env` added to this process's environment, with a time limit.
func rltraceTop(_ args: [String], env: [String: String] = [:], timeout: Double = 120) throws -> Run {
    var e = ProcessInfo.processInfo.environment
    for (k, v) in env { e[k] = v }
    let r = try runProgram(binDir.appendingPathComponent("rltrace").path, args, environment: e, timeout: timeout)
    return Run(out: r.stdout, err: r.stderr, status: r.status)
}

/// `swift test --filter rltraceTests.TopTests` runs its suites.
@Suite("rltrace top") struct TopTests {}

extension TopTests {
@Suite("rltrace top: live sessions through a real lttng-relayd", .serialized)
struct Live {
    var workload: String { binDir.appendingPathComponent("hang-workload").path }
    var example: String { binDir.appendingPathComponent("rl-example").path }

    @Test("attached to two sessions of a relayd (--all): a 3 s hang shows in progress within two refreshes, both sessions' loops listed")
    func hangInProgressAttached() throws {
        // The relay daemon first: stopped last, once the session daemon (its only client) is gone.
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-top-relayd-\(getpid())")
        defer { try? FileManager.default.removeItem(at: out) }
        let relay = try PrivateRelayDaemon.start(outputDirectory: out)
        defer { relay.stop() }
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        var sessions: [LiveRecording] = []
        // Without waiting for the data to be consumed (nobody reads these sessions any more).
        defer { for s in sessions { s.discard() } }
        for name in ["top-a-\(getpid())", "top-b-\(getpid())"] {
            sessions.append(try LiveRecording.start(
                sessionName: name,
                channels: [RecordingChannel(name: "runloop", eventPatterns: ["runloop:*"], contexts: ["vpid", "vtid", "procname"])],
                livePeriodMicroseconds: 100_000,
                relay: .running(sessionURL: relay.sessionURL, liveHost: "127.0.0.1", livePort: relay.livePort), cli: daemon.cli))
        }
        // Listing.
        let list = try rltraceTop(["top", "net://127.0.0.1:\(relay.livePort)"])
        #expect(list.status == 0)
        #expect(list.out.contains("/top-a-\(getpid()) (timer = 100000") && list.out.contains("/top-b-\(getpid())"), "\(list.out)")
        // The program hangs 3 s in the timer "parser", 1.5 s after it starts.
        let program = Process()
        program.executableURL = URL(fileURLWithPath: workload)
        program.arguments = ["--hangs", "1", "--first", "1500", "--hold", "3000", "--duration", "6000"]
        program.environment = daemon.applicationEnvironment
        program.standardOutput = FileHandle.nullDevice
        try program.run()
        defer { if program.isRunning { program.terminate() }; program.waitUntilExit() }
        let r = try rltraceTop(["top", "net://127.0.0.1:\(relay.livePort)", "--all", "--from-beginning", "--batch", "--interval", "1s",
                                "--count", "6", "--format", "json"], env: ["RLTRACE_HANG_THRESHOLD": "250ms"])
        #expect(r.status == 0, "\(r.err)")
        let snaps = try topSnapshots(r.out)
        #expect(snaps.count == 6)
        let rows = snaps.flatMap(loops)
        #expect(Set(rows.compactMap { $0["session"] as? String }) == ["top-a-\(getpid())", "top-b-\(getpid())"])
        #expect(rows.allSatisfy { ($0["procname"] as? String) == "hang-workload" && ($0["host"] as? String) != nil })
        // When the hang began (its record, in progress or ended), and the first refresh after it.
        let hangs = rows.flatMap { ($0["hangs"] as? [[String: Any]] ?? []) + ([$0["hang"] as? [String: Any]].compactMap { $0 }) }
        let begin = try #require(hangs.compactMap { $0["beginNs"] as? Int64 }.min(), "no hang seen:\n\(r.out)")
        let firstAfter = try #require(snaps.firstIndex { ($0["intervalEndNs"] as? Int64 ?? 0) >= begin }, "no snapshot after the hang began")
        let inProgress = snaps.indices.filter { i in
            loops(snaps[i]).contains { ($0["hang"] as? [String: Any])?["inProgress"] as? Bool == true && ($0["hang"] as? [String: Any])?["name"] as? String == "parser" }
        }
        #expect(!inProgress.isEmpty, "no snapshot shows the hang in progress:\n\(r.out)")
        #expect((inProgress.first ?? 99) <= firstAfter + 1, "the hang began before snapshot \(firstAfter + 1) but shows in progress first in \((inProgress.first ?? 98) + 1)")

        // The relay daemon goes away under a viewer: exit 1, naming the relay daemon and the command.
        let viewer = Process()
        viewer.executableURL = binDir.appendingPathComponent("rltrace")
        viewer.arguments = ["top", "net://127.0.0.1:\(relay.livePort)/host/\(rows.first?["host"] as? String ?? "")/top-a-\(getpid())", "--batch"]
        let errURL = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-top-viewer-\(getpid()).err")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errURL) }
        viewer.standardError = try FileHandle(forWritingTo: errURL)
        viewer.standardOutput = FileHandle.nullDevice
        try viewer.run()
        sleep(2)
        relay.stop()
        let deadline = Date().addingTimeInterval(20)
        while viewer.isRunning && Date() < deadline { usleep(50_000) }
        if viewer.isRunning { viewer.terminate() }
        viewer.waitUntilExit()
        let err = String(decoding: FileManager.default.contents(atPath: errURL.path) ?? Data(), as: UTF8.self)
        #expect(viewer.terminationStatus == 1, "\(err)")
        #expect(err.contains("relay daemon at 127.0.0.1:\(relay.livePort)") && err.contains("closed the connection"), "\(err)")
    }

    @Test("top -- rl-example: the totals at the end equal rltrace report on the relayd's copy of the trace")
    func totalsEqualReport() throws {
        let dir = NSTemporaryDirectory() + "rltrace-top-totals-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try rltraceTop(["top", "--batch", "--interval", "1s", "--format", "json", "-o", dir, "--",
                                example, "--duration", "3", "--inject", "hang,spin,late-timer"])
        #expect(r.status == 0, "\(r.err)")
        let snaps = try topSnapshots(r.out)
        let final = try #require(snaps.last)
        #expect(final["final"] as? Bool == true, "the last snapshot is not the final one:\n\(r.out)")
        let report = try rltraceTop(["report", dir, "--format", "json"])
        #expect(report.status == 0, "\(report.err)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(report.out.utf8)) as? [String: Any])
        // Iterations, callouts and hangs: one definition each (a hang is a top-level iteration busy
        // past the threshold, or the watchdog's), live and from the file.
        let reported = (doc["loops"] as? [[String: Any]] ?? []).map {
            "\($0["pid"]!)/\($0["loop"]!): \($0["iterations"]!) iterations, \($0["callouts"]!) callouts, \(($0["hangs"] as? [Any])?.count ?? -1) hangs"
        }
        let live = loops(final).map { "\($0["pid"]!)/\($0["loop"]!): \($0["totalIterations"]!) iterations, \($0["totalCallouts"]!) callouts, \($0["totalHangs"]!) hangs" }
        #expect(!reported.isEmpty)
        #expect(live.sorted() == reported.sorted())
        #expect(reported.contains { $0.hasSuffix(" 1 hangs") }, "\(reported)")
        let events = (final["sessions"] as? [[String: Any]])?.first?["runloopEvents"] as? Int
        #expect(events == (doc["trace"] as? [String: Any])?["runloopEvents"] as? Int)
        // The spin and the late timer were seen live too.
        let rows = snaps.flatMap(loops)
        #expect(rows.reduce(0) { $0 + ($1["spins"] as? Int ?? 0) } >= 1)
        #expect(rows.reduce(0) { $0 + ($1["lateTimers"] as? Int ?? 0) } >= 1)
    }

    @Test("top takes the selection every command takes: with --kind timer its callout totals are the report's with --kind timer")
    func selectionEqualsReport() throws {
        let dir = NSTemporaryDirectory() + "rltrace-top-selection-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try rltraceTop(["top", "--batch", "--interval", "1s", "--format", "json", "--kind", "timer", "-o", dir, "--",
                                example, "--duration", "20", "--requests", "1000", "--inject", "hang"])
        #expect(r.status == 0, "\(r.err)")
        let final = try #require(try topSnapshots(r.out).last)
        let report = try rltraceTop(["report", dir, "--format", "json", "--kind", "timer"])
        #expect(report.status == 0, "\(report.err)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(report.out.utf8)) as? [String: Any])
        let reported = (doc["loops"] as? [[String: Any]] ?? []).map { "\($0["pid"]!)/\($0["loop"]!): \($0["iterations"]!) iterations, \($0["callouts"]!) callouts" }
        let live = loops(final).map { "\($0["pid"]!)/\($0["loop"]!): \($0["totalIterations"]!) iterations, \($0["totalCallouts"]!) callouts" }
        #expect(!reported.isEmpty && live.sorted() == reported.sorted(), "top \(live) against report \(reported)")
        // Only timers were counted.
        #expect((doc["loops"] as? [[String: Any]] ?? []).allSatisfy { Set(($0["calloutKinds"] as? [String: Any] ?? [:]).keys).isSubset(of: ["timer"]) })
    }

    @Test("four snapshots: top --batch --interval 1s --count 4 --format json -- rl-example --duration 5 --requests 3000 --inject hang")
    func doneCriterion() throws {
        let r = try rltraceTop(["top", "--batch", "--interval", "1s", "--count", "4", "--format", "json", "--",
                                example, "--duration", "5", "--requests", "3000", "--inject", "hang"])
        #expect(r.status == 0, "\(r.err)")
        let snaps = try topSnapshots(r.out)
        #expect(snaps.count == 4)
        #expect(snaps.filter { $0["final"] as? Bool == false && !loops($0).isEmpty }.count >= 3, "\(r.out)")
        let showing = snaps.filter { s in
            loops(s).contains { row in
                ((row["hangs"] as? [[String: Any]] ?? []) + [row["hang"] as? [String: Any]].compactMap { $0 }).contains { $0["name"] as? String == "hang-timer" }
            }
        }
        #expect(!showing.isEmpty, "no snapshot shows the hang:\n\(r.out)")
        // Recorded with no context: the watchdog's readings say the injected hang (a sleep) blocked.
        let seen = snaps.flatMap(loops).flatMap { row in
            ((row["hangs"] as? [[String: Any]] ?? []) + [row["hang"] as? [String: Any]].compactMap { $0 }).filter { $0["name"] as? String == "hang-timer" }
        }
        #expect(seen.contains { $0["onCpuNs"] as? Int64 != nil } && seen.allSatisfy { $0["state"] == nil || $0["state"] as? String == "blocked" }, "\(seen)")
        // With the watchdog's stack sample, symbolized: the function rl-example hangs in, by name and line.
        let frames = seen.compactMap { ($0["stack"] as? [String: Any])?["frames"] as? [[String: Any]] }
        #expect(frames.contains { f in f.contains { ($0["function"] as? String)?.contains("simulatedHangInRequestHandler") == true && $0["line"] as? Int != nil } },
                "no stack names the hung function: \(seen)")
    }

    @Test("a hang without the watchdog: an open callout older than --hang-threshold, judged against the live stream's newest time")
    func hangFromOpenCallout() throws {
        let r = try rltraceTop(["top", "--batch", "--interval", "500ms", "--count", "8", "--format", "json", "--hang-threshold", "250ms", "--",
                                workload, "--hangs", "1", "--first", "500", "--hold", "2500", "--duration", "4000"],
                               env: ["RLTRACE_HANG_THRESHOLD": "off"])
        #expect(r.status == 0, "\(r.err)")
        let snaps = try topSnapshots(r.out)
        let seen = snaps.flatMap(loops).compactMap { $0["hang"] as? [String: Any] }
        #expect(seen.contains { $0["source"] as? String == "callout" && $0["kind"] as? String == "timer" && $0["name"] as? String == "parser"
                                && ($0["durationNs"] as? Int64 ?? 0) >= 250_000_000 }, "\(r.out)")
        // The elapsed time grows from one refresh to the next.
        let elapsed = seen.compactMap { $0["durationNs"] as? Int64 }
        #expect(elapsed == elapsed.sorted())
        // No watchdog, no stack sample: the hang carries none.
        #expect(seen.allSatisfy { $0["stack"] == nil }, "\(seen)")
    }

    @Test("the full-screen view in tmux: loops shown, s changes the sort, q quits, leaves the alternate screen and prints the last screen")
    func interactive() throws {
        let logFile = NSTemporaryDirectory() + "rltrace-top-\(getpid()).log"
        defer { try? FileManager.default.removeItem(atPath: logFile) }
        let t = try TmuxView(columns: 160, rows: 30,
                             "\(binDir.appendingPathComponent("rltrace").path) top --interval 300ms --log \(logFile) -- \(workload) --hangs 0 --duration 20000")
        defer { t.stop() }
        let first = try t.waitFor("the loop's row") { $0.contains("hang-workload[") && $0.contains("IT/S") }
        #expect(first.contains("sort (busy ▼)"))
        try t.keys("s")
        _ = try t.waitFor("the sort to change") { $0.contains("sort (rate ▼)") }
        try t.keys("/")
        try t.keys("nomatch", "Enter")
        _ = try t.waitFor("the filter") { $0.contains("no loop matches the filter \"nomatch\"") }
        try t.keys("s")
        try t.keys("/")
        try t.keys("Enter")
        _ = try t.waitFor("the filter cleared") { $0.contains("hang-workload[") }
        try t.keys("q")
        #expect(t.exitStatus() == "0")
        #expect(try t.alternateScreen() == false, "the alternate screen was not left")
        // The last screen stays: printed again on the normal screen, without the keys' line.
        let after = try t.screen()
        #expect(after.contains("hang-workload[") && after.contains("IT/S") && !after.contains("keys: s sort"), "\(after)")
    }

    @Test("the full-screen view at 80×24 and 200×50: loop, busy %, p99 and the hang always shown; the final screen stays",
          arguments: [(80, 24), (200, 50)])
    func layout(_ columns: Int, _ rows: Int) throws {
        let logFile = NSTemporaryDirectory() + "rltrace-top-\(getpid())-\(columns).log"
        defer { try? FileManager.default.removeItem(atPath: logFile) }
        // A 2.5 s hang in the timer "parser" 1 s after the start; the program ends at 4.5 s.
        let t = try TmuxView(columns: columns, rows: rows,
                             "\(binDir.appendingPathComponent("rltrace").path) top --interval 300ms --log \(logFile) -- \(workload) --hangs 1 --first 1000 --hold 2500 --duration 4500")
        defer { t.stop() }
        let hung = try t.waitFor("the hang in progress") { $0.contains("▶ HANG") && $0.contains("parser") }
        let lines = hung.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.count <= columns }, "\(hung)")
        let header = try #require(lines.first { $0.contains("LOOP") }, "\(hung)")
        for title in ["LOOP", "BUSY%", "P99", "WORST / HANG"] { #expect(header.contains(title), "\(title) missing at \(columns) columns:\n\(hung)") }
        if columns >= 200 {
            for title in ["HOST", "PROCESS", "TID", "THREAD", "IT/S", "P50", "LATE", "SPIN", "DISC"] { #expect(header.contains(title), "\(title) missing:\n\(hung)") }
        }
        // The row shows the hang with its callout's name, whole.
        let row = try #require(lines.first { $0.contains("▶ HANG") }, "\(hung)")
        #expect(row.contains("timer \"parser\""), "\(row)")
        // Under the table, once the watchdog has sampled it: the hung thread's stack, innermost
        // frame first — the function the workload computes in — every line within the width.
        let sampled = try t.waitFor("the hang's stack") { $0.contains("stack sample") && $0.contains("#0 ") }
        let stackLines = sampled.split(separator: "\n").map(String.init)
        #expect(stackLines.allSatisfy { $0.count <= columns }, "\(sampled)")
        let title = try #require(stackLines.first { $0.contains("stack sample") }, "\(sampled)")
        #expect(title.hasPrefix("▶ HANG hang-workload[") && title.contains("in timer \"parser\""), "\(title)")
        #expect(stackLines.contains { $0.contains("#") && $0.contains("parseHugeDocument") }, "the hung function is not in the stack:\n\(sampled)")
        // The program ends: the view leaves the alternate screen and its final snapshot stays.
        #expect(t.exitStatus(timeout: 30) == "0")
        #expect(try t.alternateScreen() == false)
        let after = try t.screen()
        #expect(after.contains("final (session over)") && after.contains("hang-workload["), "the final screen is gone:\n\(after)")
        #expect(after.split(separator: "\n").allSatisfy { $0.count <= columns }, "\(after)")
    }

    @Test("--batch: every snapshot but the last covers exactly --interval of the traced clock, from the first; rates over what each covers")
    func intervalsFollowTheTraceClock() throws {
        // hang-workload's 10 ms heartbeat: 100 iterations per second. The relay daemon announces
        // the program's streams about a second after it starts: the first second arrives at once.
        let r = try rltraceTop(["top", "--batch", "--interval", "300ms", "--format", "json", "--",
                                workload, "--hangs", "0", "--duration", "2000"])
        #expect(r.status == 0, "\(r.err)")
        let snaps = try topSnapshots(r.out)
        #expect(snaps.count >= 6, "\(r.out)")
        let spans = snaps.map { ($0["intervalEndNs"] as? Int64 ?? 0) - ($0["intervalBeginNs"] as? Int64 ?? 0) }
        #expect(spans.dropLast().allSatisfy { $0 == 300_000_000 }, "spans \(spans)")
        for (a, b) in zip(snaps, snaps.dropFirst()) { #expect(a["intervalEndNs"] as? Int64 == b["intervalBeginNs"] as? Int64) }
        // The last one: its rate over the time it covers, not extrapolated from a sliver.
        let last = try #require(snaps.last)
        #expect(last["final"] as? Bool == true)
        #expect(spans.last! > 0 && spans.last! <= 300_000_000 + 200_000_000, "spans \(spans)")
        // Never more than the loop did (nothing extrapolated); about 100/s in every interval the loop
        // was still iterating through (a later snapshot counts more iterations), and whatever it did
        // in the intervals after its last iteration (the streams end a little after the program's loop).
        let totals = snaps.map { loops($0).first?["totalIterations"] as? Int ?? 0 }
        for (i, s) in snaps.enumerated() {
            for row in loops(s) {
                let rate = row["iterationsPerSecond"] as? Double ?? -1
                let running = totals[(i + 1)...].contains { $0 > totals[i] }
                #expect(rate >= (running ? 40 : 0) && rate <= 130, "\(rate) iterations/s in \(s)")
            }
        }
    }

    @Test("bad input: no relayd (6), an unknown session (3), a bad URL (64)")
    func badInput() throws {
        // A port nothing listens on.
        let port = try #require((20000..<30000).shuffled().first { !PrivateRelayDaemon.isListening(port: $0) })
        let r = try rltraceTop(["top", "net://127.0.0.1:\(port)"])
        #expect(r.status == 6)
        #expect(r.err.contains("127.0.0.1:\(port)"), "\(r.err)")
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-top-bad-\(getpid())")
        defer { try? FileManager.default.removeItem(at: out) }
        let relay = try PrivateRelayDaemon.start(outputDirectory: out)
        defer { relay.stop() }
        let u = try rltraceTop(["top", "net://127.0.0.1:\(relay.livePort)/host/nohost/nosession", "--batch", "--count", "1"])
        #expect(u.status == 3)
        #expect(u.err.contains("nohost/nosession") && u.err.contains("127.0.0.1:\(relay.livePort)"), "\(u.err)")
        let b = try rltraceTop(["top", "http://127.0.0.1"])
        #expect(b.status == 64)
        let c = try rltraceTop(["top", "--batch", "--", "/nonexistent/program"])
        #expect(c.status == 127)
    }
}
}

/// `rltrace top` in a tmux server of its own (-L), a known shell and terminal of `columns` × `rows`;
/// the command's exit status is written to a file, then the pane stays for the screen to be read.
final class TmuxView {
    let tmux: String, name: String, rcFile: String
    var env: [String: String]

    init(columns: Int, rows: Int, _ command: String) throws {
        tmux = try #require(which("tmux"), "tmux is not installed (scripts/install-deps.sh installs it)")
        name = "rltrace-top-\(getpid())-\(columns)x\(rows)"
        rcFile = NSTemporaryDirectory() + "\(name).rc"
        try? FileManager.default.removeItem(atPath: rcFile)
        env = ProcessInfo.processInfo.environment
        env["SHELL"] = "/bin/sh"
        env["TERM"] = "xterm-256color"
        env.removeValue(forKey: "TMUX")
        // Started through system(3): a tmux server started by Foundation's Process does not
        // outlive the client that started it.
        func q(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let cmd = "\(command); echo $? > \(rcFile); sleep 60"
        let started = system("SHELL=/bin/sh TERM=xterm-256color \(q(tmux)) -L \(q(name)) -f /dev/null new-session -d -s \(q(name)) -x \(columns) -y \(rows) \(q(cmd)) </dev/null >/dev/null 2>&1")
        #expect(started == 0)
    }

    func stop() {
        _ = try? run(["kill-server"])
        try? FileManager.default.removeItem(atPath: rcFile)
    }

    @discardableResult
    func run(_ args: [String]) throws -> ProgramRun { try runProgram(tmux, ["-L", name, "-f", "/dev/null"] + args, environment: env) }

    func screen() throws -> String {
        let c = try run(["capture-pane", "-t", name, "-p"])
        return c.stdout.isEmpty ? "(capture-pane: status \(c.status), \(c.stderr))" : c.stdout
    }

    func keys(_ k: String...) throws { try run(["send-keys", "-t", name] + k) }

    /// Whether the pane shows the alternate screen.
    func alternateScreen() throws -> Bool? {
        switch try run(["display-message", "-p", "-t", name, "#{alternate_on}"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) {
        case "1": true
        case "0": false
        default: nil
        }
    }

    func waitFor(_ what: String, timeout: Double = 30, _ ok: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var s = ""
        while Date() < deadline {
            s = try screen()
            if ok(s) { return s }
            usleep(100_000)
        }
        Issue.record("timed out waiting for \(what); the screen:\n\(s)")
        return s
    }

    /// The command's exit status, once it ended (nil after `timeout` seconds).
    func exitStatus(timeout: Double = 20) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while !FileManager.default.fileExists(atPath: rcFile) && Date() < deadline { usleep(100_000) }
        usleep(100_000)
        return (try? String(contentsOfFile: rcFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
