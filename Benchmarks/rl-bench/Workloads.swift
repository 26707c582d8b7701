// The workloads of docs/benchmarks.md, each written three times: RunLoopCore ("ours"), CoreFoundation's
// CFRunLoop ("cf"), and a floor ("floor": plain Swift for the in-thread workloads 1-4, bare
// eventfd/timerfd + epoll for 5-7). Every function runs on a fresh thread (fresh loop) and times
// only the part the workload names.
import CRunLoopShims
import CoreFoundation
import Foundation
import RLBenchMallocCounter
import RunLoopCore
import Synchronization

final class Counter { var n = 0 }

// Allocation counting of the timed phases (see allocsPerItem in main.swift).
var countTimed = false
var phaseAllocs: [UInt64] = []
@inline(__always) func phaseBegin() {
    if countTimed { rlb_malloc_reset(); rlb_malloc_counting(1) }
    if let k = callgrindPhase { if phasesBegun == k { rlb_callgrind_toggle_collect(); collecting = true }; phasesBegun += 1 }
}
@inline(__always) func phaseEnd() {
    if countTimed { rlb_malloc_counting(0); phaseAllocs.append(rlb_malloc_count()) }
    if collecting { rlb_callgrind_toggle_collect(); collecting = false }
}

// Instruction counting of one timed phase (Instructions.swift): the child's environment says which
// (RLB_CALLGRIND_PHASE=k: the k-th phase begun in the process, from 0); callgrind runs it with
// collection off until then.
let callgrindPhase: Int? = ProcessInfo.processInfo.environment["RLB_CALLGRIND_PHASE"].flatMap { Int($0) }
var phasesBegun = 0
var collecting = false

// MARK: - 1. batch perform: queue N blocks, drain them (ns per block)

func batchPerform(_ e: Engine, n: Int) -> Double {
    let c = Counter()
    switch e {
    case .ours:
        let loop = RLRunLoop.current
        phaseBegin()
        let t0 = nowNs()
        for _ in 0..<n { loop.performBlock(forMode: .default) { c.n &+= 1 } }
        while c.n < n { loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false) }
        let dt = nowNs() - t0
        phaseEnd()
        return Double(dt) / Double(n)
    case .cf:
        let rl = CFRunLoopGetCurrent()!
        phaseBegin()
        let t0 = nowNs()
        for _ in 0..<n { CFRunLoopPerformBlock(rl, kCFRunLoopDefaultMode, { c.n &+= 1 }) }
        while c.n < n { _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0, false) }
        let dt = nowNs() - t0
        phaseEnd()
        return Double(dt) / Double(n)
    case .floor:
        // A plain array of closures, appended then called.
        phaseBegin()
        let t0 = nowNs()
        var q: [() -> Void] = []
        for _ in 0..<n { q.append { c.n &+= 1 } }
        for f in q { f() }
        q.removeAll()
        let dt = nowNs() - t0
        phaseEnd()
        return Double(dt) / Double(n)
    }
}

// MARK: - 2. chained perform: each block queues the next (ns per block)

/// Each block queues the next with CF's perform-block (no wake-up); the driver polls the loop
/// (`run(seconds: 0)`) until the chain ends, so each link costs one loop pass.
func chainedPerform(_ e: Engine, n: Int) -> Double {
    final class Chain { var left: Int; var step: (() -> Void)!; init(_ n: Int) { left = n } }
    let ch = Chain(n)
    switch e {
    case .ours:
        let loop = RLRunLoop.current
        ch.step = { [unowned ch] in
            ch.left -= 1
            if ch.left > 0 { loop.performBlock(forMode: .default, ch.step) }
        }
        phaseBegin()
        let t0 = nowNs()
        loop.performBlock(forMode: .default, ch.step)
        while ch.left > 0 { loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false) }
        let t = Double(nowNs() - t0) / Double(n)
        phaseEnd()
        ch.step = nil
        return t
    case .cf:
        let rl = CFRunLoopGetCurrent()!
        ch.step = { [unowned ch] in
            ch.left -= 1
            if ch.left > 0 { CFRunLoopPerformBlock(rl, kCFRunLoopDefaultMode, ch.step) }
        }
        phaseBegin()
        let t0 = nowNs()
        CFRunLoopPerformBlock(rl, kCFRunLoopDefaultMode, ch.step)
        while ch.left > 0 { _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 0, false) }
        let t = Double(nowNs() - t0) / Double(n)
        phaseEnd()
        ch.step = nil
        return t
    case .floor:
        // A FIFO of closures where each call appends the next.
        var q: [() -> Void] = []
        var head = 0
        var left = n
        var step: (() -> Void)!
        step = { left -= 1; if left > 0 { q.append(step) } }
        phaseBegin()
        let t0 = nowNs()
        q.append(step)
        while head < q.count { let f = q[head]; head += 1; f() }
        let t = Double(nowNs() - t0) / Double(n)
        phaseEnd()
        step = nil
        return t
    }
}

