// tracing-bench: what a `runloop` tracepoint costs, disabled and enabled, and what tracing costs a
// running loop compared with a build where tracing is compiled out.
//
//   swift build -c release --product tracing-bench
//   RLTRACE_DISABLED=1 swift build -c release --scratch-path .build-notrace --product tracing-bench
//   .build/release/tracing-bench --baseline .build-notrace/release/tracing-bench
//
// (scripts/bench-tracing.sh does exactly that.) Without --baseline only this build is measured.
// Internal modes (run as child processes): child-sites, child-enabled, child-loop.
import Foundation
import LTTngControl
import RunLoopCore
import TestSupport
import RunLoopTracing

// MARK: timing helpers

@inline(never) func blackHole<T>(_ x: T) { withExtendedLifetime(x) {} }
@inline(never) func opaque<T>(_ x: T) -> T { x }

func nowNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Best (minimum) of `reps` timings of `body`, in ns.
func best(_ reps: Int, _ body: () -> Void) -> Double {
    var m = Double.infinity
    for _ in 0..<reps {
        let t0 = nowNs()
        body()
        m = min(m, Double(nowNs() - t0))
    }
    return m
}

#if RLTRACE_DISABLED
let tracingCompiledIn = false
#else
let tracingCompiledIn = true
#endif

// MARK: tracepoint sites

let sitesPerIteration = 10

/// Ten tracepoint sites per iteration (a callout's worth: entry/exit pairs and the loop events).
@inline(never) func tenSites(_ n: Int, _ loop: UInt64, _ item: UInt64) {
    for i in 0..<n {
        let it = UInt64(truncatingIfNeeded: i)
        RLTrace.iterationBegin(loop: loop, iteration: it)
        RLTrace.observerEntry(loop: loop, iteration: it, item: item, name: "bench-observer", activity: 2)
        RLTrace.observerExit(loop: loop, iteration: it, item: item, name: "bench-observer", activity: 2)
        RLTrace.source0Entry(loop: loop, iteration: it, item: item, name: "bench-source")
        RLTrace.source0Exit(loop: loop, iteration: it, item: item, name: "bench-source")
        RLTrace.timerEntry(loop: loop, iteration: it, item: item, name: "bench-timer", scheduledNs: it)
        RLTrace.timerExit(loop: loop, iteration: it, item: item, name: "bench-timer", scheduledNs: it)
        RLTrace.sleepBegin(loop: loop, iteration: it, timeoutNs: -1, deadlineNs: 0)
        RLTrace.wake(loop: loop, iteration: it, reason: .timer, fd: -1, sleptNs: 0)
        RLTrace.iterationEnd(loop: loop, iteration: it, handledSource: true, callouts: 3)
        blackHole(i)
    }
}

/// The same loop without the sites.
@inline(never) func noSites(_ n: Int, _ loop: UInt64, _ item: UInt64) {
    for i in 0..<n {
        blackHole(i)
    }
}

/// ns per disabled (or compiled-out) site.
func measureSites() -> Double {
    let n = 20_000_000
    let loop = opaque(UInt64(1)), item = opaque(UInt64(2))
    tenSites(1000, loop, item); noSites(1000, loop, item)
    let with = best(7) { tenSites(n, loop, item) }
    let without = best(7) { noSites(n, loop, item) }
    return max(0, with - without) / Double(n * sitesPerIteration)
}

/// ns per entry+exit pair of one callout while a session records `runloop:*`.
func measureEnabledPairs() -> (source0: Double, observer: Double, timer: Double) {
    let n = 200_000
    let loop = opaque(UInt64(1)), item = opaque(UInt64(2))
    func s0() { for i in 0..<n {
        RLTrace.source0Entry(loop: loop, iteration: UInt64(i), item: item, name: "bench-source")
        RLTrace.source0Exit(loop: loop, iteration: UInt64(i), item: item, name: "bench-source") } }
    func ob() { for i in 0..<n {
        RLTrace.observerEntry(loop: loop, iteration: UInt64(i), item: item, name: "bench-observer", activity: 4)
        RLTrace.observerExit(loop: loop, iteration: UInt64(i), item: item, name: "bench-observer", activity: 4) } }
    func tm() { for i in 0..<n {
        RLTrace.timerEntry(loop: loop, iteration: UInt64(i), item: item, name: "bench-timer", scheduledNs: UInt64(i))
        RLTrace.timerExit(loop: loop, iteration: UInt64(i), item: item, name: "bench-timer", scheduledNs: UInt64(i)) } }
    s0()
    return (best(5, s0) / Double(n), best(5, ob) / Double(n), best(5, tm) / Double(n))
}

// MARK: run-loop benchmarks (RunLoopCore with all its tracepoints)

/// ns per loop iteration: a source0 that re-signals itself (so the loop never sleeps), with an
/// observer of every activity: per iteration 2 observer callouts, 1 source0 callout, and the
/// iteration's own events.
func measureSourcePingPong(iterations n: Int) -> Double { measureSourcePingPong(iterations: n, reps: 3) }
func measureSourcePingPongOnce(iterations n: Int) -> Double { measureSourcePingPong(iterations: n, reps: 1) }
func measureBlocksOnce(count n: Int) -> Double { measureBlocks(count: n, reps: 1) }

