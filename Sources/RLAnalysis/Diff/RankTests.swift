import Foundation
import Histogram

// The two tests `rltrace diff` applies to an item's durations (docs/diff-json.md, "Significance").
// Both take samples as (value, count) pairs: an item's distribution, exact values or HdrHistogram
// bucket medians, each with how many callouts had it.

/// The result of a two-sided Mann–Whitney U test of sample 1 (NEW) against sample 2 (BASE).
public struct MannWhitneyResult: Codable, Sendable, Equatable {
    /// Sample sizes.
    public var n1: Int, n2: Int
    /// U of sample 1: the pairs (x from 1, y from 2) with x > y, plus half the pairs with x == y.
    public var u: Double
    /// The normal deviate, with the tie correction and a continuity correction of ½ (0 when every
    /// value ties or a sample is empty).
    public var z: Double
    /// The two-sided p-value of the normal approximation.
    public var pValue: Double
    /// `u / (n1·n2)`: the probability that a value of sample 1 exceeds one of sample 2, ties counting
    /// half (0.5: neither tends larger; > 0.5: sample 1, NEW, tends slower).
    public var effect: Double
}

/// Mann–Whitney U with ties handled per distinct value (each value of the pair lists is one tie
/// group: equal values share their mid-rank), and the normal approximation with the tie-corrected
/// variance `n1·n2/12 · ((N+1) − Σ(t³−t)/(N(N−1)))` and a continuity correction — what SciPy's
/// `mannwhitneyu(x, y, method="asymptotic")` computes. Good for samples of a few dozen and more;
/// for a handful of values the p-value is approximate (the exact distribution would be needed).
public func mannWhitneyU(_ sample1: [(value: Int64, count: Int)], _ sample2: [(value: Int64, count: Int)]) -> MannWhitneyResult {
    // Merge into distinct values with the count of each sample.
    var merged: [Int64: (Int, Int)] = [:]
    for (v, c) in sample1 where c > 0 { merged[v, default: (0, 0)].0 += c }
    for (v, c) in sample2 where c > 0 { merged[v, default: (0, 0)].1 += c }
    let n1 = sample1.reduce(0) { $0 + max(0, $1.count) }, n2 = sample2.reduce(0) { $0 + max(0, $1.count) }
    guard n1 > 0, n2 > 0 else { return MannWhitneyResult(n1: n1, n2: n2, u: 0, z: 0, pValue: 1, effect: 0.5) }
    let n = Double(n1 + n2)
    var below = 0.0, r1 = 0.0, ties = 0.0
    for v in merged.keys.sorted() {
        let (c1, c2) = merged[v]!
        let t = Double(c1 + c2)
        let midRank = below + (t + 1) / 2
        r1 += Double(c1) * midRank
        ties += t * t * t - t
        below += t
    }
    let d1 = Double(n1), d2 = Double(n2)
    let u = r1 - d1 * (d1 + 1) / 2
    let mean = d1 * d2 / 2
    let variance = d1 * d2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    var z = 0.0, p = 1.0
    if variance > 0 {
        let dev = u - mean
        z = (abs(dev) - 0.5 > 0 ? (abs(dev) - 0.5) : 0) / variance.squareRoot() * (dev < 0 ? -1 : 1)
        p = min(1, erfc(abs(z) / 2.0.squareRoot()))
    }
    return MannWhitneyResult(n1: n1, n2: n2, u: u, z: z, pValue: p, effect: u / (d1 * d2))
}

/// The result of the upper-tail test: how many values of each sample lie above BASE's percentile,
/// and the exact probability of that many NEW values above it when both samples come from one
/// distribution.
public struct TailTestResult: Codable, Sendable, Equatable {
    /// BASE's percentile used (99) and its value (ns, nearest rank): values strictly above it count.
    public var percentile: Double, thresholdNs: Int64
    /// Values above the threshold in sample 1 (NEW) and sample 2 (BASE), and the sample sizes.
    public var above1: Int, above2: Int, n1: Int, n2: Int
    /// One-sided p-values: sample 1 has more values above than chance allows (`pHeavier`), fewer (`pLighter`).
    public var pHeavier: Double, pLighter: Double
    /// The two-sided p-value: twice the smaller one-sided one, at most 1.
    public var pValue: Double { min(1, 2 * min(pHeavier, pLighter)) }
}

