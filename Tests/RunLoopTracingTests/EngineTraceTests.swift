import Foundation
import Testing

/// The callout kinds whose entry/exit events the provider has.
private let calloutKinds = ["observer", "source0", "source1", "timer", "main_queue", "block"]

extension TraceEvent {
    /// For a `*_entry`/`*_exit` callout event: its kind.
    var calloutKind: String? {
        for k in calloutKinds where shortName == k + "_entry" || shortName == k + "_exit" { return k }
        return nil
    }
    var isEntry: Bool { shortName.hasSuffix("_entry") }
    /// The callout as the scenarios log it: `<kind> <name> [<activity> | <fd> <events>]`.
    var calloutLine: String {
        switch calloutKind {
        case "observer": return "observer \(self["name"] ?? "?") \(self["activity"] ?? "?")"
        case "source1": return "source1 \(self["name"] ?? "?") \(self["fd"] ?? "?") \(self["events"] ?? "?")"
        case "main_queue": return "main_queue"
        case let k?: return "\(k) \(self["name"] ?? "?")"
        case nil: return "?"
        }
    }
}

/// The `LOG` lines of a scenario.
private struct ScenarioLog {
    var lines: [String]
    init(_ run: Tracing.ProgramRun) { lines = run.log }
    func words(_ prefix: String) -> [[String]] {
        lines.filter { $0.hasPrefix(prefix + " ") }.map { $0.split(separator: " ").map(String.init) }
    }
    var loopID: String? { words("loop").first?[1] }
    var loopTID: String? { words("loop").first?[3] }
}

/// The callouts a scenario logged, in the loggers' format (`source1` lines without their `read N`).
private func loggedCallouts(_ log: ScenarioLog) -> [String] {
    log.lines.filter { $0.hasPrefix("callout ") }.map { line -> String in
        var w = line.dropFirst("callout ".count).split(separator: " ").map(String.init)
        if w.first == "source1", let r = w.firstIndex(of: "read") { w.removeSubrange(r...) }
        return w.joined(separator: " ")
    }
}

/// Checks that callout entries and exits pair up with identical payloads (the iteration included,
/// also when a run was nested inside the callout), properly nested; returns the kinds seen.
@discardableResult
private func checkEntryExitPairing(_ events: [TraceEvent]) throws -> Set<String> {
    var stack: [TraceEvent] = []
    var kindsSeen = Set<String>()
    for e in events {
        guard let kind = e.calloutKind else { continue }
        kindsSeen.insert(kind)
        if e.isEntry { stack.append(e); continue }
        let popped = stack.popLast()
        let open = try #require(popped, "exit without entry: \(e)")
        #expect(open.calloutKind == e.calloutKind)
        var a = open.fields, b = e.fields
        a["cpu_id"] = nil; b["cpu_id"] = nil
        #expect(a == b, "entry \(open) vs exit \(e)")
        #expect(e.cycles >= open.cycles)
    }
    #expect(stack.isEmpty, "entries without exit: \(stack)")
    return kindsSeen
}

