// Scenarios that need the process's main thread to run the loop: the main dispatch queue and
// @MainActor are serviced only by the main thread's loop, in common modes. The RunLoopCore tests
// launch this program and compare what it prints (one event per line) with what CF specifies.
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import RunLoopCore
import Synchronization
import CRunLoopShims
import TestSupport

final class Log: @unchecked Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ s: String) { lines.withLock { $0.append(s) } }
    func flush() { for l in lines.withLock({ $0 }) { print(l) } }
}
let log = Log()
let mainTID = getpid()
func onMain() -> String { rl_gettid() == mainTID ? "main" : "other" }

func background(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async { body(); done.signal() }
    done.wait()
}

func mainQueueScenario() {
    let loop = RLRunLoop.main
    precondition(RLRunLoop.current === loop)
    let tracking = RLMode("tracking")
    let keepAlive = RLSource0(name: "keep-alive") {}
    loop.add(keepAlive, forMode: tracking)

    // 1. Main-queue work is not serviced in a mode that is not common.
    background { DispatchQueue.main.async { log.add("dispatch-1 on \(onMain())") } }
    log.add("tracking: \(loop.run(mode: tracking, seconds: 0.1, returnAfterSourceHandled: true))")
    // 2. The default mode (common) drains it, and that counts as a handled source.
    log.add("default: \(loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true))")
    // 3. @MainActor work goes through the same queue.
    background { Task { @MainActor in log.add("main-actor on \(onMain())") } }
    log.add("default: \(loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true))")
    // 4. Once tracking is marked common, it services the main queue too.
    loop.addCommonMode(tracking)
    background { DispatchQueue.main.async { log.add("dispatch-2 on \(onMain())") } }
    log.add("tracking-common: \(loop.run(mode: tracking, seconds: 2, returnAfterSourceHandled: true))")
    // 5. An empty default mode on the main loop is never "finished": it stands for the main queue.
    log.add("poll-empty-default: \(loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false))")
    // 6. Inside the drain the main queue is not re-entered: a nested run of a mode with nothing
    //    else finishes at once, and work queued meanwhile runs after the outer drain.
    DispatchQueue.main.async {
        DispatchQueue.main.async { log.add("queued-inside-drain") }
        log.add("nested: \(loop.run(mode: RLMode("nested-empty"), seconds: 1, returnAfterSourceHandled: false))")
        let inner = RLSource0(name: "inner") { log.add("inner-source0") }
        loop.add(inner, forMode: tracking)
        inner.signal()
        log.add("nested-tracking: \(loop.run(mode: tracking, seconds: 1, returnAfterSourceHandled: true))")
        inner.invalidate()
    }
    loop.wakeUp()
    log.add("outer: \(loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true))")
    log.add("after: \(loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true))")
    // 7. Main-queue work wakes the main loop only: a worker loop sleeping meanwhile does not wake.
    let worker = RLWorkerThread(name: "rlc-worker")
    let workerWakes = Atomic<Int>(0)
    let obs = RLObserver(activities: .afterWaiting) { _, _ in workerWakes.add(1, ordering: .relaxed) }
    let registered = DispatchSemaphore(value: 0)
    worker.perform { RLRunLoop.current.add(obs, forMode: .default); registered.signal() }
    registered.wait()
    usleep(20_000)
    let before = workerWakes.load(ordering: .relaxed)
    background { DispatchQueue.main.async { log.add("dispatch-3 on \(onMain())") } }
    log.add("default: \(loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true))")
    usleep(20_000)
    log.add("worker woke: \(workerWakes.load(ordering: .relaxed) - before)")
    worker.cancel()
    worker.join()
}

