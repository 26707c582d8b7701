#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization

/// Everything Linux-specific about how a run loop sleeps, in one small type (the role NIOPosix's
/// `Selector` plays for SwiftNIO's event loop): one wake-up `eventfd` and one `timerfd`
/// (CLOCK_MONOTONIC, absolute, nanoseconds) per loop, and one epoll set per mode (as CF has one
/// port set per mode), each holding the wake-up and timer fds plus the mode's source1 fds (and, on
/// the main loop's common modes, the main dispatch queue's eventfd).
///
/// The wake-up fd is registered edge-triggered and never read on a wake (as mio's eventfd waker
/// does): every write queues one event in every set holding it, and the pending flag, not the fd's
/// counter, says whether a wake-up is still to be taken. That saves a `read` per wake-up, the one
/// system call a wake cycle made besides the wait and the waker's write (docs/benchmarks.md,
/// "Wake latency").
///
/// The loop never names epoll: it makes a ``WaitSet`` per mode, registers and deregisters
/// descriptors in it, and waits on it in one call (``wait(on:poll:)``) that says what ended the
/// wait as a ``Wake``.
final class Waiter {
    /// What ended a wait (CF: which port of the set received a message).
    enum Wake: Equatable {
        /// The loop's wake-up (``wake()``).
        case wakeUp
        /// The loop's timer (armed by ``arm(_:)``).
        case timer
        /// The main dispatch queue has work (main loop, common modes).
        case mainQueue
        /// A source1's descriptor, by the source's id, with what it is ready for.
        case source1(id: UInt64, readiness: RLSource1.Readiness)
    }

    /// One mode's set of descriptors to wait on: an epoll set. Owned by its mode, which calls
    /// ``close()`` when it goes (or when the set is replaced).
    struct WaitSet {
        /// The epoll descriptor (shown by the loop's description).
        let fd: Int32
        /// Closes the set (its registrations go with it).
        func close() { closeDescriptor(fd) }
    }

    // Tokens in `epoll_event.data.u64`: these three, or a source1's id (ids start above them).
    private static let wakeToken: UInt64 = 1
    private static let timerToken: UInt64 = 2
    private static let mainQueueToken: UInt64 = 3
    private static let readable = UInt32(EPOLLIN.rawValue)
    private static let readableEdge = UInt32(EPOLLIN.rawValue) | UInt32(EPOLLET.rawValue)

    /// The wake-up eventfd (non-blocking, close-on-exec).
    let wakeFD: Int32
    /// The loop's single timerfd.
    let timerFD: Int32
    /// The absolute CLOCK_MONOTONIC time the timerfd is armed for; `.max` when disarmed.
    /// `expired` is set when the timerfd was seen readable, so the next `arm` must reset it.
    /// Both are only touched under the loop's lock (no dynamic exclusivity checks needed).
    @exclusivity(unchecked) private(set) var armedDeadline: UInt64 = .max
    @exclusivity(unchecked) private var expired = false
    /// Whether the timerfd itself is programmed (a deadline already due is not: see ``arm(_:)``).
    @exclusivity(unchecked) private var timerfdSet = false
    /// Whether a wake-up is pending: set by the ``wake()`` that writes the wake-up fd, cleared by
    /// ``drainWake()`` when the loop takes it. While it is set, further wake-ups make no system
    /// call (they coalesce into the one the loop takes). An event of the wake-up fd that finds it
    /// clear is stale — its wake-up was taken already, through another mode's set or a poll — and
    /// ``wait(on:poll:)`` waits on. Also lets a poll see a pending wake-up without `epoll_wait`
    /// (``pollOwnFDs(armed:)``): a hint that may be stale in a race, in the harmless direction (at
    /// worst one extra pass, or a wake-up noticed one poll later: a poll never sleeps, and the next
    /// wait ends at once on the event the write queued).
    private let wakePending = Atomic<Bool>(false)

