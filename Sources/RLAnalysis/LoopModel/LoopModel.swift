import RunLoopSchema

/// Receives what the loop model reconstructs (every method has a default that ignores it: a sink
/// implements what it uses).
public protocol LoopModelSink: AnyObject {
    /// A completed iteration.
    func iteration(_ it: IterationRecord, of loop: LoopInfo)
    /// A matched callout (also delivered inside its iteration).
    func callout(_ c: CalloutRecord, of key: LoopKey)
    /// A sleep pair.
    func sleep(_ s: SleepRecord, of key: LoopKey)
    /// Any wake event.
    func wake(_ reason: RLWakeReason, of key: LoopKey)
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
    /// The trace's first event time (has a default that ignores it).
    func traceBegins(at ts: Int64, epochOffset: Int64)
    /// A hang watchdog event, whole (has a default that ignores it).
    func hang(_ record: HangEventRecord, of key: LoopKey)
    /// The end of the stream (has a default that does nothing).
    func finish(end: Int64)
}

/// Cross-thread causality, for flow arrows: thread `fromTid` asked at `fromTs`; the loop reacted at `toTs`.
public struct Flow: Sendable {
    /// What a flow joins: a `CFRunLoopWakeUp` to the wake it caused, or a `CFRunLoopSourceSignal` to
    /// the perform it caused. The raw value is the name the exports give the arrow.
    public enum Kind: String, Sendable {
        /// `CFRunLoopWakeUp` → the loop's wake.
        case wakeUp
        /// `CFRunLoopSourceSignal` → the source's perform.
        case signal
    }
    /// Which request this is.
    public var kind: Kind
    /// The requesting thread and when it asked.
    public var fromTid: Int64, fromTs: Int64
    /// The loop and when it woke (wakeUp) or performed (signal).
    public var to: LoopKey, toTs: Int64
}

extension LoopModelSink {
    /// A completed iteration (default: ignored).
    public func iteration(_ it: IterationRecord, of loop: LoopInfo) {}
    /// A matched callout (default: ignored).
    public func callout(_ c: CalloutRecord, of key: LoopKey) {}
    /// A sleep pair (default: ignored).
    public func sleep(_ s: SleepRecord, of key: LoopKey) {}
    /// Any wake event (default: ignored).
    public func wake(_ reason: RLWakeReason, of key: LoopKey) {}
    /// A callout pair that could not be matched (default: ignored).
    public func unmatchedCallout(of key: LoopKey) {}
    /// Timer lateness (default: ignored).
    public func timerLateness(_ ns: Int64, item: UInt64, of key: LoopKey) {}
    /// Signal latency (default: ignored).
    public func signalLatency(_ ns: Int64, item: UInt64, callerTid: Int64, of key: LoopKey) {}
    /// wakeUp latency (default: ignored).
    public func wakeUpLatency(_ ns: Int64, callerTid: Int64, of key: LoopKey) {}
    /// A run entered or exited (default: ignored).
    public func run(_ enter: Bool, mode: String, depth: Int, result: Int64, at ts: Int64, of key: LoopKey) {}
    /// A cross-thread request and the loop's reaction (default: ignored).
    public func flow(_ f: Flow) {}
    /// The trace's first event time (CLOCK_MONOTONIC ns), before any other call (default: ignored).
    public func traceBegins(at ts: Int64, epochOffset: Int64) {}
    /// A hang watchdog event (default: ignored).
    public func hang(_ record: HangEventRecord, of key: LoopKey) {}
    /// The stream has ended at `end` (the last event's time): write out what is held (default: nothing).
    public func finish(end: Int64) {}
}

