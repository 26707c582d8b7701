import RunLoopSchema

extension RLCalloutKind {
    /// Parses a label (`timer`, `main_queue`, also `mainQueue` and `main-queue`).
    public init?(label: String) {
        if let k = Self.allCases.first(where: { $0.label == label }) { self = k; return }
        switch label {
        case "mainQueue", "main-queue": self = .mainQueue
        default: return nil
        }
    }
}

/// A `runloop` event, decoded into the fields the analysis uses. Times are CLOCK_MONOTONIC ns
/// (the raw LTTng clock value, directly comparable with `scheduled_ns`).
public struct RunLoopEvent: Sendable {
    /// Which event.
    public enum Kind: UInt8, Sendable {
        case loopCreated, loopDestroyed, runEnter, runExit, iterationBegin, iterationEnd
        case calloutEntry, calloutExit, sleepBegin, wake, wakeUpRequested, source0Signalled
        case timerArmed, itemAdded, itemRemoved
        /// The hang watchdog's events (`hang_begin`, `hang_stack`, `hang_end`): `a` is the hang id,
        /// `c` the index of the event's record in the source's ``HangEvidenceStore``.
        case hangBegin, hangStack, hangEnd
        /// The constant pools (`loop_info`: `a` tid, `b` pid, `name` thread name, `procname` the
        /// process name; `item_info`: the item's kind, id and `name`) and the watchdog's reading
        /// of a long callout's CPU time (`callout_cpu`: `a` elapsed ns, `b` CPU ns).
        case loopInfo, itemInfo, calloutCpu
        /// Not an event of the trace: the source found a gap between overlapping traces (two
        /// flight-recorder snapshots that do not meet); what was open before it is forgotten.
        case gap
    }
    /// The event.
    public var kind: Kind
    /// Event timestamp, CLOCK_MONOTONIC ns.
    public var ts: Int64
    /// `vpid` context (0 when not recorded).
    public var pid: Int64 = 0
    /// `vtid` context (-1 when not recorded).
    public var vtid: Int64 = -1
    /// `loop_id` (0 for a `source0_signalled` of a source in no loop).
    public var loop: UInt64 = 0
    /// `iteration`.
    public var iteration: UInt64 = 0
    /// The callout kind (callouts, registrations).
    public var calloutKind: RLCalloutKind = .observer
    /// `item_id`.
    public var item: UInt64 = 0
    /// Kind-specific integer: activity (observer), fd (source1, wake), scheduled_ns (timer),
    /// result (run_exit), timeout_ns (run_enter, sleep_begin), tid (loop_created/destroyed),
    /// caller_tid (wakeup_requested, source0_signalled), fire_ns (timer_armed).
    public var a: Int64 = 0
    /// Second integer: readiness (source1), depth (runs), reason (wake), deadline_ns (sleep_begin),
    /// accepted (wakeup_requested), handled_source (iteration_end), missed_fires (timer_armed).
    public var b: Int64 = 0
    /// Third integer: callouts (iteration_end), slept_ns (wake), interval_ns (timer_armed),
    /// return_after_source_handled (run_enter), signal_seq (source0_signalled).
    public var c: Int64 = 0
    /// `name`, `thread_name` or `mode` as a ``NameTable`` id, decoded only when the analysis asked for
    /// it (-1 otherwise).
    public var name: Int32 = -1
    /// The `procname` context as a ``NameTable`` id, decoded once per loop (-1 otherwise).
    public var procname: Int32 = -1
    /// The thread's CPU time (the `perf_thread_task_clock` context, ns), or -1 without it.
    public var cpu: Int64 = -1

    /// The `item` / `iteration` an exit or an `iteration_end` that names none is read with: it
    /// closes the innermost open callout of its kind, or iteration (docs/tracepoints.md).
    public static let innermost = UInt64.max

    /// Creates an event.
    public init(kind: Kind, ts: Int64) {
        self.kind = kind
        self.ts = ts
    }
}
