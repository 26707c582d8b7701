import Foundation
import RunLoopCore
import RunLoopScenarios
import Synchronization
import Testing

/// Timer and binding rules (docs/divergences.md) that the differential suite cannot pin exactly: where CF on
/// Linux is defective (documented in docs/divergences.md), where only RunLoopCore's API exists, or
/// where the exact count is RunLoopCore's own (CF's differs by a spurious wake).
@Suite("RunLoopCore: timer rescheduling, bindings and CF API parity", .serialized)
struct TimerRulesTests {

    /// A run nested in a timer's callout does not wait for that timer's (past) date: it sleeps until
    /// its timeout in one pass. (CF makes two: its mode timer was armed before the timer fired.)
    @Test func runNestedInATimerCalloutSleepsInsteadOfSpinning() {
        let (passes, wakes, cpu, result) = onFreshThread { () -> (Int, Int, Double, RLRunResult?) in
            let loop = RLRunLoop.current
            let modal = RLMode("modal")
            loop.addCommonMode(modal)
            var passes = 0, wakes = 0
            var cpu = 0.0
            var result: RLRunResult?
            loop.add(RLObserver(activities: [.beforeTimers, .afterWaiting]) { _, a in
                if a == .beforeTimers { passes += 1 } else { wakes += 1 }
            }, forMode: modal)
            loop.add(RLTimer(fireAfter: 0) { _ in
                let start = threadCPUSeconds()
                result = loop.run(mode: modal, seconds: 0.2, returnAfterSourceHandled: false)
                cpu = threadCPUSeconds() - start
            }, forMode: .commonModes)
            loop.run(mode: .default, seconds: 1, returnAfterSourceHandled: false)
            return (passes, wakes, cpu, result)
        }
        #expect(result == .timedOut)
        #expect(passes == 1, "one pass, asleep until the timeout (a spinning wait makes ~25 000)")
        #expect(wakes == 1)
        #expect(cpu < 0.05, "the nested run used \(cpu) s of CPU in 0.2 s")
    }

    /// Divergence: a date set in the timer's callout is due in every mode of the timer. CF on Linux
    /// re-arms only the mode that fired it, so a run of its other mode never wakes for it.
    @Test func dateSetInACalloutIsDueInEveryModeOfTheTimer() {
        let (log, elapsed) = onFreshThread { () -> ([String], Duration) in
            let loop = RLRunLoop.current
            let a = RLMode("a"), b = RLMode("b")
            var log: [String] = []
            var n = 0
            let t = RLTimer(fireAfter: 0, interval: 100) { t in
                n += 1
                log.append("fire\(n) in \(loop.currentMode!.rawValue)")
                if n == 1 { t.setNextFireDate(.now.advanced(bySeconds: -1)); loop.stop() } else { t.invalidate() }
            }
            loop.add(t, forMode: a)
            loop.add(t, forMode: b)
            log.append("a:\(loop.run(mode: a, seconds: 1, returnAfterSourceHandled: false))")
            let start = RLInstant.now
            log.append("b:\(loop.run(mode: b, seconds: 1, returnAfterSourceHandled: false))")
            return (log, RLInstant.now - start)
        }
        #expect(log == ["fire1 in a", "a:stopped", "fire2 in b", "b:finished"])
        #expect(elapsed < .milliseconds(500), "fired at once in b, not after b's timeout")
    }

