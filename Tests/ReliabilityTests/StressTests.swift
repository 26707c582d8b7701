import Foundation
import Testing
import Synchronization
@testable import RunLoopCore
#if canImport(Glibc)
import Glibc
#endif

/// An item whose callout must never start after `invalidate()` returned on another thread.
final class Guarded: @unchecked Sendable {
    let invalidated = Atomic<Bool>(false)
    let calls = Counter()
    /// Called at the start of the callout: counts a violation if invalidation already returned.
    func enter(_ violations: Counter, _ kind: Counter) {
        calls.add()
        if invalidated.load(ordering: .acquiring) { violations.add(); kind.add() }
    }
    func markInvalidated() { invalidated.store(true, ordering: .releasing) }
}

/// Everything the producers touch, shared.
final class StressState: @unchecked Sendable {
    let workers: [RLWorkerThread]
    var loops: [RLRunLoop] { workers.map(\.runLoop) }
    // No lost wake-up: per loop, per source, the last epoch signalled and the highest the source saw.
    let sources: [[RLSource0]]
    let epochs: [[Counter]]
    let seen: [[Counter]]
    let performs = Counter()
    // No lost perform-block.
    let blocksSent = Counter(), blocksRun = Counter()
    // Timers fire exactly as expected.
    let oneShots = Locked<[Counter]>([])
    let repeating = Locked<[Counter]>([])
    static let repeatFires = 5
    // No callout after invalidation (cross-thread).
    let violations = Counter()
    /// Per kind: source0, observer, timer.
    let violationsByKind = [Counter(), Counter(), Counter()]
    let churnCalls = Counter()
    let ops = Counter()
    let keep = Locked<[AnyObject]>([])

    init(loops n: Int, sourcesPerLoop k: Int) {
        workers = (0..<n).map { RLWorkerThread(name: "rel-w\($0)") }
        var srcs: [[RLSource0]] = [], eps: [[Counter]] = [], sn: [[Counter]] = []
        for l in 0..<n {
            var row: [RLSource0] = [], er: [Counter] = [], sr: [Counter] = []
            for i in 0..<k {
                let e = Counter(), s = Counter()
                let perf = performs
                let src = RLSource0(order: i, name: "rel-s\(l).\(i)") {
                    s.storeMax(e.value)
                    perf.add()
                }
                workers[l].runLoop.add(src, forMode: i % 2 == 0 ? .default : .commonModes)
                row.append(src); er.append(e); sr.append(s)
            }
            srcs.append(row); eps.append(er); sn.append(sr)
        }
        sources = srcs; epochs = eps; seen = sn
    }

    /// One random operation against a random loop.
    func step(_ rng: inout XorShift) {
        ops.add()
        let l = Int(rng.next() % UInt64(workers.count))
        let loop = workers[l].runLoop
        switch rng.next() % 16 {
        case 0...4:   // signal + wake (the main load): epoch first, then signal, then wake
            let k = Int(rng.next() % UInt64(sources[l].count))
            epochs[l][k].add()
            if rng.next() % 2 == 0 { sources[l][k].signalAndWake(loop) } else { sources[l][k].signal(); loop.wakeUp() }
        case 5, 6:
            blocksSent.add()
            let r = blocksRun
            loop.perform { r.add() }
        case 7:
            blocksSent.add()
            let r = blocksRun
            loop.performBlock(forMode: .default) { r.add() }   // does not wake…
            loop.wakeUp()                                       // …so wake it
        case 8:
            let c = Counter()
            oneShots.withLock { $0.append(c) }
            let t = RLTimer(fireAt: .now + .microseconds(Int64(rng.next() % 3000)), name: "rel-once") { _ in c.add() }
            loop.add(t, forMode: rng.next() % 2 == 0 ? .default : .commonModes)
        case 9:
            let c = Counter()
            repeating.withLock { $0.append(c) }
            let t = RLTimer(fireAt: .now + .microseconds(Int64(rng.next() % 2000)), interval: .milliseconds(1), name: "rel-rep") { t in
                if c.add() == StressState.repeatFires { t.invalidate() }
            }
            loop.add(t, forMode: .default)
        case 10:      // churn a source0: add, signal, then remove or invalidate
            let g = Guarded()
            let v = violations, cc = churnCalls
            let k = violationsByKind[0]
            let s = RLSource0(name: "rel-churn") { g.enter(v, k); cc.add() }
            loop.add(s, forMode: .default)
            s.signalAndWake(loop)
            if rng.next() % 4 == 0 { usleep(UInt32(rng.next() % 200)) }
            if rng.next() % 2 == 0 { s.invalidate(); g.markInvalidated() } else { loop.remove(s, forMode: .default) }
            keep.withLock { $0.append(s) }
        case 11:      // churn an observer
            let g = Guarded()
            let v = violations, cc = churnCalls
            let o = RLObserver(activities: [.beforeWaiting, .afterWaiting, .beforeSources], name: "rel-obs") { [k = violationsByKind[1]] _, _ in g.enter(v, k); cc.add() }
            loop.add(o, forMode: rng.next() % 2 == 0 ? .default : .commonModes)
            loop.wakeUp()
            if rng.next() % 4 == 0 { usleep(UInt32(rng.next() % 200)) }
            o.invalidate(); g.markInvalidated()
            keep.withLock { $0.append(o) }
        case 12:      // churn a timer: due now or soon, invalidated from here
            let g = Guarded()
            let v = violations, cc = churnCalls
            let t = RLTimer(fireAt: .now + .microseconds(Int64(rng.next() % 300)), interval: .microseconds(200), name: "rel-tchurn") { [k = violationsByKind[2]] _ in g.enter(v, k); cc.add() }
            loop.add(t, forMode: .default)
            if rng.next() % 4 == 0 { usleep(UInt32(rng.next() % 500)) }
            t.invalidate(); g.markInvalidated()
            keep.withLock { $0.append(t) }
        case 13:
            loop.stop()
        default:
            loop.wakeUp()
        }
    }
}

