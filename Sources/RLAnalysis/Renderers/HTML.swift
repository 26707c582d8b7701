import CTFReader
import Foundation
/// `--format html`: one self-contained file (no network) with SVG plots: per-loop busy strip,
/// sleep and iteration histograms, callouts per item, and the hangs table.
public enum HTMLReportRenderer {
    /// Renders without a strip.
    public static func render(_ r: Report) -> String { render(r, strips: nil) }

    /// Renders, with busy strips when `strips` is given.
    public static func render(_ r: Report, strips: BusyStripCollector?) -> String {
        var o = pageHead(title: "rltrace report", css: ".bar{fill:#4a7bd0}.busy{fill:#d9534f}.axis{font-size:11px;fill:#555}") + """
        <h1>rltrace report</h1>
        <p>\(r.trace.paths.map(esc).joined(separator: "<br>"))<br>\(r.trace.events) events (\(r.trace.runloopEvents) runloop) over \(formatDuration(r.trace.endNs - r.trace.beginNs))</p>

        """
        if r.trace.discardedEvents > 0 || r.trace.lostPackets > 0 {
            o += "<p class=\"finding\">Data lost: \(r.trace.discardedEvents) discarded events, \(r.trace.lostPackets) lost packets — figures near these ranges are incomplete.</p>\n"
        }
        let findings = TextReportRenderer().render(r).split(separator: "\n").filter { $0.hasPrefix("  • ") }
        o += "<h2>Findings</h2>\n"
        o += findings.isEmpty ? "<p>None: no hang, slow callout, late timer or spin.</p>\n"
            : "<ul>" + findings.map { "<li class=\"finding\">\(UntrustedText.htmlEntities(String($0.dropFirst(4))))</li>" }.joined() + "</ul>\n"
        for l in r.loops {
            o += "<h2>Loop \(l.loop) — \(r.trace.hosts != nil ? "host \(esc(l.host ?? "")) " : "")\(esc(l.procname)) pid \(l.pid), thread \(l.tid) \(esc(l.threadName))</h2>\n"
            o += "<p>\(l.iterations) iterations (\(Int(l.iterationsPerSecond.rounded()))/s), busy \(formatDuration(l.busyNs)) / asleep \(formatDuration(l.sleepNs)) (busy \(pct(l.busyRatio))), \(l.callouts) callouts, \(l.spuriousWakes) spurious wakes.</p>\n"
            if let strips {
                o += busyStrip(strips, l, r)
            }
            o += "<h3>Callouts per item</h3>\n<table><tr><th class=\"l\">kind</th><th class=\"l\">name</th><th>count</th><th>total</th><th>p50</th><th>p99</th><th>max</th></tr>\n"
            for i in l.items.prefix(20) {
                o += "<tr><td class=\"l\">\(i.kind)</td><td class=\"l\">\(esc(i.name))\(i.kind == "block" ? "" : " #\(i.item)")</td><td>\(i.count)</td><td>\(formatDuration(i.totalNs))</td><td>\(formatDuration(i.p50Ns))</td><td>\(formatDuration(i.p99Ns))</td><td>\(formatDuration(i.maxNs))</td></tr>\n"
            }
            o += "</table>\n"
            for (reason, h) in l.sleepHistogram.sorted(by: { $0.key < $1.key }) {
                o += svgHistogram(h, title: "Sleeps ended by \(reason): how long the loop slept", what: "sleeps")
            }
            if !l.iterationHistogram.isEmpty {
                o += svgHistogram(l.iterationHistogram, title: "Busy time per top-level iteration (iteration minus its sleeps)", what: "iterations")
            }
            o += "<h3>Hangs (≥ \(formatDuration(r.options.hangThresholdNs)))</h3>\n"
            if l.hangs.isEmpty { o += "<p>None.</p>\n" } else {
                o += "<table><tr><th>iteration</th><th>at</th><th>busy</th><th class=\"l\">held by</th></tr>\n"
                for h in l.hangs {
                    let c = h.culprit.map { "\($0.kind) \(esc($0.name)) (\(formatDuration($0.durationNs)))" } ?? "—"
                    o += "<tr><td>\(h.iteration)</td><td>+\(formatDuration(h.beginNs - r.trace.beginNs))</td><td>\(formatDuration(h.busyNs))</td><td class=\"l\">\(c)</td></tr>\n"
                }
                o += "</table>\n"
                for h in l.hangs where h.watchdog != nil || h.stacks != nil {
                    o += "<h3>Hang at +\(formatDuration(h.beginNs - r.trace.beginNs)) (iteration \(h.iteration)): the watchdog's stack samples</h3>\n"
                    o += "<pre>" + UntrustedText.htmlEntities(HangStackText.render(h, indent: "")) + "</pre>\n"
                }
            }
        }
        o += "</body></html>\n"
        return o
    }

