#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization
import RunLoopTracing

/// One mode of one loop (CF's `__CFRunLoopMode`). Guarded by the loop's lock.
///
/// Every stored `var` is `@exclusivity(unchecked)`: the loop's lock (or, for `waitSet`'s unlocked
/// read while waiting, the loop's thread, its only writer) already serialises them, and the dynamic
/// checks (`swift_beginAccess`) were about 30% of a loop pass's instructions.
final class ModeState: @unchecked Sendable {
    let name: RLMode
    /// What the mode waits on (wake-up, timer, source1 fds, maybe the main queue). Replaced by
    /// ``RLRunLoop/rebuildModeSetLocked(_:)`` when it holds a registration that cannot be removed.
    @exclusivity(unchecked) var waitSet: Waiter.WaitSet
    @exclusivity(unchecked) var sources0: [RLSource0] = []
    /// Keyed by the source's id (its token in the wait set): O(1) membership for every wake.
    @exclusivity(unchecked) var sources1: [UInt64: RLSource1] = [:]
    /// Sorted by order; ties in insertion order.
    @exclusivity(unchecked) var observers: [RLObserver] = []
    /// The union of the observers' activities. Atomic: written under the lock, read without it by
    /// every ``RLRunLoop/doObservers(_:_:)`` (most activities of most modes have no observer).
    let observerMask = Atomic<UInt32>(0)
    /// Whether `sources0` is non-empty. Atomic for the same reason: step 3 of a pass skips the lock
    /// when the mode has no source0. Sequentially consistent on both sides, like the loop's
    /// `ignoresWakeUps`, so a source added, signalled and woken for from another thread is seen.
    let hasSources0 = Atomic<Bool>(false)
    @exclusivity(unchecked) var timers: TimerQueue
    /// (Whoever sets it also sets the loop's `stopRequested`, as ``RLRunLoop/stop()`` does for a run.)
    @exclusivity(unchecked) var stopped = false
    @exclusivity(unchecked) var mainQueueRegistered = false
    /// Whether the mode is one of the loop's common modes (cached: checked every pass).
    @exclusivity(unchecked) var isCommon = false

    init(name: RLMode, waitSet: Waiter.WaitSet) {
        self.name = name
        self.waitSet = waitSet
        self.timers = TimerQueue(mode: ObjectIdentifier(RLMode.self))
        self.timers = TimerQueue(mode: ObjectIdentifier(self))
    }
    deinit { waitSet.close() }
}

/// The modes an item joined or left in one call, iterated after the lock (for the trace): the first
/// is inline, so the usual single mode costs no allocation, and modes are held unretained (they live
/// as long as their loop, which is running the call), their names read only when iterated.
struct ModeNames: Sequence {
    private var first: Unmanaged<ModeState>?
    private var rest: [Unmanaged<ModeState>] = []

    mutating func append(_ m: ModeState) {
        if first == nil { first = .passUnretained(m) } else { rest.append(.passUnretained(m)) }
    }

    struct Iterator: IteratorProtocol {
        fileprivate var names: ModeNames
        fileprivate var index = -1
        mutating func next() -> RLMode? {
            defer { index += 1 }
            let m = index < 0 ? names.first : (index < names.rest.count ? names.rest[index] : nil)
            return m?._withUnsafeGuaranteedRef { $0.name }
        }
    }
    func makeIterator() -> Iterator { Iterator(names: self) }
}

/// Flags of one run activation (CF's `_per_run_data`), pushed per run so nested runs have their own.
/// The innermost activation's `ignoreWakeUps` is the loop's atomic ``RLRunLoop/ignoresWakeUps``;
/// each activation keeps the value it replaced, restored when it ends.
struct PerRun {
    var stopped = false
    var outerIgnoresWakeUps = false
    /// The activation's absolute deadline (0 = poll, `.max` = none).
    var deadline: UInt64 = .max
}
