import RunLoopSchema

/// The selection stage of the pipeline (source → selection → loop model → sinks): what an
/// ``EventFilter`` selects, decided here and nowhere else, for every command alike.
///
/// - Loops (`--pid`, `--tid`, `--procname`, `--loop`): a loop not selected delivers nothing to
///   the sinks. Events of other processes and loops are already dropped by the reader's gate
///   (``EventGate``); a thread or a process name is known only once the loop's events say it, so
///   those are decided here, per loop, again whenever what the decision looked at changes.
/// - Callouts (`--kind`, `--item`, `--min-duration`): only selected callouts reach the sinks'
///   callout figures; timer lateness and signal latency follow the kind and the item (they belong
///   to a timer and a source0). Iterations, sleeps and wakes are not narrowed by these: an
///   iteration still carries all its callouts, and ``selects(_:pid:)`` tells a sink which of them
///   are selected (the timeline lists the iterations that hold one).
/// - Modes (`--mode`): only the iterations of runs in those modes, and the callouts, sleeps,
///   wakes and latencies handed over while the loop runs in one of them.
/// - Time (`--begin`, `--end`): one rule, ``TimeWindow``, applied by the loop model.
public final class SelectionStage: LoopModelSink, NameResolving {
    /// What is selected.
    public let filter: EventFilter
    /// Where selected records go.
    private let next: LoopModelSink
    /// The model, for loops' threads and process names and items' names.
    public var resolver: LoopModel? {
        didSet { model = resolver.map { Unmanaged.passUnretained($0) } }
    }
    private var model: Unmanaged<LoopModel>?
    private let narrowsLoops: Bool, narrowsCallouts: Bool, narrowsModes: Bool
    /// Per mode name id: 0 not decided yet, 1 selected, 2 not.
    private var modeDecisions: [UInt8] = []
    /// Iterations that reached the sinks, and the modes seen (name ids, for the message when none did).
    public private(set) var iterationsSelected = 0
    public private(set) var modesSeen: Set<Int32> = []
    private let kindMask: UInt64, minCalloutNs: Int64
    private let itemMatcher: ItemGlobMatcher?
    /// The loop decisions, direct-mapped by loop, each with the facts it was made on
    /// (``LoopModel/filterFacts(of:)``): while a loop's thread and process name stay the same, so
    /// does the decision.
    private var decisions = [(key: LoopKey, tid: Int64, procname: Int32, accepted: Bool)](
        repeating: (LoopKey(pid: .min, loop: 0), .min, .min, false), count: 64)
    /// Callouts of selected loops: seen at all, of a selected kind and item (whatever their
    /// duration), and selected (reaching the sinks).
    public private(set) var calloutsSeen = 0, calloutsOfSelectedItems = 0, calloutsSelected = 0

    /// A stage applying `filter` in front of `next`.
    public init(filter: EventFilter, next: LoopModelSink) {
        self.filter = filter
        self.next = next
        narrowsLoops = filter.narrowsLoops
        narrowsCallouts = filter.narrowsCallouts
        narrowsModes = !filter.modes.isEmpty
        kindMask = filter.calloutKindMask
        minCalloutNs = filter.minCalloutNs
        itemMatcher = filter.itemGlob.map { ItemGlobMatcher($0) }
    }

    /// Whether the stage changes anything (otherwise the pipeline leaves it out).
    public static func needed(for filter: EventFilter) -> Bool { filter.narrowsLoops || filter.narrowsCallouts || !filter.modes.isEmpty }

    /// Whether the mode of name id `id` is selected (decided once per id).
    @inline(__always)
    public func selects(modeID id: Int32) -> Bool {
        guard narrowsModes else { return true }
        let i = Int(max(0, id))
        if i < modeDecisions.count, modeDecisions[i] != 0 { return modeDecisions[i] == 1 }
        let yes = filter.acceptsMode(resolver?.names[id] ?? "")
        if i >= modeDecisions.count { modeDecisions.append(contentsOf: repeatElement(0, count: i + 1 - modeDecisions.count)) }
        modeDecisions[i] = yes ? 1 : 2
        return yes
    }

    /// Whether loop `key` is selected and, with `--mode`, runs in a selected mode now.
    @inline(__always)
    private func selectsNow(_ key: LoopKey) -> Bool {
        guard selects(loop: key) else { return false }
        guard narrowsModes, let model else { return true }
        return selects(modeID: model._withUnsafeGuaranteedRef { $0.currentMode(of: key) })
    }

    /// Whether loop `key` is selected, as far as its events have said who it is.
    @inline(__always)
    public func selects(loop key: LoopKey) -> Bool {
        guard narrowsLoops, let model else { return true }
        return model._withUnsafeGuaranteedRef { m in
            guard let facts = m.filterFacts(of: key) else { return false }
            let slot = Int(truncatingIfNeeded: ((key.loop ^ UInt64(bitPattern: key.pid) << 24) &* 0x9E37_79B9_7F4A_7C15) >> 58)
            let d = decisions[slot]
            if d.key == key && d.tid == facts.tid && d.procname == facts.procname { return d.accepted }
            let accepted = m.info(of: key).map { filter.acceptsLoop($0) } ?? false
            decisions[slot] = (key, facts.tid, facts.procname, accepted)
            return accepted
        }
    }

