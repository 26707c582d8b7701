import CTFReader
import Foundation

/// LAMI 1.0 (the LTTng Analyses Machine Interface that Trace Compass runs external analyses with,
/// specified in lttng/lami-spec `lami.adoc` v1.0.1): the version line, the metadata document, the
/// results document of `rltrace report`, progress lines and error objects.
///
/// Every cell is a LAMI 1.0 data object (`number`, `string`, `duration`, `timestamp`, `ratio`,
/// `process` …, never a bare JSON value and never a class the specification does not define): a
/// loop's thread is a `process` object carrying `pid`, `tid` and the thread's name, as lttng-analyses
/// writes threads. Empty cells are `null`; a figure that cannot be computed is `{"class": "unknown"}`.
public enum LAMIReportRenderer {
    typealias J = [String: Any]

    /// The LAMI version this renderer produces (major, minor).
    public static let miVersion = (major: 1, minor: 0)

    /// The LAMI version phase's output: `MAJOR.MINOR` and a newline.
    public static var miVersionLine: String { "\(miVersion.major).\(miVersion.minor)\n" }

    /// A time range in nanoseconds since the Unix epoch (LAMI's `--begin` / `--end`), both ends included.
    public struct TimeWindow: Sendable, Equatable {
        /// The first and last nanosecond covered.
        public var begin: Int64, end: Int64
        /// Creates a window.
        public init(begin: Int64, end: Int64) { self.begin = begin; self.end = end }
    }

    /// The window of `--begin` / `--end` (ns since the epoch) over a report: a bound not given is the
    /// trace's first or last event. Nil when neither is given (the tables then cover the trace).
    public static func window(begin: Int64?, end: Int64?, in r: Report) -> TimeWindow? {
        guard begin != nil || end != nil else { return nil }
        return TimeWindow(begin: begin ?? (r.trace.beginNs &+ r.trace.clockOffsetNs),
                          end: end ?? (r.trace.endNs &+ r.trace.clockOffsetNs))
    }

    /// The window of an ``EventFilter``'s time bounds over a report, in ns since the epoch: epoch and
    /// absolute (CLOCK_MONOTONIC) bounds exactly; a relative bound from the report's first event
    /// (`trace.beginNs`, which is the first `runloop` event in a trace recorded with `runloop:*` only).
    /// Nil when the filter has no time bound.
    public static func window(for filter: EventFilter, in r: Report) -> TimeWindow? {
        let off = r.trace.clockOffsetNs
        func epoch(_ b: EventFilter.TimeBound?) -> Int64? {
            switch b {
            case .none: nil
            case .epoch(let ns): ns
            case .timeOfDay(let ns): dayStart(r.trace.beginNs &+ off) &+ ns
            case .absolute(let ns): ns &+ off
            case .relative(let ns): r.trace.beginNs &+ ns &+ off
            }
        }
        return window(begin: epoch(filter.begin), end: epoch(filter.end), in: r)
    }

    static func col(_ title: String, _ cls: String, unit: String? = nil) -> J {
        var c: J = ["title": title, "class": cls]
        if let unit { c["unit"] = unit }     // LAMI 1.0: a unit only on `number` columns
        return c
    }
    static func num(_ v: Int) -> J { ["class": "number", "value": v] }
    static func num(_ v: UInt64) -> J { ["class": "number", "value": v] }
    static func str(_ s: String) -> J { ["class": "string", "value": s] }
    static func dur(_ ns: Int64) -> J { ["class": "duration", "value": ns] }
    static func ts(_ ns: Int64) -> J { ["class": "timestamp", "value": ns] }
    static var unknown: J { ["class": "unknown"] }
    static func ratio(_ v: Double) -> J { v.isFinite ? ["class": "ratio", "value": v] : unknown }

    /// A process (`pid` 0: not recorded) — or, with `tid`, one of its threads (`tid` -1: unknown),
    /// as a LAMI `process` object.
    static func process(pid: Int64, tid: Int64? = nil, name: String) -> J {
        var o: J = ["class": "process"]
        if pid > 0 { o["pid"] = pid }
        if let tid, tid >= 0 { o["tid"] = tid }
        if !name.isEmpty { o["name"] = name }
        return o.count == 1 ? unknown : o
    }

    /// The table classes (shared by the metadata and the results), in result order.
    static let tableClassOrder = ["loops", "items", "hangs", "sleeps"]
    static var tableClasses: J { [
        "loops": ["title": "Run loops", "column-descriptions": [
            col("Process", "process"), col("Thread", "process"), col("Loop", "number", unit: "loop id"),
            col("Iterations", "number", unit: "iterations"), col("Busy", "duration"), col("Asleep", "duration"),
            col("Busy ratio", "ratio"), col("Callouts", "number", unit: "callouts"), col("Hangs", "number", unit: "hangs"),
            col("Spins", "number", unit: "spins"), col("Spurious wakes", "number", unit: "wakes")]],
        "items": ["title": "Callouts per item", "column-descriptions": [
            col("Thread", "process"), col("Loop", "number", unit: "loop id"), col("Kind", "string"), col("Item", "number", unit: "item id"),
            col("Name", "string"), col("Count", "number", unit: "callouts"), col("Total", "duration"), col("p50", "duration"),
            col("p99", "duration"), col("Max", "duration")]],
        "hangs": ["title": "Hangs", "column-descriptions": [
            col("Thread", "process"), col("Loop", "number", unit: "loop id"), col("Time", "timestamp"), col("Busy", "duration"),
            col("Culprit kind", "string"), col("Culprit", "string"), col("Culprit duration", "duration")]],
        "sleeps": ["title": "Sleep durations by wake reason", "column-descriptions": [
            col("Thread", "process"), col("Loop", "number", unit: "loop id"), col("Reason", "string"), col("Lower bound", "duration"),
            col("Upper bound", "duration"), col("Count", "number", unit: "sleeps")]],
    ] }

