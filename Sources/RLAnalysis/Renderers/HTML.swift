/// `--format html`: one self-contained file (no network) with SVG plots: per-loop busy strip,
/// sleep and iteration histograms, callouts per item, and the hangs table.
public enum HTMLReportRenderer {
    /// Renders without a strip.
    public static func render(_ r: Report) -> String { render(r, strips: nil) }

    /// Renders, with busy strips when `strips` is given.
    public static func render(_ r: Report, strips: BusyStripCollector?) -> String {
        var o = """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>rltrace report</title>
        <style>
        body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
        h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
        table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
        th{background:#f4f4f4}td.l,th.l{text-align:left}.finding{color:#a40000;font-weight:600}
        .bar{fill:#4a7bd0}.busy{fill:#d9534f}.axis{font-size:11px;fill:#555}
        </style></head><body>
        <h1>rltrace report</h1>
        <p>\(r.trace.paths.map(esc).joined(separator: "<br>"))<br>\(r.trace.events) events (\(r.trace.runloopEvents) runloop) over \(formatDuration(r.trace.endNs - r.trace.beginNs))</p>

        """
        if r.trace.discardedEvents > 0 || r.trace.lostPackets > 0 {
            o += "<p class=\"finding\">Data lost: \(r.trace.discardedEvents) discarded events, \(r.trace.lostPackets) lost packets — figures near these ranges are incomplete.</p>\n"
        }
        let findings = TextReportRenderer().render(r).split(separator: "\n").filter { $0.hasPrefix("  • ") }
        o += "<h2>Findings</h2>\n"
        o += findings.isEmpty ? "<p>None: no hang, slow callout, late timer or spin.</p>\n"
            : "<ul>" + findings.map { "<li class=\"finding\">\(esc(String($0.dropFirst(4))))</li>" }.joined() + "</ul>\n"
        for l in r.loops {
            o += "<h2>Loop \(l.loop) — \(esc(l.procname)) pid \(l.pid), thread \(l.tid) \(esc(l.threadName))</h2>\n"
            o += "<p>\(l.iterations) iterations (\(Int(l.iterationsPerSecond.rounded()))/s), busy \(formatDuration(l.busyNs)) / asleep \(formatDuration(l.sleepNs)) (busy \(pct(l.busyRatio))), \(l.callouts) callouts, \(l.spuriousWakes) spurious wakes.</p>\n"
            if let strips {
                let bins = 400
                let s = strips.strip(LoopKey(pid: l.pid, loop: l.loop), begin: r.trace.beginNs, end: r.trace.endNs, bins: bins)
                o += "<h3>Busy over time</h3>\n<svg width=\"1000\" height=\"70\" viewBox=\"0 0 1000 70\" role=\"img\" aria-label=\"busy strip\">"
                for (i, v) in s.enumerated() where v > 0 {
                    let h = max(1, v * 50)
                    o += "<rect class=\"busy\" x=\"\(fmt(Double(i) * 1000 / Double(bins)))\" y=\"\(fmt(50 - h))\" width=\"\(fmt(1000 / Double(bins)))\" height=\"\(fmt(h))\"/>"
                }
                for h in l.hangs {
                    let x = Double(h.beginNs - r.trace.beginNs) / Double(max(1, r.trace.endNs - r.trace.beginNs)) * 1000
                    o += "<line x1=\"\(fmt(x))\" x2=\"\(fmt(x))\" y1=\"0\" y2=\"55\" stroke=\"#000\" stroke-dasharray=\"2\"/>"
                }
                o += "<text class=\"axis\" x=\"0\" y=\"66\">+0</text><text class=\"axis\" x=\"1000\" y=\"66\" text-anchor=\"end\">+\(formatDuration(r.trace.endNs - r.trace.beginNs))</text></svg>\n"
            }
            o += "<h3>Callouts per item</h3>\n<table><tr><th class=\"l\">kind</th><th class=\"l\">name</th><th>count</th><th>total</th><th>p50</th><th>p99</th><th>max</th></tr>\n"
            for i in l.items.prefix(20) {
                o += "<tr><td class=\"l\">\(i.kind)</td><td class=\"l\">\(esc(i.name))\(i.kind == "block" ? "" : " #\(i.item)")</td><td>\(i.count)</td><td>\(formatDuration(i.totalNs))</td><td>\(formatDuration(i.p50Ns))</td><td>\(formatDuration(i.p99Ns))</td><td>\(formatDuration(i.maxNs))</td></tr>\n"
            }
            o += "</table>\n"
            for (reason, h) in l.sleepHistogram.sorted(by: { $0.key < $1.key }) {
                o += "<h3>Sleeps ended by \(esc(reason))</h3>\n" + svgHistogram(h)
            }
            if !l.iterationHistogram.isEmpty { o += "<h3>Busy time per iteration</h3>\n" + svgHistogram(l.iterationHistogram) }
            o += "<h3>Hangs (≥ \(formatDuration(r.options.hangThresholdNs)))</h3>\n"
            if l.hangs.isEmpty { o += "<p>None.</p>\n" } else {
                o += "<table><tr><th>iteration</th><th>at</th><th>busy</th><th class=\"l\">held by</th></tr>\n"
                for h in l.hangs {
                    let c = h.culprit.map { "\($0.kind) \(esc($0.name)) (\(formatDuration($0.durationNs)))" } ?? "—"
                    o += "<tr><td>\(h.iteration)</td><td>+\(formatDuration(h.beginNs - r.trace.beginNs))</td><td>\(formatDuration(h.busyNs))</td><td class=\"l\">\(c)</td></tr>\n"
                }
                o += "</table>\n"
            }
        }
        o += "</body></html>\n"
        return o
    }

    static func svgHistogram(_ h: [String: Int]) -> String {
        let buckets = h.compactMap { k, v in Int(k).map { ($0, v) } }.sorted { $0.0 < $1.0 }
        guard let maxCount = buckets.map(\.1).max(), maxCount > 0 else { return "" }
        let w = 40, gap = 6, height = 120
        var o = "<svg width=\"\(buckets.count * (w + gap) + 10)\" height=\"\(height + 40)\" role=\"img\" aria-label=\"histogram\">"
        for (i, (k, v)) in buckets.enumerated() {
            let bh = max(1, Double(v) / Double(maxCount) * Double(height))
            let x = i * (w + gap) + 5
            o += "<rect class=\"bar\" x=\"\(x)\" y=\"\(fmt(Double(height) - bh))\" width=\"\(w)\" height=\"\(fmt(bh))\"><title>[\(formatDuration(k == 0 ? 0 : Int64(1) << k)), \(formatDuration(Int64(1) << (k + 1)))): \(v)</title></rect>"
            o += "<text class=\"axis\" x=\"\(x + w / 2)\" y=\"\(height + 14)\" text-anchor=\"middle\">\(v)</text>"
            o += "<text class=\"axis\" x=\"\(x + w / 2)\" y=\"\(height + 30)\" text-anchor=\"middle\">\(formatDuration(k == 0 ? 0 : Int64(1) << k))</text>"
        }
        return o + "</svg>\n"
    }

    static func fmt(_ d: Double) -> String { String((d * 10).rounded() / 10) }
    static func esc(_ s: String) -> String {
        var o = ""
        for c in s {
            switch c {
            case "<": o += "&lt;"
            case ">": o += "&gt;"
            case "&": o += "&amp;"
            case "\"": o += "&quot;"
            default: o.append(c)
            }
        }
        return o
    }
}