    /// A repeating timer whose callout moves it to another loop (out of all of this loop's modes,
    /// into another's) is placed in that loop at its next fire and fires there.
    @Test func timerMovedToAnotherLoopDuringItsCalloutFiresThere() {
        let worker = RLWorkerThread(name: "rl-timer-dest")
        let firedOn = Mutex<[Int32]>([])
        let done = DispatchSemaphore(value: 0)
        let (first, result) = onFreshThread { () -> (Int32, RLRunResult) in
            let loop = RLRunLoop.current
            var moved = false
            let t = RLTimer(fireAfter: 0, interval: 0.02) { t in
                let tid = RLRunLoop.current.threadID
                firedOn.withLock { $0.append(tid) }
                if !moved {
                    moved = true
                    loop.remove(t, forMode: .default)
                    worker.runLoop.add(t, forMode: .default)
                } else if firedOn.withLock({ $0.count }) == 3 {
                    t.invalidate()
                    done.signal()
                }
            }
            loop.add(t, forMode: .default)
            let r = loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: false)
            return (loop.threadID, r)
        }
        #expect(result == .finished, "the first loop has nothing left once the timer moved")
        #expect(done.wait(timeout: .now() + 5) == .success)
        let tids = firedOn.withLock { $0 }
        #expect(tids == [first, worker.runLoop.threadID, worker.runLoop.threadID])
        worker.cancel()
        worker.join()
    }

    /// `CFRunLoopTimerSetNextFireDate` from another thread wakes the timer's loop (CF does it "just
    /// in case"): one more pass than the run's timeout alone.
    @Test func setNextFireDateFromAnotherThreadWakesTheLoop() {
        let wakes = onFreshThread { () -> Int in
            let loop = RLRunLoop.current
            var wakes = 0
            loop.add(RLObserver(activities: .afterWaiting) { _, _ in wakes += 1 }, forMode: .default)
            let t = RLTimer(fireAfter: 60) { _ in }
            loop.add(t, forMode: .default)
            Thread.detachNewThread { usleep(30_000); t.setNextFireDate(.now + .seconds(50)) }
            loop.run(mode: .default, seconds: 0.25, returnAfterSourceHandled: false)
            return wakes
        }
        #expect(wakes == 2)
    }

    /// Past dates: due from the time given (so made-later timers fire later), reported as given.
    @Test func pastDatesAreDueWhenGivenAndReportedAsGiven() {
        let (order, reported) = onFreshThread { () -> ([String], [Bool]) in
            let loop = RLRunLoop.current
            var order: [String] = []
            let dated = RLInstant.now.advanced(bySeconds: -2)
            let due = RLTimer(fireAfter: 0) { _ in order.append("due") }
            usleep(1_000)
            let old = RLTimer(fireAt: dated) { _ in order.append("old") }
            let moved = RLTimer(fireAfter: 30) { _ in order.append("moved") }
            usleep(1_000)
            moved.setNextFireDate(dated.advanced(bySeconds: -1))
            let reported = [old.nextFireDate == dated, moved.nextFireDate == dated.advanced(bySeconds: -1)]
            for t in [moved, old, due] { loop.add(t, forMode: .default) }
            loop.run(mode: .default, seconds: 1, returnAfterSourceHandled: false)
            return (order, reported)
        }
        #expect(order == ["due", "old", "moved"])
        #expect(reported == [true, true])
    }

    /// `nextTimerFireDate(forMode:)` (CF's `CFRunLoopGetNextTimerFireDate`) and `limitDate(forMode:)`
    /// (Foundation's `RunLoop.limitDate(forMode:)`), including the nil cases and the thread rule.
    @Test func nextTimerFireDateAndLimitDate() {
        let worker = RLWorkerThread(name: "rl-next-fire")
        defer { worker.cancel(); worker.join() }
        let loop = worker.runLoop
        #expect(loop.nextTimerFireDate(forMode: .default) == nil)
        #expect(loop.nextTimerFireDate(forMode: RLMode("none")) == nil)
        let at = RLInstant.now + .seconds(40)
        let t = RLTimer(fireAt: at) { _ in }
        loop.add(t, forMode: .commonModes)
        #expect(loop.nextTimerFireDate(forMode: .default) == at, "readable from any thread")
        #expect(loop.nextTimerFireDate(forMode: .commonModes) == nil, "not a mode")
        #expect(loop.limitDate(forMode: .default) == nil, "only on the loop's own thread")
        t.invalidate()
        #expect(loop.nextTimerFireDate(forMode: .default) == nil)

        let got = onFreshThread { () -> [String] in
            let loop = RLRunLoop.current
            var got: [String] = []
            func show(_ d: RLInstant?, _ expected: RLInstant? = nil) -> String {
                guard let d else { return "nil" }
                if d == .distantFuture { return "distantFuture" }
                return d == expected ? "expected" : "\(d)"
            }
            got.append(show(loop.limitDate(forMode: .default)))
            let s = RLSource0 { got.append("source0") }
            loop.add(s, forMode: .default)
            got.append(show(loop.limitDate(forMode: .default)))
            let at = RLInstant.now + .seconds(30)
            loop.add(RLTimer(fireAt: at) { _ in }, forMode: .default)
            loop.add(RLTimer(fireAfter: 0) { _ in got.append("due timer") }, forMode: .default)
            s.signal()
            got.append(show(loop.limitDate(forMode: .default), at))
            got.append(show(loop.limitDate(forMode: .commonModes)))
            return got
        }
        #expect(got == ["nil", "distantFuture", "source0", "due timer", "expected", "nil"])
    }

    /// A loop whose thread exited lets its timers and observers go: they may join another loop.
    @Test func itemsOfALoopWhoseThreadExitedMayJoinAnotherLoop() {
        let t = RLTimer(fireAfter: 0) { _ in }
        let o = RLObserver(activities: .entry) { _, _ in }
        onFreshThread {
            RLRunLoop.current.add(t, forMode: .default)
            RLRunLoop.current.add(o, forMode: .default)
        }
        usleep(20_000)
        let (hasT, hasO) = onFreshThread { () -> (Bool, Bool) in
            let loop = RLRunLoop.current
            loop.add(t, forMode: .default)
            loop.add(o, forMode: .default)
            return (loop.contains(t, inMode: .default), loop.contains(o, inMode: .default))
        }
        #expect(hasT && hasO)
    }

    /// A timer stays its loop's while any mode holds it, common items included; `contains` is false
    /// on every other loop.
    @Test func bindingLastsAsLongAsAnyModeHoldsTheItem() {
        let wa = RLWorkerThread(name: "rl-bind-a"), wb = RLWorkerThread(name: "rl-bind-b")
        defer { wa.cancel(); wb.cancel(); wa.join(); wb.join() }
        let a = wa.runLoop, b = wb.runLoop
        let t = RLTimer(fireAfter: 60) { _ in }
        a.add(t, forMode: .commonModes)
        a.add(t, forMode: RLMode("x"))
        a.remove(t, forMode: .commonModes)
        b.add(t, forMode: .default)
        #expect(!b.contains(t, inMode: .default), "still in a's mode x")
        a.remove(t, forMode: RLMode("x"))
        #expect(!a.contains(t, inMode: RLMode("x")))
        b.add(t, forMode: .default)
        #expect(b.contains(t, inMode: .default))
        #expect(!a.contains(t, inMode: .commonModes))
    }
}
