/// The counts of an HdrHistogram with one fixed layout — lowest discernible value 1, three
/// significant digits, auto-resizing — as ``DurationAccumulator`` keeps them: the same buckets,
/// and so the same percentiles, minimum, maximum and bucket medians, as hdrhistogram-swift's
/// `Histogram<UInt64>(lowestDiscernibleValue: 1, …, numberOfSignificantValueDigits: .three)` with
/// `autoResize` (a test compares the two on random and edge values, merges included).
///
/// Why not the library (an exception made for measured speed, docs/benchmarks.md): its counts are
/// internal, so a percentile is found through its value iterator, about 60 instructions per
/// bucket from bucket 0 up (56 M instructions, ~12 ms after the trace is read, for the 40
/// distributions of `report` on a 3 M-event trace), and its record path reached two uninlined
/// calls per value through its generic layout fields (52 M instructions on the same run). Here the
/// layout is constants: a record is a shift, a count of leading zeros and an increment; a
/// percentile is a sum over plain counts.
final class DurationHistogram {
    /// 2 048 sub-buckets per bucket (`2 × 10³` rounded up to a power of two), half of them new in
    /// each bucket past the first; a value `v` is in bucket `53 − lzcnt(v | 2047)`.
    static let subBucketHalfCountMagnitude = 10
    static let subBucketHalfCount = 1 << subBucketHalfCountMagnitude
    static let subBucketMask: UInt64 = 2047
    static let leadingZeroCountBase = 53

    /// Counts by bucket index, `capacity` of them (zero beyond what was recorded).
    private(set) var counts: UnsafeMutablePointer<UInt64>
    private(set) var capacity: Int
    /// The number of values, the largest, and the smallest above 0 (`UInt64.max` when none).
    private(set) var totalCount: UInt64 = 0
    private(set) var maxValue: UInt64 = 0
    private(set) var minNonZeroValue: UInt64 = .max

    /// An empty histogram with room for values up to `highest` (it grows beyond).
    init(highest: UInt64 = 2047) {
        capacity = DurationHistogram.capacity(covering: highest)
        counts = .allocate(capacity: capacity)
        counts.initialize(repeating: 0, count: capacity)
    }

    /// A copy of `other`.
    init(copying other: DurationHistogram) {
        capacity = other.capacity
        counts = .allocate(capacity: capacity)
        counts.initialize(from: other.counts, count: capacity)
        totalCount = other.totalCount; maxValue = other.maxValue; minNonZeroValue = other.minNonZeroValue
    }

    deinit { counts.deallocate() }

    /// The bucket index of `v` (HdrHistogram's `countsIndexForValue`).
    @inline(__always)
    static func index(of v: UInt64) -> Int {
        let bucket = leadingZeroCountBase &- (v | subBucketMask).leadingZeroBitCount
        let sub = Int(truncatingIfNeeded: v &>> UInt64(bucket))
        return ((bucket &+ 1) &<< subBucketHalfCountMagnitude) &+ (sub &- subBucketHalfCount)
    }

    /// The lowest value of bucket `index` (HdrHistogram's `valueFromIndex`).
    @inline(__always)
    static func value(at index: Int) -> UInt64 {
        var bucket = (index &>> subBucketHalfCountMagnitude) &- 1
        var sub = (index & (subBucketHalfCount - 1)) &+ subBucketHalfCount
        if bucket < 0 { sub &-= subBucketHalfCount; bucket = 0 }
        return UInt64(sub) &<< UInt64(bucket)
    }

    /// How many values share bucket `index` (HdrHistogram's `sizeOfEquivalentRangeFor`: the
    /// lower half of bucket 0 and every bucket's upper half step by `2^bucket`).
    @inline(__always)
    static func width(at index: Int) -> UInt64 {
        let bucket = Swift.max(0, (index &>> subBucketHalfCountMagnitude) &- 1)
        return 1 &<< UInt64(bucket)
    }

    /// The highest value in the same bucket as the lowest value of `index`.
    @inline(__always)
    static func highest(at index: Int) -> UInt64 { value(at: index) &+ width(at: index) &- 1 }

    /// Counts covering every value up to `v`: whole buckets, as the library sizes them.
    static func capacity(covering v: UInt64) -> Int {
        let top = index(of: v)
        return ((top >> subBucketHalfCountMagnitude) + 1) << subBucketHalfCountMagnitude
    }

