import Foundation

// Differential scenarios for the changes another thread makes while the loop sleeps. Every change
// that can move the next deadline of the mode the loop sleeps in re-arms that mode's timer in CF
// (`CFRunLoopAddTimer` and `CFRunLoopTimerSetNextFireDate` through `__CFRepositionTimerInMode`,
// `CFRunLoopRemoveTimer` and invalidation through `__CFArmNextTimerInMode`; `CFRunLoopAddCommonMode`
// adds every common item to the mode, timers included), so the loop wakes for the new deadline
// and no other. Observers and source0s wake nothing (a wake-up that follows finds them).
// Each loop sleeps in "tracking" (kept from being empty by an idle source0) for up to 2 s (3 s); what
// must wake it stops it and logs whether it came promptly (well before the timeout).

/// An idle source0 in `mode`: keeps the mode from being empty.
private func keepAlive(_ e: any LoopEngine, _ mode: String = "tracking") {
    e.add(source0: e.source0(order: 0) {}, mode)
}

let crossThreadScenarios: [(String, Scenario)] = [
    ("addCommonMode from another thread: a due common timer copied into the sleeping mode fires at once", { e, log in
        keepAlive(e)
        let start = e.now()
        let t = e.timer(after: 0, interval: 0) {
            log.add("timer in \(e.currentModeName ?? "-") prompt:\(e.now() - start < 1)")
            e.stop()
        }
        e.add(timer: t, "common")   // in the default mode (the only common one), which is not run
        fromAnotherThread(after: 0.05) { e.addCommonMode("tracking") }
        log.add("r:\(e.run("tracking", 2, false))")
    }),
    ("addCommonMode from another thread: a common timer copied into the sleeping mode fires on its date", { e, log in
        keepAlive(e)
        let start = e.now()
        let t = e.timer(after: 0.2, interval: 0) {
            let waited = e.now() - start
            log.add("timer on time:\(waited >= 0.18) prompt:\(waited < 1)")
            e.stop()
        }
        e.add(timer: t, "common")
        fromAnotherThread(after: 0.05) { e.addCommonMode("tracking") }
        log.add("r:\(e.run("tracking", 2, false))")
    }),
    ("addCommonMode from another thread while a run nested in a callout sleeps in that mode: a due common timer fires there at once", { e, log in
        keepAlive(e, "modal")
        let start = e.now()
        let u = e.timer(after: 0, interval: 0) {
            log.add("timer in \(e.currentModeName ?? "-") prompt:\(e.now() - start < 1)")
            e.stop()
        }
        let s = e.source0(order: 0) {
            fromAnotherThread(after: 0.05) { e.addCommonMode("modal") }
            log.add("nested:\(e.run("modal", 2, false))")
        }
        e.add(source0: s, "default")
        e.signal(s)
        e.add(timer: u, "common")   // due in the default mode, but the pass performs the source0 first
        log.add("r:\(e.run("default", 0, false))")
    }),
    ("a due timer added from another thread to the mode the loop sleeps in fires at once", { e, log in
        keepAlive(e)
        let start = e.now()
        let t = e.timer(after: 0, interval: 0) {
            log.add("timer prompt:\(e.now() - start < 1)")
            e.stop()
        }
        fromAnotherThread(after: 0.05) { e.add(timer: t, "tracking") }
        log.add("r:\(e.run("tracking", 2, false))")
    }),
    ("a due timer added from another thread to the common modes fires at once in the common mode the loop sleeps in", { e, log in
        keepAlive(e)
        e.addCommonMode("tracking")
        let start = e.now()
        let t = e.timer(after: 0, interval: 0) {
            log.add("timer in \(e.currentModeName ?? "-") prompt:\(e.now() - start < 1)")
            e.stop()
        }
        fromAnotherThread(after: 0.05) { e.add(timer: t, "common") }
        log.add("r:\(e.run("tracking", 2, false))")
    }),
    ("timers of the sleeping mode moved earlier from another thread fire on their new dates", { e, log in
        keepAlive(e)
        let start = e.now()
        let soon = e.timer(after: 10, interval: 0) {
            log.add("soon prompt:\(e.now() - start < 1)")
            e.stop()
        }
        let past = e.timer(after: 10, interval: 0) { log.add("past prompt:\(e.now() - start < 1)") }
        e.add(timer: soon, "tracking")
        e.add(timer: past, "tracking")
        fromAnotherThread(after: 0.05) {
            e.setNextFire(timer: soon, after: 0.1)
            e.setNextFire(timer: past, after: -1)
        }
        log.add("r:\(e.run("tracking", 2, false))")
    }),
    ("the next timers of the sleeping mode invalidated, removed or moved later from another thread: it waits for the one left", { e, log in
        keepAlive(e)
        e.addCommonMode("tracking")
        let start = e.now()
        // (Their dates leave the other thread 0.45 s to make its changes on a loaded machine.)
        let a = e.timer(after: 0.5, interval: 0) { log.add("a (invalidated)") }
        let b = e.timer(after: 0.5, interval: 0) { log.add("b (removed)") }
        let c = e.timer(after: 0.5, interval: 0) { log.add("c (moved)") }
        let x = e.timer(after: 0.5, interval: 0) { log.add("x (removed from common)") }
        let d = e.timer(after: 0.7, interval: 0) {
            let waited = e.now() - start
            log.add("d on time:\(waited >= 0.68) prompt:\(waited < 1.5)")
            e.stop()
        }
        for t in [a, b, c, d] { e.add(timer: t, "tracking") }
        e.add(timer: x, "common")
        fromAnotherThread(after: 0.05) {
            e.invalidate(timer: a)
            e.remove(timer: b, "tracking")
            e.setNextFire(timer: c, after: 10)
            e.remove(timer: x, "common")
        }
        log.add("r:\(e.run("tracking", 3, false))")
        log.add("b-valid:\(e.isValid(timer: b)) c:\(dateKind(e.nextFire(timer: c))) x-valid:\(e.isValid(timer: x))")
    }),
    ("an observer and a signalled source0 added from another thread wake nothing; the wake-up that follows finds them", { e, log in
        keepAlive(e)
        e.addCommonMode("tracking")
        let o = e.observer(64 | 128, repeats: true, order: 0) { log.add("obs:\(activityName($0))") }
        let s = e.source0(order: 0) { log.add("source0"); e.stop() }
        let wake = e.waker
        fromAnotherThread(after: 0.05) {
            e.add(observer: o, "common")
            e.add(source0: s, "tracking")
            e.signal(s)
            wake()
        }
        log.add("r:\(e.run("tracking", 2, false))")
    }),
    ("addCommonMode from another thread copies a common observer and a signalled common source0; the wake-up that follows finds them", { e, log in
        keepAlive(e)
        let o = e.observer(64 | 128, repeats: true, order: 0) { log.add("obs:\(activityName($0))") }
        let s = e.source0(order: 0) { log.add("source0 in \(e.currentModeName ?? "-")"); e.stop() }
        e.add(observer: o, "common")
        e.add(source0: s, "common")
        e.signal(s)
        let wake = e.waker
        fromAnotherThread(after: 0.05) {
            e.addCommonMode("tracking")
            wake()
        }
        log.add("r:\(e.run("tracking", 2, false))")
    }),
]
