import ArgumentParser
import CTFReader
import Dispatch
import Foundation
import LTTngControl
import RLAnalysis
#if canImport(Glibc)
import Glibc
#endif

/// `rltrace record -- COMMAND…`: records a program's run loops with no LTTng set-up;
/// `rltrace record --pid PID,… | --all`: records programs already running (Attach.swift).
struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Run a program under an LTTng session recording its run loops (or attach to running ones), and keep the trace.",
        usage: """
        rltrace record [--on-hang[=THRESHOLD]] [<options>] -- COMMAND [ARG...]
          rltrace record (--pid PID,... | --all) [--on-hang[=THRESHOLD]] [...]
        """,
        discussion: """
        Creates an LTTng session, enables the `runloop` provider, runs COMMAND, then stops and destroys the session and prints where the trace is with a short summary. With no reachable session daemon, a private one is started (temporary LTTNG_HOME) and stopped afterwards. Ctrl-C stops the program and still keeps the trace. The exit status is the program's.

        Examples:
          rltrace record -- ./my-service --port 8080
          rltrace record -o /tmp/trace --context perf:thread:task-clock -- ./service
          rltrace record --snapshot -- ./service
          rltrace record --on-hang=100ms -o DIR -- ./service
          rltrace record --pid 4242 --duration 30s -o /tmp/trace
          rltrace record --all --on-hang 250ms -o net://collector

        By default no context is added to the events: each loop's process and thread and each item's name are described once (`loop_info`, `item_info`, re-described every second and after each hang, so a snapshot still names them), and the program's hang watchdog reads the CPU time of every long callout (`callout_cpu`), so the report still tells a hang or a slow callout that computed from one that blocked (docs/tracepoints.md, "Constant pools"). --context adds LTTng contexts to every event, e.g. perf:thread:task-clock for the CPU time of every callout (one read(2) per event: about 2 µs per callout, docs/benchmarks.md). Every runloop event is recorded but runloop:timer_armed (a timer's re-scheduling, which no report reads; --events 'runloop:*' records it too).

        --snapshot is a flight recorder that keeps only the last buffers when the program ends. --on-hang records a snapshot per hang instead (docs/hangs.md): the program's hang watchdog (RLTRACE_HANG_THRESHOLD, set to the threshold) reports each hang with stack samples, and each hang leaves one snapshot (a trace in a subdirectory of DIR) holding the seconds before it; `rltrace hangs DIR` reads them all. The threshold follows --on-hang as --on-hang=100ms or --on-hang 100ms (default 250ms).

        The state dump events (lttng_ust_statedump:*, lttng_ust_lib:*: which binary is mapped where) are recorded with runloop:* so that rltrace can symbolize stack samples. -o takes a local directory (its parent must exist) or a relay daemon's URL, net://HOST[:CONTROL_PORT[:DATA_PORT]] (as `lttng create --set-url`): the trace, or each hang's snapshot, is then written on the relay daemon's host below its output directory (HOST/SESSION-DATE-TIME/…).

        --pid and --all attach to RunLoopCore programs already running (docs/production.md): no program follows `--`. They record through the host's session daemon (the one `lttng` reaches: root's, or LTTNG_HOME's), which every LTTng-UST program registers with when it starts; --pid records only those processes (lttng track --vpid), --all every program, those that start later included. Recording ends on Ctrl-C or SIGTERM, after --duration, or (--pid) when every process has exited; the session is then stopped and destroyed, the trace kept, and the programs run on untraced. With --on-hang the watchdog is the programs' own (RLTRACE_HANG_THRESHOLD when they started, 250ms by default): each hang it reports that lasted THRESHOLD or more takes a snapshot.
        """
    )

    @Option(name: .shortAndLong, help: "Where to write the trace (default: ./rltrace-YYYYmmdd-HHMMSS).")
    var output: String?
    @Flag(help: "Snapshot mode: record into memory and keep only the last buffers when the program ends.")
    var snapshot = false
    @Option(help: "Comma-separated LTTng context fields to add to every event, e.g. vpid,vtid,procname or perf:thread:task-clock (default: none).")
    var context: String?
    @Option(help: "Event pattern to enable (default: runloop:* but runloop:timer_armed, a timer's re-scheduling, which no report reads; --events 'runloop:*' records it too). With --on-hang, what a hang's snapshot needs is recorded as well: runloop:hang_*, callout_cpu, loop_info, item_info.")
    var events: String?
    @Flag(help: "Do not print the summary at the end.")
    var quiet = false
    @Flag(help: "Write into the output directory even if it already holds a trace.")
    var force = false
    @Flag(name: .customLong("on-hang"),
          help: ArgumentHelp("Flight recorder: record a snapshot each time the program's watchdog reports a hang of at least the threshold: --on-hang=THRESHOLD or --on-hang THRESHOLD (default 250ms).", valueName: "threshold"))
    var onHangFlag = false
    /// The threshold after `--on-hang` (`--on-hang=X` reaches here as `--on-hang X`: ``splittingOnHangValue(_:)``).
    @Argument(help: ArgumentHelp("With --on-hang: the hang threshold (e.g. 100ms).", valueName: "threshold", visibility: .hidden))
    var onHangThreshold: String?
    @Option(help: "With --on-hang: ring buffer per CPU kept for each snapshot (e.g. 4M, 512K).") var buffer: String?
    @Option(help: "With --on-hang: the most snapshots taken (one per hang); later hangs are not recorded.") var maxSnapshots: Int?
    @Option(help: ArgumentHelp("Attach to these running processes (comma-separated pids) instead of starting a program.", valueName: "pid,..."))
    var pid: String?
    @Flag(help: "Attach to every program of the session daemon: those running and those that start while recording.")
    var all = false
    @Option(help: "With --pid or --all: stop recording after this long (e.g. 30s, 10m); default: until Ctrl-C or SIGTERM.")
    var duration: String?
    @Argument(parsing: .postTerminator, help: "The program and its arguments (after `--`).")
    var command: [String] = []

    /// Whether `record` attaches to running programs (`--pid`, `--all`) instead of starting one.
    var attaches: Bool { pid != nil || all }

    /// Prints the contexts a recording adds by default (``defaultContexts()``), comma-separated, or
    /// `none`, and exits: what scripts/bench-tracing.sh measures "as rltrace records" with.
    @Flag(help: .hidden) var printDefaultContexts = false

    /// Whether `--on-hang` was given (with or without a threshold).
    var onHangGiven: Bool { onHangFlag }

    func validate() throws {
        if printDefaultContexts { return }
        if command.isEmpty && !attaches {
            throw ValidationError("give the program to run after `--` (rltrace record -- ./service), or attach to running ones with --pid PID[,PID...] or --all")
        }
        if !command.isEmpty && attaches {
            throw ValidationError("\(pid != nil ? "--pid" : "--all") attaches to programs already running; `-- \(command[0])` starts one: give one or the other")
        }
        if pid != nil && all { throw ValidationError("--pid and --all: choose one (--all records every program, those given included)") }
        if let p = pid { _ = try parsePIDList(p) }
        if let d = duration {
            guard attaches else { throw ValidationError("--duration applies to --pid and --all (a program run after `--` ends the recording when it exits)") }
            guard try parseThreshold(d, "--duration") > 0 else { throw ValidationError("--duration must be longer than 0") }
        }
        if let t = onHangThreshold {
            guard onHangFlag else { throw ValidationError("unexpected argument \(t.debugDescription) (a threshold follows --on-hang; the program follows `--`)") }
            _ = try parseThreshold(t, "--on-hang")
        }
        if onHangGiven {
            if snapshot { throw ValidationError("--on-hang and --snapshot are two different recorders: choose one") }
            if let m = maxSnapshots, m < 1 || m > 1000 { throw ValidationError("--max-snapshots must be 1…1000") }
            if let b = buffer {
                guard let n = parseSize(b), n >= 16384 else { throw ValidationError("--buffer: cannot read the size \(b.debugDescription) (e.g. 4M, 512K; at least 16K)") }
            }
        } else if buffer != nil || maxSnapshots != nil {
            throw ValidationError("--buffer and --max-snapshots apply to the flight recorder (--on-hang)")
        }
    }

    /// The flight recorder's settings from the options.
    func flightRecorderSettings() throws -> FlightRecorderSettings {
        let threshold = onHangThreshold ?? "250ms"
        // The ring per CPU, in four sub-buffers of a power of two (LTTng's rule) of at least 4 KiB.
        let total = buffer.flatMap(parseSize) ?? 4 << 20
        var sub = 4096
        while sub * 4 < total { sub <<= 1 }
        return FlightRecorderSettings(threshold: threshold, thresholdNs: try parseThreshold(threshold, "--on-hang"),
                                      subbufferSize: sub, subbufferCount: 4, maxSnapshots: maxSnapshots ?? 10,
                                      events: RecordedEvents(option: events))
    }

    func run() throws {
        if printDefaultContexts {
            let c = defaultContexts()
            writeStdout((c.isEmpty ? "none" : c.joined(separator: ",")) + "\n")
            return
        }
        let out = try recordOutput(output ?? defaultTraceDirectory())
        try checkRelayDaemonAnswers(out)
        if !force, let dir = out.localDirectory, holdsTrace(dir.path) {
            warn("rltrace: \(dir.path) already holds a trace; choose another -o, or --force to record into it anyway")
            throw ExitCode(2)
        }
        let contexts = context.map { $0.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) } } ?? defaultContexts()
        if attaches {
            let target: AttachTarget = try pid.map { .processes(try parsePIDList($0)) } ?? .all
            let limit = try duration.map { try parseThreshold($0, "--duration") }
            if onHangGiven {
                try recordAttachedOnHang(target, output: out, settings: try flightRecorderSettings(), contexts: contexts, durationNs: limit, announce: !quiet)
            } else {
                try recordAttached(target, output: out, snapshot: snapshot, contexts: contexts, events: RecordedEvents(option: events), durationNs: limit, announce: !quiet)
            }
            return
        }
        guard resolveCommand(command[0]).contains("/"), access(resolveCommand(command[0]), X_OK) == 0 else {
            warn("rltrace: cannot run \(command[0]): no such program (not found on PATH, or not executable); nothing recorded")
            throw ExitCode(127)
        }
        if onHangGiven {
            let status = try recordOnHang(command, output: out, settings: try flightRecorderSettings(), contexts: contexts, announce: !quiet)
            if status != 0 { throw ExitCode(status) }
            return
        }
        let status = try recordProgram(command, output: out, snapshot: snapshot, contexts: contexts, events: RecordedEvents(option: events), announce: !quiet)
        try finishSummary(output: out, contexts: contexts, quiet: quiet)
        if status != 0 { throw ExitCode(status) }
    }
}

