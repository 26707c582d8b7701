/// Keeps completed iterations (with their callouts and sleeps) for the timeline, the Chrome export
/// and histograms of arbitrary quantities. Memory grows with the iterations kept: filters (and
/// `limit`) bound it.
public final class IterationCollector: LoopModelSink, NameResolving {
    /// An iteration and what the timeline shows of it.
    public struct Row: Sendable {
        /// The iteration.
        public var record: IterationRecord
        /// Its loop.
        public var loop: LoopInfo
    }
    /// The kept iterations in completion order (nested ones before their parent).
    public private(set) var rows: [Row] = []
    /// Runs entered/exited, for the Chrome export.
    public private(set) var runs: [(key: LoopKey, enter: Bool, mode: String, depth: Int, result: Int64, ts: Int64)] = []
    /// Every callout duration and key, for histograms.
    /// Every matched callout (`blockName`: a block's name, nil for other kinds).
    public private(set) var callouts: [(key: LoopKey, kind: CalloutKind, item: UInt64, duration: Int64, blockName: String?)] = []
    /// Sleeps with their reasons.
    public private(set) var sleeps: [(key: LoopKey, reason: WakeReason, duration: Int64)] = []
    /// Timer lateness, signal and wakeUp latencies.
    public private(set) var lateness: [(key: LoopKey, item: UInt64, ns: Int64)] = []
    /// Signal → perform latencies.
    public private(set) var signal: [(key: LoopKey, item: UInt64, ns: Int64)] = []
    /// wakeUp → wake latencies.
    public private(set) var wakeUps: [(key: LoopKey, ns: Int64, tid: Int64)] = []
    /// Cross-thread flows.
    public private(set) var flows: [Flow] = []
    public func flow(_ f: Flow) { flows.append(f) }
    /// The model, for names.
    public var resolver: LoopModel?
    /// Keep at most this many iterations (0 = all).
    public var limit: Int

    /// Creates a collector.
    public init(limit: Int = 0) { self.limit = limit }

    /// The name of an item.
    public func name(_ kind: CalloutKind, _ item: UInt64, pid: Int64) -> String {
        resolver?.name(of: kind, item: item, pid: pid) ?? ""
    }
    /// The name of a callout's item (a block's own name for blocks).
    public func name(_ c: CalloutRecord, pid: Int64) -> String {
        resolver?.name(of: c, pid: pid) ?? (c.blockName ?? "")
    }

    public func iteration(_ it: IterationRecord, of loop: LoopInfo) {
        if limit == 0 || rows.count < limit { rows.append(Row(record: it, loop: loop)) }
    }
    public func callout(_ c: CalloutRecord, of key: LoopKey, name: String) { callouts.append((key, c.kind, c.item, c.duration, c.blockName)) }
    public func sleep(_ s: SleepRecord, of key: LoopKey) { sleeps.append((key, s.reason, s.duration)) }
    public func wake(_ reason: WakeReason, of key: LoopKey) {}
    public func unmatchedCallout(of key: LoopKey) {}
    public func timerLateness(_ ns: Int64, item: UInt64, of key: LoopKey) { lateness.append((key, item, ns)) }
    public func signalLatency(_ ns: Int64, item: UInt64, callerTid: Int64, of key: LoopKey) { signal.append((key, item, ns)) }
    public func wakeUpLatency(_ ns: Int64, callerTid: Int64, of key: LoopKey) { wakeUps.append((key, ns, callerTid)) }
    public func run(_ enter: Bool, mode: String, depth: Int, result: Int64, at ts: Int64, of key: LoopKey) {
        runs.append((key, enter, mode, depth, result, ts))
    }

    /// Rows in time order of their begin (parents before the iterations nested in them).
    public var rowsByTime: [Row] { rows.sorted { ($0.record.begin, $0.record.depth) < ($1.record.begin, $1.record.depth) } }
}

