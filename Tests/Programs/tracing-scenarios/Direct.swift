import Foundation
import RunLoopTracing
import RunLoopSchema

/// One event the scenario emitted, as it must appear in the trace: the event name, every payload
/// field's value (integers in decimal, strings verbatim, enumerations as their integer) and, for
/// enumeration fields, the label the provider must map that integer to.
struct ExpectedEvent: Codable {
    var event: String
    var fields: [String: String]
    var labels: [String: String] = [:]
}

/// Fires every tracepoint of the `runloop` provider directly, with random ids and awkward strings,
/// and prints (one JSON object a line, prefixed `EXPECT `) what each call must have recorded.
/// The test compares that log, field by field, with babeltrace2's reading of the trace.
enum DirectScenario {
    // The labels the trace must show: RunLoopSchema's enumerations (SchemaTests checks them against the header).
    static let activityLabels = Dictionary(uniqueKeysWithValues: RunLoopSchema.activity.enumerators.map { (UInt8($0.value), $0.label) })
    static let kindLabels = Dictionary(uniqueKeysWithValues: RLCalloutKind.allCases.map { ($0, $0.label) })
    static let reasonLabels = Dictionary(uniqueKeysWithValues: RLWakeReason.allCases.map { ($0, $0.label) })
    static let resultLabels = Dictionary(uniqueKeysWithValues: RunLoopSchema.runResult.enumerators.map { (UInt8($0.value), $0.label) })
    static let loopKindLabel = RunLoopSchema.calloutKind.label(of: Int64(RunLoopSchema.calloutKindLoop))!