// MARK: - 3. N one-shot timers already due, run until all fired (ns per timer fired)

func dueTimers(_ e: Engine, n: Int) -> Double {
    let c = Counter()
    switch e {
    case .ours:
        let loop = RLRunLoop.current
        let base = RLInstant.now.nanoseconds - 1_000_000_000
        var timers: [RLTimer] = []
        timers.reserveCapacity(n)
        for i in 0..<n {
            timers.append(RLTimer(fireAt: RLInstant(nanoseconds: base + UInt64(i) * 1_000)) { _ in c.n &+= 1 })
        }
        for t in timers { loop.add(t, forMode: .default) }
        phaseBegin()
        let t0 = nowNs()
        while c.n < n { loop.run(mode: .default, seconds: 1, returnAfterSourceHandled: false) }
        let dt = nowNs() - t0
        phaseEnd()
        return Double(dt) / Double(n)
    case .cf:
        let rl = CFRunLoopGetCurrent()!
        let base = CFAbsoluteTimeGetCurrent() - 1
        var timers: [CFRunLoopTimer] = []
        timers.reserveCapacity(n)
        for i in 0..<n {
            timers.append(CFRunLoopTimerCreateWithHandler(nil, base + Double(i) * 1e-6, 0, 0, 0) { _ in c.n &+= 1 })
        }
        for t in timers { CFRunLoopAddTimer(rl, t, kCFRunLoopDefaultMode) }
        phaseBegin()
        let t0 = nowNs()
        while c.n < n { _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 1, false) }
        let dt = nowNs() - t0
        phaseEnd()
        return Double(dt) / Double(n)
    case .floor:
        // Deadlines sorted ascending: take every due one and call it.
        let base = nowNs() - 1_000_000_000
        var q: [(UInt64, () -> Void)] = []
        q.reserveCapacity(n)
        for i in 0..<n { q.append((base + UInt64(i) * 1_000, { c.n &+= 1 })) }
        phaseBegin()
        let t0 = nowNs()
        let now = nowNs()
        var i = 0
        while i < q.count && q[i].0 <= now { q[i].1(); i += 1 }
        q.removeAll()
        let dt = nowNs() - t0
        phaseEnd()
        return Double(dt) / Double(n)
    }
}

// MARK: - 4. add N timers with scattered future dates, then remove them (ns per add, per remove)

