// The Swift face of the `runloop` LTTng-UST provider.
//
// CONTRACT: RunLoopCore calls exactly these functions (names, labels, types). Each is a cheap
// "is anyone listening" check first; arguments (names above all) are built only when enabled.
//
// Each body is `#if !RLTRACE_DISABLED  if rl_tp_NAME_enabled() { _NAME(...) }  #endif`: the check is
// a `static inline` C function (one relaxed load of the tracepoint's state word + a branch) that
// inlines into the caller; inside the branch the `@autoclosure` names are evaluated and handed as
// `String`s to the out-of-line `_NAME` helper (generated: RLTrace+Generated.swift; hand-written:
// RLTraceEmit.swift), which converts them (`withCName`) and calls the C emitter. Which events call
// their C emitter inline and which through a helper is RunLoopSchema's `swiftEmitter`. Built with
// RLTRACE_DISABLED=1 in the environment, every body is empty. Events: docs/tracepoints.md.
//
// For callers: the `@autoclosure` arguments are evaluated only when a session records the event,
// but what they capture must exist on the disabled path too. Capture a class reference or a local
// (`name: source.name ?? ""`), never a struct with reference-counted fields (`name: item.name ?? ""`
// on a struct parameter makes the optimizer keep and copy the whole struct: measured +230
// instructions per perform-block, see docs/tracepoints.md "Cost").

#if !RLTRACE_DISABLED
import CRunLoopTracepoints
#endif
import RunLoopSchema

/// Why a sleeping run loop woke up (declared, with its labels and values, in RunLoopSchema).
public typealias RLTraceWakeReason = RLSchemaWakeReason

/// Tracepoints of the `runloop` provider. All loop and item ids are process-unique `UInt64`s;
/// times are CLOCK_MONOTONIC nanoseconds (LTTng's own clock), durations nanoseconds.
public enum RLTrace {
    // MARK: lifecycle (INFO)

    /// A run loop was created for thread `tid` (its name, if any); `iteration` is its counter (0).
    @inlinable @inline(__always) public static func loopCreated(loop: UInt64, iteration: UInt64, tid: Int32,
                                              threadName: @autoclosure () -> String) {
        #if !RLTRACE_DISABLED
        if rl_tp_loop_created_enabled() { _loopCreated(loop, iteration, tid, threadName()) }
        #endif
    }
    /// A run loop was destroyed (its thread exited or it was released) after `iteration` iterations.
    @inlinable @inline(__always) public static func loopDestroyed(loop: UInt64, iteration: UInt64, tid: Int32) {
        #if !RLTRACE_DISABLED
        if rl_tp_loop_destroyed_enabled() { _loopDestroyed(loop, iteration, tid) }
        #endif
    }
    /// A run activation started. `timeoutNs`: -1 = no timeout (run forever), 0 = poll.
    @inlinable @inline(__always) public static func runEnter(loop: UInt64, iteration: UInt64, mode: @autoclosure () -> String,
                                           timeoutNs: Int64, returnAfterSourceHandled: Bool, depth: UInt32) {
        #if !RLTRACE_DISABLED
        if rl_tp_run_enter_enabled() { _runEnter(loop, iteration, mode(), timeoutNs, returnAfterSourceHandled, depth) }
        #endif
    }
    /// A run activation returned `result` (CF's raw values: finished 1, stopped 2, timedOut 3, handledSource 4).
    @inlinable @inline(__always) public static func runExit(loop: UInt64, iteration: UInt64, mode: @autoclosure () -> String,
                                          result: UInt8, depth: UInt32) {
        #if !RLTRACE_DISABLED
        if rl_tp_run_exit_enabled() { _runExit(loop, iteration, mode(), result, depth) }
        #endif
    }

    // MARK: iterations (DEBUG)

    /// Iteration `iteration` of `loop` begins (iteration numbers are per loop, across runs).
    @inlinable @inline(__always) public static func iterationBegin(loop: UInt64, iteration: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_iteration_begin_enabled() { _iterationBegin(loop, iteration) }
        #endif
    }
    /// The innermost open iteration ends; `callouts` counts every callout of the iteration
    /// (observers included).
    @inlinable @inline(__always) public static func iterationEnd(loop: UInt64, handledSource: Bool, callouts: UInt32) {
        #if !RLTRACE_DISABLED
        if rl_tp_iteration_end_enabled() { rl_tp_iteration_end(loop, handledSource, callouts) }
        #endif
    }

