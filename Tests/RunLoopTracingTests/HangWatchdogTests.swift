import Foundation
import LTTngControl
import Testing

/// What `tracing-scenarios hang` printed about itself.
private struct HangRun {
    var loop: UInt64 = 0, tid: Int64 = 0
    var here: UInt64 = 0, base: UInt64 = 0
    var signals: UInt64 = .max, hangs: UInt64 = .max
    var signal = ""

    init(_ stdout: String) {
        for line in stdout.split(separator: "\n") {
            let w = line.split(separator: " ").map(String.init)
            switch w.first {
            case "LOOP": loop = UInt64(w[1]) ?? 0; tid = Int64(w[3]) ?? 0
            case "HERE": here = UInt64(w[1]) ?? 0; base = UInt64(w[3]) ?? 0
            case "SIGNALS": signals = UInt64(w[1]) ?? .max
            case "HANGS": hangs = UInt64(w[1]) ?? .max
            case "SIGNAL": signal = w[1]
            default: break
            }
        }
    }
}

/// The address range of `tracing-scenarios`' `simulatedHangInRequestHandler` in its file (PIE:
/// relative to the load base), from the executable's symbol table (`llvm-nm -S`).
private func namedFunctionRange() throws -> Range<UInt64> {
    let nm = ["/usr/bin/llvm-nm", "/usr/bin/nm"].first { FileManager.default.isExecutableFile(atPath: $0) }!
    let run = try Tracing.run(URL(fileURLWithPath: nm), ["-S", "--defined-only", Tracing.scenarios.path],
                              environment: ProcessInfo.processInfo.environment)
    for line in run.stdout.split(separator: "\n") where line.contains("simulatedHangInRequestHandler") {
        let w = line.split(separator: " ")
        guard w.count >= 4, let start = UInt64(w[0], radix: 16), let size = UInt64(w[1], radix: 16), size > 0 else { continue }
        return start..<(start + size)
    }
    throw CocoaError(.fileReadCorruptFile)
}