@Suite("RunLoopCore traced under a real session daemon", .serialized)
struct EngineTraceTests {
    /// The sequence of callouts in the trace is exactly the sequence the callouts themselves logged;
    /// every entry has its exit; names, fds, activities, iterations and timer deadlines are right.
    @Test func calloutSequenceMatchesWhatTheLoopExecuted() throws {
        let rec = try Tracing.record(["sequence"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let log = ScenarioLog(rec.run)
        let loopID = try #require(log.loopID)
        let events = rec.events.filter { $0["loop_id"] == loopID }

        // 1. The sequence of callouts.
        let expected = loggedCallouts(log)
        let recorded = events.filter { $0.calloutKind != nil && $0.isEntry }.map(\.calloutLine)
        #expect(expected.count > 30)
        #expect(recorded == expected, "trace callouts:\n\(recorded.joined(separator: "\n"))\nlogged:\n\(expected.joined(separator: "\n"))")

        // 2. Entries and exits pair up, with identical payloads, properly nested.
        let kindsSeen = try checkEntryExitPairing(events)
        #expect(kindsSeen.isSuperset(of: ["observer", "source0", "source1", "timer", "block"]), "\(kindsSeen)")

        // 3. Names and fds.
        let pipeFD = try #require(log.words("fd").first?[2])
        let s1 = events.filter { $0.shortName == "source1_entry" }
        #expect(!s1.isEmpty && s1.allSatisfy { $0["fd"] == pipeFD && $0["name"] == "pipe-r" && $0["events"] == "1" })

        // 4. One run: mode, timeout, flags, depth, result.
        let enters = events.filter { $0.shortName == "run_enter" }, exits = events.filter { $0.shortName == "run_exit" }
        #expect(enters.count == 1 && exits.count == 1)
        if let en = enters.first, let ex = exits.first {
            #expect(en["mode"] == "kCFRunLoopDefaultMode" && ex["mode"] == "kCFRunLoopDefaultMode")
            #expect(en["timeout_ns"] == "50000000")
            #expect(en["return_after_source_handled"] == "0")
            #expect(en["depth"] == "1" && ex["depth"] == "1")
            #expect(ex["result"] == log.words("result").first?[1])
            #expect(ex.labels["result"] == "timed_out")
        }

        // 5. Iterations bracket their callouts; iteration_end counts them.
        var current: String?
        var calloutsInIteration = 0
        var iterations: [UInt64] = []
        for e in events {
            switch e.shortName {
            case "iteration_begin":
                #expect(current == nil, "nested iteration_begin \(e)")
                current = e["iteration"]; calloutsInIteration = 0
                iterations.append(e.uint("iteration") ?? 0)
            case "iteration_end":
                #expect(e["iteration"] == current)
                #expect(e.int("callouts") == Int64(calloutsInIteration), "iteration \(current ?? "?"): \(e["callouts"] ?? "?") vs \(calloutsInIteration)")
                current = nil
            default:
                if e.calloutKind != nil {
                    if e.isEntry { calloutsInIteration += 1 }
                    // Entry/exit observers of the run itself (entry/exit activities) lie outside iterations.
                    if let c = current { #expect(e["iteration"] == c, "\(e) outside its iteration \(c)") }
                }
            }
        }
        #expect(iterations.count > 5)
        #expect(zip(iterations, iterations.dropFirst()).allSatisfy { $1 == $0 + 1 }, "iterations not consecutive: \(iterations)")

        // 6. Timers: fired at or after their scheduled time (same clock as the event timestamps).
        let timerEntries = events.filter { $0.shortName == "timer_entry" }
        let names = timerEntries.map { $0["name"] ?? "" }
        #expect(names.first == "t-once" && names.filter { $0 == "t-once" }.count == 1 && names.contains("t-repeat"), "\(names)")
        for t in timerEntries {
            let scheduled = try #require(t.uint("scheduled_ns"))
            #expect(t.cycles >= scheduled && t.cycles - scheduled < 1_000_000_000, "lateness \(Int64(t.cycles) - Int64(scheduled)) ns")
        }
        let armed = events.filter { $0.shortName == "timer_armed" }
        #expect(armed.contains { $0["name"] == "t-repeat" && $0["interval_ns"] == "4000000" })
        // A repeating timer is re-armed by the iteration that fired it, and the event says which.
        var rearms = 0
        for entry in timerEntries where entry["name"] == "t-repeat" {
            guard let exit = events.first(where: { $0.shortName == "timer_exit" && $0["item_id"] == entry["item_id"] && $0.cycles >= entry.cycles }),
                  let rearm = armed.first(where: { $0["item_id"] == entry["item_id"] && $0.cycles >= exit.cycles }) else { continue }
            #expect(rearm["iteration"] == entry["iteration"], "fired in \(entry), re-armed: \(rearm)")
            rearms += 1
        }
        #expect(rearms > 0)
        // Registrations carry the loop's iteration counter at the time: that of the innermost
        // iteration open before them, else of the last one begun (+1 at most, for one racing with
        // the counter's update).
        var open: [UInt64] = [], lastBegun: UInt64 = 0
        for r in events {
            switch r.shortName {
            case "iteration_begin": lastBegun = r.uint("iteration") ?? 0; open.append(lastBegun)
            case "iteration_end": _ = open.popLast()
            case "item_added", "item_removed", "timer_armed":
                let counter = open.last ?? lastBegun
                let it = try #require(r.uint("iteration"))
                #expect(it == counter || it == counter + 1, "\(r): counter \(counter)")
            default: break
            }
        }

        // 7. Sleep and wake: the waits ended by timer, fd and finally the run's timeout.
        // What woke the loop is what it then handled in that iteration.
        let wakes = events.filter { $0.shortName == "wake" }
        let reasons = wakes.compactMap { $0.labels["reason"] }
        #expect(reasons.contains("timer") || reasons.contains("source1"), "\(reasons)")
        for w in wakes {
            let sameIteration = events.filter { $0["iteration"] == w["iteration"] && $0.isEntry }
            switch w.labels["reason"] {
            case "timer": #expect(sameIteration.contains { $0.shortName == "timer_entry" }, "timer wake without a timer callout: \(w)")
            case "source1": #expect(w["fd"] == pipeFD && sameIteration.contains { $0.shortName == "source1_entry" && $0["fd"] == pipeFD }, "\(w)")
            case "timeout": #expect(w == wakes.last, "a timeout wake ends the run: \(w)")
            default: break
            }
        }
        let sleeps = events.filter { $0.shortName == "sleep_begin" }
        #expect(sleeps.count == wakes.filter { $0.int("slept_ns") ?? 0 > 0 }.count)

        // 8. Lifecycle and registrations, named.
        #expect(rec.events.contains { $0.shortName == "loop_created" && $0["loop_id"] == loopID && $0["tid"] == log.loopTID
                                      && $0["iteration"] == "0" })
        let added = Set(events.filter { $0.shortName == "item_added" }.map { "\($0.labels["kind"] ?? "?") \($0["name"] ?? "?")" })
        #expect(added.isSuperset(of: ["observer obs-all", "observer obs-late", "source0 s0-a", "source0 s0-b",
                                      "timer t-once", "timer t-repeat", "source1 pipe-r"]), "\(added)")
        let removed = Set(events.filter { $0.shortName == "item_removed" }.map { "\($0.labels["kind"] ?? "?") \($0["name"] ?? "?")" })
        #expect(removed.isSuperset(of: ["observer obs-all", "source0 s0-a", "source1 pipe-r"]), "\(removed)")
    }

    /// Each way of waking the main loop is recorded with the right reason (and fd, and waking thread).
    @Test func wakeReasonsAreRightForEachWayOfWaking() throws {
        let rec = try Tracing.record(["wakes"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let log = ScenarioLog(rec.run)
        let loopID = try #require(log.loopID)
        let steps = log.words("step"), results = log.words("result")
        #expect(steps.count == 7 && results.count == 7)

        // Split the loop's events into runs; every cross-thread event between two runs' starts belongs to the later run.
        var runs: [[TraceEvent]] = []
        var pending: [TraceEvent] = []
        for e in rec.events where e["loop_id"] == loopID || e.shortName == "source0_signalled" {
            if e.shortName == "run_enter" { runs.append(pending + [e]); pending = []; continue }
            if runs.isEmpty || runs[runs.count - 1].last?.shortName == "run_exit" { pending.append(e) } else { runs[runs.count - 1].append(e) }
        }
        try #require(runs.count == steps.count, "\(runs.count) runs in the trace, \(steps.count) steps logged")
        let loopEvents = rec.events.filter { $0["loop_id"] == loopID }
        let kinds = try checkEntryExitPairing(loopEvents)
        #expect(kinds.isSuperset(of: ["source0", "source1", "timer", "main_queue"]), "\(kinds)")
        #expect(rec.events.filter { $0["loop_id"] == loopID && $0.calloutKind != nil && $0.isEntry }.map(\.calloutLine)
                == loggedCallouts(log))

        for (i, step) in steps.enumerated() {
            let name = step[1], reason = step[2], fd = step[3]
            let run = runs[i]
            let wakes = run.filter { $0.shortName == "wake" }
            if name == "poll" {
                // A poll that found nothing writes no `wake` (docs/tracepoints.md, "wake"): its
                // iteration ends without one.
                #expect(wakes.isEmpty, "step poll: \(wakes)")
                #expect(run.filter { $0.shortName == "iteration_end" }.count == 1, "step poll: \(run.map(\.shortName))")
            } else {
                let first = try #require(wakes.first, "step \(name): no wake event")
                #expect(first.labels["reason"] == reason, "step \(name): first wake \(first)")
                if reason == "source1" { #expect(first["fd"] == fd, "step \(name): fd \(first["fd"] ?? "?")") }
            }
            let exit = try #require(run.last { $0.shortName == "run_exit" })
            #expect(exit["result"] == results[i][1], "step \(name): result")
            switch name {
            case "timer":
                #expect(run.contains { $0.shortName == "timer_entry" && $0["name"] == "wake-timer" })
            case "fd":
                #expect(run.contains { $0.shortName == "source1_entry" && $0["fd"] == fd && $0["name"] == "wake-pipe" })
            case "wakeup":
                let first = try #require(wakes.first)
                let tid = step[4], item = step[5], otherLoop = step[6]
                // One source0_signalled per loop the source is in: this loop and the other one.
                let allSignals = rec.events.filter { $0.shortName == "source0_signalled" && $0["item_id"] == item }
                #expect(allSignals.map { $0["loop_id"] ?? "?" }.sorted() == [loopID, otherLoop].sorted(), "\(allSignals)")
                #expect(allSignals.allSatisfy { $0["caller_tid"] == tid && $0["name"] == "signalled-elsewhere" })
                #expect(Set(allSignals.compactMap { $0["signal_seq"] }).count == 1, "one signal: \(allSignals)")
                let signalled = try #require(run.first { $0.shortName == "source0_signalled" && $0["item_id"] == item && $0["loop_id"] == loopID })
                // The request is emitted by RunLoopCore after it wrote the wake-up, so on a busy machine it
                // can be recorded after the loop already woke (even after the run returned): search the whole trace.
                let request = try #require(loopEvents.first { $0.shortName == "wakeup_requested" && $0["caller_tid"] == tid })
                #expect(request["accepted"] == "1")
                let perform = try #require(run.first { $0.shortName == "source0_entry" && $0["item_id"] == item })
                #expect(signalled.cycles <= request.cycles && signalled.cycles <= first.cycles && first.cycles <= perform.cycles)
                #expect(perform.cycles - signalled.cycles < 1_000_000_000, "signal-to-perform latency")
                // The loop was asleep in iteration N when signalled and woken; it performs in N + 1.
                let n = try #require(signalled.uint("iteration"))
                #expect(request.uint("iteration") == n && first.uint("iteration") == n, "request \(request), wake \(first)")
                #expect(perform.uint("iteration") == n + 1, "signalled in \(n), performed: \(perform)")
                // The other loop's thread exited: loop_destroyed says how many iterations it made.
                let otherBegins = rec.events.filter { $0["loop_id"] == otherLoop && $0.shortName == "iteration_begin" }
                let destroyed = try #require(rec.events.first { $0["loop_id"] == otherLoop && $0.shortName == "loop_destroyed" })
                #expect(!otherBegins.isEmpty && destroyed.uint("iteration") == otherBegins.compactMap { $0.uint("iteration") }.max(),
                        "\(destroyed)")
            case "stop":
                #expect(loopEvents.contains { $0.shortName == "wakeup_requested" && $0["caller_tid"] == step[4] && $0["accepted"] == "1" })
                #expect(exit.labels["result"] == "stopped")
            case "main-queue":
                let first = try #require(wakes.first)
                #expect(first.int("fd") ?? -1 >= 0, "main queue fd")
                #expect(run.contains { $0.shortName == "main_queue_entry" } && run.contains { $0.shortName == "main_queue_exit" })
                #expect(exit.labels["result"] == "handled_source")
            case "timeout":
                #expect(exit.labels["result"] == "timed_out")
                #expect(run.contains { $0.shortName == "sleep_begin" && $0["timeout_ns"].flatMap { Int64($0) }.map { $0 > 0 && $0 <= 10_000_000 } == true })
            case "poll":
                #expect(!run.contains { $0.shortName == "sleep_begin" }, "a poll must not sleep")
            default:
                Issue.record("unknown step \(name)")
            }
        }
    }

    /// A run inside a callout: depths, nesting of the inner run inside the callout, and a timer that
    /// missed fires rescheduled with `missed_fires` and the matching next fire time.
    @Test func nestedRunAndMissedTimerFires() throws {
        let rec = try Tracing.record(["nested"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let log = ScenarioLog(rec.run)
        let loopID = try #require(log.loopID)
        let events = rec.events.filter { $0["loop_id"] == loopID }
        let recorded = events.filter { $0.calloutKind != nil && $0.isEntry }.map(\.calloutLine)
        #expect(recorded == loggedCallouts(log), "trace: \(recorded)")
        try checkEntryExitPairing(events)

        let runEvents = events.filter { $0.shortName == "run_enter" || $0.shortName == "run_exit" }
        #expect(runEvents.map { "\($0.shortName) \($0["mode"] ?? "?") \($0["depth"] ?? "?")" } ==
                ["run_enter kCFRunLoopDefaultMode 1", "run_enter inner 2", "run_exit inner 2", "run_exit kCFRunLoopDefaultMode 1"])
        if runEvents.count == 4 {
            #expect(runEvents[2]["result"] == log.words("inner-result").first?[1])
            #expect(runEvents[3]["result"] == log.words("result").first?[1])
            #expect(runEvents[3].labels["result"] == "stopped")
            // The inner run lies inside the outer source0's callout.
            let outerEntry = try #require(events.first { $0.shortName == "source0_entry" && $0["name"] == "outer" })
            let outerExit = try #require(events.first { $0.shortName == "source0_exit" && $0["name"] == "outer" })
            #expect(outerEntry.cycles <= runEvents[1].cycles && runEvents[2].cycles <= outerExit.cycles)
        }

        let firstTick = try #require(events.first { $0.shortName == "timer_entry" && $0["name"] == "slow-tick" })
        let rearm = try #require(events.first { $0.shortName == "timer_armed" && $0["name"] == "slow-tick" && $0.cycles > firstTick.cycles })
        let missed = try #require(rearm.uint("missed_fires")), interval = try #require(rearm.uint("interval_ns"))
        let scheduled = try #require(firstTick.uint("scheduled_ns")), fire = try #require(rearm.uint("fire_ns"))
        #expect(interval == 2_000_000)
        #expect(missed >= 5, "a 15 ms callout of a 2 ms timer must skip fires; missed_fires = \(missed)")
        #expect(fire == scheduled + (missed + 1) * interval, "next fire \(fire) vs scheduled \(scheduled) + (\(missed)+1)×\(interval)")
        #expect(fire > rearm.cycles - 2_000_000 && fire <= rearm.cycles + interval, "next fire must be the first future slot")
    }

    /// After a run nested in a callout, what the enclosing pass emits carries that pass's iteration:
    /// the callout's exit (observer, block, source0, timer), a one-shot observer's and timer's
    /// removal, a repeating timer's re-arm, a registration made in the callout after the nested
    /// run, the pass's end and the run's exit; the nested runs' own events carry theirs, sleep and
    /// wake included. The exact sequence, on a fresh loop (its first pass is iteration 1).
    @Test func eventsAfterANestedRunCarryTheirOwnPassIteration() throws {
        let rec = try Tracing.record(["iterations"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let log = ScenarioLog(rec.run)
        let loopID = try #require(log.loopID)
        #expect(log.words("result").first?[1] == "3")
        let shown: Set<String> = ["run_enter", "run_exit", "iteration_begin", "iteration_end", "sleep_begin", "wake",
                                  "timer_armed", "item_added", "item_removed"]
        let events = rec.events.filter { $0["loop_id"] == loopID && (shown.contains($0.shortName) || $0.calloutKind != nil) }
        let first = try #require(events.firstIndex { $0.shortName == "run_enter" })
        let last = try #require(events.lastIndex { $0.shortName == "run_exit" })
        let lines = events[first...last].map { e in
            ["\(e.shortName) \(e["iteration"] ?? "?")", e["name"] ?? e["mode"] ?? e.labels["reason"] ?? ""]
                .filter { !$0.isEmpty }.joined(separator: " ")
        }
        func nested(_ it: Int, sleeping: Bool = false) -> [String] {
            ["run_enter 1 inner", "iteration_begin \(it)"]
                + (sleeping ? ["sleep_begin \(it)", "wake \(it) timeout"]
                            // A poll that found nothing writes no wake (docs/tracepoints.md, "wake").
                            : ["source0_entry \(it) inner-s0", "source0_exit \(it) inner-s0"])
                + ["iteration_end \(it)", "run_exit \(it) inner"]
        }
        let expected: [String] = ["run_enter 0 kCFRunLoopDefaultMode", "iteration_begin 1", "observer_entry 1 obs-once"]
            + nested(2) + ["observer_exit 1 obs-once", "item_removed 1 obs-once", "block_entry 1 blk"]
            + nested(3) + ["block_exit 1 blk", "source0_entry 1 outer-s0"]
            + nested(4) + ["item_added 1 side", "source0_exit 1 outer-s0", "wake 1 timer", "timer_entry 1 t-repeat"]
            + nested(5) + ["timer_exit 1 t-repeat", "timer_armed 1 t-repeat", "timer_entry 1 t-once"]
            + nested(6, sleeping: true) + ["timer_exit 1 t-once", "item_removed 1 t-once", "iteration_end 1",
                                           "run_exit 1 kCFRunLoopDefaultMode"]
        #expect(lines == expected, "trace:\n\(lines.joined(separator: "\n"))")
    }

    /// RunLoopCoreTests' differential scenarios (the ones compared against CFRunLoop), replayed with
    /// named items: per scenario, the trace's callout entries and run exits are exactly what the
    /// callouts and runs themselves logged, and entries/exits pair up.
    @Test func differentialScenariosAreTracedExactly() throws {
        let rec = try Tracing.record(["differential"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        var scenarios: [String: (loop: String, name: String, lines: [String])] = [:]
        var order: [String] = []
        for line in rec.run.log {
            let w = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard w.count == 2 else { continue }
            if w[1].hasPrefix("loop ") {
                let parts = w[1].split(separator: " ", maxSplits: 2).map(String.init)
                scenarios[w[0]] = (parts[1], parts.count > 2 ? parts[2] : "", [])
                order.append(w[0])
            } else {
                scenarios[w[0]]?.lines.append(w[1])
            }
        }
        #expect(order.count >= 18, "\(order.count) scenarios replayed")
        for key in order {
            let sc = scenarios[key]!
            let events = rec.events.filter { $0["loop_id"] == sc.loop }
            let callouts = events.filter { $0.calloutKind != nil && $0.isEntry }.map(\.calloutLine)
            let loggedCallouts = sc.lines.filter { $0.hasPrefix("callout ") }.map { String($0.dropFirst("callout ".count)) }
            #expect(callouts == loggedCallouts, "\(sc.name): trace \(callouts)\n logged \(loggedCallouts)")
            // Every traced run is a logged run, in order; a logged run missing from the trace must be one
            // that returned `finished` (1) at once: an empty mode is not entered (CF), so no run_enter/exit.
            let runs = events.filter { $0.shortName == "run_exit" }.map { "run \($0["mode"] ?? "?") \($0["result"] ?? "?")" }
            let loggedRuns = sc.lines.filter { $0.hasPrefix("run ") }
            var unmatched = runs[...]
            var skipped: [String] = []
            for r in loggedRuns {
                if unmatched.first == r { unmatched.removeFirst() } else { skipped.append(r) }
            }
            #expect(unmatched.isEmpty && skipped.allSatisfy { $0.hasSuffix(" 1") },
                    "\(sc.name): trace \(runs) logged \(loggedRuns)")
            #expect(events.filter { $0.shortName == "run_enter" }.count == runs.count, "\(sc.name): run_enter/run_exit count")
            try checkEntryExitPairing(events)
        }
    }

    /// The log levels filter as documented: INFO = loop and run lifecycle, the constant pools and
    /// the CPU readings; DEBUG_PROCESS alone = timers armed and registrations.
    @Test func logLevelsSelectTheDocumentedEvents() throws {
        let info = try Tracing.record(["nested"], enableOptions: ["--loglevel=TRACE_INFO"])
        let infoNames = Set(info.events.map(\.shortName))
        #expect(infoNames.isSubset(of: ["loop_created", "loop_destroyed", "run_enter", "run_exit", "loop_info", "item_info", "callout_cpu"]),
                "\(infoNames)")
        #expect(infoNames.isSuperset(of: ["loop_created", "run_enter", "run_exit", "loop_info"]), "\(infoNames)")
        let process = try Tracing.record(["nested"], enableOptions: ["--loglevel-only=TRACE_DEBUG_PROCESS"])
        let processNames = Set(process.events.map(\.shortName))
        #expect(processNames == ["timer_armed", "item_added", "item_removed"], "\(processNames)")
    }

    /// Without any session daemon, the same program does the same thing (its own log, with ids, fds
    /// and tids masked, is identical to the log of the traced run) in about the same time.
    @Test func untracedRunBehavesIdentically() throws {
        let rec = try Tracing.record(["wakes"])
        let (home, noDaemon) = try Tracing.environmentWithoutSessionDaemon()
        defer { try? FileManager.default.removeItem(at: home) }
        let env = noDaemon
        let plain = try Tracing.run(Tracing.scenarios, ["wakes"], environment: env)
        #expect(plain.status == 0 && rec.run.status == 0, "\(plain.stderr) \(rec.run.stderr)")
        func masked(_ lines: [String]) -> [String] {
            lines.map { $0.replacingOccurrences(of: #"[0-9]+"#, with: "N", options: .regularExpression) }
        }
        #expect(masked(plain.log) == masked(rec.run.log))
        #expect(plain.log.count > 10)
        #expect(plain.seconds < 2, "untraced run took \(plain.seconds) s")
    }
}