    /// A nice step for `n` ticks over `[0, max]` (1, 2 or 5 × 10^k).
    static func tickStep(_ max: Double, ticks: Int) -> Double {
        guard max > 0 else { return 1 }
        let raw = max / Double(ticks)
        let p = pow(10, floor(log10(raw)))
        for m in [1.0, 2.0, 5.0, 10.0] where m * p >= raw { return m * p }
        return 10 * p
    }

    /// The start of an rltrace HTML page up to its `<body>`: the title and the style sheet the
    /// report and the diff share, plus `css`.
    static func pageHead(title: String, css: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(title)</title>
        <style>
        body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
        h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
        table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
        th{background:#f4f4f4}td.l,th.l{text-align:left}.finding{color:#a40000;font-weight:600}
        \(css)
        </style></head><body>

        """
    }

    /// An SVG chart's y axis: the axis line; a grid line and a tick label (`tick(value)`) every
    /// `step` from 0 to `yMax`; the axis title, rotated, at the left.
    static func yAxis(left: Int, top: Int, height: Int, width: Int, yMax: Double, step: Double, title: String,
                      tick: (Double) -> String) -> String {
        var o = "<line x1=\"\(left)\" x2=\"\(left)\" y1=\"\(top)\" y2=\"\(top + height)\" stroke=\"#555\"/>"
        var t = 0.0
        while t <= yMax + step / 2 {
            let y = Double(top + height) - t / yMax * Double(height)
            o += "<line x1=\"\(left - 4)\" x2=\"\(width - 10)\" y1=\"\(fmt(y))\" y2=\"\(fmt(y))\" stroke=\"#eee\"/>"
            o += "<text class=\"axis\" x=\"\(left - 6)\" y=\"\(fmt(y + 4))\" text-anchor=\"end\">\(tick(t))</text>"
            t += step
        }
        o += "<text class=\"axis\" x=\"12\" y=\"\(top + height / 2)\" transform=\"rotate(-90 12 \(top + height / 2))\" text-anchor=\"middle\">\(title)</text>"
        return o
    }

    /// A histogram of log2 buckets as an SVG bar chart: a title saying what is counted, a y axis of
    /// counts with ticks, each bar labelled with its bucket's range, and hover text with the exact
    /// range and count.
    static func svgHistogram(_ h: [String: Int], title: String, what: String) -> String {
        let buckets = h.compactMap { k, v in Int(k).map { ($0, v) } }.sorted { $0.0 < $1.0 }
        guard let maxCount = buckets.map(\.1).max(), maxCount > 0 else { return "" }
        let w = 64, gap = 6, height = 140, left = 56, top = 18
        let step = tickStep(Double(maxCount), ticks: 4)
        let yMax = ceil(Double(maxCount) / step) * step
        let width = left + buckets.count * (w + gap) + 10
        var o = "<h3>\(esc(title))</h3>\n<svg width=\"\(width)\" height=\"\(height + top + 58)\" role=\"img\" aria-label=\"\(esc(title))\">"
        // y axis: counts, with ticks and grid lines.
        o += yAxis(left: left, top: top, height: height, width: width, yMax: yMax, step: step, title: what) { "\(Int($0))" }
        for (i, (k, v)) in buckets.enumerated() {
            let lo = k == 0 ? 0 : Int64(1) << k, hi = Int64(1) << (k + 1)
            let bh = max(1, Double(v) / yMax * Double(height))
            let x = left + 6 + i * (w + gap)
            let range = "[\(formatDuration(lo)), \(formatDuration(hi)))"
            o += "<rect class=\"bar\" x=\"\(x)\" y=\"\(fmt(Double(top + height) - bh))\" width=\"\(w)\" height=\"\(fmt(bh))\"><title>\(range): \(v) \(what)</title></rect>"
            o += "<text class=\"axis\" x=\"\(x + w / 2)\" y=\"\(fmt(Double(top + height) - bh - 3))\" text-anchor=\"middle\">\(v)</text>"
            o += "<text class=\"axis\" x=\"\(x + w / 2)\" y=\"\(top + height + 14)\" text-anchor=\"middle\">\(formatDuration(lo))–</text>"
            o += "<text class=\"axis\" x=\"\(x + w / 2)\" y=\"\(top + height + 27)\" text-anchor=\"middle\">\(formatDuration(hi))</text>"
        }
        o += "<text class=\"axis\" x=\"\(left + (width - left) / 2)\" y=\"\(top + height + 46)\" text-anchor=\"middle\">duration (log2 buckets: from ≤ d &lt; to)</text>"
        return o + "</svg>\n"
    }

    /// The loop's busy ratio over the trace: a 0–100 % y scale with grid lines, a time axis with
    /// ticks (time after the trace start), hangs marked, and hover text per bin.
    static func busyStrip(_ strips: BusyStripCollector, _ l: LoopReport, _ r: Report) -> String {
        let bins = 400, left = 44, plotW = 920, height = 80, top = 8
        let span = max(1, r.trace.endNs - r.trace.beginNs)
        let s = strips.strip(LoopKey(pid: l.pid | (Int64(r.trace.hosts?.firstIndex { $0.name == l.host } ?? 0) << LoopKey.hostShift), loop: l.loop), begin: r.trace.beginNs, end: r.trace.endNs, bins: bins)
        var o = "<h3>Busy over time: share of each \(formatDuration(span / Int64(bins))) the loop was busy (not asleep)</h3>\n"
        o += "<svg width=\"\(left + plotW + 20)\" height=\"\(height + top + 40)\" role=\"img\" aria-label=\"busy over time\">"
        for pct in [0, 25, 50, 75, 100] {
            let y = Double(top + height) - Double(pct) / 100 * Double(height)
            o += "<line x1=\"\(left)\" x2=\"\(left + plotW)\" y1=\"\(fmt(y))\" y2=\"\(fmt(y))\" stroke=\"#eee\"/>"
            o += "<text class=\"axis\" x=\"\(left - 5)\" y=\"\(fmt(y + 4))\" text-anchor=\"end\">\(pct) %</text>"
        }
        let bw = Double(plotW) / Double(bins)
        for (i, v) in s.enumerated() where v > 0 {
            let h = max(1, v * Double(height))
            let at = Int64(Double(span) * Double(i) / Double(bins))
            o += "<rect class=\"busy\" x=\"\(fmt(Double(left) + Double(i) * bw))\" y=\"\(fmt(Double(top + height) - h))\" width=\"\(fmt(bw))\" height=\"\(fmt(h))\"><title>+\(formatDuration(at)): busy \(pct(v))</title></rect>"
        }
        for h in l.hangs {
            let x = Double(left) + Double(h.beginNs - r.trace.beginNs) / Double(span) * Double(plotW)
            o += "<line x1=\"\(fmt(x))\" x2=\"\(fmt(x))\" y1=\"\(top)\" y2=\"\(top + height)\" stroke=\"#000\" stroke-dasharray=\"3\"><title>hang: iteration \(h.iteration), busy \(formatDuration(h.busyNs))</title></line>"
        }
        // Time axis: ticks at a round step after the trace start.
        let step = Int64(tickStep(Double(span), ticks: 8))
        o += "<line x1=\"\(left)\" x2=\"\(left + plotW)\" y1=\"\(top + height)\" y2=\"\(top + height)\" stroke=\"#555\"/>"
        var t: Int64 = 0
        while t <= span && step > 0 {
            let x = Double(left) + Double(t) / Double(span) * Double(plotW)
            o += "<line x1=\"\(fmt(x))\" x2=\"\(fmt(x))\" y1=\"\(top + height)\" y2=\"\(top + height + 4)\" stroke=\"#555\"/>"
            o += "<text class=\"axis\" x=\"\(fmt(x))\" y=\"\(top + height + 16)\" text-anchor=\"middle\">+\(formatDuration(t))</text>"
            t += step
        }
        o += "<text class=\"axis\" x=\"\(left + plotW / 2)\" y=\"\(top + height + 32)\" text-anchor=\"middle\">time after the trace start (dashed: hangs)</text>"
        return o + "</svg>\n"
    }

    static func fmt(_ d: Double) -> String { String((d * 10).rounded() / 10) }
    /// Text from the trace (names, paths) for HTML: ``UntrustedText/html(_:)``.
    static func esc(_ s: String) -> String { UntrustedText.html(s) }
}