/// Rebuilds loops, iterations, callouts and sleeps from the event stream (the rules of
/// `docs/report-json.md`), and hands the results to a sink as each closes.
///
/// State is numeric and bounded: loops are found by `(pid, loop)` through a one-entry cache in front
/// of a ``LoopNumbering``; the records of open iterations and callouts live in per-loop stacks whose
/// storage is reused, so a steady stream of events allocates nothing.
public final class LoopModel {
    final class State {
        var info: LoopInfo
        /// Iteration records, reused: `stack[0..<open]` are the open iterations, outermost first.
        var stack: [IterationRecord] = []
        var open = 0
        var callouts = OpenCallouts()
        var pendingSleep: (iteration: UInt64, ts: Int64, cpu: Int64)?
        /// Whether an iteration of this loop was open at the window's end: its events are still
        /// followed until it ends (``TimeWindow``).
        var followsPastWindow = false
        /// The watchdog's records of a hang begun before the window (at most 64), handed over once
        /// the hang is seen to reach into the window; whether a hang the sink was told of is open.
        var hangBeforeWindow: [HangEventRecord] = []
        var hangDelivered = false
        /// A watchdog hang began (`hang_begin`) and the loop has not ended a callout or an
        /// iteration since; when it did, at `hangResumedAt` — the hang's end as the loop saw it,
        /// which the watchdog's `hang_end` reports up to a tick later (``deliverHang``).
        var hangStuck = false
        var hangResumedAt: Int64?
        var modes: [Int32] = []
        /// Wake-up requests since the loop's last wake (packed: ``PendingRequests``).
        var pendingWakeUps = PendingRequests()
        var procname: Int32 = -1
        /// Whether `info.procname` is the process's name (its main thread's), not a fallback.
        var procResolved = false
        /// Whether `loop_created` or `loop_info` described it (its thread, by id and name).
        var described = false
        init(key: LoopKey) { info = LoopInfo(key: key) }
        deinit { callouts.deallocate() }
    }
    var states: [State] = []
    /// `states`' index of each loop.
    private var numbering = LoopNumbering()
    private var lastKey = LoopKey(pid: .min, loop: .max)
    /// The state of `lastKey`, unretained: `states` keeps every state alive for the model's life.
    private var lastState: Unmanaged<State>?
    private var itemNames: [NameKey: Int32] = [:]
    /// Items a callout in the window named by id only, with no description seen yet (out of line:
    /// rare, a trace that begins after the items were described).
    var undescribedItems: Set<NameKey> = []
    @inline(never) private func noteUndescribed(pid: Int64, item: UInt64, kind: RLCalloutKind) {
        undescribedItems.insert(NameKey(pid: pid, item: item, kind: kind))
    }
    /// Past the window, descriptions are read until this time (0: not awaiting them).
    var awaitingDescriptionsUntil: Int64 = 0
    /// Process names: the `procname` of each process's main thread (tid == pid). LTTng's procname
    /// is per thread, so a loop on a named worker thread still belongs to its process's name.
    var processNames: [Int64: Int32] = [:]
    /// Named blocks described (`item_info`) and not yet performed.
    var pendingBlockNames: [BlockKey: Int32] = [:]
    struct BlockKey: Hashable { var pid: Int64; var item: UInt64 }
    /// The name id of `(unnamed)` (-1 until needed).
    var unnamedBlock: Int32 = -1
    /// Signals of each source since its last perform (packed: ``PendingRequests``).
    private var pendingSignals: [SignalKey: PendingRequests] = [:]
    struct NameKey: Hashable { var pid: Int64; var item: UInt64; var kind: RLCalloutKind }
    /// A signal is performed once, by whichever loop gets to it first: pending signals are kept per
    /// source, and a perform by any loop ends them all.
    private struct SignalKey: Hashable { var pid: Int64; var item: UInt64 }
    /// Not retained (the caller keeps the sink alive while it feeds the model): sinks refer to
    /// the model for names, and a retained cycle or a weak reference (which makes every retain of
    /// the model take the runtime's slow path) would both cost.
    private unowned(unsafe) let sink: LoopModelSink
    /// The strings that name ids refer to (the source's).
    public let names: NameTable
    /// The hosts of the traces read, by index (``LoopKey/hostIndex``); one name, or none, for a
    /// trace of one host.
    public var hostNames: [String] = []

