#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization

/// Everything Linux-specific about how a run loop sleeps, in one small type (the role NIOPosix's
/// `SelectorEpoll` plays for SwiftNIO): one wake-up `eventfd` and one `timerfd` (CLOCK_MONOTONIC,
/// absolute, nanoseconds) per loop, and one epoll set per mode (as CF has), each holding the wake-up
/// and timer fds plus the mode's source1 fds (and, on the main loop's common modes, the main
/// dispatch queue's eventfd).
///
/// Tokens in `epoll_event.data.u64`: ``Waiter/wakeToken``, ``Waiter/timerToken``,
/// ``Waiter/mainQueueToken``, or a source1's id (ids start above the reserved range).
final class Waiter {
    static let wakeToken: UInt64 = 1
    static let timerToken: UInt64 = 2
    static let mainQueueToken: UInt64 = 3

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
    /// ``drainWake()`` before it reads the fd. While it is set, further wake-ups make no system call
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

    // MARK: per-mode epoll sets

    /// Creates an epoll set holding the wake-up and timer fds.
    func makeModeSet() throws(RLError) -> Int32 {
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard ep >= 0 else { throw RLError.systemCall("epoll_create1", errno) }
        do {
            try Waiter.control(ep, EPOLL_CTL_ADD, wakeFD, events: UInt32(EPOLLIN.rawValue), token: Waiter.wakeToken)
            try Waiter.control(ep, EPOLL_CTL_ADD, timerFD, events: UInt32(EPOLLIN.rawValue), token: Waiter.timerToken)
        } catch {
            close(ep)
            throw error
        }
        return ep
    }

    /// `epoll_ctl` with the error mapped to ``RLError``.
    static func control(_ ep: Int32, _ op: Int32, _ fd: Int32, events: UInt32, token: UInt64) throws(RLError) {
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

    /// Removes `fd` from an epoll set; a descriptor already closed (or never added) is ignored,
    /// since the kernel drops closed descriptors from epoll sets by itself.
    static func remove(_ ep: Int32, _ fd: Int32) {
        var ev = epoll_event()
        _ = epoll_ctl(ep, EPOLL_CTL_DEL, fd, &ev)
    }

    // MARK: waking

    /// Makes the wake-up fd readable: one system call, or none while a wake-up is already pending.
    ///
    /// Why skipping is safe (no wake-up is lost; see `ContendedPostingTests`): a waker skips only
    /// when its exchange reads `true`, i.e. an earlier ``wake()`` set the flag and ``drainWake()``
    /// has not cleared it yet. That earlier wake writes the fd after setting the flag, and the loop
    /// clears the flag (an exchange, below) before it reads the fd, so either the write is consumed
    /// by a drain that comes after this skip, or it is still to come and ends the next wait. The
    /// work the skipping waker queued before calling is visible to the loop after that drain: both
    /// exchanges are read-modify-writes on one atomic (acquire-release), so the drain's exchange
    /// synchronises with this one. It is the outcome the unskipped write had when it landed before
    /// the drain's read: the two wake-ups merge into one pass.
    func wake() {
        if wakePending.exchange(true, ordering: .acquiringAndReleasing) { return }
        var one: UInt64 = 1
        while write(wakeFD, &one, 8) < 0 && errno == EINTR {}
    }

    /// Resets the wake-up fd after the loop was woken by it (clears the pending flag first: a wake
    /// after this point writes the fd again).
    func drainWake() {
        _ = wakePending.exchange(false, ordering: .acquiringAndReleasing)
        var v: UInt64 = 0
        while read(wakeFD, &v, 8) < 0 && errno == EINTR {}
    }

    // MARK: the timer

    /// Arms the timerfd for the absolute time `deadline` (`.max` disarms it). A system call is made
    /// only when the deadline changes or the timer expired since it was last armed.
    func arm(_ deadline: UInt64) {
        if deadline == armedDeadline && !expired { return }
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

    /// Waits on the epoll set `ep` for one event: forever, or not at all when `poll`.
    /// Returns nil when nothing was ready. `EINTR` is retried (a signal is not a wake-up).
    func wait(on ep: Int32, poll: Bool) -> (token: UInt64, events: UInt32)? {
        var ev = epoll_event()
        while true {
            let n = rl_epoll_wait(ep, &ev, 1, poll ? 0 : -1)   // no cancellation wrapper (CRunLoopShims.h)
            if n == 1 { return (ev.data.u64, ev.events) }
            if n == 0 { return nil }
            if errno != EINTR { return nil }
        }
    }

    /// What `epoll_wait` with a zero timeout reports for a set holding only the wake-up fd and the
    /// timerfd, without the system call: a pending wake-up (see `wakePending`), else the timerfd if
    /// `armed`, the deadline it was just armed for (an `arm` resets an expired timerfd), has passed.
    /// When both are ready the wake-up comes first (epoll reports whichever became ready first; the
    /// other is seen on the next pass either way).
    func pollOwnFDs(armed: UInt64) -> (token: UInt64, events: UInt32)? {
        if wakePending.load(ordering: .acquiring) { return (Waiter.wakeToken, UInt32(EPOLLIN.rawValue)) }
        if armed != .max && armed <= rl_monotonic_ns() { return (Waiter.timerToken, UInt32(EPOLLIN.rawValue)) }
        return nil
    }

    /// Whether `fd` is readable right now (no waiting).
    static func isReadable(_ fd: Int32) -> Bool {
        rl_poll_readable(fd) != 0
    }
}
