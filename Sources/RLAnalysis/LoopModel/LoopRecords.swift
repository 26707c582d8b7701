import RunLoopSchema

// The records the loop model (LoopModel.swift) hands to the pipeline's sinks.

/// Identifies a loop across processes and hosts: `(pid, loop)` — the process key and the loop's
/// id in its process. The process key is the process id (the `vpid` context, or the high 32 bits
/// of `loop_id`: RunLoopCore's ids name their process, docs/tracepoints.md "Constant pools") in
/// its low 32 bits and, for traces of several hosts, the host's index in the source's
/// ``RunLoopEventSource/hosts`` above them (0 for the first host: a trace of one host has keys
/// equal to its pids) — so everything keyed by process (items, names, mapped binaries) keeps each
/// host's processes apart at no cost per event.
public struct LoopKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The process key: the process id (0 when the trace does not say), its host's index above bit
    /// ``hostShift``.
    public var pid: Int64
    /// The loop's id.
    public var loop: UInt64
    /// Creates a key.
    public init(pid: Int64, loop: UInt64) { self.pid = pid; self.loop = loop }
    /// Orders by host, pid, then loop.
    public static func < (a: LoopKey, b: LoopKey) -> Bool { a.pid != b.pid ? a.pid < b.pid : a.loop < b.loop }
    /// `pid/loop` (`host#pid/loop` for a host after the first).
    public var description: String { hostIndex == 0 ? "\(pid)/\(loop)" : "host\(hostIndex)#\(processID)/\(loop)" }
    /// Where a process key holds its host's index.
    public static let hostShift: Int64 = 32
    /// The process id (without the host).
    public var processID: Int64 { LoopKey.processID(pid) }
    /// The host's index in the source's ``RunLoopEventSource/hosts``.
    public var hostIndex: Int { LoopKey.hostIndex(pid) }
    /// The process id of process key `key`.
    @inline(__always) public static func processID(_ key: Int64) -> Int64 { key & 0xFFFF_FFFF }
    /// The host index of process key `key`.
    @inline(__always) public static func hostIndex(_ key: Int64) -> Int { Int(truncatingIfNeeded: key >> hostShift) }
    /// Process key `key` as one integer for the exports, whose pids are 32-bit (Chrome's JSON,
    /// Perfetto's `ProcessDescriptor`): the pid itself for the first host, `host << 22 | pid` for the
    /// others (Linux pids are below 2^22, its `PID_MAX_LIMIT`), so two hosts' processes stay apart.
    @inline(__always) public static func exportPID(_ key: Int64) -> Int64 {
        let h = hostIndex(key)
        return h == 0 ? processID(key) : Int64(h) << 22 | processID(key)
    }
    /// Thread `tid` of process key `key` as the exports give it (as ``exportPID(_:)``).
    @inline(__always) public static func exportTID(_ tid: Int64, of key: Int64) -> Int64 {
        let h = hostIndex(key)
        return h == 0 || tid < 0 ? tid : Int64(h) << 22 | tid
    }
}

/// One matched callout.
public struct CalloutRecord: Sendable {
    /// Its kind.
    public var kind: RLCalloutKind
    /// The item id (0 for the main queue).
    public var item: UInt64
    /// Entry and exit timestamps.
    public var begin: Int64, end: Int64
    /// How many callouts of this loop enclose it.
    public var depth: Int
    /// Activity (observer), fd (source1), scheduled time (timer), else 0.
    public var detail: Int64
    /// A block's name (a ``NameTable`` id; -1 for other kinds). Every perform-block is its own
    /// item, so its name travels with its record instead of a per-item table; see
    /// ``LoopModel/name(of:pid:)``.
    public var blockName: Int32 = -1
    /// Whether a time window cut it (its begin or end is the window's edge, not its own).
    public var clipped = false
    /// On-CPU time of the loop's thread during it (ns; -1 when the trace has no CPU clock context,
    /// or the callout was clipped). While open: the CPU clock at entry.
    public var cpuNs: Int64 = -1
    /// The on-CPU time the hang watchdog's last reading (`callout_cpu`) gives it, scaled to its
    /// whole duration (ns; -1 without a reading: a callout shorter than two watchdog ticks). While
    /// open: the reading's CPU ns, over ``sampleElapsedNs``.
    public var sampledCpuNs: Int64 = -1
    /// While open: the elapsed time of the watchdog's last reading (0: none).
    public var sampleElapsedNs: Int64 = 0
    /// Its whole duration, as the trace has it, also when a window cut it (a hang's culprit is
    /// named with it).
    public var wholeDurationNs: Int64 = 0
    /// The duration.
    public var duration: Int64 { end &- begin }
    /// Whether its name is its item's (every kind but a block carrying its own name: a block of a
    /// pooled name is named by the pool, as an item; docs/tracepoints.md "Constant pools").
    public var namedByItem: Bool { kind != .block || blockName < 0 }
}

/// One sleep: `sleep_begin` → `wake`.
public struct SleepRecord: Sendable {
    /// When the loop went to sleep and when it woke.
    public var begin: Int64, end: Int64
    /// Why it woke.
    public var reason: RLWakeReason
    /// The fd that ended the wait (-1 if none).
    public var fd: Int64
    /// Whether a time window cut it.
    public var clipped = false
    /// The duration.
    public var duration: Int64 { end &- begin }
}

