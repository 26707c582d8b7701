// Workload 10 (docs/benchmarks.md): several producer threads posting work to one running loop.
//
// P producer threads each make N operations against one loop that runs (`run(mode:seconds:)` in a
// loop on its own thread), cycling through four kinds:
//   0. perform a block and wake the loop   (`loop.perform { }` / CFRunLoopPerformBlock(common) + CFRunLoopWakeUp)
//   1. add a one-shot, already-due timer   (`loop.add(RLTimer, .default)` / CFRunLoopAddTimer)
//   2. signal a source0 of the loop, wake  (`signalAndWake` / CFRunLoopSourceSignal + CFRunLoopWakeUp)
//   3. add and remove an observer, wake    (`add`/`remove` + `wakeUp()` / CFRunLoopAdd/RemoveObserver + CFRunLoopWakeUp)
// Kinds 0-2 end in a callout on the loop's thread; each records the time from its post (a
// CLOCK_MONOTONIC stamp taken just before the call) to the callout, and is counted: the run fails
// (rl-bench exits) if any is lost or counted twice. Kind 3 has no callout of its own (the observer
// may or may not fire between its add and remove; its fires are not counted).
// Source0 signals coalesce (a source signalled twice before it runs performs once), so each
// producer has its own source0 and a list of its signals' stamps: a perform accounts for every
// signal of its producer posted so far (the stamp is published before the signal, so a signal whose
// stamp a perform missed sets the source signalled again after that perform cleared it).
//
// The floor: the same producers append (kind, stamp) to one pthread-mutex-protected array and write
// an eventfd per item; the consumer blocks in read(2) on the eventfd, swaps the array out under the
// mutex and handles the items (the observer kind counted but not timed, as above).
//
// Timed: from the moment the producers are released (they wait at a start line) until every
// callout was made and every producer returned.
import CRunLoopShims
import CoreFoundation
import Foundation
import RunLoopCore
import Synchronization

/// One run's result: ops/s and the post→callout delays (µs) of every op with a callout.
struct CrossThreadResult {
    var opsPerSecond: Double
    var p50Us: Double
    var p99Us: Double
}

/// What one producer shares with the loop's thread.
final class ProducerSlot: @unchecked Sendable {
    /// Stamps of this producer's source0 signals, in order (written by the producer before it
    /// publishes them through `posted`; read by the loop's thread up to `posted`).
    let signalStamps: UnsafeMutablePointer<UInt64>
    let posted = Atomic<Int>(0)
    /// Loop thread only: how many of `signalStamps` were accounted for.
    var handled = 0
    init(capacity: Int) {
        signalStamps = .allocate(capacity: max(1, capacity))
    }
    deinit { signalStamps.deallocate() }
}

/// Loop-thread-only tally of callouts.
final class Tally: @unchecked Sendable {
    let expected: Int
    var delivered = 0
    var delays: [UInt64] = []
    var observerFires = 0
    /// Set by the callout that completes the tally.
    let done = Atomic<Bool>(false)
    var doneAt: UInt64 = 0
    init(expected: Int) {
        self.expected = expected
        delays.reserveCapacity(expected)
    }
    /// Records one op's callout; returns true for the last one.
    @inline(__always) func record(_ stamp: UInt64) -> Bool {
        let now = nowNs()
        delays.append(now &- stamp)
        delivered += 1
        precondition(delivered <= expected, "cross-thread workload: more callouts than operations")
        if delivered == expected {
            doneAt = now
            done.store(true, ordering: .releasing)
            return true
        }
        return false
    }
}

/// How many ops of `n` (kinds cycling 0,1,2,3) are of `kind`.
func opsOfKind(_ kind: Int, n: Int) -> Int { n / 4 + (n % 4 > kind ? 1 : 0) }

/// A start line the producers wait at (spinning briefly, then yielding), released at once.
final class StartLine: @unchecked Sendable {
    let go = Atomic<Bool>(false)
    let finished = Atomic<Int>(0)
    let lastFinish = Atomic<UInt64>(0)
    func wait() { while !go.load(ordering: .acquiring) { sched_yield() } }
    func producerDone() {
        let t = nowNs()
        var cur = lastFinish.load(ordering: .relaxed)
        while t > cur {
            let (ok, seen) = lastFinish.compareExchange(expected: cur, desired: t, ordering: .relaxed)
            if ok { break }
            cur = seen
        }
        finished.add(1, ordering: .releasing)
    }
    /// Starts `p` threads named `name`, each waiting at this line, then running `body(k)` and
    /// reporting done; releases them; returns the threads and the release time.
    func launch(_ p: Int, name: String, _ body: @escaping (Int) -> Void) -> (threads: [Helper], t0: UInt64) {
        let threads = (0..<p).map { k in
            Helper(name: name) {
                self.wait()
                body(k)
                self.producerDone()
            }
        }
        let t0 = nowNs()
        go.store(true, ordering: .releasing)
        return (threads, t0)
    }
    /// `ops` per second from `t0` until the last thread reported done.
    func rate(_ ops: Int, since t0: UInt64) -> Double {
        Double(ops) / (Double(lastFinish.load(ordering: .acquiring) &- t0) / 1e9)
    }
}

