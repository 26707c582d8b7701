import Foundation
import CTFReader
import RLAnalysis

/// The columns of `rltrace top`'s table and which of them fit a terminal's width. The loop, busy
/// %, p99 and the worst / hang column always show; the others are dropped least important first
/// (discarded events, thread id, host, p50, thread name, spins, late timers, iterations/s, process),
/// so an 80-column terminal still shows what is hung and how badly.
struct TopLayout {
    /// A column: title, width, alignment, and how much it matters (nil: always shown; a higher
    /// number is kept longer).
    struct Column {
        enum ID { case host, process, tid, thread, loop, rate, busy, p50, p99, late, spin, disc }
        var id: ID
        var title: String
        var width: Int
        var right: Bool
        var keep: Int?
    }

    /// The worst / hang column's least width: `▶ HANG 2.50s timer "parser"` fits.
    static let hangColumnMin = 28

    /// The columns shown, in display order.
    let columns: [Column]

    /// The columns that fit `width` terminal columns (with the worst / hang column after them).
    init(width: Int, hostWidth: Int) {
        let all: [Column] = [
            Column(id: .host, title: "HOST", width: hostWidth, right: false, keep: 3),
            Column(id: .process, title: "PROCESS", width: width >= 120 ? 22 : 16, right: false, keep: 9),
            Column(id: .tid, title: "TID", width: 7, right: true, keep: 2),
            Column(id: .thread, title: "THREAD", width: 12, right: false, keep: 5),
            Column(id: .loop, title: "LOOP", width: 5, right: true, keep: nil),
            Column(id: .rate, title: "IT/S", width: 8, right: true, keep: 8),
            Column(id: .busy, title: "BUSY%", width: 6, right: true, keep: nil),
            Column(id: .p50, title: "P50", width: 8, right: true, keep: 4),
            Column(id: .p99, title: "P99", width: 8, right: true, keep: nil),
            Column(id: .late, title: "LATE", width: 4, right: true, keep: 7),
            Column(id: .spin, title: "SPIN", width: 4, right: true, keep: 6),
            Column(id: .disc, title: "DISC", width: 5, right: true, keep: 1),
        ]
        // Each column takes its width and a separating space; the hang column follows two spaces.
        var used = all.filter { $0.keep == nil }.reduce(0) { $0 + $1.width + 1 } + 1 + TopLayout.hangColumnMin
        var shown = Set(all.indices.filter { all[$0].keep == nil })
        for i in all.indices.filter({ all[$0].keep != nil }).sorted(by: { all[$0].keep! > all[$1].keep! }) {
            if used + all[i].width + 1 <= width { used += all[i].width + 1; shown.insert(i) }
        }
        columns = all.indices.filter { shown.contains($0) }.map { all[$0] }
    }

    /// The header line.
    func header() -> String {
        columns.map { pad($0.title, $0.width, right: $0.right) }.joined(separator: " ") + "  WORST / HANG"
    }

    /// One loop's line (`host`: the host label).
    func row(_ r: TopLoopRow, host: String) -> String {
        var cells: [String] = []
        for c in columns {
            let v: String
            switch c.id {
            case .host: v = host
            case .process: v = "\(UntrustedText.terminal(r.procname))[\(r.pid)]"
            case .tid: v = "\(r.tid)"
            case .thread: v = r.threadName.isEmpty ? "-" : UntrustedText.terminal(r.threadName)
            case .loop: v = "\(r.loop)"
            case .rate: v = String(format: "%.1f", r.iterationsPerSecond)
            case .busy: v = String(format: "%.1f", r.busyRatio * 100)
            case .p50: v = r.calloutP50Ns.map { formatDuration($0) } ?? "-"
            case .p99: v = r.calloutP99Ns.map { formatDuration($0) } ?? "-"
            case .late: v = "\(r.lateTimers)"
            case .spin: v = "\(r.spins)"
            case .disc: v = "\(r.discardedEvents)"
            }
            cells.append(pad(v, c.width, right: c.right))
        }
        var l = cells.joined(separator: " ") + "  "
        if let h = r.hang {
            l += "▶ HANG \(formatDuration(h.durationNs)) \(UntrustedText.terminal(h.kind))\(h.name.isEmpty ? "" : " \"\(UntrustedText.terminal(h.name))\"") (\(UntrustedText.terminal(h.source))\(Self.cpuNote(h)))"
        } else if let w = r.worst {
            l += "\(UntrustedText.terminal(w.kind)) \"\(UntrustedText.terminal(w.name))\" \(formatDuration(w.durationNs))"
        } else {
            l += "-"
        }
        if !r.hangs.isEmpty {
            l += "  [hang\(r.hangs.count == 1 ? "" : "s"): " + r.hangs.map {
                "\(UntrustedText.terminal($0.kind)) \"\(UntrustedText.terminal($0.name))\" \(formatDuration($0.durationNs))"
                    + ($0.state.map { s in " \(s)" } ?? "")
            }.joined(separator: ", ") + "]"
        }
        return l
    }

    /// `, on CPU 3ms: blocked` when the hang's CPU time is known.
    static func cpuNote(_ h: TopHang) -> String {
        guard let c = h.onCpuNs, let s = h.state else { return "" }
        return ", on CPU \(formatDuration(c)): \(s)"
    }

    private func pad(_ s: String, _ n: Int, right: Bool) -> String {
        let c = s.count
        if c > n { return String(s.prefix(max(0, n - 1))) + "…" }
        let sp = String(repeating: " ", count: n - c)
        return right ? sp + s : s + sp
    }
}
