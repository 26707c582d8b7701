/// The `rltrace-report/2` document (see `docs/report-json.md`).
public struct Report: Codable, Sendable {
    /// The schema name.
    public var schema = "rltrace-report/2"
    /// The traces read.
    public var trace: TraceSummary
    /// The thresholds used.
    public var options: ReportOptions
    /// One entry per loop, sorted by (pid, loop).
    public var loops: [LoopReport]
    /// Things the reader should know (losses, truncation).
    public var warnings: [String]
}

/// What was read.
public struct TraceSummary: Codable, Sendable {
    /// Trace directories.
    public var paths: [String]
    /// First and last event timestamps (CLOCK_MONOTONIC ns).
    public var beginNs: Int64, endNs: Int64
    /// Events read (any provider) and `runloop` events.
    public var events: Int, runloopEvents: Int
    /// Discarded events and lost packets.
    public var discardedEvents: Int64, lostPackets: Int64
    /// Each loss with its time range.
    public var losses: [LossEntry]
    /// Nanoseconds since the Unix epoch minus CLOCK_MONOTONIC nanoseconds (the trace clock's offset):
    /// add it to any time in this document to get wall-clock time.
    public var clockOffsetNs: Int64
    /// The hosts whose traces were read, when there are several (absent for one): each host's
    /// times are on the first host's clock (docs/report-json.md, "Several hosts").
    public var hosts: [HostSummary]? = nil
}

/// One host of a report over several hosts' traces.
public struct HostSummary: Codable, Sendable {
    /// The host's name (`env.hostname` of its traces).
    public var name: String
    /// Its trace directories.
    public var paths: [String]
    /// Its clock offset (wall clock minus monotonic clock, ns), and what was added to its times to
    /// put them on the first host's clock (`clockOffsetNs` of this host minus the first host's).
    public var clockOffsetNs: Int64, shiftNs: Int64
    /// Its loops in the report.
    public var loops: Int
    /// Its first and last event (on the first host's clock, as every time in the report).
    public var beginNs: Int64, endNs: Int64
}

/// A loss the reader reported.
public struct LossEntry: Codable, Sendable {
    /// `discarded` or `lostPackets`.
    public var kind: String
    /// How many events or packets.
    public var count: Int64
    /// The time range it covers.
    public var beginNs: Int64, endNs: Int64
    /// The stream file.
    public var stream: String
}

/// Thresholds.
public struct ReportOptions: Codable, Sendable {
    /// An iteration busy at least this long is a hang.
    public var hangThresholdNs: Int64 = 250_000_000
    /// An iteration busy at least this long is slow.
    public var slowThresholdNs: Int64 = 100_000_000
    /// Consecutive non-sleeping iterations that make a spin.
    public var spinMinIterations: Int = 100
    /// A callout at least this long is a SLOW CALLOUT finding.
    public var slowCalloutNs: Int64 = 10_000_000
    /// A timer at least this late is a LATE TIMER finding.
    public var lateTimerNs: Int64 = 10_000_000
    /// Creates options.
    public init(hangThresholdNs: Int64 = 250_000_000, slowThresholdNs: Int64 = 100_000_000, spinMinIterations: Int = 100,
                slowCalloutNs: Int64 = 10_000_000, lateTimerNs: Int64 = 10_000_000) {
        self.hangThresholdNs = hangThresholdNs
        self.slowThresholdNs = slowThresholdNs
        self.spinMinIterations = spinMinIterations
        self.slowCalloutNs = slowCalloutNs
        self.lateTimerNs = lateTimerNs
    }
    /// Decodes options, with the defaults for fields a report of an earlier rltrace lacks.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        hangThresholdNs = try c.decodeIfPresent(Int64.self, forKey: .hangThresholdNs) ?? 250_000_000
        slowThresholdNs = try c.decodeIfPresent(Int64.self, forKey: .slowThresholdNs) ?? 100_000_000
        spinMinIterations = try c.decodeIfPresent(Int.self, forKey: .spinMinIterations) ?? 100
        slowCalloutNs = try c.decodeIfPresent(Int64.self, forKey: .slowCalloutNs) ?? 10_000_000
        lateTimerNs = try c.decodeIfPresent(Int64.self, forKey: .lateTimerNs) ?? 10_000_000
    }
}

