/// The kind of a run-loop callout (the `callout_kind` enumeration of `docs/tracepoints.md`).
public enum CalloutKind: UInt8, CaseIterable, Sendable, Codable, Comparable {
    /// An observer.
    case observer = 0
    /// A version-0 source.
    case source0 = 1
    /// A version-1 (fd) source.
    case source1 = 2
    /// A timer.
    case timer = 3
    /// The main dispatch queue.
    case mainQueue = 4
    /// A perform-block.
    case block = 5

    /// The label used in the trace schema and in JSON (`main_queue` …).
    public var label: String {
        switch self {
        case .observer: "observer"
        case .source0: "source0"
        case .source1: "source1"
        case .timer: "timer"
        case .mainQueue: "main_queue"
        case .block: "block"
        }
    }

    /// Parses a label (`timer`, `main_queue`, also `mainQueue`).
    public init?(label: String) {
        switch label {
        case "observer": self = .observer
        case "source0": self = .source0
        case "source1": self = .source1
        case "timer": self = .timer
        case "main_queue", "mainQueue", "main-queue": self = .mainQueue
        case "block": self = .block
        default: return nil
        }
    }

    /// Orders kinds by raw value.
    public static func < (a: CalloutKind, b: CalloutKind) -> Bool { a.rawValue < b.rawValue }
}

/// Why a loop woke (the `wake_reason` enumeration).
public enum WakeReason: UInt8, CaseIterable, Sendable, Codable {
    /// A poll or no identifiable cause.
    case none = 0
    /// The run's own timeout.
    case timeout = 1
    /// An explicit wakeUp.
    case wakeUp = 2
    /// A timer.
    case timer = 3
    /// A source1's fd.
    case source1 = 4
    /// The main queue.
    case mainQueue = 5

    /// The schema label (`wake_up`, `main_queue` …).
    public var label: String {
        switch self {
        case .none: "none"
        case .timeout: "timeout"
        case .wakeUp: "wake_up"
        case .timer: "timer"
        case .source1: "source1"
        case .mainQueue: "main_queue"
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
    public var calloutKind: CalloutKind = .observer
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

    /// Creates an event.
    public init(kind: Kind, ts: Int64) {
        self.kind = kind
        self.ts = ts
    }
}