func measureSourcePingPong(iterations n: Int, reps: Int) -> Double {
    let loop = RLRunLoop.current
    var left = n
    var ping: RLSource0!
    ping = RLSource0(order: 0, name: "ping") {
        left -= 1
        if left > 0 { ping.signal() } else { RLRunLoop.current.stop() }
    }
    var observed = 0
    let obs = RLObserver(activities: .allActivities, repeats: true, order: 0, name: "bench-observer") { _, _ in observed &+= 1 }
    loop.add(ping, forMode: .default)
    loop.add(obs, forMode: .default)
    let r = best(reps) {
        left = n
        ping.signal()
        _ = loop.run(mode: .default, seconds: 60, returnAfterSourceHandled: false)
    }
    loop.remove(ping, forMode: .default)
    loop.remove(obs, forMode: .default)
    blackHole(observed)
    return r / Double(n)
}

/// ns per block: perform-blocks enqueued in batches and drained by polling runs.
func measureBlocks(count n: Int, reps: Int = 3) -> Double {
    let loop = RLRunLoop.current
    var done = 0
    let r = best(reps) {
        done = 0
        var i = 0
        while i < n {
            for _ in 0..<100 { loop.perform(inModes: [.default]) { done &+= 1 } }
            i += 100
            _ = loop.run(mode: .default, seconds: 0, returnAfterSourceHandled: false)
        }
    }
    blackHole(done)
    return r / Double(n)
}

struct LoopNumbers: Codable {
    var pingPongNs: Double
    var blockNs: Double
}

func measureLoop() -> LoopNumbers {
    _ = measureSourcePingPong(iterations: 2_000)
    return LoopNumbers(pingPongNs: measureSourcePingPong(iterations: 100_000), blockNs: measureBlocks(count: 100_000))
}

// MARK: child processes and orchestration