    /// The host of process key `pid` when the traces hold several (nil for one).
    public func hostName(of pid: Int64) -> String? {
        hostNames.count > 1 ? hostNames[min(LoopKey.hostIndex(pid), hostNames.count - 1)] : nil
    }

    /// A loop's process as an export names it: the process name (`pid N` without one), after its
    /// host's name when the traces hold several (`web-2: api-server`).
    public func processTitle(_ l: LoopInfo) -> String { processTitle(pid: l.key.pid, procname: l.procname) }

    /// The same for process key `pid` named `procname`.
    public func processTitle(pid: Int64, procname: String) -> String {
        let name = procname.isEmpty ? "pid \(LoopKey.processID(pid))" : procname
        return hostName(of: pid).map { "\($0): \(name)" } ?? name
    }
    /// The hang watchdog's events whole (the source's), which hang events refer to.
    public var evidence: HangEvidenceStore?

    /// How many callouts an open iteration lists one by one (``IterationRecord/callouts``); past
    /// them, they are summarized (``IterationRecord/overflow``), so that an iteration of millions
    /// of callouts costs no more memory than one of this many (docs/benchmarks.md, "The
    /// bounded-memory test"). Every reader but the timeline's line gives the same figures either way.
    public var calloutLimit = 4096

    /// Creates a model delivering to `sink`, resolving name ids with `names`.
    public init(sink: LoopModelSink, names: NameTable) {
        self.sink = sink
        self.names = names
    }

    /// Every loop seen doing something in the window, sorted.
    public var loops: [LoopInfo] { states.map(\.info).filter { $0.first <= $0.last }.sorted { $0.key < $1.key } }
    /// Every loop the trace names, in the window or not, sorted.
    public var knownLoops: [LoopInfo] { states.map(\.info).sorted { $0.key < $1.key } }

    /// The items of the loops' processes named so far, as `kind "name"`, sorted (for messages).
    public func itemLabels(in loops: Set<LoopKey>) -> [String] {
        let pids = Set(loops.map(\.pid))
        return Set(itemNames.compactMap { k, id in pids.contains(k.pid) ? "\(k.kind.label) \(names[id].debugDescription)" : nil }).sorted()
    }

    /// Loops busy at the end of the stream (a trace that ends while they run — a killed process, a
    /// cut trace): per loop, the outermost open iteration's number and begin, and the callout it was
    /// in (nil between callouts). A loop asleep at the end (a thread blocked when its process
    /// exited) is not listed.
    public var busyAtEnd: [(loop: LoopInfo, iteration: UInt64, begin: Int64, callout: CalloutRecord?)] {
        states.filter { $0.open > 0 && $0.pendingSleep == nil }
            .map { ($0.info, $0.stack[0].number, $0.stack[0].begin, $0.callouts.first?.record) }
            .sorted { $0.loop.key < $1.loop.key }
    }

    /// The earliest begin of any open iteration (`Int64.max` when none is open): everything that
    /// began before it is complete.
    public var openWatermark: Int64 {
        var m = Int64.max
        for s in states where s.open > 0 && s.stack[0].begin < m { m = s.stack[0].begin }
        return m
    }

    /// The latest begin among what is open on loop `key` — its innermost open iteration, its open
    /// callouts (a nested run's), that iteration's last wake — clipped to the window; nil when no
    /// iteration is open. A slice that begins after it lies inside all of them and begins after
    /// each (the Perfetto export writes a long iteration's completed slices before it ends on that
    /// condition: ``PerfettoTraceSink``).
    public func latestOpenBegin(of key: LoopKey) -> Int64? {
        guard let i = numbering.existing(key) else { return nil }
        let s = states[i]
        guard s.open > 0 else { return nil }
        var m = s.stack[s.open - 1].begin
        if s.callouts.count > 0 { m = max(m, s.callouts[s.callouts.count - 1].record.begin) }
        if let w = s.stack[s.open - 1].sleeps.last { m = max(m, w.end) }
        return max(m, window.lo)
    }

