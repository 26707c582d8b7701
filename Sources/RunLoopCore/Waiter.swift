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

    /// The wake-up eventfd (non-blocking, close-on-exec).
    let wakeFD: Int32
    /// The loop's single timerfd.
    let timerFD: Int32
    /// The absolute CLOCK_MONOTONIC time the timerfd is armed for; `.max` when disarmed.
    /// `expired` is set when the timerfd was seen readable, so the next `arm` must reset it.
    /// Both are only touched under the loop's lock (no dynamic exclusivity checks needed).
    @exclusivity(unchecked) private(set) var armedDeadline: UInt64 = .max
    @exclusivity(unchecked) private var expired = false
    /// Whether a wake-up is pending: set by the ``wake()`` that writes the wake-up fd, cleared by
    /// ``drainWake()`` after it read the fd. While it is set, further wake-ups make no system call
    /// (they coalesce, as the eventfd's counter would: one read drains them all). Also lets a poll
    /// see a pending wake-up without `epoll_wait` (``pollOwnFDs(armed:)``): a hint that may be
    /// stale in a race, in the harmless direction (at worst one extra pass, or a wake-up noticed
    /// one poll later: a poll never sleeps, and the next wait ends at once on the readable fd).
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
            try Waiter.control(ep, EPOLL_CTL_ADD, wakeFD, events: Waiter.readable, token: Waiter.wakeToken)
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

    /// Makes the wake-up fd readable: one system call, or none while a wake-up is already pending.
    ///
    /// Why skipping is safe (no wake-up is lost; see `ContendedPostingTests`): a waker skips only
    /// when its exchange reads `true`, i.e. an earlier ``wake()`` set the flag and ``drainWake()``
    /// has not cleared it yet. That earlier wake writes the fd after setting the flag, so the fd is,
    /// or will be, readable until a drain reads it, and a drain clears the flag only *after* its
    /// read: the skipping waker's work is then visible to the loop (the drain's exchange is a
    /// read-modify-write after the skipper's on the same atomic, acquire-release), and the loop
    /// checks for work after every drain before it sleeps again. The two wake-ups merge into one pass.
    ///
    /// The order in ``drainWake()`` matters: clearing the flag *before* the read lost wake-ups — a
    /// waker could set the flag after the clear and write the fd before the read, whose read then
    /// consumed that write and left the flag set with the fd empty, so every later wake skipped and
    /// the loop slept for good (seen as a worker that never ended in `StressTests`).
    func wake() {
        if wakePending.exchange(true, ordering: .acquiringAndReleasing) { return }
        var one: UInt64 = 1
        while write(wakeFD, &one, 8) < 0 && errno == EINTR {}
    }

    /// Resets the wake-up fd after the loop was woken by it: reads the fd, then clears the pending
    /// flag (in that order: see ``wake()``). A wake whose write lands after the read leaves the fd
    /// readable, so the next wait ends at once — at worst one extra pass, never a lost wake-up.
    func drainWake() {
        var v: UInt64 = 0
        while read(wakeFD, &v, 8) < 0 && errno == EINTR {}
        #if DEBUG
        afterDrainRead?()
        #endif
        _ = wakePending.exchange(false, ordering: .acquiringAndReleasing)
    }

    #if DEBUG
    /// Test hook (debug builds): runs between the drain's read and its clearing of the flag, to
    /// put a racing ``wake()`` exactly there (`ContendedPostingTests`).
    var afterDrainRead: (() -> Void)?
    /// Whether a wake-up is pending (tests: a pending flag must always mean a readable fd).
    var isWakePending: Bool { wakePending.load(ordering: .acquiring) }
    #endif

    // MARK: the timer

    /// Arms the timerfd for the absolute time `deadline` (`.max` disarms it). A system call is made
    /// only when the deadline changes or the timer expired since it was last armed.
    @inline(__always)
    func arm(_ deadline: UInt64) {
        if deadline != armedDeadline || expired { rearm(deadline) }
    }

    @inline(never)
    private func rearm(_ deadline: UInt64) {
        var spec = itimerspec()
        if deadline != .max {
            // 0 would disarm: an already-due deadline is clamped to 1 ns, which is in the past.
            let d = max(deadline, 1)
            spec.it_value.tv_sec = Int(d / 1_000_000_000)
            spec.it_value.tv_nsec = Int(d % 1_000_000_000)
        }
        _ = timerfd_settime(timerFD, Int32(TFD_TIMER_ABSTIME), &spec, nil)
        armedDeadline = deadline
        expired = false
    }

    /// Notes that the timerfd was seen readable: its deadline passed; the next ``arm(_:)`` resets it.
    func timerFired() {
        expired = true
        armedDeadline = .max
    }

    // MARK: sleeping

    /// Waits on `set` for one ready descriptor: until one is, or not at all when `poll`. Returns nil
    /// when nothing was ready. `EINTR` is retried (a signal is not a wake-up).
    func wait(on set: WaitSet, poll: Bool) -> Wake? {
        var ev = epoll_event()
        while true {
            let n = rl_epoll_wait(set.fd, &ev, 1, poll ? 0 : -1)   // no cancellation wrapper (CRunLoopShims.h)
            if n == 1 {
                switch ev.data.u64 {
                case Waiter.wakeToken: return .wakeUp
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