/// `paceNs` > 0: each producer posts at most one op per `paceNs` (its k-th op not before its start
/// + k × `paceNs`, the producers' starts staggered by `paceNs / p`), an offered load below what any
/// engine can take, so the post→callout delays are the engine's own and not a backlog's.
func crossThread(_ e: Engine, producers p: Int, opsEach n: Int, paceNs: UInt64 = 0) -> CrossThreadResult {
    let expected = p * (n - opsOfKind(3, n: n))
    let tally = Tally(expected: expected)
    let slots = (0..<p).map { _ in ProducerSlot(capacity: opsOfKind(2, n: n)) }
    let start = StartLine()
    var t0: UInt64 = 0
    var helpers: [Helper] = []

    /// Accounts for every signal of `slot` published so far (a source0's perform).
    @inline(__always) func drainSignals(_ slot: ProducerSlot, onLast: () -> Void) {
        let upto = slot.posted.load(ordering: .acquiring)
        while slot.handled < upto {
            if tally.record(slot.signalStamps[slot.handled]) { onLast() }
            slot.handled += 1
        }
    }
    func launch(_ body: @escaping (Int, ProducerSlot) -> Void) {
        (helpers, t0) = start.launch(p, name: "rlb-producer") { k in body(k, slots[k]) }
    }

    switch e {
    case .ours:
        let loop = RLRunLoop.current
        let sources = slots.map { slot in
            RLSource0(name: "producer") { drainSignals(slot) { RLRunLoop.current.stop() } }
        }
        for s in sources { loop.add(s, forMode: .default) }
        launch { k, slot in
            let src = sources[k]
            var sig = 0
            let paced = Pacer(paceNs, index: k, of: p)
            for i in 0..<n {
                paced.wait(i)
                let stamp = nowNs()
                switch i & 3 {
                case 0:
                    loop.perform { if tally.record(stamp) { RLRunLoop.current.stop() } }
                case 1:
                    loop.add(RLTimer(fireAt: RLInstant(nanoseconds: stamp)) { _ in
                        if tally.record(stamp) { RLRunLoop.current.stop() }
                    }, forMode: .default)
                case 2:
                    slot.signalStamps[sig] = stamp
                    sig += 1
                    slot.posted.store(sig, ordering: .releasing)
                    src.signalAndWake(loop)
                default:
                    let o = RLObserver(activities: .beforeWaiting) { _, _ in tally.observerFires += 1 }
                    loop.add(o, forMode: .default)
                    loop.remove(o, forMode: .default)
                    loop.wakeUp()
                }
            }
        }
        while !tally.done.load(ordering: .acquiring) {
            loop.run(mode: .default, seconds: 1, returnAfterSourceHandled: false)
        }
        for s in sources { loop.remove(s, forMode: .default) }
    case .cf:
        let rl = CFRunLoopGetCurrent()!
        let sources = slots.map { slot in
            CFSource0 { drainSignals(slot) { CFRunLoopStop(CFRunLoopGetCurrent()) } }
        }
        for s in sources { CFRunLoopAddSource(rl, s.ref, kCFRunLoopDefaultMode) }
        launch { k, slot in
            let src = sources[k].ref
            var sig = 0
            let paced = Pacer(paceNs, index: k, of: p)
            for i in 0..<n {
                paced.wait(i)
                let stamp = nowNs()
                switch i & 3 {
                case 0:
                    CFRunLoopPerformBlock(rl, kCFRunLoopCommonModes) { if tally.record(stamp) { CFRunLoopStop(CFRunLoopGetCurrent()) } }
                    CFRunLoopWakeUp(rl)
                case 1:
                    let t = CFRunLoopTimerCreateWithHandler(nil, CFAbsoluteTimeGetCurrent(), 0, 0, 0) { _ in
                        if tally.record(stamp) { CFRunLoopStop(CFRunLoopGetCurrent()) }
                    }
                    CFRunLoopAddTimer(rl, t, kCFRunLoopDefaultMode)
                case 2:
                    slot.signalStamps[sig] = stamp
                    sig += 1
                    slot.posted.store(sig, ordering: .releasing)
                    CFRunLoopSourceSignal(src)
                    CFRunLoopWakeUp(rl)
                default:
                    let o = CFRunLoopObserverCreateWithHandler(nil, CFRunLoopActivity.beforeWaiting.rawValue, true, 0) { _, _ in
                        tally.observerFires += 1
                    }
                    CFRunLoopAddObserver(rl, o, kCFRunLoopDefaultMode)
                    CFRunLoopRemoveObserver(rl, o, kCFRunLoopDefaultMode)
                    CFRunLoopWakeUp(rl)
                }
            }
        }
        while !tally.done.load(ordering: .acquiring) {
            _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1, false)
        }
        for s in sources { CFRunLoopRemoveSource(rl, s.ref, kCFRunLoopDefaultMode) }
    case .floor:
        let q = FloorQueue()
        launch { k, _ in
            let paced = Pacer(paceNs, index: k, of: p)
            for i in 0..<n {
                paced.wait(i)
                let stamp = nowNs()
                q.post(FloorItem(kind: UInt8(i & 3), stamp: stamp))
            }
        }
        var batch: [FloorItem] = []
        batch.reserveCapacity(1024)
        var seenObserverOps = 0
        while !tally.done.load(ordering: .acquiring) {
            q.waitAndTake(&batch)
            for it in batch {
                if it.kind == 3 { seenObserverOps += 1 } else { _ = tally.record(it.stamp) }
            }
            batch.removeAll(keepingCapacity: true)
        }
        // The observer-kind items may trail the last timed one: drain them too (same pattern).
        let observerOps = p * opsOfKind(3, n: n)
        while seenObserverOps < observerOps {
            q.waitAndTake(&batch)
            seenObserverOps += batch.count
            batch.removeAll(keepingCapacity: true)
        }
    }
    for h in helpers { h.join() }
    precondition(start.finished.load(ordering: .acquiring) == p)
    guard tally.delivered == expected else { fail("cross-thread workload (\(e.rawValue)): \(tally.delivered) of \(expected) callouts") }
    for s in slots where s.handled != s.posted.load(ordering: .acquiring) {
        fail("cross-thread workload (\(e.rawValue)): \(s.handled) of \(s.posted.load(ordering: .relaxed)) signals accounted for")
    }
    let end = max(tally.doneAt, start.lastFinish.load(ordering: .acquiring))
    let secs = Double(end - t0) / 1e9
    let us = tally.delays.map { Double($0) / 1000 }
    return CrossThreadResult(opsPerSecond: Double(p * n) / secs, p50Us: percentile(us, 0.5), p99Us: percentile(us, 0.99))
}

