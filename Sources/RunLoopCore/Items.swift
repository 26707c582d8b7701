#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization
import CRunLoopShims
import RunLoopTracing

/// A loop's identity for the items bound to it: one per loop, made with it, referring to it weakly.
/// Items hold it strongly, so binding an item is one plain retain (a weak reference of their own
/// to the loop cost a side-table update, the most expensive step of adding a timer), and "is this
/// item bound to that loop" is a pointer comparison (a handle outlives no loop it could be confused
/// with: a dead loop's handle stays allocated while an item refers to it).
final class LoopHandle: @unchecked Sendable {
    /// The loop (nil once it is gone). Set once, right after the loop is made.
    weak var loop: RLRunLoop?
    /// The loop's id while it lives, 0 once its deinitialisation began: what a traced signal names,
    /// read without a weak load or an array of loops (`RLSource0.traceSignalled`).
    let liveID = Atomic<UInt64>(0)
}

/// The loop an item is bound to, if any. `bound` tells a never-bound item from one whose loop is
/// gone (which is not free for another loop).
struct WeakLoop {
    private var handle: LoopHandle?
    /// An unbound reference.
    init() {}
    /// A reference bound to `loop`.
    init(loop: RLRunLoop) { handle = loop.handle }
    /// Whether it was ever bound to a loop.
    var bound: Bool { handle != nil }
    /// The loop, if bound and still alive.
    var loop: RLRunLoop? { handle?.loop }
    /// The id of the loop it is bound to while that loop lives, else 0 (no weak load).
    var liveLoopID: UInt64 { handle?.liveID.load(ordering: .relaxed) ?? 0 }
    /// Whether it is bound to `l` (no weak load).
    func isBound(to l: RLRunLoop) -> Bool { handle === l.handle }
    /// Binds an unbound reference to `l`; returns whether it is (now) bound to `l`.
    mutating func claim(_ l: RLRunLoop) -> Bool {
        if handle == nil {
            handle = l.handle
            return true
        }
        return handle === l.handle
    }
}

/// The loop a timer is bound to (CF's `_runLoop` of a timer), held **unretained**: binding a timer
/// to a loop costs no reference-count operation (a retained handle was one of the atomic
/// operations of every timer add).
///
/// The bits: 0 = unbound (free for any loop); 1 = bound to a loop that is gone (not free for
/// another loop, as a ``WeakLoop`` whose loop died); otherwise the address of the loop's
/// ``LoopHandle``.
///
/// Safety (why the unretained handle is never dangling): the bits are read and written only under
/// the timer's state lock (``RLTimer/withState(_:)``), and a loop changes every binding to it
/// before its handle can be released — when a timer leaves its last mode (`removeTimerLocked`,
/// `removeEverywhere`, `invalidateFiredOneShot`), when the loop's thread exits (`threadExited`)
/// and, for timers still in its modes then, in the loop's `deinit`, whose body runs before the
/// loop's stored properties (the handle among them) are destroyed. So a timer lock holder that
/// finds the handle's address here finds a live handle; the handle refers to its loop weakly, so
/// ``loop`` is nil once the loop's deinitialisation began
/// (`EngineFastPathTests.loopDestroyedWhileItsTimersAreReferencedElsewhere`).
struct TimerBinding {
    private var bits: UInt = 0
    /// An unbound binding.
    init() {}
    /// Whether it was bound to a loop (alive or gone): such a timer is not free for another loop.
    var bound: Bool { bits != 0 }
    /// The loop, if bound and still alive (a weak load: off the hot paths).
    var loop: RLRunLoop? {
        guard bits > 1, let p = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<LoopHandle>.fromOpaque(p)._withUnsafeGuaranteedRef { $0.loop }
    }
    /// Whether it is bound to `l` (one comparison).
    @inline(__always) func isBound(to l: RLRunLoop) -> Bool { bits == l.handleBits }
    /// Binds an unbound timer to `l`; returns whether it is (now) bound to `l`.
    @inline(__always) mutating func claim(_ l: RLRunLoop) -> Bool {
        if bits == 0 {
            bits = l.handleBits
            return true
        }
        return bits == l.handleBits
    }
    /// Unbinds it: free for any loop again.
    mutating func unbind() { bits = 0 }
    /// Records that its loop is gone (the loop's `deinit`): bound, but to no loop.
    mutating func loopGone() { bits = 1 }
}