/// The exceedance test of the slow tail: the threshold is BASE's `percentile` (nearest rank), the
/// r-th largest BASE value (r − 1 BASE values lie above it), and the statistic is X, the number of NEW values strictly above it.
/// When both samples come from one continuous distribution, X is negative-hypergeometric:
/// `P(X = x) = C(x + r − 1, x) · C(n1 − x + n2 − r, n1 − x) / C(n1 + n2, n1)` (the ranks of the
/// NEW values among all values are a uniformly random subset), so the test is exact and needs no
/// assumption on the shape. Ties at the threshold do not count (conservative for "heavier").
/// It sees what Mann–Whitney barely does: one callout in 25 becoming very slow moves U by 2 %.
/// (A pooled threshold would not: when more than 1 % of NEW turns slow, the pooled p99 falls inside
/// the slow cluster and hides it.)
public func upperTailTest(_ sample1: [(value: Int64, count: Int)], _ sample2: [(value: Int64, count: Int)], percentile: Double = 99) -> TailTestResult {
    let n1 = sample1.reduce(0) { $0 + $1.count }, n2 = sample2.reduce(0) { $0 + $1.count }
    let threshold = nearestRank(sample2, percentile)
    let a1 = sample1.reduce(0) { $0 + ($1.value > threshold ? $1.count : 0) }
    let a2 = sample2.reduce(0) { $0 + ($1.value > threshold ? $1.count : 0) }
    guard n1 > 0, n2 > 0 else {
        return TailTestResult(percentile: percentile, thresholdNs: threshold, above1: a1, above2: a2, n1: n1, n2: n2, pHeavier: 1, pLighter: 1)
    }
    // The threshold's position from the top of BASE: it is the r-th largest value, r = (BASE values
    // strictly above it) + 1 — with distinct values, n2 − q + 1 for nearest rank q; with BASE values
    // tied at the threshold, the tie counts as the threshold itself (else a BASE made of one repeated
    // value would put r far from the top, and make any NEW value above the whole BASE look ordinary).
    let r = a2 + 1
    func logChoose(_ a: Int, _ b: Int) -> Double { lgamma(Double(a) + 1) - lgamma(Double(b) + 1) - lgamma(Double(a - b) + 1) }
    let denominator = logChoose(n1 + n2, n1)
    func pmf(_ x: Int) -> Double { exp(logChoose(x + r - 1, x) + logChoose(n1 - x + n2 - r, n1 - x) - denominator) }
    var upper = 0.0, lower = 0.0
    for x in 0...n1 {
        let p = pmf(x)
        if x >= a1 { upper += p }
        if x <= a1 { lower += p }
    }
    return TailTestResult(percentile: percentile, thresholdNs: threshold, above1: a1, above2: a2, n1: n1, n2: n2,
                          pHeavier: min(1, upper), pLighter: min(1, lower))
}

/// The nearest-rank percentile `p` (0…100) of (value, count) pairs (0 when empty).
public func nearestRank(_ values: [(value: Int64, count: Int)], _ p: Double) -> Int64 {
    let sorted = values.filter { $0.count > 0 }.sorted { $0.value < $1.value }
    let n = sorted.reduce(0) { $0 + $1.count }
    guard n > 0 else { return 0 }
    let rank = max(1, Int((p / 100 * Double(n)).rounded(.up)))
    var seen = 0
    for (v, c) in sorted {
        seen += c
        if seen >= rank { return v }
    }
    return sorted.last!.value
}

/// Maps values onto HdrHistogram's bucket medians (3 significant digits), so that an exact sample
/// (≤ 32 values) and a histogram's bucket medians tie where the histogram could not tell them apart.
public struct DurationQuantizer {
    private let layout = Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000_000, numberOfSignificantValueDigits: .three)
    /// Creates the quantizer (allocates one histogram's bucket layout).
    public init() {}
    /// The sample with each value replaced by its bucket's median, equal values merged, sorted.
    public func quantize(_ values: [(value: Int64, count: Int)]) -> [(value: Int64, count: Int)] {
        var d: [Int64: Int] = [:]
        for (v, c) in values where c > 0 {
            d[Int64(clamping: layout.medianEquivalentForValue(UInt64(max(0, v)))), default: 0] += c
        }
        return d.sorted { $0.key < $1.key }.map { (value: $0.key, count: $0.value) }
    }
}

/// An accumulator's values as `[[valueNs, count], …]`, ascending (`ItemReport.distribution`).
func distributionPairs(_ a: DurationAccumulator) -> [[Int64]] {
    var d: [Int64: Int64] = [:]
    a.forEachValue { v, c in d[v, default: 0] += Int64(c) }
    return d.sorted { $0.key < $1.key }.map { [$0.key, $0.value] }
}
