import Foundation

/// An item and how long one of its callouts ran.
public struct TopItem: Codable, Sendable, Equatable {
    /// Callout kind label (`timer`, `source1`, …).
    public var kind: String
    /// Item id (0 for the main queue).
    public var item: UInt64
    /// Its name.
    public var name: String
    /// The callout's duration (ns).
    public var durationNs: Int64
}

/// A hang (a loop stuck in one iteration past the threshold): in progress, or ended in the interval.
public struct TopHang: Codable, Sendable, Equatable {
    /// Whether the loop is still stuck at the interval's end.
    public var inProgress: Bool
    /// What held it: a callout kind label, or `loop` (between callouts).
    public var kind: String
    /// The item and its name (0 and "" for `loop`).
    public var item: UInt64
    public var name: String
    /// When it began (CLOCK_MONOTONIC ns of the traced host).
    public var beginNs: Int64
    /// How long so far (in progress: up to the interval's end) or in all (ended).
    public var durationNs: Int64
    /// `watchdog` (runloop:hang_begin/hang_end), or `callout` (an open callout, or one that ran
    /// past the threshold).
    public var source: String
    /// The loop thread's CPU time during it and what that says, `computing` or `blocked` (the
    /// report's rule: docs/report-json.md, "On-CPU time"): from the CPU clock context, else from
    /// the watchdog's readings (`callout_cpu`; in progress: the latest, scaled to the duration so
    /// far). Absent when neither says.
    public var onCpuNs: Int64? = nil, state: String? = nil
    /// The watchdog's latest stack sample of the hung thread (the watchdog samples it while the
    /// loop stays stuck: docs/hangs.md), symbolized as `rltrace hangs` prints it. Absent when the
    /// watchdog took none (a hang found only from an open callout, or a program without it).
    public var stack: TopStack? = nil

    mutating func setCpu(_ cpu: Int64, busy: Int64) {
        guard cpu >= 0 else { return }
        onCpuNs = cpu; state = cpuState(cpu, busy: busy)
    }
}

/// A stack sample of a hung loop's thread, as `rltrace top` shows it.
public struct TopStack: Codable, Sendable, Equatable {
    /// The sample's number in its hang (0 first) and how long the loop had been stuck then (ns).
    public var sample: Int64, elapsedNs: Int64
    /// The frames, innermost first.
    public var frames: [StackFrame]
}

/// One loop's row of a snapshot.
public struct TopLoopRow: Codable, Sendable {
    /// The traced host and the live session the loop was seen in.
    public var host: String, session: String
    /// The process, its name, the loop's thread and its name, the loop id.
    public var pid: Int64, procname: String, tid: Int64, threadName: String, loop: UInt64
    /// Iterations that ended in the interval (nested ones included), and per second.
    public var iterations: Int, iterationsPerSecond: Double
    /// Busy time of the top-level iterations that ended in the interval over the interval's length.
    public var busyRatio: Double
    /// Callouts that ended in the interval and their duration percentiles (nil without callouts).
    public var callouts: Int, calloutP50Ns: Int64?, calloutP99Ns: Int64?
    /// The longest callout of the interval.
    public var worst: TopItem?
    /// Timer callouts late by at least the late-timer threshold.
    public var lateTimers: Int
    /// Runs of consecutive non-sleeping top-level iterations that reached the spin threshold.
    public var spins: Int
    /// Events the tracer discarded in the interval in the buffers of this loop's session.
    public var discardedEvents: Int64
    /// Callout exits with no matching entry.
    public var unmatchedCallouts: Int
    /// The hang in progress at the interval's end, if any.
    public var hang: TopHang?
    /// Hangs that ended in the interval.
    public var hangs: [TopHang]
    /// Since the start: iterations, callouts, hangs (equal to `rltrace report`'s `iterations`
    /// and `callouts` on the recorded trace once the session is over).
    public var totalIterations: Int, totalCallouts: Int, totalHangs: Int
}

