/// Narrows what the analysis looks at (the CLI's common filters).
public struct EventFilter: Sendable {
    /// Only these processes (`vpid`), threads, process names, loops.
    public var pids: Set<Int64> = [], tids: Set<Int64> = [], procnames: Set<String> = [], loops: Set<UInt64> = []
    /// Callout figures only for these kinds (empty: all), items whose name matches this glob, and
    /// callouts at least this long. Iterations, sleeps and wakes are not narrowed by these.
    public var calloutKinds: Set<CalloutKind> = [], itemGlob: String?, minCalloutNs: Int64 = 0
    /// Only events in `[begin, end]`: resolved against the trace start on the first event.
    public var begin: TimeBound?, end: TimeBound?

    /// A time bound: relative to the trace's first event, or absolute CLOCK_MONOTONIC ns.
    public enum TimeBound: Sendable, Equatable {
        /// Nanoseconds after the trace's first event.
        case relative(Int64)
        /// An absolute CLOCK_MONOTONIC time in ns.
        case absolute(Int64)
        /// An absolute time in ns since the Unix epoch (LAMI's `--begin`/`--end`), converted with the
        /// trace's clock offset.
        case epoch(Int64)

        /// Parses `250ms`, `1.5s`, `+2s` (relative to the trace start) or `@1763875200.123456789`
        /// (the trace clock's absolute time: seconds since the epoch, as `rltrace dump`, the
        /// timeline and `babeltrace2 --clock-seconds` print it; read exactly to the ns). Nil when
        /// invalid.
        public init?(parsing text: String) {
            if text.hasPrefix("@") {
                guard let ns = parseEpochSeconds(String(text.dropFirst())) else { return nil }
                self = .epoch(ns)
            } else {
                let t = text.hasPrefix("+") ? String(text.dropFirst()) : text
                guard let ns = parseDuration(t) else { return nil }
                self = .relative(ns)
            }
        }
    }

    /// Creates a filter that accepts everything.
    public init() {}

    /// Checks that the filters can all hold; throws ``AnalysisError/contradictoryFilters(_:)``.
    public func validate() throws {
        if let b = begin, let e = end {
            switch (b, e) {
            case (.relative(let x), .relative(let y)) where x > y,
                 (.absolute(let x), .absolute(let y)) where x > y,
                 (.epoch(let x), .epoch(let y)) where x > y:
                throw AnalysisError.contradictoryFilters("--begin is after --end")
            default: break
            }
        }
    }

    /// Whether the callout figures are narrowed at all (kinds, item glob or minimum duration).
    public var narrowsCallouts: Bool { !calloutKinds.isEmpty || itemGlob != nil || minCalloutNs > 0 }

    /// Whether a callout counts in the callout figures.
    public func acceptsCallout(kind: CalloutKind, name: String, durationNs: Int64) -> Bool {
        (calloutKinds.isEmpty || calloutKinds.contains(kind)) && durationNs >= minCalloutNs
            && (itemGlob.map { globMatch($0, name) } ?? true)
    }

    /// Whether a loop passes the loop-level filters (pid, tid, procname, loop).
    public func acceptsLoop(_ l: LoopInfo) -> Bool {
        (pids.isEmpty || pids.contains(l.key.pid)) && (tids.isEmpty || tids.contains(l.tid))
            && (procnames.isEmpty || procnames.contains(l.procname)) && (loops.isEmpty || loops.contains(l.key.loop))
    }
}

/// Parses `SECONDS[.FRACTION]` exactly into nanoseconds (nil if malformed or out of range).
public func parseEpochSeconds(_ text: String) -> Int64? {
    let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
    guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy(\.isASCII), let s = Int64(whole), s >= 0 else { return nil }
    var frac: Int64 = 0
    if parts.count == 2 {
        let f = parts[1]
        guard !f.isEmpty, f.count <= 9, f.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        frac = Int64(f + String(repeating: "0", count: 9 - f.count))!
    }
    let (ns, o) = s.multipliedReportingOverflow(by: 1_000_000_000)
    guard !o else { return nil }
    return ns + frac
}

/// Parses a duration with a unit (`ns`, `us`, `µs`, `ms`, `s`, `m`); a bare number is seconds.
public func parseDuration(_ text: String) -> Int64? {
    let units: [(String, Double)] = [("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9)]
    for (u, f) in units where text.hasSuffix(u) {
        guard let v = Double(text.dropLast(u.count)), v.isFinite, v >= 0 else { return nil }
        return Int64(v * f)
    }
    guard let v = Double(text), v.isFinite, v >= 0 else { return nil }
    return Int64(v * 1e9)
}

/// Formats nanoseconds for humans: `812ns`, `3.4µs`, `12.5ms`, `1.25s`.
public func formatDuration(_ ns: Int64) -> String {
    let a = abs(Double(ns))
    let sign = ns < 0 ? "-" : ""
    func f(_ v: Double, _ u: String) -> String {
        let r = v >= 100 ? (v * 1).rounded() : (v >= 10 ? (v * 10).rounded() / 10 : (v * 100).rounded() / 100)
        let s = r == r.rounded() ? String(Int64(r)) : String(r)
        return sign + s + u
    }
    if a < 1_000 { return "\(sign)\(Int64(a))ns" }
    if a < 1_000_000 { return f(a / 1e3, "µs") }
    if a < 1_000_000_000 { return f(a / 1e6, "ms") }
    return f(a / 1e9, "s")
}

/// The event-level filters of an ``EventFilter`` resolved for one trace (time bounds as absolute
/// CLOCK_MONOTONIC ns), checked per event with integer compares only.
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
            }
        }
        lo = begin.map(resolve) ?? .min
        hi = end.map(resolve) ?? .max
    }

    /// Whether the event passes the pid and loop filters. The time window is the loop model's to
    /// apply (it follows what began before the window); the gate only resolves it.
    @inline(__always)
    func accepts(_ e: RunLoopEvent, epochOffset: Int64) -> Bool {
        if !started { start(origin: e.ts, epochOffset: epochOffset) }
        if checkPids && !pids.contains(e.pid) { return false }
        // (A signal of a source in no loop, loop 0, may still be performed by a selected loop.)
        if checkLoops && !loops.contains(e.loop) && !(e.kind == .source0Signalled && e.loop == 0) { return false }
        return true
    }
}
