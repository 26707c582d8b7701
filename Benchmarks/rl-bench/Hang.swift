// rl-bench rows "h." (docs/hangs.md): what the hang watchdog costs.
//
//   h. watchdog watching, no hang    loop workloads (batch perform, chained perform) in a process whose
//                                    watchdog watches (a private session records `runloop:hang_*`, so it
//                                    reads every loop's watch word each threshold / 4), against the same
//                                    build with the watchdog off (RLTRACE_HANG_THRESHOLD=off: no thread).
//                                    Target ≤ 1 %. Both in the same session (only the watchdog differs);
//                                    interleaved child processes, best of each.
//   h. one stack capture             round trip of one capture (signal to the thread, its handler's
//                                    backtrace into the preallocated buffer, futex wake-up), with the
//                                    target thread busy in a callout and asleep in usleep; median.
//
// The instructions the hooks add to the loop itself (two relaxed stores per callout) are counted with
// callgrind, not here: docs/benchmarks.md "Hang watchdog".
import Foundation
import LTTngControl
import RunLoopCore
import Synchronization
#if !RLTRACE_DISABLED
import RunLoopTracing
#endif

struct HangIdleNumbers: Codable {
    var batchNs: Double
    var chainedNs: Double
    /// Whether this process's watchdog was watching (its capture signal installed) by the end.
    var watching: Bool
}

/// `--child hang-idle ours QUICK`: the loop workloads, best of a few runs each.
func hangIdleChild(quick: Bool) -> HangIdleNumbers {
    var sz = Sizes()
    if quick { sz.batch /= 4; sz.chained /= 4 }
    _ = onFreshThread { batchPerform(.ours, n: 10_000) }
    var b = Double.infinity, c = Double.infinity
    for _ in 0..<(quick ? 2 : 5) {
        b = min(b, onFreshThread { batchPerform(.ours, n: sz.batch) })
        c = min(c, onFreshThread { chainedPerform(.ours, n: sz.chained) })
    }
    return HangIdleNumbers(batchNs: b, chainedNs: c, watching: RLHangWatchdog.signalNumber != nil)
}

