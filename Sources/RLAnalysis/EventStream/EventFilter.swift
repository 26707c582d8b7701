import RunLoopSchema

/// Narrows what the analysis looks at (the CLI's common filters).
public struct EventFilter: Sendable {
    /// Only these processes (`vpid`), threads, process names, loops.
    public var pids: Set<Int64> = [], tids: Set<Int64> = [], procnames: Set<String> = [], loops: Set<UInt64> = []
    /// Only the traces of hosts whose name matches one of these globs (the traces' `env.hostname`;
    /// empty: every host). Other hosts' streams are not read at all.
    public var hosts: Set<String> = []
    /// Callout figures only for these kinds (empty: all), items whose name matches this glob, and
    /// callouts at least this long. Iterations, sleeps and wakes are not narrowed by these.
    public var calloutKinds: Set<RLCalloutKind> = [], itemGlob: String?, minCalloutNs: Int64 = 0
    /// Only what happens in runs of these modes (empty: every mode; `default` also names
    /// `kCFRunLoopDefaultMode`): iterations of those runs, and the callouts, sleeps, wakes and
    /// latencies inside them.
    public var modes: Set<String> = []
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
        /// A time of day in UTC (ns since midnight) on the day of the trace's first event, as
        /// babeltrace2's `--clock-gmt` text output prints it (`[09:52:24.123456789]`).
        case timeOfDay(Int64)

        /// Parses `250ms`, `1.5s`, `+2s` (relative to the trace start) or an absolute time of the
        /// trace clock, read exactly to the ns: `@1763875200.123456789` (seconds since the epoch, as
        /// `rltrace dump`, the timeline and `babeltrace2 --clock-seconds` print it),
        /// `@2026-11-23T09:52:24.123456789` or `@2026-11-23 09:52:24.1` (a UTC date and time), or
        /// `@09:52:24.123456789` (a UTC time of day on the trace's first day, as `babeltrace2
        /// --clock-gmt` prints it; brackets as babeltrace2 prints them are accepted). Nil when invalid.
        public init?(parsing text: String) {
            if text.hasPrefix("@") {
                var t = Substring(text.dropFirst())
                if t.hasPrefix("["), t.hasSuffix("]") { t = t.dropFirst().dropLast() }
                if let ns = parseEpochSeconds(String(t)) {
                    self = .epoch(ns)
                } else if let (day, tod) = parseDateTime(String(t)) {
                    if let day { self = .epoch(day &+ tod) } else { self = .timeOfDay(tod) }
                } else {
                    return nil
                }
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
                 (.epoch(let x), .epoch(let y)) where x > y,
                 (.timeOfDay(let x), .timeOfDay(let y)) where x > y:
                throw AnalysisError.contradictoryFilters("--begin is after --end")
            default: break
            }
        }
    }

    /// ``calloutKinds`` as bits (bit `rawValue`; every bit when empty, which selects every kind):
    /// a kind check per callout is one test.
    public var calloutKindMask: UInt64 { calloutKinds.selectionMask }

    /// Whether the callout figures are narrowed at all (kinds, item glob or minimum duration).
    public var narrowsCallouts: Bool { !calloutKinds.isEmpty || itemGlob != nil || minCalloutNs > 0 }

    /// Whether a run mode named `name` is selected (`default` also names `kCFRunLoopDefaultMode`;
    /// no `--mode`: every mode).
    public func acceptsMode(_ name: String) -> Bool {
        modes.isEmpty || modes.contains(name) || (name == "kCFRunLoopDefaultMode" && modes.contains("default"))
    }

    /// Whether any loop-level filter (pid, tid, procname, loop) is set.
    public var narrowsLoops: Bool { !(pids.isEmpty && tids.isEmpty && procnames.isEmpty && loops.isEmpty) }

    /// The loop-level filters as the command line gives them (`--pid 1 --procname x`; empty when none).
    public var loopSelectionText: String {
        var parts: [String] = []
        for h in hosts.sorted() { parts.append("--host \(h.debugDescription)") }
        for p in pids.sorted() { parts.append("--pid \(p)") }
        for t in tids.sorted() { parts.append("--tid \(t)") }
        for n in procnames.sorted() { parts.append("--procname \(n.debugDescription)") }
        for l in loops.sorted() { parts.append("--loop \(l)") }
        for m in modes.sorted() { parts.append("--mode \(m.debugDescription)") }
        return parts.joined(separator: " ")
    }

    /// Whether a loop passes the loop-level filters (pid, tid, procname, loop).
    public func acceptsLoop(_ l: LoopInfo) -> Bool {
        (pids.isEmpty || pids.contains(l.key.processID)) && (tids.isEmpty || tids.contains(l.tid))
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

/// Parses `[YYYY-MM-DD(T| )]HH:MM[:SS[.FRACTION]]` (UTC): the date as ns since the epoch (nil
/// when absent) and the time of day in ns. Nil when malformed (a field out of range included).
public func parseDateTime(_ text: String) -> (day: Int64?, timeOfDay: Int64)? {
    var rest = Substring(text)
    var day: Int64?
    if let sep = rest.firstIndex(where: { $0 == "T" || $0 == " " }) {
        let d = rest[..<sep].split(separator: "-", omittingEmptySubsequences: false)
        guard d.count == 3, d[0].count == 4, d[1].count == 2, d[2].count == 2,
              let y = Int64(d[0]), let m = Int64(d[1]), let dd = Int64(d[2]),
              (1...12).contains(m), (1...31).contains(dd) else { return nil }
        // Days since 1970-01-01 (proleptic Gregorian; Howard Hinnant's days_from_civil).
        let yy = m <= 2 ? y - 1 : y
        let era = (yy >= 0 ? yy : yy - 399) / 400
        let yoe = yy - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + dd - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        day = (era * 146_097 + doe - 719_468) * 86_400_000_000_000
        rest = rest[rest.index(after: sep)...]
    }
    let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
    guard parts.count == 2 || parts.count == 3,
          parts[0].count == 2, parts[1].count == 2,
          let h = Int64(parts[0]), let mi = Int64(parts[1]), h < 24, mi < 60 else { return nil }
    var secNs: Int64 = 0
    if parts.count == 3 {
        guard parts[2].count >= 2, parts[2].first != ".", let s = parseEpochSeconds(String(parts[2])), s < 60_000_000_000 else { return nil }
        secNs = s
    }
    return (day, (h * 3600 + mi * 60) * 1_000_000_000 + secNs)
}

/// The UTC midnight (ns since the epoch) of the day holding `epochNs`.
func dayStart(_ epochNs: Int64) -> Int64 {
    let d: Int64 = 86_400_000_000_000
    return (epochNs >= 0 ? epochNs / d : (epochNs - d + 1) / d) * d
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

extension Set where Element == RLCalloutKind {
    /// The kinds as bits (bit `rawValue`), every bit when the set is empty (an empty selection of
    /// kinds selects every kind).
    public var selectionMask: UInt64 { isEmpty ? ~0 : reduce(0) { $0 | 1 << UInt64($1.rawValue) } }
}