    /// Whether `tid` of process `pid` runs one of the loops seen.
    public func isLoopThread(_ tid: Int64, pid: Int64) -> Bool {
        states.contains { $0.info.key.pid == pid && $0.info.tid == tid }
    }

    /// What is known so far of the loop `key` (nil if no event of it was seen).
    public func info(of key: LoopKey) -> LoopInfo? {
        if key == lastKey, let s = lastState { return s._withUnsafeGuaranteedRef { $0.info } }
        return numbering.existing(key).map { states[$0].info }
    }

    /// What a loop-level filter looks at in loop `key`'s ``LoopInfo`` besides its key, as known so
    /// far — its thread and its process name's ``NameTable`` id (-1 while unknown) — without
    /// copying the info (nil if no event of it was seen): while these stay the same, so does the
    /// filter's decision.
    @inline(__always)
    public func filterFacts(of key: LoopKey) -> (tid: Int64, procname: Int32)? {
        if key == lastKey, let s = lastState { return s._withUnsafeGuaranteedRef { ($0.info.tid, $0.procname) } }
        return numbering.existing(key).map { (states[$0].info.tid, states[$0].procname) }
    }

    /// The mode of the run loop `key` is in now (a ``NameTable`` id; the empty string's outside any
    /// run), for the records handed over at this event.
    @inline(__always)
    public func currentMode(of key: LoopKey) -> Int32 {
        if key == lastKey, let s = lastState { return s._withUnsafeGuaranteedRef { $0.modes.last ?? NameTable.empty } }
        return numbering.existing(key).map { states[$0].modes.last ?? NameTable.empty } ?? NameTable.empty
    }

    /// The thread of the loop `key` as known so far (`LoopInfo.tid`; nil if no event of it was
    /// seen), without copying its ``LoopInfo``.
    @inline(__always)
    public func threadID(of key: LoopKey) -> Int64? {
        if key == lastKey, let s = lastState { return s._withUnsafeGuaranteedRef { $0.info.tid } }
        return numbering.existing(key).map { states[$0].info.tid }
    }

    /// The name of an item (empty if never seen; blocks are named by their records).
    public func name(of kind: RLCalloutKind, item: UInt64, pid: Int64) -> String {
        kind == .mainQueue ? "main-queue" : names[nameID(of: kind, item: item, pid: pid)]
    }

    /// The name id of an item (-1 if never seen): through a direct-mapped cache of named items in front
    /// of `itemNames` (sinks ask once per callout; a trace has few items, each seen many times).
    @inline(__always)
    public func nameID(of kind: RLCalloutKind, item: UInt64, pid: Int64) -> Int32 {
        let k = NameKey(pid: pid, item: item, kind: kind)
        let slot = nameSlot(k)
        if nameCache[slot].key == k { return nameCache[slot].id }
        let id = itemNames[k] ?? -1
        // A name not known yet may come later: only known ones are kept (and `setName` writes through).
        if id >= 0 { nameCache[slot] = (k, id) }
        return id
    }

    private var nameCache = [(key: NameKey, id: Int32)](repeating: (NameKey(pid: .min, item: 0, kind: .observer), -1), count: 256)
    @inline(__always) private func nameSlot(_ k: NameKey) -> Int {
        Int(truncatingIfNeeded: ((k.item ^ UInt64(bitPattern: k.pid) << 20) &* 0x9E37_79B9_7F4A_7C15) >> 56) ^ Int(k.kind.rawValue)
    }

    /// Names an item (the cache written through, so it never holds an older name). Out of line: an
    /// item is named once, and inlined at its three call sites it grew the per-event closure.
    @inline(never)
    func setName(_ id: Int32, pid: Int64, item: UInt64, kind: RLCalloutKind) {
        let k = NameKey(pid: pid, item: item, kind: kind)
        itemNames[k] = id
        if !undescribedItems.isEmpty { undescribedItems.remove(k) }
        let slot = nameSlot(k)
        if nameCache[slot].key == k { nameCache[slot].id = id }
    }

