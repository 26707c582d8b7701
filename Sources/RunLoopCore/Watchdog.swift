#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization
import RunLoopSchema
import RunLoopTracing

// The hang watchdog (docs/hangs.md): one thread per process watches every loop through one word each
// loop already keeps up to date on its own thread, and reports a loop stuck in one callout (or in
// its own code) past a threshold as `runloop:hang_begin`, samples the stuck thread's stack during
// the hang (`runloop:hang_stack`, from a signal handler on that thread) and closes it with
// `runloop:hang_end`. Design, precision and costs: docs/tracepoints.md, "Hangs".
//
// What the loop's thread does for it (all relaxed atomic stores, plain `mov`s on x86-64 and `str`
// on arm64; no lock, no system call, no clock read):
//   - each callout trampoline stores the callout's word before the callout and restores the
//     enclosing word after it (RunAlgorithm.swift, "Trampolines");
//   - a run stores "in the loop's own code" on entry and restores the enclosing word on exit (a run
//     nested in a callout gives the callout back its word), and marks "asleep" around the wait.
// The watchdog reads that word and the iteration counter every `threshold / 4`: the same pair seen
// for a threshold's worth of ticks is a hang.

/// The watch word of a loop (``RLRunLoop/watchWord``): what the loop's thread is doing.
///
/// Bits 61–63: the state — 0 idle (not running, or asleep in its wait), 1–6 in a callout of
/// ``RLCalloutKind`` raw value + 1, 7 in the loop's own code between callouts. Bits 48–60: the
/// low 13 bits of the loop's callout counter at the callout's start (two consecutive callouts of one
/// item differ). Bits 0–47: the item's id (0 for the main queue). The word 0 means "never ran"
/// (not yet known to the watchdog); an idle registered loop holds ``idle``.
enum Watch {
    static let idle: UInt64 = 1
    static let loop: UInt64 = 7 << 61
    static let itemMask: UInt64 = 0xFFFF_FFFF_FFFF

    @inline(__always) static func callout(_ kind: RLCalloutKind, seq: UInt32, item: UInt64) -> UInt64 {
        (UInt64(kind.rawValue &+ 1) << 61) | (UInt64(seq & 0x1FFF) << 48) | (item & itemMask)
    }
    @inline(__always) static func state(_ word: UInt64) -> UInt64 { word >> 61 }
    /// The callout kind of a word in a callout; nil in the loop's own code.
    static func kind(_ word: UInt64) -> RLCalloutKind? {
        let s = state(word)
        return s >= 1 && s <= 6 ? RLCalloutKind(rawValue: UInt8(s - 1)) : nil
    }
}

// MARK: - The loop's side (hooks called from RunAlgorithm.swift)

extension RLRunLoop {
    /// Before a callout: publishes the callout (kind, sequence, item) and returns the enclosing word
    /// for ``watchRestore(_:)`` (one relaxed load, one relaxed store).
    @inline(__always) func watchCalloutBegin(_ kind: RLCalloutKind, _ item: UInt64) -> UInt64 {
        let outer = watchWord.load(ordering: .relaxed)
        watchWord.store(Watch.callout(kind, seq: calloutCount, item: item), ordering: .relaxed)
        return outer
    }

    /// After a callout or a run: gives back the enclosing word (one relaxed store).
    @inline(__always) func watchRestore(_ word: UInt64) {
        watchWord.store(word, ordering: .relaxed)
    }

    /// At a run's entry: "in the loop's own code"; returns the enclosing word (idle, or the callout
    /// a nested run is called from). A loop's first run makes it known to the watchdog.
    @inline(__always) func watchRunBegin() -> UInt64 {
        var outer = watchWord.load(ordering: .relaxed)
        if outer == 0 { outer = RLHangWatchdog.register(self) }
        watchWord.store(Watch.loop, ordering: .relaxed)
        return outer
    }

    /// Around the wait of a pass that sleeps: asleep is not hung.
    @inline(__always) func watchAsleep(_ asleep: Bool) {
        watchWord.store(asleep ? Watch.idle : Watch.loop, ordering: .relaxed)
    }

    /// Takes the loop's lock from the watchdog's thread without blocking on it: false after ~1 ms
    /// of tries (the loop may hold it, or be hung holding it).
    fileprivate func lockBriefly() -> Bool {
        var tries = 0
        while !lock.tryLock() {
            tries += 1
            if tries > 10 { return false }
            usleep(100)
        }
        return true
    }

