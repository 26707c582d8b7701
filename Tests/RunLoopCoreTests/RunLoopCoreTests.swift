import Foundation
import RunLoopCore
import RunLoopScenarios
import Synchronization
import Testing

/// Observer that logs every activity as `tag:name`.
func logAll(_ loop: RLRunLoop, _ log: EventLog, _ mode: RLMode = .default, tag: String = "obs") -> RLObserver {
    let o = RLObserver(activities: .allActivities, name: tag) { _, a in log.add("\(tag):\(activityName(a.rawValue))") }
    loop.add(o, forMode: mode)
    return o
}

@Suite("RunLoopCore: objects and rules", .serialized)
struct RunLoopCoreTests {

    @Test func currentAndMainLoops() {
        let (a, b, tid, isMain) = onFreshThread { () -> (UInt64, UInt64, Bool, Bool) in
            let l = RLRunLoop.current
            return (l.id, RLRunLoop.current.id, l.threadID != getpid(), l.isMainLoop)
        }
        #expect(a == b)
        #expect(tid)
        #expect(!isMain)
        #expect(RLRunLoop.main.isMainLoop)
        #expect(RLRunLoop.main.threadID == getpid())
        let other = onFreshThread { RLRunLoop.current.id }
        #expect(other != a)
    }

    @Test("RLRunLoop.main read by 8 threads at once (the first reads may race to make it) is one loop, the main thread's")
    func mainLoopReadConcurrentlyIsOneLoop() {
        let go = Atomic<Bool>(false)
        let ids = Mutex<[UInt64]>([])
        let done = DispatchGroup()
        for _ in 0..<8 {
            done.enter()
            Thread.detachNewThread {
                while !go.load(ordering: .acquiring) {}
                var seen: Set<UInt64> = []
                for _ in 0..<10_000 { seen.insert(RLRunLoop.main.id) }
                ids.withLock { $0.append(contentsOf: seen) }
                done.leave()
            }
        }
        go.store(true, ordering: .releasing)
        done.wait()
        let all = ids.withLock { $0 }
        #expect(all.count == 8)
        #expect(Set(all) == [RLRunLoop.main.id])
        #expect(RLRunLoop.main.isMainLoop && RLRunLoop.main.threadID == getpid())
    }