    /// Adds a value.
    @inline(__always)
    func record(_ v: UInt64) {
        let i = DurationHistogram.index(of: v)
        if i >= capacity { grow(covering: v) }
        counts[i] &+= 1
        totalCount &+= 1
        if v > maxValue { maxValue = v }
        if v < minNonZeroValue && v != 0 { minNonZeroValue = v }
    }

    /// Makes room for `v` (out of line: rare), at least doubling so a rising series grows a few times.
    @inline(never)
    func grow(covering v: UInt64) {
        let n = Swift.max(DurationHistogram.capacity(covering: v), Swift.min(capacity * 2, DurationHistogram.capacity(covering: .max)))
        let c = UnsafeMutablePointer<UInt64>.allocate(capacity: n)
        c.initialize(from: counts, count: capacity)
        (c + capacity).initialize(repeating: 0, count: n - capacity)
        counts.deallocate()
        counts = c
        capacity = n
    }

    /// Adds every value of `other` (HdrHistogram's `add`).
    func add(_ other: DurationHistogram) {
        if other.totalCount == 0 { return }
        // Every count of `other` lies at or below its maximum's bucket.
        let top = DurationHistogram.index(of: other.maxValue)
        if top >= capacity { grow(covering: other.maxValue) }
        for i in 0...top { counts[i] &+= other.counts[i] }
        totalCount &+= other.totalCount
        if other.maxValue > maxValue { maxValue = other.maxValue }
        if other.minNonZeroValue < minNonZeroValue { minNonZeroValue = other.minNonZeroValue }
    }

    /// The smallest value (HdrHistogram's `min`: 0 if a value was 0, else the smallest recorded).
    var min: UInt64 { (counts[0] > 0 || totalCount == 0) ? 0 : minNonZeroValue }

    /// The values at the percentiles `ps` (each 0…100, in any order), by HdrHistogram's rule
    /// (`valueAtPercentile`): the count at a percentile is rounded up from one ulp below it; the
    /// value is the first bucket reaching it, as its highest equivalent value, clamped to
    /// [min, max recorded]; 0 is the minimum, 100 and above the maximum. One pass over the counts.
    func values(atPercentiles ps: [Double]) -> [UInt64] {
        var out = [UInt64](repeating: 0, count: ps.count)
        guard totalCount > 0 else { return out }
        var thresholds: [(index: Int, count: UInt64)] = []
        for (i, p) in ps.enumerated() {
            if p == 0 { out[i] = min; continue }
            if p >= 100 { out[i] = maxValue; continue }
            let requested = Swift.min(Swift.max(p.nextDown, 0), 100)
            thresholds.append((i, Swift.max(1, UInt64((requested * Double(totalCount) / 100).rounded(.up)))))
        }
        thresholds.sort { $0.count < $1.count }
        let lo = min, hi = maxValue
        var next = 0, cumulative: UInt64 = 0
        forEachNonEmpty { i, c in
            cumulative &+= c
            while next < thresholds.count && cumulative >= thresholds[next].count {
                out[thresholds[next].index] = Swift.max(Swift.min(DurationHistogram.highest(at: i), hi), lo)
                next += 1
            }
            return next < thresholds.count
        }
        return out
    }

    /// Calls `body` with each non-empty bucket's median value (HdrHistogram's
    /// `medianEquivalentForValue`) and count, in increasing order.
    func forEachBucket(_ body: (UInt64, UInt64) -> Void) {
        forEachNonEmpty { i, c in
            body(DurationHistogram.value(at: i) &+ DurationHistogram.width(at: i) >> 1, c)
            return true
        }
    }

    /// Calls `body` with the index and count of each non-empty bucket, in increasing order, while it
    /// returns true: from the smallest value's bucket (none lies between it and bucket 0, the value
    /// 0), runs of empty buckets (most of a long tail's) skipped four at a time, up to the last count.
    @inline(__always)
    private func forEachNonEmpty(_ body: (Int, UInt64) -> Bool) {
        var seen: UInt64 = 0
        var i = min == 0 ? 0 : DurationHistogram.index(of: min)
        while seen < totalCount && i < capacity {
            if i &+ 4 <= capacity && (counts[i] | counts[i &+ 1] | counts[i &+ 2] | counts[i &+ 3]) == 0 { i &+= 4; continue }
            let c = counts[i]
            if c > 0 {
                seen &+= c
                if !body(i, c) { return }
            }
            i &+= 1
        }
    }
}