/// Live per-interval statistics of every loop (`rltrace top`), built from what the loop model
/// delivers. Per callout and iteration: integer counters and a fixed log-linear histogram, no
/// allocation; the rows are built once per refresh (``snapshot(begin:end:discarded:)``).
public final class TopSink: LoopModelSink {
    /// Thresholds.
    public struct Options: Sendable {
        /// A hang: one iteration (or callout) stuck this long.
        public var hangThresholdNs: Int64 = 250_000_000
        /// A late timer: a timer callout this late.
        public var lateTimerNs: Int64 = 10_000_000
        /// A spin: this many consecutive top-level iterations without sleeping.
        public var spinMinIterations = 100
        /// Creates the defaults.
        public init() {}
    }

    final class Stats {
        let key: LoopKey
        var iterations = 0, busyNs: Int64 = 0, callouts = 0, lateTimers = 0, spins = 0, unmatched = 0
        /// Log-linear histogram of callout durations (8 sub-buckets per power of two).
        var hist = [UInt32](repeating: 0, count: TopSink.buckets)
        var worst: CalloutRecord?
        var ended: [TopHang] = []
        var spinRun = 0, spinCounted = false
        var watchdog: (id: UInt64, begin: Int64, kind: String, item: UInt64, name: String)?
        /// The open watchdog hang's latest stack sample, and the last one symbolized (a snapshot
        /// symbolizes a sample once however many refreshes show it).
        var watchdogStack: HangStackRecord?
        var shownStack: (hangID: UInt64, sample: Int64, stack: TopStack)?
        var totalIterations = 0, totalCallouts = 0, totalHangs = 0
        /// Whether anything happened since the row was last shown.
        init(_ k: LoopKey) { key = k }
        func resetInterval() {
            iterations = 0; busyNs = 0; callouts = 0; lateTimers = 0; spins = 0; unmatched = 0
            for i in hist.indices { hist[i] = 0 }
            worst = nil
            ended.removeAll(keepingCapacity: true)
        }
    }

    static let buckets = 512

    /// The traced host's name and the session's, put in every row.
    public let host: String, session: String
    /// Thresholds.
    public let options: Options
    /// Set by the caller once the model exists (names, open callouts).
    public var model: LoopModel?
    private var stats: [Stats] = []
    private var index: [LoopKey: Int] = [:]
    private var lastKey = LoopKey(pid: .min, loop: .max)
    private var last: Stats?

    /// Creates a sink.
    public init(host: String, session: String, options: Options = Options()) {
        self.host = host; self.session = session; self.options = options
    }

    @inline(__always)
    private func loop(_ k: LoopKey) -> Stats {
        if k == lastKey, let s = last { return s }
        let s: Stats
        if let i = index[k] { s = stats[i] } else { s = Stats(k); index[k] = stats.count; stats.append(s) }
        lastKey = k; last = s
        return s
    }

    @inline(__always)
    static func bucket(_ v: Int64) -> Int {
        if v < 16 { return Int(max(0, v)) }
        let u = UInt64(v)
        let e = 63 - u.leadingZeroBitCount
        return 16 + (e - 4) * 8 + Int((u >> UInt64(e - 3)) & 7)
    }

    /// The middle of bucket `b`.
    static func value(ofBucket b: Int) -> Int64 {
        if b < 16 { return Int64(b) }
        let e = (b - 16) / 8 + 4, sub = (b - 16) % 8
        let lo = Int64(8 + sub) << Int64(e - 3)
        return lo + (Int64(1) << Int64(e - 3)) / 2
    }

    private func percentile(_ s: Stats, _ p: Double) -> Int64? {
        guard s.callouts > 0 else { return nil }
        let target = max(1, Int((p * Double(s.callouts)).rounded(.up)))
        var seen = 0
        for b in 0..<TopSink.buckets {
            seen += Int(s.hist[b])
            if seen >= target { return TopSink.value(ofBucket: b) }
        }
        return nil
    }

    // MARK: LoopModelSink

