import Foundation
import LTTngControl
import TestSupport
import Testing

// `rltrace record`'s event selection (`--events`) with and without the flight recorder: the
// default leaves out `runloop:timer_armed` (a timer's re-scheduling, read by no report) and
// reports are unchanged by it; `--events` is honoured by `--on-hang` too, with the hang's own
// events added. Real recordings under the private session daemon `rltrace record` starts; event
// names counted by babeltrace2 (the oracle).

/// Event name → count in the trace(s) below `dir`, as babeltrace2 prints them.
func eventNameCounts(_ dir: String) throws -> [String: Int] {
    let bt = try run(try #require(which("babeltrace2")), [dir])
    #expect(bt.status == 0, "babeltrace2 \(dir): \(bt.err)")
    var counts: [String: Int] = [:]
    for line in bt.out.split(separator: "\n") {
        // `[TIME] (+DELTA) HOST PROVIDER:EVENT: { … }`
        guard let name = line.split(separator: " ").first(where: { $0.hasSuffix(":") && $0.dropLast().contains(":") }) else { continue }
        counts[String(name.dropLast()), default: 0] += 1
    }
    return counts
}

/// The `timerLateness` row of the timer named `name` in a `report --format json`.
func timerLateness(_ json: String, named name: String) throws -> [String: Any]? {
    let report = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    let loops = report["loops"] as? [[String: Any]] ?? []
    return loops.flatMap { $0["timerLateness"] as? [[String: Any]] ?? [] }.first { $0["name"] as? String == name }
}

@Suite("rltrace record: the events recorded (--events, with and without --on-hang)", .serialized)
struct RecordEventsTests {
    @Test("the default leaves out runloop:timer_armed and the report still finds the late timer; --events 'runloop:*' records it")
    func defaultLeavesOutTimerArmed() throws {
        let base = NSTemporaryDirectory() + "rltrace-events-\(getpid())"
        try? FileManager.default.removeItem(atPath: base)
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let example = binDir.appendingPathComponent("rl-example").path
        let load = ["--requests", "100", "--duration", "6", "--inject", "late-timer"]
        for (label, extra) in [("default", [String]()), ("all", ["--events", "runloop:*"])] {
            let dir = base + "/" + label
            let r = try run("rltrace", ["record", "-o", dir, "--quiet"] + extra + ["--", example] + load)
            #expect(r.status == 0, "\(label): \(r.err)")
            let counts = try eventNameCounts(dir)
            // rl-example pushes back a connection's idle timer on every request: 100 re-schedulings at least.
            if label == "default" {
                #expect(counts["runloop:timer_armed"] == nil, "the default recorded \(counts["runloop:timer_armed"] ?? 0) timer_armed")
            } else {
                #expect((counts["runloop:timer_armed"] ?? 0) >= 100, "--events 'runloop:*': \(counts["runloop:timer_armed"] ?? 0) timer_armed")
            }
            #expect((counts["runloop:timer_entry"] ?? 0) >= 1, "\(label): \(counts)")
            #expect((counts["runloop:observer_entry"] ?? 0) >= 100, "\(label): \(counts)")
            // The late timer, measured from timer_entry alone: at least the 35 ms rl-example injects.
            let rep = try run("rltrace", ["report", dir, "--format", "json"])
            #expect(rep.status == 0, "\(label): \(rep.err)")
            let late = try #require(try timerLateness(rep.out, named: "late-timer"), "\(label): no lateness row for late-timer")
            #expect((late["maxNs"] as? Int64 ?? 0) >= 35_000_000, "\(label): \(late)")
            let text = try run("rltrace", ["report", dir])
            #expect(text.out.contains("LATE TIMER"), "\(label): \(text.out)")
        }
    }

    @Test("--on-hang records what --events selects, plus what a hang's snapshot needs (its events, CPU reading, descriptions)")
    func onHangHonoursEvents() throws {
        let dir = NSTemporaryDirectory() + "rltrace-events-oh-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try rltraceWatched(["record", "--on-hang", "100ms", "--events", "runloop:iteration_*", "-o", dir, "--",
                                    binDir.appendingPathComponent("hang-workload").path, "--hangs", "1", "--first", "400", "--duration", "900"])
        #expect(r.status == 0, "\(r.err)")
        let snaps = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { !$0.hasPrefix(".") }
        #expect(snaps.count == 1, "\(snaps)\n\(r.err)")
        let counts = try eventNameCounts(dir)
        let runloop = Set(counts.keys.filter { $0.hasPrefix("runloop:") })
        #expect(runloop == ["runloop:iteration_begin", "runloop:iteration_end", "runloop:hang_begin", "runloop:hang_stack", "runloop:hang_end",
                            "runloop:callout_cpu", "runloop:loop_info", "runloop:item_info"], "\(counts)")
        #expect(counts["runloop:hang_begin"] == 1 && counts["runloop:hang_end"] == 1, "\(counts)")
        let t = try run("rltrace", ["hangs", dir])
        #expect(t.status == 0 && t.out.contains("watchdog hang #"), "\(t.out)\(t.err)")
        // The watchdog's hang, its culprit and loop named by the descriptions, with its stack; no
        // callout was recorded (--events), so the iteration's time goes to the loop itself.
        #expect(t.out.contains("in timer \"parser\""), "\(t.out)")
        #expect(t.out.contains("(hang-workload tid "), "\(t.out)")
        #expect(t.out.contains("parseHugeDocument(_:) (main.swift:"), "\(t.out)")
    }

    /// lttng-ust holds a starting program at most LTTNG_UST_REGISTER_TIMEOUT ms (3 000 by default)
    /// for its registration, then runs it untraced until its buffers come: events lost and counted
    /// nowhere. The session daemon is stopped (SIGSTOP) for 3.5 s as the program starts — the
    /// daemon busy past lttng-ust's default wait, as on a loaded machine. With the program's
    /// environment as rltrace sets it, every event is recorded; with lttng-ust's default (the
    /// variable set to 3000 by the test), none is — the test sees the loss it guards against.
    @Test("a program record starts is traced from its first event when its registration takes longer than lttng-ust's 3 s default",
          arguments: [nil, "3000"])
    func slowRegistration(timeoutSetByUser: String?) throws {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let dir = NSTemporaryDirectory() + "rltrace-slowreg-\(getpid())-\(timeoutSetByUser ?? "default")"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gen = try builtProduct("ctf-testgen")
        // The shell stops the daemon, has it continued 3.5 s later, and becomes the program.
        let pid = daemon.pid
        let setByUser = timeoutSetByUser.map { "LTTNG_UST_REGISTER_TIMEOUT=\($0) " } ?? ""
        let script = "kill -STOP \(pid); (sleep 3.5; kill -CONT \(pid)) & \(setByUser)exec '\(gen)' bench 1000 1"
        let started = Date()
        let r = try rltraceUnder(daemon, ["record", "-o", dir, "--quiet", "--events", "rltest:*", "--", "/bin/sh", "-c", script])
        kill(pid, SIGCONT)      // (whatever happened above)
        #expect(Date().timeIntervalSince(started) >= 3.5, "the daemon was not held")
        if timeoutSetByUser == nil {
            #expect(r.status == 0, "\(r.err)")
            let ticks = try eventNameCounts(dir)["rltest:tick"] ?? 0
            #expect(ticks == 1000, "\(ticks) of 1000 events recorded")
        } else {
            // (A program never registered leaves no stream at all: babeltrace2 then finds no
            // trace, which counts as none recorded.)
            let bt = try run(try #require(which("babeltrace2")), [dir])
            let ticks = bt.status == 0 ? bt.out.split(separator: "\n").filter { $0.contains("rltest:tick:") }.count : 0
            // The user's own setting is kept (rltrace does not override it), and lttng-ust's
            // default wait loses the events emitted before the registration.
            #expect(ticks < 1000, "\(ticks) of 1000 events recorded with lttng-ust's 3 s wait")
        }
    }

    /// The same with the flight recorder: a hang in the program's first half second, while its
    /// registration is held 3.5 s, takes its snapshot — with lttng-ust's 3 s wait the program ran
    /// its hang untraced (3.1–3.3 s) before the daemon set up its buffers, and none was taken.
    @Test("record --on-hang: a hang right at the program's start takes its snapshot when the registration is slow")
    func slowRegistrationOnHang() throws {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let dir = NSTemporaryDirectory() + "rltrace-slowreg-oh-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let workload = binDir.appendingPathComponent("hang-workload").path
        let pid = daemon.pid
        let script = "kill -STOP \(pid); (sleep 3.5; kill -CONT \(pid)) & exec '\(workload)' --hangs 1 --first 100 --hold 200 --duration 600"
        let r = try rltraceUnder(daemon, ["record", "--on-hang", "100ms", "-o", dir, "--", "/bin/sh", "-c", script])
        kill(pid, SIGCONT)
        #expect(r.status == 0, "\(r.err)")
        let snaps = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { !$0.hasPrefix(".") }
        #expect(snaps.count == 1, "\(snaps)\n\(r.err)")
        let counts = snaps.isEmpty ? [:] : try eventNameCounts(dir)
        #expect(counts["runloop:hang_begin"] == 1 && counts["runloop:hang_end"] == 1, "\(counts)")
    }
}
