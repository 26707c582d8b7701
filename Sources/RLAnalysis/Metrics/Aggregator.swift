import Foundation
import CTFReader
import RunLoopSchema

/// Computes the report's figures from what the loop model delivers (`docs/report-json.md`).
public final class Aggregator: LoopModelSink, NameResolving {
    final class Loop {
        var iterations = 0, topLevel = 0
        var busy: Int64 = 0, sleepNs: Int64 = 0, sleeps = 0, polls = 0
        var callouts = 0, unmatched = 0
        /// Per callout kind, the durations of the loop's callouts: its items' merged, in the order
        /// the items were first seen — the same count, total, maximum and distribution as recording
        /// each callout into its kind too (``DurationAccumulator/merge(_:)``). Made when the report
        /// is: recording each callout once, into its item's histogram, halves the histogram traffic
        /// of the per-callout path (each add is a likely cache miss).
        func kindFigures() -> [DurationAccumulator] {
            var kinds = [DurationAccumulator](repeating: DurationAccumulator(), count: RLCalloutKind.allCases.count)
            for (k, a) in zip(itemKeys, itemAcc) { kinds[Int(k.kind.rawValue)].merge(a) }
            return kinds
        }
        var items: [ItemKey: Int] = [:]
        /// Per item, by the index `items` gives it: its key, durations, and its count and total in
        /// the current spin (an item can be indexed by a spin alone, with no callout counted: its
        /// durations are then empty and the report leaves it out).
        var itemKeys: [ItemKey] = []
        var itemAcc: [DurationAccumulator] = []
        var spinItems: [(count: Int, total: Int64)] = []
        /// The items of the current spin.
        var spinTouched: [Int] = []
        var cache = [(key: ItemKey, index: Int)](repeating: (ItemKey(kind: .observer, item: 0, blockName: -1), -1), count: 64)
        var wakeReasons = [Int](repeating: 0, count: RLWakeReason.allCases.count)
        var sleepHist = [Int](repeating: 0, count: RLWakeReason.allCases.count * 64)
        var iterHist = [Int](repeating: 0, count: 64)
        var wakeToFirst = DurationAccumulator()
        var lateness: [UInt64: DurationAccumulator] = [:]
        var signal: [UInt64: DurationAccumulator] = [:]
        var signalTids: [UInt64: Set<Int64>] = [:]
        var wakeUp = DurationAccumulator()
        var wakeUpTids: Set<Int64> = []
        var spurious = 0
        /// On-CPU time of top-level iterations, and whether the trace had it.
        var cpu: Int64 = 0, cpuKnown = false
        /// Per item (parallel to `itemAcc`): on-CPU time, -1 while unknown.
        var itemCpu: [Int64] = []
        /// Per item, its longest callout's duration and on-CPU time (the CPU clock context's, else
        /// the watchdog's reading; -1 unknown).
        var itemSlowest: [(durationNs: Int64, cpuNs: Int64)] = []
        /// The last iteration to end woke idle: spurious unless the next one works.
        var wokeIdle = false
        var hangs: [HangReport] = []
        var slow = 0
        var spins: [SpinReport] = []
        var currentSpin: (first: UInt64, count: Int, begin: Int64, end: Int64)?
        var spinKey: LoopKey?
        var slowest: [(busy: Int64, it: IterationRecord)] = []
        /// The caller last added to `wakeUpTids`, and the (item, caller) last added to `signalTids`:
        /// a loop is usually woken by the same few threads in turn, so most calls skip the set.
        var lastWakeUpTid: Int64?
        var lastSignal: (item: UInt64, tid: Int64)?
    }
    /// An item of the per-item figures: (kind, item id), except blocks, which are one item per name
    /// (item 0): every perform-block has its own id, and one entry each would grow with the trace.
    /// An item as the report counts it (a block: one per name).
    typealias ItemKey = CalloutItemKey