/// The state of an item that belongs to one loop (source1, observer).
protocol LoopBoundState {
    var valid: Bool { get set }
    var loop: WeakLoop { get }
}

/// An item with a ``LoopBoundState`` under its state lock.
protocol LoopBoundItem: AnyObject {
    associatedtype State: LoopBoundState
    func withState<R>(_ body: (inout State) throws -> R) rethrows -> R
}

extension LoopBoundItem {
    /// Marks the item invalid; returns its loop the first time (nil when already invalid or unbound).
    func invalidateState() -> RLRunLoop? {
        withState { s in
            guard s.valid else { return nil }
            s.valid = false
            return s.loop.loop
        }
    }
}

// MARK: - Source0

/// A version-0 source (CF's `CFRunLoopSource` with a version-0 context): application-signalled.
/// ``signal()`` marks it; the next pass of a loop running one of its modes performs it. Signalling
/// does **not** wake the loop (CF semantics): call ``RLRunLoop/wakeUp()`` too, or use
/// ``signalAndWake(_:)``. A source0 may be added to several modes of several loops.
public final class RLSource0: @unchecked Sendable, CustomStringConvertible {
    /// Process-unique id (the trace's `item` field).
    public let id: UInt64
    /// Performs are sorted by order (lower first), then by signal time.
    public let order: Int
    /// A human name, recorded in traces.
    public let name: String?
    let perform: () -> Void
    let schedule: ((RLRunLoop, RLMode) -> Void)?
    let cancel: ((RLRunLoop, RLMode) -> Void)?

