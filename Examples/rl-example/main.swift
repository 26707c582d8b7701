// rl-example: a small loop-based TCP service built on RunLoopCore that uses every callout kind for
// real, with a built-in load generator and switches that inject the problems rltrace should find.
//
//   rl-example [--port N] [--duration SECONDS] [--clients N] [--requests N] [--max-load]
//              [--inject slow-callout,hang,late-timer,spin]...
//
// It runs until its work is done — the built-in load served and each injected problem made — or
// until --duration seconds have passed, whichever comes first: --duration is a maximum. Each load
// client pauses 2 ms after every reply, so N requests take at least N × 2 ms whatever the machine
// (20000 requests: 40 s); a load longer than --duration is cut there, and the last lines say so.
//
// --max-load: the clients send back to back (no pause), until --duration has passed, or, with
// --requests, until each sent N requests (--duration still a maximum); the last line is then
// `max-load requests=R wall_s=W rps=X cpu_us_per_request=C cpu_user_s=U cpu_sys_s=S`: R requests
// answered in the W seconds from the load's start to its last client's end, and the CPU time of the
// whole process (getrusage user + system, every thread: the loop, the worker and the load clients)
// over that window, per request. The whole-service benchmark reads it (docs/benchmarks.md).
//
// Protocol: newline-terminated requests over TCP. "ping" → "pong"; "compute N" → the sum 1…N,
// computed on a worker thread whose result comes back through a source0 (the network-loader hand-off).
#if canImport(Glibc)
import Glibc
#endif
import CRunLoopShims
import Dispatch
import RunLoopCore
import Synchronization

// MARK: options

struct Options {
    var port: UInt16 = 0
    var duration: Double = 2
    var clients = 4
    var requests = 200
    /// Whether --requests was given (with --max-load, without it the load runs for --duration).
    var requestsGiven = false
    var maxLoad = false
    var inject: Set<String> = []
}

func parseOptions() -> Options {
    var o = Options()
    var args = CommandLine.arguments.dropFirst()
    func value(_ flag: String) -> String {
        guard let v = args.popFirst() else { fail("\(flag) needs a value") }
        return v
    }
    while let a = args.popFirst() {
        switch a {
        case "--port": o.port = UInt16(value(a)) ?? { fail("--port takes a number 0…65535") }()
        case "--duration": o.duration = Double(value(a)) ?? { fail("--duration takes seconds") }()
        case "--clients": o.clients = Int(value(a)) ?? { fail("--clients takes a number") }()
        case "--requests": o.requests = Int(value(a)) ?? { fail("--requests takes a number") }(); o.requestsGiven = true
        case "--max-load": o.maxLoad = true
        case "--inject":
            for k in value(a).split(separator: ",").map(String.init) {
                guard ["slow-callout", "hang", "late-timer", "spin"].contains(k) else {
                    fail("unknown --inject \(k) (slow-callout, hang, late-timer, spin)")
                }
                o.inject.insert(k)
            }
        case "-h", "--help":
            print("usage: rl-example [--port N] [--duration S] [--clients N] [--requests N] [--max-load] [--inject slow-callout,hang,late-timer,spin]")
            exit(0)
        default: fail("unknown argument \(a)")
        }
    }
    return o
}

func fail(_ message: String) -> Never {
    warn(message)
    exit(2)
}

func warn(_ message: String) {
    let bytes = Array("rl-example: \(message)\n".utf8)
    _ = bytes.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count) }
}

// MARK: counters (printed at the end)

final class Stats: @unchecked Sendable {
    let counts = Mutex<[String: Int]>([:])
    func bump(_ k: String, _ n: Int = 1) { counts.withLock { $0[k, default: 0] += n } }
    /// Adds one and returns the new count.
    func increment(_ k: String) -> Int { counts.withLock { $0[k, default: 0] += 1; return $0[k]! } }
    func get(_ k: String) -> Int { counts.withLock { $0[k] ?? 0 } }
}
let stats = Stats()

/// When the injected problems happen (after the service starts) and how long they hold the loop.
enum Schedule {
    static let hang: Duration = .milliseconds(300), hangHold: Duration = .milliseconds(300)
    static let spin: Duration = .milliseconds(900), spinIterations = 200
    static let blocker: Duration = .milliseconds(1300), blockerHold: Duration = .milliseconds(40), lateBy: Duration = .milliseconds(5)
    static let slowCalloutHold: Duration = .milliseconds(50)
    /// The last injection's time: a shorter run ends before it.
    static let last: Duration = .milliseconds(1400)
}