/// A completed iteration, as the loop model hands it to the metrics and the timeline.
public struct IterationRecord: Sendable {
    /// The loop.
    public var key: LoopKey
    /// The iteration number.
    public var number: UInt64
    /// Begin and end timestamps.
    public var begin: Int64, end: Int64 = 0
    /// Nesting depth among this loop's iterations (0 = top level).
    public var depth: Int
    /// The mode of the run it belongs to (a ``NameTable`` id; 0, the empty string, outside any run).
    public var mode: Int32
    /// Its own sleeps (usually 0 or 1).
    public var sleeps: [SleepRecord] = []
    /// Polls (wakes without a sleep; an iteration with no `wake` at all polled and found nothing:
    /// docs/tracepoints.md, "wake").
    public var polls = 0
    /// Whether a `wake` of its own was read (an iteration that ends without one polled and found
    /// nothing).
    var woke = false
    /// Callouts that belong to it (not to nested iterations), in entry order: the first
    /// ``LoopModel/calloutLimit``; ``overflow`` summarizes the rest (``calloutCount``,
    /// ``longestCallout``, ``longestCallouts(_:)``, ``firstWorkBegin(afterSleep:)`` and
    /// ``hasCallout(where:)`` read both).
    public var callouts: [CalloutRecord] = []
    /// Its callouts past ``LoopModel/calloutLimit``, summarized (nil: none).
    public var overflow: CalloutOverflow?
    /// The longest of its callouts a time window left out (they ended before it began): a hang's
    /// culprit is the longest callout of the whole iteration (``longestCallout``), window or not.
    public var longestOutsideWindow: CalloutRecord?
    /// Sleeps of iterations nested in it: total ns (inside the window), count, and their polls.
    public var nestedSleepNs: Int64 = 0, nestedSleeps = 0, nestedPolls = 0
    /// Sleep time of iterations nested in it, whole (a time window does not cut it).
    public var nestedSleepWholeNs: Int64 = 0
    /// On-CPU time the thread spent between its sleeps' `sleep_begin` and `wake` (its own and its
    /// nested iterations'), taken out of ``cpuNs`` so that on-CPU time covers the busy time only.
    public var sleepCpuNs: Int64 = 0
    /// The whole iteration, as the trace has it, when a time window cuts it (equal to `begin`,
    /// `end` and ``busyNs`` otherwise): findings that are about the iteration as a whole (a hang,
    /// a slow iteration) are decided on these, so a window inside a hang still shows the hang.
    public var wholeBegin: Int64 = 0, wholeEnd: Int64 = 0, wholeBusyNs: Int64 = 0
    /// Whether it (not a nested iteration) made a callout other than an observer's, inside the
    /// window or not: a wake that leads to no work (a spurious wake) is decided on the whole
    /// iteration, not on the part a window leaves.
    public var worked = false
    /// Whether it handled a source (`iteration_end.handled_source`).
    public var handledSource = false
    /// Whether a time window cut it (it began before the window or ends after it): its begin, end,
    /// sleeps and callouts are clipped to the window.
    public var clipped = false
    /// On-CPU time of the loop's thread while it was busy (ns; its sleeps' CPU time taken out, and
    /// never more than its whole busy time); -1 without a CPU clock context. Of the whole
    /// iteration also when a window cuts it (``clipped``). While open: the CPU clock at its begin.
    public var cpuNs: Int64 = -1
    /// The on-CPU time of its callouts the watchdog read (``CalloutRecord/sampledCpuNs``, summed
    /// over the callouts that have one; -1 when none has): what tells a hang computing or blocked
    /// in a trace recorded without the per-event CPU clock.
    public var sampledCpuNs: Int64 = -1

    /// The duration.
    public var duration: Int64 { end &- begin }
    /// Its own sleep time.
    public var ownSleepNs: Int64 { sleeps.reduce(0) { $0 &+ $1.duration } }
    /// Duration minus every sleep in it (nested included).
    public var busyNs: Int64 { duration &- ownSleepNs &- nestedSleepNs }
    /// Whether it slept (itself).
    public var slept: Bool { !sleeps.isEmpty }
}

/// What the model knows about a loop.
public struct LoopInfo: Sendable {
    /// The loop.
    public var key: LoopKey
    /// Its thread (loop_created.tid, else vtid, else -1).
    public var tid: Int64 = -1
    /// Its thread's name.
    public var threadName = ""
    /// The process name.
    public var procname = ""
    /// First and last event of this loop.
    public var first: Int64 = .max, last: Int64 = .min
}

extension IterationRecord {
    /// Makes a reused record a new open iteration, keeping its arrays' storage.
    mutating func reuse(key: LoopKey, number: UInt64, begin: Int64, depth: Int, mode: Int32) {
        self.key = key; self.number = number; self.begin = begin; end = 0; self.depth = depth; self.mode = mode
        sleeps.removeAll(keepingCapacity: true)
        callouts.removeAll(keepingCapacity: true)
        overflow = nil
        longestOutsideWindow = nil
        polls = 0; nestedSleepNs = 0; nestedSleeps = 0; nestedPolls = 0; handledSource = false; clipped = false; cpuNs = -1
        nestedSleepWholeNs = 0; sleepCpuNs = 0; worked = false; sampledCpuNs = -1; woke = false
    }
}

/// `a − b` clamped to the range of `Int64` (for differences with values read from a trace, which
/// may be anything).
@inline(__always)
public func saturatingDifference(_ a: Int64, _ b: Int64) -> Int64 {
    let (d, o) = a.subtractingReportingOverflow(b)
    return o ? (b < 0 ? .max : .min) : d
}

/// `a + b` clamped to the range of `Int64`.
@inline(__always)
public func saturatingSum(_ a: Int64, _ b: Int64) -> Int64 {
    let (d, o) = a.addingReportingOverflow(b)
    return o ? (b < 0 ? .min : .max) : d
}

/// CPU time between two CPU clock readings of one thread (-1 if either is missing, or they are
/// inconsistent).
@inline(__always)
func cpuSpan(_ a: Int64, _ b: Int64) -> Int64 {
    a >= 0 && b >= a ? b &- a : -1
}