    /// Thresholds.
    public let options: ReportOptions
    /// Every loop's figures, by its number in `numbering`.
    private var loops: [Loop] = []
    private var numbering = LoopNumbering()
    /// The model, for item names (set by whoever runs the model: ``NameResolving``).
    public var model: LoopModel?
    /// ``model``, under the name ``NameResolving`` gives it.
    public var resolver: LoopModel? { get { model } set { model = newValue } }
    /// The hang watchdog's events, per hang.
    let watchdog = WatchdogCollector()
    /// Resolves the watchdog's stack samples (set once the trace is read; nil: addresses only).
    public var symbolizer: StackSymbolizer?

    /// Creates an aggregator.
    public init(options: ReportOptions = ReportOptions()) {
        self.options = options
    }

    private var lastKey = LoopKey(pid: .min, loop: .max)
    /// The loop of `lastKey`, unretained: `loops` owns every loop for the aggregator's life.
    private var lastLoop: Unmanaged<Loop>?

    /// Calls `body` with the figures of loop `k` (made on first sight), +0: the per-callout path
    /// makes no retain or release of them.
    @inline(__always)
    private func withLoop<R>(_ k: LoopKey, _ body: (Loop) -> R) -> R {
        if k == lastKey, let l = lastLoop { return l._withUnsafeGuaranteedRef(body) }
        let n = numbering.number(k)
        if n == loops.count { loops.append(Loop()) }
        let l = loops[n]
        lastKey = k
        lastLoop = .passUnretained(l)
        return body(l)
    }

    @inline(__always)
    private func loop(_ k: LoopKey) -> Loop { withLoop(k) { $0 } }

    // MARK: LoopModelSink

    public func iteration(_ it: IterationRecord, of info: LoopInfo) {
        let l = loop(info.key)
        l.iterations += 1
        // Spurious wake (docs/report-json.md): the loop slept and was woken (not by its timeout),
        // and neither the iteration it woke in nor the loop's next iteration to end made a callout
        // other than an observer. A signal-then-wake is performed in the next iteration: not spurious.
        // (Decided on the whole iteration: a window that cuts its work off invents no spurious wake.)
        let worked = it.worked
        if l.wokeIdle { l.wokeIdle = false; if !worked { l.spurious += 1 } }
        if let s = it.sleeps.first, s.reason != .timeout, !worked { l.wokeIdle = true }
        for (i, s) in it.sleeps.enumerated() {
            if let first = it.firstWorkBegin(afterSleep: i) { l.wakeToFirst.add(first - s.end) }
        }
        guard it.depth == 0 else { return }
        l.topLevel += 1
        let busy = it.busyNs
        l.busy &+= busy
        l.sleepNs &+= it.ownSleepNs &+ it.nestedSleepNs
        l.sleeps += it.sleeps.count + it.nestedSleeps
        l.polls += it.polls + it.nestedPolls
        l.iterHist[log2Bucket(busy)] += 1
        // Hangs and slow iterations are decided on the whole iteration (a window inside a hang
        // still shows it, whole); the loop's figures take the part inside the window.
        let wholeBusy = it.wholeBusyNs
        if wholeBusy >= options.slowThresholdNs { l.slow += 1 }
        if it.cpuNs >= 0 && !it.clipped { l.cpu &+= it.cpuNs; l.cpuKnown = true }
        if wholeBusy >= options.hangThresholdNs {
            let c = it.longestCallout
            var h = HangReport(iteration: it.number, beginNs: it.wholeBegin, durationNs: it.wholeEnd &- it.wholeBegin, busyNs: wholeBusy,
                               culprit: c.map { ref($0, info.key) })
            // The CPU clock context's figure, else what the watchdog read of its callouts.
            let cpu = it.cpuNs >= 0 ? it.cpuNs : it.sampledCpuNs
            if cpu >= 0 {
                h.onCpuNs = cpu
                h.state = cpuState(cpu, busy: wholeBusy)
            }
            l.hangs.append(h)
        }
        // Spins: runs of consecutive top-level iterations that never slept.
        if it.slept || it.nestedSleeps > 0 {
            closeSpin(l)
        } else {
            if var s = l.currentSpin {
                s.count += 1; s.end = it.end
                l.currentSpin = s
            } else {
                l.currentSpin = (it.number, 1, it.begin, it.end)
                l.spinKey = info.key
            }
            for c in it.callouts where c.kind != .observer {
                let i = itemIndex(ItemKey(c), in: l)
                if l.spinItems[i].count == 0 { l.spinTouched.append(i) }
                l.spinItems[i].count += 1
                l.spinItems[i].total &+= c.duration
            }
            if let o = it.overflow {
                for (n, x) in o.byItem.enumerated() where x.longest.kind != .observer {
                    let i = itemIndex(o.key(ofItem: n), in: l)
                    if l.spinItems[i].count == 0 { l.spinTouched.append(i) }
                    l.spinItems[i].count += x.count
                    l.spinItems[i].total &+= x.totalNs
                }
            }
        }
        // The slowest five (the fifth's busy time read in place: `slowest.last!` copied its record,
        // arrays retained and released, at every top-level iteration).
        if l.slowest.count < 5 || busy > l.slowest[4].busy {
            l.slowest.append((busy, it))
            l.slowest.sort { $0.busy > $1.busy }
            if l.slowest.count > 5 { l.slowest.removeLast() }
        }
    }