/// What the injections did, as the program measured it, printed at the end, one line per problem:
/// `injected PROBLEM: WHAT — N×, max NS ns (MS ms)`.
final class Injected: @unchecked Sendable {
    struct Entry { var problem: String, what: String, count: Int, maxNs: Int64 }
    let entries = Mutex<[Entry]>([])
    /// Records one occurrence of `problem` measuring `ns`.
    func record(_ problem: String, _ what: String, _ ns: Int64) {
        entries.withLock { e in
            if let i = e.firstIndex(where: { $0.problem == problem }) { e[i].count += 1; e[i].maxNs = max(e[i].maxNs, ns) }
            else { e.append(Entry(problem: problem, what: what, count: 1, maxNs: ns)) }
        }
        workProgressed()
    }
    /// The problems made at least once.
    var problems: Set<String> { entries.withLock { Set($0.map(\.problem)) } }
    var lines: [String] {
        entries.withLock { $0.map { "injected \($0.problem): \($0.what) — \($0.count)×, max \($0.maxNs) ns (\(Double($0.maxNs / 1_000) / 1_000) ms)" } }
    }
}
let injected = Injected()

/// Holds the calling thread (the loop) for `d`, resuming any interrupted sleep; returns how long it
/// actually held (ns).
@discardableResult @inline(never)
func hold(_ d: Duration) -> Int64 {
    let start = RLInstant.now, end = start + d
    while RLInstant.now < end { usleep(UInt32(max(1, nsOf(end - RLInstant.now) / 1_000))) }
    return nsOf(RLInstant.now - start)
}

/// The injected hang's request path (`--inject hang`): kept out of line so a stack shows it.
@inline(never)
func dispatchRequest(holding d: Duration) -> Int64 {
    let ns = simulatedHangInRequestHandler(d)
    requestsDispatched.add(1, ordering: .relaxed)   // work after the call: not a tail call, so the frame stays
    return ns
}

/// Counters the injected request path updates *after* its calls: a call followed by work cannot
/// become a tail call, so optimized builds keep each function's frame on the stack a sample shows.
let requestsDispatched = Atomic<Int64>(0), heldInHandlers = Atomic<Int64>(0)

/// Where the injected hang spends its time (the name a hang stack shows): holds the loop for `d`.
@inline(never)
func simulatedHangInRequestHandler(_ d: Duration) -> Int64 {
    let ns = hold(d)
    heldInHandlers.add(ns, ordering: .relaxed)   // after the call: keeps this frame (see above)
    return ns
}

// MARK: the service

final class Connection {
    let fd: Int32
    let number: Int
    var buffer: [UInt8] = []
    var source: RLSource1?
    var idle: RLTimer?
    init(fd: Int32, number: Int) { self.fd = fd; self.number = number }
}

final class Service: @unchecked Sendable {
    let loop = RLRunLoop.main
    let options: Options
    let listenFD: Int32
    let port: UInt16
    var connections: [Int32: Connection] = [:]
    var nextConnection = 0
    let worker = RLWorkerThread(name: "compute-worker")
    let results = Mutex<[(Int32, String)]>([])
    var resultsReady: RLSource0!
    var resultsPerformed = 0
    var spinLeft = 0