/// Count, total, max and percentiles of durations.
public struct DurationSummary: Codable, Sendable {
    /// Number of values.
    public var count: Int
    /// Their sum and maximum (ns).
    public var totalNs: Int64, maxNs: Int64
    /// Percentiles (HdrHistogram, 3 significant digits).
    public var p50Ns: Int64, p90Ns: Int64?, p99Ns: Int64, p999Ns: Int64?
}

/// Per-item statistics.
public struct ItemReport: Codable, Sendable {
    /// Callout kind label.
    public var kind: String
    /// Item id.
    public var item: UInt64
    /// Item name.
    public var name: String
    /// Callout count, total, max and percentiles.
    public var count: Int, totalNs: Int64, maxNs: Int64, p50Ns: Int64, p99Ns: Int64
    /// On-CPU time of its callouts (the thread's CPU clock; absent without that context).
    public var onCpuNs: Int64? = nil
    /// On-CPU time of its longest callout — the CPU clock context's, else the hang watchdog's
    /// reading (`callout_cpu`, for callouts of two watchdog ticks or more) — and what it says:
    /// `computing` (on CPU for at least a quarter of it) or `blocked`; absent when unknown.
    public var slowestOnCpuNs: Int64? = nil, slowestState: String? = nil
    /// Its durations as `[valueNs, count]` pairs, ascending: exact up to 32 values, HdrHistogram
    /// bucket medians beyond (only with `report --format json --distributions`; for `rltrace diff`).
    public var distribution: [[Int64]]? = nil
}

/// Latency of one item (timer lateness, signal latency).
public struct ItemLatency: Codable, Sendable {
    /// Item id.
    public var item: UInt64
    /// Item name.
    public var name: String
    /// Count, total, max, percentiles.
    public var count: Int, totalNs: Int64, maxNs: Int64, p50Ns: Int64, p99Ns: Int64
    /// Threads that signalled (signal latency only).
    public var callerTids: [Int64]?
}

/// A callout named in a hang or a slow iteration.
public struct CalloutRef: Codable, Sendable {
    /// Kind label, item, name, duration.
    public var kind: String, item: UInt64, name: String, durationNs: Int64
}

/// An iteration busy past the hang threshold.
public struct HangReport: Codable, Sendable {
    /// The iteration, its begin, duration and busy time.
    public var iteration: UInt64, beginNs: Int64, durationNs: Int64, busyNs: Int64
    /// Its longest callout.
    public var culprit: CalloutRef?
    /// On-CPU time of the loop's thread during it, and what that says: `computing` (on CPU for at
    /// least a quarter of its busy time) or `blocked`. From the CPU clock context, else from the
    /// hang watchdog's readings of its callouts (`callout_cpu`); absent when neither is recorded.
    public var onCpuNs: Int64? = nil, state: String? = nil
    /// What the program's hang watchdog reported (`runloop:hang_begin`/`hang_end`; absent for a
    /// hang found only from the iteration's duration).
    public var watchdog: WatchdogHang? = nil
    /// The watchdog's stack samples of the hung thread, identical consecutive samples counted
    /// once (absent without samples).
    public var stacks: [StackSampleGroup]? = nil
}

/// A run of iterations that never slept.
public struct SpinReport: Codable, Sendable {
    /// First iteration, count, time range.
    public var firstIteration: UInt64, iterations: Int, beginNs: Int64, endNs: Int64
    /// The non-observer item performed most often during the run (its total time as `durationNs`).
    public var culprit: CalloutRef?
}

