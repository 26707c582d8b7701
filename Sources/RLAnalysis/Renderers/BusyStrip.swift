/// Busy time per loop over the trace (top-level iterations minus sleeps), for the HTML report's
/// strip and the Chrome export's busy-ratio counter, in bounded memory: each loop keeps 4096 bins
/// whose width doubles (merging neighbours) whenever the trace outgrows them, so the resolution is
/// 1/2048–1/4096 of the trace's span however long it is. ``strip(_:begin:end:bins:)`` resamples
/// them to the bins asked for (assuming busy time spread evenly inside a fine bin).
public final class BusyStripCollector: LoopModelSink {
    static let fineBins = 4096
    final class Strip {
        var busy = [Int64](repeating: 0, count: BusyStripCollector.fineBins)
        var width: Int64 = 1_000          // ns per fine bin
    }
    /// Each loop's strip, by its number in `numbering`.
    private var strips: [Strip] = []
    private var numbering = LoopNumbering()
    private var origin: Int64?
    /// Creates a collector.
    public init() {}

    public func traceBegins(at ts: Int64, epochOffset: Int64) { if origin == nil { origin = ts } }

    private func strip(_ key: LoopKey) -> Strip {
        let n = numbering.number(key)
        if n == strips.count { strips.append(Strip()) }
        return strips[n]
    }

    /// Adds `sign` × the overlap of `[a, b)` to `key`'s bins.
    func add(_ key: LoopKey, _ a: Int64, _ b: Int64, sign: Int64) {
        guard b > a else { return }
        if origin == nil { origin = a }
        let o = origin!
        let s = strip(key)
        let lo = max(a, o) &- o, hi = b &- o
        guard hi > lo else { return }
        // Grow: double the width until `hi` fits.
        while hi > s.width &* Int64(Self.fineBins) && s.width < Int64.max / Int64(2 * Self.fineBins) {
            for i in 0..<(Self.fineBins / 2) { s.busy[i] = s.busy[2 * i] &+ s.busy[2 * i + 1] }
            for i in (Self.fineBins / 2)..<Self.fineBins { s.busy[i] = 0 }
            s.width &*= 2
        }
        var i = Int(lo / s.width)
        while i < Self.fineBins {
            let bl = Int64(i) * s.width, bh = bl + s.width
            if bl >= hi { break }
            let overlap = min(hi, bh) - max(lo, bl)
            if overlap > 0 { s.busy[i] &+= sign * overlap }
            i += 1
        }
    }

    /// ``add(_:_:_:sign:)`` of `[t, t + 1)` with sign 1 — one count at `t` (the Perfetto export's
    /// iterations per bin), without the general overlap loop.
    func count(_ key: LoopKey, at t: Int64) {
        guard t < .max else { return }
        if origin == nil { origin = t }
        let lo = t &- origin!
        guard lo >= 0 else { return }
        let s = strip(key)
        if lo >= s.width &* Int64(Self.fineBins) { return add(key, t, t &+ 1, sign: 1) }
        s.busy[Int(lo / s.width)] &+= 1
    }

    public func iteration(_ it: IterationRecord, of loop: LoopInfo) {
        if it.depth == 0 { add(loop.key, it.begin, it.end, sign: 1) }
    }
    public func sleep(_ s: SleepRecord, of key: LoopKey) { add(key, s.begin, s.end, sign: -1) }

    /// Busy fraction (0…1) of each of `bins` equal slices of `[begin, end]` for `key`.
    public func strip(_ key: LoopKey, begin: Int64, end: Int64, bins: Int) -> [Double] {
        guard end > begin, bins > 0 else { return [] }
        let span = end - begin
        // Integer bin edges: edge(i) = begin + span·i/bins (no float drift, always terminates).
        func edge(_ i: Int) -> Int64 { begin + Int64((Double(span) * Double(i) / Double(bins)).rounded(.down)) }
        guard let n = numbering.existing(key), let o = origin else { return [Double](repeating: 0, count: bins) }
        let s = strips[n]
        var busy = [Double](repeating: 0, count: bins)
        for j in 0..<Self.fineBins where s.busy[j] != 0 {
            let fl = o + Int64(j) * s.width, fh = fl + s.width
            let lo = max(fl, begin), hi = min(fh, end)
            guard hi > lo else { continue }
            let perNs = Double(s.busy[j]) / Double(s.width)
            var i = min(bins - 1, Int(Double(lo - begin) / Double(span) * Double(bins)))
            while i > 0 && edge(i) > lo { i -= 1 }
            while i < bins && edge(i) < hi {
                let overlap = min(hi, edge(i + 1)) - max(lo, edge(i))
                if overlap > 0 { busy[i] += perNs * Double(overlap) }
                i += 1
            }
        }
        return (0..<bins).map { i in
            let w = Double(edge(i + 1) - edge(i))
            return w > 0 ? min(1, max(0, busy[i] / w)) : 0
        }
    }
}