    struct State {
        var signalled = false
        var signalSeq: UInt64 = 0
        var valid = true
        var loops: [WeakLoop] = []
    }
    /// The state's lock (0 free, 1 held): see ``withState(_:)``.
    let stateWord = Atomic<UInt32>(0)
    /// Guarded by `stateWord`, reached through ``withState(_:)`` only (`@exclusivity(unchecked)`:
    /// the lock serialises every access).
    @exclusivity(unchecked) var stateStorage = State()
    /// Runs `body` on the source's state, under its lock (`withItemStateLock`, Lock.swift).
    @inline(__always)
    func withState<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try withItemStateLock(stateWord) { try body(&stateStorage) }
    }
    static let signalClock = Atomic<UInt64>(0)

    /// Creates a source0.
    /// - Parameters:
    ///   - order: performs are sorted by order, then by signal time.
    ///   - name: shown in traces and descriptions.
    ///   - schedule: called (on the adding thread, outside locks) when added to a mode of a loop.
    ///   - cancel: called when removed from a mode (or invalidated) for each mode it was in.
    ///   - perform: the callout, on the loop's thread.
    public init(order: Int = 0, name: String? = nil,
                schedule: ((RLRunLoop, RLMode) -> Void)? = nil,
                cancel: ((RLRunLoop, RLMode) -> Void)? = nil,
                perform: @escaping () -> Void) {
        self.id = RLIDs.make()
        self.order = order
        self.name = name
        self.schedule = schedule
        self.cancel = cancel
        self.perform = perform
    }

    /// Marks the source as ready to perform. Does not wake any loop. An invalidated source ignores
    /// it (CF's `CFRunLoopSourceSignal`).
    public func signal() {
        let seq = RLSource0.signalClock.add(1, ordering: .relaxed).newValue
        let valid = withState { s -> Bool in
            guard s.valid else { return false }
            if !s.signalled { s.signalled = true; s.signalSeq = seq }
            return true
        }
        if valid && RLTrace.isEnabled(.source0Signalled) { traceSignalled(seq) }
    }

    /// `source0_signalled`, once per loop the source is in, or
    /// once with loop 0 when it is in none; all with this signal's sequence number. Out of line:
    /// the disabled path is one check.
    @inline(never)
    private func traceSignalled(_ seq: UInt64) {
        // The usual source is in one loop: its id without an array (an array of the loops, made per
        // signal, was the allocation of every traced signal).
        var first: UInt64 = 0
        var others: [UInt64] = []
        withState { s in
            for l in s.loops {
                let i = l.liveLoopID
                if i == 0 { continue }
                if first == 0 { first = i } else { others.append(i) }
            }
        }
        RLTrace.source0Signalled(loop: first, item: id, signalSeq: seq)
        for l in others { RLTrace.source0Signalled(loop: l, item: id, signalSeq: seq) }
    }

    /// Signals the source and wakes `loop` (the usual pairing).
    public func signalAndWake(_ loop: RLRunLoop) {
        signal()
        loop.wakeUp()
    }

    /// Whether the source is signalled and not yet performed.
    public var isSignalled: Bool { withState { $0.signalled } }
    /// Whether the source is still valid.
    public var isValid: Bool { withState { $0.valid } }

    /// Removes the source from every mode of every loop (calling `cancel` for each) and makes it
    /// unusable: it is no longer signalled and ignores ``signal()``, so it is never performed (CF's
    /// `CFRunLoopSourceInvalidate`).
    public func invalidate() {
        let loops: [WeakLoop] = withState { s in
            guard s.valid else { return [] }
            s.valid = false
            s.signalled = false
            return s.loops
        }
        for w in loops { w.loop?.removeEverywhere(self) }
    }

    /// `RLSource0 #id "name" order=…`.
    public var description: String {
        "RLSource0 #\(id)\(name.map { " \"\($0)\"" } ?? "") order=\(order) signalled=\(isSignalled) valid=\(isValid)"
    }
}

// MARK: - Source1

/// A version-1 source: a file descriptor the loop waits on (CF's port-based source). Unlike CF on
/// Linux, which only reads 8-byte eventfd/timerfd values, any pollable descriptor works — sockets,
/// pipes, eventfds, timerfds, ttys. The callout receives the descriptor and its readiness and must
/// consume the data itself (the descriptor is level-triggered: unconsumed input is reported again).
/// A source1 belongs to one loop (it may be in several of its modes). RunLoopCore never closes the fd.
public final class RLSource1: @unchecked Sendable, CustomStringConvertible, LoopBoundItem {
    /// What to wait for. The bits are poll(2)'s (POLLIN 0x1, POLLOUT 0x4), the values traces record.
    public struct Interest: OptionSet, Sendable, Hashable {
        /// The poll(2) bits.
        public let rawValue: UInt32
        /// Creates an interest from poll(2) bits.
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Readable (POLLIN).
        public static let read = Interest(rawValue: 0x1)
        /// Writable (POLLOUT).
        public static let write = Interest(rawValue: 0x4)
    }
    /// What the descriptor is ready for. The bits are poll(2)'s (POLLIN 0x1, POLLPRI 0x2, POLLOUT
    /// 0x4, POLLERR 0x8, POLLHUP 0x10, POLLRDHUP 0x2000), as a source1 callout's trace records them.
    public struct Readiness: OptionSet, Sendable, Hashable, CustomStringConvertible {
        /// The poll(2) bits.
        public let rawValue: UInt32
        /// Creates a readiness set from poll(2) bits.
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        /// Data can be read (POLLIN).
        public static let readable = Readiness(rawValue: 0x1)
        /// Data can be written (POLLOUT).
        public static let writable = Readiness(rawValue: 0x4)
        /// An error condition (POLLERR).
        public static let error = Readiness(rawValue: 0x8)
        /// The peer hung up (POLLHUP).
        public static let hangup = Readiness(rawValue: 0x10)
        /// The set's names joined by `|`.
        public var description: String {
            var p: [String] = []
            if contains(.readable) { p.append("readable") }
            if contains(.writable) { p.append("writable") }
            if contains(.error) { p.append("error") }
            if contains(.hangup) { p.append("hangup") }
            return p.isEmpty ? "none" : p.joined(separator: "|")
        }
    }