    @Test func activityRawValuesAreCFs() {
        #expect([RLActivity.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit, .allActivities].map(\.rawValue)
                == [1, 2, 4, 32, 64, 128, 0x0FFF_FFFF])
        #expect([RLRunResult.finished, .stopped, .timedOut, .handledSource].map(\.rawValue) == [1, 2, 3, 4])
    }

    @Test func equalFireDatesAreFIFO() {
        let order = onFreshThread { () -> [String] in
            let loop = RLRunLoop.current
            let log = EventLog()
            let at = RLInstant.now + .milliseconds(20)
            for n in ["t1", "t2", "t3", "t4", "t5"] { loop.add(RLTimer(fireAt: at) { _ in log.add(n) }, forMode: .default) }
            loop.add(RLTimer(fireAt: at + .milliseconds(-10)) { _ in log.add("t0") }, forMode: .default)
            loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: false)
            return log.all
        }
        #expect(order == ["t0", "t1", "t2", "t3", "t4", "t5"])
    }

    @Test func repeatingTimerSkipsMissedFiresAndKeepsPhase() {
        // A 20 ms timer whose first callout takes 55 ms: the fires it missed are skipped (no burst),
        // the next one is the first k·20 ms after the callout ended, and the phase is kept.
        let (scheduledK, firstAfterEnd) = onFreshThread { () -> ([Int64], Int64) in
            let loop = RLRunLoop.current
            let start = RLInstant.now + .milliseconds(10)
            var scheduledK: [Int64] = []
            var endOfFirst = RLInstant(nanoseconds: 0)
            let t = RLTimer(fireAt: start, interval: .milliseconds(20)) { t in
                // Inside the callout the timer still reports the date being fired.
                let offset = t.nextFireDate.map { nsOf($0 - start) } ?? -1
                scheduledK.append(offset % 20_000_000 == 0 ? offset / 20_000_000 : -1)
                if scheduledK.count == 1 { usleep(55_000); endOfFirst = .now }
                if scheduledK.count == 3 { t.invalidate() }
            }
            loop.add(t, forMode: .default)
            loop.run(mode: .default, seconds: 5, returnAfterSourceHandled: false)
            return (scheduledK, nsOf(endOfFirst - start) / 20_000_000 + 1)
        }
        #expect(scheduledK.count == 3)
        #expect(scheduledK.first == 0)
        #expect(!scheduledK.contains(-1), "every fire is on the 20 ms grid: \(scheduledK)")
        if scheduledK.count == 3 {
            #expect(scheduledK[1] == firstAfterEnd || scheduledK[1] == firstAfterEnd + 1, "\(scheduledK), first grid point after the slow callout: \(firstAfterEnd)")
            #expect(scheduledK[1] >= 3, "fires at 20 and 40 ms were skipped, not burst")
            #expect(scheduledK[2] == scheduledK[1] + 1)
        }
    }

    @Test func toleranceCoalescesWakeUps() {
        // Timer A is due at +20 ms with 30 ms tolerance; B at +40 ms with none. With coalescing, the
        // loop wakes once, at B's deadline, and fires both in one iteration.
        let (sameIteration, wakes, lateness) = onFreshThread { () -> (Bool, Int, Int64) in
            let loop = RLRunLoop.current
            var iterations: [Int] = []
            var iteration = 0
            var wakes = 0
            var lateA: Int64 = 0
            let obs = RLObserver(activities: [.beforeTimers, .afterWaiting]) { _, a in
                if a == .beforeTimers { iteration += 1 } else { wakes += 1 }
            }
            loop.add(obs, forMode: .default)
            let base = RLInstant.now
            let a = RLTimer(fireAt: base + .milliseconds(20), tolerance: .milliseconds(30)) { t in
                lateA = nsOf(RLInstant.now - (base + .milliseconds(20)))
                iterations.append(iteration)
            }
            let b = RLTimer(fireAt: base + .milliseconds(40)) { _ in iterations.append(iteration) }
            loop.add(a, forMode: .default)
            loop.add(b, forMode: .default)
            loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: false)
            return (iterations.count == 2 && iterations[0] == iterations[1], wakes, lateA)
        }
        #expect(sameIteration)
        #expect(wakes == 1)
        #expect(lateness >= 20_000_000, "A waited for B's wake-up (\(lateness) ns after its own date)")
    }

    @Test func source1OnAPipeWakesTheLoopAndDeliversBytes() throws {
        let got = try onFreshThread { () -> Result<[String], Error> in
            Result {
                let loop = RLRunLoop.current
                var fds: [Int32] = [0, 0]
                #expect(pipe(&fds) == 0)
                defer { close(fds[0]); close(fds[1]) }
                let log = EventLog()
                let s = try RLSource1(fd: fds[0], interest: .read, name: "pipe") { src, fd, readiness in
                    var buf = [UInt8](repeating: 0, count: 64)
                    let n = read(fd, &buf, 64)
                    log.add("read \(n) \(String(decoding: buf.prefix(max(n, 0)), as: UTF8.self)) \(readiness)")
                }
                try loop.add(s, forMode: .default)
                let w = fds[1]
                Thread.detachNewThread {
                    usleep(20_000)
                    _ = "hello".withCString { write(w, $0, 5) }
                }
                let r = loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true)
                log.add("result \(r)")
                return log.all
            }
        }.get()
        #expect(got == ["read 5 hello readable", "result handledSource"])
    }

    @Test func source1BadInput() throws {
        let path = "/tmp/rlc-regular-\(getpid())"
        _ = FileManager.default.createFile(atPath: path, contents: Data("x".utf8))
        let fd = open(path, O_RDONLY)
        defer { close(fd); unlink(path) }
        let loop = RLRunLoop.current
        let s = try RLSource1(fd: fd) { _, _, _ in }
        #expect(throws: RLError.notPollable(fd)) { try loop.add(s, forMode: RLMode("bad-input")) }
        #expect(!loop.contains(s, inMode: RLMode("bad-input")))
        #expect(throws: RLError.badFileDescriptor(9999)) { _ = try RLSource1(fd: 9999) { _, _, _ in } }
        #expect(throws: RLError.badFileDescriptor(-1)) { _ = try RLSource1(fd: -1) { _, _, _ in } }
    }

    @Test func source1BelongsToOneLoop() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let s = try RLSource1(fd: fds[0]) { _, _, _ in }
        let a = onFreshThread { RLRunLoop.current }
        let b = onFreshThread { RLRunLoop.current }
        try a.add(s, forMode: .default)
        #expect(throws: RLError.belongsToAnotherLoop("source1 #\(s.id)")) { try b.add(s, forMode: .default) }
    }

    @Test func invalidatedItemsAreIgnoredAndRemovingUnknownItemsIsHarmless() {
        let loop = onFreshThread { RLRunLoop.current }
        let s = RLSource0 {}
        s.invalidate()
        loop.add(s, forMode: .default)
        #expect(!loop.contains(s, inMode: .default))
        let t = RLTimer(fireAt: .now) { _ in }
        t.invalidate()
        loop.add(t, forMode: .default)
        #expect(!loop.contains(t, inMode: .default))
        let never = RLObserver(activities: .entry) { _, _ in }
        loop.remove(never, forMode: .default)
        loop.remove(RLSource0 {}, forMode: RLMode("never-created"))
        #expect(!loop.allModes.contains(RLMode("never-created")))
    }

    @Test func scheduleAndCancelCallbacks() {
        let log = EventLog()
        let loop = onFreshThread { RLRunLoop.current }
        let s = RLSource0(schedule: { _, m in log.add("schedule \(m)") }, cancel: { _, m in log.add("cancel \(m)") }) {}
        loop.addCommonMode(RLMode("x"))
        loop.add(s, forMode: .commonModes)
        loop.add(s, forMode: RLMode("y"))
        loop.remove(s, forMode: RLMode("y"))
        s.invalidate()
        #expect(log.all.sorted() == ["cancel kCFRunLoopDefaultMode", "cancel x", "cancel y",
                                     "schedule kCFRunLoopDefaultMode", "schedule x", "schedule y"])
    }

    @Test func stopFromAnotherThreadWakesTheLoop() {
        let (r, elapsed) = onFreshThread { () -> (RLRunResult, Duration) in
            let loop = RLRunLoop.current
            loop.add(RLSource0 {}, forMode: .default)
            Thread.detachNewThread { usleep(30_000); loop.stop() }
            let start = RLInstant.now
            let r = loop.run(mode: .default, seconds: 5, returnAfterSourceHandled: false)
            return (r, RLInstant.now - start)
        }
        #expect(r == .stopped)
        #expect(elapsed < .seconds(2))
    }

    @Test func isWaitingWhileAsleep() {
        let observed = Mutex<Bool?>(nil)
        onFreshThread {
            let loop = RLRunLoop.current
            loop.add(RLSource0 {}, forMode: .default)
            Thread.detachNewThread {
                usleep(30_000)
                observed.withLock { $0 = loop.isWaiting }
                loop.stop()
            }
            #expect(!loop.isWaiting)
            loop.run(mode: .default, seconds: 5, returnAfterSourceHandled: false)
        }
        #expect(observed.withLock { $0 } == true)
    }

    @Test func performAfterDelayIsATimerAndNeedsARunningLoop() {
        let log = onFreshThread { () -> [String] in
            let loop = RLRunLoop.current
            let log = EventLog()
            let t = loop.perform(after: .milliseconds(10), name: "later") { log.add("later") }
            usleep(30_000)
            log.add("before-run valid=\(t.isValid)")
            loop.run(mode: .default, seconds: 1, returnAfterSourceHandled: false)
            log.add("after-run valid=\(t.isValid)")
            return log.all
        }
        #expect(log == ["before-run valid=true", "later", "after-run valid=false"])
    }

    @Test func residentWorkerThreadWithMessagePort() {
        let worker = RLWorkerThread(name: "rl-test-worker")
        let results = Mutex<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        for i in 0..<100 {
            worker.perform { results.withLock { $0.append(i) }; if i == 99 { done.signal() } }
        }
        done.wait()
        #expect(results.withLock { $0 } == Array(0..<100))
        var tid: Int32 = 0
        let got = DispatchSemaphore(value: 0)
        worker.perform { tid = RLRunLoop.current.threadID; got.signal() }
        got.wait()
        #expect(tid == worker.runLoop.threadID)
        worker.cancel()
        worker.join()
    }

    @Test func messagePortDeliversInOrderAcrossThreads() throws {
        let received = Mutex<[Int]>([])
        let log = try onFreshThread { () -> Result<[Int], Error> in
            Result {
                let loop = RLRunLoop.current
                let port = try RLMessagePort<Int>(name: "port") { v in
                    received.withLock { $0.append(v) }
                    if v == 999 { RLRunLoop.current.stop() }
                }
                try loop.add(port.source, forMode: .default)
                Thread.detachNewThread { for i in 0..<1000 { port.send(i) } }
                loop.run(mode: .default, seconds: 5, returnAfterSourceHandled: false)
                return received.withLock { $0 }
            }
        }.get()
        #expect(log == Array(0..<1000))
    }

    @Test("message-port sends coalesce: one eventfd write until the handler takes it, and no message is left behind")
    func messagePortSendsCoalesce() throws {
        let received = Mutex<[Int]>([])
        let result = try onFreshThread { () -> Result<(counter: UInt64, log: [Int], second: UInt64), Error> in
            Result {
                let loop = RLRunLoop.current
                let port = try RLMessagePort<Int>(name: "port") { v in received.withLock { $0.append(v) } }
                try loop.add(port.source, forMode: .default)
                // 1 000 sends before the loop runs: only the first writes the eventfd.
                for i in 0..<1000 { port.send(i) }
                let fd = port.source.fd
                var counter: UInt64 = 0
                _ = read(fd, &counter, 8)
                _ = write(fd, &counter, 8)   // put it back for the handler
                loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: true)
                // Taken: the next send writes again (one write), and its message arrives.
                port.send(1000)
                var second: UInt64 = 0
                _ = read(fd, &second, 8)
                _ = write(fd, &second, 8)
                loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: true)
                loop.remove(port.source, forMode: .default)
                return (counter, received.withLock { $0 }, second)
            }
        }.get()
        #expect(result.counter == 1)
        #expect(result.second == 1)
        #expect(result.log == Array(0...1000))
    }

    @Test("message port: 4 threads × 5 000 sends racing the handler, each received once and in each sender's order")
    func messagePortManySendersNothingLost() throws {
        let senders = 4, each = 5000
        let log = try onFreshThread { () -> Result<[Int], Error> in
            Result {
                let loop = RLRunLoop.current
                var got: [Int] = []
                got.reserveCapacity(senders * each)
                let port = try RLMessagePort<Int>(name: "port") { v in
                    got.append(v)
                    if got.count == senders * each { RLRunLoop.current.stop() }
                }
                try loop.add(port.source, forMode: .default)
                for k in 0..<senders {
                    Thread.detachNewThread { for i in 0..<each { port.send(k * each + i) } }
                }
                // No timeout that could hide a lost wake-up: 60 s is "never" for this test.
                let r = loop.run(mode: .default, seconds: 60, returnAfterSourceHandled: false)
                #expect(r == .stopped)
                loop.remove(port.source, forMode: .default)
                return got
            }
        }.get()
        #expect(log.count == senders * each)
        #expect(Set(log).count == senders * each)
        for k in 0..<senders {
            let mine = log.filter { $0 / each == k }
            #expect(mine == Array(k * each..<(k + 1) * each), "sender \(k)'s order")
        }
    }

    @Test("a worker thread: 8 threads × 2 000 performs, each run once on the worker, each poster's in order")
    func workerThreadManyPostersNothingLost() {
        let posters = 8, each = 2000
        let worker = RLWorkerThread(name: "rl-many")
        let log = Mutex<[Int]>([])
        let tids = Mutex<Set<Int32>>([])
        let done = DispatchSemaphore(value: 0)
        for k in 0..<posters {
            Thread.detachNewThread {
                for i in 0..<each {
                    worker.perform {
                        let n = log.withLock { $0.append(k * each + i); return $0.count }
                        tids.withLock { _ = $0.insert(RLRunLoop.current.threadID) }
                        if n == posters * each { done.signal() }
                    }
                }
            }
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        worker.cancel()
        worker.join()
        let got = log.withLock { $0 }
        #expect(got.count == posters * each)
        #expect(tids.withLock { $0 } == [worker.runLoop.threadID])
        for k in 0..<posters {
            #expect(got.filter { $0 / each == k } == Array(k * each..<(k + 1) * each), "poster \(k)'s order")
        }
    }

    @Test func serialExecutorRunsActorJobsOnTheLoopThread() async {
        let worker = RLWorkerThread(name: "rl-actor")
        let executor = RLSerialExecutor(runLoop: worker.runLoop)
        actor Counter {
            let executor: RLSerialExecutor
            var n = 0
            init(_ e: RLSerialExecutor) { executor = e }
            nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
            func bump() -> (Int, Int32) { n += 1; return (n, RLRunLoop.current.threadID) }
        }
        let c = Counter(executor)
        var last = 0
        for _ in 0..<50 {
            let (n, tid) = await c.bump()
            #expect(tid == worker.runLoop.threadID)
            last = n
        }
        #expect(last == 50)
        worker.cancel()
        worker.join()
    }

    @Test func descriptionDumpListsModesAndItems() throws {
        let (before, after) = try onFreshThread { () -> Result<(String, String), Error> in
            Result {
                let loop = RLRunLoop.current
                loop.add(RLTimer(fireAt: .now + .seconds(60), interval: .seconds(2), tolerance: .milliseconds(5), name: "hb") { _ in }, forMode: .default)
                let before = loop.description
                var fds: [Int32] = [0, 0]
                _ = pipe(&fds)
                try loop.add(RLSource1(fd: fds[0], name: "port") { _, _, _ in }, forMode: .default)
                loop.add(RLObserver(activities: [.beforeWaiting, .exit], order: 1_999_000, name: "flush") { _, _ in }, forMode: .default)
                return (before, loop.description)
            }
        }.get()
        #expect(before.contains("<mode kCFRunLoopDefaultMode>"))
        #expect(before.contains("\"hb\"") && before.contains("interval=2.0s") && before.contains("tolerance=0.005s"))
        #expect(!before.contains("\"port\""))
        #expect(after.contains("\"port\" fd="))
        #expect(after.contains("\"flush\" activities=beforeWaiting|exit repeats=true order=1999000"))
        #expect(after.contains("common modes = {kCFRunLoopDefaultMode}"))
    }

    @Test func loopIsDestroyedAtThreadExit() {
        let log = EventLog()
        let weakLoop = onFreshThread { () -> (() -> RLRunLoop?) in
            let loop = RLRunLoop.current
            loop.add(RLSource0(cancel: { _, m in log.add("cancel \(m)") }) {}, forMode: .default)
            weak let w = loop
            return { w }
        }
        usleep(20_000)
        #expect(log.all == ["cancel kCFRunLoopDefaultMode"])
        #expect(weakLoop() == nil)
    }

    /// The perform-block queue (a ring buffer swapped with a spare each pass): FIFO order through
    /// growth and wrap-around, blocks of another mode kept in order ahead of blocks queued meanwhile,
    /// and a nested run draining blocks while the outer drain is in progress.
    @Test func performBlocksKeepFIFOOrderThroughGrowthWrapAroundAndNesting() {
        let (ran, nested) = onFreshThread { () -> ([String], [String]) in
            let loop = RLRunLoop.current
            let other = RLMode("other")
            var ran: [String] = []
            var nested: [String] = []
            // Wrap-around: a few blocks drained (the drained queue becomes the loop's queue on the
            // next pass, its start moved), then more than the initial capacity queued, so the
            // queue grows while wrapped.
            for i in 0..<5 { loop.performBlock(forMode: .default) { ran.append("a\(i)") } }
            loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false)
            loop.performBlock(forMode: .default) { ran.append("a5") }
            loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false)
            for i in 0..<100 {
                loop.performBlock(forMode: i % 3 == 0 ? other : .default) { ran.append("b\(i)") }
            }
            // A block that queues more (they run in the same run, after the others) and runs a
            // nested activation of `other`, which takes the queue while the outer drain has its own.
            loop.performBlock(forMode: .default) {
                loop.performBlock(forMode: .default) { ran.append("c0") }
                loop.performBlock(forMode: other) { nested.append("n0") }
                loop.run(mode: other, seconds: 0, returnAfterSourceHandled: false)
            }
            loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false)
            // The blocks of `other` queued before (b0, b3, ...) were held by the outer drain, so the
            // nested run saw only n0 (as in CF); they are back in the queue, in order, for a run of
            // `other`.
            loop.run(mode: other, seconds: 0, returnAfterSourceHandled: false)
            return (ran, nested)
        }
        let b = (0..<100).filter { $0 % 3 != 0 }.map { "b\($0)" }
        let kept = (0..<100).filter { $0 % 3 == 0 }.map { "b\($0)" }
        #expect(ran == (0...5).map { "a\($0)" } + b + ["c0"] + kept)
        #expect(nested == ["n0"])
    }

    @Test func manyTimersInsertRemoveAndFireInOrder() {
        let (fired, inTime) = onFreshThread { () -> ([Int], Bool) in
            let loop = RLRunLoop.current
            var timers: [RLTimer] = []
            var fired: [Int] = []
            // The dates must still be ahead when the timers are made: a past date means the time the
            // timer was made (CF), which would order them by creation instead.
            let base = RLInstant.now + .milliseconds(1500)
            // 100k timers in a scattered order; remove all but every 1000th; the rest fire in date order.
            for i in 0..<100_000 {
                let k = (i * 7919) % 100_000
                timers.append(RLTimer(fireAt: base + .microseconds(k)) { _ in fired.append(k) })
                loop.add(timers[i], forMode: .default)
            }
            let inTime = RLInstant.now < base
            for (i, t) in timers.enumerated() where ((i * 7919) % 100_000) % 1000 != 0 { loop.remove(t, forMode: .default) }
            loop.run(mode: .default, seconds: 5, returnAfterSourceHandled: false)
            return (fired, inTime)
        }
        #expect(inTime, "making the timers took longer than the margin before their dates")
        #expect(fired == stride(from: 0, to: 100_000, by: 1000).map { $0 })
    }

    /// The timer heaps drop stale entries by compaction when they outnumber the live ones (here on
    /// the first add after mass removal), with and without tolerance; the live timers still fire
    /// in fire-date order.
    @Test func timerHeapsCompactAndKeepFireOrder() {
        let (fired, expected) = onFreshThread { () -> ([Int], [Int]) in
            let loop = RLRunLoop.current
            var fired: [Int] = []
            var expected: [Int] = []
            let base = RLInstant.now + .milliseconds(300)   // ahead of the last timer made (a past date means "when made")
            var timers: [Int: RLTimer] = [:]
            func add(_ k: Int) {
                // Every third timer has a tolerance (its own pair of heaps); fire dates are distinct.
                let t = RLTimer(fireAt: base + .microseconds(k * 10), tolerance: k % 3 == 0 ? .microseconds(5) : .zero) { _ in fired.append(k) }
                loop.add(t, forMode: .default)
                timers[k] = t
            }
            for i in 0..<3000 { add((i * 7919) % 3000) }                       // scattered
            for k in 0..<3000 where k % 10 != 0 { loop.remove(timers[k]!, forMode: .default) }   // 90% stale
            for i in 0..<300 { add(3000 + (i * 13) % 300) }                     // compaction on the first
            expected = (0..<3000).filter { $0 % 10 == 0 } + Array(3000..<3300)
            loop.run(mode: .default, seconds: 5, returnAfterSourceHandled: false)
            return (fired, expected.sorted())
        }
        #expect(fired.count == expected.count)
        #expect(fired == expected)
    }

    @Test func removingTheNextTimerDoesNotCauseASpuriousWake() {
        let wakes = onFreshThread { () -> Int in
            let loop = RLRunLoop.current
            var wakes = 0
            loop.add(RLObserver(activities: .afterWaiting) { _, _ in wakes += 1 }, forMode: .default)
            let t = RLTimer(fireAt: .now + .milliseconds(300)) { _ in }
            loop.add(t, forMode: .default)
            loop.add(RLSource0 {}, forMode: .default)
            Thread.detachNewThread { usleep(20_000); t.invalidate() }
            loop.run(mode: .default, seconds: 0.4, returnAfterSourceHandled: false)
            return wakes
        }
        #expect(wakes == 1, "only the run's timeout wakes the loop (CF on Linux wakes for the removed timer too)")
    }

    @Test func timerAddedFromAnotherThreadWhileAsleepFiresOnTime() {
        let late = onFreshThread { () -> Int64 in
            let loop = RLRunLoop.current
            loop.add(RLSource0 {}, forMode: .default)
            // Written by the timer's callout, on this thread; read here after the run.
            final class Lateness: @unchecked Sendable { var ns: Int64 = -1 }
            let late = Lateness()
            Thread.detachNewThread {
                usleep(10_000)
                let due = RLInstant.now + .milliseconds(20)
                loop.add(RLTimer(fireAt: due) { _ in late.ns = nsOf(RLInstant.now - due); loop.stop() }, forMode: .default)
            }
            loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: false)
            return late.ns
        }
        #expect(late >= 0 && late < 1_000_000_000, "fired \(late) ns late: the sleeping loop re-armed for it (not its 2 s timeout)")
    }

    @Test func wakeUpIsDroppedWhenTheLoopIsNotRunning() {
        let iterations = onFreshThread { () -> Int in
            let loop = RLRunLoop.current
            var n = 0
            loop.add(RLObserver(activities: .afterWaiting) { _, _ in n += 1 }, forMode: .default)
            loop.add(RLSource0 {}, forMode: .default)
            loop.wakeUp()   // not running: ignored (CF), so the run below sleeps until its timeout
            let r = loop.run(mode: .default, seconds: 0.05, returnAfterSourceHandled: false)
            #expect(r == .timedOut)
            return n
        }
        #expect(iterations == 1)
    }

    @Test func runUntilAPastDateIsATruePoll() {
        let r = onFreshThread { () -> (RLRunResult, Int) in
            let loop = RLRunLoop.current
            var sleeps = 0
            loop.add(RLObserver(activities: .beforeWaiting) { _, _ in sleeps += 1 }, forMode: .default)
            loop.add(RLSource0 {}, forMode: .default)
            return (loop.run(mode: .default, until: .now), sleeps)
        }
        #expect(r.0 == .timedOut)
        #expect(r.1 == 0)
    }

    @Test func source1ToSource0HandOffBetweenTwoLoops() throws {
        // The network-loader pattern: a loader thread's source1 reads the socket, hands the data to
        // the main side through a source0 signalled from the loader's callout, and wakes that loop.
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let loader = RLWorkerThread(name: "rl-loader")
        let received = Mutex<[String]>([])
        let log = onFreshThread { () -> [String] in
            let consumer = RLRunLoop.current
            let log = EventLog()
            let deliver = RLSource0(name: "deliver") {
                for chunk in received.withLock({ r -> [String] in defer { r.removeAll() }; return r }) { log.add("consumer got \(chunk)") }
                if log.all.count == 3 { consumer.stop() }
            }
            consumer.add(deliver, forMode: .default)
            let ready = DispatchSemaphore(value: 0)
            loader.perform {
                let s = try! RLSource1(fd: fds[0], name: "socket") { _, fd, _ in
                    var buf = [UInt8](repeating: 0, count: 16)
                    let n = read(fd, &buf, 1)   // one byte per callout: three callouts, three hand-offs
                    received.withLock { $0.append(String(decoding: buf.prefix(n), as: UTF8.self)) }
                    deliver.signalAndWake(consumer)
                }
                try! RLRunLoop.current.add(s, forMode: .default)
                ready.signal()
            }
            ready.wait()
            let w = fds[1]
            Thread.detachNewThread { for c in ["a", "b", "c"] { _ = c.withCString { write(w, $0, 1) }; usleep(5_000) } }
            let r = consumer.run(mode: .default, seconds: 5, returnAfterSourceHandled: false)
            log.add("result \(r)")
            return log.all
        }
        loader.cancel()
        loader.join()
        #expect(log == ["consumer got a", "consumer got b", "consumer got c", "result stopped"])
    }

    @Test func oneTimerInSeveralModes() {
        let log = onFreshThread { () -> [String] in
            let loop = RLRunLoop.current
            let log = EventLog()
            let t = RLTimer(fireAt: .now + .milliseconds(10), interval: .milliseconds(10)) { t in
                log.add("fire in \(RLRunLoop.current.currentMode!.rawValue)")
                RLRunLoop.current.stop()
            }
            loop.add(t, forMode: RLMode("a"))
            loop.add(t, forMode: RLMode("b"))
            #expect(loop.contains(t, inMode: RLMode("a")) && loop.contains(t, inMode: RLMode("b")))
            log.add("a: \(loop.run(mode: RLMode("a"), seconds: 1, returnAfterSourceHandled: false))")
            log.add("b: \(loop.run(mode: RLMode("b"), seconds: 1, returnAfterSourceHandled: false))")
            loop.remove(t, forMode: RLMode("a"))
            log.add("a after removal: \(loop.run(mode: RLMode("a"), seconds: 0.05, returnAfterSourceHandled: false))")
            t.invalidate()
            log.add("b after invalidate: \(loop.run(mode: RLMode("b"), seconds: 0.05, returnAfterSourceHandled: false))")
            return log.all
        }
        #expect(log == ["fire in a", "a: stopped", "fire in b", "b: stopped", "a after removal: finished", "b after invalidate: finished"])
    }

    @Test func modesAreCreatedByAddingNotByRunning() {
        let loop = onFreshThread { RLRunLoop.current }
        #expect(loop.allModes == [.default])
        onFreshThread { _ = RLRunLoop.current.run(mode: RLMode("ghost"), seconds: 0, returnAfterSourceHandled: false) }
        loop.performBlock(forMode: RLMode("via-block")) {}
        #expect(loop.allModes.contains(RLMode("via-block")))
        #expect(!loop.allModes.contains(RLMode("ghost")))
    }
}