@Suite("Concurrent stress on several running loops", .serialized)
struct StressTests {
    @Test("many threads add/remove/invalidate, signal, wake, stop and perform: nothing lost, timers exact, no deadlock")
    func stress() throws {
        let seconds = 4.0 * stressScale
        let dog = Watchdog("stress", seconds: seconds + 60)
        defer { dog.disarm() }
        let st = StressState(loops: 3, sourcesPerLoop: 4)
        let producers = 4
        let deadline = Date().addingTimeInterval(seconds)
        let threads = (0..<producers).map { p in
            RawThread(name: "rel-p\(p)") {
                var rng = XorShift(seed: 0x9E37_79B9_7F4A_7C15 &* UInt64(p + 1))
                var n = 0
                while true {
                    st.step(&rng)
                    n += 1
                    if n % 64 == 0 && Date() >= deadline { break }
                }
            }
        }
        for t in threads { t.join() }
        let elapsed = seconds

        // After the last signal + wake-up: every source saw its final epoch (no lost wake-up).
        let wakes = eventually(15) {
            zip(st.epochs.joined(), st.seen.joined()).allSatisfy { $0.value == $1.value }
        }
        #expect(wakes, "lost wake-up: epochs \(st.epochs.joined().map(\.value)) seen \(st.seen.joined().map(\.value))")
        #expect(eventually(15) { st.blocksRun.value == st.blocksSent.value },
                "lost perform-blocks: sent \(st.blocksSent.value), ran \(st.blocksRun.value)")
        let ones = st.oneShots.withLock { $0 }, reps = st.repeating.withLock { $0 }
        #expect(eventually(15) { ones.allSatisfy { $0.value >= 1 } && reps.allSatisfy { $0.value >= StressState.repeatFires } })
        usleep(20_000)   // any extra fire would show now
        #expect(ones.filter { $0.value != 1 }.isEmpty, "one-shot timers not fired exactly once: \(ones.map(\.value).filter { $0 != 1 })")
        #expect(reps.filter { $0.value != StressState.repeatFires }.isEmpty,
                "repeating timers not fired exactly \(StressState.repeatFires) times: \(reps.map(\.value).filter { $0 != StressState.repeatFires })")

        for w in st.workers { w.cancel() }
        for w in st.workers { w.join() }
        let epochs = st.epochs.joined().reduce(0) { $0 + $1.value }
        report("stress", ["seconds": elapsed, "loops": 3, "producers": producers, "operations": st.ops.value,
                          "signals": epochs, "source0Performs": st.performs.value, "blocks": st.blocksSent.value,
                          "oneShotTimers": ones.count, "repeatingTimers": reps.count,
                          "churnCallouts": st.churnCalls.value, "calloutsAfterInvalidate": st.violations.value,
                          "afterInvalidateSource0/Observer/Timer": st.violationsByKind.map { String($0.value) }.joined(separator: "/")])
        #expect(st.ops.value > 1000)
        // Cross-thread: a callout may still *start* just after invalidate() returned on another
        // thread (it passed its validity check a moment before) — CF semantics, documented in
        // docs/divergences.md; counted above (typically 0–1 per run), not asserted. The same-thread
        // guarantee is asserted by `invalidateInPass`.
    }

    @Test("on the loop's own thread, invalidating an item that is due in the same pass prevents its callout")
    func invalidateInPass() throws {
        let dog = Watchdog("invalidateInPass", seconds: 30)
        defer { dog.disarm() }
        let loop = RLRunLoop.current
        var bRan = 0, tBRan = 0, oBRan = 0
        var b: RLSource0!
        let a = RLSource0(order: 0, name: "a") { b.invalidate() }
        b = RLSource0(order: 1, name: "b") { bRan += 1 }
        loop.add(a, forMode: "rel-pass"); loop.add(b, forMode: "rel-pass")
        a.signal(); b.signal()
        _ = loop.run(mode: "rel-pass", seconds: 0, returnAfterSourceHandled: false)
        #expect(bRan == 0)

        var tB: RLTimer!
        let due = RLInstant.now
        let tA = RLTimer(fireAt: due, name: "tA") { _ in tB.invalidate() }
        tB = RLTimer(fireAt: due, name: "tB") { _ in tBRan += 1 }
        loop.add(tA, forMode: "rel-pass2"); loop.add(tB, forMode: "rel-pass2")
        usleep(1000)
        _ = loop.run(mode: "rel-pass2", seconds: 0.05, returnAfterSourceHandled: false)
        #expect(tBRan == 0)

        var oB: RLObserver!
        let oA = RLObserver(activities: .entry, order: 0, name: "oA") { _, _ in oB.invalidate() }
        oB = RLObserver(activities: .entry, order: 1, name: "oB") { _, _ in oBRan += 1 }
        let keep = RLSource0 { }
        loop.add(keep, forMode: "rel-pass3"); loop.add(oA, forMode: "rel-pass3"); loop.add(oB, forMode: "rel-pass3")
        _ = loop.run(mode: "rel-pass3", seconds: 0, returnAfterSourceHandled: false)
        #expect(oBRan == 0)
        keep.invalidate(); a.invalidate(); tA.invalidate(); oA.invalidate()
    }
}