    /// Process-unique id (the trace's `item` field, also its token in the loop's wait sets).
    public let id: UInt64
    /// The descriptor waited on.
    public let fd: Int32
    /// What the loop waits for.
    public let interest: Interest
    /// Order (CF keeps it; with one ready descriptor per iteration it does not sort anything).
    public let order: Int
    /// A human name, recorded in traces.
    public let name: String?
    let handler: (RLSource1, Int32, Readiness) -> Void
    /// The file the fd referred to when the source was made: removal only touches the wait-set
    /// registration while the fd number still refers to that file (it may have been closed and
    /// reused for another file behind the source's back).
    let fileIdentity: FileIdentity

    struct State: LoopBoundState {
        var valid = true
        var loop = WeakLoop()
    }
    /// The state's lock (0 free, 1 held): see ``withState(_:)``.
    let stateWord = Atomic<UInt32>(0)
    /// Guarded by `stateWord`, reached through ``withState(_:)`` only (`@exclusivity(unchecked)`:
    /// the lock serialises every access).
    @exclusivity(unchecked) var stateStorage = State()
    /// Runs `body` on the state, under its lock (`withItemStateLock`, Lock.swift).
    @inline(__always)
    func withState<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try withItemStateLock(stateWord) { try body(&stateStorage) }
    }

    /// Creates a source for `fd`. Throws ``RLError/badFileDescriptor(_:)`` when `fd` is not open.
    /// Whether it can be polled is checked when it is added to a mode (``RLError/notPollable(_:)``).
    public init(fd: Int32, interest: Interest = .read, order: Int = 0, name: String? = nil,
                handler: @escaping (_ source: RLSource1, _ fd: Int32, _ readiness: Readiness) -> Void) throws(RLError) {
        guard fd >= 0, let identity = FileIdentity.of(fd) else { throw RLError.badFileDescriptor(fd) }
        self.fileIdentity = identity
        precondition(!interest.isEmpty, "RunLoopCore: a source1 needs .read and/or .write interest")
        self.id = RLIDs.make()
        self.fd = fd
        self.interest = interest
        self.order = order
        self.name = name
        self.handler = handler
    }

    /// Whether the source is still valid.
    public var isValid: Bool { withState { $0.valid } }

    /// Removes the source from its loop's modes and makes it unusable. Does not close the fd.
    public func invalidate() {
        invalidateState()?.removeEverywhere(self)
    }

    /// `RLSource1 #id "name" fd=… interest=…`.
    public var description: String {
        "RLSource1 #\(id)\(name.map { " \"\($0)\"" } ?? "") fd=\(fd) interest=\(interest.contains(.read) ? "r" : "")\(interest.contains(.write) ? "w" : "") valid=\(isValid)"
    }
}

/// A file's identity (`st_dev`, `st_ino`).
struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64
    /// What `fd` refers to now (nil if it is closed).
    static func of(_ fd: Int32) -> FileIdentity? {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return FileIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }
}

// MARK: - Observer