    static func run() {
        var rng = SystemRandomNumberGenerator()
        var out: [ExpectedEvent] = []
        func u64() -> UInt64 { rng.next() }
        // "" is recorded as "(unnamed)" (see runloop_emit.c); `recorded` maps a name to what the trace holds.
        let names = ["work", "name with spaces", "ünïcødé ⏱", "", String(repeating: "long-", count: 60) + "end",
                     "tab\there"]
        func name() -> String { names.randomElement(using: &rng)! }
        let stringFields: Set<String> = ["name", "thread_name", "mode", "item_name", "procname"]
        func emit(_ event: String, _ fields: [String: String], labels: [String: String] = [:]) {
            var f = fields
            for k in stringFields where f[k] == "" { f[k] = "(unnamed)" }
            out.append(ExpectedEvent(event: "runloop:" + event, fields: f, labels: labels))
        }
        let tid = Int32.random(in: 1...Int32.max, using: &rng)

        let loop = u64()
        let thread = name()
        let createdAt = u64()
        RLTrace.loopCreated(loop: loop, iteration: createdAt, tid: tid, threadName: thread)
        emit("loop_created", ["loop_id": "\(loop)", "iteration": "\(createdAt)", "tid": "\(tid)", "thread_name": thread])

        for (timeout, rash, depth) in [(Int64(-1), true, UInt32(1)), (Int64.random(in: 0...Int64.max, using: &rng), false, UInt32.max)] {
            let it = u64(), mode = name()
            RLTrace.runEnter(loop: loop, iteration: it, mode: mode, timeoutNs: timeout, returnAfterSourceHandled: rash, depth: depth)
            emit("run_enter", ["loop_id": "\(loop)", "iteration": "\(it)", "mode": mode, "timeout_ns": "\(timeout)",
                               "return_after_source_handled": rash ? "1" : "0", "depth": "\(depth)"])
        }
        for result in UInt8(1)...4 {
            let it = u64(), mode = name(), depth = UInt32.random(in: 0...9, using: &rng)
            RLTrace.runExit(loop: loop, iteration: it, mode: mode, result: result, depth: depth)
            emit("run_exit", ["loop_id": "\(loop)", "iteration": "\(it)", "mode": mode, "result": "\(result)", "depth": "\(depth)"],
                 labels: ["result": resultLabels[result]!])
        }
        do {
            let it = u64()
            RLTrace.iterationBegin(loop: loop, iteration: it)
            emit("iteration_begin", ["loop_id": "\(loop)", "iteration": "\(it)"])
            for handled in [true, false] {
                let callouts = UInt32.random(in: 0...UInt32.max, using: &rng)
                RLTrace.iterationEnd(loop: loop, handledSource: handled, callouts: callouts)
                emit("iteration_end", ["loop_id": "\(loop)", "handled_source": handled ? "1" : "0", "callouts": "\(callouts)"])
            }
        }
        for activity in activityLabels.keys.sorted() {
            let item = u64()
            RLTrace.observerEntry(loop: loop, item: item, activity: activity)
            RLTrace.observerExit(loop: loop)
            emit("observer_entry", ["loop_id": "\(loop)", "item_id": "\(item)", "activity": "\(activity)"],
                 labels: ["activity": activityLabels[activity]!])
            emit("observer_exit", ["loop_id": "\(loop)"])
        }
        do {
            let item = u64()
            RLTrace.source0Entry(loop: loop, item: item)
            RLTrace.source0Exit(loop: loop)
            emit("source0_entry", ["loop_id": "\(loop)", "item_id": "\(item)"])
            emit("source0_exit", ["loop_id": "\(loop)"])
        }
        for events in [UInt32(0x1), 0x4, 0x19, UInt32.max] {
            let item = u64(), fd = Int32.random(in: 0...65535, using: &rng)
            RLTrace.source1Entry(loop: loop, item: item, fd: fd, events: events)
            RLTrace.source1Exit(loop: loop)
            emit("source1_entry", ["loop_id": "\(loop)", "item_id": "\(item)", "fd": "\(fd)", "events": "\(events)"])
            emit("source1_exit", ["loop_id": "\(loop)"])
        }
        do {
            let item = u64(), scheduled = u64()
            RLTrace.timerEntry(loop: loop, item: item, scheduledNs: scheduled)
            RLTrace.timerExit(loop: loop)
            emit("timer_entry", ["loop_id": "\(loop)", "item_id": "\(item)", "scheduled_ns": "\(scheduled)"])
            emit("timer_exit", ["loop_id": "\(loop)"])
        }
        do {
            RLTrace.mainQueueEntry(loop: loop)
            RLTrace.mainQueueExit(loop: loop)
            emit("main_queue_entry", ["loop_id": "\(loop)"])
            emit("main_queue_exit", ["loop_id": "\(loop)"])
        }
        // A block: a named one is described (item_info, kind block) just before its entry; an
        // unnamed one is not.
        for n in ["", name().isEmpty ? "work" : name()] {
            let item = u64()
            RLTrace.blockEntry(loop: loop, item: item, name: n)
            RLTrace.blockExit(loop: loop)
            if !n.isEmpty {
                emit("item_info", ["loop_id": "\(loop)", "kind": "\(RLCalloutKind.block.rawValue)", "item_id": "\(item)",
                                   "order": "0", "name": n, "mode": ""], labels: ["kind": kindLabels[.block]!])
            }
            emit("block_entry", ["loop_id": "\(loop)", "item_id": "\(item)"])
            emit("block_exit", ["loop_id": "\(loop)"])
        }
        for timeout in [Int64(-1), 0, Int64.random(in: 1...Int64.max, using: &rng)] {
            let deadline = timeout == -1 ? 0 : u64()
            RLTrace.sleepBegin(loop: loop, timeoutNs: timeout, deadlineNs: deadline)
            emit("sleep_begin", ["loop_id": "\(loop)", "timeout_ns": "\(timeout)", "deadline_ns": "\(deadline)"])
        }
        for reason in RLWakeReason.allCases {
            let fd: Int32 = reason == .source1 ? Int32.random(in: 0...1000, using: &rng) : -1, slept = u64()
            RLTrace.wake(loop: loop, reason: reason, fd: fd, sleptNs: slept)
            emit("wake", ["loop_id": "\(loop)", "reason": "\(reason.rawValue)", "fd": "\(fd)", "slept_ns": "\(slept)"],
                 labels: ["reason": reasonLabels[reason]!])
        }
        let myTid = currentThreadID()
        for accepted in [true, false] {
            RLTrace.wakeUpRequested(loop: loop, accepted: accepted)
            emit("wakeup_requested", ["loop_id": "\(loop)", "accepted": accepted ? "1" : "0", "caller_tid": "\(myTid)"])
        }
        do {
            let item = u64(), seq = u64()
            RLTrace.source0Signalled(loop: loop, item: item, signalSeq: seq)
            emit("source0_signalled", ["loop_id": "\(loop)", "item_id": "\(item)", "signal_seq": "\(seq)", "caller_tid": "\(myTid)"])
            // From another thread: caller_tid must be that thread's.
            let box = TidBox()
            let t = Thread {
                let tid = currentThreadID()
                RLTrace.source0Signalled(loop: loop, item: item, signalSeq: seq)
                box.set(tid)
            }
            t.start()
            while box.get() == 0 { usleep(1000) }
            emit("source0_signalled", ["loop_id": "\(loop)", "item_id": "\(item)", "signal_seq": "\(seq)", "caller_tid": "\(box.get())"])
        }
        do {
            let item = u64(), fire = u64(), interval = u64(), missed = UInt32.random(in: 0...UInt32.max, using: &rng)
            RLTrace.timerArmed(loop: loop, item: item, fireNs: fire, intervalNs: interval, missedFires: missed)
            emit("timer_armed", ["loop_id": "\(loop)", "item_id": "\(item)", "fire_ns": "\(fire)", "interval_ns": "\(interval)",
                                 "missed_fires": "\(missed)"])
        }
        // The constant pools and the watchdog's CPU readings.
        do {
            let pid = Int32.random(in: 1...Int32.max, using: &rng), ltid = Int32.random(in: 1...Int32.max, using: &rng)
            let proc = name(), thread = name()
            RLTrace.loopInfo(loop: loop, pid: pid, tid: ltid, procname: proc, threadName: thread)
            emit("loop_info", ["loop_id": "\(loop)", "pid": "\(pid)", "tid": "\(ltid)", "procname": proc, "thread_name": thread])
        }
        for kind in RLCalloutKind.allCases {
            let item = u64(), order = Int64.random(in: Int64.min...Int64.max, using: &rng), n = name(), mode = name()
            RLTrace.itemInfo(loop: loop, kind: kind, item: item, order: order, name: n, mode: mode)
            emit("item_info", ["loop_id": "\(loop)", "kind": "\(kind.rawValue)", "item_id": "\(item)", "order": "\(order)",
                               "name": n, "mode": mode], labels: ["kind": kindLabels[kind]!])
            let elapsed = u64(), cpu = u64()
            RLTrace.calloutCPU(loop: loop, kind: kind, item: item, elapsedNs: elapsed, cpuNs: cpu)
            emit("callout_cpu", ["loop_id": "\(loop)", "kind": "\(kind.rawValue)", "item_id": "\(item)", "elapsed_ns": "\(elapsed)",
                                 "cpu_ns": "\(cpu)"], labels: ["kind": kindLabels[kind]!])
        }
        for kind in RLCalloutKind.allCases {
            let it = u64(), item = u64(), n = name(), mode = name()
            RLTrace.itemAdded(loop: loop, iteration: it, kind: kind, item: item, name: n, mode: mode)
            RLTrace.itemRemoved(loop: loop, iteration: it, kind: kind, item: item, name: n, mode: mode)
            for ev in ["item_added", "item_removed"] {
                emit(ev, ["loop_id": "\(loop)", "iteration": "\(it)", "kind": "\(kind.rawValue)", "item_id": "\(item)",
                          "name": n, "mode": mode],
                     labels: ["kind": kindLabels[kind]!])
            }
        }
        // The hang watchdog's events (RunLoopCore emits them from its watchdog thread and, for
        // hang_stack, from a signal handler; here directly, with every kind and a `loop` hang).
        for kind in [nil] + RLCalloutKind.allCases.map(Optional.some) {
            let it = u64(), hang = u64(), item = u64(), n = name(), threshold = u64(), elapsed = u64()
            let ltid = Int32.random(in: 1...Int32.max, using: &rng)
            RLTrace.hangBegin(loop: loop, iteration: it, hangID: hang, kind: kind, item: item, name: n,
                              thresholdNs: threshold, elapsedNs: elapsed, loopTid: ltid)
            emit("hang_begin", ["loop_id": "\(loop)", "iteration": "\(it)", "hang_id": "\(hang)",
                                "kind": "\(kind?.rawValue ?? RunLoopSchema.calloutKindLoop)", "item_id": "\(item)", "item_name": n,
                                "threshold_ns": "\(threshold)", "elapsed_ns": "\(elapsed)", "loop_tid": "\(ltid)"],
                 labels: ["kind": kind.map { kindLabels[$0]! } ?? loopKindLabel])
        }
        for count in [0, 1, 3, 64, 70] {
            let hang = u64(), sample = UInt32.random(in: 0...UInt32.max, using: &rng), elapsed = u64()
            let frames = (0..<count).map { _ in u64() }
            RLTrace.hangStack(loop: loop, hangID: hang, sample: sample, elapsedNs: elapsed, frames: frames)
            emit("hang_stack", ["loop_id": "\(loop)", "hang_id": "\(hang)", "sample": "\(sample)", "elapsed_ns": "\(elapsed)",
                                "frames": frames.prefix(64).map { "\($0)" }.joined(separator: ","),
                                // babeltrace2 shows the CTF sequence's length field too
                                "_frames_length": "\(min(count, 64))"])
        }
        do {
            let it = u64(), hang = u64(), duration = u64(), samples = UInt32.random(in: 0...UInt32.max, using: &rng)
            RLTrace.hangEnd(loop: loop, iteration: it, hangID: hang, durationNs: duration, samples: samples)
            emit("hang_end", ["loop_id": "\(loop)", "iteration": "\(it)", "hang_id": "\(hang)", "duration_ns": "\(duration)",
                              "samples": "\(samples)"])
        }
        let destroyedAt = u64()
        RLTrace.loopDestroyed(loop: loop, iteration: destroyedAt, tid: tid)
        emit("loop_destroyed", ["loop_id": "\(loop)", "iteration": "\(destroyedAt)", "tid": "\(tid)"])

        // How many events a session records right now (all of them under `runloop:*`, none without a daemon).
        print("ENABLED \(RLSchemaEventID.allCases.filter { RLTrace.isEnabled($0) }.count)")
        print("CALLOUTS_TRACED \(RLCalloutKind.allCases.filter { RLTrace.isCalloutTraced($0) }.count)")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for e in out {
            print("EXPECT " + String(decoding: try! encoder.encode(e), as: UTF8.self))
        }
    }
}

/// The calling thread's kernel tid, read from /proc (independently of the provider's own helper).
func currentThreadID() -> Int32 {
    let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return Int32(path.split(separator: "/").last.map(String.init) ?? "") ?? -1
}

/// A tid handed from one thread to another.
final class TidBox: @unchecked Sendable {
    private let lock = NSLock()
    private var tid: Int32 = 0
    func set(_ value: Int32) { lock.withLock { tid = value } }
    func get() -> Int32 { lock.withLock { tid } }
}