/// The session daemon to record with: the one reachable (the user's own), else a private one
/// started here (the caller stops it), with the environment the traced program needs to find it.
/// Exit 6 when none can be had.
func reachSessionDaemon(announce: Bool) throws -> (PrivateSessionDaemon?, LTTngCLI, [String: String]) {
    do {
        if LTTngCLI.ambient.isSessionDaemonReachable() { return (nil, .ambient, ProcessInfo.processInfo.environment) }
        if announce { warn("rltrace: no session daemon reachable; starting a private one") }
        let d = try PrivateSessionDaemon.start()
        return (d, d.cli, d.applicationEnvironment)
    } catch {
        warn("rltrace: cannot start a session daemon: \(error)")
        throw ExitCode(6)
    }
}

/// The environment of a program `rltrace` starts and traces (`record -- PROGRAM`, `--on-hang`,
/// `top -- COMMAND`): `env` with `LTTNG_UST_REGISTER_TIMEOUT` (unless set) at
/// ``programRegisterTimeoutMs``. lttng-ust holds a program's start at most that long for the session
/// daemon to register it and set up its buffers, then runs it on untraced until they come — 3 s
/// by default, after which a program started on a loaded machine loses its first events, counted
/// nowhere (docs/production.md, "A program's first events"). The session was set up just before the
/// program starts, so the daemon is there and answering: the wait is bounded only for a daemon that
/// hangs.
func tracedProgramEnvironment(_ env: [String: String]) -> [String: String] {
    var e = env
    if e["LTTNG_UST_REGISTER_TIMEOUT"] == nil { e["LTTNG_UST_REGISTER_TIMEOUT"] = String(programRegisterTimeoutMs) }
    return e
}