func hangRows(_ sz: Sizes, _ opt: Options) {
    #if RLTRACE_DISABLED
    log("h. skipped: tracing compiled out (no hang watchdog)")
    #else
    log("h. hang watchdog: idle cost (watching vs off) and one stack capture")
    var off = isolatedEnvironment()
    var watchEnv: [String: String]?
    var daemon: PrivateSessionDaemon?
    var session: LTTngSession?
    let traceDir = FileManager.default.temporaryDirectory.appendingPathComponent("rl-bench-hang-\(getpid())")
    var note = "both in a session recording runloop:hang_*; floor column = RLTRACE_HANG_THRESHOLD=off (no watchdog thread), ours = watchdog on (ticking every 62.5 ms); best of 6 interleaved child runs"
    do {
        let d = try PrivateSessionDaemon.start()
        daemon = d
        let s = try LTTngSession.create(name: "rlbhang\(getpid())", outputDirectory: traceDir, cli: d.cli)
        try s.enableUserspaceEvents("runloop:hang_*")
        try s.start()
        session = s
        watchEnv = d.applicationEnvironment
        off = d.applicationEnvironment   // the same session, the watchdog switched off: only the watchdog differs
    } catch {
        note += "; no session: \(error)"
        log("h. could not start an LTTng session: \(error)")
    }
    off["RLTRACE_HANG_THRESHOLD"] = "off"
    func child(_ env: [String: String]) -> HangIdleNumbers? {
        guard let s = runChild(me, ["--child", "hang-idle", "ours", opt.quick ? "1" : "0"], env: env) else { return nil }
        return try? JSONDecoder().decode(HangIdleNumbers.self, from: Data(s.utf8))
    }
    var best: [Bool: HangIdleNumbers] = [:]
    var watched = true
    for _ in 0..<(opt.quick ? 1 : 6) {
        for (watching, env) in [(false, off), (true, watchEnv)] {
            guard let env, let n = child(env) else { continue }
            if watching { watched = watched && n.watching }
            if let b = best[watching] {
                best[watching] = HangIdleNumbers(batchNs: min(b.batchNs, n.batchNs), chainedNs: min(b.chainedNs, n.chainedNs),
                                                 watching: b.watching && n.watching)
            } else {
                best[watching] = n
            }
        }
    }
    if let s = session { try? s.stop(); try? s.destroy() }
    daemon?.stop()
    try? FileManager.default.removeItem(at: traceDir)
    if !watched { note += "; WARNING: the watching child's watchdog did not install its handler" }
    for (id, name, kp) in [("batch", "batch perform", \HangIdleNumbers.batchNs), ("chained", "chained perform", \HangIdleNumbers.chainedNs)] {
        let o = best[true]?[keyPath: kp], f = best[false]?[keyPath: kp]
        let ratio = (o != nil && f != nil) ? o! / f! : nil
        rows.append(Row(id: "hang_idle_\(id)", workload: "h. watchdog watching, no hang: \(name)", unit: "ns/block",
                        ours: o, cf: nil, floor: f, ratio: ratio, ratio_of: "ours/off", target: "≤1.01× off",
                        pass: ratio.map { $0 <= 1.01 }, note: id == "batch" ? note : nil))
    }

    // One capture, in this process: a loop thread busy in a callout, then asleep in usleep.
    let capturedSignal = RLHangSampler.installCapture()
    guard capturedSignal > 0 else {
        rows.append(Row(id: "hang_capture", workload: "h. one stack capture", unit: "µs", ours: nil, cf: nil, floor: nil,
                        ratio: nil, ratio_of: "", target: nil, pass: nil, note: "no free real-time signal"))
        return
    }
    for (id, label, sleeping) in [("busy", "target busy in a callout", false), ("asleep", "target in usleep", true)] {
        let rounds = opt.quick ? 200 : 2000
        let (times, frames) = captureRounds(rounds, sleeping: sleeping)
        rows.append(Row(id: "hang_capture_\(id)", workload: "h. one stack capture, \(label)", unit: "µs",
                        ours: times.isEmpty ? nil : median(times), cf: nil, floor: times.isEmpty ? nil : percentile(times, 0.99),
                        ratio: nil, ratio_of: "", target: nil, pass: nil,
                        note: String(format: "median (ours) and p99 (floor column) of %d captures, signal %d; %.1f frames each; round trip tgkill → handler (backtrace) → futex wake, no session recording",
                                     times.count, capturedSignal, frames)))
    }
    #endif
}

#if !RLTRACE_DISABLED
/// `rounds` captures of a loop thread stuck in a perform-block (spinning, or sleeping in 1 ms
/// usleeps); returns each capture's round trip in µs and the mean frame count.
func captureRounds(_ rounds: Int, sleeping: Bool) -> ([Double], Double) {
    final class Shared: @unchecked Sendable {
        var tid: Int32 = 0
        let stop = Atomic<Bool>(false)
        let ready = DispatchSemaphore(value: 0)
    }
    let sh = Shared()
    let target = Helper(name: "rlb-hung") {
        let loop = RLRunLoop.current
        loop.perform(name: "stuck") {
            sh.tid = loop.threadID
            sh.ready.signal()
            @inline(never) func stuckInCallout() {
                var x = 0
                while !sh.stop.load(ordering: .relaxed) {
                    if sleeping { usleep(1000) } else { x &+= 1 }
                }
                blackHole(x)
            }
            stuckInCallout()
        }
        loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: true)
    }
    sh.ready.wait()
    usleep(2000)
    var times: [Double] = []
    var frames = 0
    for _ in 0..<rounds {
        let t0 = nowNs()
        let n = RLHangSampler.capture(thread: sh.tid, loop: 0, hangID: 0, sample: 0, startNs: t0, timeoutNs: 100_000_000)
        let t1 = nowNs()
        if n >= 0 { times.append(Double(t1 - t0) / 1000); frames += Int(n) }
    }
    sh.stop.store(true, ordering: .relaxed)
    target.join()
    return (times, times.isEmpty ? 0 : Double(frames) / Double(times.count))
}
#endif