/// One of the slowest iterations.
public struct SlowIteration: Codable, Sendable {
    /// The iteration, its begin and busy time.
    public var iteration: UInt64, beginNs: Int64, busyNs: Int64
    /// Its callouts (longest first, at most 8).
    public var callouts: [CalloutRef]
}

/// Cross-thread wake-up latency.
public struct WakeUpLatency: Codable, Sendable {
    /// Count, total, max, percentiles.
    public var count: Int, totalNs: Int64, maxNs: Int64, p50Ns: Int64, p99Ns: Int64
    /// The threads that asked.
    public var callerTids: [Int64]
}

/// Everything about one loop.
public struct LoopReport: Codable, Sendable {
    /// Identity.
    public var pid: Int64, loop: UInt64, tid: Int64, threadName: String, procname: String
    /// Time range of its events.
    public var firstNs: Int64, lastNs: Int64, spanNs: Int64
    /// Iterations.
    public var iterations: Int, topLevelIterations: Int, iterationsPerSecond: Double
    /// Busy and sleep time (completed top-level iterations).
    public var busyNs: Int64, sleepNs: Int64, sleeps: Int, polls: Int, busyRatio: Double
    /// On-CPU time of the loop's thread in those iterations (absent without a CPU clock context).
    public var onCpuNs: Int64? = nil
    /// Callouts.
    public var callouts: Int, calloutsPerIteration: Double, unmatchedCallouts: Int
    /// Per kind.
    public var calloutKinds: [String: DurationSummary]
    /// Per item.
    public var items: [ItemReport]
    /// Wake events by reason.
    public var wakeReasons: [String: Int]
    /// Sleep durations by wake reason: log2 bucket → count.
    public var sleepHistogram: [String: [String: Int]]
    /// Busy time of top-level iterations: log2 bucket → count.
    public var iterationHistogram: [String: Int]
    /// Wake → first non-observer callout.
    public var wakeToFirstCallout: DurationSummary
    /// Timer lateness per timer.
    public var timerLateness: [ItemLatency]
    /// Signal → perform per source0.
    public var signalLatency: [ItemLatency]
    /// wakeUp → wake.
    public var wakeUpLatency: WakeUpLatency
    /// Wakes that did nothing.
    public var spuriousWakes: Int
    /// Hangs, slow iterations, spins, the slowest iterations.
    public var hangs: [HangReport], slowIterations: Int, spins: [SpinReport], slowest: [SlowIteration]
    /// The loop's host (its traces' `env.hostname`; absent when they name none).
    public var host: String? = nil
}

/// The log2 bucket of a duration: `k = max(0, bitLength(d) − 1)`.
@inline(__always)
public func log2Bucket(_ d: Int64) -> Int { d <= 1 ? 0 : 63 - d.leadingZeroBitCount }

/// Accumulates durations: exact count/total/max, and percentiles — exact (nearest rank) while
/// there are at most 32 values, from an HdrHistogram (3 significant digits, ``DurationHistogram``)
/// beyond. The histogram, 16 KB to a few hundred, is only made when needed: a trace has many items
/// seen once (each perform-block is its own item), and one histogram each would make memory grow
/// with the trace.
public struct DurationAccumulator: @unchecked Sendable {
    /// Count.
    public private(set) var count = 0
    /// Exact sum and maximum.
    public private(set) var total: Int64 = 0, max: Int64 = 0
    private var small: [Int64] = []
    /// The histogram, a class: recording mutates it in place; copies of the accumulator share it
    /// until one records (copy on write).
    private var hist: DurationHistogram?
    static let exactLimit = 32

    /// Creates an empty accumulator.
    public init() {}

    /// Adds a duration (negative values count in the total; percentiles clamp them to 0).
    @inline(__always)
    public mutating func add(_ ns: Int64) {
        count += 1
        total &+= ns
        if count == 1 || ns > max { max = ns }
        let v = UInt64(Swift.max(0, ns))
        if hist == nil && small.count < DurationAccumulator.exactLimit { small.append(Int64(v)); return }
        ownHistogram()
        // The histogram is held by `self` (unique, checked above) for the whole call: used +0.
        Unmanaged.passUnretained(hist.unsafelyUnwrapped)._withUnsafeGuaranteedRef { $0.record(v) }
    }

