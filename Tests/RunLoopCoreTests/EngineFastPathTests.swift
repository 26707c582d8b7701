import CRunLoopShims
import Foundation
@testable import RunLoopCore
import RunLoopScenarios
import Synchronization
import Testing

/// The conditions the engine's fast paths of issue 16 part 2 rely on (docs/benchmarks.md, "Toward
/// the floor"): each test names the comment it covers.
@Suite("RunLoopCore: engine fast paths (issue 16 part 2)", .serialized)
struct EngineFastPathTests {

    /// `doTimers` lends each due timer to `doTimer` unretained, from its `due` array. Here nothing
    /// but the loop holds the timers, and a run nested in the first callout fires (and so
    /// invalidates and drops) all the others — their queue entries, which held them, are put back
    /// and released by the nested run — while the outer round still has to visit them: `due` alone
    /// keeps them alive. Also pins the order and that none fires twice.
    @Test func dueTimersLentUnretainedSurviveANestedRunThatFiresThem() {
        let (fired, nestedResult) = onFreshThread { () -> ([Int], RLRunResult?) in
            let loop = RLRunLoop.current
            var fired: [Int] = []
            var nestedResult: RLRunResult?
            let base = RLInstant.now.nanoseconds - 1_000_000_000
            for k in 0..<200 {
                // Past dates: due from when each is made, in the order made (no reference kept).
                loop.add(RLTimer(fireAt: RLInstant(nanoseconds: base + UInt64(k))) { _ in
                    fired.append(k)
                    if k == 0 { nestedResult = loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false) }
                }, forMode: .default)
            }
            loop.add(RLSource0 {}, forMode: .default)   // keeps the mode non-empty once the timers are gone
            loop.run(mode: .default, seconds: 0.05, returnAfterSourceHandled: false)
            return (fired, nestedResult)
        }
        #expect(fired == Array(0..<200))
        #expect(nestedResult == .timedOut)
    }

    /// `TimerQueue.drainDue` takes many due entries in one sweep (a heap whose last leaf is due, or
    /// once a sixteenth of it was popped) and sorts them when the heap order was not fire order:
    /// here dates are scattered, a third of the timers have a tolerance (their own heaps, merged by
    /// `collectDue`), a third are removed again (stale entries) and some are not due yet.
    @Test func manyDueTimersFireInDateOrderThroughTheSweep() {
        let (fired, expected) = onFreshThread { () -> ([Int], [Int]) in
            let loop = RLRunLoop.current
            var fired: [Int] = []
            let base = RLInstant.now + .milliseconds(300)   // ahead of the last timer made (even in a debug build)
            var timers: [Int: RLTimer] = [:]
            for i in 0..<2000 {
                let k = (i * 7919) % 2000
                // k ≥ 1800: 10 s ahead, not due during the run.
                let date = k >= 1800 ? base + .seconds(10) + .microseconds(k) : base + .microseconds(k)
                let t = RLTimer(fireAt: date, tolerance: k % 3 == 0 ? .microseconds(1) : .zero) { _ in fired.append(k) }
                loop.add(t, forMode: .default)
                timers[k] = t
            }
            for k in 0..<2000 where k % 3 == 1 { loop.remove(timers[k]!, forMode: .default) }
            usleep(350_000)   // every date before `base + 2 ms` has passed: they are all due at once
            loop.run(mode: .default, seconds: 0.01, returnAfterSourceHandled: false)
            return (fired, (0..<1800).filter { $0 % 3 != 1 })
        }
        #expect(fired.count == expected.count)
        #expect(fired == expected)
    }

    /// `finishDue(allFired: false)` and the queries that put a round's entries back: in one round,
    /// the first callout asks for the next fire date (entries restored mid-round), invalidates a
    /// later due timer (which so does not fire: the round is not "all fired") and moves another one
    /// 50 ms ahead (restamped: it fires later, once). Nothing is lost or fired twice.
    @Test func aRoundWhoseTimersAreChangedByEarlierCalloutsStaysExact() {
        let (fired, sawNext) = onFreshThread { () -> ([String], Bool) in
            let loop = RLRunLoop.current
            var fired: [String] = []
            var sawNext = false
            let base = RLInstant.now.nanoseconds - 1_000_000
            var later: [RLTimer] = []
            let first = RLTimer(fireAt: RLInstant(nanoseconds: base)) { _ in
                fired.append("first")
                sawNext = loop.nextTimerFireDate(forMode: .default) != nil
                later[0].invalidate()
                later[1].setNextFireDate(.now + .milliseconds(50))
            }
            loop.add(first, forMode: .default)
            for name in ["invalidated", "moved", "plain"] {
                let t = RLTimer(fireAt: RLInstant(nanoseconds: base)) { _ in fired.append(name) }
                later.append(t)
                loop.add(t, forMode: .default)
            }
            let repeating = RLTimer(fireAt: RLInstant(nanoseconds: base), interval: .milliseconds(30)) { t in
                fired.append("repeating")
                if fired.filter({ $0 == "repeating" }).count == 3 { t.invalidate() }
            }
            loop.add(repeating, forMode: .default)
            loop.run(mode: .default, seconds: 0.2, returnAfterSourceHandled: false)
            return (fired, sawNext)
        }
        #expect(sawNext)
        #expect(Array(fired.prefix(3)) == ["first", "plain", "repeating"])
        #expect(fired.filter { $0 == "moved" }.count == 1)
        #expect(!fired.contains("invalidated"))
        #expect(fired.filter { $0 == "repeating" }.count == 3)
        #expect(fired.count == 6)
    }

    /// Step 0 reads `stopRequested` instead of taking the lock: a stop made before step 0 — by an
    /// entry observer on the loop's thread, or by another thread the observer waits for — must still
    /// stop the run at once; a stop of a loop that is not running is not seen by a later run, and a
    /// consumed stop does not stop the next run.
    @Test func stopsBeforeStepZeroAreSeenWithoutTheLock() {
        let results = onFreshThread { () -> [RLRunResult] in
            let loop = RLRunLoop.current
            var results: [RLRunResult] = []
            var passes = 0
            var mode = 0   // 0: no stop, 1: stop on this thread, 2: stop from another thread
            loop.add(RLObserver(activities: [.entry, .beforeTimers]) { _, activity in
                if activity == .beforeTimers { passes += 1; return }
                if mode == 1 { loop.stop() }
                if mode == 2 {
                    let done = DispatchSemaphore(value: 0)
                    Thread.detachNewThread { loop.stop(); done.signal() }
                    done.wait()
                }
            }, forMode: .default)
            loop.add(RLSource0 {}, forMode: .default)
            loop.stop()   // not running: no later run sees it
            for m in [0, 1, 0, 2, 0] {
                mode = m
                passes = 0
                let r = loop.run(mode: .default, seconds: 0.02, returnAfterSourceHandled: false)
                results.append(r)
                if r == .stopped && passes != 0 { results.append(.handledSource) }   // marks "a pass ran"
            }
            return results
        }
        #expect(results == [.timedOut, .stopped, .timedOut, .stopped, .timedOut])
    }

    /// `RLLock` parks contended waiters on a semaphore and wakes one at a time (Lock.swift, "Why no
    /// wake-up is lost"). Holders that sleep inside the lock force waiters to park, and threads that
    /// only take it briefly barge past parked ones: every thread must finish (a lost wake-up leaves
    /// one parked for good: the deadline below), no increment is lost, and `tryLock` fails exactly
    /// while the lock is held.
    @Test func lockParksAndWakesWaitersWithoutLosingOne() {
        final class Box: @unchecked Sendable { var n = 0; var tryFailures = 0; let lock = RLLock() }
        let box = Box()
        let threads = 6, each = 3_000
        let finished = Atomic<Int>(0)
        for t in 0..<threads {
            Thread.detachNewThread {
                for i in 0..<each {
                    if t % 2 == 0 && i % 100 == 0 {
                        box.lock.withLock { usleep(200); box.n += 1 }   // a long hold: others park
                    } else if i % 7 == 0 {
                        if box.lock.tryLock() { box.n += 1; box.lock.unlock() } else {
                            box.lock.withLock { box.n += 1; box.tryFailures += 1 }
                        }
                    } else {
                        box.lock.withLock { box.n += 1 }
                    }
                }
                finished.add(1, ordering: .releasing)
            }
        }
        let deadline = Date().addingTimeInterval(60)
        while finished.load(ordering: .acquiring) < threads && Date() < deadline { usleep(1000) }
        #expect(finished.load(ordering: .acquiring) == threads, "a waiter was never woken")
        box.lock.withLock {}
        #expect(box.n == threads * each)
        #expect(box.lock.tryLock())
        #expect(!box.lock.tryLock())
        box.lock.unlock()
        #expect(box.lock.tryLock())
        box.lock.unlock()
    }

    /// Blocks drained by a run nested in a block use the nested spare queue (`DrainQueues`' spare),
    /// several nesting levels deep, and keep CF's order: a nested drain runs the blocks queued
    /// meanwhile, the outer drain then finishes its own.
    @Test func blocksDrainedByNestedRunsKeepTheirOrder() {
        let ran = onFreshThread { () -> [String] in
            let loop = RLRunLoop.current
            var ran: [String] = []
            func nest(_ level: Int) {
                ran.append("in\(level)")
                if level < 3 {
                    loop.performBlock(forMode: .default) { nest(level + 1) }
                    loop.performBlock(forMode: .default) { ran.append("after\(level)") }
                    loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false)
                }
                ran.append("out\(level)")
            }
            loop.performBlock(forMode: .default) { nest(0) }
            loop.performBlock(forMode: .default) { ran.append("tail") }
            for _ in 0..<3 { loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false) }
            return ran
        }
        #expect(ran == ["in0", "in1", "in2", "in3", "out3", "after2", "out2", "after1", "out1", "after0", "out0", "tail"])
    }

    /// Runs `body` on another thread and waits for it (a happens-before edge both ways).
    private func onOtherThread(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { body(); done.signal() }
        done.wait()
    }

    /// `RLRunLoop.ownBlocks` (RLRunLoop.swift): blocks the loop's own thread queues go to a queue
    /// only that thread touches, without the lock, while `blocks` (the other threads') is empty and
    /// all of them are for one mode; a drain takes them first. Blocks queued alternately by the
    /// loop's thread and by other threads (each after the one before, so the order is defined) keep
    /// CF's one FIFO; other threads' blocks never enter `ownBlocks`; a named block, a block for
    /// another mode or for the common modes goes to `blocks` behind the own ones; blocks of another
    /// mode taken by a drain go back ahead of those queued meanwhile, own ones included.
    @Test func ownThreadBlocksKeepOneFIFOWithOtherThreads() {
        final class Log: @unchecked Sendable { var ran: [String] = []; var counts: [Int] = []; let lock = NSLock()
            func add(_ s: String) { lock.lock(); ran.append(s); lock.unlock() } }
        let (ran, counts) = onFreshThread { () -> ([String], [Int]) in
            let loop = RLRunLoop.current
            let log = Log()
            let otherMode = RLMode("own-blocks-other")
            func run(_ mode: RLMode) {
                loop.run(mode: mode, seconds: 0, returnAfterSourceHandled: false)
                log.add("|")
            }
            loop.performBlock(forMode: .default) { log.add("L1") }
            log.counts.append(loop.ownBlocks.count)                              // 1: own
            onOtherThread { loop.performBlock(forMode: .default) { log.add("X1") } }
            log.counts.append(loop.ownBlocks.count)                              // 1: X1 is in `blocks`
            loop.performBlock(forMode: .default) { log.add("L2") }           // behind X1, in `blocks`
            log.counts.append(loop.ownBlocks.count)                              // 1
            run(.default)
            // Own blocks again (both queues are empty), then a named one, a common-modes one and one
            // for another mode: all go behind the own ones, in order.
            loop.performBlock(forMode: .default) { log.add("L3") }
            loop.performBlock(forMode: .default, name: "named") { log.add("N4") }
            loop.performBlock(forMode: .default) { log.add("L5") }
            loop.performBlock(forMode: .commonModes) { log.add("C6") }
            loop.performBlock(forMode: otherMode) { log.add("O7") }
            loop.performBlock(forMode: .default) { log.add("L8") }
            log.counts.append(loop.ownBlocks.count)                              // 1 (L3)
            run(.default)
            run(otherMode)
            // Own blocks for another mode: a run of the default mode leaves them alone, and
            // `isFinished` on another thread (which reads only `ownBlocksMode`) sees them.
            loop.performBlock(forMode: otherMode) { log.add("O9") }
            log.counts.append(loop.ownBlocks.count)                              // 1
            nonisolated(unsafe) var finishedElsewhere = true
            onOtherThread { finishedElsewhere = loop.isFinished(otherMode) }
            log.counts.append(finishedElsewhere ? 1 : 0)                         // 0
            run(.default)
            log.counts.append(loop.ownBlocks.count)                              // 1: O9 still there
            // Now another thread queues X10: a drain of the default mode takes O9 with it, keeps it,
            // and puts it back ahead of O11, which X10's callout queued meanwhile (an own block).
            onOtherThread {
                loop.performBlock(forMode: .default) {
                    log.add("X10")
                    loop.performBlock(forMode: otherMode) { log.add("O11") }
                    log.counts.append(loop.ownBlocks.count)                      // 1: O11 is own
                }
            }
            run(.default)
            log.counts.append(loop.ownBlocks.count)                              // 0: O11 went behind O9
            loop.performBlock(forMode: otherMode) { log.add("O12") }         // behind both, in `blocks`
            run(otherMode)
            return (log.ran, log.counts + [loop.ownBlocks.count, loop.blocks.count])
        }
        #expect(ran == ["L1", "X1", "L2", "|", "L3", "N4", "L5", "C6", "L8", "|", "O7", "|", "|", "X10", "|", "O9", "O11", "O12", "|"])
        #expect(counts == [1, 1, 1, 1, 1, 0, 1, 1, 0, 0, 0])
    }

    /// Blocks queued by another thread while the loop's thread queues its own, concurrently: every
    /// block runs exactly once, and each thread's blocks run in the order it queued them.
    @Test func ownAndOtherThreadBlocksRaceWithoutLoss() {
        let (ownOrder, otherOrder) = onFreshThread { () -> ([Int], [Int]) in
            let loop = RLRunLoop.current
            let n = 20_000
            var own: [Int] = []
            let other = Mutex<[Int]>([])
            let started = Atomic<Bool>(false)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                started.store(true, ordering: .releasing)
                for i in 0..<n { loop.performBlock(forMode: .default) { other.withLock { $0.append(i) } } }
                done.signal()
            }
            while !started.load(ordering: .acquiring) {}
            for i in 0..<n {
                loop.performBlock(forMode: .default) { own.append(i) }
                if i % 64 == 0 { loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false) }
            }
            done.wait()
            while !loop.isFinished(.default) { loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false) }
            return (own, other.withLock { $0 })
        }
        #expect(ownOrder == Array(0..<20_000))
        #expect(otherOrder == Array(0..<20_000))
    }

    // MARK: - Adding timers (fifth round)

    /// Runs `bodies` on threads of their own, released together, and waits for all of them.
    private func together(_ bodies: [@Sendable () -> Void]) {
        let ready = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        for body in bodies {
            Thread.detachNewThread {
                ready.add(1, ordering: .acquiringAndReleasing)
                while ready.load(ordering: .acquiring) < bodies.count {}
                body()
                done.signal()
            }
        }
        for _ in bodies { done.wait() }
    }

    /// How many live timers `mode` of `loop` counts (its queue's count, read under the loop's lock).
    private func timerCount(_ loop: RLRunLoop, _ mode: RLMode) -> Int {
        loop.locked { loop.modes[mode]?.timers.count ?? 0 }
    }

    /// `addTimerLocked` claims a timer for a loop inside the timer's own lock section
    /// (`TimerBinding`): two threads adding the same timers, in the same order and at the same
    /// time, to two loops — every timer ends in exactly one of them, each queue counts exactly its
    /// own, and once removed from the winner a timer may join the other loop.
    @Test func timerAddedToTwoLoopsAtOnceJoinsOne() {
        let wa = RLWorkerThread(name: "rl-claim-a"), wb = RLWorkerThread(name: "rl-claim-b")
        defer { wa.cancel(); wb.cancel(); wa.join(); wb.join() }
        let a = wa.runLoop, b = wb.runLoop
        let n = 20_000
        let timers = (0..<n).map { _ in RLTimer(fireAfter: 3600) { _ in } }
        together([
            { for t in timers { a.add(t, forMode: .default) } },
            { for t in timers { b.add(t, forMode: .default) } },
        ])
        let inA = timers.map { a.contains($0, inMode: .default) }
        let inB = timers.map { b.contains($0, inMode: .default) }
        #expect(zip(inA, inB).allSatisfy { $0 != $1 })
        #expect(timerCount(a, .default) == inA.filter { $0 }.count)
        #expect(timerCount(b, .default) == inB.filter { $0 }.count)
        // Released by the loop that won, each may join the other one.
        for (t, x) in zip(timers, inA) {
            let (winner, other) = x ? (a, b) : (b, a)
            winner.remove(t, forMode: .default)
            other.add(t, forMode: .default)
        }
        #expect(zip(timers, inA).allSatisfy { t, x in (x ? b : a).contains(t, inMode: .default) && !(x ? a : b).contains(t, inMode: .default) })
        #expect(timerCount(a, .default) + timerCount(b, .default) == n)
    }

    /// A timer invalidated on one thread while another adds it to a loop: either the add came first
    /// and the invalidation takes it out again, or the invalidation came first and the add is
    /// refused — never a timer left queued (or counted) in the mode, or left valid.
    @Test func timerInvalidatedWhileAnotherThreadAddsIt() {
        let w = RLWorkerThread(name: "rl-claim-inv")
        defer { w.cancel(); w.join() }
        let loop = w.runLoop
        let n = 20_000
        let timers = (0..<n).map { _ in RLTimer(fireAfter: 3600) { _ in } }
        // The invalidating thread stays on the timer the adding thread is adding (or just added).
        let progress = Atomic<Int>(0)
        together([
            { for (i, t) in timers.enumerated() { loop.add(t, forMode: .default); progress.store(i + 1, ordering: .releasing) } },
            { for (i, t) in timers.enumerated() { while progress.load(ordering: .acquiring) < i {}; t.invalidate() } },
        ])
        #expect(timers.allSatisfy { !$0.isValid && !loop.contains($0, inMode: .default) })
        #expect(timerCount(loop, .default) == 0)
        #expect(loop.nextTimerFireDate(forMode: .default) == nil)
    }

    /// A timer's binding holds its loop's handle unretained (`TimerBinding`): a loop that goes
    /// away while timers are still in its modes (added after its thread exited) first marks them
    /// bound to a loop that is gone, while another thread keeps reading and moving them. They stay
    /// usable, and — as before the binding was unretained — are not free for another loop.
    @Test func loopDestroyedWhileItsTimersAreReferencedElsewhere() {
        var loop: RLRunLoop? = onFreshThread { RLRunLoop.current }
        // Wait for the thread's exit (`threadExited` lets go of what its modes held).
        while !loop!.locked({ loop!.deallocating }) { usleep(1000) }
        let timers = (0..<2000).map { _ in RLTimer(fireAfter: 3600) { _ in } }
        for t in timers { loop!.add(t, forMode: .default) }
        #expect(timers.allSatisfy { loop!.contains($0, inMode: .default) })
        let stop = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while !stop.load(ordering: .acquiring) {
                for t in timers {
                    _ = t.nextFireDate
                    t.setNextFireDate(.now + .seconds(3600))
                    t.tolerance = .milliseconds(1)
                }
            }
            done.signal()
        }
        usleep(5_000)
        weak let gone = loop
        loop = nil
        usleep(5_000)
        stop.store(true, ordering: .releasing)
        done.wait()
        #expect(gone == nil)
        let joined = onFreshThread { () -> Bool in
            let other = RLRunLoop.current
            other.add(timers[0], forMode: .default)
            return other.contains(timers[0], inMode: .default)
        }
        #expect(!joined)
        timers[1].invalidate()
        #expect(!timers[1].isValid && timers[2].isValid)
        #expect(timers[2].nextFireDate.map { $0 > .now } == true)
    }

    // MARK: - Perform-blocks and modes at their floor (sixth round)

    /// `rl_thread_self()` reads glibc's `pthread_self()` from the thread pointer inline; the loop's
    /// owner test compares it with what was stored when the loop was bound. Both must agree on
    /// every thread, the main one and spawned ones alike, and differ between live threads.
    @Test func threadSelfIsPthreadSelf() {
        #expect(rl_thread_self() == UInt(pthread_self()))
        let seen = Mutex<[UInt]>([])
        let agreed = Atomic<Int>(0)
        together((0..<8).map { _ in { @Sendable in
            let mine = rl_thread_self()
            if mine == UInt(pthread_self()) { agreed.add(1, ordering: .relaxed) }
            seen.withLock { $0.append(mine) }
        } })
        #expect(agreed.load(ordering: .relaxed) == 8)
        #expect(Set(seen.withLock { $0 }).count == 8)
    }

    /// `RLMode` holds an interned name: equal strings — literal, built at run time, from another
    /// thread — give the same mode (equal, same hash, usable as the same dictionary key), different
    /// strings different ones, and the name reads back unchanged. The common-modes flag follows the
    /// string however it was made.
    @Test func modeNamesInternByString() {
        let built = String(["kCFRunLoop", "Default", "Mode"].joined())
        #expect(RLMode(built) == .default)
        #expect(RLMode(built).hashValue == RLMode.default.hashValue)
        #expect(RLMode(rawValue: "kCFRunLoopCommonModes").isCommonModes)
        #expect(RLMode(String(["kCFRunLoop", "CommonModes"].joined())) == .commonModes)
        #expect(!RLMode.default.isCommonModes)
        #expect(RLMode("a") != RLMode("b"))
        #expect(RLMode("é") == RLMode("e\u{301}"))   // String equality is canonical equivalence
        #expect(RLMode("x-\(42)").rawValue == "x-42")
        let modes = Mutex<[RLMode]>([])
        together((0..<8).map { i in { @Sendable in
            for k in 0..<200 {
                let m = RLMode("interned-\((k + i) % 200)")
                modes.withLock { $0.append(m) }
            }
        } })
        let all = modes.withLock { $0 }
        #expect(Set(all).count == 200)
        #expect(Set(all.map(\.identity)).count == 200)
        var byMode: [RLMode: Int] = [:]
        for m in all { byMode[m, default: 0] += 1 }
        #expect(byMode.count == 200 && byMode.values.allSatisfy { $0 == 8 })
        #expect(byMode[RLMode("interned-7")] == 8)
    }

    /// A block the loop's own thread queues carries no id until it runs (or moves to the shared
    /// queue): every block still runs with an id of its own — the watchdog's word names it while
    /// it runs, as the trace's `item` does — whether it ran from the own queue, was moved behind
    /// another thread's block, or was held back for another mode.
    @Test func ownThreadBlocksGetDistinctIDsWhenTheyRun() {
        let ids = onFreshThread { () -> [UInt64] in
            let loop = RLRunLoop.current
            // Appended to on the loop's thread only (every block runs there), so a plain array.
            final class IDs: @unchecked Sendable { var all: [UInt64] = [] }
            let ids = IDs()
            let other = RLMode("own-ids-other")
            let record: @Sendable () -> Void = { ids.all.append(loop.watchWord.load(ordering: .relaxed) & Watch.itemMask) }
            for round in 0..<300 {
                for _ in 0..<5 { loop.performBlock(forMode: .default) { record() } }
                if round % 3 == 0 {
                    // Another thread's block: the own blocks move to the shared queue ahead of it.
                    let done = DispatchSemaphore(value: 0)
                    Thread.detachNewThread { loop.performBlock(forMode: .default) { record() }; done.signal() }
                    done.wait()
                    loop.performBlock(forMode: .default) { record() }
                }
                if round % 5 == 0 { loop.performBlock(forMode: other) { record() } }
                loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false)
            }
            loop.run(mode: other, seconds: 0, returnAfterSourceHandled: false)
            return ids.all
        }
        #expect(ids.count == 300 * 5 + 100 * 2 + 60)
        #expect(!ids.contains(0))
        #expect(Set(ids).count == ids.count)
    }
}