/// How long a program `rltrace` starts waits at most for its registration (ms): see
/// ``tracedProgramEnvironment(_:)``.
let programRegisterTimeoutMs = 60_000

/// This host's name as the session daemon sends it to a relay daemon (gethostname(2)).
func localHostName() -> String {
    var buf = [CChar](repeating: 0, count: 256)
    guard gethostname(&buf, buf.count - 1) == 0 else { return "HOST" }
    return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func defaultTraceDirectory() -> String {
    let f = DateFormatter()
    f.dateFormat = "yyyyMMdd-HHmmss"
    return FileManager.default.currentDirectoryPath + "/rltrace-" + f.string(from: Date())
}

/// Records `command` into `output`; returns the program's exit status (128+signal if killed).
func recordProgram(_ command: [String], output: RecordOutput, snapshot: Bool, contexts: [String], events: RecordedEvents,
                   announce: Bool) throws -> Int32 {
    let (daemon, cli, env) = try reachSessionDaemon(announce: announce)
    defer { daemon?.stop() }
    let recording = try startRecordingSession(output: output, snapshot: snapshot, contexts: contexts, events: events, processes: [], cli: cli)

    // Run the program; Ctrl-C goes to it, and we keep the trace.
    let p = Process()
    p.executableURL = URL(fileURLWithPath: resolveCommand(command[0]))
    p.arguments = Array(command.dropFirst())
    p.environment = tracedProgramEnvironment(env)
    var status: Int32 = 0
    do {
        // Handlers (unlike an inherited SIG_IGN) are reset by exec: install them before the spawn so
        // the program starts with the default actions even when rltrace's parent ignores SIGINT.
        installSignalForwarding()
        try p.run()
        signalTarget = p.processIdentifier
        p.waitUntilExit()
        status = p.terminationReason == .uncaughtSignal ? 128 + p.terminationStatus : p.terminationStatus
    } catch {
        warn("rltrace: cannot run \(command[0]): \(error.localizedDescription)")
        status = 127
    }
    signalTarget = 0
    restoreDefaultSignals()
    finishRecordingSession(recording, output: output, events: events, announce: announce)
    return status
}

/// `record`'s session (not the flight recorder's) as a plan: the `runloop` channel recording
/// `events` with `contexts`, then, when `events` records the `runloop` provider, LTTng-UST's
/// state dump in a channel of its own (which binary is mapped where in each process, so that
/// stack samples can be symbolized from the trace alone), limited to `processes` when not empty.
func recordingPlan(output: RecordOutput, snapshot: Bool, contexts: [String], events: RecordedEvents, processes: [Int32]) -> RecordingPlan {
    RecordingPlan(sessionName: "rltrace-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", destination: output.destination,
                  snapshotMode: snapshot, channels: recordingChannels(contexts: contexts, events: events), trackedProcesses: processes)
}

/// The channels `record` records (and `top -- COMMAND` too): the `runloop` channel recording
/// `events` with `contexts`, then, when `events` records the `runloop` provider, LTTng-UST's
/// state dump in a channel of its own.
func recordingChannels(contexts: [String] = defaultContexts(), events: RecordedEvents = .standard) -> [RecordingChannel] {
    let ctx = contexts.filter { !$0.isEmpty }
    var channels = [RecordingChannel(name: "runloop", eventPatterns: events.patterns, excludedEvents: events.excluded, contexts: ctx)]
    if events.pattern.contains("runloop") { channels.append(.statedump(alongside: ctx)) }
    return channels
}

/// The events `record`, `record --on-hang` and `top` enable in the `runloop` channel: `--events`'
/// pattern as given, else ``standard``.
struct RecordedEvents: Equatable {
    /// The pattern (`lttng enable-event` syntax).
    var pattern: String
    /// Events the pattern matches that are left out (`enable-event --exclude`).
    var excluded: [String] = []
    /// Further patterns enabled next to it (the flight recorder's hang events).
    var extra: [String] = []

    /// The default: every `runloop` event but `timer_armed` — a timer's re-scheduling, one event a
    /// request for a service that re-arms an idle timer per request (docs/benchmarks.md, "The whole
    /// service"), which no report reads: a late timer is measured from `timer_entry`'s own
    /// scheduled time.
    static let standard = RecordedEvents(pattern: "runloop:*", excluded: ["runloop:timer_armed"])

    /// `--events`: the pattern given, nothing excluded; none given: ``standard``.
    init(option: String?) { self = option.map { RecordedEvents(pattern: $0) } ?? .standard }
    init(pattern: String, excluded: [String] = []) { self.pattern = pattern; self.excluded = excluded }

    /// The patterns to enable, in order.
    var patterns: [String] { [pattern] + extra }

    /// Whether `event` (a full name, e.g. `runloop:hang_end`) is recorded.
    func records(_ event: String) -> Bool {
        guard !excluded.contains(event) else { return false }
        return patterns.contains { $0 == event || ($0.hasSuffix("*") && event.hasPrefix($0.dropLast())) }
    }

    /// These events and those of them a snapshot per hang must hold that they leave out: the hang's
    /// (`runloop:hang_*`: its begin, stack samples and end), the watchdog's reading of the hung
    /// callout's CPU time (`callout_cpu`: computing or blocked) and the descriptions that name its
    /// loop and item (`loop_info`, `item_info`).
    var withHangEvents: RecordedEvents {
        var e = self
        if !["runloop:hang_begin", "runloop:hang_stack", "runloop:hang_end"].allSatisfy(records) { e.extra.append("runloop:hang_*") }
        for n in ["runloop:callout_cpu", "runloop:loop_info", "runloop:item_info"] where !records(n) { e.extra.append(n) }
        return e
    }

    /// As the user reads it in a message.
    var description: String { excluded.isEmpty ? patterns.joined(separator: ", ") : "\(pattern) but \(excluded.joined(separator: ", "))" }
}

/// Creates, sets up and starts `record`'s session (``recordingPlan(output:snapshot:contexts:events:processes:)``)
/// on the daemon `cli` reaches; exit 6 (naming the failed `lttng` command) when LTTng refuses.
func startRecordingSession(output: RecordOutput, snapshot: Bool, contexts: [String], events: RecordedEvents, processes: [Int32],
                           cli: LTTngCLI) throws -> TraceRecording {
    do {
        return try recordingPlan(output: output, snapshot: snapshot, contexts: contexts, events: events, processes: processes).start(cli: cli)
    } catch {
        warn("rltrace: cannot set up the LTTng session: \(error)")
        if case .relayDaemon(let url) = output {
            warn("rltrace: is an lttng-relayd listening at \(url)? (lttng-relayd -d on the collector; its default ports are 5342 and 5343)")
        }
        throw ExitCode(6)
    }
}

/// Stops and destroys `record`'s session (a snapshot first, in snapshot mode); says where the trace went.
func finishRecordingSession(_ recording: TraceRecording, output: RecordOutput, events: RecordedEvents, announce: Bool) {
    do {
        try recording.finish()
    } catch {
        warn("rltrace: stopping the session failed (the trace may be incomplete): \(error)")
    }
    guard announce else { return }
    switch output {
    case .directory(let dir):
        if holdsTrace(dir.path) { warn("rltrace: trace written to \(dir.path)") }
        else { warn("rltrace: no trace was written to \(dir.path) (no event of \(events.description) was recorded)") }
    case .relayDaemon(let url):
        warn("rltrace: trace sent to the relay daemon at \(url) (on its host, below its output directory: \(localHostName())/\(recording.session.name)-DATE-TIME)")
    }
}

/// After `record`: a local trace recorded with a perf context LTTng could not open is an error
/// (exit 6); its summary unless `quiet`. A trace sent to a relay daemon is not on this host.
func finishSummary(output: RecordOutput, contexts: [String], quiet: Bool) throws {
    guard let dir = output.localDirectory else { return }
    try checkContextsWereAccepted(contexts, at: dir.path)
    if !quiet { printSummary(of: dir.path) }
}

/// The child that SIGINT/SIGTERM are forwarded to (0: none; restore the default actions).
nonisolated(unsafe) var signalTarget: pid_t = 0

/// Ctrl-C (and SIGTERM) go to the recorded program, not to rltrace, so the session is still stopped
/// and the trace kept. A plain sigaction handler: libdispatch signal sources never see a signal
/// whose disposition is SIG_IGN on Linux.
func installSignalForwarding() {
    // A parent may hand us signals blocked (the mask survives fork and exec): the program starts
    // with none blocked, or Ctrl-C would stay pending and the program run on, and the hang
    // watchdog's stack-capture signal (a real-time signal; test runners block those) would never
    // reach a hung thread: no stack samples.
    var set = sigset_t()
    sigemptyset(&set)
    pthread_sigmask(SIG_SETMASK, &set, nil)
    for sig in [SIGINT, SIGTERM] {
        var sa = sigaction()
        sa.__sigaction_handler.sa_handler = { sig in if signalTarget > 0 { kill(signalTarget, sig) } }
        sigemptyset(&sa.sa_mask)
        sa.sa_flags = SA_RESTART
        sigaction(sig, &sa, nil)
    }
}

func restoreDefaultSignals() {
    for sig in [SIGINT, SIGTERM] { signal(sig, SIG_DFL) }
}

func resolveCommand(_ c: String) -> String {
    if c.contains("/") { return c }
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let p = "\(dir)/\(c)"
        if access(p, X_OK) == 0 { return p }
    }
    return c
}