    public func iteration(_ it: IterationRecord, of info: LoopInfo) {
        let s = loop(info.key)
        s.iterations &+= 1
        s.totalIterations &+= 1
        guard it.depth == 0 else { return }
        s.busyNs &+= it.busyNs
        if it.wholeBusyNs >= options.hangThresholdNs { endedHang(it, s) }
        if it.slept || it.nestedSleeps > 0 {
            s.spinRun = 0; s.spinCounted = false
        } else {
            s.spinRun &+= 1
            if s.spinRun >= options.spinMinIterations && !s.spinCounted { s.spins &+= 1; s.spinCounted = true }
        }
    }

    public func callout(_ c: CalloutRecord, of key: LoopKey) {
        let s = loop(key)
        s.callouts &+= 1
        s.totalCallouts &+= 1
        s.hist[TopSink.bucket(c.duration)] &+= 1
        if s.worst == nil || c.duration > s.worst!.duration { s.worst = c }
    }

    /// A hang, as the report has it (docs/report-json.md): a top-level iteration busy at least the
    /// threshold, held by its longest callout; one the watchdog already reported is the same hang.
    private func endedHang(_ it: IterationRecord, _ s: Stats) {
        let c = it.longestCallout
        let name = c.map { model?.name(of: $0, pid: it.key.pid) ?? "" } ?? ""
        let cpu = it.cpuNs >= 0 ? it.cpuNs : it.sampledCpuNs
        // The watchdog's hang_end may have come first: the callout names what held the loop.
        if let i = s.ended.lastIndex(where: { $0.source == "watchdog" && $0.beginNs <= it.wholeEnd && $0.beginNs &+ $0.durationNs >= it.wholeBegin }) {
            if let c { s.ended[i].kind = c.kind.label; s.ended[i].item = c.item; s.ended[i].name = name }
            s.ended[i].setCpu(cpu, busy: it.wholeBusyNs)
            return
        }
        s.totalHangs &+= 1
        var h = TopHang(inProgress: false, kind: c?.kind.label ?? "loop", item: c?.item ?? 0, name: name,
                        beginNs: it.wholeBegin, durationNs: it.wholeEnd &- it.wholeBegin, source: "callout")
        h.setCpu(cpu, busy: it.wholeBusyNs)
        s.ended.append(h)
    }

    public func unmatchedCallout(of key: LoopKey) { loop(key).unmatched &+= 1 }

    public func timerLateness(_ ns: Int64, item: UInt64, of key: LoopKey) {
        if ns >= options.lateTimerNs { loop(key).lateTimers &+= 1 }
    }

    public func hang(_ record: HangEventRecord, of key: LoopKey) {
        let s = loop(key)
        switch record {
        case .begin(let b):
            s.watchdog = (b.hangID, b.ts &- b.elapsedNs, b.kind, b.item, b.name)
            s.watchdogStack = nil
        case .end(let e):
            let w = s.watchdog
            s.watchdog = nil
            let stack = s.watchdogStack.flatMap { $0.hangID == e.hangID ? symbolized($0, s) : nil }
            s.watchdogStack = nil
            let begin = w?.begin ?? (e.ts &- e.durationNs)
            // The callout that held the loop, already listed when it ran past the threshold.
            if let i = s.ended.lastIndex(where: { $0.source == "callout" && $0.beginNs <= e.ts && $0.beginNs &+ $0.durationNs >= begin }) {
                s.ended[i].source = "watchdog"
                s.ended[i].stack = stack
            } else {
                s.totalHangs &+= 1
                var h = TopHang(inProgress: false, kind: w?.kind ?? "loop", item: w?.item ?? 0, name: w?.name ?? "",
                                beginNs: begin, durationNs: e.durationNs, source: "watchdog")
                h.stack = stack
                s.ended.append(h)
            }
        case .stack(let st):
            // Samples come in order: the latest of the open hang is the one shown.
            if s.watchdog.map({ $0.id == st.hangID }) ?? true { s.watchdogStack = st }
        }
    }

    // MARK: stacks

    /// Symbolizes the frames of the binaries the trace's state dump reported (a new symbolizer
    /// when more were reported since; the symbolizer caches what it resolved).
    private var symbolizer: (modules: Int, symbolizer: StackSymbolizer)?

