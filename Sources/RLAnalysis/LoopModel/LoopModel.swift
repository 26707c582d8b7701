/// Identifies a loop across processes: `(vpid, loop_id)`.
public struct LoopKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The process (`vpid` context; 0 when not recorded).
    public var pid: Int64
    /// The loop's id.
    public var loop: UInt64
    /// Creates a key.
    public init(pid: Int64, loop: UInt64) { self.pid = pid; self.loop = loop }
    /// Orders by pid, then loop.
    public static func < (a: LoopKey, b: LoopKey) -> Bool { a.pid != b.pid ? a.pid < b.pid : a.loop < b.loop }
    /// `pid/loop`.
    public var description: String { "\(pid)/\(loop)" }
}

/// One matched callout.
public struct CalloutRecord: Sendable {
    /// Its kind.
    public var kind: CalloutKind
    /// The item id (0 for the main queue).
    public var item: UInt64
    /// Entry and exit timestamps.
    public var begin: Int64, end: Int64
    /// How many callouts of this loop enclose it.
    public var depth: Int
    /// Activity (observer), fd (source1), scheduled time (timer), else 0.
    public var detail: Int64
    /// A block's name (nil for other kinds). Every perform-block is its own item, so its name
    /// travels with its record instead of a per-item table; see ``LoopModel/name(of:pid:)``.
    public var blockName: String? = nil
    /// The duration.
    public var duration: Int64 { end - begin }
}

/// One sleep: `sleep_begin` → `wake`.
public struct SleepRecord: Sendable {
    /// When the loop went to sleep and when it woke.
    public var begin: Int64, end: Int64
    /// Why it woke.
    public var reason: WakeReason
    /// The fd that ended the wait (-1 if none).
    public var fd: Int64
    /// The duration.
    public var duration: Int64 { end - begin }
}

/// A completed iteration, as the loop model hands it to the metrics and the timeline.
public struct IterationRecord: Sendable {
    /// The loop.
    public var key: LoopKey
    /// The iteration number.
    public var number: UInt64
    /// Begin and end timestamps.
    public var begin: Int64, end: Int64 = 0
    /// Nesting depth among this loop's iterations (0 = top level).
    public var depth: Int
    /// The mode of the run it belongs to.
    public var mode: String
    /// Its own sleeps (usually 0 or 1).
    public var sleeps: [SleepRecord] = []
    /// Every `wake` event in it (polls included), by reason.
    public var wakes: [WakeReason] = []
    /// Polls (wakes without a sleep).
    public var polls = 0
    /// Callouts that belong to it (not to nested iterations), in entry order.
    public var callouts: [CalloutRecord] = []
    /// Sleeps of iterations nested in it: total ns, count, and their polls.
    public var nestedSleepNs: Int64 = 0, nestedSleeps = 0, nestedPolls = 0
    /// Whether it handled a source (`iteration_end.handled_source`).
    public var handledSource = false

    /// The duration.
    public var duration: Int64 { end - begin }
    /// Its own sleep time.
    public var ownSleepNs: Int64 { sleeps.reduce(0) { $0 + $1.duration } }
    /// Duration minus every sleep in it (nested included).
    public var busyNs: Int64 { duration - ownSleepNs - nestedSleepNs }
    /// Whether it slept (itself).
    public var slept: Bool { !sleeps.isEmpty }
}

/// What the model knows about a loop.
public struct LoopInfo: Sendable {
    /// The loop.
    public var key: LoopKey
    /// Its thread (loop_created.tid, else vtid, else -1).
    public var tid: Int64 = -1
    /// Its thread's name.
    public var threadName = ""
    /// The process name.
    public var procname = ""
    /// First and last event of this loop.
    public var first: Int64 = .max, last: Int64 = .min
}

/// Receives what the loop model reconstructs.
public protocol LoopModelSink: AnyObject {
    /// A completed iteration.
    func iteration(_ it: IterationRecord, of loop: LoopInfo)
    /// A matched callout (also delivered inside its iteration).
    func callout(_ c: CalloutRecord, of key: LoopKey, name: String)
    /// A sleep pair.
    func sleep(_ s: SleepRecord, of key: LoopKey)
    /// Any wake event.
    func wake(_ reason: WakeReason, of key: LoopKey)
    /// A callout pair that could not be matched.
    func unmatchedCallout(of key: LoopKey)
    /// Timer lateness at a timer entry.
    func timerLateness(_ ns: Int64, item: UInt64, of key: LoopKey)
    /// source0_signalled → source0_entry.
    func signalLatency(_ ns: Int64, item: UInt64, callerTid: Int64, of key: LoopKey)
    /// accepted wakeup_requested → wake(wake_up).
    func wakeUpLatency(_ ns: Int64, callerTid: Int64, of key: LoopKey)
    /// A run entered or exited (for timelines).
    func run(_ enter: Bool, mode: String, depth: Int, result: Int64, at ts: Int64, of key: LoopKey)
    /// A cross-thread request and the loop's reaction (has a default that ignores it).
    func flow(_ f: Flow)
}

