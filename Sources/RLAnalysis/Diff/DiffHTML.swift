import CTFReader
import Foundation

/// `rltrace diff --format html`: one self-contained file (no network): the regressions, and per loop
/// its figures and, per item, the BASE and NEW duration distributions overlaid on log2 buckets.
public enum HTMLDiffRenderer {
    typealias H = HTMLReportRenderer

    /// The HTML page.
    public static func render(_ d: TraceDiff) -> String {
        var o = H.pageHead(title: "rltrace diff", css: ".base{fill:#4a7bd0;fill-opacity:.75}.new{fill:#e8833a;fill-opacity:.75}.axis{font-size:11px;fill:#555}") + """
        <h1>rltrace diff</h1>
        <p>BASE: \(H.esc(d.base.path)) (\(d.base.source), span \(formatDuration(d.base.spanNs)))<br>NEW: \(H.esc(d.new.path)) (\(d.new.source), span \(formatDuration(d.new.spanNs)))<br>
        Significance: Mann–Whitney U on the whole distribution and the exceedance test above BASE's p99, α = \(d.alpha) (Bonferroni ×2).</p>

        """
        for n in d.notes { o += "<p><b>Note:</b> \(H.esc(n))</p>\n" }
        o += "<h2>Regressions</h2>\n"
        o += d.regressions.isEmpty ? "<p>None: no item got significantly slower.</p>\n" : "<ul>" + d.regressions.map {
            "<li class=\"finding\">\(UntrustedText.htmlEntities(TextDiffRenderer.loopLabel($0.procname, $0.threadName))): \(H.esc($0.kind)) “\(H.esc($0.name))” \(TextDiffRenderer.impactText($0.impactNsPerSecond)) (\($0.direction), p \(pValueText($0.pValue)))</li>"
        }.joined() + "</ul>\n"
        if let f = d.failOn {
            o += "<h2>--fail-on \(H.esc(f.conditions.joined(separator: ",")))</h2>\n"
            o += f.held.isEmpty ? "<p>No condition held.</p>\n" : "<ul>" + f.held.map { "<li class=\"finding\">\(H.esc($0))</li>" }.joined() + "</ul>\n"
        }
        for l in d.loops {
            o += "<h2>\(UntrustedText.htmlEntities(TextDiffRenderer.loopHeader(l)))</h2>\n"
            o += "<table><tr><th class=\"l\">figure</th><th>BASE</th><th>NEW</th><th>change</th><th>n BASE → NEW</th></tr>\n"
            o += row("iterations", l.iterations, count: true) + row("busy", l.busyRatio, ratio: true, note: TextDiffRenderer.verdict(l.busyTest))
            o += row("hangs", l.hangs, count: true) + row("spins", l.spins, count: true) + row("callouts", l.callouts, count: true)
            for (k, v) in l.wakeReasonsPerSecond.sorted(by: { $0.key < $1.key }) { o += row("wakes/s: \(k)", v, rate: true) }
            for t in l.timerLateness { o += row("timer lateness “\(t.name)” p99", t.p99Ns) }
            o += "</table>\n"
            for i in l.items { o += item(i) }
        }
        return o + "</body></html>\n"
    }

    static func row(_ label: String, _ f: FigureChange, count: Bool = false, ratio: Bool = false, rate: Bool = false, note: String? = nil) -> String {
        func v(_ x: Double?) -> String {
            guard let x else { return "—" }
            return ratio ? pct(x) : rate ? format1(x) : count ? String(Int64(x.rounded())) : formatDuration(Int64(x.rounded()))
        }
        var change = "—"
        if let c = f.change {
            change = ratio ? "\(c >= 0 ? "+" : "")\(format1(c * 100))pt" : f.changePct.map { ($0 >= 0 ? "+" : "") + percentText($0) } ?? (c == 0 ? "0" : v(c))
        }
        return "<tr><td class=\"l\">\(H.esc(label))\(note.map { "<br><small>\(H.esc($0))</small>" } ?? "")</td><td>\(v(f.base))</td><td>\(v(f.new))</td><td>\(change)</td><td>\(f.nBase) → \(f.nNew)</td></tr>\n"
    }

