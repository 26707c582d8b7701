import Foundation

/// `rltrace export --format chrome`: Chrome Trace Event JSON (opens in Perfetto and chrome://tracing).
/// Per loop thread, strictly nested complete slices: run → iteration → sleep / callout (→ nested run
/// …); thread and process names; a busy-ratio counter per loop; flow arrows from the thread that
/// woke or signalled a loop to the loop's wake or perform.
public enum ChromeTraceRenderer {
    /// The JSON document (`{"traceEvents": [...], "displayTimeUnit": "ns"}`).
    public static func render(_ c: IterationCollector, report: Report, strips: BusyStripCollector?) throws -> String {
        let origin = report.trace.beginNs
        func us(_ ns: Int64) -> Double { Double(ns - origin) / 1000 }
        var ev: [[String: Any]] = []
        var tids: [LoopKey: Int64] = [:]
        var seenProcesses = Set<Int64>()
        for l in report.loops {
            let key = LoopKey(pid: l.pid, loop: l.loop)
            let tid = l.tid >= 0 ? l.tid : Int64(l.loop)
            tids[key] = tid
            ev.append(["name": "thread_name", "ph": "M", "pid": l.pid, "tid": tid,
                       "args": ["name": "\(l.threadName.isEmpty ? "thread \(tid)" : l.threadName) — loop \(l.loop)"]])
            if seenProcesses.insert(l.pid).inserted {
                ev.append(["name": "process_name", "ph": "M", "pid": l.pid, "args": ["name": l.procname.isEmpty ? "pid \(l.pid)" : l.procname]])
            }
        }
        // Runs: pair enter/exit per loop (a stack per loop).
        var open: [LoopKey: [(mode: String, ts: Int64, depth: Int)]] = [:]
        for r in c.runs {
            guard let tid = tids[r.key] else { continue }
            if r.enter { open[r.key, default: []].append((r.mode, r.ts, r.depth)); continue }
            guard let o = open[r.key]?.popLast() else { continue }
            ev.append(["name": "run \(shortMode(o.mode))", "cat": "run", "ph": "X", "pid": r.key.pid, "tid": tid,
                       "ts": us(o.ts), "dur": Double(r.ts - o.ts) / 1000, "args": ["mode": o.mode, "depth": o.depth, "result": r.result]])
        }
        for row in c.rows {
            let it = row.record
            guard let tid = tids[it.key] else { continue }
            ev.append(["name": "iteration", "cat": "iteration", "ph": "X", "pid": it.key.pid, "tid": tid, "ts": us(it.begin),
                       "dur": Double(it.duration) / 1000,
                       "args": ["iteration": it.number, "busy_ns": it.busyNs, "handled_source": it.handledSource]])
            for s in it.sleeps {
                ev.append(["name": "sleep → \(s.reason.label)", "cat": "sleep", "ph": "X", "pid": it.key.pid, "tid": tid,
                           "ts": us(s.begin), "dur": Double(s.duration) / 1000, "args": ["reason": s.reason.label, "fd": s.fd]])
            }
            for cl in it.callouts {
                let name = cl.kind == .mainQueue ? "main-queue" : c.name(cl, pid: it.key.pid)
                ev.append(["name": "\(cl.kind.label) \(name.isEmpty ? "#\(cl.item)" : name)", "cat": cl.kind.label, "ph": "X",
                           "pid": it.key.pid, "tid": tid, "ts": us(cl.begin), "dur": Double(cl.duration) / 1000,
                           "args": ["item": cl.item, "detail": cl.detail]])
            }
        }
        if let strips {
            let bins = 200
            for l in report.loops {
                let key = LoopKey(pid: l.pid, loop: l.loop)
                let s = strips.strip(key, begin: report.trace.beginNs, end: report.trace.endNs, bins: bins)
                let width = Double(report.trace.endNs - report.trace.beginNs) / Double(bins)
                for (i, v) in s.enumerated() {
                    ev.append(["name": "busy ratio (loop \(l.loop))", "ph": "C", "pid": l.pid,
                               "ts": Double(i) * width / 1000, "args": ["busy": (v * 1000).rounded() / 1000]])
                }
            }
        }
        for (i, f) in c.flows.enumerated() {
            guard let tid = tids[f.to] else { continue }
            // A 1 µs slice on the requesting thread anchors the arrow's start.
            ev.append(["name": f.kind, "cat": "flow", "ph": "X", "pid": f.to.pid, "tid": f.fromTid, "ts": us(f.fromTs), "dur": 1.0])
            ev.append(["name": f.kind, "cat": "flow", "ph": "s", "id": i + 1, "pid": f.to.pid, "tid": f.fromTid, "ts": us(f.fromTs)])
            ev.append(["name": f.kind, "cat": "flow", "ph": "f", "bp": "e", "id": i + 1, "pid": f.to.pid, "tid": tid, "ts": us(f.toTs)])
        }
        let doc: [String: Any] = ["traceEvents": ev, "displayTimeUnit": "ns",
                                  "otherData": ["generator": "rltrace", "origin_monotonic_ns": origin]]
        return String(decoding: try JSONSerialization.data(withJSONObject: doc, options: [.sortedKeys]), as: UTF8.self) + "\n"
    }

    static func shortMode(_ m: String) -> String { m == "kCFRunLoopDefaultMode" ? "default" : m }
}