    init(options: Options) {
        self.options = options
        let listenFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        self.listenFD = listenFD
        guard listenFD >= 0 else { fail("socket: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(listenFD, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = options.port.bigEndian
        addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let listenOK = listen(listenFD, 128) == 0
        guard rc == 0, listenOK else { fail("bind/listen on 127.0.0.1:\(options.port): \(String(cString: strerror(errno)))") }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listenFD, $0, &len) } }
        self.port = UInt16(bigEndian: addr.sin_port)
    }

    func start() throws {
        // source1: the listening socket.
        let listener = try RLSource1(fd: listenFD, interest: .read, name: "listener") { [unowned self] _, fd, _ in self.acceptAll(fd) }
        try loop.add(listener, forMode: .commonModes)

        // source0: results handed back by the compute worker (signalled from its thread).
        resultsReady = RLSource0(order: 0, name: "compute-results") { [unowned self] in
            let ready = self.results.withLock { r -> [(Int32, String)] in defer { r.removeAll() }; return r }
            for (fd, line) in ready { self.reply(fd, line) }
            // injected, a SLOW CALLOUT: every 25th perform spends 50 ms in this named callout (the
            // threshold is 10 ms); a compute request takes one perform, and at most one per client
            // is pending, so 4 clients × 100 requests (25 computes each) reach the 25th.
            self.resultsPerformed += 1
            if self.options.inject.contains("slow-callout") && self.resultsPerformed % 25 == 0 {
                injected.record("slow-callout", "source0 \"compute-results\" held the loop", hold(Schedule.slowCalloutHold))
            }
        }
        loop.add(resultsReady, forMode: .commonModes)

        // timer: a heartbeat every 100 ms.
        let heartbeat = RLTimer(fireAt: .now + .milliseconds(100), interval: .milliseconds(100), name: "heartbeat") { _ in
            stats.bump("heartbeats")
        }
        loop.add(heartbeat, forMode: .commonModes)

        // observers: autorelease-pool style bracketing, and a beforeWaiting flush.
        loop.add(RLObserver(activities: [.entry, .beforeWaiting, .exit], order: Int(Int32.min) + 1, name: "pool-push") { _, _ in }, forMode: .commonModes)
        loop.add(RLObserver(activities: .beforeWaiting, order: 1_999_000, name: "flush-writes") { _, _ in stats.bump("flushes") }, forMode: .commonModes)

        // main queue and @MainActor: a stats thread posts a summary every 50 ms.
        Thread.spawn(name: "stats-poster") {
            let end = RLInstant.now.advanced(bySeconds: self.options.duration)
            while RLInstant.now < end {
                usleep(50_000)
                DispatchQueue.main.async { stats.bump("main-queue-updates") }
                Task { @MainActor in stats.bump("main-actor-updates") }
            }
        }

        // Injected problems: each at its own time, far from the others, and each made by the program
        // itself, whatever the others did to the loop's timing (a late or long callout before it only
        // moves it later). The program measures what it injected and prints it at the end.
        if options.inject.contains("hang") {
            // A HANG: +300 ms, the timer holds the loop 300 ms (the threshold is 250 ms).
            // The hold happens a few frames deep, in a named function, so that the hang watchdog's
            // stack samples (`runloop:hang_stack`) show where: timer callout → dispatchRequest →
            // simulatedHangInRequestHandler → hold → usleep.
            loop.add(RLTimer(fireAt: .now + Schedule.hang, name: "hang-timer") { _ in
                injected.record("hang", "timer \"hang-timer\" held the loop", dispatchRequest(holding: Schedule.hangHold))
            }, forMode: .commonModes)
        }
        if options.inject.contains("spin") {
            // A SPIN: +900 ms (300 ms after the hang's end), the source re-signals itself 200 times, so
            // 200 iterations in a row never sleep (a spin is 100).
            spinLeft = Schedule.spinIterations
            let spinner = RLSource0(name: "spinner") { [unowned self] in
                if self.spinLeft == Schedule.spinIterations { self.spinStarted = .now }
                if self.spinLeft > 0 {
                    self.spinLeft -= 1
                    self.spinnerSource?.signal()
                    if self.spinLeft == 0 {
                        injected.record("spin", "source0 \"spinner\" re-signalled itself \(Schedule.spinIterations) times in a row",
                                        nsOf(RLInstant.now - self.spinStarted))
                    }
                }
            }
            spinnerSource = spinner
            loop.add(spinner, forMode: .commonModes)
            loop.add(RLTimer(fireAt: .now + Schedule.spin, name: "start-spin") { _ in spinner.signal() }, forMode: .commonModes)
        }
        if options.inject.contains("late-timer") {
            // A LATE TIMER: +1300 ms, "blocker" schedules "late-timer" 5 ms after the moment it actually
            // runs, then holds the loop 40 ms: the late timer fires at least 35 ms late (the threshold is
            // 10 ms), however late the blocker itself was. (A due date fixed in advance could be passed
            // by a late blocker, and fire in the same timer pass only a little late.)
            loop.add(RLTimer(fireAt: .now + Schedule.blocker, name: "blocker") { [unowned self] _ in
                let due = RLInstant.now + Schedule.lateBy
                self.loop.add(RLTimer(fireAt: due, name: "late-timer") { _ in
                    stats.bump("late-timer-fired")
                    injected.record("late-timer", "timer \"late-timer\" fired late", nsOf(RLInstant.now - due))
                }, forMode: .commonModes)
                hold(Schedule.blockerHold)
            }, forMode: .commonModes)
        }
    }
    var spinnerSource: RLSource0?
    var spinStarted = RLInstant.now

    func acceptAll(_ fd: Int32) {
        while true {
            let c = accept(fd, nil, nil)
            if c < 0 { return }
            _ = fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK)
            nextConnection += 1
            stats.bump("connections")
            let conn = Connection(fd: c, number: nextConnection)
            connections[c] = conn
            do {
                let s = try RLSource1(fd: c, interest: .read, name: "client") { [unowned self] _, fd, readiness in self.readable(fd, readiness) }
                conn.source = s
                try loop.add(s, forMode: .commonModes)
            } catch { warn("cannot watch client fd \(c): \(error)"); closeConnection(c); continue }
            // timer: per-connection idle timeout (pushed back on every request).
            let idle = RLTimer(fireAt: .now + .seconds(5), name: "idle-timeout") { [unowned self] _ in
                stats.bump("idle-timeouts"); self.closeConnection(c)
            }
            conn.idle = idle
            loop.add(idle, forMode: .commonModes)
        }
    }

    func readable(_ fd: Int32, _ readiness: RLSource1.Readiness) {
        guard let conn = connections[fd] else { return }
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = read(fd, &buf, buf.count)
        if n <= 0 {
            if n < 0 && errno == EAGAIN { return }
            closeConnection(fd)
            return
        }
        conn.idle?.setNextFireDate(.now + .seconds(5))
        conn.buffer.append(contentsOf: buf[0..<n])
        while let nl = conn.buffer.firstIndex(of: 10) {
            let line = String(decoding: conn.buffer[..<nl], as: UTF8.self)
            conn.buffer.removeSubrange(...nl)
            handle(fd, line)
        }
    }

    func handle(_ fd: Int32, _ line: String) {
        stats.bump("requests")
        if line == "ping" {
            // perform-block: the reply is written at the end of the pass.
            loop.performBlock(forMode: .commonModes, name: "reply") { [unowned self] in self.reply(fd, "pong") }
        } else if line.hasPrefix("compute ") {
            let n = Int(line.dropFirst(8)) ?? 0
            worker.perform(name: "compute") { [unowned self] in
                let sum = n * (n + 1) / 2
                self.results.withLock { $0.append((fd, "sum \(sum)")) }
                self.resultsReady.signal()
                self.loop.wakeUp()
            }
        } else {
            reply(fd, "error unknown request")
        }
    }

    func reply(_ fd: Int32, _ line: String) {
        guard connections[fd] != nil else { return }
        stats.bump("replies")
        var bytes = Array((line + "\n").utf8)
        _ = write(fd, &bytes, bytes.count)
    }

    func closeConnection(_ fd: Int32) {
        guard let conn = connections.removeValue(forKey: fd) else { return }
        conn.source?.invalidate()
        conn.idle?.invalidate()
        close(fd)
    }
}