    /// The name of a callout's item (a block's own name for blocks; a pooled block name's, an
    /// item's, ``CalloutRecord/namedByItem``).
    public func name(of c: CalloutRecord, pid: Int64) -> String {
        c.kind == .block && c.blockName >= 0 ? names[c.blockName] : name(of: c.kind, item: c.item, pid: pid)
    }

    /// Names the loop's process: by its main thread's procname once an event of that thread is
    /// seen, until then by the first procname of the loop's own events.
    private func resolveProcname(_ s: State, _ e: RunLoopEvent) {
        if let p = processNames[e.pid] {
            s.procname = p; s.info.procname = names[p]; s.procResolved = true
        } else if e.vtid == LoopKey.processID(e.pid) {
            processNames[e.pid] = e.procname
            for o in states where o.info.key.pid == e.pid {
                o.procname = e.procname; o.info.procname = names[e.procname]; o.procResolved = true
            }
        } else if s.procname < 0 {
            s.procname = e.procname; s.info.procname = names[e.procname]
        }
    }

    /// The state of loop `key` (made on first sight), unretained: `states` owns it.
    @inline(__always)
    func state(_ key: LoopKey) -> Unmanaged<State> {
        if key == lastKey, let s = lastState { return s }
        let n = numbering.number(key)
        if n == states.count { states.append(State(key: key)) }
        let s = states[n]
        lastKey = key
        let u = Unmanaged.passUnretained(s)
        lastState = u
        return u
    }

    // MARK: the time window (the rule: docs/report-json.md, "Selection and time window")

    /// The window `[lo, hi]` (CLOCK_MONOTONIC ns) whose figures are wanted.
    public private(set) var window = TimeWindow.all
    /// Whether nothing more after the window can count: every iteration open at its end has ended
    /// (the rest of the trace is not needed).
    public internal(set) var pastWindow = false
    /// Set with ``pastWindow``, for a reader on another thread that may stop decoding.
    public var pastWindowFlag: WindowDoneFlag?
    /// Loops still followed past the window's end.
    var followed = 0
    var reachedWindowEnd = false

    /// Sets the window.
    public func setWindow(lo: Int64, hi: Int64) { window = TimeWindow(lo: lo, hi: hi) }

    /// Feeds events in order (timestamps never decreasing: the source guarantees it).
    public func consume(_ events: UnsafeBufferPointer<RunLoopEvent>) {
        // The sink is taken once per batch and passed down +0: no retain or release per event.
        let sink = self.sink
        // By address, straight from the chunk: passed by value, each event (104 bytes) was copied
        // to the stack first.
        guard var p = events.baseAddress else { return }
        let end = p + events.count
        while p < end {
            consume(p, sink)
            p += 1
        }
    }

    /// Feeds one event (timestamps never decreasing: the source guarantees it).
    public func consume(_ e: RunLoopEvent) { withUnsafePointer(to: e) { consume($0, sink) } }

    @inline(__always)
    private func consume(_ ep: UnsafePointer<RunLoopEvent>, _ sink: LoopModelSink) {
        var e: RunLoopEvent { ep.pointee }
        if e.ts > window.hi {
            // Past the window: only what was open at its end is followed, until it ends.
            if pastWindow { return }
            if awaitingDescriptionsUntil != 0 && followed == 0 { awaitDescription(ep); return }
            if !reachedWindowEnd { reachWindowEnd(); if pastWindow { return } }
            if awaitingDescriptionsUntil != 0 && followed == 0 { awaitDescription(ep); return }
        }
        let now = window.contains(e.ts)
        if e.kind == .source0Signalled {
            if e.name >= 0 { setName(e.name, pid: e.pid, item: e.item, kind: .source0) }
            // A source in several loops is signalled once per loop, the events sharing signal_seq
            // (0 in traces that predate it: one event per signal there).
            let key = SignalKey(pid: e.pid, item: e.item)
            if e.c != 0, let held = pendingSignals[key], !held.isEmpty, held.lastSeq == e.c { return }
            pendingSignals[key, default: PendingRequests()].append(ts: e.ts, tid: e.a, seq: e.c)
            return
        }
        if e.kind == .gap { forgetOpenState(); return }
        let key = LoopKey(pid: e.pid, loop: e.loop)
        // The state is used +0 (no retain or release per event): `states` owns it.
        state(key)._withUnsafeGuaranteedRef { s in apply(ep, to: s, key: key, now: now, sink) }
    }