/// Paces one producer: op `i` not before its start + `i` × `paceNs` (absolute sleeps, so late ops
/// do not push the later ones back); no pacing when `paceNs` is 0.
struct Pacer {
    let paceNs: UInt64
    let base: UInt64
    init(_ paceNs: UInt64, index k: Int, of p: Int) {
        self.paceNs = paceNs
        base = nowNs() &+ (paceNs / UInt64(max(p, 1))) &* UInt64(k)
    }
    @inline(__always) func wait(_ i: Int) {
        guard paceNs > 0 else { return }
        let t = base &+ UInt64(i) &* paceNs
        guard nowNs() < t else { return }
        var ts = timespec(tv_sec: Int(t / 1_000_000_000), tv_nsec: Int(t % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}

/// The floor's item: the op's kind and post stamp.
struct FloorItem { var kind: UInt8; var stamp: UInt64 }

/// A pthread-mutex-protected array plus an eventfd written once per item.
final class FloorQueue: @unchecked Sendable {
    private let m: UnsafeMutablePointer<pthread_mutex_t>
    private var items: [FloorItem] = []
    let efd: Int32
    init() {
        m = .allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        items.reserveCapacity(1024)
        efd = eventfd(0, Int32(EFD_CLOEXEC))
    }
    deinit {
        pthread_mutex_destroy(m)
        m.deallocate()
        close(efd)
    }
    func post(_ item: FloorItem) {
        pthread_mutex_lock(m)
        items.append(item)
        pthread_mutex_unlock(m)
        var one: UInt64 = 1
        _ = write(efd, &one, 8)
    }
    /// Blocks until at least one item was posted, then takes every item posted so far.
    func waitAndTake(_ out: inout [FloorItem]) {
        var v: UInt64 = 0
        _ = read(efd, &v, 8)
        pthread_mutex_lock(m)
        swap(&items, &out)
        pthread_mutex_unlock(m)
    }
}

/// `--child port N` (for perf/strace runs, not a row): P threads (`RLB_PRODUCERS`, default 4) each
/// send N messages through one `RLMessagePort` to a running loop; returns messages per second,
/// from the senders' release until the last message was handled.
func messagePortRun(senders p: Int, each n: Int) -> Double {
    let loop = RLRunLoop.current
    let total = p * n
    var got = 0
    let port = try! RLMessagePort<Int>(name: "rlb-port") { _ in
        got += 1
        if got == total { RLRunLoop.current.stop() }
    }
    try! loop.add(port.source, forMode: .default)
    let (senders, t0) = StartLine().launch(p, name: "rlb-sender") { _ in for i in 0..<n { port.send(i) } }
    while got < total { loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: false) }
    let t1 = nowNs()
    for h in senders { h.join() }
    loop.remove(port.source, forMode: .default)
    return Double(total) / (Double(t1 - t0) / 1e9)
}

/// `--child signal ENGINE N` (for perf runs, not a row): P threads (`RLB_PRODUCERS`, default 8)
/// each signal one shared source0 of a running loop and wake it, N times; returns signals per
/// second until every producer is done (signals coalesce: the source performs fewer times).
/// `cf`: CFRunLoopSourceSignal + CFRunLoopWakeUp on a CF source0; `ours` otherwise.
func sharedSourceSignalRun(_ e: Engine, producers p: Int, each n: Int) -> Double {
    let start = StartLine()
    var producers: [Helper] = []
    func launch(_ poke: @escaping () -> Void) -> UInt64 {
        let (threads, t0) = start.launch(p, name: "rlb-signaller") { _ in for _ in 0..<n { poke() } }
        producers = threads
        return t0
    }
    let t0: UInt64
    if e == .cf {
        let rl = CFRunLoopGetCurrent()!
        let src = CFSource0 {}
        CFRunLoopAddSource(rl, src.ref, kCFRunLoopDefaultMode)
        let ref = src.ref
        t0 = launch { CFRunLoopSourceSignal(ref); CFRunLoopWakeUp(rl) }
        while start.finished.load(ordering: .acquiring) < p { _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0.01, false) }
        CFRunLoopRemoveSource(rl, src.ref, kCFRunLoopDefaultMode)
    } else {
        let loop = RLRunLoop.current
        let src = RLSource0(name: "rlb-shared") {}
        loop.add(src, forMode: .default)
        t0 = launch { src.signal(); loop.wakeUp() }
        while start.finished.load(ordering: .acquiring) < p { loop.run(mode: .default, seconds: 0.01, returnAfterSourceHandled: false) }
        loop.remove(src, forMode: .default)
    }
    for h in producers { h.join() }
    return start.rate(p * n, since: t0)
}

/// `--child modename N` (for perf runs, not a row): P threads (`RLB_PRODUCERS`, default 8) each
/// make `RLMode("rlb-custom")` N times (what `loop.run(mode: RLMode("…"))` in a loop does);
/// returns names made per second.
func modeNameRun(producers p: Int, each n: Int) -> Double {
    let start = StartLine()
    let (threads, t0) = start.launch(p, name: "rlb-modename") { _ in
        var h = 0
        for _ in 0..<n { h &+= RLMode("rlb-custom").hashValue }
        blackHole(h)
    }
    for t in threads { t.join() }
    return start.rate(p * n, since: t0)
}

/// `--child worker N` (for perf runs, not a row): P threads (`RLB_PRODUCERS`, default 8) each
/// post N blocks to one `RLWorkerThread` (`worker.perform { }`); returns blocks per second, from
/// the posters' release until the worker ran the last block.
func workerPerformRun(producers p: Int, each n: Int) -> Double {
    let worker = RLWorkerThread(name: "rlb-worker")
    let total = p * n
    let ran = Atomic<Int>(0)
    let doneAt = Atomic<UInt64>(0)
    let (threads, t0) = StartLine().launch(p, name: "rlb-poster") { _ in
        for _ in 0..<n {
            worker.perform {
                if ran.add(1, ordering: .relaxed).newValue == total { doneAt.store(nowNs(), ordering: .releasing) }
            }
        }
    }
    for t in threads { t.join() }
    while doneAt.load(ordering: .acquiring) == 0 { pause(us: 100) }
    worker.cancel()
    worker.join()
    return Double(total) / (Double(doneAt.load(ordering: .acquiring) - t0) / 1e9)
}

/// `--child mainloop N` (for perf runs, not a row): P threads (`RLB_PRODUCERS`, default 8) each
/// read `RLRunLoop.main` N times (what `RLRunLoop.main.perform { }` from workers does); returns
/// reads per second.
func mainLoopReadRun(producers p: Int, each n: Int) -> Double {
    _ = RLRunLoop.main
    let start = StartLine()
    let (threads, t0) = start.launch(p, name: "rlb-mainloop") { _ in
        var h: UInt64 = 0
        for _ in 0..<n { h &+= RLRunLoop.main.id }
        blackHole(h)
    }
    for t in threads { t.join() }
    return start.rate(p * n, since: t0)
}