// MARK: the load generator (plain blocking sockets on its own threads)

func runLoad(port: UInt16, clients: Int, requests: Int) {
    // --max-load: no pause, and without --requests no count: the clients stop at --duration.
    let perClient = options.maxLoad && !options.requestsGiven ? Int.max : requests
    let deadline = loadStart.advanced(bySeconds: options.duration)
    for c in 0..<clients {
        Thread.spawn(name: "load-\(c)") {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            addr.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            let ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard ok == 0 else { stats.bump("load-connect-failures"); clientFinished(); return }
            var reader = LineReader(fd: fd)
            for i in 0..<perClient {
                if options.maxLoad && RLInstant.now >= deadline { break }
                let req = i % 4 == 3 ? "compute \(i)" : "ping"
                var bytes = Array((req + "\n").utf8)
                _ = write(fd, &bytes, bytes.count)
                guard let answer = reader.next() else { stats.bump("load-broken"); break }
                let expected = i % 4 == 3 ? "sum \(i * (i + 1) / 2)" : "pong"
                stats.bump(answer == expected ? "load-ok" : "load-wrong")
                if !options.maxLoad { usleep(2_000) }
            }
            close(fd)
            stats.bump("load-clients-done")
            clientFinished()
        }
    }
}

/// When the load started and when its last client finished (ns since `loadStart`; 0 until then).
nonisolated(unsafe) var loadStart = RLInstant.now
let loadDoneNs = Atomic<Int64>(0)
/// The process's CPU time (user, system; µs) when the load started and when its last client finished.
let loadCPUStart = Mutex<(Int64, Int64)>((0, 0)), loadCPUEnd = Mutex<(Int64, Int64)>((0, 0))

