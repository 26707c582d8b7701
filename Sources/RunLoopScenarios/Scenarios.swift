import Dispatch
import Foundation
import RunLoopCore
import Synchronization

// The differential scenarios (shared/runloop-semantics.md's list and more), written once against
// `LoopEngine`: RunLoopCoreTests runs each on RunLoopCore and on the real CFRunLoop and compares
// the logs; tracing-scenarios replays them on a traced RunLoopCore (`RLEngine(traced: true)`) and
// TracingTests compares the trace with what the callouts logged.

/// A thread-safe event log the scenarios append to.
public final class EventLog: @unchecked Sendable {
    private let lines = Mutex<[String]>([])
    /// Creates an empty log.
    public init() {}
    /// Appends a line.
    public func add(_ s: String) { lines.withLock { $0.append(s) } }
    /// Every line so far.
    public var all: [String] { lines.withLock { $0 } }
    /// How many lines equal `s`.
    public func count(_ s: String) -> Int { all.filter { $0 == s }.count }
}

/// Runs `body` on a new thread (so it gets a fresh run loop) and waits for it.
public func onFreshThread<T>(_ name: String = "scenario", _ body: @escaping () -> T) -> T {
    let box = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    let t = Thread {
        let v = body()
        box.withLock { $0 = v }
        done.signal()
    }
    t.name = name
    t.stackSize = 4 << 20
    t.start()
    done.wait()
    return box.withLock { $0! }
}