/// A stall monitor (observer + watchdog thread): the loop is "stalled" when it stays between
/// beforeSources/afterWaiting and the next beforeWaiting for 5 × 200 ms... scaled to 5 × 20 ms here.
func stallMonitorScenario() {
    let loop = RLRunLoop.main
    let lastActivity = Atomic<UInt32>(0)
    let stamp = Atomic<UInt64>(0)
    let observer = RLObserver(activities: .allActivities, order: Int.min + 1, name: "stall-monitor") { _, a in
        lastActivity.store(a.rawValue, ordering: .relaxed)
        stamp.add(1, ordering: .relaxed)
    }
    loop.add(observer, forMode: .commonModes)
    let stalls = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
    let watchdog = RawThread(name: "watchdog") {
        var seen = stamp.load(ordering: .relaxed), strikes = 0
        while !stop.load(ordering: .relaxed) {
            usleep(20_000)
            let now = stamp.load(ordering: .relaxed)
            let a = lastActivity.load(ordering: .relaxed)
            if now == seen && (a == RLActivity.beforeSources.rawValue || a == RLActivity.afterWaiting.rawValue) {
                strikes += 1
                if strikes == 5 { stalls.add(1, ordering: .relaxed) }
            } else { strikes = 0 }
            seen = now
        }
    }
    let busy = RLTimer(fireAt: .now + .milliseconds(10), name: "busy") { _ in usleep(250_000) }
    loop.add(busy, forMode: .default)
    let quick = RLTimer(fireAt: .now + .milliseconds(400), name: "quick") { _ in }
    loop.add(quick, forMode: .default)
    loop.run(mode: .default, seconds: 0.6, returnAfterSourceHandled: false)
    stop.store(true, ordering: .relaxed)
    watchdog.join()
    log.add("stalls: \(stalls.load(ordering: .relaxed))")
    observer.invalidate()
}

/// Known latencies, measured by the program itself (ground truth for rltrace's tests): a 50 ms
/// callout, a 300 ms hang, a timer held 20 ms past its date, a spin of 150 iterations, the
/// signal-to-perform latency of a source signalled from another thread. Prints
/// `name value` lines (ns, or a count).
func truthScenario() {
    let loop = RLRunLoop.main
    let start = RLInstant.now
    var truth: [(String, Int64)] = []
    func now() -> Int64 { Int64(rl_monotonic_ns()) }
    let slow = RLSource0(name: "slow-50ms") {
        let a = now(); usleep(50_000); truth.append(("slow-50ms", now() - a))
    }
    loop.add(slow, forMode: .default)
    loop.add(RLTimer(fireAt: start + .milliseconds(50), name: "signal-slow") { _ in slow.signal() }, forMode: .default)
    loop.add(RLTimer(fireAt: start + .milliseconds(200), name: "hang-300ms") { _ in
        let a = now(); usleep(300_000); truth.append(("hang-300ms", now() - a))
    }, forMode: .default)
    let lateDue = start + .milliseconds(700)
    loop.add(RLTimer(fireAt: lateDue + .milliseconds(-1), name: "hold-20ms") { _ in
        // Hold the loop until 20 ms after the late timer's date.
        while RLInstant.now < lateDue + .milliseconds(20) { usleep(200) }
    }, forMode: .default)
    loop.add(RLTimer(fireAt: lateDue, name: "late-20ms") { t in
        truth.append(("late-20ms", now() - Int64(t.nextFireDate?.nanoseconds ?? 0)))
    }, forMode: .default)
    var spins = 0
    var spinner: RLSource0!
    spinner = RLSource0(name: "spin-150") { spins += 1; if spins < 150 { spinner.signal() } }
    loop.add(spinner, forMode: .default)
    loop.add(RLTimer(fireAt: start + .milliseconds(800), name: "start-spin") { _ in spinner.signal() }, forMode: .default)
    // A source in two loops (this one, and a worker's mode that never runs), signalled once by the
    // worker thread, which then wakes this loop: the trace has two source0_signalled events of one
    // signal (one per loop) and one perform; the signal-to-perform latency is measured here.
    let worker = RLWorkerThread(name: "signaller")
    let signalledAt = Stamp()
    let shared = RLSource0(name: "shared-signal") {
        truth.append(("shared-signal", now() - signalledAt.value.load(ordering: .acquiring)))
    }
    loop.add(shared, forMode: .default)
    worker.runLoop.add(shared, forMode: RLMode("never-run"))
    loop.add(RLTimer(fireAt: start + .milliseconds(900), name: "ask-signal") { _ in
        worker.perform(name: "signal-shared") {
            signalledAt.value.store(now(), ordering: .releasing)
            shared.signal()
            loop.wakeUp()
        }
    }, forMode: .default)
    // 25 perform-blocks of one name, 5 of another: each block has its own id in the trace.
    var blocksRun = 0
    loop.add(RLTimer(fireAt: start + .milliseconds(950), name: "enqueue-blocks") { _ in
        for i in 0..<30 { loop.perform(inModes: [.default], name: i < 25 ? "tick-block" : "tock-block") { blocksRun += 1 } }
    }, forMode: .default)
    loop.add(RLTimer(fireAt: start + .milliseconds(1000), name: "stop") { _ in loop.stop() }, forMode: .default)
    loop.run(mode: .default, seconds: 5, returnAfterSourceHandled: false)
    truth.append(("blocks", Int64(blocksRun)))
    worker.cancel()
    worker.join()
    truth.append(("spin-150", Int64(spins)))
    for (n, v) in truth { log.add("\(n) \(v)") }
}

