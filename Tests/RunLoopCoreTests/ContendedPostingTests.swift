// The conditions the contended cross-thread path relies on.
// - RLLock (the loop's lock, Lock.swift: an atomic word, contended waiters parked on a semaphore)
//   excludes: many threads incrementing a plain counter under it lose no update, and a loop whose
//   lock other threads are using when its thread exits stays usable until its last reference goes
//   (the semaphore is freed only in deinit).
// - Coalesced wake-ups (Waiter.wake skips the eventfd write while one is pending): under many
//   concurrent wakers, a loop that sleeps with no timeout is never left asleep with work queued.
import Foundation
import CRunLoopShims
@testable import RunLoopCore
import RunLoopScenarios
import Synchronization
import Testing

@Suite("RunLoopCore: contended posting (docs/benchmarks.md)", .serialized)
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

    @Test("a wake-up taken through one mode's set is stale in every other set, and in a set made later")
    func wakeTakenInOneSetIsStaleInTheOthers() throws {
        let w = try Waiter()
        let a = try w.makeWaitSet(), b = try w.makeWaitSet()
        defer { a.close(); b.close() }
        // One write queues an event in both sets (edge-triggered, never read).
        w.wake()
        #expect(w.wait(on: a, poll: true) == .wakeUp)
        w.drainWake()
        // Taken: the event still queued in `b` is stale and ends no wait; `a`'s was consumed.
        #expect(w.wait(on: b, poll: true) == nil)
        #expect(w.wait(on: a, poll: true) == nil)
        // The fd stays readable (its counter is never reset), so a set made now starts with an
        // event queued: stale too.
        let c = try w.makeWaitSet()
        defer { c.close() }
        #expect(Waiter.isReadable(w.wakeFD))
        #expect(w.wait(on: c, poll: true) == nil)
        // A new wake-up is seen by every set until it is taken.
        w.wake()
        #expect(w.wait(on: c, poll: true) == .wakeUp)
        #expect(w.wait(on: b, poll: true) == .wakeUp)
        w.drainWake()
        #expect(w.wait(on: a, poll: true) == nil)
    }

    @Test("a wake-up pending when the set is made, or racing with the drain, is never lost")
    func wakeRacingTheDrainIsNeverLost() throws {
        let w = try Waiter()
        // Pending before the set exists: the set's first event is taken as the wake-up.
        w.wake()
        let a = try w.makeWaitSet()
        defer { a.close() }
        #expect(w.wait(on: a, poll: true) == .wakeUp)
        // A wake between the wait and the drain skips its write (one is pending): merged into the
        // wake-up being taken, whose pass sees its work (the loop checks after every drain).
        w.wake()
        #expect(w.isWakePending)
        w.drainWake()
        #expect(!w.isWakePending)
        #expect(w.wait(on: a, poll: true) == nil)
        // The next wake-up is not skipped: it queues an event.
        w.wake()
        #expect(w.wait(on: a, poll: true) == .wakeUp)
        w.drainWake()
    }

    @Test("a wake-up whose write finds the eventfd's counter at its maximum still wakes the loop")
    func wakeAtTheCountersMaximumIsNotLost() throws {
        let w = try Waiter()
        let a = try w.makeWaitSet()
        defer { a.close() }
        w.setWakeCounter(0xffff_ffff_ffff_fffe)   // the largest value an eventfd holds
        #expect(w.wait(on: a, poll: true) == nil)  // readable, but no wake-up pending: stale
        w.wake()                                   // EAGAIN: reset by a read, written again
        #expect(w.wait(on: a, poll: true) == .wakeUp)
        w.drainWake()
        w.wake()
        #expect(w.wait(on: a, poll: true) == .wakeUp)
        w.drainWake()
    }

    @Test("a deadline already due is not set into the timerfd: the doorbell is rung, and a wait reports it as the timer")
    func dueDeadlineRingsTheDoorbell() throws {
        let w = try Waiter()
        let a = try w.makeWaitSet()
        defer { a.close() }
        // A future deadline is programmed (no doorbell).
        #expect(w.arm(rl_monotonic_ns() + 20_000_000) == false)
        // Moved into the past: the timerfd is disarmed, the caller rings.
        let past = rl_monotonic_ns() - 1
        #expect(w.arm(past) == true)
        w.ring()
        #expect(w.wait(on: a, poll: true, timerDue: w.armedDeadlinePassed) == .timer)
        // The disarmed timerfd does not fire when the old deadline passes (no stray timer wake).
        Thread.sleep(forTimeInterval: 0.03)
        #expect(!Waiter.isReadable(w.timerFD))
        // Still armed for the due deadline (no timer wake handled yet): every arm rings again, so
        // that a wait cannot sleep with a due timer whose event was taken as something else.
        #expect(w.arm(past) == true)
        w.timerFired()
        // Handled: the next arm for a future deadline programs the timerfd again.
        #expect(w.arm(rl_monotonic_ns() + 5_000_000) == false)
        #expect(w.wait(on: a, poll: false, timerDue: w.armedDeadlinePassed) == .timer)   // the timerfd's own expiry
        #expect(Waiter.isReadable(w.timerFD))
    }

    @Test("a wake-up and the doorbell in one event: the wake-up is reported, and the next wait still sees the due timer")
    func wakeUpAndDoorbellInOneEvent() throws {
        let w = try Waiter()
        let a = try w.makeWaitSet()
        defer { a.close() }
        let past = rl_monotonic_ns() - 1
        if w.arm(past) { w.ring() }
        w.wake()
        #expect(w.wait(on: a, poll: true, timerDue: w.armedDeadlinePassed) == .wakeUp)
        w.drainWake()
        // The loop's next pass arms the same deadline: it rings again, and the wait reports the timer.
        #expect(w.arm(past) == true)
        w.ring()
        #expect(w.wait(on: a, poll: false, timerDue: w.armedDeadlinePassed) == .timer)
    }
}