    private func closeSpin(_ l: Loop) {
        if let s = l.currentSpin, s.count >= options.spinMinIterations, let key = l.spinKey {
            let top = l.spinTouched.max { a, b in
                let x = l.spinItems[a], y = l.spinItems[b]
                return x.count != y.count ? x.count < y.count
                    : (l.itemKeys[a].item, blockName(l.itemKeys[a])) > (l.itemKeys[b].item, blockName(l.itemKeys[b]))
            }
            let culprit = top.map { CalloutRef(kind: l.itemKeys[$0].kind.label, item: l.itemKeys[$0].reportedItem,
                                               name: itemName(l.itemKeys[$0], pid: key.pid), durationNs: l.spinItems[$0].total) }
            l.spins.append(SpinReport(firstIteration: s.first, iterations: s.count, beginNs: s.begin, endNs: s.end, culprit: culprit))
        }
        l.currentSpin = nil
        for i in l.spinTouched { l.spinItems[i] = (0, 0) }
        l.spinTouched.removeAll(keepingCapacity: true)
    }

    private func blockName(_ k: ItemKey) -> String { k.blockName >= 0 ? (model?.names[k.blockName] ?? "") : "" }
    private func itemName(_ k: ItemKey, pid: Int64) -> String {
        k.blockName >= 0 ? blockName(k) : (model?.name(of: k.kind, item: k.item, pid: pid) ?? "")
    }

    private func ref(_ c: CalloutRecord, _ key: LoopKey) -> CalloutRef {
        CalloutRef(kind: c.kind.label, item: c.item, name: model?.name(of: c, pid: key.pid) ?? "", durationNs: c.wholeDurationNs)
    }

    public func callout(_ c: CalloutRecord, of key: LoopKey) {
        withLoop(key) { l in count(c, in: l) }
    }


    /// The per-kind and per-item figures of callout `c` of loop `l`.
    @inline(__always)
    private func count(_ c: CalloutRecord, in l: Loop) {
        l.callouts += 1
        let i = itemIndex(ItemKey(c), in: l)
        l.itemAcc[i].add(c.duration)
        if c.cpuNs >= 0 { l.itemCpu[i] = max(0, l.itemCpu[i]) &+ c.cpuNs }
        if c.duration > l.itemSlowest[i].durationNs { l.itemSlowest[i] = (c.duration, c.cpuNs >= 0 ? c.cpuNs : c.sampledCpuNs) }
    }

