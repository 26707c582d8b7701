import CoreFoundation
import Foundation
import RunLoopCore
import Synchronization

/// A thread-safe event log the scenarios append to.
final class EventLog: @unchecked Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ s: String) { lines.withLock { $0.append(s) } }
    var all: [String] { lines.withLock { $0 } }
    func count(_ s: String) -> Int { all.filter { $0 == s }.count }
}

/// Runs `body` on a new thread (so it gets a fresh run loop) and waits for it.
func onFreshThread<T>(_ name: String = "scenario", _ body: @escaping () -> T) -> T {
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

/// The operations the differential scenarios use, implemented once on RunLoopCore and once on the
/// real CFRunLoop. Handles are opaque `AnyObject`s. Modes are names ("default", "common", others).
protocol LoopEngine: AnyObject {
    static var label: String { get }
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

// MARK: - RunLoopCore

final class RLEngine: LoopEngine {
    static let label = "RunLoopCore"
    let loop = RLRunLoop.current
    required init() {}
    func mode(_ m: String) -> RLMode { m == "default" ? .default : (m == "common" ? .commonModes : RLMode(m)) }
    func source0(order: Int, _ perform: @escaping () -> Void) -> AnyObject { RLSource0(order: order, perform: perform) }
    func add(source0: AnyObject, _ m: String) { loop.add(source0 as! RLSource0, forMode: mode(m)) }
    func remove(source0: AnyObject, _ m: String) { loop.remove(source0 as! RLSource0, forMode: mode(m)) }
    func signal(_ s: AnyObject) { (s as! RLSource0).signal() }
    func invalidate(source0: AnyObject) { (source0 as! RLSource0).invalidate() }
    func observer(_ a: UInt32, repeats: Bool, order: Int, _ cb: @escaping (UInt32) -> Void) -> AnyObject {
        RLObserver(activities: RLActivity(rawValue: a), repeats: repeats, order: order) { _, act in cb(act.rawValue) }
    }
    func add(observer: AnyObject, _ m: String) { loop.add(observer as! RLObserver, forMode: mode(m)) }
    func invalidate(observer: AnyObject) { (observer as! RLObserver).invalidate() }
    func timer(after: Double, interval: Double, _ cb: @escaping () -> Void) -> AnyObject {
        RLTimer(fireAfter: after, interval: interval) { _ in cb() }
    }
    func timer(at base: Double, plus offset: Double, interval: Double, _ cb: @escaping () -> Void) -> AnyObject {
        RLTimer(fireAt: RLInstant(nanoseconds: UInt64((base + offset) * 1e9)), interval: .nanoseconds(Int64(interval * 1e9))) { _ in cb() }
    }
    func now() -> Double { Double(RLInstant.now.nanoseconds) / 1e9 }
    func add(timer: AnyObject, _ m: String) { loop.add(timer as! RLTimer, forMode: mode(m)) }
    func invalidate(timer: AnyObject) { (timer as! RLTimer).invalidate() }
    func setNextFire(timer: AnyObject, after: Double) { (timer as! RLTimer).setNextFireDate(RLInstant.now.advanced(bySeconds: after)) }
    func performBlock(_ m: String, _ block: @escaping () -> Void) { loop.performBlock(forMode: mode(m), block) }
    func performBlock(modes: [String], _ block: @escaping () -> Void) { loop.performBlock(forModes: Set(modes.map(mode)), block) }
    func addCommonMode(_ m: String) { loop.addCommonMode(mode(m)) }
    func run(_ m: String, _ s: Double, _ r: Bool) -> Int32 { loop.run(mode: mode(m), seconds: s, returnAfterSourceHandled: r).rawValue }
    func stop() { loop.stop() }
    func wakeUp() { loop.wakeUp() }
    var waker: @Sendable () -> Void { let l = loop; return { l.wakeUp() } }
    var currentModeName: String? {
        guard let m = loop.currentMode else { return nil }
        return m == .default ? "default" : m.rawValue
    }
}

// MARK: - CoreFoundation

final class CFEngine: LoopEngine {
    static let label = "CFRunLoop"
    let loop = CFRunLoopGetCurrent()!
    required init() {}
    var modeCache: [String: CFString] = [:]
    func mode(_ m: String) -> CFRunLoopMode {
        if m == "default" { return kCFRunLoopDefaultMode }
        if m == "common" { return kCFRunLoopCommonModes }
        if let c = modeCache[m] { return c }
        let s = CFStringCreateWithCString(nil, m, CFStringBuiltInEncodings.UTF8.rawValue)!
        modeCache[m] = s
        return s
    }
    final class Box { let f: () -> Void; init(_ f: @escaping () -> Void) { self.f = f } }
    final class Src { let ref: CFRunLoopSource; let box: Box; init(_ r: CFRunLoopSource, _ b: Box) { ref = r; box = b } }
    final class Obs { let ref: CFRunLoopObserver; init(_ r: CFRunLoopObserver) { ref = r } }
    final class Tmr { let ref: CFRunLoopTimer; init(_ r: CFRunLoopTimer) { ref = r } }

    func source0(order: Int, _ perform: @escaping () -> Void) -> AnyObject {
        let box = Box(perform)
        var ctx = CFRunLoopSourceContext()
        ctx.info = Unmanaged.passUnretained(box).toOpaque()
        ctx.perform = { info in Unmanaged<Box>.fromOpaque(info!).takeUnretainedValue().f() }
        return Src(CFRunLoopSourceCreate(nil, order, &ctx)!, box)
    }
    func add(source0: AnyObject, _ m: String) { CFRunLoopAddSource(loop, (source0 as! Src).ref, mode(m)) }
    func remove(source0: AnyObject, _ m: String) { CFRunLoopRemoveSource(loop, (source0 as! Src).ref, mode(m)) }
    func signal(_ s: AnyObject) { CFRunLoopSourceSignal((s as! Src).ref) }
    func invalidate(source0: AnyObject) { CFRunLoopSourceInvalidate((source0 as! Src).ref) }
    func observer(_ a: UInt32, repeats: Bool, order: Int, _ cb: @escaping (UInt32) -> Void) -> AnyObject {
        Obs(CFRunLoopObserverCreateWithHandler(nil, CFOptionFlags(a), repeats, order) { _, act in cb(UInt32(act.rawValue)) })
    }
    func add(observer: AnyObject, _ m: String) { CFRunLoopAddObserver(loop, (observer as! Obs).ref, mode(m)) }
    func invalidate(observer: AnyObject) { CFRunLoopObserverInvalidate((observer as! Obs).ref) }
    func timer(after: Double, interval: Double, _ cb: @escaping () -> Void) -> AnyObject {
        Tmr(CFRunLoopTimerCreateWithHandler(nil, CFAbsoluteTimeGetCurrent() + after, interval, 0, 0) { _ in cb() })
    }
    func timer(at base: Double, plus offset: Double, interval: Double, _ cb: @escaping () -> Void) -> AnyObject {
        Tmr(CFRunLoopTimerCreateWithHandler(nil, base + offset, interval, 0, 0) { _ in cb() })
    }
    func now() -> Double { CFAbsoluteTimeGetCurrent() }
    func add(timer: AnyObject, _ m: String) { CFRunLoopAddTimer(loop, (timer as! Tmr).ref, mode(m)) }
    func invalidate(timer: AnyObject) { CFRunLoopTimerInvalidate((timer as! Tmr).ref) }
    func setNextFire(timer: AnyObject, after: Double) { CFRunLoopTimerSetNextFireDate((timer as! Tmr).ref, CFAbsoluteTimeGetCurrent() + after) }
    func performBlock(_ m: String, _ block: @escaping () -> Void) { CFRunLoopPerformBlock(loop, mode(m), block) }
    func performBlock(modes: [String], _ block: @escaping () -> Void) {
        let arr = modes.map { mode($0) as AnyObject } as NSArray
        CFRunLoopPerformBlock(loop, unsafeBitCast(arr, to: CFTypeRef.self), block)
    }
    func addCommonMode(_ m: String) { CFRunLoopAddCommonMode(loop, mode(m)) }
    func run(_ m: String, _ s: Double, _ r: Bool) -> Int32 {
        Int32(CFRunLoopRunSpecificHelper.run(loop, mode(m), s, r))
    }
    func stop() { CFRunLoopStop(loop) }
    func wakeUp() { CFRunLoopWakeUp(loop) }
    var waker: @Sendable () -> Void {
        let raw = Unmanaged.passRetained(loop).toOpaque()
        let bits = UInt(bitPattern: raw)
        return { CFRunLoopWakeUp(Unmanaged<CFRunLoop>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()) }
    }
    var currentModeName: String? {
        guard let m = CFRunLoopCopyCurrentMode(loop) else { return nil }
        let s = m as AnyObject as! NSString as String
        return s == "kCFRunLoopDefaultMode" ? "default" : s
    }
}

/// `CFRunLoopRunInMode` runs the *current* thread's loop, which is the engine's loop.
enum CFRunLoopRunSpecificHelper {
    static func run(_ loop: CFRunLoop, _ mode: CFRunLoopMode, _ seconds: Double, _ r: Bool) -> Int32 {
        precondition(CFRunLoopGetCurrent() === loop)
        return CFRunLoopRunInMode(mode, seconds, r).rawValue
    }
}

/// A duration in whole nanoseconds.
func nsOf(_ d: Duration) -> Int64 {
    let (s, a) = d.components
    return s * 1_000_000_000 + a / 1_000_000_000
}