    // MARK: callouts (DEBUG): an entry and an exit per callout
    // Ids only: an item's name, kind and modes are described by `itemAdded` and the watchdog's
    // `itemInfo`, the loop's process and thread by `loopCreated` and `loopInfo`, the iteration by
    // `iterationBegin` (docs/tracepoints.md, "Constant pools"). Only a block names itself.

    /// Entry into an observer callout for `activity` (CF's activity bit).
    @inlinable @inline(__always) public static func observerEntry(loop: UInt64, item: UInt64, activity: UInt8) {
        #if !RLTRACE_DISABLED
        if rl_tp_observer_entry_enabled() { rl_tp_observer_entry(loop, item, activity) }
        #endif
    }
    /// Exit from the innermost open callout of this kind.
    @inlinable @inline(__always) public static func observerExit(loop: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_observer_exit_enabled() { rl_tp_observer_exit(loop) }
        #endif
    }
    /// Entry into a source0's perform.
    @inlinable @inline(__always) public static func source0Entry(loop: UInt64, item: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_source0_entry_enabled() { rl_tp_source0_entry(loop, item) }
        #endif
    }
    /// Exit from the innermost open callout of this kind.
    @inlinable @inline(__always) public static func source0Exit(loop: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_source0_exit_enabled() { rl_tp_source0_exit(loop) }
        #endif
    }
    /// Entry into a source1's callout on `fd`; `events` is the epoll readiness mask.
    @inlinable @inline(__always) public static func source1Entry(loop: UInt64, item: UInt64, fd: Int32, events: UInt32) {
        #if !RLTRACE_DISABLED
        if rl_tp_source1_entry_enabled() { rl_tp_source1_entry(loop, item, fd, events) }
        #endif
    }
    /// Exit from the innermost open callout of this kind.
    @inlinable @inline(__always) public static func source1Exit(loop: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_source1_exit_enabled() { rl_tp_source1_exit(loop) }
        #endif
    }
    /// Entry into a timer's callout; `scheduledNs` is the fire time it was due at.
    @inlinable @inline(__always) public static func timerEntry(loop: UInt64, item: UInt64, scheduledNs: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_timer_entry_enabled() { rl_tp_timer_entry(loop, item, scheduledNs) }
        #endif
    }
    /// Exit from the innermost open callout of this kind.
    @inlinable @inline(__always) public static func timerExit(loop: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_timer_exit_enabled() { rl_tp_timer_exit(loop) }
        #endif
    }
    /// Entry into the main-queue drain.
    @inlinable @inline(__always) public static func mainQueueEntry(loop: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_main_queue_entry_enabled() { rl_tp_main_queue_entry(loop) }
        #endif
    }
    /// Exit from the main-queue drain.
    @inlinable @inline(__always) public static func mainQueueExit(loop: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_main_queue_exit_enabled() { rl_tp_main_queue_exit(loop) }
        #endif
    }
    /// Entry into a perform-block; `item` is the block's sequence number. A named block is
    /// described first (`item_info`, kind `block`; `name` is evaluated only then): blocks have no
    /// registration to describe them, and most have no name.
    @inlinable @inline(__always) public static func blockEntry(loop: UInt64, item: UInt64, name: @autoclosure () -> String) {
        #if !RLTRACE_DISABLED
        if rl_tp_block_entry_enabled() { _blockEntry(loop, item, name()) }
        #endif
    }
    /// Exit from the innermost open callout of this kind.
    @inlinable @inline(__always) public static func blockExit(loop: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_block_exit_enabled() { rl_tp_block_exit(loop) }
        #endif
    }

    // MARK: sleep and wake (DEBUG), in the iteration `iterationBegin` opened

