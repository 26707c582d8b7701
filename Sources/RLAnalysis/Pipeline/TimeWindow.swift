import Synchronization

/// The one rule for what a time window `[lo, hi]` counts (docs/report-json.md, "Selection and
/// time window"), applied by the loop model as it closes each record:
///
/// - an iteration, a callout or a sleep counts when it overlaps the window (its end at or after
///   `lo`, its begin at or before `hi`), once, cut to the window (marked `clipped`);
/// - what the window cuts is never invented: an iteration counts only once it has ended in the
///   trace (events past the window are followed for the iterations open at its end, until they
///   end), and findings about an iteration as a whole (a hang, a slow iteration, a spurious wake)
///   are decided on the whole iteration, not on the part inside the window;
/// - instant figures (wake reasons, timer lateness, signal and wake-up latencies) count when their
///   event lies inside the window;
/// - names learned before the window are kept.
public struct TimeWindow: Sendable, Equatable {
    /// The bounds, CLOCK_MONOTONIC ns, inclusive.
    public var lo: Int64, hi: Int64
    /// The whole trace.
    public static let all = TimeWindow(lo: .min, hi: .max)
    /// A window `[lo, hi]`.
    public init(lo: Int64, hi: Int64) { self.lo = lo; self.hi = hi }

    /// Whether it cuts anything at all.
    @inline(__always) public var cuts: Bool { lo != .min || hi != .max }

    /// Whether an instant lies inside.
    @inline(__always) public func contains(_ ts: Int64) -> Bool { ts >= lo && ts <= hi }

    /// Cuts an interval `[begin, end]` to the window; false when it lies outside.
    @inline(__always)
    func clip(_ begin: inout Int64, _ end: inout Int64, _ clipped: inout Bool) -> Bool {
        guard end >= lo && begin <= hi else { return false }
        if begin < lo { begin = lo; clipped = true }
        if end > hi { end = hi; clipped = true }
        return true
    }

    /// Cuts a closed iteration to the window (its on-CPU time stays the whole iteration's); false
    /// when it lies outside.
    @inline(__always)
    func clip(_ it: inout IterationRecord) -> Bool {
        if !cuts { return true }
        return clip(&it.begin, &it.end, &it.clipped)
    }

    /// Cuts a callout to the window (a cut callout's on-CPU time is unknown); false when it lies
    /// outside.
    @inline(__always)
    func clip(_ c: inout CalloutRecord) -> Bool {
        if !cuts { return true }
        guard clip(&c.begin, &c.end, &c.clipped) else { return false }
        if c.clipped { c.cpuNs = -1; c.sampledCpuNs = -1 }
        return true
    }

    /// Cuts a sleep to the window; false when it lies outside.
    @inline(__always)
    func clip(_ s: inout SleepRecord) -> Bool {
        if !cuts { return true }
        return clip(&s.begin, &s.end, &s.clipped)
    }

    /// Cuts an iteration's sleeps to the window, dropping those outside it.
    func clipSleeps(_ sleeps: inout [SleepRecord]) {
        sleeps.removeAll { $0.end < lo || $0.begin > hi }
        for i in sleeps.indices { _ = clip(&sleeps[i]) }
    }
}

/// Set by the loop model once nothing after the window can count; read by the reading thread,
/// which then only counts the rest of the trace instead of decoding it.
public final class WindowDoneFlag: Sendable {
    private let value = Atomic<Bool>(false)
    /// A flag not set.
    public init() {}
    /// Whether it is set.
    @inline(__always) public var isSet: Bool { value.load(ordering: .relaxed) }
    /// Sets it.
    public func set() { value.store(true, ordering: .relaxed) }
}
