#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// The loop's lock: an atomic word taken with one compare-and-swap and released with one atomic
/// subtraction, whose contended waiters park on a POSIX semaphore.
///
/// Why not `Synchronization.Mutex`: on Linux it is a priority-inheritance futex. A contended
/// acquire spins about a thousand `pause`s and then enters the kernel (`FUTEX_LOCK_PI`), and an
/// unlock with waiters hands the lock to a sleeping waiter in the kernel, which must be scheduled
/// before anyone can take it. With several threads posting to one loop on few cores that made a
/// lock convoy: the loop's thread and its producers spent most of their time spinning or waiting
/// for a hand-off (8 producers, 37–70 % of all cycles in `_MutexHandle._lockSlow`).
/// A glibc mutex fixed that (8 producers went from ~14k to ~1.2–2.8M ops/s on workload 10 of
/// rl-bench; an adaptive mutex and a trylock-spin were within noise of it): it takes an
/// uncontended lock with one compare-and-swap, does not spin, parks a contended waiter, and lets
/// a running thread take a released lock at once (no hand-off).
///
/// This lock keeps exactly those properties and drops the rest of `pthread_mutex_lock`/`unlock`
/// (type dispatch, owner bookkeeping, lock elision checks): about 55 instructions and 11 ns per
/// uncontended lock/unlock pair on the development VM, where this one is a dozen instructions
/// inlined at the call site and two atomic operations (a chained perform-block
/// takes 3.5 loop-lock sections). glibc offers no futex call Swift can reach (`syscall` is
/// variadic), so waiters park on a semaphore (`sem_wait`, itself a futex) instead.
///
/// The word: bit 0 = held; bit 1 = a wake-up is in flight (posted, its waiter not yet running);
/// the rest counts waiters (4 per waiter) that registered and may be parked. `lock()`: a
/// compare-and-swap setting bit 0 when it is clear (waiters or not: a running thread barges, as
/// with a glibc mutex). Otherwise `lockSlow()` registers (+4), then loops: take the lock if bit 0
/// is clear (in the same compare-and-swap, unregistering), else `sem_wait`; a woken waiter clears
/// bit 1 before it looks again. `unlock()`: subtract 1 (release); if waiters are registered and no
/// wake-up is in flight, set bit 1 and `sem_post` once (one waiter woken at a time, as a glibc
/// mutex does, instead of a post per unlock).
///
/// Why no wake-up is lost: a waiter parks only after registering, and registration precedes its
/// check of bit 0 (all on the one word). An unlock that clears bit 0 after that registration sees
/// the registration (read-modify-write order on the word) and posts — unless a wake-up is in
/// flight, whose waiter, once running, clears bit 1 and then re-checks bit 0 (and finds it clear,
/// or parks again with bit 1 clear, so the next unlock posts). The semaphore counts, so a post made
/// before its waiter reaches `sem_wait` makes that wait return at once. An unlock that cleared
/// bit 0 before the registration is seen by the waiter's check, which then takes the lock. A post
/// consumed by another waiter than expected only moves which waiter runs; a left-over post makes a
/// later wait return early and re-check: spurious, never a missed wake-up (`ContendedPostingTests`).
///
/// Acquire on the successful compare-and-swaps and release on the subtraction give the
/// happens-before edges of a mutex; ThreadSanitizer sees them through the atomics (and the
/// semaphore calls, which it intercepts), so TSan runs need no copied tree for this lock.
///
/// Not recursive: locking it twice on one thread deadlocks; RunLoopCore never calls out with it held.
///
/// Safety: the semaphore lives in memory allocated by `init` and freed only by `deinit`; it is
/// never copied or moved (the lock is a class, the pointer a `let`), which POSIX requires of a
/// semaphore in use. `deinit` runs only when nothing refers to the lock any more, so no thread can
/// hold it or wait for it then.
final class RLLock: @unchecked Sendable {
    private let word = Atomic<UInt32>(0)
    private let sem: UnsafeMutablePointer<sem_t>

    init() {
        sem = .allocate(capacity: 1)
        let rc = sem_init(sem, 0, 0)
        precondition(rc == 0, "RunLoopCore: sem_init failed (\(errno))")
    }

    deinit {
        sem_destroy(sem)
        sem.deallocate()
    }

