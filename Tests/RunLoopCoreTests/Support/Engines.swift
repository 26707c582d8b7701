import CoreFoundation
import Foundation
import RunLoopCore
import RunLoopScenarios
import Synchronization

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
    func remove(timer: AnyObject, _ m: String) { CFRunLoopRemoveTimer(loop, (timer as! Tmr).ref, mode(m)) }
    func contains(timer: AnyObject, _ m: String) -> Bool { CFRunLoopContainsTimer(loop, (timer as! Tmr).ref, mode(m)) }
    /// CF's 0 is "none" (an invalidated timer).
    func nextFire(timer: AnyObject) -> Double? {
        let d = CFRunLoopTimerGetNextFireDate((timer as! Tmr).ref)
        return d == 0 ? nil : d
    }
    func nextTimerFireDate(_ m: String) -> Double { CFRunLoopGetNextTimerFireDate(loop, mode(m)) }
    func limitDate(_ m: String) -> String {
        // Foundation's own RunLoop over this thread's CFRunLoop (the engine's loop).
        precondition(CFRunLoopGetCurrent() === loop)
        let name = m == "default" ? RunLoop.Mode.default : (m == "common" ? RunLoop.Mode.common : RunLoop.Mode(m))
        guard let d = RunLoop.current.limitDate(forMode: name) else { return "nil" }
        return d == Date.distantFuture ? "distantFuture" : String(d.timeIntervalSinceReferenceDate)
    }
    func remove(observer: AnyObject, _ m: String) { CFRunLoopRemoveObserver(loop, (observer as! Obs).ref, mode(m)) }
    func contains(observer: AnyObject, _ m: String) -> Bool { CFRunLoopContainsObserver(loop, (observer as! Obs).ref, mode(m)) }
    func isSignalled(_ s: AnyObject) -> Bool { cfSourceIsSignalled(Unmanaged.passUnretained((s as! Src).ref).toOpaque()) != 0 }
    func isValid(timer: AnyObject) -> Bool { CFRunLoopTimerIsValid((timer as! Tmr).ref) }
    var allModes: [String] {
        let arr = CFRunLoopCopyAllModes(loop)! as AnyObject as! NSArray
        return arr.map { ($0 as! NSString) as String }.map { $0 == "kCFRunLoopDefaultMode" ? "default" : $0 }.sorted()
    }
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

/// `CFRunLoopSourceIsSignalled` is exported by CoreFoundation but declared in no installed header.
@_silgen_name("CFRunLoopSourceIsSignalled")
func cfSourceIsSignalled(_ source: UnsafeMutableRawPointer) -> UInt8

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