/// Cross-thread causality, for flow arrows: thread `fromTid` asked at `fromTs`; the loop reacted at `toTs`.
public struct Flow: Sendable {
    /// `wakeUp` or `signal`.
    public var kind: String
    /// The requesting thread and when it asked.
    public var fromTid: Int64, fromTs: Int64
    /// The loop and when it woke (wakeUp) or performed (signal).
    public var to: LoopKey, toTs: Int64
}

extension LoopModelSink {
    /// A cross-thread request and the loop's reaction (default: ignored).
    public func flow(_ f: Flow) {}
}

/// Rebuilds loops, iterations, callouts and sleeps from the event stream (the rules of
/// `docs/report-json.md`), and hands the results to a sink.
public final class LoopModel {
    final class State {
        var info: LoopInfo
        var iterations: [IterationRecord] = []
        var callouts: [(record: CalloutRecord, iterationIndex: Int)] = []
        var pendingSleep: (iteration: UInt64, ts: Int64)?
        var modes: [String] = []
        var pendingWakeUps: [(ts: Int64, tid: Int64)] = []
        init(key: LoopKey) { info = LoopInfo(key: key) }
    }
    private var states: [LoopKey: State] = [:]
    private var names: [NameKey: String] = [:]
    private var pendingSignals: [SignalKey: [(ts: Int64, tid: Int64, seq: Int64)]] = [:]
    private struct NameKey: Hashable { var pid: Int64; var kind: CalloutKind; var item: UInt64 }
    /// A signal is performed once, by whichever loop gets to it first: pending signals are kept per
    /// source, and a perform by any loop ends them all.
    private struct SignalKey: Hashable { var pid: Int64; var item: UInt64 }
    private let sink: LoopModelSink

    /// Creates a model delivering to `sink`.
    public init(sink: LoopModelSink) { self.sink = sink }

    /// Every loop seen, sorted.
    public var loops: [LoopInfo] { states.values.map(\.info).sorted { $0.key < $1.key } }

    /// The name of an item (empty if never seen; blocks are named by their records).
    public func name(of kind: CalloutKind, item: UInt64, pid: Int64) -> String {
        kind == .mainQueue ? "main-queue" : (names[NameKey(pid: pid, kind: kind, item: item)] ?? "")
    }

    /// The name of a callout's item (a block's own name for blocks).
    public func name(of c: CalloutRecord, pid: Int64) -> String {
        c.kind == .block ? (c.blockName ?? "") : name(of: c.kind, item: c.item, pid: pid)
    }

    private func state(_ key: LoopKey) -> State {
        if let s = states[key] { return s }
        let s = State(key: key)
        states[key] = s
        return s
    }