/// The contexts `rltrace record` adds to every event by default: none. The events identify their
/// loop (whose id names its process) and item; the constant pools describe them once, and the hang
/// watchdog reads long callouts' CPU time (docs/tracepoints.md, "Constant pools"; the costs are in
/// docs/benchmarks.md, "What recording costs").
func defaultContexts() -> [String] { [] }

extension RecordOutput {
    /// The same place as LTTngControl's ``RecordingDestination``.
    var destination: RecordingDestination {
        switch self {
        case .directory(let d): return .directory(d)
        case .relayDaemon(let u): return .relayDaemon(u)
        }
    }
}

/// LTTng accepts a perf counter context it cannot open in the traced program, which then records
/// nothing: a trace with metadata and no event, recorded with a perf context, is that refusal.
func checkContextsWereAccepted(_ contexts: [String], at path: String) throws {
    let perf = contexts.filter { $0.hasPrefix("perf:") }
    guard !perf.isEmpty, holdsTrace(path) else { return }
    // A `runloop` event (the state dump's channel has no perf context: its events say nothing).
    if let set = try? CTFTraceSet(paths: [path]) {
        var it = set.makeMergedIterator()
        while (try? it.next()) == true {
            if it.withCurrent({ $0.eventClasses[$0.eventClassIndex].name.hasPrefix("runloop:") }) { return }
        }
    }
    warn("rltrace: no event was recorded: LTTng could not open the context \(perf.joined(separator: ", ")) in the program (a perf counter this kernel or machine does not provide?); record without it (leave out --context)")
    throw ExitCode(6)
}

/// Whether a CTF trace (a `metadata` file) lies below `path`.
func holdsTrace(_ path: String) -> Bool {
    guard let e = FileManager.default.enumerator(atPath: path) else { return false }
    for case let f as String in e where (f as NSString).lastPathComponent == "metadata" { return true }
    return false
}

/// A few lines on what the trace holds.
func printSummary(of path: String) {
    do {
        let r = try analyze(paths: [path])
        var o = "summary: \(r.trace.runloopEvents) runloop events, \(r.loops.count) loop\(r.loops.count == 1 ? "" : "s")"
        let hangs = r.loops.reduce(0) { $0 + $1.hangs.count }, spins = r.loops.reduce(0) { $0 + $1.spins.count }
        o += ", \(r.loops.reduce(0) { $0 + $1.iterations }) iterations, \(hangs) hang\(hangs == 1 ? "" : "s"), \(spins) spin\(spins == 1 ? "" : "s")"
        if r.trace.discardedEvents > 0 { o += ", \(r.trace.discardedEvents) events discarded" }
        writeStdout(o + "\nnext: rltrace report \(path)\n")
    } catch let e as AnalysisError {
        writeStdout("summary: \(e)\n")
    } catch {
        writeStdout("summary: \(error)\n")
    }
}
