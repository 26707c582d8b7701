/// Busy time per loop over the trace (top-level iterations minus sleeps), for the HTML report's
/// strip and the Chrome export's busy-ratio counter, in bounded memory: each loop keeps 4096 bins
/// whose width doubles (merging neighbours) whenever the trace outgrows them, so the resolution is
/// 1/2048–1/4096 of the trace's span however long it is. ``strip(_:begin:end:bins:)`` resamples
/// them to the bins asked for (assuming busy time spread evenly inside a fine bin).
public final class BusyStripCollector: LoopModelSink {
    static let fineBins = 4096
    /// Each loop's fine bins, by its number in `numbering`: loop `n`'s at `bins + n × fineBins`;
    /// and its bin width (ns). Kept outside Swift arrays and objects: an iteration's count or
    /// overlap is then a load and a store, with no retain of a strip object and no uniqueness
    /// check of its array (they were a twentieth of the Perfetto export's caller's thread,
    /// docs/benchmarks.md, "The Perfetto export: field order").
    private var bins: UnsafeMutablePointer<Int64>
    private var widths: UnsafeMutablePointer<Int64>
    private var capacity = 4
    private var numbering = LoopNumbering()
    private var origin: Int64?
    /// Creates a collector.
    public init() {
        bins = .allocate(capacity: capacity * Self.fineBins)
        widths = .allocate(capacity: capacity)
    }

    deinit {
        bins.deallocate()
        widths.deallocate()
    }

    /// The number of `key`'s strip (a new one, every bin 0 and 1 µs wide, at first sight).
    @inline(__always)
    private func stripNumber(_ key: LoopKey) -> Int {
        let n = numbering.number(key)
        if n >= stripCount { addStrip() }             // numbers are dense: n == stripCount
        return n
    }

    /// Strips made (loops seen).
    private var stripCount = 0

    @inline(never)
    private func addStrip() {
        if stripCount == capacity {
            let bigger = UnsafeMutablePointer<Int64>.allocate(capacity: 2 * capacity * Self.fineBins)
            bigger.update(from: bins, count: stripCount * Self.fineBins)
            bins.deallocate()
            bins = bigger
            let w = UnsafeMutablePointer<Int64>.allocate(capacity: 2 * capacity)
            w.update(from: widths, count: stripCount)
            widths.deallocate()
            widths = w
            capacity *= 2
        }
        (bins + stripCount * Self.fineBins).initialize(repeating: 0, count: Self.fineBins)
        widths[stripCount] = 1_000
        stripCount += 1
    }

    public func traceBegins(at ts: Int64, epochOffset: Int64) { if origin == nil { origin = ts } }

    /// Adds `sign` × the overlap of `[a, b)` to `key`'s bins.
    func add(_ key: LoopKey, _ a: Int64, _ b: Int64, sign: Int64) {
        guard b > a else { return }
        if origin == nil { origin = a }
        let o = origin!
        let n = stripNumber(key)
        let busy = bins + n * Self.fineBins
        let lo = max(a, o) &- o, hi = b &- o
        guard hi > lo else { return }
        // Grow: double the width until `hi` fits.
        while hi > widths[n] &* Int64(Self.fineBins) && widths[n] < Int64.max / Int64(2 * Self.fineBins) {
            for i in 0..<(Self.fineBins / 2) { busy[i] = busy[2 * i] &+ busy[2 * i + 1] }
            for i in (Self.fineBins / 2)..<Self.fineBins { busy[i] = 0 }
            widths[n] &*= 2
        }
        let width = widths[n]
        var i = Int(lo / width)
        while i < Self.fineBins {
            let bl = Int64(i) * width, bh = bl + width
            if bl >= hi { break }
            let overlap = min(hi, bh) - max(lo, bl)
            if overlap > 0 { busy[i] &+= sign * overlap }
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
        let n = stripNumber(key)
        let width = widths[n]
        if lo >= width &* Int64(Self.fineBins) { return add(key, t, t &+ 1, sign: 1) }
        bins[n &* Self.fineBins &+ Int(lo / width)] &+= 1
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
        guard let n = numbering.existing(key), n < stripCount, let o = origin else { return [Double](repeating: 0, count: bins) }
        let fine = self.bins + n * Self.fineBins, width = widths[n]
        var busy = [Double](repeating: 0, count: bins)
        for j in 0..<Self.fineBins where fine[j] != 0 {
            let fl = o + Int64(j) * width, fh = fl + width
            let lo = max(fl, begin), hi = min(fh, end)
            guard hi > lo else { continue }
            let perNs = Double(fine[j]) / Double(width)
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
