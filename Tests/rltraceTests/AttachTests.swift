import Foundation
import LTTngControl
import Testing
#if canImport(Glibc)
import Glibc
#endif

// `rltrace record --pid/--all` on programs started before it, and `-o net://` to a real
// lttng-relayd. Each test has its own private lttng-sessiond (PrivateSessionDaemon) standing for
// the host's daemon: the services are started with its LTTNG_HOME, so they register with it as
// programs register with a host's daemon, and rltrace runs where that daemon is the one `lttng`
// finds (inside its mount namespace, as root). Every daemon and program is stopped by its pid.

/// A `hang-workload` started before the recorder, registered with `daemon`; its output in a file
/// (read once it has exited: it prints its account at the end).
final class Service {
    let process = Process()
    let outURL: URL
    /// When it was started.
    let started = Date()
    var pid: Int32 { process.processIdentifier }

    init(_ args: [String], daemon: PrivateSessionDaemon, threshold: String = "100ms") throws {
        outURL = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-attach-service-\(getpid())-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        process.executableURL = binDir.appendingPathComponent("hang-workload")
        process.arguments = args
        var env = daemon.applicationEnvironment
        env["RLTRACE_HANG_THRESHOLD"] = threshold
        process.environment = env
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var isAlive: Bool { kill(pid, 0) == 0 }

    /// Waits for the program's own end (at most `timeout` s, then SIGKILL) and reads its account.
    func finish(timeout: Double = 30) throws -> HangWorkloadRun {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
        defer { try? FileManager.default.removeItem(at: outURL) }
        return try HangWorkloadRun(String(decoding: FileManager.default.contents(atPath: outURL.path) ?? Data(), as: UTF8.self))
    }

    deinit {
        if process.isRunning { kill(pid, SIGKILL); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: outURL)
    }
}

/// Waits until every pid is registered with `daemon` (it lists them in `lttng list -u`).
func waitRegistered(_ pids: [Int32], daemon: PrivateSessionDaemon, timeout: Double = 15) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let r = try? daemon.cli.registeredApplications(), pids.allSatisfy(r.contains) { return }
        usleep(50_000)
    }
    throw TestSetupError(message: "processes \(pids) did not register with the session daemon within \(timeout) s")
}

/// Waits until `daemon` has `count` active sessions.
func waitActiveSessions(_ count: Int, daemon: PrivateSessionDaemon, timeout: Double = 30) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let l = try? daemon.cli.run(["list"]), l.components(separatedBy: "[active").count - 1 >= count { return }
        usleep(50_000)
    }
    throw TestSetupError(message: "\(count) sessions did not become active within \(timeout) s")
}

/// `rltrace ARGS` where `daemon` is the session daemon `lttng` finds (its namespace and LTTNG_HOME).
func rltraceUnder(_ daemon: PrivateSessionDaemon, _ args: [String], timeout: Double = 120) throws -> Run {
    let argv = daemon.cli.launcherPrefix + [binDir.appendingPathComponent("rltrace").path] + args
    let exe = argv[0].hasPrefix("/") ? argv[0] : try #require(which(argv[0]))
    let r = try runProgram(exe, Array(argv.dropFirst()), environment: daemon.cli.environment, timeout: timeout)
    return Run(out: r.stdout, err: r.stderr, status: r.status)
}

/// The same, started in the background (ended by a signal to its pid: nsenter execs rltrace).
final class BackgroundRecorder {
    let process = Process()
    let errURL: URL
    init(_ daemon: PrivateSessionDaemon, _ args: [String]) throws {
        let argv = daemon.cli.launcherPrefix + [binDir.appendingPathComponent("rltrace").path] + args
        process.executableURL = URL(fileURLWithPath: argv[0].hasPrefix("/") ? argv[0] : try #require(which(argv[0])))
        process.arguments = Array(argv.dropFirst())
        process.environment = daemon.cli.environment
        errURL = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-attach-rec-\(getpid())-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }
    /// Sends `sig` and waits (SIGKILL after `timeout` s); returns the status and standard error.
    func stop(_ sig: Int32, timeout: Double = 60) -> (status: Int32, err: String) {
        kill(process.processIdentifier, sig)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        defer { try? FileManager.default.removeItem(at: errURL) }
        return (process.terminationStatus, String(decoding: FileManager.default.contents(atPath: errURL.path) ?? Data(), as: UTF8.self))
    }
    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        try? FileManager.default.removeItem(at: errURL)
    }
}

