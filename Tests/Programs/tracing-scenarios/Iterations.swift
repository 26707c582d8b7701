import Foundation
import RunLoopCore

/// Iterations scenario: one poll of the default mode (its first pass, iteration 1, on a fresh
/// loop) whose callouts of every kind each run the loop nested inside them (a poll of `inner`
/// performing a source0; the last one sleeps until its timeout), after which the pass emits its
/// own events: the callout's exit, a one-shot observer's and a one-shot timer's removal, a repeating
/// timer's re-arm, a registration made in the callout, the iteration's and the run's end. Every
/// one of them must carry iteration 1 (EngineTraceTests).
enum IterationsScenario {
    static func run() {
        let log = ScenarioLog()
        let done = DispatchSemaphore(value: 0)
        let t = Thread {
            let loop = RLRunLoop.current
            log.add("loop \(loop.id) tid \(threadIDNow())")
            let inner = RLMode("inner")
            let innerSource = RLSource0(order: 0, name: "inner-s0") {}
            loop.add(innerSource, forMode: inner)
            /// A run nested in a callout: one pass of `inner`, or, `sleeping`, one that waits 5 ms.
            func nested(sleeping: Bool = false) {
                if !sleeping { innerSource.signal() }
                _ = RLRunLoop.current.run(mode: inner, seconds: sleeping ? 0.005 : 0, returnAfterSourceHandled: false)
            }
            let side = RLSource0(order: 0, name: "side") {}
            let obs = RLObserver(activities: .beforeSources, repeats: false, order: 0, name: "obs-once") { _, _ in nested() }
            let src = RLSource0(order: 0, name: "outer-s0") {
                nested()
                RLRunLoop.current.add(side, forMode: RLMode("side-mode"))
            }
            let repeating = RLTimer(fireAt: .now, interval: .seconds(100), name: "t-repeat") { _ in nested() }
            let once = RLTimer(fireAt: .now, name: "t-once") { _ in nested(sleeping: true) }
            loop.add(obs, forMode: .default)
            loop.add(src, forMode: .default)
            loop.add(repeating, forMode: .default)
            loop.add(once, forMode: .default)
            loop.performBlock(forMode: .default, name: "blk") { nested() }
            src.signal()
            usleep(1_000)
            let r = loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false)
            log.add("result \(r.rawValue)")
            repeating.invalidate()
            withExtendedLifetime((innerSource, side, obs, src, once)) {}
            done.signal()
        }
        t.start()
        done.wait()
        log.flush()
    }
}