    /// The loop is about to sleep. `timeoutNs`: -1 = unbounded, else ns until the run's deadline;
    /// `deadlineNs`: the absolute time the wake timer is armed for (0 = not armed).
    @inlinable @inline(__always) public static func sleepBegin(loop: UInt64, timeoutNs: Int64, deadlineNs: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_sleep_begin_enabled() { rl_tp_sleep_begin(loop, timeoutNs, deadlineNs) }
        #endif
    }
    /// The loop woke (or polled): `reason`, the ready fd (-1 if none) and the time slept.
    @inlinable @inline(__always) public static func wake(loop: UInt64, reason: RLTraceWakeReason, fd: Int32, sleptNs: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_wake_enabled() { rl_tp_wake(loop, reason.rawValue, fd, sleptNs) }
        #endif
    }

    // MARK: cross-thread requests (DEBUG, emitted on the caller's thread, with its tid)

    /// Someone asked `loop` to wake up (`accepted` false when the loop was ignoring wake-ups).
    @inlinable @inline(__always) public static func wakeUpRequested(loop: UInt64, accepted: Bool) {
        #if !RLTRACE_DISABLED
        if rl_tp_wakeup_requested_enabled() { rl_tp_wakeup_requested(loop, accepted) }
        #endif
    }
    /// A source0 was signalled (on the signalling thread): one event per loop it is in (`loop` 0
    /// when it is in none); the events of one signal share `signalSeq` (process-wide, increasing).
    @inlinable @inline(__always) public static func source0Signalled(loop: UInt64, item: UInt64, signalSeq: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_source0_signalled_enabled() { rl_tp_source0_signalled(loop, item, signalSeq) }
        #endif
    }

    // MARK: timers and registrations (DEBUG)

    /// A timer was (re)scheduled on `loop` to `fireNs`, having skipped `missedFires` fires.
    @inlinable @inline(__always) public static func timerArmed(loop: UInt64, item: UInt64, fireNs: UInt64, intervalNs: UInt64, missedFires: UInt32) {
        #if !RLTRACE_DISABLED
        if rl_tp_timer_armed_enabled() { rl_tp_timer_armed(loop, item, fireNs, intervalNs, missedFires) }
        #endif
    }
    /// An item was added to a mode of `loop` (`iteration`: the loop's iteration counter then).
    @inlinable @inline(__always) public static func itemAdded(loop: UInt64, iteration: UInt64, kind: RLCalloutKind,
                                            item: UInt64, name: @autoclosure () -> String,
                                            mode: @autoclosure () -> String) {
        #if !RLTRACE_DISABLED
        if rl_tp_item_added_enabled() { _itemAdded(loop, iteration, kind.rawValue, item, name(), mode()) }
        #endif
    }
    /// An item was removed from a mode of `loop` (`iteration`: the loop's iteration counter then).
    @inlinable @inline(__always) public static func itemRemoved(loop: UInt64, iteration: UInt64, kind: RLCalloutKind,
                                              item: UInt64, name: @autoclosure () -> String,
                                              mode: @autoclosure () -> String) {
        #if !RLTRACE_DISABLED
        if rl_tp_item_removed_enabled() { _itemRemoved(loop, iteration, kind.rawValue, item, name(), mode()) }
        #endif
    }

    // MARK: constant pools and CPU readings (INFO; RunLoopCore's RLHangWatchdog re-emits them)

    /// Describes `loop`: its process `pid` (named `procname`), its thread `tid` (named `threadName`).
    /// Emitted when the loop is created and re-emitted by the watchdog (docs/tracepoints.md, "Constant pools").
    @inlinable @inline(__always) public static func loopInfo(loop: UInt64, pid: Int32, tid: Int32, procname: @autoclosure () -> String, threadName: @autoclosure () -> String) {
        #if !RLTRACE_DISABLED
        if rl_tp_loop_info_enabled() { _loopInfo(loop, pid, tid, procname(), threadName()) }
        #endif
    }
    /// Describes item `item` of `kind` in one `mode` of `loop`: its name and order (0 for kinds without one).
    @inlinable @inline(__always) public static func itemInfo(loop: UInt64, kind: RLCalloutKind, item: UInt64, order: Int64, name: @autoclosure () -> String, mode: @autoclosure () -> String) {
        #if !RLTRACE_DISABLED
        if rl_tp_item_info_enabled() { _itemInfo(loop, kind.rawValue, item, order, name(), mode()) }
        #endif
    }
    /// A long callout of `kind` on `item`: over the `elapsedNs` since the watchdog first saw it, the loop's
    /// thread ran `cpuNs` (read from the thread's CPU clock by the watchdog, not by the loop).
    @inlinable @inline(__always) public static func calloutCPU(loop: UInt64, kind: RLCalloutKind, item: UInt64, elapsedNs: UInt64, cpuNs: UInt64) {
        #if !RLTRACE_DISABLED
        if rl_tp_callout_cpu_enabled() { rl_tp_callout_cpu(loop, kind.rawValue, item, elapsedNs, cpuNs) }
        #endif
    }