/// A run-loop observer (CF's `CFRunLoopObserver`): called at the activities in its mask. Observers
/// of a mode are called in order (lower first; ties in insertion order). A non-repeating observer
/// is invalidated after its first callout. An observer never re-enters itself. Belongs to one loop
/// while it is in any of its modes; once removed from all of them it may join another (CF).
public final class RLObserver: @unchecked Sendable, CustomStringConvertible, LoopBoundItem {
    /// Process-unique id.
    public let id: UInt64
    /// The activities observed.
    public let activities: RLActivity
    /// Whether it stays after its first callout.
    public let repeats: Bool
    /// Call order among the mode's observers.
    public let order: Int
    /// A human name, recorded in traces.
    public let name: String?
    let callout: (RLObserver, RLActivity) -> Void

    struct State: LoopBoundState {
        var valid = true
        var firing = false
        /// The loop it is bound to: set when it joins a first mode, released when it leaves its
        /// last one (CF's `_runLoop` and `_rlCount`), so it may then join another loop.
        var loop = WeakLoop()
        /// How many modes of its loop hold it.
        var modeCount = 0
    }
    /// The state's lock (0 free, 1 held): see ``withState(_:)``.
    let stateWord = Atomic<UInt32>(0)
    /// Guarded by `stateWord`, reached through ``withState(_:)`` only (`@exclusivity(unchecked)`:
    /// the lock serialises every access).
    @exclusivity(unchecked) var stateStorage = State()
    /// Runs `body` on the state, under its lock (`withItemStateLock`, Lock.swift).
    @inline(__always)
    func withState<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try withItemStateLock(stateWord) { try body(&stateStorage) }
    }

    /// Creates an observer.
    public init(activities: RLActivity, repeats: Bool = true, order: Int = 0, name: String? = nil,
                callout: @escaping (_ observer: RLObserver, _ activity: RLActivity) -> Void) {
        self.id = RLIDs.make()
        self.activities = activities
        self.repeats = repeats
        self.order = order
        self.name = name
        self.callout = callout
    }

    /// Whether the observer is still valid.
    public var isValid: Bool { withState { $0.valid } }

    /// Removes the observer from its loop's modes; it is never called again.
    public func invalidate() {
        invalidateState()?.removeEverywhere(self)
    }

    /// `RLObserver #id "name" activities=… order=…`.
    public var description: String {
        "RLObserver #\(id)\(name.map { " \"\($0)\"" } ?? "") activities=\(activities) repeats=\(repeats) order=\(order) valid=\(isValid)"
    }
}

// MARK: - Timer

/// A run-loop timer (CF's `CFRunLoopTimer`). Fires at its fire date (a date in the past means now),
/// then — if repeating — at the next `fire + k·interval` after now: missed fires are skipped and the
/// phase is kept. With a tolerance it may fire anywhere in `[fire, fire + tolerance]`, which lets the
/// loop serve several timers with one wake-up (CF on Linux ignores tolerance). A timer belongs to
/// one loop and may be in several of its modes; once removed from all of them it belongs to none
/// and may join another loop (CF). Timers never count as "handled sources".
public final class RLTimer: @unchecked Sendable, CustomStringConvertible {
    // The state and its lock first: with the reference count they share the object's first cache
    // line, and what adding or firing a timer touches ends in the second (the other fields after).
    /// The state's lock (0 free, 1 held): see ``withState(_:)``.
    let stateWord = Atomic<UInt32>(0)
    /// Guarded by `stateWord`, reached through ``withState(_:)`` only (`@exclusivity(unchecked)`:
    /// the lock serialises every access).
    @exclusivity(unchecked) var stateStorage: State
    /// Process-unique id.
    public let id: UInt64
    /// Kept for CF parity; it does not order anything (timers fire in fire-date order).
    public let order: Int
    /// A human name, recorded in traces.
    public let name: String?
    let callout: (RLTimer) -> Void

    /// CF's TIMER_INTERVAL_LIMIT: longer intervals are clamped to it (about 16 years).
    static let intervalLimitNs: UInt64 = 504_911_232 * 1_000_000_000