    /// The index of item `k` in loop `l`'s per-item figures (made on first sight).
    @inline(__always)
    private func itemIndex(_ k: ItemKey, in l: Loop) -> Int {
        // A direct-mapped cache in front of the item dictionary: a loop has few items, so the
        // per-callout lookup is almost always one compare instead of a hash.
        let slot = Int(truncatingIfNeeded: (k.item &* 0x9E37_79B9_7F4A_7C15) >> 58) ^ Int(k.kind.rawValue) ^ Int(k.blockName & 63)
        if l.cache[slot].index >= 0 && l.cache[slot].key == k { return l.cache[slot].index }
        let i: Int
        if let x = l.items[k] { i = x } else {
            i = l.itemAcc.count
            l.items[k] = i
            l.itemKeys.append(k)
            l.itemAcc.append(DurationAccumulator())
            l.itemCpu.append(-1)
            l.itemSlowest.append((-1, -1))
            l.spinItems.append((0, 0))
        }
        l.cache[slot] = (k, i)
        return i
    }

    public func sleep(_ s: SleepRecord, of key: LoopKey) {
        withLoop(key) { $0.sleepHist[Int(s.reason.rawValue) * 64 + log2Bucket(s.duration)] += 1 }
    }

    public func wake(_ reason: RLWakeReason, of key: LoopKey) {
        withLoop(key) { $0.wakeReasons[Int(reason.rawValue)] += 1 }
    }

    public func unmatchedCallout(of key: LoopKey) {
        loop(key).unmatched += 1
    }

    public func timerLateness(_ ns: Int64, item: UInt64, of key: LoopKey) {
        loop(key).lateness[item, default: DurationAccumulator()].add(ns)
    }

    public func signalLatency(_ ns: Int64, item: UInt64, callerTid: Int64, of key: LoopKey) {
        let l = loop(key)
        l.signal[item, default: DurationAccumulator()].add(ns)
        if let last = l.lastSignal, last.item == item, last.tid == callerTid { return }
        l.signalTids[item, default: []].insert(callerTid)
        l.lastSignal = (item, callerTid)
    }

    public func wakeUpLatency(_ ns: Int64, callerTid: Int64, of key: LoopKey) {
        withLoop(key) { l in
            l.wakeUp.add(ns)
            if l.lastWakeUpTid != callerTid {
                l.wakeUpTids.insert(callerTid)
                l.lastWakeUpTid = callerTid
            }
        }
    }

    public func hang(_ record: HangEventRecord, of key: LoopKey) {
        watchdog.add(record, of: key)
    }

    /// Whether the trace held hang watchdog events.
    public var sawWatchdogEvents: Bool { !watchdog.isEmpty }

    // MARK: The document