@Suite("hang watchdog under a real session daemon", .serialized)
struct HangWatchdogTests {
    /// A timer callout stuck 300 ms in a named function (threshold 100 ms): one hang, reported
    /// while it lasts, with stacks sampled on the hung thread that contain the function.
    @Test func aHangIsReportedDuringItWithTheStuckThreadsStack() throws {
        let rec = try Tracing.record(["hang", "--hang-ms", "300", "--threshold-ms", "100"], contexts: ["vtid"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let me = HangRun(rec.run.stdout)
        let begins = rec.events.filter { $0.shortName == "hang_begin" }
        let stacks = rec.events.filter { $0.shortName == "hang_stack" }
        let ends = rec.events.filter { $0.shortName == "hang_end" }
        try #require(begins.count == 1, "hang_begin: \(begins.count)\n\(rec.babeltraceText.suffix(3000))")
        try #require(ends.count == 1, "hang_end: \(ends.count)")
        let b = begins[0], e = ends[0]
        #expect(me.hangs == 1)

        // The callout it is in: the hang-timer's entry and exit.
        let entry = try #require(rec.events.first { $0.shortName == "timer_entry" && $0["name"] == "hang-timer" })
        let exit = try #require(rec.events.first { $0.shortName == "timer_exit" && $0["name"] == "hang-timer" })

        // hang_begin: during the callout, with what the loop was in.
        #expect(b.cycles > entry.cycles && b.cycles < exit.cycles, "hang_begin must be recorded while the callout runs")
        #expect(b.uint("loop_id") == me.loop && b["loop_id"] == entry["loop_id"])
        #expect(b["iteration"] == entry["iteration"])
        #expect(b.uint("hang_id") == 1)
        #expect(b.labels["kind"] == "timer" && b["kind"] == "3")
        #expect(b["item_id"] == entry["item_id"])
        #expect(b["item_name"] == "hang-timer")
        #expect(b.uint("threshold_ns") == 100_000_000)
        #expect(b.int("loop_tid") == me.tid)
        #expect(b.int("vtid") != me.tid, "hang_begin comes from the watchdog's thread")
        // elapsed_ns: at least the threshold; a lower bound of the time since the entry (the
        // watchdog times from the first tick that saw the callout: at most one tick, 25 ms, late).
        let elapsed = try #require(b.uint("elapsed_ns"))
        let sinceEntry = b.cycles - entry.cycles
        #expect(elapsed >= 100_000_000)
        #expect(elapsed <= sinceEntry + 1_000_000, "elapsed \(elapsed) > \(sinceEntry) since the entry")
        #expect(sinceEntry - min(sinceEntry, elapsed) < 150_000_000, "elapsed \(elapsed) vs \(sinceEntry) (generous)")

        // hang_stack: on the hung thread, during the callout, numbered from 0, non-empty.
        try #require(stacks.count >= 1, "\(rec.run.stdout)\n\(rec.run.stderr)\n\(rec.babeltraceText.split(separator: "\n").filter { $0.contains("hang_") }.joined(separator: "\n"))")
        #expect(stacks.count <= 8)
        for (i, s) in stacks.enumerated() {
            #expect(s["loop_id"] == b["loop_id"] && s["hang_id"] == b["hang_id"])
            #expect(s.uint("sample") == UInt64(i))
            #expect(s.int("vtid") == me.tid, "hang_stack is emitted on the hung thread")
            #expect(s.cycles > b.cycles && s.cycles < exit.cycles)
            #expect(s.uint("elapsed_ns")! >= elapsed)
            #expect(!(s["frames"] ?? "").isEmpty)
        }
        // A frame of every sample falls in simulatedHangInRequestHandler.
        let range = try namedFunctionRange()
        #expect(me.base != 0 && range.contains(me.here - me.base), "the scenario's own address check")
        for s in stacks {
            let frames = (s["frames"] ?? "").split(separator: ",").compactMap { UInt64($0) }
            #expect(!frames.isEmpty && frames.count <= 64)
            #expect(frames.contains { $0 >= me.base && range.contains($0 - me.base) },
                    "sample \(s["sample"] ?? "?"): no frame in simulatedHangInRequestHandler \(range) (base \(me.base))")
        }

        // hang_end: after the callout, paired by hang id, counting the samples.
        #expect(e.cycles > exit.cycles)
        #expect(e["loop_id"] == b["loop_id"] && e["hang_id"] == b["hang_id"] && e["iteration"] == b["iteration"])
        #expect(e.uint("samples") == UInt64(stacks.count))
        #expect(me.signals == UInt64(stacks.count), "one signal per sample")
        let duration = try #require(e.uint("duration_ns"))
        let callout = exit.cycles - entry.cycles
        #expect(duration >= 100_000_000 && duration < callout + 150_000_000, "duration \(duration) vs callout \(callout)")
        #expect(me.signal != "none")
        // The watchdog's precision in this run (docs/tracepoints.md "Precision"): how far elapsed_ns
        // is below the time since the entry, and duration_ns from the callout's real duration.
        print("PRECISION elapsed_short_ns=\(Int64(sinceEntry) - Int64(elapsed)) duration_error_ns=\(Int64(duration) - Int64(callout)) samples=\(stacks.count)")
    }

    /// The same program without a hang: no hang event, no signal.
    @Test func noHangNoHangEvents() throws {
        let rec = try Tracing.record(["hang", "--hang-ms", "0", "--threshold-ms", "100"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let me = HangRun(rec.run.stdout)
        #expect(rec.events.filter { $0.shortName.hasPrefix("hang_") }.isEmpty)
        #expect(rec.events.contains { $0.shortName == "timer_exit" && $0["name"] == "hang-timer" })
        #expect(me.hangs == 0 && me.signals == 0)
    }

    /// A session that records no hang event: the watchdog does nothing — no hang, no signal, no
    /// signal handler installed.
    @Test func hangEventsDisabledNoSignal() throws {
        // Its own daemon: the shared one's other sessions (other suites, in parallel) enable runloop:*.
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        // The timers' callouts, and the items' descriptions that name them (docs/tracepoints.md,
        // "Constant pools").
        let rec = try Tracing.record(["hang", "--hang-ms", "300", "--threshold-ms", "100"], events: "runloop:timer_*,runloop:item_*",
                                     privateDaemon: daemon)
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let me = HangRun(rec.run.stdout)
        #expect(rec.events.contains { $0.shortName == "timer_exit" && $0["name"] == "hang-timer" })
        #expect(rec.events.filter { $0.shortName.hasPrefix("hang_") }.isEmpty)
        #expect(me.hangs == 0 && me.signals == 0 && me.signal == "none")
    }

    /// Recording hang_begin/hang_end but not hang_stack: the hang is reported, no stack is sampled
    /// (no signal sent).
    @Test func stacksDisabledNoSignal() throws {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let rec = try Tracing.record(["hang", "--hang-ms", "300", "--threshold-ms", "100"],
                                     events: "runloop:hang_begin,runloop:hang_end,runloop:timer_entry,runloop:timer_exit",
                                     privateDaemon: daemon)
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let me = HangRun(rec.run.stdout)
        let begins = rec.events.filter { $0.shortName == "hang_begin" }, ends = rec.events.filter { $0.shortName == "hang_end" }
        #expect(begins.count == 1 && ends.count == 1)
        #expect(ends.first?.uint("samples") == 0)
        #expect(me.hangs == 1 && me.signals == 0)
    }

    /// Without any session daemon the watchdog never signals (and the program is unaffected).
    @Test func noDaemonNoSignal() throws {
        let (home, noDaemon) = try Tracing.environmentWithoutSessionDaemon()
        defer { try? FileManager.default.removeItem(at: home) }
        var env = noDaemon
        env["RLTRACE_HANG_THRESHOLD"] = "100ms"
        let run = try Tracing.run(Tracing.scenarios, ["hang", "--hang-ms", "300"], environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        let me = HangRun(run.stdout)
        #expect(me.hangs == 0 && me.signals == 0 && me.signal == "none")
    }
}