    struct State {
        /// When it is due: the date it was given, or the time it was given if that date was past
        /// (CF's `_fireTSR`). The key the loop orders and fires timers by.
        var fireNs: UInt64
        /// The date it reports (CF's `_nextFireDate`): the date as given (possibly past), or the
        /// computed next fire after a repeating fire.
        var dateNs: UInt64
        var intervalNs: UInt64
        var toleranceNs: UInt64
        var valid = true
        var firing = false
        /// The loop it is bound to: set when it joins a first mode, released when it leaves its
        /// last one (CF's `_runLoop`), so it may then join another loop.
        var loop = TimerBinding()
        var memberships = TimerMemberships()
    }

    /// Creates a timer.
    /// - Parameters:
    ///   - fireAt: the first fire date. A date in the past means the time of this call (CF's
    ///     `CFRunLoopTimerCreate`): past-dated timers fire in the order they were made, after any
    ///     timer already due before then; ``nextFireDate`` still reports the date as given.
    ///   - interval: 0 or negative = one-shot (invalidated after firing); longer than about 16 years
    ///     is clamped to CF's limit.
    ///   - tolerance: how late it may fire to share a wake-up (negative = 0; capped at the interval
    ///     for repeating timers).
    ///   - callout: runs on the loop's thread.
    public init(fireAt: RLInstant, interval: Duration = .zero, tolerance: Duration = .zero,
                order: Int = 0, name: String? = nil, callout: @escaping (RLTimer) -> Void) {
        self.id = RLIDs.make()
        self.order = order
        self.name = name
        self.callout = callout
        let iv = RLTimer.clampInterval(RLInstant.nanoseconds(of: interval))
        stateStorage = State(fireNs: max(fireAt.nanoseconds, rl_monotonic_ns()), dateNs: fireAt.nanoseconds, intervalNs: iv,
                             toleranceNs: RLTimer.clampTolerance(RLInstant.nanoseconds(of: tolerance), interval: iv))
    }

    /// Creates a timer with CF-style seconds. `interval` ≤ 0 is one-shot; NaN is a programming error
    /// (precondition); +∞ is clamped to CF's interval limit. `fireAfter` is relative to now.
    public convenience init(fireAfter seconds: Double, interval: Double = 0, tolerance: Double = 0,
                            order: Int = 0, name: String? = nil, callout: @escaping (RLTimer) -> Void) {
        precondition(!interval.isNaN, "RunLoopCore: a timer interval must not be NaN")
        precondition(!tolerance.isNaN, "RunLoopCore: a timer tolerance must not be NaN")
        let iv: Duration = interval <= 0 ? .zero : (interval > 504_911_232 ? .seconds(504_911_232) : .nanoseconds(Int64(interval * 1e9)))
        let tol: Duration = tolerance <= 0 ? .zero : (tolerance > 504_911_232 ? .seconds(504_911_232) : .nanoseconds(Int64(tolerance * 1e9)))
        self.init(fireAt: RLInstant.now.advanced(bySeconds: seconds), interval: iv, tolerance: tol,
                  order: order, name: name, callout: callout)
    }

    static func clampInterval(_ ns: Int64) -> UInt64 { ns <= 0 ? 0 : min(UInt64(ns), intervalLimitNs) }
    static func clampTolerance(_ ns: Int64, interval: UInt64) -> UInt64 {
        let t: UInt64 = ns <= 0 ? 0 : UInt64(ns)
        return interval > 0 ? min(t, interval) : min(t, intervalLimitNs)
    }

    /// Whether the timer is still valid.
    public var isValid: Bool { withState { $0.valid } }
    /// Whether it repeats.
    public var repeats: Bool { withState { $0.intervalNs > 0 } }
    /// The interval (zero for a one-shot timer).
    public var interval: Duration { .nanoseconds(Int64(withState { $0.intervalNs })) }
    /// The next fire date (CF's `CFRunLoopTimerGetNextFireDate`): the date given to the initialiser
    /// or to ``setNextFireDate(_:)`` — as given, even if it was in the past (the timer is then due
    /// from the time it was given) — or, after a repeating fire, the computed next one. Inside the
    /// timer's callout, the date being fired. Nil once the timer is invalidated: it has no next
    /// fire (CF returns 0, its "none"), and ``setNextFireDate(_:)`` does not give it one.
    public var nextFireDate: RLInstant? {
        withState { $0.valid ? RLInstant(nanoseconds: $0.dateNs) : nil }
    }