    /// Builds the report for `loops` (from the model) and the source's trace summary; with
    /// `distributions`, each item carries its durations (`ItemReport.distribution`).
    /// `windowEndsEarly`: the time window ends before the trace (what follows it is unknown: the
    /// last iteration's wake is not judged spurious for want of what came next).
    public func makeReport(source: RunLoopEventSource, loops infos: [LoopInfo], distributions: Bool = false,
                           windowEndsEarly: Bool = false) -> Report {
        var warnings: [String] = []
        var losses: [LossEntry] = []
        var discarded: Int64 = 0, lost: Int64 = 0
        for l in source.losses {
            let (kind, count): (String, Int64) = {
                switch l.kind {
                // Counters read from the trace can be anything: clamp, never trap.
                case .discardedEvents(let n): return ("discarded", Int64(clamping: n))
                case .lostPackets(let n): return ("lostPackets", Int64(clamping: n))
                }
            }()
            if kind == "discarded" { discarded = saturatingSum(discarded, count) } else { lost = saturatingSum(lost, count) }
            losses.append(LossEntry(kind: kind, count: count, beginNs: saturatingDifference(l.beginNanoseconds, source.clockOffset),
                                    endNs: saturatingDifference(l.endNanoseconds, source.clockOffset), stream: l.streamPath))
        }
        if discarded > 0 || lost > 0 {
            warnings.append("the trace lost data (\(discarded) discarded events, \(lost) lost packets): figures for loops active in those time ranges are incomplete")
        }
        for w in source.warnings { warnings.append("\(w)") }
        if source.backwardsEvents > 0 {
            warnings.append("\(source.backwardsEvents) events have a timestamp earlier than the event before them (a damaged trace): they were taken as simultaneous with it")
        }
        for o in model?.busyAtEnd ?? [] where infos.contains(where: { $0.key == o.loop.key }) {
            let who = "loop \(o.loop.key.loop) (\(source.hostPrefix(o.loop.key))\(o.loop.procname.isEmpty ? "pid \(o.loop.key.processID)" : o.loop.procname) tid \(o.loop.tid)\(o.loop.threadName.isEmpty ? "" : " \"\(o.loop.threadName)\""))"
            let inside = o.callout.map { c in
                " inside \(c.kind.label) \"\(model?.name(of: c, pid: o.loop.key.pid) ?? "")\" since +\(formatDuration(saturatingDifference(c.begin, source.firstTs)))"
            } ?? ""
            warnings.append("the trace ends with \(who) still running: iteration \(o.iteration) (begun at +\(formatDuration(saturatingDifference(o.begin, source.firstTs))))\(inside) never ended — the process was killed or the trace was cut; the figures leave that iteration out")
        }
        var summary = TraceSummary(paths: source.pathsRead, beginNs: source.firstTs == .max ? 0 : source.firstTs,
                                   endNs: source.lastTs == .min ? 0 : source.lastTs, events: source.totalEvents,
                                   runloopEvents: source.runLoopEvents, discardedEvents: discarded, lostPackets: lost, losses: losses,
                                   clockOffsetNs: source.clockOffset)
        if source.hosts.count > 1 {
            // The hosts read (`--host` may leave some out), each on the first one's clock.
            let spans = source.hostSpans
            summary.hosts = source.hosts.enumerated().map { i, h in
                HostSummary(name: h.name, paths: h.traces, clockOffsetNs: h.clockOffset, shiftNs: h.shiftNs,
                            loops: infos.filter { $0.key.hostIndex == i }.count,
                            beginNs: spans[i].first == .max ? 0 : spans[i].first, endNs: spans[i].last == .min ? 0 : spans[i].last)
            }
        }
        var reports: [LoopReport] = []
        for info in infos {
            let l = loop(info.key)
            closeSpin(l)
            if l.wokeIdle { l.wokeIdle = false; if !windowEndsEarly { l.spurious += 1 } }      // nothing came after it
            let span = info.last >= info.first ? info.last - info.first : 0
            let name = { (k: RLCalloutKind, item: UInt64) in self.model?.name(of: k, item: item, pid: info.key.pid) ?? "" }
            let kinds = l.kindFigures()
            let items = l.items.compactMap { k, i -> ItemReport? in
                let a = l.itemAcc[i]
                guard a.count > 0 else { return nil }     // indexed by a spin, no callout counted
                let p = a.percentiles([50, 99])
                return ItemReport(kind: k.kind.label, item: k.reportedItem, name: itemName(k, pid: info.key.pid), count: a.count, totalNs: a.total,
                                  maxNs: a.max, p50Ns: p[0], p99Ns: p[1],
                                  onCpuNs: l.itemCpu[i] >= 0 ? l.itemCpu[i] : nil,
                                  slowestOnCpuNs: l.itemSlowest[i].cpuNs >= 0 ? l.itemSlowest[i].cpuNs : nil,
                                  slowestState: l.itemSlowest[i].cpuNs >= 0 ? cpuState(l.itemSlowest[i].cpuNs, busy: l.itemSlowest[i].durationNs) : nil,
                                  distribution: distributions ? distributionPairs(a) : nil)
            }.sorted { ($0.totalNs, $1.kind, $1.item, $1.name) > ($1.totalNs, $0.kind, $0.item, $0.name) }
            func latencies(_ d: [UInt64: DurationAccumulator], kind: RLCalloutKind, tids: [UInt64: Set<Int64>]?) -> [ItemLatency] {
                d.map { item, a in
                    let p = a.percentiles([50, 99])
                    return ItemLatency(item: item, name: name(kind, item), count: a.count, totalNs: a.total, maxNs: a.max,
                                       p50Ns: p[0], p99Ns: p[1], callerTids: tids?[item].map { $0.sorted() })
                }.sorted { $0.item < $1.item }
            }
            let wakeUpP = l.wakeUp.percentiles([50, 99])
            reports.append(LoopReport(
                pid: info.key.processID, loop: info.key.loop, tid: info.tid, threadName: info.threadName, procname: info.procname,
                firstNs: info.first, lastNs: info.last, spanNs: span,
                iterations: l.iterations, topLevelIterations: l.topLevel,
                iterationsPerSecond: span > 0 ? Double(l.iterations) / (Double(span) / 1e9) : 0,
                busyNs: l.busy, sleepNs: l.sleepNs, sleeps: l.sleeps, polls: l.polls,
                busyRatio: l.busy + l.sleepNs > 0 ? Double(l.busy) / Double(l.busy + l.sleepNs) : 0,
                callouts: l.callouts, calloutsPerIteration: l.iterations > 0 ? Double(l.callouts) / Double(l.iterations) : 0,
                unmatchedCallouts: l.unmatched,
                calloutKinds: Dictionary(uniqueKeysWithValues: RLCalloutKind.allCases.filter { kinds[Int($0.rawValue)].count > 0 }
                    .map { ($0.label, kinds[Int($0.rawValue)].summary()) }),
                items: items,
                wakeReasons: Dictionary(uniqueKeysWithValues: RLWakeReason.allCases.filter { l.wakeReasons[Int($0.rawValue)] > 0 }
                    .map { ($0.label, l.wakeReasons[Int($0.rawValue)]) }),
                sleepHistogram: Dictionary(uniqueKeysWithValues: RLWakeReason.allCases.compactMap { r -> (String, [String: Int])? in
                    let h = bucketDictionary(l.sleepHist[Int(r.rawValue) * 64 ..< Int(r.rawValue) * 64 + 64])
                    return h.isEmpty ? nil : (r.label, h)
                }),
                iterationHistogram: bucketDictionary(l.iterHist[...]),
                wakeToFirstCallout: l.wakeToFirst.summary(full: false),
                timerLateness: latencies(l.lateness, kind: .timer, tids: nil),
                signalLatency: latencies(l.signal, kind: .source0, tids: l.signalTids),
                wakeUpLatency: WakeUpLatency(count: l.wakeUp.count, totalNs: l.wakeUp.total, maxNs: l.wakeUp.max,
                                             p50Ns: wakeUpP[0], p99Ns: wakeUpP[1], callerTids: l.wakeUpTids.sorted()),
                spuriousWakes: l.spurious,
                hangs: watchdog.merge(l.hangs, key: info.key, symbolizer: symbolizer), slowIterations: l.slow, spins: l.spins,
                slowest: l.slowest.map { s in
                    SlowIteration(iteration: s.it.number, beginNs: s.it.begin, busyNs: s.busy,
                                  callouts: s.it.longestCallouts(8).map { ref($0, info.key) })
                },
                host: source.hosts[info.key.hostIndex].name.isEmpty ? nil : source.hosts[info.key.hostIndex].name))
        }
        for (i, info) in infos.enumerated() where i < reports.count {
            let l = loop(info.key)
            if l.cpuKnown { reports[i].onCpuNs = l.cpu }
        }
        return Report(trace: summary, options: options, loops: reports, warnings: warnings)
    }
}

/// Non-empty log2 buckets as `"k": count`.
func bucketDictionary(_ counts: ArraySlice<Int>) -> [String: Int] {
    var d: [String: Int] = [:]
    for (k, n) in zip(0..., counts) where n > 0 { d[String(k)] = n }
    return d
}

/// What on-CPU time `cpu` over busy time `busy` says: on a busy machine a computing thread still
/// gets a good share of a core; one that waits (I/O, locks, sleep) gets next to none. A quarter
/// separates them robustly.
public func cpuState(_ cpu: Int64, busy: Int64) -> String {
    cpu &* 4 >= busy ? "computing" : "blocked"
}
