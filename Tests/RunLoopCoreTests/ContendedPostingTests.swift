// Issue 16: the conditions the contended cross-thread path relies on.
// - RLLock (the loop's lock, Lock.swift: an atomic word, contended waiters parked on a semaphore)
//   excludes: many threads incrementing a plain counter under it lose no update, and a loop whose
//   lock other threads are using when its thread exits stays usable until its last reference goes
//   (the semaphore is freed only in deinit).
// - Coalesced wake-ups (Waiter.wake skips the eventfd write while one is pending): under many
//   concurrent wakers, a loop that sleeps with no timeout is never left asleep with work queued.
import Foundation
@testable import RunLoopCore
import RunLoopScenarios
import Synchronization
import Testing

@Suite("RunLoopCore: contended posting (issue 16)", .serialized)
struct ContendedPostingTests {

    @Test("RLLock: 8 threads × 20 000 increments of an unguarded counter under the lock, none lost")
    func lockExcludes() {
        final class Box: @unchecked Sendable { var n = 0; let lock = RLLock() }
        let box = Box()
        let threads = 8, each = 20_000
        let done = DispatchGroup()
        for _ in 0..<threads {
            done.enter()
            Thread.detachNewThread {
                for _ in 0..<each {
                    box.lock.withLock { box.n += 1 }
                }
                done.leave()
            }
        }
        done.wait()
        #expect(box.n == threads * each)
        #expect(box.lock.tryLock())
        #expect(!box.lock.tryLock())
        box.lock.unlock()
    }

    @Test("a loop stays usable by other threads after its own thread exited, until its last reference goes")
    func loopOutlivesItsThreadWhileUsed() {
        // An NSLock (a pthread mutex, which ThreadSanitizer sees; it cannot see `Mutex` on Linux).
        final class Holder: @unchecked Sendable { let lock = NSLock(); var loop: RLRunLoop? }
        let holder = Holder()
        let t = Thread { holder.lock.withLock { holder.loop = RLRunLoop.current } }
        t.start()
        while holder.lock.withLock({ holder.loop == nil }) { usleep(1000) }
        usleep(20_000)   // the thread has exited (its loop finished: deallocating)
        let loop = holder.lock.withLock { holder.loop! }
        let group = DispatchGroup()
        for _ in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                for i in 0..<2_000 {
                    loop.perform {}
                    let o = RLObserver(activities: .beforeWaiting) { _, _ in }
                    loop.add(o, forMode: .default)
                    loop.remove(o, forMode: .default)
                    if i % 2 == 0 { loop.add(RLTimer(fireAt: .now) { _ in }, forMode: .default) }
                    loop.wakeUp()
                }
                group.leave()
            }
        }
        group.wait()
        _ = loop.description   // takes the lock once more
        holder.lock.withLock { holder.loop = nil }
    }

    @Test("coalesced wake-ups: 6 wakers × 3 000 posts to a loop sleeping without timeout, each seen without a stray timeout")
    func noWakeUpLost() {
        let producers = 6, each = 3_000
        let (ran, result, elapsed) = onFreshThread("contended") { () -> (Int, RLRunResult, Double) in
            let loop = RLRunLoop.current
            final class Count: @unchecked Sendable { var n = 0 }
            let count = Count()
            let keep = RLSource0 {}   // keeps the mode non-empty
            loop.add(keep, forMode: .default)
            let started = Atomic<Bool>(false)
            var threads: [Thread] = []
            for p in 0..<producers {
                let t = Thread {
                    while !started.load(ordering: .acquiring) { sched_yield() }
                    for i in 0..<each {
                        // A pause now and then lets the loop fall asleep between posts: the race
                        // between going to sleep and a wake-up is what coalescing must not break.
                        if (i + p) % 64 == 0 { usleep(50) }
                        loop.perform {
                            count.n += 1
                            if count.n == producers * each { RLRunLoop.current.stop() }
                        }
                    }
                }
                threads.append(t)
                t.start()
            }
            started.store(true, ordering: .releasing)
            let t0 = Date()
            // No timeout that could hide a lost wake-up: 60 s is "never" for this test.
            let r = loop.run(mode: .default, seconds: 60, returnAfterSourceHandled: false)
            let dt = Date().timeIntervalSince(t0)
            loop.remove(keep, forMode: .default)
            return (count.n, r, dt)
        }
        #expect(ran == producers * each)
        #expect(result == .stopped)
        #expect(elapsed < 30)
    }

    @Test("a wake racing with the drain leaves no pending flag without a readable fd (the lost wake-up StressTests met)")
    func wakeRacingTheDrainIsNeverLost() throws {
        let w = try Waiter()
        // A wake-up is pending and written; while the loop drains it, another thread wakes it —
        // placed exactly between the drain's read of the fd and its clearing of the flag.
        w.wake()
        #expect(w.isWakePending && Waiter.isReadable(w.wakeFD))
        w.afterDrainRead = { w.wake() }
        w.drainWake()
        w.afterDrainRead = nil
        // Invariant: a pending flag means a readable fd (otherwise every later wake skips its write
        // and a sleeping loop never wakes again). With the flag cleared before the read, the racing
        // wake's write was consumed by that read and the flag stayed set on an empty fd.
        #expect(!w.isWakePending || Waiter.isReadable(w.wakeFD))
        // The racing wake was merged into the drained one (its work is seen by the pass that
        // drained), and the next wake-up is not skipped: it makes the fd readable.
        w.wake()
        #expect(Waiter.isReadable(w.wakeFD))
        w.drainWake()
        #expect(!w.isWakePending && !Waiter.isReadable(w.wakeFD))
    }
}
