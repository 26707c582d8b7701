import Histogram
import Testing
@testable import RLAnalysis

// DurationHistogram is HdrHistogram's layout (lowest discernible value 1, three significant
// digits, auto-resizing) kept as plain counts for speed (docs/benchmarks.md): every figure the
// report takes from it must be what hdrhistogram-swift gives for the same values.

@Suite("DurationHistogram against hdrhistogram-swift")
struct DurationHistogramTests {
    /// Values of every magnitude up to 2^46 (the library's value iterator sums count × value and
    /// traps past 2^64; the edges up to Int64.max are in ``edges()``): exact ones (below 2 048),
    /// each bucket's edges, zeros, a body and a long tail.
    static func values(seed: UInt64, count: Int) -> [UInt64] {
        var x = seed
        var out: [UInt64] = [0, 1, 2047, 2048, 2049, 4095, 4096, 1 << 20, (1 << 20) - 1, 1 << 46]
        for k in 11..<46 { out += [(1 << UInt64(k)) - 1, 1 << UInt64(k), (1 << UInt64(k)) + 1] }
        for i in 0..<count {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            switch i % 4 {
            case 0: out.append((x >> 33) % 5_000)                          // exact range and just above
            case 1: out.append((x >> 20) % 2_000_000)                      // microseconds to 2 ms
            case 2: out.append((x >> 18) >> ((x >> 2) % 46))               // log-uniform, every bucket
            default: out.append(i % 97 == 0 ? 0 : 1_000_000 + (x >> 40))   // a body with zeros
            }
        }
        return out
    }

    static let percentiles: [Double] = [0, 0.001, 0.1, 1, 10, 25, 33.3, 50, 66.6, 75, 90, 95, 99, 99.5, 99.9, 99.99, 99.999, 100, 150]