    /// The tolerance. Setting a negative value sets 0; a repeating timer's is capped at its interval.
    public var tolerance: Duration {
        get { .nanoseconds(Int64(withState { $0.toleranceNs })) }
        set {
            update { s in
                s.toleranceNs = RLTimer.clampTolerance(RLInstant.nanoseconds(of: newValue), interval: s.intervalNs)
            }
        }
    }

    /// Moves the next fire date (any thread; CF's `CFRunLoopTimerSetNextFireDate`). A date in the
    /// past means now: the timer is due from the time of this call (so it fires after timers that
    /// were already due), while ``nextFireDate`` reports the date as given. Inside the timer's own
    /// callout the new date — never earlier than the one being fired, thanks to that rule — replaces
    /// the computed next fire. Called from another thread than its loop's, it also wakes that loop,
    /// as CF does. An invalidated timer ignores it.
    public func setNextFireDate(_ date: RLInstant) {
        let fire = max(date.nanoseconds, rl_monotonic_ns())
        let loop = update { s in
            guard s.valid else { return }
            s.fireNs = fire
            s.dateNs = date.nanoseconds
        }
        if let loop, isValid, !loop.isOnLoopThread { loop.wakeUp() }
    }

    /// Applies `change` to the timer's state; when the timer is bound to a loop, under that loop's
    /// lock, repositioning it in the loop's modes (retried if it changes loops meanwhile). Returns
    /// the loop it is bound to, if any.
    @discardableResult
    func update(_ change: (inout State) -> Void) -> RLRunLoop? {
        while true {
            let loop: RLRunLoop? = withState { s in
                if let l = s.loop.loop { return l }
                change(&s)   // not bound (or its loop is gone): nothing to reposition
                return nil
            }
            guard let loop else { return nil }
            if loop.reschedule(self, change) { return loop }
        }
    }

    /// Removes the timer from its loop's modes; it never fires again.
    public func invalidate() {
        let loop: RLRunLoop? = withState { s in
            guard s.valid else { return nil }
            s.valid = false
            return s.loop.loop
        }
        loop?.removeEverywhere(self)
    }

    /// For a queue entry of mode `mode` stamped `stamp`: whether it is live (the timer's membership
    /// in that mode still has that stamp) and whether the timer's callout is running, in one
    /// section of its lock.
    @inline(__always)
    func queueState(mode: ObjectIdentifier, stamp: UInt64) -> (live: Bool, firing: Bool) {
        withState { ($0.memberships.stamp(in: mode) == stamp, $0.firing) }
    }

    /// `RLTimer #id "name" fire=… interval=… tolerance=…` (`fire` is when it is due).
    public var description: String {
        let s = withState { $0 }
        return "RLTimer #\(id)\(name.map { " \"\($0)\"" } ?? "") fire=\(RLInstant(nanoseconds: s.fireNs)) interval=\(Double(s.intervalNs) / 1e9)s tolerance=\(Double(s.toleranceNs) / 1e9)s valid=\(s.valid)"
    }
}

/// A timer's state lock: the items' word lock (`withItemStateLock`, Lock.swift), its state kept
/// inline in the timer. `Synchronization.Mutex` cost a compare-and-swap for each of lock and
/// unlock plus a thread-id lookup.
extension RLTimer {
    /// Runs `body` on the timer's state, under its lock.
    @inline(__always)
    func withState<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try withItemStateLock(stateWord) { try body(&stateStorage) }
    }
}