func futureTimers(_ e: Engine, n: Int) -> (add: Double, remove: Double) {
    var rng = LCG(seed: 0x5EED)
    let offsets = (0..<n).map { _ in 100 + rng.unit() * 1000 }   // 100 s ... 1100 s ahead
    switch e {
    case .ours:
        let loop = RLRunLoop.current
        let now = RLInstant.now
        let timers = offsets.map { RLTimer(fireAt: now.advanced(bySeconds: $0)) { _ in } }
        phaseBegin()
        let t0 = nowNs()
        for t in timers { loop.add(t, forMode: .default) }
        let t1 = nowNs()
        phaseEnd(); phaseBegin()
        for t in timers { loop.remove(t, forMode: .default) }
        let t2 = nowNs()
        phaseEnd()
        return (Double(t1 - t0) / Double(n), Double(t2 - t1) / Double(n))
    case .cf:
        let rl = CFRunLoopGetCurrent()!
        let now = CFAbsoluteTimeGetCurrent()
        let timers = offsets.map { CFRunLoopTimerCreateWithHandler(nil, now + $0, 0, 0, 0) { _ in }! }
        phaseBegin()
        let t0 = nowNs()
        for t in timers { CFRunLoopAddTimer(rl, t, kCFRunLoopDefaultMode) }
        let t1 = nowNs()
        phaseEnd(); phaseBegin()
        for t in timers { CFRunLoopRemoveTimer(rl, t, kCFRunLoopDefaultMode) }
        let t2 = nowNs()
        phaseEnd()
        return (Double(t1 - t0) / Double(n), Double(t2 - t1) / Double(n))
    case .floor:
        // A binary min-heap of (deadline, index) plus a position table: O(log n) add and remove.
        let now = nowNs()
        let dates = offsets.map { now + UInt64($0 * 1e9) }
        var heap = IndexedHeap(capacity: n)
        phaseBegin()
        let t0 = nowNs()
        for (i, d) in dates.enumerated() { heap.insert(i, d) }
        let t1 = nowNs()
        phaseEnd(); phaseBegin()
        for i in 0..<n { heap.remove(i) }
        let t2 = nowNs()
        phaseEnd()
        precondition(heap.isEmpty)
        return (Double(t1 - t0) / Double(n), Double(t2 - t1) / Double(n))
    }
}

/// Min-heap of ids keyed by deadline, with removal by id.
struct IndexedHeap {
    var keys: [UInt64] = []
    var ids: [Int] = []
    var pos: [Int]
    init(capacity: Int) { pos = Array(repeating: -1, count: capacity); keys.reserveCapacity(capacity); ids.reserveCapacity(capacity) }
    var isEmpty: Bool { keys.isEmpty }
    mutating func swapAt(_ a: Int, _ b: Int) {
        keys.swapAt(a, b); ids.swapAt(a, b); pos[ids[a]] = a; pos[ids[b]] = b
    }
    mutating func up(_ i0: Int) {
        var i = i0
        while i > 0 { let p = (i - 1) / 2; if keys[p] <= keys[i] { break }; swapAt(p, i); i = p }
    }
    mutating func down(_ i0: Int) {
        var i = i0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < keys.count && keys[l] < keys[m] { m = l }
            if r < keys.count && keys[r] < keys[m] { m = r }
            if m == i { return }
            swapAt(i, m); i = m
        }
    }
    mutating func insert(_ id: Int, _ key: UInt64) {
        keys.append(key); ids.append(id); pos[id] = keys.count - 1; up(keys.count - 1)
    }
    mutating func remove(_ id: Int) {
        let i = pos[id]
        let last = keys.count - 1
        if i != last { swapAt(i, last) }
        keys.removeLast(); ids.removeLast(); pos[id] = -1
        if i < keys.count { up(i); down(i) }
    }
}

// MARK: - 5. cross-thread wake latency (µs p50 / p99)

