import Foundation

/// The `rltrace-diff/1` document: what changed between two traces or reports (docs/diff-json.md).
public struct TraceDiff: Codable, Sendable {
    /// The schema name.
    public var schema = "rltrace-diff/1"
    /// The two inputs.
    public var base: DiffInput, new: DiffInput
    /// The significance level of the tests.
    public var alpha: Double
    /// The practical-significance floors of a regression: added time per second of run (ns/s) and
    /// relative growth of p50, p99 or time per second (0.2 = +20 %).
    public var minImpactNsPerSecond: Double, minChange: Double
    /// Every loop of either side, matched ones first.
    public var loops: [LoopDiff]
    /// Items whose durations got significantly slower (in any loop) by at least the floors, by
    /// impact, largest first.
    public var regressions: [RegressionRef]
    /// The `--fail-on` conditions and where they held (absent without `--fail-on`).
    public var failOn: FailOnResult?
    /// Things the reader should know (inputs without distributions, lost data, small samples).
    public var notes: [String]
}

/// One side of the comparison.
public struct DiffInput: Codable, Sendable {
    /// The path given on the command line.
    public var path: String
    /// `trace` (analysed here) or `report` (a `rltrace report --format json` document).
    public var source: String
    /// The report schema read (`rltrace-report/1` or `/2`).
    public var reportSchema: String
    /// Whether items carry their distributions (always for traces; reports with `--distributions`).
    public var distributions: Bool
    /// The trace's first-to-last event span (ns).
    public var spanNs: Int64
    /// The report's warnings (losses, truncation).
    public var warnings: [String]
    /// Describes an input.
    public init(path: String, source: String, reportSchema: String, distributions: Bool, spanNs: Int64, warnings: [String]) {
        self.path = path; self.source = source; self.reportSchema = reportSchema
        self.distributions = distributions; self.spanNs = spanNs; self.warnings = warnings
    }
}

/// A figure on both sides: its values, their difference, and how many values each comes from.
public struct FigureChange: Codable, Sendable, Equatable {
    /// The BASE and NEW values (absent: the side lacks the item, or the input cannot give the figure).
    public var base: Double?, new: Double?
    /// `new − base` (both present).
    public var change: Double?
    /// `change / base × 100` (both present and `base ≠ 0`).
    public var changePct: Double?
    /// The sample sizes behind each value (callouts, iterations, fires, or the span for counts).
    public var nBase: Int, nNew: Int

    /// Makes the figure from the two values.
    public init(base: Double?, new: Double?, nBase: Int, nNew: Int) {
        self.base = base; self.new = new; self.nBase = nBase; self.nNew = nNew
        if let base, let new {
            change = new - base
            changePct = base != 0 ? (new - base) / abs(base) * 100 : nil
        }
    }
}

/// The tests of one item's (or loop's) durations, BASE against NEW.
public struct ChangeTest: Codable, Sendable {
    /// Whether both sides had distributions to test.
    public var available: Bool
    /// Why not, when not.
    public var reason: String?
    /// Mann–Whitney U of NEW against BASE (the whole distribution).
    public var mannWhitney: MannWhitneyResult?
    /// The exceedance test of the slow tail: NEW values above BASE's 99th percentile.
    public var tail: TailTestResult?
    /// The same above BASE's maximum: a few NEW values far beyond anything BASE had (ten 50 ms
    /// callouts against a BASE of 70 µs at most) are certain however BASE's p99 falls.
    public var tailMax: TailTestResult?
    /// The smallest p-value of the three, tripled (Bonferroni for three tests), at most 1.
    public var pValue: Double?
    /// `slower`, `faster`, `mixed` (one test each way), or `none` (no significant change; also
    /// when not available).
    public var direction: String
    /// `direction` is not `none`.
    public var significant: Bool { direction != "none" }
}

/// An item (callouts of one kind and name in one loop) on both sides.
public struct ItemDiff: Codable, Sendable {
    /// Callout kind label and item name (items of a loop with the same both are merged).
    public var kind: String, name: String
    /// `both`, `added` (NEW only) or `removed` (BASE only).
    public var status: String
    /// The item ids merged on each side.
    public var baseItems: [UInt64], newItems: [UInt64]
    /// Callouts, and callouts per second of the loop's span.
    public var count: FigureChange, ratePerSecond: FigureChange
    /// Duration percentiles (nearest rank) and maximum (ns).
    public var p50Ns: FigureChange, p90Ns: FigureChange, p99Ns: FigureChange, maxNs: FigureChange
    /// Total time (ns), and total time per second of the loop's span (ns/s).
    public var totalNs: FigureChange, timePerSecondNs: FigureChange
    /// NEW time per second − BASE time per second (ns/s): the sort key.
    public var impactNsPerSecond: Double
    /// The significance tests.
    public var test: ChangeTest
    /// Durations per log2 bucket on each side (`"k": count`, `2^k ≤ d < 2^(k+1)`), when known.
    public var baseHistogram: [String: Int]?, newHistogram: [String: Int]?
}

/// Timer lateness of one timer (by name) on both sides.
public struct LatencyDiff: Codable, Sendable {
    /// Timer name and `both`, `added` or `removed`.
    public var name: String, status: String
    /// Fires, median, p99 and maximum lateness (ns).
    public var count: FigureChange, p50Ns: FigureChange, p99Ns: FigureChange, maxNs: FigureChange
}

/// A loop (matched by process and thread name) on both sides.
public struct LoopDiff: Codable, Sendable {
    /// The process and thread name that match it.
    public var procname: String, threadName: String
    /// `both`, `added` or `removed`.
    public var status: String
    /// Loop id, pid and tid on each side.
    public var baseLoop: UInt64?, newLoop: UInt64?, basePid: Int64?, newPid: Int64?, baseTid: Int64?, newTid: Int64?
    /// The loop's span (ns), iterations and iterations per second.
    public var spanNs: FigureChange, iterations: FigureChange, iterationsPerSecond: FigureChange
    /// Busy ratio (0…1; `change` × 100 is percentage points), over top-level iterations.
    public var busyRatio: FigureChange
    /// Both tests on the busy time per top-level iteration (its log2 buckets: each bucket one tie).
    public var busyTest: ChangeTest
    /// Callouts of every kind.
    public var callouts: FigureChange
    /// Wakes per second by reason (`nBase`/`nNew`: the wake counts).
    public var wakeReasonsPerSecond: [String: FigureChange]
    /// Timer lateness per timer name.
    public var timerLateness: [LatencyDiff]
    /// Hangs and spins (counts: no test).
    public var hangs: FigureChange, spins: FigureChange
    /// Items by impact, largest first.
    public var items: [ItemDiff]
}

/// An item that got significantly slower.
public struct RegressionRef: Codable, Sendable {
    /// The loop (`procname`, `threadName`), item kind and name.
    public var procname: String, threadName: String, kind: String, name: String
    /// Its impact (ns/s), the test's direction and p-value.
    public var impactNsPerSecond: Double, direction: String, pValue: Double
}

/// The `--fail-on` conditions and where they held.
public struct FailOnResult: Codable, Sendable {
    /// The conditions as given.
    public var conditions: [String]
    /// One line per (condition, place) that held.
    public var held: [String]
    /// Conditions that could not be checked somewhere (no distributions for the test).
    public var unchecked: [String]
}

/// The diff as `rltrace-diff/1` JSON (keys sorted, stable).
public enum JSONDiffRenderer {
    /// Encodes the document.
    public static func render(_ d: TraceDiff) throws -> String {
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        enc.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return String(decoding: try enc.encode(d), as: UTF8.self) + "\n"
    }
}