    /// Feeds one event.
    public func consume(_ e: RunLoopEvent) {
        if e.kind == .source0Signalled {
            if let t = e.text { names[NameKey(pid: e.pid, kind: .source0, item: e.item)] = t }
            // A source in several loops is signalled once per loop, the events sharing signal_seq
            // (0 in traces that predate it: one event per signal there).
            let key = SignalKey(pid: e.pid, item: e.item)
            if e.c != 0, pendingSignals[key]?.last?.seq == e.c { return }
            pendingSignals[key, default: []].append((e.ts, e.a, e.c))
            return
        }
        let key = LoopKey(pid: e.pid, loop: e.loop)
        let s = state(key)
        if e.ts < s.info.first { s.info.first = e.ts }
        if e.ts > s.info.last { s.info.last = e.ts }
        if s.info.procname.isEmpty, let p = e.procname { s.info.procname = p }
        if s.info.tid < 0, e.vtid >= 0, e.kind != .wakeUpRequested, e.kind != .itemAdded, e.kind != .itemRemoved, e.kind != .timerArmed {
            s.info.tid = e.vtid
        }
        switch e.kind {
        case .loopCreated:
            s.info.tid = e.a
            s.info.threadName = e.text ?? ""
        case .loopDestroyed:
            break
        case .runEnter:
            s.modes.append(e.text ?? "")
            sink.run(true, mode: e.text ?? "", depth: Int(e.b), result: 0, at: e.ts, of: key)
        case .runExit:
            if !s.modes.isEmpty { s.modes.removeLast() }
            sink.run(false, mode: e.text ?? "", depth: Int(e.b), result: e.a, at: e.ts, of: key)
        case .iterationBegin:
            s.iterations.append(IterationRecord(key: key, number: e.iteration, begin: e.ts, depth: s.iterations.count,
                                                mode: s.modes.last ?? ""))
        case .iterationEnd:
            guard let idx = s.iterations.lastIndex(where: { $0.number == e.iteration }) else { return }
            // Open iterations above the matching one are discarded (their callouts with them).
            if idx < s.iterations.count - 1 {
                s.iterations.removeSubrange((idx + 1)...)
                s.callouts.removeAll { $0.iterationIndex > idx }
            }
            var it = s.iterations.removeLast()
            it.end = e.ts
            it.handledSource = e.b != 0
            if let parent = s.iterations.indices.last {
                s.iterations[parent].nestedSleepNs += it.ownSleepNs + it.nestedSleepNs
                s.iterations[parent].nestedSleeps += it.sleeps.count + it.nestedSleeps
                s.iterations[parent].nestedPolls += it.polls + it.nestedPolls
            }
            sink.iteration(it, of: s.info)
        case .calloutEntry:
            var rec = CalloutRecord(kind: e.calloutKind, item: e.item, begin: e.ts, end: e.ts, depth: s.callouts.count, detail: e.a)
            if e.calloutKind == .block { rec.blockName = e.text } else if let t = e.text { names[NameKey(pid: e.pid, kind: e.calloutKind, item: e.item)] = t }
            s.callouts.append((rec, s.iterations.count - 1))
            if e.calloutKind == .timer { sink.timerLateness(e.ts - e.a, item: e.item, of: key) }
            if e.calloutKind == .source0, let pending = pendingSignals.removeValue(forKey: SignalKey(pid: e.pid, item: e.item)) {
                for p in pending {
                    sink.signalLatency(e.ts - p.ts, item: e.item, callerTid: p.tid, of: key)
                    sink.flow(Flow(kind: "signal", fromTid: p.tid, fromTs: p.ts, to: key, toTs: e.ts))
                }
            }
        case .calloutExit:
            guard let idx = s.callouts.lastIndex(where: { $0.record.kind == e.calloutKind && $0.record.item == e.item }) else {
                sink.unmatchedCallout(of: key)
                return
            }
            for _ in (idx + 1)..<s.callouts.count { sink.unmatchedCallout(of: key) }
            var (rec, iterIdx) = s.callouts[idx]
            s.callouts.removeSubrange(idx...)
            rec.end = e.ts
            if iterIdx >= 0 && iterIdx < s.iterations.count { s.iterations[iterIdx].callouts.append(rec) }
            sink.callout(rec, of: key, name: name(of: rec, pid: key.pid))
        case .sleepBegin:
            s.pendingSleep = (e.iteration, e.ts)
        case .wake:
            let reason = WakeReason(rawValue: UInt8(truncatingIfNeeded: e.b)) ?? .none
            sink.wake(reason, of: key)
            var slept: SleepRecord?
            if let p = s.pendingSleep, p.iteration == e.iteration {
                slept = SleepRecord(begin: p.ts, end: e.ts, reason: reason, fd: e.a)
                sink.sleep(slept!, of: key)
            }
            s.pendingSleep = nil
            if let top = s.iterations.indices.last {
                s.iterations[top].wakes.append(reason)
                if let slept { s.iterations[top].sleeps.append(slept) } else { s.iterations[top].polls += 1 }
            }
            if reason == .wakeUp && !s.pendingWakeUps.isEmpty {
                for p in s.pendingWakeUps {
                    sink.wakeUpLatency(e.ts - p.ts, callerTid: p.tid, of: key)
                    sink.flow(Flow(kind: "wakeUp", fromTid: p.tid, fromTs: p.ts, to: key, toTs: e.ts))
                }
                s.pendingWakeUps.removeAll()
            }
        case .wakeUpRequested:
            if e.b != 0 { s.pendingWakeUps.append((e.ts, e.a)) }
        case .source0Signalled, .timerArmed, .itemAdded, .itemRemoved:
            if (e.kind == .itemAdded || e.kind == .itemRemoved), let t = e.text, !t.isEmpty {
                names[NameKey(pid: e.pid, kind: e.calloutKind, item: e.item)] = t
            }
        }
    }
}