    /// The per-loop part of ``consume(_:)``.
    @inline(__always)
    private func apply(_ ep: UnsafePointer<RunLoopEvent>, to s: State, key: LoopKey, now: Bool, _ sink: LoopModelSink) {
        var e: RunLoopEvent { ep.pointee }
        if reachedWindowEnd && !s.followsPastWindow && e.ts > window.hi { return }
        if now {
            if e.ts < s.info.first { s.info.first = e.ts }
            if e.ts > s.info.last { s.info.last = e.ts }
        }
        if !s.procResolved && e.procname >= 0 { resolveProcname(s, e) }
        if s.hangStuck && (e.kind == .calloutExit || e.kind == .iterationEnd) { s.hangStuck = false; s.hangResumedAt = e.ts }
        if s.info.tid < 0, e.vtid >= 0, e.kind != .wakeUpRequested, e.kind != .itemAdded, e.kind != .itemRemoved, e.kind != .timerArmed,
           e.kind != .hangBegin, e.kind != .hangStack, e.kind != .hangEnd, e.kind != .loopInfo, e.kind != .itemInfo, e.kind != .calloutCpu {
            s.info.tid = e.vtid
        }
        switch e.kind {
        case .loopCreated:
            applyPool(e, to: s)
        case .loopDestroyed:
            break
        case .runEnter:
            let mode = max(0, e.name)
            s.modes.append(mode)
            if now { sink.run(true, mode: names[mode], depth: Int(truncatingIfNeeded: e.b), result: 0, at: e.ts, of: key) }
        case .runExit:
            if !s.modes.isEmpty { s.modes.removeLast() }
            if now { sink.run(false, mode: names[max(0, e.name)], depth: Int(truncatingIfNeeded: e.b), result: e.a, at: e.ts, of: key) }
        case .iterationBegin:
            let mode = s.modes.last ?? NameTable.empty
            if s.open < s.stack.count {
                s.stack[s.open].reuse(key: key, number: e.iteration, begin: e.ts, depth: s.open, mode: mode)
            } else {
                s.stack.append(IterationRecord(key: key, number: e.iteration, begin: e.ts, depth: s.open, mode: mode))
            }
            s.stack[s.open].cpuNs = e.cpu
            s.open += 1
        case .iterationEnd:
            var idx = s.open - 1
            if e.iteration != RunLoopEvent.innermost { while idx >= 0 && s.stack[idx].number != e.iteration { idx -= 1 } }
            guard idx >= 0 else { return }
            // Open iterations above the matching one are discarded (their callouts with them).
            if idx < s.open - 1 { s.callouts.removeAll { $0.iterationIndex > idx } }
            if idx == s.open - 1 && !s.stack[idx].woke && s.pendingSleep == nil && now {
                // No `wake` in it: it polled and found nothing (docs/tracepoints.md, "wake"), a
                // poll with reason `none` at its end. (Traces from before that rule write that wake.)
                sink.wake(.none, of: key)
                s.stack[idx].polls += 1
            }
            s.stack[idx].end = e.ts
            s.stack[idx].handledSource = e.b != 0
            s.stack[idx].cpuNs = cpuSpan(s.stack[idx].cpuNs, e.cpu)
            finishIteration(s, idx, sink)
        case .calloutEntry:
            var rec = CalloutRecord(kind: e.calloutKind, item: e.item, begin: e.ts, end: e.ts, depth: s.callouts.count, detail: e.a)
            rec.cpuNs = e.cpu
            // A block's name travels with its record — except a pooled name's (its id tagged): that
            // is an item of its process, named through the pool at any time, as other items are
            // (so a block run before its name's description, the oldest part of a snapshot's ring,
            // is still named once the description is read).
            let pooled = e.calloutKind == .block && e.name < 0 && e.item & Self.blockNameTag != 0
            if e.calloutKind == .block && !pooled { rec.blockName = e.name >= 0 ? e.name : takeBlockName(pid: e.pid, item: e.item) } else if e.name >= 0 {
                setName(e.name, pid: e.pid, item: e.item, kind: e.calloutKind)
            } else if e.calloutKind != .mainQueue && now && nameID(of: e.calloutKind, item: e.item, pid: e.pid) < 0 {
                noteUndescribed(pid: e.pid, item: e.item, kind: e.calloutKind)
            }
            s.callouts.append((rec, s.open - 1))
            // A timer never fires before its date: a negative difference is a damaged clock (or a
            // timestamp clamped by the source), taken as on time rather than as a negative figure.
            if e.calloutKind == .timer && now { sink.timerLateness(max(0, saturatingDifference(e.ts, e.a)), item: e.item, of: key) }
            if e.calloutKind == .source0, !pendingSignals.isEmpty,
               let pending = pendingSignals.removeValue(forKey: SignalKey(pid: e.pid, item: e.item)), now {
                let ts = e.ts, item = e.item
                pending.forEach { from, tid in
                    sink.signalLatency(ts - from, item: item, callerTid: tid, of: key)
                    sink.flow(Flow(kind: .signal, fromTid: tid, fromTs: from, to: key, toTs: ts))
                }
            }
        case .calloutExit:
            var idx = s.callouts.count - 1
            let anyItem = e.item == RunLoopEvent.innermost
            while idx >= 0 && !(s.callouts[idx].record.kind == e.calloutKind && (anyItem || s.callouts[idx].record.item == e.item)) { idx -= 1 }
            guard idx >= 0 else {
                if now { sink.unmatchedCallout(of: key) }
                return
            }
            var (rec, iterIdx) = s.callouts[idx]
            while s.callouts.count > idx + 1 { s.callouts.removeLast(); if now { sink.unmatchedCallout(of: key) } }
            s.callouts.removeLast()
            rec.end = e.ts
            rec.cpuNs = min(cpuSpan(rec.cpuNs, e.cpu), rec.duration)
            rec.wholeDurationNs = rec.duration
            let inIteration = iterIdx >= 0 && iterIdx < s.open
            if rec.sampleElapsedNs > 0 {
                Self.scaleSample(&rec)
                if inIteration { s.stack[iterIdx].sampledCpuNs = max(0, s.stack[iterIdx].sampledCpuNs) &+ rec.sampledCpuNs }
            }
            if inIteration && rec.kind != .observer { s.stack[iterIdx].worked = true }
            guard window.clip(&rec) else {
                // Before the window: not counted, but still its iteration's culprit if longest.
                if inIteration && rec.wholeDurationNs > (s.stack[iterIdx].longestOutsideWindow?.wholeDurationNs ?? -1) {
                    s.stack[iterIdx].longestOutsideWindow = rec
                }
                return
            }
            if inIteration { s.stack[iterIdx].add(rec, limit: calloutLimit) }
            sink.callout(rec, of: key)
        case .sleepBegin:
            s.pendingSleep = (e.iteration, e.ts, e.cpu)
        case .wake:
            let reason = RLWakeReason(rawValue: UInt8(truncatingIfNeeded: e.b)) ?? .none
            if now { sink.wake(reason, of: key) }
            var slept: SleepRecord?
            if let p = s.pendingSleep, p.iteration == e.iteration {
                slept = SleepRecord(begin: p.ts, end: e.ts, reason: reason, fd: e.a)
                var sl = slept!
                if window.clip(&sl) { sink.sleep(sl, of: key) }
                if s.open > 0, p.cpu >= 0, e.cpu >= p.cpu { s.stack[s.open - 1].sleepCpuNs &+= e.cpu &- p.cpu }
            }
            s.pendingSleep = nil
            if s.open > 0 {
                s.stack[s.open - 1].woke = true
                if let slept { s.stack[s.open - 1].sleeps.append(slept) } else if now { s.stack[s.open - 1].polls += 1 }
            }
            if reason == .wakeUp && !s.pendingWakeUps.isEmpty {
                if now {
                    let ts = e.ts
                    s.pendingWakeUps.forEach { from, tid in
                        sink.wakeUpLatency(ts - from, callerTid: tid, of: key)
                        sink.flow(Flow(kind: .wakeUp, fromTid: tid, fromTs: from, to: key, toTs: ts))
                    }
                }
                s.pendingWakeUps.removeAll()
            }
        case .wakeUpRequested:
            if e.b != 0 { s.pendingWakeUps.append(ts: e.ts, tid: e.a) }
        case .hangBegin, .hangStack, .hangEnd:
            // Watchdog events may come from the watchdog's thread: they never name the loop's thread.
            if let r = evidence?.record(at: e.c) { deliverHang(r, kind: e.kind, ts: e.ts, now: now, s, key, sink) }
        case .gap:
            break
        case .loopInfo, .itemInfo, .calloutCpu:
            applyPool(e, to: s)
        case .source0Signalled, .timerArmed, .itemAdded, .itemRemoved:
            if e.kind == .itemAdded || e.kind == .itemRemoved, e.name > 0 {
                setName(e.name, pid: e.pid, item: e.item, kind: e.calloutKind)
            }
        }
    }
}

