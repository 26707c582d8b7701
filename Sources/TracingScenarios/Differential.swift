import Dispatch
import Foundation
import RunLoopCore
import Synchronization

// The differential scenarios of Tests/RunLoopCoreTests/DifferentialTests.swift (RunLoopCore vs
// CFRunLoop), replayed here on RunLoopCore alone under a tracing session. The scenario bodies are
// copied verbatim (keep them in sync); `TracedEngine` has the same operations as the tests'
// `RLEngine`, but names every item and logs every callout as it starts, so the test can compare the
// trace's callout entries and run exits with what the loop really did.

/// A thread-safe event log the scenarios append to.
final class EventLog: @unchecked Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ s: String) { lines.withLock { $0.append(s) } }
    var all: [String] { lines.withLock { $0 } }
}

/// Activity names as the scenario logs spell them.
func activityName(_ raw: UInt32) -> String {
    switch raw {
    case 1: "entry"
    case 2: "beforeTimers"
    case 4: "beforeSources"
    case 32: "beforeWaiting"
    case 64: "afterWaiting"
    case 128: "exit"
    default: "activity\(raw)"
    }
}

typealias TracedScenario = (TracedEngine, EventLog) -> Void

/// RunLoopCore with named items whose callouts log `callout <kind> <name> [<activity>]` first thing.
final class TracedEngine {
    let loop = RLRunLoop.current
    /// What the trace must show: callouts (`callout ...`) and run results (`run <mode> <result>`).
    let truth = EventLog()
    private var counter = 0
    private func next(_ prefix: String) -> String { counter += 1; return "\(prefix)-\(counter)" }

    func mode(_ m: String) -> RLMode { m == "default" ? .default : (m == "common" ? .commonModes : RLMode(m)) }
    func source0(order: Int, _ perform: @escaping () -> Void) -> AnyObject {
        let name = next("s0"), truth = truth
        return RLSource0(order: order, name: name) { truth.add("callout source0 \(name)"); perform() }
    }
    func add(source0: AnyObject, _ m: String) { loop.add(source0 as! RLSource0, forMode: mode(m)) }
    func remove(source0: AnyObject, _ m: String) { loop.remove(source0 as! RLSource0, forMode: mode(m)) }
    func signal(_ s: AnyObject) { (s as! RLSource0).signal() }
    func invalidate(source0: AnyObject) { (source0 as! RLSource0).invalidate() }
    func observer(_ a: UInt32, repeats: Bool, order: Int, _ cb: @escaping (UInt32) -> Void) -> AnyObject {
        let name = next("obs"), truth = truth
        return RLObserver(activities: RLActivity(rawValue: a), repeats: repeats, order: order, name: name) { _, act in
            truth.add("callout observer \(name) \(act.rawValue)"); cb(act.rawValue)
        }
    }
    func add(observer: AnyObject, _ m: String) { loop.add(observer as! RLObserver, forMode: mode(m)) }
    func invalidate(observer: AnyObject) { (observer as! RLObserver).invalidate() }
    func timer(after: Double, interval: Double, _ cb: @escaping () -> Void) -> AnyObject {
        let name = next("timer"), truth = truth
        return RLTimer(fireAfter: after, interval: interval, name: name) { _ in truth.add("callout timer \(name)"); cb() }
    }
    func now() -> Double { Double(RLInstant.now.nanoseconds) / 1e9 }
    func add(timer: AnyObject, _ m: String) { loop.add(timer as! RLTimer, forMode: mode(m)) }
    func invalidate(timer: AnyObject) { (timer as! RLTimer).invalidate() }
    func setNextFire(timer: AnyObject, after: Double) { (timer as! RLTimer).setNextFireDate(RLInstant.now.advanced(bySeconds: after)) }
    func performBlock(_ m: String, _ block: @escaping () -> Void) {
        let name = next("block"), truth = truth
        loop.performBlock(forMode: mode(m), name: name) { truth.add("callout block \(name)"); block() }
    }
    func performBlock(modes: [String], _ block: @escaping () -> Void) {
        let name = next("block"), truth = truth
        loop.performBlock(forModes: Set(modes.map(mode)), name: name) { truth.add("callout block \(name)"); block() }
    }
    func addCommonMode(_ m: String) { loop.addCommonMode(mode(m)) }
    func run(_ m: String, _ s: Double, _ r: Bool) -> Int32 {
        let result = loop.run(mode: mode(m), seconds: s, returnAfterSourceHandled: r).rawValue
        truth.add("run \(mode(m).rawValue) \(result)")
        return result
    }
    func stop() { loop.stop() }
    func wakeUp() { loop.wakeUp() }
    var waker: @Sendable () -> Void { let l = loop; return { l.wakeUp() } }
    var currentModeName: String? {
        guard let m = loop.currentMode else { return nil }
        return m == .default ? "default" : m.rawValue
    }
}