    /// The name of the item a hang is in (observers, sources and timers are found in the loop's
    /// modes by id; a block has left the queue when it runs, so only a named block entered as its
    /// pooled name's id has one, the pool's; the main queue has none).
    /// Called on the watchdog's thread. Never blocks on the loop's lock: gives up after ~1 ms.
    fileprivate func watchItemName(_ kind: RLCalloutKind, _ item: UInt64) -> String {
        if kind == .block { return RLBlockNames.name(of: item) ?? "" }
        guard kind != .mainQueue, lockBriefly() else { return "" }
        defer { lock.unlock() }
        func matches(_ id: UInt64) -> Bool { id & Watch.itemMask == item }
        for m in modes.values {
            switch kind {
            case .observer: if let o = m.observers.first(where: { matches($0.id) }) { return o.name ?? "" }
            case .source0: if let s = m.sources0.first(where: { matches($0.id) }) { return s.name ?? "" }
            case .source1: if let s = m.sources1.values.first(where: { matches($0.id) }) { return s.name ?? "" }
            case .timer: if let t = m.timers.liveTimers().first(where: { matches($0.id) }) { return t.name ?? "" }
            case .mainQueue, .block: return ""
            }
        }
        return ""
    }
}

extension RLRunLoop {
    /// Describes every item of every mode (`runloop:item_info`, one per item and mode) and the loop
    /// itself (`runloop:loop_info`): the constant pools a trace needs to name what its callout
    /// events identify by id only (docs/tracepoints.md, "Constant pools"). Called on the
    /// watchdog's thread; never blocks on the loop's lock: false when it could not take it (the
    /// next refresh tries again).
    fileprivate func describeForPools() -> Bool {
        RLTrace.loopInfo(loop: id, pid: getpid(), tid: threadID, procname: RLRunLoop.processName(), threadName: watchedThreadName)
        guard RLTrace.isEnabled(.itemInfo) else { return true }
        guard lockBriefly() else { return false }
        defer { lock.unlock() }
        for (mode, m) in modes {
            let name = mode.rawValue
            for o in m.observers { RLTrace.itemInfo(loop: id, kind: .observer, item: o.id, order: Int64(o.order), name: o.name ?? "", mode: name) }
            for s in m.sources0 { RLTrace.itemInfo(loop: id, kind: .source0, item: s.id, order: Int64(s.order), name: s.name ?? "", mode: name) }
            for s in m.sources1.values { RLTrace.itemInfo(loop: id, kind: .source1, item: s.id, order: Int64(s.order), name: s.name ?? "", mode: name) }
            for t in m.timers.liveTimers() { RLTrace.itemInfo(loop: id, kind: .timer, item: t.id, order: Int64(t.order), name: t.name ?? "", mode: name) }
        }
        return true
    }
}

// MARK: - The watchdog

/// The process's hang watchdog: reports a run loop stuck in one callout (or in its own code) for
/// longer than ``threshold`` as `runloop:hang_begin`, samples the stuck thread's stack during the
/// hang (`runloop:hang_stack`) and reports its end (`runloop:hang_end`). See docs/tracepoints.md,
/// "Hangs".
///
/// It costs nothing unless a tracing session records one of those events: its thread starts with
/// the first run of any loop and, while no session records them, only checks that every 200 ms. The
/// capture signal's handler is installed the first time a session records them. Built with
/// `RLTRACE_DISABLED=1`, there is no watchdog at all.
public enum RLHangWatchdog {
    /// How long a loop must be stuck before it is reported: `RLTRACE_HANG_THRESHOLD` from the
    /// environment (e.g. `250ms`, `1s`, `1.5s`, `500us`; a bare number is milliseconds), else 250 ms.
    /// Setting it takes effect at the watchdog's next tick. Values below 4 ms are raised to 4 ms.
    public static var threshold: Duration {
        get { .nanoseconds(Int64(thresholdNs.load(ordering: .relaxed))) }
        set {
            let c = newValue.components
            let ns = max(0, c.seconds) &* 1_000_000_000 &+ c.attoseconds / 1_000_000_000
            thresholdNs.store(UInt64(max(4_000_000, ns)), ordering: .relaxed)
        }
    }