    /// Makes `hist` a histogram of this accumulator's own: its exact values moved into a new one
    /// (sized for twice the largest of them, and growing beyond; the bucket layout, and so every
    /// percentile, does not depend on the size), or a shared one copied.
    @inline(__always)
    private mutating func ownHistogram() {
        if hist == nil {
            let top = UInt64(Swift.max(0, small.max() ?? 0))
            let h = DurationHistogram(highest: top > UInt64.max / 2 ? top : top &* 2 | 2047)
            for x in small { h.record(UInt64(x)) }
            small = []
            hist = h
        } else if !isKnownUniquelyReferenced(&hist) {
            hist = DurationHistogram(copying: hist!)
        }
    }

    /// Adds every value of `other`: afterwards the count, total, maximum, exact values or histogram
    /// and every percentile are what recording each of its values here would have given (exact
    /// values while there are at most 32 in all, else the histogram, whose merge adds counts bucket
    /// by bucket and keeps the raw minimum and maximum).
    public mutating func merge(_ other: DurationAccumulator) {
        guard other.count > 0 else { return }
        let wasEmpty = count == 0
        // The figures of the raw values (negative ones count in the total and the maximum).
        let (c, t, m) = (count + other.count, total &+ other.total, wasEmpty || other.max > max ? other.max : max)
        if let oh = other.hist {
            ownHistogram()
            hist!.add(oh)
        } else {
            // At most 32 values, each as `add` keeps it (clamped to 0): added one by one, so the
            // switch to a histogram happens at the 33rd value, as it would have.
            for v in other.small { add(v) }
        }
        count = c; total = t; max = m
    }

    /// The percentile `p` (0…100), nearest rank.
    public func percentile(_ p: Double) -> Int64 {
        if count == 0 { return 0 }
        if let hist { return Int64(clamping: hist.values(atPercentiles: [p])[0]) }
        let sorted = small.sorted()
        let rank = Swift.max(1, Int((p / 100 * Double(sorted.count)).rounded(.up)))
        return sorted[Swift.min(sorted.count, rank) - 1]
    }

    /// The smallest value (0 when empty).
    public var min: Int64 {
        if count == 0 { return 0 }
        if let hist { return Int64(clamping: hist.min) }
        return small.min() ?? 0
    }

    /// Calls `body` with each value and its count: exact while there are at most 32 values, else
    /// each HdrHistogram bucket's median with its count (values within 0.1 % of the true ones).
    public func forEachValue(_ body: (Int64, Int) -> Void) {
        if let hist {
            hist.forEachBucket { body(Int64(clamping: $0), Int(truncatingIfNeeded: $1)) }
        } else {
            for v in small { body(v, 1) }
        }
    }

    /// The percentiles `ps` (each 0…100, in any order), as ``percentile(_:)`` gives them one by one,
    /// in one pass over the histogram instead of one each.
    public func percentiles(_ ps: [Double]) -> [Int64] {
        guard count > 0, let hist else { return ps.map { percentile($0) } }
        return hist.values(atPercentiles: ps).map { Int64(clamping: $0) }
    }

    /// The summary for JSON.
    public func summary(full: Bool = true) -> DurationSummary {
        if full {
            let p = percentiles([50, 90, 99, 99.9])
            return DurationSummary(count: count, totalNs: total, maxNs: max, p50Ns: p[0], p90Ns: p[1], p99Ns: p[2], p999Ns: p[3])
        }
        let p = percentiles([50, 99])
        return DurationSummary(count: count, totalNs: total, maxNs: max, p50Ns: p[0], p90Ns: nil, p99Ns: p[1], p999Ns: nil)
    }
}
