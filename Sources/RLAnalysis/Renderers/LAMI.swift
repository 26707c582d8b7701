import Foundation

/// LAMI 1.0 (the LTTng Analyses Machine Interface that Trace Compass runs external analyses with):
/// the metadata document and the results document of `rltrace report`.
public enum LAMIReportRenderer {
    typealias J = [String: Any]

    static func col(_ title: String, _ cls: String, unit: String? = nil) -> J {
        var c: J = ["title": title, "class": cls]
        if let unit { c["unit"] = unit }
        return c
    }
    static func dur(_ ns: Int64) -> J { ["class": "duration", "value": ns] }
    static func ts(_ ns: Int64) -> J { ["class": "timestamp", "value": ns] }

    static func thread(_ tid: Int64, _ name: String) -> J { ["class": "thread", "tid": tid, "name": name] }
    static func process(_ pid: Int64, _ name: String) -> J { ["class": "process", "pid": pid, "name": name] }

    /// The table classes (shared by the metadata and the results).
    static var tableClasses: J { [
        "loops": ["title": "Run loops", "column-descriptions": [
            col("Process", "process"), col("Thread", "thread"), col("Loop", "int"), col("Iterations", "int"),
            col("Busy", "duration"), col("Asleep", "duration"), col("Busy ratio", "ratio"), col("Callouts", "int"),
            col("Hangs", "int"), col("Spins", "int"), col("Spurious wakes", "int")]],
        "items": ["title": "Callouts per item", "column-descriptions": [
            col("Thread", "thread"), col("Loop", "int"), col("Kind", "string"), col("Item", "int"), col("Name", "string"),
            col("Count", "int"), col("Total", "duration"), col("p50", "duration"), col("p99", "duration"), col("Max", "duration")]],
        "hangs": ["title": "Hangs", "column-descriptions": [
            col("Thread", "thread"), col("Loop", "int"), col("Time", "timestamp"), col("Busy", "duration"),
            col("Kind", "string"), col("Culprit", "string"), col("Culprit duration", "duration")]],
        "sleeps": ["title": "Sleep durations by wake reason", "column-descriptions": [
            col("Thread", "thread"), col("Loop", "int"), col("Reason", "string"), col("Lower bound", "duration"),
            col("Upper bound", "duration"), col("Count", "int")]],
    ] }

    /// The `--metadata` document.
    public static func metadata(version: String) throws -> String {
        let doc: J = [
            "mi-version": ["major": 1, "minor": 0],
            "version": ["major": 0, "minor": 1, "patch": 0, "extra": version],
            "title": "Run-loop analysis (rltrace)",
            "authors": ["RunLoopTrace"],
            "description": "Per-loop iterations, busy and sleep time, callouts per item, hangs and sleep histograms from the runloop LTTng-UST provider.",
            "url": "docs/report-json.md",
            "tags": ["runloop", "latency", "lttng-ust"],
            "table-classes": tableClasses,
        ]
        return try json(doc)
    }

    /// The results document for a report.
    public static func render(_ r: Report) throws -> String {
        let range: J = ["class": "time-range", "begin": r.trace.beginNs + r.trace.clockOffsetNs, "end": r.trace.endNs + r.trace.clockOffsetNs]
        var loops: [[Any]] = [], items: [[Any]] = [], hangs: [[Any]] = [], sleeps: [[Any]] = []
        for l in r.loops {
            let th = thread(l.tid, l.threadName)
            loops.append([process(l.pid, l.procname), th, l.loop, l.iterations, dur(l.busyNs), dur(l.sleepNs),
                          ["class": "ratio", "value": l.busyRatio] as J, l.callouts, l.hangs.count, l.spins.count, l.spuriousWakes])
            for i in l.items {
                items.append([th, l.loop, i.kind, i.item, i.name, i.count, dur(i.totalNs), dur(i.p50Ns), dur(i.p99Ns), dur(i.maxNs)])
            }
            for h in l.hangs {
                hangs.append([th, l.loop, ts(h.beginNs + r.trace.clockOffsetNs), dur(h.busyNs), h.culprit?.kind ?? "", h.culprit?.name ?? "", dur(h.culprit?.durationNs ?? 0)])
            }
            for (reason, h) in l.sleepHistogram.sorted(by: { $0.key < $1.key }) {
                for (k, n) in h.compactMap({ k, v in Int(k).map { ($0, v) } }).sorted(by: { $0.0 < $1.0 }) {
                    sleeps.append([th, l.loop, reason, dur(k == 0 ? 0 : Int64(1) << k), dur(Int64(1) << (k + 1)), n])
                }
            }
        }
        let results: [J] = [("loops", loops), ("items", items), ("hangs", hangs), ("sleeps", sleeps)].map { name, data in
            ["time-range": range, "class": name, "data": data]
        }
        return try json(["mi-version": ["major": 1, "minor": 0], "results": results])
    }

    static func json(_ o: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .prettyPrinted]), as: UTF8.self) + "\n"
    }
}