    static func item(_ i: ItemDiff) -> String {
        let title = "\(i.kind) “\(i.name)” — \(i.status == "both" ? TextDiffRenderer.verdict(i.test) : i.status == "added" ? "only in NEW" : "only in BASE") · impact \(TextDiffRenderer.impactText(i.impactNsPerSecond))"
        var o = "<h3>\(H.esc(title))</h3>\n<table><tr><th class=\"l\">figure</th><th>BASE</th><th>NEW</th><th>change</th><th>n BASE → NEW</th></tr>\n"
        o += row("count", i.count, count: true) + row("callouts/s", i.ratePerSecond, rate: true)
        o += row("p50", i.p50Ns) + row("p90", i.p90Ns) + row("p99", i.p99Ns) + row("max", i.maxNs)
        o += row("total", i.totalNs) + row("time per second", i.timePerSecondNs) + "</table>\n"
        if let mw = i.test.mannWhitney, let t = i.test.tail {
            o += "<p><small>Mann–Whitney U = \(format1(mw.u)), z = \(String(format: "%.2f", mw.z)), p = \(pValueText(mw.pValue)), P(NEW &gt; BASE) = \(String(format: "%.3f", mw.effect)); above \(formatDuration(t.thresholdNs)) (BASE's p99): BASE \(t.above2)/\(t.n2), NEW \(t.above1)/\(t.n1), exceedance p = \(pValueText(t.pValue)).</small></p>\n"
        }
        if i.baseHistogram != nil || i.newHistogram != nil {
            o += overlay(base: i.baseHistogram ?? [:], new: i.newHistogram ?? [:], title: "Durations of \(i.kind) “\(i.name)”: BASE (n = \(i.count.nBase)) and NEW (n = \(i.count.nNew)) overlaid")
        } else {
            o += "<p><small>No distributions (a report JSON written without --distributions): no plot, significance n/a.</small></p>\n"
        }
        return o
    }

    /// Two log2-bucket histograms overlaid as shares of their own sample (they differ in size): a
    /// title, a legend, a y axis in % with ticks, bucket ranges under the bars, and hover text with
    /// each bucket's exact range, counts and shares.
    static func overlay(base: [String: Int], new: [String: Int], title: String) -> String {
        let nb = max(1, base.values.reduce(0, +)), nn = max(1, new.values.reduce(0, +))
        let keys = Set(base.keys).union(new.keys).compactMap { Int($0) }
        guard let lo = keys.min(), let hi = keys.max() else { return "" }
        let share = { (h: [String: Int], n: Int, k: Int) in Double(h[String(k)] ?? 0) / Double(n) * 100 }
        let maxShare = (lo...hi).map { max(share(base, nb, $0), share(new, nn, $0)) }.max() ?? 1
        let w = 56, gap = 8, height = 150, left = 72, top = 30
        let step = H.tickStep(maxShare, ticks: 4), yMax = max(step, ceil(maxShare / step) * step)
        let width = max(680, left + (hi - lo + 1) * (w + gap) + 20)
        var o = "<svg width=\"\(width)\" height=\"\(height + top + 60)\" role=\"img\" aria-label=\"\(H.esc(title))\">"
        o += "<text x=\"\(left)\" y=\"14\" font-weight=\"600\" font-size=\"13\">\(H.esc(title))</text>"
        o += "<rect class=\"base\" x=\"\(left)\" y=\"20\" width=\"10\" height=\"8\"/><text class=\"axis\" x=\"\(left + 14)\" y=\"28\">BASE</text>"
        o += "<rect class=\"new\" x=\"\(left + 60)\" y=\"20\" width=\"10\" height=\"8\"/><text class=\"axis\" x=\"\(left + 74)\" y=\"28\">NEW</text>"
        o += H.yAxis(left: left, top: top, height: height, width: width, yMax: yMax, step: step, title: "% of its callouts") { "\(format1($0)) %" }
        for (i, k) in (lo...hi).enumerated() {
            let from = k == 0 ? Int64(0) : Int64(1) << k, to = Int64(1) << (k + 1)
            let range = "[\(formatDuration(from)), \(formatDuration(to)))"
            let x = left + 6 + i * (w + gap)
            for (cls, h, n, dx, label) in [("base", base, nb, 0, "BASE"), ("new", new, nn, w / 2, "NEW")] {
                let c = h[String(k)] ?? 0, s = share(h, n, k)
                let bh = c == 0 ? 0 : max(1, s / yMax * Double(height))
                o += "<rect class=\"\(cls)\" x=\"\(x + dx)\" y=\"\(H.fmt(Double(top + height) - bh))\" width=\"\(w / 2)\" height=\"\(H.fmt(bh))\"><title>\(label) \(range): \(c) of \(n) callouts (\(format1(s)) %)</title></rect>"
            }
            o += "<text class=\"axis\" x=\"\(x + w / 2)\" y=\"\(top + height + 14)\" text-anchor=\"middle\">\(formatDuration(from))–</text>"
            o += "<text class=\"axis\" x=\"\(x + w / 2)\" y=\"\(top + height + 27)\" text-anchor=\"middle\">\(formatDuration(to))</text>"
        }
        o += "<text class=\"axis\" x=\"\(left + (width - left) / 2)\" y=\"\(top + height + 46)\" text-anchor=\"middle\">callout duration (log2 buckets: from ≤ d &lt; to)</text>"
        return o + "</svg>\n"
    }
}