/// Another thread waits for the previous round to be handled, pauses `pauseUs`, stamps the time,
/// signals a source0 and wakes the loop; the source's callout records the delay.
/// The floor: the same with an eventfd written by the other thread and read after `epoll_wait`.
func wakeLatency(_ e: Engine, rounds: Int, pauseUs: Int) -> [Double] {
    let sh = Shared()
    var samples: [Double] = []
    samples.reserveCapacity(rounds)
    @inline(__always) func record() {
        let t1 = nowNs()
        samples.append(Double(t1 &- sh.stamp.load(ordering: .acquiring)) / 1000)
        sh.handled.add(1, ordering: .releasing)
    }
    func signaller(_ poke: @escaping () -> Void, _ stop: @escaping () -> Void) -> Helper {
        Helper(name: "rlb-signaller") {
            for r in 0..<rounds {
                while sh.handled.load(ordering: .acquiring) < r { pause(us: 10) }
                pause(us: pauseUs)
                sh.stamp.store(nowNs(), ordering: .releasing)
                poke()
            }
            while sh.handled.load(ordering: .acquiring) < rounds { pause(us: 10) }
            sh.stop.store(true, ordering: .releasing)
            stop()
        }
    }
    phaseBegin()
    switch e {
    case .ours:
        let loop = RLRunLoop.current
        let src = RLSource0(name: "wake") { record() }
        loop.add(src, forMode: .default)
        let h = signaller({ src.signal(); loop.wakeUp() }, { loop.stop() })
        while !sh.stop.load(ordering: .acquiring) { loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: false) }
        h.join()
        loop.remove(src, forMode: .default)
    case .cf:
        let rl = CFRunLoopGetCurrent()!
        let src = CFSource0 { record() }
        CFRunLoopAddSource(rl, src.ref, kCFRunLoopDefaultMode)
        let ref = src.ref
        let h = signaller({ CFRunLoopSourceSignal(ref); CFRunLoopWakeUp(rl) }, { CFRunLoopStop(rl) })
        while !sh.stop.load(ordering: .acquiring) { _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, 30, false) }
        h.join()
        CFRunLoopRemoveSource(rl, src.ref, kCFRunLoopDefaultMode)
    case .floor:
        let efd = eventfd(0, Int32(EFD_CLOEXEC))
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        var ev = epoll_event()
        ev.events = EPOLLIN.rawValue
        ev.data.u64 = 1
        _ = epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev)
        let h = signaller({ var one: UInt64 = 1; _ = write(efd, &one, 8) }, { var one: UInt64 = 1; _ = write(efd, &one, 8) })
        var out = epoll_event()
        while !sh.stop.load(ordering: .acquiring) {
            let k = epoll_wait(ep, &out, 1, -1)
            if k == 1 {
                var v: UInt64 = 0
                _ = read(efd, &v, 8)
                if sh.stop.load(ordering: .acquiring) { break }
                record()
            }
        }
        h.join()
        close(ep); close(efd)
    }
    phaseEnd()
    return samples
}

/// A CF version 0 source whose perform calls a Swift closure.
final class CFSource0 {
    final class Box { let f: () -> Void; init(_ f: @escaping () -> Void) { self.f = f } }
    let box: Box
    let ref: CFRunLoopSource
    init(_ f: @escaping () -> Void) {
        box = Box(f)
        var ctx = CFRunLoopSourceContext()
        ctx.info = Unmanaged.passUnretained(box).toOpaque()
        ctx.perform = { info in Unmanaged<Box>.fromOpaque(info!).takeUnretainedValue().f() }
        ref = CFRunLoopSourceCreate(nil, 0, &ctx)!
    }
}

// MARK: - 6. a 1 ms repeating timer for one second (fires, lateness µs)