    /// Stack sample `st` of the hang in progress on `s`, symbolized once.
    private func symbolized(_ st: HangStackRecord, _ s: Stats) -> TopStack {
        if let shown = s.shownStack, shown.hangID == st.hangID, shown.sample == st.sample { return shown.stack }
        let modules = model?.evidence?.modules ?? []
        let current: StackSymbolizer
        if let x = symbolizer, x.modules == modules.count { current = x.symbolizer } else {
            current = StackSymbolizer(modules: modules)
            symbolizer = (modules.count, current)
        }
        let frames = current.frames([(pid: s.key.pid, ts: st.ts, addresses: st.frames)]).first ?? []
        let stack = TopStack(sample: st.sample, elapsedNs: st.elapsedNs, frames: frames)
        s.shownStack = (st.hangID, st.sample, stack)
        return stack
    }

    // MARK: snapshots

    /// The hang of each loop in progress at `end` (the live stream's horizon): the watchdog's
    /// open hang, else an open callout (or iteration, between callouts) older than the threshold.
    public func hangsInProgress(at end: Int64) -> [LoopKey: TopHang] {
        var out: [LoopKey: TopHang] = [:]
        for s in stats {
            if let w = s.watchdog {
                var h = TopHang(inProgress: true, kind: w.kind, item: w.item, name: w.name, beginNs: w.begin,
                                durationNs: max(0, end &- w.begin), source: "watchdog")
                if let st = s.watchdogStack, st.hangID == w.id { h.stack = symbolized(st, s) }
                out[s.key] = h
            }
        }
        guard let model else { return out }
        defer {
            // What the watchdog read of the stuck callout so far, scaled to the hang's duration.
            for (key, h) in out {
                guard let r = model.openCalloutReading(of: key) else { continue }
                out[key]?.setCpu(LoopModel.scaledReading(cpuNs: r.cpuNs, overNs: r.elapsedNs, to: h.durationNs), busy: h.durationNs)
            }
        }
        for b in model.busyAtEnd where out[b.loop.key] == nil {
            let since = b.callout?.begin ?? b.begin
            let elapsed = end &- since
            guard elapsed >= options.hangThresholdNs else { continue }
            if let c = b.callout {
                out[b.loop.key] = TopHang(inProgress: true, kind: c.kind.label, item: c.item, name: model.name(of: c, pid: b.loop.key.pid),
                                          beginNs: since, durationNs: elapsed, source: "callout")
            } else {
                out[b.loop.key] = TopHang(inProgress: true, kind: "loop", item: 0, name: "", beginNs: since, durationNs: elapsed, source: "callout")
            }
        }
        return out
    }

    /// The rows for the interval `[begin, end]` (CLOCK_MONOTONIC ns), then a new interval.
    /// `discarded`: events the tracer discarded in the session in the interval.
    public func snapshot(begin: Int64, end: Int64, discarded: Int64) -> [TopLoopRow] {
        let span = Double(max(1, end &- begin)) / 1e9
        let inProgress = hangsInProgress(at: end)
        var rows: [TopLoopRow] = []
        for s in stats {
            let info = model?.info(of: s.key) ?? LoopInfo(key: s.key)
            let worst = s.worst.map { c in
                TopItem(kind: c.kind.label, item: c.item, name: model?.name(of: c, pid: s.key.pid) ?? "", durationNs: c.duration)
            }
            rows.append(TopLoopRow(host: host, session: session, pid: s.key.processID, procname: info.procname, tid: info.tid,
                                   threadName: info.threadName, loop: s.key.loop,
                                   iterations: s.iterations, iterationsPerSecond: Double(s.iterations) / span,
                                   busyRatio: min(1, max(0, Double(s.busyNs) / 1e9 / span)),
                                   callouts: s.callouts, calloutP50Ns: percentile(s, 0.5), calloutP99Ns: percentile(s, 0.99),
                                   worst: worst, lateTimers: s.lateTimers, spins: s.spins, discardedEvents: discarded,
                                   unmatchedCallouts: s.unmatched, hang: inProgress[s.key], hangs: s.ended,
                                   totalIterations: s.totalIterations, totalCallouts: s.totalCallouts, totalHangs: s.totalHangs))
            s.resetInterval()
        }
        return rows
    }
}