/// `rltrace timeline`: one line per iteration.
public struct TimelineRenderer {
    /// Which iterations to show.
    public struct Selection: Sendable {
        /// Only iterations with a callout of one of these kinds (empty: any).
        public var kinds: Set<CalloutKind> = []
        /// Only iterations with a callout whose name matches this glob.
        public var itemGlob: String?
        /// Only iterations busy at least this long.
        public var minBusyNs: Int64 = 0
        /// Only iterations run in this mode.
        public var mode: String?
        /// Only flagged iterations (hang, spin, late timer).
        public var flaggedOnly = false
        /// Creates a selection that keeps everything.
        public init() {}
    }
    /// The thresholds (for flags).
    public var options: ReportOptions
    /// A timer later than this is flagged.
    public var lateTimerNs: Int64 = 10_000_000
    /// The selection.
    public var selection: Selection

    /// Creates a renderer.
    public init(options: ReportOptions = ReportOptions(), selection: Selection = Selection()) {
        self.options = options
        self.selection = selection
    }

    /// The timeline text. `origin` is the trace's first timestamp (for relative times).
    public func render(_ c: IterationCollector, origin: Int64) -> String {
        var o = "  iteration   start (abs s)        +rel        busy      sleep  wake          callouts\n"
        var shown = 0
        let rows = c.rowsByTime
        // Spins: iterations in runs of ≥ spinMinIterations top-level iterations that did not sleep.
        var spin = Set<Int>()
        var run: [Int] = []
        func close() { if run.count >= options.spinMinIterations { spin.formUnion(run) }; run.removeAll() }
        var lastLoop: LoopKey?
        for (i, r) in rows.enumerated() where r.record.depth == 0 {
            if r.loop.key != lastLoop { close(); lastLoop = r.loop.key }
            if r.record.slept || r.record.nestedSleeps > 0 { close() } else { run.append(i) }
        }
        close()
        var currentLoop: LoopKey?
        for (i, r) in rows.enumerated() {
            let it = r.record
            var flags: [String] = []
            if it.busyNs >= options.hangThresholdNs { flags.append("HANG") } else if it.busyNs >= options.slowThresholdNs { flags.append("SLOW") }
            if spin.contains(i) { flags.append("SPIN") }
            for cl in it.callouts where cl.kind == .timer && cl.begin - cl.detail >= lateTimerNs {
                flags.append("LATE \(c.name(.timer, cl.item, pid: it.key.pid)) +\(formatDuration(cl.begin - cl.detail))")
            }
            if !accept(it, c, flagged: !flags.isEmpty) { continue }
            if currentLoop != it.key {
                currentLoop = it.key
                o += "loop \(it.key.loop) (pid \(it.key.pid)\(r.loop.procname.isEmpty ? "" : " \(r.loop.procname)") tid \(r.loop.tid)\(r.loop.threadName.isEmpty ? "" : " \"\(r.loop.threadName)\""))\n"
            }
            let indent = String(repeating: "    ", count: it.depth)
            let sleep = it.ownSleepNs
            let wake = it.sleeps.first.map { $0.reason.label } ?? (it.polls > 0 ? "poll" : "-")
            let calls = it.callouts.filter { $0.kind != .observer || $0.duration >= 1_000_000 }.map { cl -> String in
                let n = cl.kind == .mainQueue ? "main-queue" : c.name(cl, pid: it.key.pid)
                return "\(String(repeating: "›", count: cl.depth))\(cl.kind.label)(\(n.isEmpty ? "#\(cl.item)" : n)) \(formatDuration(cl.duration))"
            }
            let observers = it.callouts.filter { $0.kind == .observer }.count
            o += indent + lpad("#\(it.number)", 11) + "  " + absolute(it.begin) + lpad("+" + formatDuration(it.begin - origin), 12)
                + lpad(formatDuration(it.busyNs), 12) + lpad(sleep > 0 ? formatDuration(sleep) : "-", 11) + "  " + pad(wake, 12)
                + (calls.isEmpty ? "" : calls.joined(separator: ", "))
                + (observers > 0 ? " [\(observers) observer\(observers == 1 ? "" : "s")]" : "")
                + (it.mode.isEmpty || it.mode == "kCFRunLoopDefaultMode" ? "" : " {\(it.mode)}")
                + (flags.isEmpty ? "" : "  ◀ " + flags.joined(separator: " ")) + "\n"
            shown += 1
        }
        if shown == 0 { o += "  (no iteration matches the filters)\n" }
        return o
    }

    func accept(_ it: IterationRecord, _ c: IterationCollector, flagged: Bool) -> Bool {
        if selection.flaggedOnly && !flagged { return false }
        if it.busyNs < selection.minBusyNs { return false }
        if let m = selection.mode, it.mode != m && !(m == "default" && it.mode == "kCFRunLoopDefaultMode") { return false }
        if !selection.kinds.isEmpty && !it.callouts.contains(where: { selection.kinds.contains($0.kind) }) { return false }
        if let g = selection.itemGlob, !it.callouts.contains(where: { globMatch(g, c.name($0, pid: it.key.pid)) }) { return false }
        return true
    }

    func absolute(_ ns: Int64) -> String {
        let s = ns / 1_000_000_000, f = String(ns % 1_000_000_000)
        return lpad("\(s).\(String(repeating: "0", count: 9 - f.count))\(f)", 20)
    }
}

