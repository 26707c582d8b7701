#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The loop's lock: a plain (non-priority-inheritance) pthread mutex.
///
/// Why not `Synchronization.Mutex`: on Linux it is a priority-inheritance futex. A contended
/// acquire spins about a thousand `pause`s and then enters the kernel (`FUTEX_LOCK_PI`), and an
/// unlock with waiters hands the lock to a sleeping waiter in the kernel, which must be scheduled
/// before anyone can take it. With several threads posting to one loop on few cores that made a
/// lock convoy: the loop's thread and its producers spent most of their time spinning or waiting
/// for a hand-off (issue 16: 8 producers, 37–70 % of all cycles in `_MutexHandle._lockSlow`). A
/// glibc mutex takes an uncontended lock with one compare-and-swap, does not spin, parks a
/// contended waiter on a plain futex, and lets a running thread take a released lock at once (no
/// hand-off), which suits a run loop's short critical sections. Measured on workload 10 of
/// rl-bench (2 cores): 8 producers went from ~14k to ~1.2–2.8M ops/s; an adaptive mutex
/// (spin-then-park, `PTHREAD_MUTEX_ADAPTIVE_NP`) and a trylock-spin-then-lock were within noise of
/// this one, so the one that never spins was kept (spinning only helps when the owner is running,
/// and with more threads than cores it often is not).
/// ThreadSanitizer also intercepts pthread mutexes, so it sees this lock as a lock.
///
/// Not recursive: locking it twice on one thread deadlocks (as `Mutex` traps); RunLoopCore never
/// calls out with it held.
///
/// Safety: the `pthread_mutex_t` lives in memory allocated by `init` and freed only by `deinit`;
/// it is never copied or moved (the lock is a class, and the pointer is a `let`), which POSIX
/// requires of a mutex in use. `deinit` runs only when nothing refers to the lock any more, so no
/// thread can hold or wait for it then (see `ContendedPostingTests`).
final class RLLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        var attr = pthread_mutexattr_t()
        pthread_mutexattr_init(&attr)
        pthread_mutexattr_settype(&attr, Int32(PTHREAD_MUTEX_NORMAL))
        let rc = pthread_mutex_init(mutex, &attr)
        pthread_mutexattr_destroy(&attr)
        precondition(rc == 0, "RunLoopCore: pthread_mutex_init failed (\(rc))")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Acquires the lock (blocks while another thread holds it).
    @inline(__always) func lock() { pthread_mutex_lock(mutex) }

    /// Releases the lock; the calling thread must hold it.
    @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }

    /// Acquires the lock if it is free; returns whether it did.
    @inline(__always) func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }

    /// Runs `body` with the lock held.
    @inline(__always) func withLock<R>(_ body: () throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