/// `report --format json` of `path`, as a dictionary.
func reportJSON(_ path: String) throws -> [String: Any] {
    let r = try run("rltrace", ["report", path, "--format", "json"])
    #expect(r.status == 0, "\(r.err)")
    return try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out)")
}

/// The pids of the report's loops.
func loopPIDs(_ report: [String: Any]) -> Set<Int> {
    Set((report["loops"] as? [[String: Any]] ?? []).compactMap { $0["pid"] as? Int })
}

/// The watchdog hangs of `hangs --format json` on `path`, each with the pid of its loop and
/// whether its stack samples name parseHugeDocument.
func watchdogHangs(_ path: String) throws -> [(pid: Int, named: Bool, samples: Int)] {
    let j = try run("rltrace", ["hangs", path, "--format", "json"])
    #expect(j.status == 0, "\(j.err)")
    return try hangRows(j.out).compactMap { row in
        guard let w = (row["hang"] as? [String: Any])?["watchdog"] as? [String: Any] else { return nil }
        let pid = row["pid"] as? Int ?? -1
        return (pid, frames(row).contains { ($0["function"] as? String)?.contains("parseHugeDocument") == true }, w["samples"] as? Int ?? 0)
    }
}

/// What a report counts (not when): the trace's events, and per loop its identity, iterations,
/// callouts, sleeps, wake reasons, items' counts and hangs' number.
func reportCounts(_ report: [String: Any]) -> [String] {
    let t = report["trace"] as? [String: Any] ?? [:]
    var lines = ["events \(t["events"] ?? "-") runloop \(t["runloopEvents"] ?? "-") discarded \(t["discardedEvents"] ?? "-")"]
    for loop in report["loops"] as? [[String: Any]] ?? [] {
        var line = ""
        for k in ["pid", "tid", "loop", "procname", "iterations", "topLevelIterations", "callouts", "sleeps", "polls", "spuriousWakes", "slowIterations"] {
            line += "\(k) \(loop[k] ?? "-") "
        }
        let reasons = (loop["wakeReasons"] as? [String: Int] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let items = (loop["items"] as? [[String: Any]] ?? []).map { "\($0["name"] ?? "")/\($0["kind"] ?? ""):\($0["count"] ?? "")" }.sorted()
        line += "wakes \(reasons) items \(items) hangs \((loop["hangs"] as? [Any])?.count ?? -1)"
        lines.append(line)
    }
    return lines.sorted()
}

/// The durations of the report's hangs, in order.
func reportHangDurations(_ report: [String: Any]) -> [Int] {
    (report["loops"] as? [[String: Any]] ?? []).flatMap { ($0["hangs"] as? [[String: Any]] ?? []).compactMap { $0["durationNs"] as? Int } }
}

/// The snapshot directories below `root` (a relay daemon's tree), in the order they were taken.
func snapshotDirectories(below root: URL) -> [String] {
    var found: [String] = []
    if let e = FileManager.default.enumerator(atPath: root.path) {
        for case let f as String in e where (f as NSString).lastPathComponent.hasPrefix("snapshot-") {
            found.append(root.path + "/" + f)
            e.skipDescendants()
        }
    }
    return found.sorted { (Int($0.split(separator: "-").last ?? "") ?? 0) < (Int($1.split(separator: "-").last ?? "") ?? 0) }
}

@Suite("record --pid/--all: attaching to running programs; -o net:// to a relay daemon", .serialized)
struct AttachTests {
    @Test("--pid: the loops and the hang (with its stack) of a program started before, and nothing of another; it runs on after")
    func pidRecordsThatProcessOnly() throws {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let dir = try scratchDirectory("attach-pid")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let traced = try Service(["--hangs", "1", "--first", "3000", "--hold", "300", "--duration", "14000"], daemon: daemon)
        let other = try Service(["--hangs", "2", "--first", "2500", "--every", "400", "--hold", "200", "--duration", "14000"], daemon: daemon)
        try waitRegistered([traced.pid, other.pid], daemon: daemon)
        let r = try rltraceUnder(daemon, ["record", "--pid", "\(traced.pid)", "--duration", "5s", "-o", dir + "/trace"])
        #expect(r.status == 0, "\(r.err)")
        #expect(traced.isAlive && other.isAlive, "the recorder's end stopped a traced program")
        #expect(r.err.contains("--duration elapsed") && r.err.contains("the programs keep running"), "\(r.err)")
        #expect(r.out.contains("summary: ") && r.out.contains("1 hang,"), "\(r.out)")
        let report = try reportJSON(dir + "/trace")
        #expect(loopPIDs(report) == [Int(traced.pid)], "\(loopPIDs(report))")
        let hangs = try watchdogHangs(dir + "/trace")
        #expect(hangs.count == 1, "\(hangs)")
        #expect(hangs.allSatisfy { $0.pid == Int(traced.pid) && $0.named && $0.samples >= 2 }, "\(hangs)")
        // The recording spans ~5 s of a 10 ms heartbeat: ~100 iterations a second, the 300 ms hang aside.
        let iterations = (report["loops"] as? [[String: Any]] ?? []).reduce(0) { $0 + ($1["iterations"] as? Int ?? 0) }
        #expect((300...520).contains(iterations), "\(iterations) iterations in 5 s")
        #expect(try traced.finish().hangsAt.count == 1)
        #expect(try other.finish().hangsAt.count == 2)
    }

    @Test("--all: a program running before and one started while recording; SIGTERM ends it, the trace kept, the program running")
    func allRecordsRunningAndLaterPrograms() throws {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let dir = try scratchDirectory("attach-all")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let before = try Service(["--hangs", "1", "--first", "3500", "--hold", "300", "--duration", "12000"], daemon: daemon)
        try waitRegistered([before.pid], daemon: daemon)
        let recorder = try BackgroundRecorder(daemon, ["record", "--all", "-o", dir + "/trace"])
        try waitActiveSessions(1, daemon: daemon)
        let later = try Service(["--hangs", "1", "--first", "800", "--hold", "300", "--duration", "2000"], daemon: daemon)
        let laterPID = later.pid
        #expect(try later.finish().hangsAt.count == 1)
        // Past the first program's hang (3.5 s after it started, 300 ms long), then SIGTERM.
        while Date().timeIntervalSince(before.started) < 4.5 { usleep(50_000) }
        let (status, err) = recorder.stop(SIGTERM)
        #expect(status == 0, "\(err)")
        #expect(err.contains("terminated: stopping the recording") && err.contains("trace written to"), "\(err)")
        #expect(before.isAlive, "the recorder's end stopped the traced program")
        #expect(loopPIDs(try reportJSON(dir + "/trace")) == [Int(before.pid), Int(laterPID)])
        let hangs = try watchdogHangs(dir + "/trace")
        #expect(hangs.map(\.pid).sorted() == [Int(before.pid), Int(laterPID)].sorted(), "\(hangs)")
        #expect(hangs.allSatisfy { $0.named && $0.samples >= 2 }, "\(hangs)")
        #expect(try before.finish().hangsAt.count == 1)
    }

    @Test("-o net://: the relay daemon's tree (HOST/SESSION-DATE-TIME/…) reports what a local recording of the same events does")
    func streamEqualsLocal() throws {
        let relayOut = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-attach-relayd-\(getpid())")
        defer { try? FileManager.default.removeItem(at: relayOut) }
        let relay = try PrivateRelayDaemon.start(outputDirectory: relayOut)
        defer { relay.stop() }
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let dir = try scratchDirectory("attach-net")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Two recorders of every program, one local and one streaming, both on before the program starts.
        let local = try BackgroundRecorder(daemon, ["record", "--all", "-o", dir + "/local"])
        let streamed = try BackgroundRecorder(daemon, ["record", "--all", "-o", relay.sessionURL])
        try waitActiveSessions(2, daemon: daemon)
        let service = try Service(["--hangs", "1", "--first", "600", "--hold", "300", "--duration", "1800"], daemon: daemon)
        #expect(try service.finish().hangsAt.count == 1)
        let (ls, le) = local.stop(SIGINT), (ss, se) = streamed.stop(SIGINT)
        #expect(ls == 0 && le.contains("interrupted: stopping the recording"), "\(le)")
        #expect(ss == 0 && se.contains("trace sent to the relay daemon at \(relay.sessionURL)"), "\(se)")
        // The relay daemon's layout: HOSTNAME/rltrace-…-DATE-TIME/ust/….
        var host = [CChar](repeating: 0, count: 256)
        gethostname(&host, 255)
        let hostName = String(cString: host)
        #expect(contents(relayOut.path) == [hostName], "\(contents(relayOut.path))")
        let sessions = contents(relayOut.path + "/" + hostName)
        #expect(sessions.count == 1 && sessions[0].hasPrefix("rltrace-"), "\(sessions)")
        // Each session writes its own copy of each event, with its own clock reading: the counts
        // are equal, the times within a millisecond.
        let l = try reportJSON(dir + "/local"), s = try reportJSON(relayOut.path)
        #expect(((l["trace"] as? [String: Any])?["events"] as? Int ?? 0) > 100)
        #expect(reportCounts(l) == reportCounts(s), "local:\n\(reportCounts(l))\nrelay daemon:\n\(reportCounts(s))")
        let lh = reportHangDurations(l), sh = reportHangDurations(s)
        #expect(lh.count == 1 && lh.count == sh.count && zip(lh, sh).allSatisfy { abs($0 - $1) < 1_000_000 }, "\(lh) \(sh)")
        let hangs = try watchdogHangs(relayOut.path)
        #expect(hangs.count == 1 && hangs[0].named, "\(hangs)")
    }

    @Test("--pid --on-hang -o net://: one snapshot per hang of that process arrives on the relay daemon, another process's hangs take none")
    func onHangToRelay() throws {
        let relayOut = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-attach-relayd-fr-\(getpid())")
        defer { try? FileManager.default.removeItem(at: relayOut) }
        let relay = try PrivateRelayDaemon.start(outputDirectory: relayOut)
        defer { relay.stop() }
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let traced = try Service(["--hangs", "2", "--first", "3000", "--every", "1200", "--hold", "300", "--duration", "15000"], daemon: daemon)
        let other = try Service(["--hangs", "3", "--first", "2600", "--every", "300", "--hold", "150", "--duration", "15000"], daemon: daemon)
        try waitRegistered([traced.pid, other.pid], daemon: daemon)
        let r = try rltraceUnder(daemon, ["record", "--pid", "\(traced.pid)", "--on-hang", "100ms", "--duration", "6s", "-o", relay.sessionURL])
        #expect(r.status == 0, "\(r.err)")
        #expect(traced.isAlive, "the recorder's end stopped the traced program")
        #expect(r.err.contains("was sent to the relay daemon at \(relay.sessionURL)"), "\(r.err)")
        let snaps = snapshotDirectories(below: relayOut)
        #expect(snaps.count == 2, "\(snaps)")
        for (k, snap) in snaps.enumerated() {
            let hangs = try watchdogHangs(snap)
            // The k-th snapshot: the traced program's hangs up to its k-th, each with its stack.
            #expect(hangs.count == k + 1 && hangs.allSatisfy { $0.pid == Int(traced.pid) && $0.named }, "snapshot \(k + 1): \(hangs)")
        }
        #expect(try traced.finish().hangsAt.count == 2)
        #expect(try other.finish().hangsAt.count == 3)
    }

    @Test("--on-hang: every snapshot read alone names the hung function (the state dump survives the snapshots' flushes)")
    func everySnapshotHoldsTheStateDump() throws {
        let dir = try scratchDirectory("attach-fr-statedump")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try rltraceWatched(["record", "--on-hang", "100ms", "-o", dir + "/fr", "--quiet", "--",
                                    binDir.appendingPathComponent("hang-workload").path, "--hangs", "4", "--first", "500", "--every", "700", "--duration", "3300"])
        #expect(r.status == 0, "\(r.err)")
        let snaps = snapshotDirectories(below: URL(fileURLWithPath: dir + "/fr"))
        #expect(snaps.count == 4, "\(snaps)")
        for (k, snap) in snaps.enumerated() {
            let hangs = try watchdogHangs(snap)
            #expect(hangs.count == k + 1 && hangs.allSatisfy(\.named), "snapshot \(k + 1) alone: \(hangs)")
        }
    }

    @Test("the command line: a program or --pid/--all, not both nor neither; pids read and checked; --duration only when attaching")
    func attachArguments() throws {
        let cases: [([String], String)] = [
            (["record"], "or attach to running ones with --pid PID[,PID...] or --all"),
            (["record", "--pid", "\(getpid())", "--", "/bin/true"], "--pid attaches to programs already running; `-- /bin/true` starts one"),
            (["record", "--all", "--", "/bin/true"], "--all attaches to programs already running"),
            (["record", "--pid", "\(getpid())", "--all"], "--pid and --all: choose one"),
            (["record", "--pid", "\(getpid()),abc"], "--pid: \"abc\" is not a process id"),
            (["record", "--pid", "0"], "--pid: \"0\" is not a process id"),
            (["record", "--pid", "2147483646"], "--pid: no process 2147483646 is running"),
            (["record", "--duration", "5s", "--", "/bin/true"], "--duration applies to --pid and --all"),
            (["record", "--all", "--duration", "10"], "--duration: \"10\" has no unit"),
            (["record", "--all", "--duration", "0s"], "--duration must be longer than 0"),
        ]
        for (args, message) in cases {
            let r = try run("rltrace", args)
            #expect(r.status == 64, "\(args): \(r.err)")
            #expect(r.err.contains(message), "\(args): \(r.err)")
        }
        // A flight recorder's snapshot session is created without connecting: a relay daemon that
        // is not there is found before anything starts (exit 6), not after hours of lost snapshots.
        let port = try #require(PrivateRelayDaemon.freePorts(1).first)
        let r = try run("rltrace", ["record", "--all", "--on-hang", "250ms", "-o", "net://127.0.0.1:\(port)", "--duration", "1s"])
        #expect(r.status == 6, "\(r.err)")
        #expect(r.err.contains("nothing answers at 127.0.0.1 port \(port)") && !r.err.contains("session daemon"), "\(r.err)")
    }

    @Test("--pid of a process that is not an LTTng-UST program: exit 6 naming it, no session left; --pid ends by itself when the process exits")
    func pidNotRegisteredAndProcessExit() throws {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let dir = try scratchDirectory("attach-exit")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        sleeper.environment = daemon.applicationEnvironment
        try sleeper.run()
        defer { kill(sleeper.processIdentifier, SIGKILL); sleeper.waitUntilExit() }
        let refused = try rltraceUnder(daemon, ["record", "--pid", "\(sleeper.processIdentifier)", "-o", dir + "/none"])
        #expect(refused.status == 6, "\(refused.err)")
        #expect(refused.err.contains("process \(sleeper.processIdentifier) is not registered with the session daemon"), "\(refused.err)")
        #expect(try daemon.cli.run(["list"]).contains("Currently no available recording session"))

        let service = try Service(["--hangs", "0", "--duration", "3000"], daemon: daemon)
        try waitRegistered([service.pid], daemon: daemon)
        let r = try rltraceUnder(daemon, ["record", "--pid", "\(service.pid)", "-o", dir + "/trace"], timeout: 60)
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("every traced process has exited: stopping the recording"), "\(r.err)")
        _ = try service.finish()
        let report = try reportJSON(dir + "/trace")
        #expect(loopPIDs(report) == [Int(service.pid)])
        // The loop's last iterations, up to its run's end, are in the trace: the session was
        // stopped after the process ended.
        #expect((report["loops"] as? [[String: Any]] ?? []).allSatisfy { ($0["iterations"] as? Int ?? 0) >= 100 }, "\(reportCounts(report))")
    }

    @Test("--all --on-hang 250ms on programs whose watchdog reports from 100 ms: only the hang of 250 ms or more takes a snapshot")
    func onHangThresholdSelectsHangs() throws {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let dir = try scratchDirectory("attach-fr-threshold")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let short = try Service(["--hangs", "1", "--first", "2500", "--hold", "150", "--duration", "13000"], daemon: daemon)
        let long = try Service(["--hangs", "1", "--first", "3500", "--hold", "400", "--duration", "13000"], daemon: daemon)
        try waitRegistered([short.pid, long.pid], daemon: daemon)
        let r = try rltraceUnder(daemon, ["record", "--all", "--on-hang", "250ms", "--duration", "5s", "-o", dir + "/fr"])
        #expect(r.status == 0, "\(r.err)")
        #expect(r.err.contains("1 snapshot in"), "\(r.err)")
        let snaps = snapshotDirectories(below: URL(fileURLWithPath: dir + "/fr"))
        #expect(snaps.count == 1, "\(snaps)")
        // The one snapshot holds both programs' hangs (the ring holds the short one too).
        let hangs = try watchdogHangs(try #require(snaps.first))
        #expect(Set(hangs.map(\.pid)) == [Int(short.pid), Int(long.pid)] && hangs.allSatisfy(\.named), "\(hangs)")
        #expect(short.isAlive && long.isAlive)
        #expect(try short.finish().hangsAt.count == 1)
        #expect(try long.finish().hangsAt.count == 1)
    }

    @Test("--on-hang -o net:// whose relay daemon goes away: the lost snapshot is reported at the end")
    func lostSnapshotsAreReported() throws {
        let relayOut = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-attach-relayd-gone-\(getpid())")
        defer { try? FileManager.default.removeItem(at: relayOut) }
        let relay = try PrivateRelayDaemon.start(outputDirectory: relayOut)
        defer { relay.stop() }
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        // The hang comes well after the relay daemon is gone (stopping it may take its 5 s of grace).
        let service = try Service(["--hangs", "1", "--first", "10000", "--hold", "300", "--duration", "18000"], daemon: daemon)
        try waitRegistered([service.pid], daemon: daemon)
        let recorder = try BackgroundRecorder(daemon, ["record", "--pid", "\(service.pid)", "--on-hang", "100ms", "-o", relay.sessionURL])
        try waitActiveSessions(1, daemon: daemon)
        relay.stop()
        #expect(!PrivateRelayDaemon.isListening(port: relay.controlPort))
        #expect(Date().timeIntervalSince(service.started) < 9.5, "the relay daemon took too long to stop: the hang may have come first")
        while Date().timeIntervalSince(service.started) < 11.5 { usleep(50_000) }
        let (status, err) = recorder.stop(SIGINT)
        #expect(status == 0, "\(err)")
        #expect(err.contains("1 snapshot could not be written to the relay daemon at \(relay.sessionURL)"), "\(err)")
        #expect(snapshotDirectories(below: relayOut).isEmpty)
        #expect(try service.finish().hangsAt.count == 1)
    }
}