/// Adds an observer of every activity that logs `tag:activity`.
func observeAll(_ e: TracedEngine, _ log: EventLog, _ mode: String = "default", tag: String = "obs", order: Int = 0) -> AnyObject {
    let o = e.observer(0x0FFF_FFFF, repeats: true, order: order) { log.add("\(tag):\(activityName($0))") }
    e.add(observer: o, mode)
    return o
}

enum DifferentialReplay {
    /// Runs every scenario on a fresh thread (a fresh loop) and prints, per scenario `k`:
    /// `LOG d<k> loop <id> <name>`, then its `callout ...` and `run ...` lines.
    static func run() {
        for (k, (name, scenario)) in differentialScenarios.enumerated() {
            let done = DispatchSemaphore(value: 0)
            let out = Mutex<[String]>([])
            let t = Thread {
                let e = TracedEngine()
                let log = EventLog()
                scenario(e, log)
                let lines = ["loop \(e.loop.id) \(name)"] + e.truth.all
                out.withLock { $0 = lines }
                done.signal()
            }
            t.stackSize = 4 << 20
            t.start()
            done.wait()
            for l in out.withLock({ $0 }) { print("LOG d\(k) " + l) }
        }
    }
}

let differentialScenarios: [(String, TracedScenario)] = [
    ("empty mode finishes without entry/exit", { e, log in
        let o = observeAll(e, log)
        log.add("result:\(e.run("default", 0.2, false))")
        log.add("result-unknown-mode:\(e.run("nosuchmode", 0.2, false))")
        log.add("result-common:\(e.run("common", 0.2, false))")
        _ = o
    }),
    ("block, source0, one-shot timer, timeout", { e, log in
        let o = observeAll(e, log)
        let t = e.timer(after: 0.05, interval: 0) { log.add("timer") }
        e.add(timer: t, "default")
        e.performBlock("default") { log.add("block") }
        let s = e.source0(order: 0) { log.add("source0") }
        e.add(source0: s, "default")
        e.signal(s)
        log.add("result:\(e.run("default", 0.3, false))")
        _ = o
    }),
    ("one-shot timer as the only item finishes after it fires", { e, log in
        let o = observeAll(e, log)
        e.add(timer: e.timer(after: 0.01, interval: 0) { log.add("timer") }, "default")
        log.add("result:\(e.run("default", 5, false))")
        _ = o
    }),
    ("poll (timeout 0) runs one pass", { e, log in
        let o = observeAll(e, log)
        let s = e.source0(order: 0) { log.add("source0") }
        e.add(source0: s, "default")
        log.add("result:\(e.run("default", 0, false))")
        e.signal(s)
        log.add("result:\(e.run("default", 0, false))")
        log.add("result:\(e.run("default", -1, true))")
        e.signal(s)
        log.add("result:\(e.run("default", 0, true))")
        _ = o
    }),
    ("a poll fires an already-due timer", { e, log in
        let o = observeAll(e, log)
        e.add(timer: e.timer(after: 0, interval: 0) { log.add("due-timer") }, "default")
        let s = e.source0(order: 0) { log.add("source0") }
        e.add(source0: s, "default")
        usleep(20_000)
        log.add("r:\(e.run("default", 0, false))")
        e.add(timer: e.timer(after: 0, interval: 0) { log.add("due-timer-2") }, "default")
        e.signal(s)
        usleep(20_000)
        log.add("r:\(e.run("default", 0, false))")
        _ = o
    }),
    ("observer order: autorelease-pool style bracketing and dirty-list flush", { e, log in
        var keep: [AnyObject] = []
        for (order, tag) in [(2_000_000, "commit"), (Int(Int32.max), "pool-pop"), (1_999_000, "flush"),
                             (-Int(Int32.max), "pool-push"), (0, "plain-a"), (0, "plain-b")] {
            let o = e.observer(1 | 32 | 128, repeats: true, order: order) { log.add("\(tag):\(activityName($0))") }
            e.add(observer: o, "default")
            keep.append(o)
        }
        e.add(timer: e.timer(after: 0.01, interval: 0) { log.add("timer") }, "default")
        log.add("result:\(e.run("default", 2, false))")
        _ = keep
    }),
    ("timer in default silent in tracking; alive once common", { e, log in
        let keepAlive = e.source0(order: 0) {}
        e.add(source0: keepAlive, "tracking")
        let t = e.timer(after: 0.01, interval: 0) { log.add("timer") }
        e.add(timer: t, "default")
        log.add("tracking:\(e.run("tracking", 0.08, false))")
        e.addCommonMode("tracking")
        e.add(timer: t, "common")
        log.add("tracking-common:\(e.run("tracking", 0.5, true))")
        log.add("default:\(e.run("default", 0.05, false))")
    }),
    ("common items are copied into a mode marked common later", { e, log in
        let s = e.source0(order: 0) { log.add("source0") }
        e.add(source0: s, "common")
        let o = observeAll(e, log, "common")
        e.signal(s)
        log.add("before-mark:\(e.run("late", 0, false))")
        e.addCommonMode("late")
        e.signal(s)
        log.add("after-mark:\(e.run("late", 0, true))")
        e.performBlock("common") { log.add("common-block") }
        log.add("block-run:\(e.run("late", 0, false))")
        _ = o
    }),
    ("source0 signal without wakeUp is unseen while asleep; with wakeUp it runs", { e, log in
        let s = e.source0(order: 0) { log.add("source0") }
        e.add(source0: s, "default")
        let o = observeAll(e, log)
        let signalled = DispatchSemaphore(value: 0)
        let signaller = Thread {
            Thread.sleep(forTimeInterval: 0.03)
            e.signal(s)
            signalled.signal()
        }
        signaller.start()
        log.add("no-wake:\(e.run("default", 0.3, false))")
        signalled.wait()
        let wake = e.waker
        let waker = Thread {
            Thread.sleep(forTimeInterval: 0.03)
            e.signal(s)
            wake()
        }
        waker.start()
        log.add("wake:\(e.run("default", 2, true))")
        _ = o
    }),
    ("nested run in another mode from inside a callout", { e, log in
        let o = observeAll(e, log, tag: "outer")
        let inner = e.source0(order: 0) { log.add("inner-source0"); log.add("inner-mode:\(e.currentModeName ?? "-")") }
        e.add(source0: inner, "inner")
        let oi = observeAll(e, log, "inner", tag: "inner")
        let s = e.source0(order: 0) {
            log.add("outer-source0")
            e.signal(inner)
            log.add("nested:\(e.run("inner", 1, true))")
            log.add("mode-after:\(e.currentModeName ?? "-")")
        }
        e.add(source0: s, "default")
        e.signal(s)
        log.add("result:\(e.run("default", 0.05, false))")
        _ = (o, oi)
    }),
    ("stop inside a callout; stop before a run is lost", { e, log in
        let s = e.source0(order: 0) { log.add("source0"); e.stop() }
        e.add(source0: s, "default")
        e.signal(s)
        log.add("stopped:\(e.run("default", 2, false))")
        e.stop()
        log.add("after-early-stop:\(e.run("default", 0.03, false))")
        let t = e.timer(after: 0.01, interval: 0) { log.add("timer"); e.stop() }
        e.add(timer: t, "default")
        log.add("timer-stop:\(e.run("default", 2, false))")
    }),
    ("mutation during callouts", { e, log in
        var b: AnyObject?
        let a = e.source0(order: 0) { log.add("A"); e.invalidate(source0: b!) }
        b = e.source0(order: 1) { log.add("B") }
        let c = e.source0(order: 2) { log.add("C") }
        for s in [a, b!, c] { e.add(source0: s, "default"); e.signal(s) }
        var selfRemoving: AnyObject?
        selfRemoving = e.observer(4, repeats: true, order: 0) { _ in log.add("self-removing"); e.invalidate(observer: selfRemoving!) }
        e.add(observer: selfRemoving!, "default")
        let t1 = e.timer(after: 0.1, interval: 0) {
            log.add("t1")
            e.add(timer: e.timer(after: 0.02, interval: 0) { log.add("t-added") }, "default")
        }
        e.add(timer: t1, "default")
        log.add("r1:\(e.run("default", 0, false))")
        log.add("r2:\(e.run("default", 0.6, false))")
    }),
    ("one-shot observers fire once", { e, log in
        let o = e.observer(0x0FFF_FFFF, repeats: false, order: 0) { log.add("once:\(activityName($0))") }
        e.add(observer: o, "default")
        let r = observeAll(e, log, tag: "rep")
        let s = e.source0(order: 0) { log.add("source0") }
        e.add(source0: s, "default")
        e.signal(s)
        log.add("r:\(e.run("default", 0, false))")
        e.signal(s)
        log.add("r:\(e.run("default", 0, false))")
        _ = r
    }),
    ("timers never count as handled sources", { e, log in
        e.add(timer: e.timer(after: 0.01, interval: 0) { log.add("timer") }, "default")
        let s = e.source0(order: 0) { log.add("source0") }
        e.add(source0: s, "default")
        log.add("r:\(e.run("default", 0.08, true))")
    }),
    ("perform restricted to modes runs only when back in one", { e, log in
        let keep = e.source0(order: 0) {}
        e.add(source0: keep, "default")
        e.add(source0: keep, "tracking")
        e.performBlock("tracking") { log.add("for-tracking") }
        e.performBlock(modes: ["default", "other"]) { log.add("for-default-or-other") }
        e.performBlock("default") { log.add("for-default") }
        log.add("default:\(e.run("default", 0, false))")
        log.add("tracking:\(e.run("tracking", 0, false))")
        e.performBlock("common") { log.add("for-common") }
        log.add("tracking-again:\(e.run("tracking", 0, false))")
        log.add("default-again:\(e.run("default", 0, false))")
    }),
    ("blocks queued during a pass wait for the next pass", { e, log in
        let o = observeAll(e, log)
        e.performBlock("default") {
            log.add("b1")
            e.performBlock("default") { log.add("b1-child") }
        }
        e.performBlock("default") { log.add("b2") }
        log.add("r:\(e.run("default", 0, false))")
        log.add("r:\(e.run("default", 0, false))")
        _ = o
    }),
    ("source0 order, then signal time", { e, log in
        let x = e.source0(order: 5) { log.add("x5") }
        let y = e.source0(order: 1) { log.add("y1") }
        let z = e.source0(order: 5) { log.add("z5") }
        for s in [x, y, z] { e.add(source0: s, "default") }
        e.signal(z); e.signal(x); e.signal(y)
        log.add("r:\(e.run("default", 0, false))")
        e.signal(x); e.signal(z)
        log.add("r:\(e.run("default", 0, true))")
        log.add("r:\(e.run("default", 0, true))")
    }),
    ("timer rescheduled later inside its callout is honoured", { e, log in
        var t: AnyObject?
        var n = 0
        t = e.timer(after: 0.01, interval: 10) {
            n += 1
            log.add("fire\(n)")
            if n == 1 { e.setNextFire(timer: t!, after: 0.02) }
            if n == 2 { e.invalidate(timer: t!) }
        }
        e.add(timer: t!, "default")
        log.add("r:\(e.run("default", 3, false))")
    }),
]