    /// Whether callout `c` of a loop of process `pid` is selected (its kind, item name and whole
    /// duration: a window that cuts a long callout still selects it by its length).
    @inline(__always)
    public func selects(_ c: CalloutRecord, pid: Int64) -> Bool {
        selectsItem(of: c, pid: pid) && c.wholeDurationNs >= minCalloutNs
    }

    /// Whether callout `c`'s kind and item are selected (whatever its duration).
    @inline(__always)
    private func selectsItem(of c: CalloutRecord, pid: Int64) -> Bool {
        guard narrowsCallouts else { return true }
        guard kindMask & (1 << UInt64(c.kind.rawValue)) != 0 else { return false }
        guard let m = itemMatcher else { return true }
        return m.matches(c, pid: pid, model: resolver)
    }

    /// Whether an item of `kind` (a timer's lateness, a source0's signal latency) is selected.
    @inline(__always)
    private func selects(kind: RLCalloutKind, item: UInt64, pid: Int64) -> Bool {
        guard narrowsCallouts else { return true }
        guard kindMask & (1 << UInt64(kind.rawValue)) != 0 else { return false }
        guard let m = itemMatcher else { return true }
        return m.matches(kind: kind, nameID: resolver?.nameID(of: kind, item: item, pid: pid) ?? -1, in: resolver?.names)
    }

    // MARK: LoopModelSink

    public func iteration(_ it: IterationRecord, of loop: LoopInfo) {
        guard !narrowsLoops || filter.acceptsLoop(loop) else { return }
        if narrowsModes {
            if modesSeen.count < 64 { modesSeen.insert(it.mode) }
            guard selects(modeID: it.mode) else { return }
        }
        iterationsSelected += 1
        next.iteration(it, of: loop)
    }
    public func callout(_ c: CalloutRecord, of key: LoopKey) {
        guard selectsNow(key) else { return }
        calloutsSeen += 1
        guard selectsItem(of: c, pid: key.pid) else { return }
        calloutsOfSelectedItems += 1
        guard c.wholeDurationNs >= minCalloutNs else { return }
        calloutsSelected += 1
        next.callout(c, of: key)
    }
    public func sleep(_ s: SleepRecord, of key: LoopKey) { if selectsNow(key) { next.sleep(s, of: key) } }
    public func wake(_ reason: RLWakeReason, of key: LoopKey) { if selectsNow(key) { next.wake(reason, of: key) } }
    public func unmatchedCallout(of key: LoopKey) { if selectsNow(key) { next.unmatchedCallout(of: key) } }
    public func timerLateness(_ ns: Int64, item: UInt64, of key: LoopKey) {
        if selectsNow(key) && selects(kind: .timer, item: item, pid: key.pid) { next.timerLateness(ns, item: item, of: key) }
    }
    public func signalLatency(_ ns: Int64, item: UInt64, callerTid: Int64, of key: LoopKey) {
        if selectsNow(key) && selects(kind: .source0, item: item, pid: key.pid) {
            next.signalLatency(ns, item: item, callerTid: callerTid, of: key)
        }
    }
    public func wakeUpLatency(_ ns: Int64, callerTid: Int64, of key: LoopKey) {
        if selectsNow(key) { next.wakeUpLatency(ns, callerTid: callerTid, of: key) }
    }
    public func run(_ enter: Bool, mode: String, depth: Int, result: Int64, at ts: Int64, of key: LoopKey) {
        guard selects(loop: key) else { return }
        if narrowsModes && !filter.acceptsMode(mode) { return }
        next.run(enter, mode: mode, depth: depth, result: result, at: ts, of: key)
    }
    public func flow(_ f: Flow) { if selectsNow(f.to) { next.flow(f) } }
    public func traceBegins(at ts: Int64, epochOffset: Int64) { next.traceBegins(at: ts, epochOffset: epochOffset) }
    public func hang(_ record: HangEventRecord, of key: LoopKey) { if selects(loop: key) { next.hang(record, of: key) } }
    public func finish(end: Int64) { next.finish(end: end) }
}

