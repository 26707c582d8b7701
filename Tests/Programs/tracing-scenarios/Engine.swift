import Dispatch
import Foundation
import RunLoopCore

/// The scenario's own account of what happened, printed as `LOG ...` lines. Every callout appends
/// `callout <kind> <name> [<activity>|<fd>]` from inside the callout, so the order is the order the
/// loop really ran them in; the test compares it with the trace's `*_entry` events.
final class ScenarioLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func add(_ s: String) { lock.withLock { lines.append(s) } }
    func flush() { lock.withLock { for l in lines { print("LOG " + l) }; lines.removeAll() } }
}

func threadIDNow() -> Int32 { currentThreadID() }

/// Sequence scenario: observers, two source0s, two timers (one repeating), a pipe source1 and
/// perform-blocks, run in the default mode until the run's timeout.
enum SequenceScenario {
    static func run() {
        let log = ScenarioLog()
        let loop = RLRunLoop.current
        log.add("loop \(loop.id) tid \(threadIDNow())")

        let obs = RLObserver(activities: .allActivities, repeats: true, order: 0, name: "obs-all") { o, activity in
            log.add("callout observer \(o.name!) \(activity.rawValue)")
        }
        let obsLate = RLObserver(activities: [.beforeSources, .beforeWaiting], repeats: true, order: 5, name: "obs-late") { o, activity in
            log.add("callout observer \(o.name!) \(activity.rawValue)")
        }
        let a = RLSource0(order: 0, name: "s0-a") { log.add("callout source0 s0-a") }
        let b = RLSource0(order: 1, name: "s0-b") { log.add("callout source0 s0-b") }
        let t1 = RLTimer(fireAt: .now + .milliseconds(3), name: "t-once") { t in log.add("callout timer \(t.name!)") }
        var fires = 0
        let t2 = RLTimer(fireAt: .now + .milliseconds(6), interval: .milliseconds(4), name: "t-repeat") { t in
            log.add("callout timer \(t.name!)")
            fires += 1
            if fires == 3 { t.invalidate() }
        }
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { fatalError("pipe") }
        let readFD = fds[0], writeFD = fds[1]
        let s1 = try! RLSource1(fd: readFD, interest: .read, name: "pipe-r") { s, fd, readiness in
            var buf = [UInt8](repeating: 0, count: 64)
            let n = read(fd, &buf, 64)
            log.add("callout source1 \(s.name!) \(fd) \(readiness.rawValue) read \(n)")
        }
        loop.add(obs, forMode: .default)
        loop.add(obsLate, forMode: .default)
        loop.add(a, forMode: .default)
        loop.add(b, forMode: .default)
        loop.add(t1, forMode: .default)
        loop.add(t2, forMode: .default)
        try! loop.add(s1, forMode: .default)
        log.add("fd pipe-r \(readFD)")

        // The writer: one byte after 10 ms, another after 20 ms.
        let writer = Thread {
            usleep(10_000); var x: UInt8 = 1; _ = write(writeFD, &x, 1)
            usleep(10_000); _ = write(writeFD, &x, 1)
        }
        writer.start()

        b.signal(); a.signal()
        loop.perform(inModes: [.default], name: "blk-1") { log.add("callout block blk-1") }
        loop.perform(inModes: [.default], name: "blk-2") {
            log.add("callout block blk-2")
            a.signal()   // performed in a later iteration
        }
        let r = loop.run(mode: .default, seconds: 0.05, returnAfterSourceHandled: false)
        log.add("result \(r.rawValue)")
        loop.remove(obs, forMode: .default)
        loop.remove(obsLate, forMode: .default)
        loop.remove(a, forMode: .default)
        loop.remove(b, forMode: .default)
        loop.remove(s1, forMode: .default)
        close(readFD); close(writeFD)
        withExtendedLifetime((obs, obsLate, a, b, t1, t2, s1)) {}
        log.flush()
    }
}

