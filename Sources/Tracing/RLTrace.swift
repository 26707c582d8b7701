// The Swift face of the `runloop` LTTng-UST provider.
//
// CONTRACT: RunLoopCore calls exactly these functions (names, labels, types). Each is a cheap
// "is anyone listening" check first; arguments (names above all) are built only when enabled.
// This file currently holds the contract with no-op bodies; the tracing issue fills them in.

/// The kind of a run-loop callout, as recorded in the `runloop` provider's events.
public enum RLTraceCalloutKind: UInt8, Sendable, CaseIterable {
    /// A run-loop observer (activity callout).
    case observer = 0
    /// A version-0 source (signalled, performed by the loop).
    case source0 = 1
    /// A version-1 source (a file descriptor the loop waits on).
    case source1 = 2
    /// A timer.
    case timer = 3
    /// The process's main dispatch queue, drained by the main loop.
    case mainQueue = 4
    /// A perform-block.
    case block = 5
}

/// Why a sleeping run loop woke up.
public enum RLTraceWakeReason: UInt8, Sendable, CaseIterable {
    /// The loop did not sleep (poll), or woke without any cause it could identify.
    case none = 0
    /// The run's own timeout passed.
    case timeout = 1
    /// An explicit wakeUp (also stop and the waking perform conveniences).
    case wakeUp = 2
    /// A timer of the running mode became due.
    case timer = 3
    /// A source1's file descriptor became ready.
    case source1 = 4
    /// The main dispatch queue has work.
    case mainQueue = 5
}

/// Tracepoints of the `runloop` provider. All loop and item ids are process-unique `UInt64`s;
/// times are CLOCK_MONOTONIC nanoseconds (LTTng's own clock), durations nanoseconds.
public enum RLTrace {
    // MARK: lifecycle (INFO)

    /// A run loop was created for thread `tid` (its name, if any).
    @inlinable public static func loopCreated(loop: UInt64, tid: Int32, threadName: @autoclosure () -> String) {}
    /// A run loop was destroyed (its thread exited or it was released).
    @inlinable public static func loopDestroyed(loop: UInt64, tid: Int32) {}
    /// A run activation started. `timeoutNs`: -1 = no timeout (run forever), 0 = poll.
    @inlinable public static func runEnter(loop: UInt64, iteration: UInt64, mode: @autoclosure () -> String,
                                           timeoutNs: Int64, returnAfterSourceHandled: Bool, depth: UInt32) {}
    /// A run activation returned `result` (CF's raw values: finished 1, stopped 2, timedOut 3, handledSource 4).
    @inlinable public static func runExit(loop: UInt64, iteration: UInt64, mode: @autoclosure () -> String,
                                          result: UInt8, depth: UInt32) {}

    // MARK: iterations (DEBUG)

    /// Iteration `iteration` of `loop` begins (iteration numbers are per loop, across runs).
    @inlinable public static func iterationBegin(loop: UInt64, iteration: UInt64) {}
    /// Iteration ends; `callouts` counts every callout of the iteration (observers included).
    @inlinable public static func iterationEnd(loop: UInt64, iteration: UInt64, handledSource: Bool, callouts: UInt32) {}

    // MARK: callouts (DEBUG): an entry and an exit per callout

    /// Entry into an observer callout for `activity` (CF's activity bit).
    @inlinable public static func observerEntry(loop: UInt64, iteration: UInt64, item: UInt64,
                                                name: @autoclosure () -> String, activity: UInt32) {}
    /// Exit from an observer callout.
    @inlinable public static func observerExit(loop: UInt64, iteration: UInt64, item: UInt64,
                                               name: @autoclosure () -> String, activity: UInt32) {}
    /// Entry into a source0's perform.
    @inlinable public static func source0Entry(loop: UInt64, iteration: UInt64, item: UInt64, name: @autoclosure () -> String) {}
    /// Exit from a source0's perform.
    @inlinable public static func source0Exit(loop: UInt64, iteration: UInt64, item: UInt64, name: @autoclosure () -> String) {}
    /// Entry into a source1's callout; `events` is the epoll readiness mask.
    @inlinable public static func source1Entry(loop: UInt64, iteration: UInt64, item: UInt64,
                                               name: @autoclosure () -> String, fd: Int32, events: UInt32) {}
    /// Exit from a source1's callout.
    @inlinable public static func source1Exit(loop: UInt64, iteration: UInt64, item: UInt64,
                                              name: @autoclosure () -> String, fd: Int32, events: UInt32) {}
    /// Entry into a timer's callout; `scheduledNs` is the fire time it was due at.
    @inlinable public static func timerEntry(loop: UInt64, iteration: UInt64, item: UInt64,
                                             name: @autoclosure () -> String, scheduledNs: UInt64) {}
    /// Exit from a timer's callout.
    @inlinable public static func timerExit(loop: UInt64, iteration: UInt64, item: UInt64,
                                            name: @autoclosure () -> String, scheduledNs: UInt64) {}
    /// Entry into the main-queue drain.
    @inlinable public static func mainQueueEntry(loop: UInt64, iteration: UInt64) {}
    /// Exit from the main-queue drain.
    @inlinable public static func mainQueueExit(loop: UInt64, iteration: UInt64) {}
    /// Entry into a perform-block; `item` is the block's sequence number.
    @inlinable public static func blockEntry(loop: UInt64, iteration: UInt64, item: UInt64, name: @autoclosure () -> String) {}
    /// Exit from a perform-block.
    @inlinable public static func blockExit(loop: UInt64, iteration: UInt64, item: UInt64, name: @autoclosure () -> String) {}

    // MARK: sleep and wake (DEBUG)

    /// The loop is about to sleep. `timeoutNs`: -1 = unbounded, else ns until the run's deadline;
    /// `deadlineNs`: the absolute time the wake timer is armed for (0 = not armed).
    @inlinable public static func sleepBegin(loop: UInt64, iteration: UInt64, timeoutNs: Int64, deadlineNs: UInt64) {}
    /// The loop woke (or polled): `reason`, the ready fd (-1 if none) and the time slept.
    @inlinable public static func wake(loop: UInt64, iteration: UInt64, reason: RLTraceWakeReason, fd: Int32, sleptNs: UInt64) {}

    // MARK: cross-thread requests (INFO/DEBUG, emitted on the caller's thread)

    /// Someone asked `loop` to wake up (`accepted` false when the loop was ignoring wake-ups).
    @inlinable public static func wakeUpRequested(loop: UInt64, accepted: Bool) {}
    /// A source0 was signalled (on the signalling thread).
    @inlinable public static func source0Signalled(item: UInt64, name: @autoclosure () -> String) {}

    // MARK: timers and registrations (DEBUG)

    /// A timer was (re)scheduled on `loop` to `fireNs`, having skipped `missedFires` fires.
    @inlinable public static func timerArmed(loop: UInt64, item: UInt64, name: @autoclosure () -> String,
                                             fireNs: UInt64, intervalNs: UInt64, missedFires: UInt64) {}
    /// An item was added to a mode of `loop`.
    @inlinable public static func itemAdded(loop: UInt64, kind: RLTraceCalloutKind, item: UInt64,
                                            name: @autoclosure () -> String, mode: @autoclosure () -> String) {}
    /// An item was removed from a mode of `loop`.
    @inlinable public static func itemRemoved(loop: UInt64, kind: RLTraceCalloutKind, item: UInt64,
                                              name: @autoclosure () -> String, mode: @autoclosure () -> String) {}
}