    /// Acquires the lock (parks while another thread holds it).
    @inline(__always) func lock() {
        let w = word.load(ordering: .relaxed)
        if w & 1 == 0 && word.weakCompareExchange(expected: w, desired: w | 1, successOrdering: .acquiring, failureOrdering: .relaxed).exchanged { return }
        lockSlow()
    }

    @inline(never)
    private func lockSlow() {
        var w = word.add(4, ordering: .relaxed).newValue   // registered as a waiter
        while true {
            if w & 1 == 0 {
                // Free: take it and unregister in one step.
                let (done, now) = word.compareExchange(expected: w, desired: (w | 1) &- 4, successOrdering: .acquiring, failureOrdering: .relaxed)
                if done { return }
                w = now
                continue
            }
            while sem_wait(sem) != 0 && errno == EINTR {}
            // Woken: no wake-up is in flight any more, so the next unlock posts again.
            w = word.bitwiseAnd(~2, ordering: .relaxed).newValue
        }
    }

    /// Releases the lock; the calling thread must hold it.
    @inline(__always) func unlock() {
        // (Wrapping: bit 0 is set, so it cannot underflow, and without the overflow check the
        // subtraction is one `lock xadd` instead of a compare-and-swap loop.)
        let w = word.wrappingSubtract(1, ordering: .releasing).newValue
        if w >= 4 && w & 2 == 0 { wakeOne(w) }
    }

    /// Posts one wake-up unless one is already in flight (bit 1), which the woken waiter clears.
    @inline(never)
    private func wakeOne(_ seen: UInt32) {
        var w = seen
        while w >= 4 && w & 2 == 0 {
            let (done, now) = word.compareExchange(expected: w, desired: w | 2, ordering: .relaxed)
            if done { sem_post(sem); return }
            w = now
        }
    }

    /// Acquires the lock if it is free; returns whether it did.
    @inline(__always) func tryLock() -> Bool {
        var w = word.load(ordering: .relaxed)
        while w & 1 == 0 {
            let (done, now) = word.compareExchange(expected: w, desired: w | 1, successOrdering: .acquiring, failureOrdering: .relaxed)
            if done { return true }
            w = now
        }
        return false
    }

    /// Runs `body` with the lock held.
    @inline(__always) func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}

// MARK: - Items' state locks

/// An item's state lock (timer, source0, source1, observer): a word in the item (0 free, 1 held)
/// taken with one compare-and-swap and released with a plain release store, the state kept inline
/// next to it (`@exclusivity(unchecked) var stateStorage`, reached only through the item's
/// `withState`). An item's sections are a few loads and stores (at most an array append) that
/// never call out, block or take another lock, so a waiter spins, yielding the processor after a
/// few tries (the holder may have been preempted). Lock order: a loop's lock, then an item's;
/// never the reverse.
///
/// Why not `Synchronization.Mutex` (what the sources and observers had): on Linux it is a
/// priority-inheritance futex, and a contended acquire enters the kernel (`FUTEX_LOCK_PI`) and is
/// handed the lock there — the convoy docs/benchmarks.md describes ("Several threads posting to one loop"). Eight threads signalling one shared
/// source0 made 31 k signals/s (one thread: 8.7 M); docs/benchmarks.md, "Items' state locks".
///
/// ThreadSanitizer sees the acquire/release pair on the word, so it needs no stand-in for it
/// (`scripts/sanitizers.sh` replaces only `Mutex`).
@inline(__always)
func withItemStateLock<R>(_ word: borrowing Atomic<UInt32>, _ body: () throws -> R) rethrows -> R {
    if !word.weakCompareExchange(expected: 0, desired: 1, successOrdering: .acquiring, failureOrdering: .relaxed).exchanged {
        lockItemStateSlow(word)
    }
    defer { word.store(0, ordering: .releasing) }
    return try body()
}

@inline(never)
func lockItemStateSlow(_ word: borrowing Atomic<UInt32>) {
    var tries = 0
    while true {
        if word.load(ordering: .relaxed) == 0
            && word.weakCompareExchange(expected: 0, desired: 1, successOrdering: .acquiring, failureOrdering: .relaxed).exchanged {
            return
        }
        tries += 1
        if tries >= 32 { sched_yield() }
    }
}