/// Lateness of a fire = now - the first 1 ms slot (start + k ms) after the slot of the previous
/// fire: a fire that comes so late that slots were skipped counts the whole delay.
func repeatingTimer(_ e: Engine, seconds: Double) -> (fires: Int, lateness: [Double]) {
    let period: UInt64 = 1_000_000
    var late: [Double] = []
    late.reserveCapacity(Int(seconds * 1000) + 10)
    var start: UInt64 = 0
    var nextSlot: UInt64 = 0
    @inline(__always) func fired() {
        let now = nowNs()
        let due = start + nextSlot * period
        late.append((Double(now) - Double(due)) / 1000)
        nextSlot = (now >= start ? (now - start) / period : 0) + 1
    }
    phaseBegin()
    switch e {
    case .ours:
        let loop = RLRunLoop.current
        start = nowNs() + period
        let t = RLTimer(fireAt: RLInstant(nanoseconds: start), interval: .nanoseconds(Int64(period))) { _ in fired() }
        loop.add(t, forMode: .default)
        loop.run(mode: .default, seconds: seconds, returnAfterSourceHandled: false)
        t.invalidate()
    case .cf:
        let rl = CFRunLoopGetCurrent()!
        let abs = CFAbsoluteTimeGetCurrent()
        start = nowNs() + period
        let t = CFRunLoopTimerCreateWithHandler(nil, abs + 1e-3, 1e-3, 0, 0) { _ in fired() }!
        CFRunLoopAddTimer(rl, t, kCFRunLoopDefaultMode)
        _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, seconds, false)
        CFRunLoopTimerInvalidate(t)
    case .floor:
        let tfd = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC))
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        var ev = epoll_event()
        ev.events = EPOLLIN.rawValue
        _ = epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev)
        let t0 = nowNs()
        start = t0 + period
        let end = t0 + UInt64(seconds * 1e9)
        var spec = itimerspec()
        spec.it_value.tv_sec = Int(start / 1_000_000_000)
        spec.it_value.tv_nsec = Int(start % 1_000_000_000)
        spec.it_interval.tv_nsec = Int(period)
        _ = timerfd_settime(tfd, Int32(TFD_TIMER_ABSTIME), &spec, nil)
        var out = epoll_event()
        while true {
            let left = Int64(end) - Int64(nowNs())
            if left <= 0 { break }
            let k = epoll_wait(ep, &out, 1, Int32((left + 999_999) / 1_000_000))
            if k == 1 {
                var v: UInt64 = 0
                _ = read(tfd, &v, 8)
                if nowNs() > end { break }
                fired()
            }
        }
        close(ep); close(tfd)
    }
    phaseEnd()
    return (late.count, late)
}

// MARK: - 7. fd source: a pipe written by another thread (MB/s)

/// A writer thread writes `total` bytes in `chunk`-byte writes to a pipe; the loop's fd source reads
/// until EAGAIN on each readiness. CF has no fd source on Linux (n/a).
func pipeThroughput(_ e: Engine, total: Int, chunk: Int) -> Double? {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { fail("pipe: \(errno)") }
    let r = fds[0], w = fds[1]
    _ = fcntl(r, F_SETFL, fcntl(r, F_GETFL) | O_NONBLOCK)
    var got = 0
    var eof = false
    let buf = UnsafeMutableRawPointer.allocate(byteCount: 1 << 16, alignment: 16)
    defer { buf.deallocate(); close(r) }
    func drain() {
        while true {
            let k = read(r, buf, 1 << 16)
            if k > 0 { got += k; continue }
            if k == 0 { eof = true }
            return
        }
    }
    func writer() -> Helper {
        Helper(name: "rlb-writer") {
            let data = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
            memset(data, 0x5a, chunk)
            var left = total
            while left > 0 {
                let k = write(w, data, min(chunk, left))
                if k > 0 { left -= k } else if errno != EINTR { break }
            }
            data.deallocate()
            close(w)
        }
    }
    switch e {
    case .ours:
        let loop = RLRunLoop.current
        let src: RLSource1
        do {
            src = try RLSource1(fd: r, interest: .read, name: "pipe") { _, _, _ in
                drain()
                if eof || got >= total { RLRunLoop.current.stop() }
            }
            try loop.add(src, forMode: .default)
        } catch { fail("RLSource1: \(error)") }
        phaseBegin()
        let t0 = nowNs()
        let h = writer()
        while !(eof || got >= total) { loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: false) }
        let t = nowNs() - t0
        phaseEnd()
        h.join()
        loop.remove(src, forMode: .default)
        return Double(got) / (Double(t) / 1e9) / 1e6
    case .cf:
        close(w)
        return nil
    case .floor:
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        var ev = epoll_event()
        ev.events = EPOLLIN.rawValue
        _ = epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev)
        phaseBegin()
        let t0 = nowNs()
        let h = writer()
        var out = epoll_event()
        while !(eof || got >= total) {
            if epoll_wait(ep, &out, 1, -1) == 1 { drain() }
        }
        let t = nowNs() - t0
        phaseEnd()
        h.join()
        close(ep)
        return Double(got) / (Double(t) / 1e9) / 1e6
    }
}