/// Wake scenario: one run per way of waking the main thread's loop. Before each run it logs
/// `step <name> <expected wake reason> <expected fd or -1> [tid of the waking thread]`.
enum WakeScenario {
    static func run() {
        let log = ScenarioLog()
        let loop = RLRunLoop.current   // the main thread: the main loop (serves the main queue)
        log.add("loop \(loop.id) tid \(threadIDNow())")
        // A source0 that is never signalled keeps the default mode non-empty.
        let keep = RLSource0(order: 0, name: "keep-alive") { log.add("callout source0 keep-alive") }
        loop.add(keep, forMode: .default)

        // Items stay referenced until the end (a fired one-shot timer whose last reference is
        // dropped is RunLoopCore's business, not the tracing's).
        var keepAlive: [AnyObject] = []
        defer { withExtendedLifetime(keepAlive) {} }
        // 1. timer
        do {
            let t = RLTimer(fireAt: .now + .milliseconds(5), name: "wake-timer") { t in
                log.add("callout timer \(t.name!)")
                RLRunLoop.current.stop()
            }
            loop.add(t, forMode: .default)
            keepAlive.append(t)
            log.add("step timer timer -1")
            let r = loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: false)
            log.add("result \(r.rawValue)")
        }
        // 2. fd
        do {
            var fds: [Int32] = [0, 0]
            guard pipe(&fds) == 0 else { fatalError("pipe") }
            let (rfd, wfd) = (fds[0], fds[1])
            let s1 = try! RLSource1(fd: rfd, interest: .read, name: "wake-pipe") { s, fd, readiness in
                var buf = [UInt8](repeating: 0, count: 8)
                _ = read(fd, &buf, 8)
                log.add("callout source1 \(s.name!) \(fd) \(readiness.rawValue)")
            }
            try! loop.add(s1, forMode: .default)
            keepAlive.append(s1)
            log.add("step fd source1 \(rfd)")
            let th = Thread { usleep(5_000); var x: UInt8 = 7; _ = write(wfd, &x, 1) }
            th.start()
            let r = loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true)
            log.add("result \(r.rawValue)")
            loop.remove(s1, forMode: .default)
            close(rfd); close(wfd)
        }
        // 3. explicit wakeUp from another thread, after signalling a source (signal-to-perform).
        do {
            let sig = RLSource0(order: 0, name: "signalled-elsewhere") { log.add("callout source0 signalled-elsewhere") }
            loop.add(sig, forMode: .default)
            keepAlive.append(sig)
            // Also in a second loop (a mode that loop never runs): the signal is traced once per loop.
            let other = RLWorkerThread(name: "other-loop")
            other.runLoop.add(sig, forMode: RLMode("never-run"))
            let box = TidBox()
            let th = Thread {
                box.set(threadIDNow())
                // Only a sleeping loop is guaranteed to see a wake-up (a loop not yet running drops it).
                while !loop.isWaiting { usleep(200) }
                sig.signal()
                loop.wakeUp()
            }
            th.start()
            while box.get() == 0 { usleep(100) }
            log.add("step wakeup wake_up -1 \(box.get()) \(sig.id) \(other.runLoop.id)")
            let r = loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true)
            log.add("result \(r.rawValue)")
            loop.remove(sig, forMode: .default)
            other.runLoop.remove(sig, forMode: RLMode("never-run"))
            other.cancel()
            other.join()
        }
        // 4. stop from another thread (wakes with wake_up, run returns stopped)
        do {
            let box = TidBox()
            let th = Thread { box.set(threadIDNow()); while !loop.isWaiting { usleep(200) }; loop.stop() }
            th.start()
            while box.get() == 0 { usleep(100) }
            log.add("step stop wake_up -1 \(box.get())")
            let r = loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: false)
            log.add("result \(r.rawValue)")
        }
        // 5. main queue
        do {
            log.add("step main-queue main_queue -2")
            let th = Thread {
                usleep(5_000)
                DispatchQueue.main.async { log.add("callout main_queue") }
            }
            th.start()
            let r = loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: true)
            log.add("result \(r.rawValue)")
        }
        // 6. timeout
        do {
            log.add("step timeout timeout -1")
            let r = loop.run(mode: .default, seconds: 0.01, returnAfterSourceHandled: false)
            log.add("result \(r.rawValue)")
        }
        // 7. poll (seconds 0: does not sleep)
        do {
            log.add("step poll none -1")
            let r = loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false)
            log.add("result \(r.rawValue)")
        }
        loop.remove(keep, forMode: .default)
        log.flush()
    }
}

/// Nested scenario: a source0 whose perform runs the loop in another mode (depth 2, with a timer
/// and an entry/exit observer there), then a repeating timer whose first callout blocks long
/// enough to miss several fires (rescheduled with `missed_fires`).
enum NestedScenario {
    static func run() {
        let log = ScenarioLog()
        let loop = RLRunLoop.current
        log.add("loop \(loop.id) tid \(threadIDNow())")
        let inner = RLMode("inner")
        let innerTimer = RLTimer(fireAt: .now + .milliseconds(2), name: "inner-timer") { t in log.add("callout timer \(t.name!)") }
        let innerObs = RLObserver(activities: [.entry, .exit], repeats: true, order: 0, name: "inner-obs") { o, a in
            log.add("callout observer \(o.name!) \(a.rawValue)")
        }
        loop.add(innerTimer, forMode: inner)
        loop.add(innerObs, forMode: inner)
        var ticks = 0
        let slow = RLTimer(fireAt: .now + .milliseconds(1), interval: .milliseconds(2), name: "slow-tick") { t in
            log.add("callout timer \(t.name!)")
            ticks += 1
            if ticks == 1 { usleep(15_000) } else { t.invalidate(); RLRunLoop.current.stop() }
        }
        let outer = RLSource0(order: 0, name: "outer") {
            log.add("callout source0 outer")
            let r = RLRunLoop.current.run(mode: inner, seconds: 0.5, returnAfterSourceHandled: false)
            log.add("inner-result \(r.rawValue)")
        }
        loop.add(outer, forMode: .default)
        loop.add(slow, forMode: .default)
        outer.signal()
        let r = loop.run(mode: .default, seconds: 2, returnAfterSourceHandled: false)
        log.add("result \(r.rawValue)")
        loop.remove(outer, forMode: .default)
        loop.remove(innerObs, forMode: inner)
        withExtendedLifetime((innerTimer, innerObs, slow, outer)) {}
        log.flush()
    }
}