/// Activity names as the logs spell them.
public func activityName(_ raw: UInt32) -> String {
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

/// The operations the differential scenarios use, implemented on RunLoopCore (`RLEngine`) and, in
/// the tests, on the real CFRunLoop. Handles are opaque `AnyObject`s. Modes are names ("default",
/// "common", others).
public protocol LoopEngine: AnyObject {
    init()
    func source0(order: Int, _ perform: @escaping () -> Void) -> AnyObject
    func add(source0: AnyObject, _ mode: String)
    func remove(source0: AnyObject, _ mode: String)
    func signal(_ source0: AnyObject)
    func invalidate(source0: AnyObject)
    func observer(_ activities: UInt32, repeats: Bool, order: Int, _ cb: @escaping (UInt32) -> Void) -> AnyObject
    func add(observer: AnyObject, _ mode: String)
    func invalidate(observer: AnyObject)
    func timer(after: Double, interval: Double, _ cb: @escaping () -> Void) -> AnyObject
    /// A timer firing at an absolute offset from `base` (for equal fire dates).
    func timer(at base: Double, plus offset: Double, interval: Double, _ cb: @escaping () -> Void) -> AnyObject
    func now() -> Double
    func add(timer: AnyObject, _ mode: String)
    func invalidate(timer: AnyObject)
    func setNextFire(timer: AnyObject, after: Double)
    func performBlock(_ mode: String, _ block: @escaping () -> Void)
    func performBlock(modes: [String], _ block: @escaping () -> Void)
    func addCommonMode(_ mode: String)
    func run(_ mode: String, _ seconds: Double, _ returnAfterSourceHandled: Bool) -> Int32
    func stop()
    func wakeUp()
    /// A function that wakes this loop from another thread.
    var waker: @Sendable () -> Void { get }
    var currentModeName: String? { get }
}

/// A scenario: drives an engine and logs what happens.
public typealias Scenario = (any LoopEngine, EventLog) -> Void

/// RunLoopCore as a `LoopEngine`. Traced (`init(traced: true)`), it names every item and logs, as
/// each callout starts, `callout <kind> <name> [<activity>]`, and after each run `run <mode> <result>`,
/// into `truth`: what a trace of the loop must show.
public final class RLEngine: LoopEngine {
    /// The loop of the thread that created the engine.
    public let loop = RLRunLoop.current
    /// The callouts and run results, when traced.
    public let truth = EventLog()
    let traced: Bool
    private var counter = 0
    /// An engine whose items are unnamed and log nothing.
    public required convenience init() { self.init(traced: false) }
    /// An engine that names items and logs callouts into `truth` when `traced`.
    public init(traced: Bool) { self.traced = traced }

    private func name(_ prefix: String) -> String? {
        guard traced else { return nil }
        counter += 1
        return "\(prefix)-\(counter)"
    }
    private func logged(_ line: String?, _ body: @escaping () -> Void) -> () -> Void {
        guard let line else { return body }
        let truth = truth
        return { truth.add(line); body() }
    }
    func mode(_ m: String) -> RLMode { m == "default" ? .default : (m == "common" ? .commonModes : RLMode(m)) }
    public func source0(order: Int, _ perform: @escaping () -> Void) -> AnyObject {
        let n = name("s0")
        return RLSource0(order: order, name: n, perform: logged(n.map { "callout source0 \($0)" }, perform))
    }
    public func add(source0: AnyObject, _ m: String) { loop.add(source0 as! RLSource0, forMode: mode(m)) }
    public func remove(source0: AnyObject, _ m: String) { loop.remove(source0 as! RLSource0, forMode: mode(m)) }
    public func signal(_ s: AnyObject) { (s as! RLSource0).signal() }
    public func invalidate(source0: AnyObject) { (source0 as! RLSource0).invalidate() }
    public func observer(_ a: UInt32, repeats: Bool, order: Int, _ cb: @escaping (UInt32) -> Void) -> AnyObject {
        let n = name("obs"), truth = truth
        return RLObserver(activities: RLActivity(rawValue: a), repeats: repeats, order: order, name: n) { _, act in
            if let n { truth.add("callout observer \(n) \(act.rawValue)") }
            cb(act.rawValue)
        }
    }
    public func add(observer: AnyObject, _ m: String) { loop.add(observer as! RLObserver, forMode: mode(m)) }
    public func invalidate(observer: AnyObject) { (observer as! RLObserver).invalidate() }
    public func timer(after: Double, interval: Double, _ cb: @escaping () -> Void) -> AnyObject {
        let n = name("timer"), body = logged(n.map { "callout timer \($0)" }, cb)
        return RLTimer(fireAfter: after, interval: interval, name: n) { _ in body() }
    }
    public func timer(at base: Double, plus offset: Double, interval: Double, _ cb: @escaping () -> Void) -> AnyObject {
        let n = name("timer"), body = logged(n.map { "callout timer \($0)" }, cb)
        return RLTimer(fireAt: RLInstant(nanoseconds: UInt64((base + offset) * 1e9)), interval: .nanoseconds(Int64(interval * 1e9)),
                       name: n) { _ in body() }
    }
    public func now() -> Double { Double(RLInstant.now.nanoseconds) / 1e9 }
    public func add(timer: AnyObject, _ m: String) { loop.add(timer as! RLTimer, forMode: mode(m)) }
    public func invalidate(timer: AnyObject) { (timer as! RLTimer).invalidate() }
    public func setNextFire(timer: AnyObject, after: Double) { (timer as! RLTimer).setNextFireDate(RLInstant.now.advanced(bySeconds: after)) }
    public func performBlock(_ m: String, _ block: @escaping () -> Void) {
        let n = name("block")
        loop.performBlock(forMode: mode(m), name: n, logged(n.map { "callout block \($0)" }, block))
    }
    public func performBlock(modes: [String], _ block: @escaping () -> Void) {
        let n = name("block")
        loop.performBlock(forModes: Set(modes.map(mode)), name: n, logged(n.map { "callout block \($0)" }, block))
    }
    public func addCommonMode(_ m: String) { loop.addCommonMode(mode(m)) }
    public func run(_ m: String, _ s: Double, _ r: Bool) -> Int32 {
        let result = loop.run(mode: mode(m), seconds: s, returnAfterSourceHandled: r).rawValue
        if traced { truth.add("run \(mode(m).rawValue) \(result)") }
        return result
    }
    public func stop() { loop.stop() }
    public func wakeUp() { loop.wakeUp() }
    public var waker: @Sendable () -> Void { let l = loop; return { l.wakeUp() } }
    public var currentModeName: String? {
        guard let m = loop.currentMode else { return nil }
        return m == .default ? "default" : m.rawValue
    }
}

/// Adds an observer of every activity that logs `tag:activity`.
@discardableResult
public func observeAll(_ e: any LoopEngine, _ log: EventLog, _ mode: String = "default", tag: String = "obs", order: Int = 0) -> AnyObject {
    let o = e.observer(0x0FFF_FFFF, repeats: true, order: order) { log.add("\(tag):\(activityName($0))") }
    e.add(observer: o, mode)
    return o
}

public let differentialScenarios: [(String, Scenario)] = [
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