    /// Whether the watchdog watches (default true; `RLTRACE_HANG_THRESHOLD=off` or `0` makes it
    /// false, and then its thread is not even started). Set false to stop watching (open hangs are
    /// closed); true again to resume.
    public static var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set {
            enabled.store(newValue, ordering: .relaxed)
            #if !RLTRACE_DISABLED
            if newValue, !loops.withLock({ $0.isEmpty }), !started.exchange(true, ordering: .acquiringAndReleasing) { startThread() }
            #endif
        }
    }

    /// At most this many stacks are sampled per hang (the first when the hang is reported, then
    /// one every ``threshold`` while it lasts).
    public static let maxSamplesPerHang = 8

    /// How many stack-capture signals this process has sent (a diagnostic: 0 while no session
    /// records `runloop:hang_stack`).
    public static var signalsSent: UInt64 {
        #if RLTRACE_DISABLED
        return 0
        #else
        return RLHangSampler.signalsSent
        #endif
    }

    /// How many hangs this process has reported (the last `hang_id` given).
    public static var hangsReported: UInt64 { nextHangID.load(ordering: .relaxed) }

    /// The signal number the stack capture uses (by default SIGRTMAX − 5, i.e. 59 on Linux; see
    /// docs/tracepoints.md); nil until a session first records the hang events, or if every
    /// candidate signal already had a handler. `RLTRACE_HANG_SIGNAL=N` in the environment picks N.
    public static var signalNumber: Int32? {
        let s = signal.load(ordering: .relaxed)
        return s > 0 ? s : nil
    }

    /// Parses a threshold as `RLTRACE_HANG_THRESHOLD` takes it: a decimal number with a unit `ns`,
    /// `us` (or `µs`), `ms` or `s`, or without unit in milliseconds. nil if malformed or negative.
    public static func parseThreshold(_ text: String) -> Duration? {
        func trimmed(_ s: Substring) -> Substring {
            var a = s
            while a.first == " " || a.first == "\t" { a.removeFirst() }
            while a.last == " " || a.last == "\t" { a.removeLast() }
            return a
        }
        let t = trimmed(text[...])
        let units: [(String, Double)] = [("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)]
        var number = t, scale = 1e6
        for (u, f) in units where t.hasSuffix(u) {
            number = t.dropLast(u.count)
            scale = f
            break
        }
        guard let v = Double(String(trimmed(number))), v >= 0, v.isFinite, v * scale < 9e18 else { return nil }
        return .nanoseconds(Int64(v * scale))
    }

    // MARK: internals

    private static let thresholdNs = Atomic<UInt64>(initialThresholdNs.ns)
    private static let enabled = Atomic<Bool>(initialThresholdNs.on)
    private static let nextHangID = Atomic<UInt64>(0)
    private static let signal = Atomic<Int32>(0)
    private static let started = Atomic<Bool>(false)
    /// The process's exit (``flushAtExit()``): 0 running, 1 asked the thread for its last look, 2 done.
    private static let exitState = Atomic<Int>(0)
    /// Wakes the thread's sleep early (an eventfd; -1 until the thread starts).
    private static let wakeFD = Atomic<Int32>(-1)
    /// The process the thread runs in: a child forked later inherits the exit handler, not the thread.
    private static let threadPID = Atomic<Int32>(0)
    /// How long the process's exit waits for the watchdog's last look at most.
    static let exitFlushTimeoutNs: UInt64 = 200_000_000
    private static let loops = Mutex<[WatchedLoop]>([])
    /// How often the thread checks whether a session records the hang events, while none does.
    static let idleCheckNs: UInt64 = 200_000_000
    /// How often the constant pools are described again while a session records them
    /// (`RLTRACE_POOL_PERIOD`, e.g. `500ms`; default 1 s).
    static let poolPeriodNs: UInt64 = {
        guard let p = getenv("RLTRACE_POOL_PERIOD"), let d = parseThreshold(String(cString: p)) else { return 1_000_000_000 }
        let c = d.components
        return UInt64(max(10_000_000, c.seconds * 1_000_000_000 + c.attoseconds / 1_000_000_000))
    }()
    /// The watchdog's tick while a session records `callout_cpu`: a callout of twice this is
    /// read at least once (the report's slow-callout threshold is 10 ms).
    static let cpuTickNs: UInt64 = 5_000_000
    /// How long a capture waits for the hung thread's handler (a thread blocking the signal).
    static let captureTimeoutNs: UInt64 = 20_000_000

    private static let initialThresholdNs: (ns: UInt64, on: Bool) = {
        guard let p = getenv("RLTRACE_HANG_THRESHOLD") else { return (250_000_000, true) }
        let s = String(cString: p)
        if s == "off" || s == "0" { return (250_000_000, false) }
        guard let d = parseThreshold(s) else { return (250_000_000, true) }
        let c = d.components
        return (UInt64(max(4_000_000, c.seconds * 1_000_000_000 + c.attoseconds / 1_000_000_000)), true)
    }()

    private final class WatchedLoop: @unchecked Sendable {
        weak var loop: RLRunLoop?
        let id: UInt64
        /// The loop thread's CPU clock (`pthread_getcpuclockid`, taken on that thread), nil if
        /// unavailable: the watchdog reads the thread's CPU time with it, from its own thread.
        let cpuClock: clockid_t?
        init(_ loop: RLRunLoop) {
            self.loop = loop
            id = loop.id
            var c = clockid_t()
            cpuClock = pthread_getcpuclockid(pthread_self(), &c) == 0 ? c : nil
        }
    }

    /// A loop's first run: remembered (weakly), and the thread started if this is the first loop.
    /// Returns the idle word the loop stores.
    @inline(never)
    static func register(_ loop: RLRunLoop) -> UInt64 {
        #if !RLTRACE_DISABLED
        RLHangSampler.prepareThread()   // on the loop's thread: the capture signal must not be blocked here
        loops.withLock { $0.append(WatchedLoop(loop)) }
        if enabled.load(ordering: .relaxed), !started.exchange(true, ordering: .acquiringAndReleasing) { startThread() }
        #endif
        return Watch.idle
    }

    #if !RLTRACE_DISABLED
    /// At the process's exit (`atexit`, registered when the thread starts): the watchdog takes one
    /// last look, so that a hang that ended (or is still going on) when the program exits is
    /// closed with its `hang_end` — which is what `rltrace record --on-hang`'s trigger waits for —
    /// instead of being lost with the thread. The exit waits for it at most ``exitFlushTimeoutNs``.
    /// Tested by `FlightRecorderTests` ("a hang that ends as the program exits…").
    static func flushAtExit() {
        guard threadPID.load(ordering: .relaxed) == getpid(),
              exitState.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged else { return }
        let fd = wakeFD.load(ordering: .acquiring)
        guard fd >= 0 else { return }
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
        let deadline = rl_monotonic_ns() &+ exitFlushTimeoutNs
        while exitState.load(ordering: .acquiring) != 2 && rl_monotonic_ns() < deadline { usleep(500) }
    }

    private static func startThread() {
        threadPID.store(getpid(), ordering: .relaxed)
        if wakeFD.load(ordering: .relaxed) < 0 {
            wakeFD.store(eventfd(0, Int32(EFD_CLOEXEC)), ordering: .releasing)
            atexit { RLHangWatchdog.flushAtExit() }
        }
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attr, 256 * 1024)
        // The watchdog takes no signal meant for the application: it starts with all blocked.
        var all = sigset_t(), old = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &old)
        var t = pthread_t()
        let rc = pthread_create(&t, &attr, { _ in
            rl_set_thread_name("rl-watchdog")
            Watcher().run()
            return nil
        }, nil)
        pthread_sigmask(SIG_SETMASK, &old, nil)
        pthread_attr_destroy(&attr)
        if rc != 0 { started.store(false, ordering: .relaxed) }
    }

    /// The watchdog thread's state (touched only on that thread).
    private final class Watcher {
        struct Open { var id: UInt64; var iteration: UInt64; var samples: UInt32; var attempts: Int; var nextSample: UInt64 }
        struct Track {
            var iteration: UInt64; var word: UInt64; var firstSeen: UInt64; var hang: Open?
            /// The thread's CPU time when the state was first seen (-1: not read), and the
            /// elapsed time of the last `callout_cpu` emitted for it (0: none).
            var cpuFirst: Int64 = -1
            var cpuEmittedAt: UInt64 = 0
        }
        var tracks: [UInt64: Track] = [:]
        var installed = false

        /// When the constant pools were last described (0: not while a session recorded them).
        var poolsDescribedAt: UInt64 = 0
        var describeSoon = false

        func run() {
            while true {
                let hangs = RLHangWatchdog.isEnabled && RLTrace.isHangTraced
                let cpu = RLHangWatchdog.isEnabled && RLTrace.isEnabled(.calloutCpu)
                let pools = RLTrace.isEnabled(.loopInfo) || RLTrace.isEnabled(.itemInfo)
                if !hangs && !cpu && !pools {
                    closeAll(now: rl_monotonic_ns())
                    poolsDescribedAt = 0
                    RLBlockNames.forgetDescriptions()
                    sleep(ns: RLHangWatchdog.idleCheckNs)
                    continue
                }
                if hangs && !installed { install() }
                let threshold = RLHangWatchdog.thresholdNs.load(ordering: .relaxed)
                if hangs || cpu {
                    tick(threshold: threshold, hangs: hangs, cpu: cpu)
                } else {
                    closeAll(now: rl_monotonic_ns())
                }
                // The pools: as soon as a session records them (it has just started, or a view
                // joined), every period, and right after a hang began (a snapshot follows).
                let now = rl_monotonic_ns()
                if pools && (poolsDescribedAt == 0 || describeSoon || now &- poolsDescribedAt >= RLHangWatchdog.poolPeriodNs) {
                    describeSoon = !describePools()
                    poolsDescribedAt = now
                } else if !pools {
                    poolsDescribedAt = 0
                    RLBlockNames.forgetDescriptions()
                }
                var period: UInt64 = RLHangWatchdog.idleCheckNs
                if hangs { period = min(period, max(1_000_000, threshold / 4)) }
                if cpu { period = min(period, RLHangWatchdog.cpuTickNs) }
                sleep(ns: period)
                if RLHangWatchdog.exitState.load(ordering: .acquiring) == 1 {
                    lastLook()
                    RLHangWatchdog.exitState.store(2, ordering: .releasing)
                    return
                }
            }
        }

        /// The process exits: what the loops do now ends or goes on with the hangs seen so far
        /// (one more tick), then every hang still open ends here.
        func lastLook() {
            let hangs = RLHangWatchdog.isEnabled && RLTrace.isHangTraced
            let cpu = RLHangWatchdog.isEnabled && RLTrace.isEnabled(.calloutCpu)
            if hangs || cpu { tick(threshold: RLHangWatchdog.thresholdNs.load(ordering: .relaxed), hangs: hangs, cpu: cpu) }
            closeAll(now: rl_monotonic_ns())
        }

        /// Describes every watched loop and its items, and the block-name pool; false if some
        /// loop's lock was busy.
        func describePools() -> Bool {
            let watched = RLHangWatchdog.loops.withLock { $0 }
            var all = true
            var any: UInt64?
            for w in watched { if let l = w.loop { any = any ?? l.id; if !l.describeForPools() { all = false } } }
            // The block-name pool is the process's: described once, as events of any of its loops.
            if let any { RLBlockNames.describeAll(loop: any) }
            return all
        }

        func install() {
            installed = true
            RLHangWatchdog.signal.store(RLHangSampler.installCapture(), ordering: .relaxed)
        }

        /// Sleeps `ns`, or until the process's exit wakes it (``flushAtExit()``).
        func sleep(ns: UInt64) {
            let fd = RLHangWatchdog.wakeFD.load(ordering: .acquiring)
            let end = rl_monotonic_ns() &+ ns
            while true {
                let now = rl_monotonic_ns()
                guard now < end, RLHangWatchdog.exitState.load(ordering: .acquiring) == 0 else { return }
                let left = end &- now
                // poll's timeout is in ms: whole ms by poll (woken early by the exit), the rest asleep.
                if fd < 0 || left < 1_000_000 {
                    var ts = timespec(tv_sec: Int(left / 1_000_000_000), tv_nsec: Int(left % 1_000_000_000))
                    _ = nanosleep(&ts, nil)
                    continue
                }
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&p, 1, Int32(min(left / 1_000_000, UInt64(Int32.max))))
            }
        }

        /// The thread CPU time `clock` reads now, or -1.
        func cpuTime(_ clock: clockid_t?) -> Int64 {
            guard let clock else { return -1 }
            var ts = timespec()
            guard clock_gettime(clock, &ts) == 0 else { return -1 }
            return Int64(ts.tv_sec) &* 1_000_000_000 &+ Int64(ts.tv_nsec)
        }

        func tick(threshold: UInt64, hangs: Bool, cpu: Bool) {
            let watched = RLHangWatchdog.loops.withLock { list -> [WatchedLoop] in
                list.removeAll { $0.loop == nil }
                return list
            }
            var seen = Set<UInt64>()
            for w in watched {
                guard let loop = w.loop else { continue }
                seen.insert(w.id)
                let word = loop.watchWord.load(ordering: .acquiring)
                let it = loop.iterationCounter.load(ordering: .relaxed)
                // Read after the word: a state first seen now began no later than now.
                let now = rl_monotonic_ns()
                if Watch.state(word) == 0 {
                    if let t = tracks.removeValue(forKey: w.id) { end(loop.id, t, now: now) }
                    continue
                }
                guard var t = tracks[w.id], t.word == word, t.iteration == it else {
                    // Progress (or a first look): the hang, if any, is over; start timing afresh.
                    if let t = tracks[w.id] { end(loop.id, t, now: now) }
                    var fresh = Track(iteration: it, word: word, firstSeen: now, hang: nil)
                    // In a callout: its CPU time is counted from here, in case it turns out long.
                    if cpu && Watch.kind(word) != nil { fresh.cpuFirst = cpuTime(w.cpuClock) }
                    tracks[w.id] = fresh
                    continue
                }
                let elapsed = now &- t.firstSeen
                // A callout seen on two ticks is long: its CPU time so far, at elapsed times
                // doubling (1, 2, 4… ticks), so a callout of any length gets a reading covering at
                // least half of it and at most ~log2(length / tick) events.
                if cpu, t.cpuFirst >= 0, elapsed >= 2 &* t.cpuEmittedAt, let kind = Watch.kind(word) {
                    let c = cpuTime(w.cpuClock)
                    if c >= t.cpuFirst {
                        RLTrace.calloutCPU(loop: loop.id, kind: kind, item: kind == .mainQueue ? 0 : word & Watch.itemMask,
                                           elapsedNs: elapsed, cpuNs: UInt64(c &- t.cpuFirst))
                        t.cpuEmittedAt = max(1, elapsed)
                    }
                }
                if !hangs {
                    tracks[w.id] = t
                    continue
                }
                if t.hang == nil {
                    if elapsed >= threshold { t.hang = begin(loop, t, elapsed: elapsed, threshold: threshold) }
                } else if var h = t.hang, h.attempts < RLHangWatchdog.maxSamplesPerHang, now >= h.nextSample {
                    sample(loop, &h, firstSeen: t.firstSeen, threshold: threshold)
                    t.hang = h
                }
                tracks[w.id] = t
            }
            // Loops gone since the last tick.
            let now = rl_monotonic_ns()
            for id in tracks.keys where !seen.contains(id) {
                if let t = tracks.removeValue(forKey: id) { end(id, t, now: now) }
            }
        }

        func begin(_ loop: RLRunLoop, _ t: Track, elapsed: UInt64, threshold: UInt64) -> Open {
            let id = RLHangWatchdog.nextHangID.wrappingAdd(1, ordering: .relaxed).newValue
            let kind = Watch.kind(t.word)
            let item = kind == nil ? 0 : t.word & Watch.itemMask
            RLTrace.hangBegin(loop: loop.id, iteration: t.iteration, hangID: id, kind: kind, item: item,
                              name: kind.map { loop.watchItemName($0, item) } ?? "", thresholdNs: threshold,
                              elapsedNs: elapsed, loopTid: loop.threadID)
            var h = Open(id: id, iteration: t.iteration, samples: 0, attempts: 0, nextSample: 0)
            sample(loop, &h, firstSeen: t.firstSeen, threshold: threshold)
            describeSoon = true
            return h
        }

        /// One stack sample (only while a session records `hang_stack`: otherwise no signal at all).
        func sample(_ loop: RLRunLoop, _ h: inout Open, firstSeen: UInt64, threshold: UInt64) {
            h.nextSample = rl_monotonic_ns() &+ threshold
            guard RLTrace.isEnabled(.hangStack) else { return }
            h.attempts += 1
            let n = RLHangSampler.capture(thread: loop.threadID, loop: loop.id, hangID: h.id, sample: h.samples,
                                              startNs: firstSeen, timeoutNs: RLHangWatchdog.captureTimeoutNs)
            if n >= 0 { h.samples += 1 }
        }

        func end(_ loop: UInt64, _ t: Track, now: UInt64) {
            guard let h = t.hang else { return }
            RLTrace.hangEnd(loop: loop, iteration: h.iteration, hangID: h.id, durationNs: now &- t.firstSeen, samples: h.samples)
        }

        func closeAll(now: UInt64) {
            guard !tracks.isEmpty else { return }
            for (id, t) in tracks { end(id, t, now: now) }
            tracks.removeAll()
        }
    }
    #endif
}