func runChild(_ exe: String, _ args: [String], env: [String: String]) throws -> String {
    let r = try runProgram(exe, args, environment: env)
    guard r.status == 0 else { throw NSError(domain: "tracing-bench", code: Int(r.status), userInfo: [NSLocalizedDescriptionKey: r.stderr]) }
    return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// An environment with no session daemon reachable (empty LTTNG_HOME).
func isolatedEnvironment() -> [String: String] {
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("tracing-bench-\(getpid())")
    try? FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    var env = ProcessInfo.processInfo.environment
    env["LTTNG_HOME"] = home.path
    return env
}

func fmt(_ x: Double) -> String { String(format: "%8.2f", x) }

let args = Array(CommandLine.arguments.dropFirst())
// TRACING_BENCH_IDLE_THREAD=1: start one idle thread first, so that the compiled-out build is
// multi-threaded like the traced one (liblttng-ust's listener threads), as any program using
// Dispatch or Foundation threads is: glibc then wraps epoll_wait/poll in cancellation points in both.
if ProcessInfo.processInfo.environment["TRACING_BENCH_IDLE_THREAD"] == "1" {
    let idle = Thread { while true { sleep(3600) } }
    idle.start()
}
let encoder = JSONEncoder()
switch args.first {
case "child-sites":
    print(measureSites())
case "child-enabled":
    let p = measureEnabledPairs()
    let loop = measureLoop()
    print("\(p.source0) \(p.observer) \(p.timer) \(loop.pingPongNs) \(loop.blockNs)")
case "child-noop":
    break
case "child-count":
    // One pass of a loop workload (for instruction counting under valgrind): child-count ping|block N
    let n = Int(args[2])!
    if args[1] == "ping" { _ = measureSourcePingPongOnce(iterations: n) } else { _ = measureBlocksOnce(count: n) }
case "child-loop":
    print(String(decoding: try encoder.encode(measureLoop()), as: UTF8.self))
default:
    var baseline: String?
    if let i = args.firstIndex(of: "--baseline"), i + 1 < args.count { baseline = args[i + 1] }
    let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
    let quiet = isolatedEnvironment()

    // This build and the compiled-out build, no session daemon at all: interleaved rounds, best of each.
    let rounds = 5
    var sites = Double.infinity, baseSites = Double.infinity
    var loop = LoopNumbers(pingPongNs: .infinity, blockNs: .infinity)
    var baseLoop = LoopNumbers(pingPongNs: .infinity, blockNs: .infinity)
    // The compiled-out build with one idle thread: multi-threaded like the traced build, whose
    // liblttng-ust starts two listener threads (as any program using Dispatch or Foundation threads is).
    var baseLoopMT = LoopNumbers(pingPongNs: .infinity, blockNs: .infinity)
    var quietMT = quiet
    quietMT["TRACING_BENCH_IDLE_THREAD"] = "1"
    func merge(_ a: inout LoopNumbers, _ b: LoopNumbers) {
        a.pingPongNs = min(a.pingPongNs, b.pingPongNs); a.blockNs = min(a.blockNs, b.blockNs)
    }
    for _ in 0..<rounds {
        sites = min(sites, Double(try runChild(me, ["child-sites"], env: quiet))!)
        merge(&loop, try JSONDecoder().decode(LoopNumbers.self, from: Data(try runChild(me, ["child-loop"], env: quiet).utf8)))
        if let b = baseline {
            baseSites = min(baseSites, Double(try runChild(b, ["child-sites"], env: quiet))!)
            merge(&baseLoop, try JSONDecoder().decode(LoopNumbers.self, from: Data(try runChild(b, ["child-loop"], env: quiet).utf8)))
            merge(&baseLoopMT, try JSONDecoder().decode(LoopNumbers.self, from: Data(try runChild(b, ["child-loop"], env: quietMT).utf8)))
        }
    }

    // This build, recording `runloop:*` in a private session daemon (overwrite mode: every event written).
    var enabled: [Double] = []
    if tracingCompiledIn {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("tracing-bench-trace-\(getpid())")
        defer { try? FileManager.default.removeItem(at: out) }
        let session = try LTTngSession.create(name: "bench\(getpid())", outputDirectory: out, cli: daemon.cli)
        try session.enableChannel("bench", subbufferSize: 1 << 20, subbufferCount: 8, overwrite: true)
        try session.enableUserspaceEvents("runloop:*", channel: "bench")
        try session.start()
        enabled = try runChild(me, ["child-enabled"], env: daemon.applicationEnvironment).split(separator: " ").map { Double($0)! }
        try session.stop()
        try session.destroy()
    }

    let base: (sites: Double, loop: LoopNumbers)? = baseline == nil ? nil : (baseSites, baseLoop)

    // Process start-up (exec to exit of a program that does nothing), no session daemon: µs, best of 30.
    // posix_spawn + waitpid, not Foundation's Process: its waitUntilExit polls a run loop and can
    // add up to ~50 ms to a run, which made this row read 60 ms in some batches.
    func startup(_ exe: String, _ env: [String: String] = quiet) throws -> Double {
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(exe), strdup("child-noop"), nil]
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var m = Double.infinity
        for _ in 0..<30 {
            var pid: pid_t = 0
            let t0 = nowNs()
            guard posix_spawn(&pid, exe, nil, nil, argv, envp) == 0 else { throw NSError(domain: "tracing-bench", code: 1) }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            m = min(m, Double(nowNs() - t0) / 1000)
        }
        return m
    }
    let startupUs = try startup(me)
    var noBaddr = quiet
    noBaddr["LTTNG_UST_WITHOUT_BADDR_STATEDUMP"] = "1"
    let startupNoBaddrUs = try startup(me, noBaddr)
    let baseStartupUs = try baseline.map { try startup($0) }

    print("tracing-bench (tracing \(tracingCompiledIn ? "compiled in" : "COMPILED OUT")); times in ns, best of \(rounds) interleaved runs")
    print("")
    print("                                        this build   compiled out   recording runloop:*")
    func row(_ label: String, _ v: Double, _ b: Double?, _ e: Double?) {
        let bs = b.map { fmt($0) + "     " } ?? "        -     "
        let es = e.map { fmt($0) } ?? "       -"
        print(label.padding(toLength: 40, withPad: " ", startingAt: 0) + (v.isNaN ? "       -" : fmt(v)) + "     " + bs + "   " + es)
    }
    row("tracepoint site, no session (per site)", sites, base?.sites, nil)
    if enabled.count == 5 {
        row("source0 entry+exit pair", .nan, nil, enabled[0])
        row("observer entry+exit pair", .nan, nil, enabled[1])
        row("timer entry+exit pair", .nan, nil, enabled[2])
    }
    row("loop: source0 ping iteration", loop.pingPongNs, base?.loop.pingPongNs, enabled.count == 5 ? enabled[3] : nil)
    row("loop: perform-block", loop.blockNs, base?.loop.blockNs, enabled.count == 5 ? enabled[4] : nil)
    if base != nil {
        row("  ping, compiled out multi-threaded", loop.pingPongNs, baseLoopMT.pingPongNs, nil)
        row("  block, compiled out multi-threaded", loop.blockNs, baseLoopMT.blockNs, nil)
    }
    row("process start-up, no daemon (µs)", startupUs, baseStartupUs, nil)
    row("  same, ..._WITHOUT_BADDR_STATEDUMP=1", startupNoBaddrUs, baseStartupUs, nil)
    if let b = base {
        print("")
        print(String(format: "loop overhead of compiled-in, unrecorded tracing: ping %+.2f %%, block %+.2f %%",
                     (loop.pingPongNs / b.loop.pingPongNs - 1) * 100, (loop.blockNs / b.loop.blockNs - 1) * 100))
        print(String(format: "  against a multi-threaded compiled-out process:   ping %+.2f %%, block %+.2f %%",
                     (loop.pingPongNs / baseLoopMT.pingPongNs - 1) * 100, (loop.blockNs / baseLoopMT.blockNs - 1) * 100))
    }
}