extension LoopModel {
    /// Hands a watchdog record to the sink by the window's rule: a hang counts whole when it
    /// overlaps the window — begun before it (its records kept until the hang reaches the window),
    /// or ending after it (its records followed past the window's end).
    func deliverHang(_ r: HangEventRecord, kind: RunLoopEvent.Kind, ts: Int64, now: Bool, _ s: State, _ key: LoopKey, _ sink: LoopModelSink) {
        var ts = ts, now = now
        switch kind {
        case .hangBegin:
            s.hangStuck = true; s.hangResumedAt = nil
        case .hangEnd:
            // The hang ended when the loop ended its stuck callout (or its iteration), not at the
            // watchdog's next tick, which writes `hang_end`: a window beginning between the two
            // does not hold the hang (docs/report-json.md, "What a window counts").
            if let resumed = s.hangResumedAt, resumed < ts { ts = resumed; now = window.contains(resumed) }
            s.hangStuck = false; s.hangResumedAt = nil
        default:
            break
        }
        if now || (ts > window.hi && (s.hangDelivered || !s.hangBeforeWindow.isEmpty)) {
            for p in s.hangBeforeWindow { sink.hang(p, of: key) }
            s.hangBeforeWindow.removeAll()
            sink.hang(r, of: key)
            s.hangDelivered = kind != .hangEnd
        } else if ts < window.lo {
            switch kind {
            case .hangBegin: s.hangBeforeWindow = [r]
            case .hangEnd: s.hangBeforeWindow.removeAll()
            default: if !s.hangBeforeWindow.isEmpty && s.hangBeforeWindow.count < 64 { s.hangBeforeWindow.append(r) }
            }
        }
    }

    /// Forgets what is open — iterations, callouts, sleeps, pending wake-ups and signals — at a gap
    /// between two overlapping traces that do not meet (flight-recorder snapshots taken further
    /// apart than their buffers reach): the events that would close them are not in any trace, and
    /// pairing across the gap would make one iteration of the time between (a false hang).
    /// What was open is left out of the figures, as iterations still open when a trace ends are.
    func forgetOpenState() {
        for s in states {
            s.open = 0
            s.callouts.removeAll()
            s.pendingSleep = nil
            s.pendingWakeUps.removeAll()
            if s.followsPastWindow { stopFollowing(s) }
        }
        pendingSignals.removeAll()
    }
}
