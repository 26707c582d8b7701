import RunLoopSchema

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
    public func callout(_ c: CalloutRecord, of key: LoopKey) { for s in sinks { s.callout(c, of: key) } }
    public func sleep(_ sl: SleepRecord, of key: LoopKey) { for s in sinks { s.sleep(sl, of: key) } }
    public func wake(_ reason: RLWakeReason, of key: LoopKey) { for s in sinks { s.wake(reason, of: key) } }
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
    public func traceBegins(at ts: Int64, epochOffset: Int64) { for s in sinks { s.traceBegins(at: ts, epochOffset: epochOffset) } }
    public func finish(end: Int64) { for s in sinks { s.finish(end: end) } }
}