    // MARK: hang watchdog (WARNING; RunLoopCore's RLHangWatchdog emits these)

    // A literal (a constant the inlined `hangBegin` folds), equal to `RunLoopSchema.calloutKindLoop`:
    // Tests/RunLoopTracingTests/SchemaTests.swift checks it.
    /// The `callout_kind` value `hang_begin` records for a loop stuck outside any callout (`loop`).
    public static let hangKindLoop: UInt8 = 6

    /// A loop has been stuck for `elapsedNs` (≥ `thresholdNs`) in one callout of `kind` on item
    /// `item` (0 if none) — or, with `kind` nil, in its own code between callouts (recorded as
    /// `loop`, 6). Emitted by the watchdog's thread; `loopTid` is the hung thread. `hangID` is
    /// process-unique, increasing from 1.
    @inlinable @inline(__always) public static func hangBegin(loop: UInt64, iteration: UInt64, hangID: UInt64,
                                                              kind: RLCalloutKind?, item: UInt64,
                                                              name: @autoclosure () -> String, thresholdNs: UInt64,
                                                              elapsedNs: UInt64, loopTid: Int32) {
        #if !RLTRACE_DISABLED
        if rl_tp_hang_begin_enabled() {
            _hangBegin(loop, iteration, hangID, kind?.rawValue ?? hangKindLoop, item, name(), thresholdNs, elapsedNs, loopTid)
        }
        #endif
    }
    /// One stack sample of a hang: `frames` innermost first (at most 64 are recorded). RunLoopCore
    /// emits it from a signal handler on the hung thread itself (C, `rl_hang_capture`); this Swift
    /// entry point emits it on the calling thread (tools and tests).
    @inlinable @inline(__always) public static func hangStack(loop: UInt64, hangID: UInt64, sample: UInt32, elapsedNs: UInt64,
                                                              frames: [UInt64]) {
        #if !RLTRACE_DISABLED
        if rl_tp_hang_stack_enabled() { _hangStack(loop, hangID, sample, elapsedNs, frames) }
        #endif
    }
    /// The hung loop made progress again: the hang lasted `durationNs`; `samples` stacks were taken.
    @inlinable @inline(__always) public static func hangEnd(loop: UInt64, iteration: UInt64, hangID: UInt64,
                                                            durationNs: UInt64, samples: UInt32) {
        #if !RLTRACE_DISABLED
        if rl_tp_hang_end_enabled() { _hangEnd(loop, iteration, hangID, durationNs, samples) }
        #endif
    }
    /// Whether a session records any of `hang_begin`, `hang_stack`, `hang_end` (one branch).
    @inlinable @inline(__always) public static var isHangTraced: Bool {
        #if RLTRACE_DISABLED
        return false
        #else
        return rl_tp_hang_any_enabled()
        #endif
    }
}

/// The events of the `runloop` provider, for ``RLTrace/isEnabled(_:)``: RunLoopSchema's event ids
/// (its names, log levels and fields are stated there once; `isEnabled` covers every one).
public typealias RLTraceEvent = RLSchemaEventID

extension RLSchemaEventID {
    /// The event's full LTTng name, e.g. `runloop:wake`.
    public var lttngName: String { event.fullName }
}

// `RLTrace.isEnabled(_:)` and `RLTrace.isCalloutTraced(_:)`, one case per event and callout kind,
// are generated from RunLoopSchema: RLTrace+Generated.swift.