    /// Creates the loop's wake-up and timer fds. Throws when the process is out of descriptors.
    init() throws(RLError) {
        let w = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard w >= 0 else { throw RLError.systemCall("eventfd", errno) }
        let t = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard t >= 0 else {
            let e = errno
            close(w)
            throw RLError.systemCall("timerfd_create", e)
        }
        wakeFD = w
        timerFD = t
    }

    deinit {
        close(wakeFD)
        close(timerFD)
    }

    // MARK: per-mode wait sets

    /// Creates a wait set holding the wake-up and timer fds.
    func makeWaitSet() throws(RLError) -> WaitSet {
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard ep >= 0 else { throw RLError.systemCall("epoll_create1", errno) }
        do {
            // Edge-triggered (see the type's comment). The fd is readable from its first write on,
            // so a set made later starts with one event queued: stale unless a wake-up is pending.
            try Waiter.control(ep, EPOLL_CTL_ADD, wakeFD, events: Waiter.readableEdge, token: Waiter.wakeToken)
            try Waiter.control(ep, EPOLL_CTL_ADD, timerFD, events: Waiter.readable, token: Waiter.timerToken)
        } catch {
            close(ep)
            throw error
        }
        return WaitSet(fd: ep)
    }

    /// Adds a source1's descriptor to `set`, reported as ``Wake/source1(id:readiness:)`` with `id`.
    /// Throws ``RLError/badFileDescriptor(_:)`` or ``RLError/notPollable(_:)`` for a descriptor
    /// that cannot be waited on.
    func register(_ fd: Int32, id: UInt64, interest: RLSource1.Interest, in set: WaitSet) throws(RLError) {
        try Waiter.control(set.fd, EPOLL_CTL_ADD, fd, events: Waiter.epollEvents(interest), token: id)
    }

    /// Adds the main dispatch queue's eventfd to `set` (reported as ``Wake/mainQueue``).
    func registerMainQueue(_ fd: Int32, in set: WaitSet) {
        try? Waiter.control(set.fd, EPOLL_CTL_ADD, fd, events: Waiter.readable, token: Waiter.mainQueueToken)
    }

    /// Removes `fd` from `set`; a descriptor already closed (or never added) is ignored, since the
    /// kernel drops closed descriptors from epoll sets by itself.
    func deregister(_ fd: Int32, from set: WaitSet) {
        var ev = epoll_event()
        _ = epoll_ctl(set.fd, EPOLL_CTL_DEL, fd, &ev)
    }

    /// `epoll_ctl` with the error mapped to ``RLError``.
    private static func control(_ ep: Int32, _ op: Int32, _ fd: Int32, events: UInt32, token: UInt64) throws(RLError) {
        var ev = epoll_event()
        ev.events = events
        ev.data.u64 = token
        if epoll_ctl(ep, op, fd, &ev) != 0 {
            let e = errno
            switch e {
            case EBADF: throw RLError.badFileDescriptor(fd)
            case EPERM: throw RLError.notPollable(fd)
            default: throw RLError.systemCall("epoll_ctl", e)
            }
        }
    }

    /// The epoll events for an interest. ``RLSource1/Interest`` and ``RLSource1/Readiness`` use
    /// poll(2)'s bit values, which epoll shares on Linux (EPOLLIN == POLLIN, …), so both directions
    /// are the identity; the functions keep the loop and the public types free of epoll.
    @inline(__always) private static func epollEvents(_ i: RLSource1.Interest) -> UInt32 { i.rawValue }
    @inline(__always) private static func readiness(_ events: UInt32) -> RLSource1.Readiness { RLSource1.Readiness(rawValue: events) }