/// User and system CPU time of the whole process (every thread), µs.
func processCPU() -> (Int64, Int64) {
    var u = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
    return (Int64(u.ru_utime.tv_sec) * 1_000_000 + Int64(u.ru_utime.tv_usec), Int64(u.ru_stime.tv_sec) * 1_000_000 + Int64(u.ru_stime.tv_usec))
}

/// A load client is done (or could not connect): the last one notes the time and the CPU used.
func clientFinished() {
    if stats.increment("load-clients-finished") == options.clients {
        let cpu = processCPU()
        loadCPUEnd.withLock { $0 = cpu }
        loadDoneNs.store(max(1, nsOf(RLInstant.now - loadStart)), ordering: .releasing)
    }
    workProgressed()
}

struct LineReader {
    let fd: Int32
    var pending: [UInt8] = []
    mutating func next() -> String? {
        while true {
            if let nl = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[..<nl], as: UTF8.self)
                pending.removeSubrange(...nl)
                return line
            }
            var buf = [UInt8](repeating: 0, count: 1024)
            let n = read(fd, &buf, buf.count)
            if n <= 0 { return nil }
            pending.append(contentsOf: buf[0..<n])
        }
    }
}

enum Thread {
    static func spawn(name: String, _ body: @escaping () -> Void) {
        final class Box { let f: () -> Void; let name: String; init(_ f: @escaping () -> Void, _ n: String) { self.f = f; name = n } }
        var t = pthread_t()
        let box = Unmanaged.passRetained(Box(body, name)).toOpaque()
        pthread_create(&t, nil, { p in
            let b = Unmanaged<Box>.fromOpaque(p!).takeRetainedValue()
            rl_set_thread_name(b.name)
            b.f()
            return nil
        }, box)
        pthread_detach(t)
    }
}

// MARK: main

let options = parseOptions()
// The hang watchdog ticks every threshold / 4: with its default 250 ms threshold it would notice the
// injected 300 ms hang between 250 and ~312 ms, sometimes after the hang ended. 200 ms (unless
// RLTRACE_HANG_THRESHOLD says otherwise) makes it report the hang while it lasts, with a stack.
if getenv("RLTRACE_HANG_THRESHOLD") == nil { RLHangWatchdog.threshold = .milliseconds(200) }
if !options.inject.isEmpty && Duration.seconds(options.duration) <= Schedule.last {
    warn("--duration \(options.duration) s ends before the last injected problem (at \(Double(nsOf(Schedule.last)) / 1e9) s)")
}
let service = Service(options: options)
do { try service.start() } catch { fail("cannot start: \(error)") }
let loop = RLRunLoop.main

/// The problems made at a time of their own (the slow callout comes with the load).
let scheduledProblems = options.inject.subtracting(["slow-callout"])
/// Whether the work is done: every load client finished and every scheduled problem was made.
func workDone() -> Bool {
    loadDoneNs.load(ordering: .relaxed) != 0 && scheduledProblems.isSubset(of: injected.problems)
}
/// How the run ended: "done" (the work) or "duration" (--duration passed first).
nonisolated(unsafe) var endedBy = ""
/// Signalled (from any thread) when a load client finishes or a problem is made: stops the loop
/// once the work is done.
let shutdown = RLSource0(name: "shutdown") {
    if workDone() && endedBy.isEmpty { endedBy = "done"; loop.stop() }
}
func workProgressed() {
    shutdown.signal()
    loop.wakeUp()
}
loop.add(shutdown, forMode: .commonModes)