    func reference(_ values: [UInt64]) -> Histogram<UInt64> {
        var h = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 2047, numberOfSignificantValueDigits: .three)
        h.autoResize = true
        for v in values { h.record(v) }
        return h
    }

    func expectSame(_ ours: DurationHistogram, _ ref: Histogram<UInt64>, _ what: String) {
        #expect(ours.totalCount == ref.totalCount, "\(what): count")
        #expect(ours.min == ref.min, "\(what): min")
        #expect(ours.maxValue == ref.maxRecorded, "\(what): max")
        let got = ours.values(atPercentiles: Self.percentiles)
        for (p, g) in zip(Self.percentiles, got) {
            #expect(g == ref.valueAtPercentile(p), "\(what): p\(p)")
        }
        var buckets: [(UInt64, UInt64)] = []
        ours.forEachBucket { buckets.append(($0, $1)) }
        let want = ref.recordedValues().filter { $0.count > 0 }.map { (ref.medianEquivalentForValue($0.value), UInt64($0.count)) }
        #expect(buckets.count == want.count, "\(what): buckets")
        #expect(zip(buckets, want).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }, "\(what): bucket medians and counts")
    }

    @Test("the same count, minimum, maximum, percentiles and bucket medians, value by value")
    func sameFigures() {
        for seed: UInt64 in [1, 0xDEAD_BEEF, 42] {
            let values = Self.values(seed: seed, count: 30_000)
            let ours = DurationHistogram()
            for v in values { ours.record(v) }
            expectSame(ours, reference(values), "seed \(seed)")
        }
        // Sorted input grows the counts bucket by bucket; a single value; only zeros.
        let sorted = Self.values(seed: 7, count: 5_000).sorted()
        let grown = DurationHistogram()
        for v in sorted { grown.record(v) }
        expectSame(grown, reference(sorted), "sorted")
        for one in [[UInt64(0)], [1], [123_456_789], [0, 0, 0]] {
            let h = DurationHistogram()
            for v in one { h.record(v) }
            expectSame(h, reference(one), "\(one)")
        }
        let empty = DurationHistogram()
        #expect(empty.values(atPercentiles: [0, 50, 100]) == [0, 0, 0] && empty.min == 0 && empty.totalCount == 0)
    }

    @Test("values up to Int64.max (a clamped duration of a damaged trace): the same percentiles, and buckets whose medians are the library's")
    func edges() {
        var values: [UInt64] = [0, 5, UInt64(Int64.max), UInt64(Int64.max) - 1]
        for k in 40..<63 { values += [(1 << UInt64(k)) - 1, 1 << UInt64(k)] }
        let ours = DurationHistogram()
        for v in values { ours.record(v) }
        let ref = reference(values)
        #expect(ours.min == ref.min && ours.maxValue == ref.maxRecorded && ours.totalCount == ref.totalCount)
        for (p, g) in zip(Self.percentiles, ours.values(atPercentiles: Self.percentiles)) { #expect(g == ref.valueAtPercentile(p), "p\(p)") }
        var seen: UInt64 = 0
        ours.forEachBucket { median, count in
            seen += count
            #expect(count == ref.countForValue(median) && median == ref.medianEquivalentForValue(median))
        }
        #expect(seen == UInt64(values.count))
    }

    @Test("an accumulator of durations near Int64.max (a damaged clock) gives its percentiles and values without trapping")
    func hugeDurations() {
        // hdrhistogram-swift's value iterator, which the accumulator used before, summed count ×
        // value and trapped past 2^64 on a few such durations: `report` stopped on such a trace.
        var acc = DurationAccumulator()
        var values: [Int64] = []
        for i in 0..<40 { values.append(i % 8 == 0 ? Int64.max - Int64(i) : Int64(1_000 + i)) }
        for v in values { acc.add(v) }
        let sorted = values.sorted()
        let p = acc.percentiles([50, 90, 99, 100])
        // Exact below 2 048: the 20th of 40; the 36th is the smallest huge one, within 0.1 %.
        #expect(p[0] == sorted[19] && p[3] == Int64.max)
        #expect(p[1] >= sorted[35] && p[1] - sorted[35] <= sorted[35] / 1000 && p[2] >= sorted[35])
        var n = 0
        acc.forEachValue { _, c in n += c }
        #expect(n == 40)
    }

    @Test("merges (small into large, large into small) and copies give the figures of one histogram of every value")
    func mergesAndCopies() {
        let a = Self.values(seed: 3, count: 10_000), b = Self.values(seed: 5, count: 10_000).map { $0 >> 30 }
        let small = DurationHistogram(), large = DurationHistogram()
        for v in b { small.record(v) }
        for v in a { large.record(v) }
        let copy = DurationHistogram(copying: small)
        copy.add(large)                     // a small histogram grows to take a large one
        expectSame(copy, reference(b + a), "small + large")
        large.add(small)
        expectSame(large, reference(a + b), "large + small")
        expectSame(small, reference(b), "the copied histogram is unchanged")
        let none = DurationHistogram()
        none.add(DurationHistogram())
        #expect(none.totalCount == 0 && none.maxValue == 0)
    }

    @Test("the bucket index and value functions are HdrHistogram's, at every bucket edge")
    func layout() {
        let ref = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: .max, numberOfSignificantValueDigits: .three)
        var probes: [UInt64] = Array(0...4100)
        for k in 12..<64 { let e = UInt64(1) << UInt64(k); probes += [e - 1, e, e + 1, e + e / 3] }
        for v in probes {
            let i = DurationHistogram.index(of: v)
            #expect(DurationHistogram.value(at: i) == ref.lowestEquivalentForValue(v), "lowest of \(v)")
            #expect(DurationHistogram.highest(at: i) == ref.highestEquivalentForValue(v), "highest of \(v)")
            #expect(DurationHistogram.width(at: i) == ref.sizeOfEquivalentRangeForValue(v), "width at \(v)")
        }
    }
}