/// A time stamp shared between threads.
final class Stamp: Sendable { let value = Atomic<Int64>(0) }

/// A process killed (SIGKILL) inside a callout: a few quiet iterations, then a timer whose callout
/// kills the process, so the trace ends with the main loop still in that callout (issue 19 §4).
func killedScenario() {
    let loop = RLRunLoop.current
    var ticks = 0
    loop.add(RLTimer(fireAfter: 0.01, interval: 0.01, name: "tick") { _ in ticks += 1 }, forMode: .default)
    loop.add(RLTimer(fireAfter: 0.1, name: "killer") { _ in
        _ = ticks
        kill(getpid(), SIGKILL)
    }, forMode: .default)
    _ = loop.run(mode: .default, seconds: 5, returnAfterSourceHandled: false)
}

/// Wakes of both kinds (issue 17): 10 times another thread signals a source0 and wakes the loop
/// (performed in the loop's next iteration: not spurious), then 7 times it wakes the loop with
/// nothing to do (spurious), 30 ms apart so the loop is asleep each time.
func wakesScenario() {
    let loop = RLRunLoop.current
    var performed = 0
    let work = RLSource0(order: 0, name: "work") { performed += 1 }
    loop.add(work, forMode: .default)
    let other = RawThread(name: "waker") {
        usleep(100_000)
        for _ in 0..<10 { work.signalAndWake(loop); usleep(30_000) }
        for _ in 0..<7 { loop.wakeUp(); usleep(30_000) }
    }
    _ = loop.run(mode: .default, seconds: 1.0, returnAfterSourceHandled: false)
    other.join()
    print("performed \(performed)")
}

/// On-CPU time (issue 17): one timer computes for 120 ms of CPU time, another sleeps 120 ms in
/// usleep; both hold the loop at least as long, only one is on the CPU.
func onCPUScenario() {
    let loop = RLRunLoop.current
    loop.add(RLTimer(fireAfter: 0.02, name: "compute") { _ in
        // 120 ms of this thread's CPU time, however busy the machine is.
        func cpu() -> Int64 { var t = timespec(); clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec) }
        let end = cpu() + 120_000_000
        var x: UInt64 = 1
        while cpu() < end { for i in 0..<1000 { x = x &* 6364136223846793005 &+ UInt64(i) } }
        if x == 42 { print("") }
    }, forMode: .default)
    loop.add(RLTimer(fireAfter: 0.3, name: "block") { _ in usleep(120_000) }, forMode: .default)
    _ = loop.run(mode: .default, seconds: 0.6, returnAfterSourceHandled: false)
}

let args = CommandLine.arguments.dropFirst()
switch args.first {
case "killed": killedScenario()
case "wakes": wakesScenario()
case "oncpu": onCPUScenario()
case "mainqueue": mainQueueScenario()
case "stall": stallMonitorScenario()
case "truth": truthScenario()
default:
    print("usage: rlc-scenarios mainqueue|stall|truth|killed|wakes|oncpu")
    exit(2)
}
log.flush()