print("rl-example: serving on 127.0.0.1:\(service.port) until the load is done (\(options.clients) clients × \(options.requests) requests\(scheduledProblems.isEmpty ? "" : " and the injected problems")) or \(options.duration) s have passed, whichever comes first; inject: \(options.inject.isEmpty ? "none" : options.inject.sorted().joined(separator: ","))")
let started = RLInstant.now
loadStart = started
do { let cpu = processCPU(); loadCPUStart.withLock { $0 = cpu } }
runLoad(port: service.port, clients: options.clients, requests: options.requests)

var iterations = 0, sleeps = 0
loop.add(RLObserver(activities: [.beforeTimers, .beforeWaiting], name: "stats") { _, a in
    if a == .beforeTimers { iterations += 1 } else { sleeps += 1 }
}, forMode: .commonModes)
// --duration is a maximum: the run stops there, done or not. (With --max-load the clients stop
// sending there themselves; the loop waits 5 s more for their last answers.)
loop.add(RLTimer(fireAt: started.advanced(bySeconds: options.duration + (options.maxLoad ? 5 : 0)), name: "duration") { _ in
    if endedBy.isEmpty { endedBy = "duration"; loop.stop() }
}, forMode: .commonModes)
if workDone() { endedBy = "done" } else {
    loop.run(mode: .default, seconds: options.duration + 10, returnAfterSourceHandled: false)
}
let elapsed = Double(nsOf(RLInstant.now - started)) / 1e9

func nsOf(_ d: Duration) -> Int64 { d.components.seconds * 1_000_000_000 + d.components.attoseconds / 1_000_000_000 }

print("""
ran \(Double(Int(elapsed * 100)) / 100) s: \(iterations) iterations, \(sleeps) sleeps
connections \(stats.get("connections")), requests \(stats.get("requests")), replies \(stats.get("replies"))
load: ok \(stats.get("load-ok")), wrong \(stats.get("load-wrong")), broken \(stats.get("load-broken")), clients done \(stats.get("load-clients-done"))/\(options.clients)
heartbeats \(stats.get("heartbeats")), main-queue updates \(stats.get("main-queue-updates")), main-actor updates \(stats.get("main-actor-updates")), flushes \(stats.get("flushes"))
""")
for line in injected.lines { print(line) }
let answered = stats.get("load-ok") + stats.get("load-wrong")
if endedBy == "done" {
    print("ended: the work was done (the load after \(Double(loadDoneNs.load(ordering: .relaxed) / 1_000_000) / 1000) s)")
} else {
    let missing = scheduledProblems.subtracting(injected.problems).sorted()
    print("ended: --duration \(options.duration) s passed before the work was done: \(answered) of \(options.clients * options.requests) requests answered\(missing.isEmpty ? "" : "; not injected: " + missing.joined(separator: ","))")
}
if options.maxLoad {
    let doneNs = loadDoneNs.load(ordering: .acquiring)
    let wall = Double(doneNs > 0 ? doneNs : nsOf(RLInstant.now - started)) / 1e9
    let start = loadCPUStart.withLock { $0 }, end = doneNs > 0 ? loadCPUEnd.withLock { $0 } : processCPU()
    let ok = stats.get("load-ok")
    let user = Double(end.0 - start.0), sys = Double(end.1 - start.1)
    /// `x` (≥ 0) in fixed point with `digits` decimals (no Foundation here: no String(format:)).
    func f(_ x: Double, _ digits: Int) -> String {
        var scale: Int64 = 1
        for _ in 0..<digits { scale *= 10 }
        let n = Int64((max(0, x) * Double(scale)).rounded())
        let frac = String(n % scale)
        return "\(n / scale)." + String(repeating: "0", count: digits - frac.count) + frac
    }
    print("max-load requests=\(ok) wall_s=\(f(wall, 6)) rps=\(f(ok > 0 ? Double(ok) / wall : 0, 1)) cpu_us_per_request=\(f(ok > 0 ? (user + sys) / Double(ok) : 0, 3)) cpu_user_s=\(f(user / 1e6, 6)) cpu_sys_s=\(f(sys / 1e6, 6))")
}
exit(stats.get("load-wrong") == 0 && stats.get("load-broken") == 0 ? 0 : 1)