    /// Makes a non-blocking, close-on-exec event counter (an eventfd) for a message port.
    static func makeEventCounter() throws(RLError) -> Int32 {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw RLError.systemCall("eventfd", errno) }
        return fd
    }

    // MARK: waking

    /// Queues an event of the wake-up fd in every set: one system call, or none while a wake-up is
    /// already pending.
    ///
    /// Why skipping is safe (no wake-up is lost; see `ContendedPostingTests`): a waker skips only
    /// when its exchange reads `true`, i.e. an earlier ``wake()`` set the flag and ``drainWake()``
    /// has not cleared it yet. That earlier wake writes the fd after setting the flag, so an event
    /// is, or will be, queued in the set the loop waits on, and it is taken as a wake-up since the
    /// flag is still set; the skipper's work is visible to the loop (its exchange is a
    /// read-modify-write before the drain's on the same atomic, acquire-release), and the loop
    /// checks for work after every drain before it sleeps again. The two wake-ups merge into one pass.
    ///
    /// The eventfd's counter only grows (one per write, never read on a wake). Should it ever reach
    /// its maximum (2^64 − 2 writes), the write fails with `EAGAIN`: the counter is reset by a read
    /// and the write made again, so the event is still queued.
    func wake() {
        if wakePending.exchange(true, ordering: .acquiringAndReleasing) { return }
        ring()
    }

    /// Queues an event of the wake-up fd in every set without a wake-up pending: the doorbell of a
    /// timer armed for a time already past while the loop sleeps (``wait(on:poll:timerDue:)``
    /// then reports the timer). On this VM a timerfd set to a past time woke an `epoll_wait`
    /// 39–43 µs later (p50), an eventfd write 8 µs later: the expired hrtimer waits for the next
    /// timer interrupt (docs/benchmarks.md, "A timer due at once").
    func ring() {
        var one: UInt64 = 1
        while true {
            if write(wakeFD, &one, 8) == 8 { return }
            switch errno {
            case EINTR: continue
            case EAGAIN:
                var v: UInt64 = 0
                _ = read(wakeFD, &v, 8)
            default: return
            }
        }
    }

    /// Takes the pending wake-up after the loop was woken by it: clears the flag (no system call:
    /// the event was consumed by the wait that reported it). A wake whose exchange comes after
    /// this one sets the flag again and writes, so the next wait ends at once — at worst one extra
    /// pass, never a lost wake-up.
    func drainWake() {
        _ = wakePending.exchange(false, ordering: .acquiringAndReleasing)
    }

    #if DEBUG
    /// Whether a wake-up is pending (tests).
    var isWakePending: Bool { wakePending.load(ordering: .acquiring) }
    /// Sets the wake-up fd's counter to `value` (tests: the counter's overflow); the fd is read
    /// first, so the counter is exactly `value` after.
    func setWakeCounter(_ value: UInt64) {
        var v: UInt64 = 0
        _ = read(wakeFD, &v, 8)
        var x = value
        _ = write(wakeFD, &x, 8)
    }
    #endif

    // MARK: the timer

    /// Arms the timer for the absolute time `deadline` (`.max` disarms it). A system call is made
    /// only when the deadline changes or the timer expired since it was last armed.
    ///
    /// A deadline already due is not programmed into the timerfd: setting a timerfd to a past time
    /// took 29–30 µs on this VM (the kernel fires the expired hrtimer through the clock-event device
    /// before it returns; a future time took 1 µs), and woke an `epoll_wait` 39–43 µs after the call.
    /// Returns true then (and on every later arm of it until a timer wake is handled): a caller
    /// about to wait on a set, or another thread with the loop asleep, rings the doorbell
    /// (``ring()``, an eventfd write, woke a wait in 8 µs), which ``wait(on:poll:timerDue:)``
    /// reports as the timer; a poll of the loop's own fds sees the due deadline without it. A
    /// programmed timerfd is disarmed, so that it cannot expire later as a timer wake with nothing due.
    @inline(__always) @discardableResult
    func arm(_ deadline: UInt64) -> Bool {
        if deadline != armedDeadline || expired { return rearm(deadline) }
        // Armed already for a deadline that was due (the doorbell's, not the timerfd's): ring
        // again for this wait, since the last ring's event may have been reported as a wake-up
        // (one event for both) or consumed by a wait that handled something else first.
        return !timerfdSet && deadline != .max
    }

    @inline(never)
    private func rearm(_ deadline: UInt64) -> Bool {
        if deadline != .max && deadline <= rl_monotonic_ns() {
            if timerfdSet {
                var off = itimerspec()
                _ = timerfd_settime(timerFD, Int32(TFD_TIMER_ABSTIME), &off, nil)
                timerfdSet = false
            }
            armedDeadline = deadline
            expired = false
            return true
        }
        var spec = itimerspec()
        if deadline != .max {
            // 0 would disarm: an already-due deadline is clamped to 1 ns, which is in the past.
            let d = max(deadline, 1)
            spec.it_value.tv_sec = Int(d / 1_000_000_000)
            spec.it_value.tv_nsec = Int(d % 1_000_000_000)
        }
        _ = timerfd_settime(timerFD, Int32(TFD_TIMER_ABSTIME), &spec, nil)
        timerfdSet = deadline != .max
        armedDeadline = deadline
        expired = false
        return false
    }

    /// Notes that the timerfd was seen readable: its deadline passed; the next ``arm(_:)`` resets it.
    func timerFired() {
        expired = true
        armedDeadline = .max
    }

    /// Whether the deadline the timer is armed for has passed (under the loop's lock).
    func armedDeadlinePassed() -> Bool {
        armedDeadline != .max && armedDeadline <= rl_monotonic_ns()
    }

    // MARK: sleeping

    /// Waits on `set` for one ready descriptor: until one is, or not at all when `poll`. Returns nil
    /// when nothing was ready. `EINTR` is retried (a signal is not a wake-up). An event of the
    /// wake-up fd with no wake-up pending (stale, or the doorbell of ``ring()``) is reported as
    /// the timer when `timerDue()` says the deadline the timer is armed for has passed; otherwise
    /// it ends no wait.
    func wait(on set: WaitSet, poll: Bool, timerDue: () -> Bool = { false }) -> Wake? {
        var ev = epoll_event()
        while true {
            let n = rl_epoll_wait(set.fd, &ev, 1, poll ? 0 : -1)   // no cancellation wrapper (CRunLoopShims.h)
            if n == 1 {
                switch ev.data.u64 {
                case Waiter.wakeToken:
                    // A stale event (its wake-up was taken already) ends no wait: wait, or poll, again
                    // — unless the timer is due (the doorbell of `ring()`).
                    if wakePending.load(ordering: .acquiring) { return .wakeUp }
                    if timerDue() { return .timer }
                    continue
                case Waiter.timerToken: return .timer
                case Waiter.mainQueueToken: return .mainQueue
                case let id: return .source1(id: id, readiness: Waiter.readiness(ev.events))
                }
            }
            if n == 0 { return nil }
            if errno != EINTR { return nil }
        }
    }

    /// What ``wait(on:poll:)`` with `poll` reports for a set holding only the wake-up fd and the
    /// timerfd, without the system call: a pending wake-up (see `wakePending`), else the timer if
    /// `armed`, the deadline it was just armed for (an `arm` resets an expired timerfd), has passed.
    /// When both are ready the wake-up comes first (epoll reports whichever became ready first; the
    /// other is seen on the next pass either way).
    func pollOwnFDs(armed: UInt64) -> Wake? {
        if wakePending.load(ordering: .acquiring) { return .wakeUp }
        if armed != .max && armed <= rl_monotonic_ns() { return .timer }
        return nil
    }

    /// Whether `fd` is readable right now (no waiting).
    static func isReadable(_ fd: Int32) -> Bool {
        rl_poll_readable(fd) != 0
    }
}

/// `close(2)` (a free function: ``Waiter/WaitSet/close()`` would otherwise call itself).
private func closeDescriptor(_ fd: Int32) { close(fd) }