    /// The metadata phase's document. `version` is rltrace's version text (`rltrace 0.2.0 (…)`): its
    /// first `MAJOR.MINOR.PATCH` becomes the analysis version, the whole text its `extra`.
    public static func metadata(version: String) throws -> String {
        var v: J = ["extra": version]
        if let r = version.range(of: #"\d+\.\d+(\.\d+)?"#, options: .regularExpression) {
            let parts = version[r].split(separator: ".").compactMap { Int($0) }
            for (k, n) in zip(["major", "minor", "patch"], parts) { v[k] = n }
        }
        let doc: J = [
            "mi-version": ["major": miVersion.major, "minor": miVersion.minor],
            "version": v,
            "title": "Run-loop analysis (rltrace)",
            "authors": ["RunLoopTrace"],
            "description": "Per-loop iterations, busy and sleep time, callouts per item, hangs and sleep histograms from the runloop LTTng-UST provider.",
            "tags": ["runloop", "latency", "lttng-ust"],
            "table-classes": tableClasses,
        ]
        return try json(doc)
    }

    /// The results phase's document for a report: one table per table class, each over `window`
    /// (ns since the epoch; the trace's first to last event when nil), each holding at most `limit`
    /// rows (all when nil).
    public static func render(_ r: Report, window: TimeWindow? = nil, limit: Int? = nil) throws -> String {
        let off = r.trace.clockOffsetNs
        let w = window ?? TimeWindow(begin: r.trace.beginNs &+ off, end: r.trace.endNs &+ off)
        let range: J = ["class": "time-range", "begin": ts(w.begin), "end": ts(w.end)]
        var loops: [[Any]] = [], items: [[Any]] = [], hangs: [[Any]] = [], sleeps: [[Any]] = []
        for l in r.loops {
            let th = process(pid: l.pid, tid: l.tid, name: l.threadName)
            let loop = num(l.loop)
            loops.append([process(pid: l.pid, name: r.trace.hosts != nil ? "\(l.host ?? ""): \(l.procname)" : l.procname), th, loop, num(l.iterations), dur(l.busyNs), dur(l.sleepNs),
                          ratio(l.busyRatio), num(l.callouts), num(l.hangs.count), num(l.spins.count), num(l.spuriousWakes)])
            for i in l.items {
                items.append([th, loop, str(i.kind), num(i.item), str(i.name), num(i.count), dur(i.totalNs), dur(i.p50Ns), dur(i.p99Ns), dur(i.maxNs)])
            }
            for h in l.hangs {
                let c = h.culprit
                hangs.append([th, loop, ts(h.beginNs &+ off), dur(h.busyNs),
                              c.map { str($0.kind) } ?? NSNull(), c.map { str($0.name) } ?? NSNull(), c.map { dur($0.durationNs) } ?? NSNull()])
            }
            for (reason, h) in l.sleepHistogram.sorted(by: { $0.key < $1.key }) {
                for (k, n) in h.compactMap({ k, v in Int(k).map { ($0, v) } }).sorted(by: { $0.0 < $1.0 }) where k < 62 {
                    sleeps.append([th, loop, str(reason), dur(k == 0 ? 0 : Int64(1) << k), dur(Int64(1) << (k + 1)), num(n)])
                }
            }
        }
        let tables = ["loops": loops, "items": items, "hangs": hangs, "sleeps": sleeps]
        let results: [J] = tableClassOrder.map { name in
            let rows = tables[name]!
            return ["time-range": range, "class": name, "data": limit.map { Array(rows.prefix(max(0, $0))) } ?? rows]
        }
        return try json(["results": results])
    }

    /// A LAMI error object (`error-message`, and `error-code` when given), on one line.
    public static func error(_ message: String, code: Int32? = nil) -> String {
        var o: J = ["error-message": message]
        if let code { o["error-code"] = Int(code) }
        return ((try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])).map { UntrustedText.hardenJSON(Array($0)) }
                ?? #"{"error-message": "error"}"#) + "\n"
    }

    /// A progress line: `VALUE MESSAGE` with VALUE in 0…1.
    public static func progress(_ value: Double, _ message: String) -> String {
        let v = min(1, max(0, value.isFinite ? value : 0))
        let text = v == v.rounded() ? String(Int(v)) : String(v)
        let m = UntrustedText.terminal(message.replacingOccurrences(of: "\n", with: " "))
        return m.isEmpty ? text + "\n" : "\(text) \(m)\n"
    }

    static func json(_ o: Any) throws -> String {
        UntrustedText.hardenJSON(Array(try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]))) + "\n"
    }
}
