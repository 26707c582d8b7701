import CTFReader
import Foundation

/// `rltrace diff` as text: regressions first, then per loop its figures and items by impact.
public enum TextDiffRenderer {
    /// The text (every figure `BASE → NEW (change)` with its sample counts `n BASE→NEW`).
    public static func render(_ d: TraceDiff) -> String {
        var o = "rltrace diff — BASE \(side(d.base)) → NEW \(side(d.new))\n"
        o += "significance: Mann–Whitney U (whole distribution) and the exceedance test above BASE's p99 (slow tail), α = \(d.alpha), Bonferroni ×2\n"
        for n in d.notes { o += "note: \(UntrustedText.terminal(n))\n" }
        o += "\nregressions (significantly slower, by at least +\(formatDuration(Int64(d.minImpactNsPerSecond)))/s and +\(Int((d.minChange * 100).rounded())) %; by added time per second of run):\n"
        if d.regressions.isEmpty { o += "  none\n" }
        for r in d.regressions {
            o += "  • \(loopLabel(r.procname, r.threadName)): \(r.kind) \"\(UntrustedText.terminal(r.name))\" \(impactText(r.impactNsPerSecond)) (\(r.direction), p \(pValueText(r.pValue)))\n"
        }
        for l in d.loops {
            o += "\n" + loopHeader(l) + "\n"
            guard l.status == "both" else {
                o += "  \(l.status == "added" ? "only in NEW" : "only in BASE"): \(l.items.count) items, \(describe(l.iterations, count: true)) iterations\n"
                continue
            }
            o += "  span \(describe(l.spanNs)) · iterations \(describe(l.iterations, count: true)) (\(rate(l.iterationsPerSecond.base)) → \(rate(l.iterationsPerSecond.new)))\n"
            o += "  busy \(describe(l.busyRatio, ratio: true)) n \(l.busyRatio.nBase)→\(l.busyRatio.nNew) iterations, \(verdict(l.busyTest))\n"
            o += "  hangs \(describe(l.hangs, count: true)) · spins \(describe(l.spins, count: true)) · callouts \(describe(l.callouts, count: true))\n"
            let wakes = l.wakeReasonsPerSecond.sorted { $0.key < $1.key }.map { "\(UntrustedText.terminal($0.key)) \(rate($0.value.base)) → \(rate($0.value.new)) (n \($0.value.nBase)→\($0.value.nNew))" }
            if !wakes.isEmpty { o += "  wakes/s: " + wakes.joined(separator: " · ") + "\n" }
            for t in l.timerLateness {
                o += "  timer lateness \"\(UntrustedText.terminal(t.name))\": p50 \(describe(t.p50Ns)) · p99 \(describe(t.p99Ns)) · max \(describe(t.maxNs)) (fires \(t.count.nBase)→\(t.count.nNew))\n"
            }
            o += "  items by impact (added time per second of run):\n"
            for i in l.items { o += item(i) }
        }
        if let f = d.failOn {
            o += "\n--fail-on \(UntrustedText.terminal(f.conditions.joined(separator: ","))): " + (f.held.isEmpty ? "no condition held\n" : "\(f.held.count) held\n")
            for h in f.held { o += "  ✗ \(UntrustedText.terminal(h))\n" }
            for u in f.unchecked { o += "  ? \(UntrustedText.terminal(u))\n" }
        }
        return o
    }

    static func item(_ i: ItemDiff) -> String {
        let label = "    \(pad(i.kind, 10))\"\(UntrustedText.terminal(i.name))\""
        if i.status != "both" {
            let f = i.status == "added" ? i.p50Ns.new : i.p50Ns.base, n = i.status == "added" ? i.count.nNew : i.count.nBase
            let total = i.status == "added" ? i.totalNs.new : i.totalNs.base
            return label + " — \(i.status == "added" ? "ADDED (only in NEW)" : "REMOVED (only in BASE)"): \(n)×, total \(formatDuration(Int64(total ?? 0))), p50 \(f.map { formatDuration(Int64($0)) } ?? "n/a"), impact \(impactText(i.impactNsPerSecond))\n"
        }
        var o = label + " — \(verdict(i.test)) · impact \(impactText(i.impactNsPerSecond))\n"
        o += "        n \(i.count.nBase)→\(i.count.nNew): count \(describe(i.count, count: true)) · rate \(rate(i.ratePerSecond.base)) → \(rate(i.ratePerSecond.new))\n"
        o += "        p50 \(describe(i.p50Ns)) · p90 \(describe(i.p90Ns)) · p99 \(describe(i.p99Ns)) · max \(describe(i.maxNs))\n"
        o += "        total \(describe(i.totalNs)) · per second \(describe(i.timePerSecondNs))\n"
        if let mw = i.test.mannWhitney, let t = i.test.tail {
            o += "        tests: U p \(pValueText(mw.pValue)), P(NEW>BASE) \(String(format: "%.3f", mw.effect)) · above \(formatDuration(t.thresholdNs)): \(t.above2)/\(t.n2) → \(t.above1)/\(t.n1), p \(pValueText(t.pValue))\n"
        }
        return o
    }

    static func verdict(_ t: ChangeTest) -> String {
        guard t.available else { return "significance n/a (\(t.reason ?? ""))" }
        switch t.direction {
        case "slower": return "SLOWER (p \(pValueText(t.pValue)))"
        case "faster": return "faster (p \(pValueText(t.pValue)))"
        case "mixed": return "MIXED: bulk and tail moved apart (p \(pValueText(t.pValue)))"
        default: return "no significant change (p \(pValueText(t.pValue)))"
        }
    }

    static func side(_ i: DiffInput) -> String {
        "\(UntrustedText.terminal(i.path)) (\(i.source == "trace" ? "trace" : i.reportSchema + (i.distributions ? " with distributions" : "")), \(formatDuration(i.spanNs)))"
    }
    /// `loop PROCNAME "THREAD"`, the names in terminal form (``UntrustedText/terminal(_:)``).
    static func loopLabel(_ p: String, _ t: String) -> String { "loop \(p.isEmpty ? "?" : UntrustedText.terminal(p)) \"\(UntrustedText.terminal(t))\"" }
    static func loopHeader(_ l: LoopDiff) -> String {
        let ids = "loop \(l.baseLoop.map(String.init) ?? "—") → \(l.newLoop.map(String.init) ?? "—"), pid \(l.basePid.map(String.init) ?? "—") → \(l.newPid.map(String.init) ?? "—")"
        return loopLabel(l.procname, l.threadName) + " (\(ids))" + (l.status == "both" ? "" : l.status == "added" ? " — ADDED" : " — REMOVED")
    }
    static func rate(_ x: Double?) -> String { x.map { format1($0) + "/s" } ?? "—" }
    static func impactText(_ x: Double) -> String { (x >= 0 ? "+" : "") + formatDuration(Int64(x.rounded())) + "/s" }
}