@Suite("RunLoopCore: preconditions")
struct PreconditionTests {
    @Test func nanTimeoutTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = RLRunLoop.current.run(mode: .default, seconds: .nan, returnAfterSourceHandled: false)
        }
    }
    @Test func nanIntervalTraps() async {
        await #expect(processExitsWith: .failure) {
            _ = RLTimer(fireAfter: 1, interval: .nan) { _ in }
        }
    }
    @Test func runningAnotherThreadsLoopTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = RLRunLoop.main
            let sem = DispatchSemaphore(value: 0)
            Thread.detachNewThread { _ = loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false); sem.signal() }
            sem.wait()
        }
    }
    @Test func clampsOfDatesAndIntervals() {
        let inf = RLTimer(fireAfter: .infinity, interval: .infinity) { _ in }
        #expect(inf.nextFireDate == .distantFuture)
        #expect(inf.interval == .seconds(504_911_232))
        let neg = RLTimer(fireAfter: -5, interval: -1, tolerance: -3) { _ in }
        #expect(!neg.repeats)
        #expect(neg.tolerance == .zero)
        #expect(neg.nextFireDate.map { $0 < .now } == true)
        let capped = RLTimer(fireAt: .now, interval: .milliseconds(10), tolerance: .seconds(1)) { _ in }
        #expect(capped.tolerance == .milliseconds(10))
    }
}