/// Shell-style glob: `*` any run, `?` one character; everything else literal.
public func globMatch(_ pattern: String, _ text: String) -> Bool {
    let p = Array(pattern), t = Array(text)
    var pi = 0, ti = 0, star = -1, mark = 0
    while ti < t.count {
        if pi < p.count && (p[pi] == "?" || p[pi] == t[ti]) { pi += 1; ti += 1 }
        else if pi < p.count && p[pi] == "*" { star = pi; mark = ti; pi += 1 }
        else if star >= 0 { pi = star + 1; mark += 1; ti = mark }
        else { return false }
    }
    while pi < p.count && p[pi] == "*" { pi += 1 }
    return pi == p.count
}

/// Forwards everything to several sinks (and names to those that want them).
public final class FanOutSink: LoopModelSink, NameResolving {
    let sinks: [LoopModelSink]
    /// Creates a fan-out.
    public init(_ sinks: [LoopModelSink]) { self.sinks = sinks }
    /// Propagated to every sink that resolves names.
    public var resolver: LoopModel? {
        didSet { for s in sinks { (s as? NameResolving)?.resolver = resolver } }
    }
    public func iteration(_ it: IterationRecord, of loop: LoopInfo) { for s in sinks { s.iteration(it, of: loop) } }
    public func callout(_ c: CalloutRecord, of key: LoopKey, name: String) { for s in sinks { s.callout(c, of: key, name: name) } }
    public func sleep(_ sl: SleepRecord, of key: LoopKey) { for s in sinks { s.sleep(sl, of: key) } }
    public func wake(_ reason: WakeReason, of key: LoopKey) { for s in sinks { s.wake(reason, of: key) } }
    public func unmatchedCallout(of key: LoopKey) { for s in sinks { s.unmatchedCallout(of: key) } }
    public func timerLateness(_ ns: Int64, item: UInt64, of key: LoopKey) { for s in sinks { s.timerLateness(ns, item: item, of: key) } }
    public func signalLatency(_ ns: Int64, item: UInt64, callerTid: Int64, of key: LoopKey) {
        for s in sinks { s.signalLatency(ns, item: item, callerTid: callerTid, of: key) }
    }
    public func wakeUpLatency(_ ns: Int64, callerTid: Int64, of key: LoopKey) { for s in sinks { s.wakeUpLatency(ns, callerTid: callerTid, of: key) } }
    public func run(_ enter: Bool, mode: String, depth: Int, result: Int64, at ts: Int64, of key: LoopKey) {
        for s in sinks { s.run(enter, mode: mode, depth: depth, result: result, at: ts, of: key) }
    }
    public func flow(_ f: Flow) { for s in sinks { s.flow(f) } }
}