/// Hands everything to two sinks, `first` then `second` (a report and the HTML's busy strips, say).
public final class SinkTee: LoopModelSink, NameResolving {
    private let first: LoopModelSink, second: LoopModelSink
    /// A tee into `first` and `second`.
    public init(_ first: LoopModelSink, _ second: LoopModelSink) { self.first = first; self.second = second }
    /// Set on both sinks that resolve names.
    public var resolver: LoopModel? {
        didSet { for s in [first, second] { (s as? NameResolving)?.resolver = resolver } }
    }
    public func iteration(_ it: IterationRecord, of loop: LoopInfo) { first.iteration(it, of: loop); second.iteration(it, of: loop) }
    public func callout(_ c: CalloutRecord, of key: LoopKey) { first.callout(c, of: key); second.callout(c, of: key) }
    public func sleep(_ s: SleepRecord, of key: LoopKey) { first.sleep(s, of: key); second.sleep(s, of: key) }
    public func wake(_ reason: RLWakeReason, of key: LoopKey) { first.wake(reason, of: key); second.wake(reason, of: key) }
    public func unmatchedCallout(of key: LoopKey) { first.unmatchedCallout(of: key); second.unmatchedCallout(of: key) }
    public func timerLateness(_ ns: Int64, item: UInt64, of key: LoopKey) {
        first.timerLateness(ns, item: item, of: key); second.timerLateness(ns, item: item, of: key)
    }
    public func signalLatency(_ ns: Int64, item: UInt64, callerTid: Int64, of key: LoopKey) {
        first.signalLatency(ns, item: item, callerTid: callerTid, of: key); second.signalLatency(ns, item: item, callerTid: callerTid, of: key)
    }
    public func wakeUpLatency(_ ns: Int64, callerTid: Int64, of key: LoopKey) {
        first.wakeUpLatency(ns, callerTid: callerTid, of: key); second.wakeUpLatency(ns, callerTid: callerTid, of: key)
    }
    public func run(_ enter: Bool, mode: String, depth: Int, result: Int64, at ts: Int64, of key: LoopKey) {
        first.run(enter, mode: mode, depth: depth, result: result, at: ts, of: key)
        second.run(enter, mode: mode, depth: depth, result: result, at: ts, of: key)
    }
    public func flow(_ f: Flow) { first.flow(f); second.flow(f) }
    public func traceBegins(at ts: Int64, epochOffset: Int64) {
        first.traceBegins(at: ts, epochOffset: epochOffset); second.traceBegins(at: ts, epochOffset: epochOffset)
    }
    public func hang(_ record: HangEventRecord, of key: LoopKey) { first.hang(record, of: key); second.hang(record, of: key) }
    public func finish(end: Int64) { first.finish(end: end); second.finish(end: end) }
}

/// The reader's part of the selection: the event-level filters of an ``EventFilter`` (process and
/// loop ids) resolved for one trace, checked per event with integer compares only, and the time
/// window resolved against the trace's first event (absolute CLOCK_MONOTONIC ns).
final class EventGate {
    private let pids: Set<Int64>, loops: Set<UInt64>
    private let checkPids: Bool, checkLoops: Bool
    private let begin: EventFilter.TimeBound?, end: EventFilter.TimeBound?
    /// The window resolved at the first event (absolute CLOCK_MONOTONIC ns).
    private(set) var lo: Int64 = .min, hi: Int64 = .max
    private var started = false

    init(_ f: EventFilter) {
        pids = f.pids; loops = f.loops
        checkPids = !f.pids.isEmpty; checkLoops = !f.loops.isEmpty
        begin = f.begin; end = f.end
    }

    /// Resolves relative and epoch bounds against the first `runloop` event and the clock offset.
    private func start(origin: Int64, epochOffset: Int64) {
        started = true
        func resolve(_ b: EventFilter.TimeBound) -> Int64 {
            switch b {
            case .relative(let ns): origin &+ ns
            case .absolute(let ns): ns
            case .epoch(let ns): ns &- epochOffset
            case .timeOfDay(let ns): dayStart(origin &+ epochOffset) &+ ns &- epochOffset
            }
        }
        lo = begin.map(resolve) ?? .min
        hi = end.map(resolve) ?? .max
    }

    /// The loops whose events the gate turned away (for the message when nothing is selected),
    /// at most 64, and the last one (most events repeat it: one compare).
    private(set) var turnedAway: Set<LoopKey> = []
    private var lastTurnedAway = LoopKey(pid: .min, loop: .max)

    /// Whether the event passes the pid and loop filters. The time window is the loop model's to
    /// apply (it follows what began before the window and what is open at its end); the gate only
    /// resolves it.
    @inline(__always)
    func accepts(_ e: RunLoopEvent, epochOffset: Int64) -> Bool {
        if !started { start(origin: e.ts, epochOffset: epochOffset) }
        if checkPids && !pids.contains(LoopKey.processID(e.pid)) { turnAway(e); return false }
        // (A signal of a source in no loop, loop 0, may still be performed by a selected loop.)
        if checkLoops && !loops.contains(e.loop) && !(e.kind == .source0Signalled && e.loop == 0) { turnAway(e); return false }
        return true
    }

    @inline(__always)
    private func turnAway(_ e: RunLoopEvent) {
        guard e.loop != 0, e.pid != lastTurnedAway.pid || e.loop != lastTurnedAway.loop else { return }
        lastTurnedAway = LoopKey(pid: e.pid, loop: e.loop)
        if turnedAway.count < 64 { turnedAway.insert(lastTurnedAway) }
    }
}
