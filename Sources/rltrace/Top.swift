import ArgumentParser
import Foundation
import LTTngControl
import LTTngLive
import RLAnalysis
#if canImport(Glibc)
import Glibc
#endif

/// `rltrace top`: every run loop of a live session, refreshed every second (docs/live.md).
struct TopCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Watch run loops live: one row per loop, refreshed every second (LTTng live).",
        discussion: """
        Examples:
          rltrace top -- ./service       run it in a live session, watch its loops
          rltrace top net://HOST[:PORT]  list a relay daemon's live sessions
          rltrace top net://HOST:5344/host/HOSTNAME/SESSION
          rltrace top net://HOST --all   watch every live session there
          rltrace top --batch --count 4 --format json -- ./service

        With a program: a live session streams to a relay daemon started on free loopback ports (or --relayd), with a private session daemon when none is reachable; the program's output goes to --log (stderr with --batch); when it exits, the rest is read and a final snapshot shown, which stays on the terminal; -o DIR keeps the relay daemon's trace. A URL is babeltrace2's (the third example). JSON: docs/top-json.md.

        A row per loop: iterations/s, busy %, p50/p99 callout duration in the interval, longest callout, late timers, spins, discarded events, and a hang in progress (runloop:hang_begin, else a callout open longer than --hang-threshold). A narrow terminal drops the least important columns first (discarded events, host, thread id, p50, …); the loop, busy %, p99 and the hang column always show. Under the table: each hang's latest stack sample from the program's hang watchdog, symbolized (its innermost 12 frames; all of them in the JSON).

        Keys: s sort column, S reverse, / filter, space/p pause, q quit.

        An event is on screen at most the live period plus the interval after it happened (docs/live.md).

        \(exitCodesHelp)
        """
    )

    /// The live URLs, then (after `--`) the program and its arguments: one positional list, as
    /// ArgumentParser allows one array; `--`'s position in the command line splits it.
    @Argument(help: ArgumentHelp("Live URLs (net://HOST[:PORT][/host/HOSTNAME/SESSION]), or `--` then the program and its arguments.", valueName: "url"))
    var positional: [String] = []
    @Flag(help: "With net://HOST[:PORT]: watch every live session of that relay daemon.") var all = false
    @Flag(help: "Print snapshots instead of the full-screen view.") var batch = false
    @Option(help: "Refresh interval (e.g. 1s, 500ms).") var interval = "1s"
    @Option(help: "With --batch: stop after this many snapshots.") var count: Int?
    @Option(help: "With --batch: text or json (one JSON object per line, docs/top-json.md).") var format: Format = .text
    @Option(help: "Sort column: busy, rate, p99, worst, hang, loop.") var sort: SortKey = .busy
    @OptionGroup var selection: SelectionOptions
    @Option(help: "Show only the rows whose host, process, thread or loop id contains this text (a search of the screen, as `/` is; what is analysed is chosen by the selection options).") var filter: String?
    @Option(help: "With COMMAND: the live timer period of the session (how often data is flushed to the viewer).") var livePeriod = "100ms"
    @Option(help: "With COMMAND: stream to this relay daemon (net://HOST:CONTROL:DATA) instead of starting one.") var relayd: String?
    @Option(help: "With --relayd: its live port.") var livePort = LiveURL.defaultPort
    @Option(name: .shortAndLong, help: "With COMMAND and no --relayd: the started relay daemon writes the trace here (kept).") var output: String?
    @Flag(help: "With -o: write into the directory even if it already holds a trace.") var force = false
    @Option(help: "With COMMAND: where the program's output goes (default: a temporary file; standard error with --batch).") var log: String?
    @Flag(help: "With URLs: read the sessions from their first event (default: from now).") var fromBeginning = false
    @OptionGroup var thresholds: ThresholdOptions

    /// What follows `--` on the command line.
    var command: [String] {
        let a = CommandLine.arguments
        guard let top = a.firstIndex(of: "top"), let dd = a[(top + 1)...].firstIndex(of: "--") else { return [] }
        return Array(a[(dd + 1)...].suffix(positional.count))
    }
    /// The live URLs (before `--`).
    var urls: [String] { Array(positional.dropLast(command.count)) }

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json }

    /// The loops and callouts analysed (the pipeline's selection stage).
    var selectionFilter: EventFilter { (try? selection.filter()) ?? EventFilter() }

    func validate() throws {
        // (That neither a program nor a URL was given is said in run(): ArgumentParser reports an
        // unknown option only once validate() passes, and `top --bogus` must name --bogus.)
        if !command.isEmpty && !urls.isEmpty { throw ValidationError("give either a program after `--` or live URLs, not both") }
        let ns = try parseThreshold(interval, "--interval")
        if ns < 10_000_000 { throw ValidationError("--interval must be at least 10ms") }
        let p = try parseThreshold(livePeriod, "--live-period")
        if p < 1_000_000 { throw ValidationError("--live-period must be at least 1ms") }
        if let c = count, c < 1 { throw ValidationError("--count must be at least 1") }
        if count != nil && !batch { throw ValidationError("--count applies to --batch") }
        if format == .json && !batch { throw ValidationError("--format applies to --batch") }
        for u in urls {
            do { _ = try LiveURL(u) } catch let e as LiveError { throw ValidationError(e.description) }
        }
        if relayd != nil && output != nil { throw ValidationError("-o names where a relay daemon started by rltrace writes; with --relayd the trace is where that daemon writes") }
    }

    func run() throws {
        if command.isEmpty && urls.isEmpty {
            warn("Error: give a program after `--` (rltrace top -- ./service) or a live URL (rltrace top net://localhost)\n  See 'rltrace top --help' for more information.")
            throw ExitCode(64)
        }
        var options = TopSink.Options()
        let o = try thresholds.options()
        options.hangThresholdNs = o.hangThresholdNs
        options.lateTimerNs = o.lateTimerNs
        options.spinMinIterations = o.spinMinIterations
        let view = TopView(batch: batch, json: format == .json, sort: sort, filter: filter ?? "")
        let intervalNs = UInt64(try parseThreshold(interval, "--interval"))
        do {
            if command.isEmpty {
                let parsed = try urls.map { try LiveURL($0) }
                if parsed.count == 1, parsed[0].session == nil, !all {
                    try listSessions(parsed[0])
                    return
                }
                let sessions = try attachAll(parsed)
                let driver = TopDriver(pipelines: sessions.map { LivePipeline($0, filter: selectionFilter, options: options, intervalNs: intervalNs) }, view: view,
                                       intervalNs: intervalNs, count: count)
                try driver.run(child: nil)
            } else {
                // The program runs here: `--host` must name this host.
                var buf = [CChar](repeating: 0, count: 256)
                let here = gethostname(&buf, 255) == 0 ? String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""   // as LTTng names the host
                if !selection.host.isEmpty && !selection.host.contains(where: { globMatch($0, here) }) {
                    throw AnalysisError.emptySelection(asked: selection.host.map { "--host \($0.debugDescription)" }.joined(separator: " "),
                                                       holds: "the program, run on this host, \(here.debugDescription)")
                }
                try runCommand(options: options, view: view, intervalNs: intervalNs)
            }
        } catch let e as LiveError {
            view.restoreTerminal()
            warn("rltrace: \(e)")
            throw ExitCode(e.exitCode)
        } catch let e as AnalysisError {
            view.restoreTerminal()
            warn("rltrace: \(e)")
            throw ExitCode(e.exitCode)
        } catch let e as LTTngCommandError {
            view.restoreTerminal()
            warn("rltrace: LTTng set-up failed: \(e)")
            throw ExitCode(6)
        } catch let e as LiveRecordingError {
            view.restoreTerminal()
            warn("rltrace: LTTng set-up failed: \(e)")
            throw ExitCode(6)
        }
    }

    func listSessions(_ u: LiveURL) throws {
        let list = try LiveSession.list(host: u.host, port: u.port)
        var out = ""
        for s in list where (u.targetHost == nil || s.hostname == u.targetHost) && (selection.host.isEmpty || selection.host.contains { globMatch($0, s.hostname) }) {
            let url = LiveURL(host: u.host, port: u.port, targetHost: s.hostname, session: s.name)
            out += "\(url) (timer = \(s.liveTimer), \(s.streams) stream(s), \(s.clients) client(s) connected)\n"
        }
        if out.isEmpty { out = "no live session on the relay daemon at \(u.host):\(u.port)\n" }
        writeStdout(out)
    }

    /// Attaches to every session the URLs name (or, with --all, every live session there).
    func attachAll(_ urls: [LiveURL]) throws -> [LiveSession] {
        var out: [LiveSession] = []
        do {
            for u in urls {
                // `--host`: only the sessions of those hosts (the relay daemon names each session's host).
                let all = try LiveSession.list(host: u.host, port: u.port)
                let list = selection.host.isEmpty ? all : all.filter { s in selection.host.contains { globMatch($0, s.hostname) } }
                if list.isEmpty && !all.isEmpty {
                    throw AnalysisError.emptySelection(asked: selection.host.map { "--host \($0.debugDescription)" }.joined(separator: " "),
                                                       holds: "live sessions of the hosts \(Set(all.map(\.hostname)).sorted().map(\.debugDescription).joined(separator: ", "))")
                }
                let chosen: [ViewerSession]
                if let name = u.session {
                    chosen = list.filter { $0.name == name && (u.targetHost == nil || $0.hostname == u.targetHost) }
                    guard !chosen.isEmpty else {
                        throw LiveError.unknownSession(endpoint: "\(u.host):\(u.port)", wanted: "\(u.targetHost ?? "*")/\(name)",
                                                       available: list.map { "\($0.hostname)/\($0.name)" })
                    }
                } else {
                    chosen = list.filter { $0.liveTimer > 0 && (u.targetHost == nil || $0.hostname == u.targetHost) }
                    guard !chosen.isEmpty else {
                        throw LiveError.unknownSession(endpoint: "\(u.host):\(u.port)", wanted: u.targetHost.map { "of host \($0)" } ?? "(any)",
                                                       available: list.map { "\($0.hostname)/\($0.name)" })
                    }
                }
                for s in chosen where !out.contains(where: { $0.endpoint == "\(u.host):\(u.port)" && $0.info.id == s.id }) {
                    out.append(try LiveSession(url: LiveURL(host: u.host, port: u.port, targetHost: s.hostname, session: s.name),
                                               session: s, fromBeginning: fromBeginning))
                }
            }
        } catch {
            for s in out { s.close() }
            throw error
        }
        return out
    }

    /// `top -- COMMAND`: a live session, a relay daemon, the program, the view.
    func runCommand(options: TopSink.Options, view: TopView, intervalNs: UInt64) throws {
        guard resolveCommand(command[0]).contains("/"), access(resolveCommand(command[0]), X_OK) == 0 else {
            warn("rltrace: cannot run \(command[0]): no such program (not found on PATH, or not executable)")
            throw ExitCode(127)
        }
        if let o = output, !force, holdsTrace(try localTraceDirectory(o)) {
            warn("rltrace: \(o) already holds a trace; choose another -o, or --force to record into it anyway")
            throw ExitCode(2)
        }
        var daemon: PrivateSessionDaemon?
        var cli = LTTngCLI.ambient
        var env = ProcessInfo.processInfo.environment
        var recording: LiveRecording?
        var live: LiveSession?
        var tempOutput: URL?
        var program: Process?
        defer {
            // Whatever ended the view (an error too), the program does not outlive it.
            if let p = program, p.isRunning { kill(p.processIdentifier, SIGTERM); p.waitUntilExit() }
            live?.close()
            // Nothing more is read: do not wait for the data to be consumed.
            recording?.discard()
            // The session daemon first: the relay daemon's only client.
            daemon?.stop()
            recording?.stopRelay()
            if let t = tempOutput { try? FileManager.default.removeItem(at: t) }
        }
        let say: (String) -> Void = { m in if !view.json { warn(m) } }
        if !cli.isSessionDaemonReachable() {
            say("rltrace: no session daemon reachable; starting a private one")
            let d = try PrivateSessionDaemon.start()
            daemon = d; cli = d.cli; env = d.applicationEnvironment
        }
        let relay: LiveRelay
        if let r = relayd {
            let parts = r.replacingOccurrences(of: "net://", with: "").split(separator: ":")
            guard parts.count == 3, Int(parts[1]) != nil, Int(parts[2]) != nil else {
                warn("rltrace: --relayd \(r.debugDescription): expected net://HOST:CONTROL:DATA")
                throw ExitCode(64)
            }
            relay = .running(sessionURL: r.hasPrefix("net://") ? r : "net://" + r, liveHost: String(parts[0]), livePort: livePort)
        } else if let o = output {
            relay = .start(outputDirectory: URL(fileURLWithPath: try localTraceDirectory(o)))
        } else {
            let t = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-top-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            tempOutput = t
            relay = .start(outputDirectory: t)
        }
        // What is recorded is what `record` records (recordingChannels); LTTngControl runs the
        // session (LiveRecording) and waits until the relay daemon lists it.
        let period = Int(try parseThreshold(livePeriod, "--live-period") / 1000)
        let rec = try LiveRecording.start(sessionName: "rltrace-top-\(getpid())-\(UInt32.random(in: 0...UInt32.max))",
                                          channels: recordingChannels(), livePeriodMicroseconds: period, relay: relay, cli: cli)
        recording = rec
        let found = try rec.waitUntilListed(list: { try LiveSession.list(host: $0, port: $1) }, name: \.name)
        let l = try LiveSession(url: LiveURL(host: rec.liveHost, port: rec.livePort, targetHost: found.hostname, session: found.name),
                                session: found, fromBeginning: true)
        live = l
        // The program: its output must not garble the view (or the JSON).
        let p = Process()
        p.executableURL = URL(fileURLWithPath: resolveCommand(command[0]))
        p.arguments = Array(command.dropFirst())
        p.environment = tracedProgramEnvironment(env)
        p.standardInput = FileHandle.nullDevice
        var logPath: String?
        if batch && log == nil {
            p.standardOutput = FileHandle.standardError
            p.standardError = FileHandle.standardError
        } else {
            let path = log ?? FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-top-\(getpid()).log").path
            // Opened in place (created or truncated), never replaced: `--log /dev/stdout` or a link
            // must stay what it is (FileManager.createFile writes a new file over the path).
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                warn("rltrace: cannot write the program's output to \(path): \(String(cString: strerror(errno)))")
                throw ExitCode(1)
            }
            let h = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
            p.standardOutput = h
            p.standardError = h
            logPath = path
        }
        do { try p.run() } catch {
            warn("rltrace: cannot run \(command[0]): \(error.localizedDescription)")
            throw ExitCode(127)
        }
        program = p
        let child = TopChild(process: p, recording: rec, live: l)
        let driver = TopDriver(pipelines: [LivePipeline(l, filter: selectionFilter, options: options, intervalNs: intervalNs)], view: view, intervalNs: intervalNs, count: count)
        try driver.run(child: child)
        if p.isRunning { kill(p.processIdentifier, SIGTERM) }
        p.waitUntilExit()
        // Quit (or --count) before the program ended: the rest of the trace is not wanted.
        rec.discard()
        l.close()
        live = nil
        if let logPath { say("rltrace: the program's output is in \(logPath)") }
        if output != nil, let r = rec.relay { r.stop(); say("rltrace: trace written below \(r.outputDirectory.path)") }
    }
}

/// The program `top -- COMMAND` runs, and its live recording (ended when the program exits, so
/// the rest of the trace is sent and the streams hang up).
final class TopChild {
    let process: Process
    let recording: LiveRecording
    /// The viewer's session of the recording.
    let live: LiveSession
    var sessionEnded = false
    /// When the session was ended (CLOCK_MONOTONIC ns; 0 while the program runs).
    var sessionEndedAt: UInt64 = 0
    /// When the program was seen exited and recording stopped (0 before).
    private var stoppedAt: UInt64 = 0
    /// How long a stopped session is kept for the viewer to receive its streams.
    static let streamsGraceNs: UInt64 = 3_000_000_000

    init(process: Process, recording: LiveRecording, live: LiveSession) {
        self.process = process; self.recording = recording; self.live = live
    }

    /// When the program has exited: stop recording, then, once the viewer has the session's
    /// streams (the relay daemon announces them about a second after the program registered, so
    /// a short program may be over before), destroy the session (once).
    func endSessionIfExited() {
        guard !sessionEnded, !process.isRunning else { return }
        let now = monotonicNanoseconds()
        if stoppedAt == 0 {
            try? recording.stop()
            stoppedAt = now
        }
        guard live.streamCount > 0 || now &- stoppedAt >= Self.streamsGraceNs else { return }
        sessionEnded = true
        try? recording.end()
        sessionEndedAt = monotonicNanoseconds()
    }

    func terminate() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
    }
}

/// Set by SIGINT/SIGTERM: the view quits (restoring the terminal) and the program is stopped.
nonisolated(unsafe) var topInterrupted: sig_atomic_t = 0

/// Runs the pipelines, refreshes the view every interval, reads keys.
final class TopDriver {
    let pipelines: [LivePipeline]
    let view: TopView
    let intervalNs: UInt64
    let count: Int?
    var shown = 0

    init(pipelines: [LivePipeline], view: TopView, intervalNs: UInt64, count: Int?) {
        self.pipelines = pipelines; self.view = view; self.intervalNs = intervalNs; self.count = count
    }

    func run(child: TopChild?) throws {
        // Ctrl-C, SIGTERM and a closed terminal (SIGHUP) quit the view cleanly: the program is
        // stopped, the daemons too, the terminal restored. A closed output pipe (SIGPIPE) is
        // seen as a failed write instead (the view then quits the same way).
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            var sa = sigaction()
            sa.__sigaction_handler.sa_handler = { _ in topInterrupted = 1 }
            sigemptyset(&sa.sa_mask)
            sa.sa_flags = 0
            sigaction(sig, &sa, nil)
        }
        signal(SIGPIPE, SIG_IGN)
        // A process started from a thread that blocks these signals (a test runner's worker
        // thread, some supervisors) inherits the mask: unblock them, or Ctrl-C and SIGTERM would
        // never reach the handlers above.
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for sig in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&unblock, sig) }
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        defer { for sig in [SIGINT, SIGTERM, SIGHUP, SIGPIPE] { signal(sig, SIG_DFL) } }
        view.enterScreen()
        defer { view.restoreTerminal() }
        // A refresh when every session with data finished its interval (``LivePipeline``): at the
        // pace of the traced clock, once every --interval when the data keeps up, back to back when
        // a backlog arrives. A stalled stream does not stop the view: after two intervals without a
        // refresh, what was received is shown. Before any data, an empty view after 3 s.
        let started = monotonicNanoseconds()
        var lastShown = started
        let stalled = max(2 * intervalNs, 1_000_000_000)
        while true {
            if topInterrupted != 0 || view.outputFailed { child?.terminate(); return }
            var busy = false
            for p in pipelines {
                if try p.pump(until: monotonicNanoseconds() + 50_000_000) { busy = true }
            }
            child?.endSessionIfExited()
            if child?.sessionEnded == true && !busy { for p in pipelines { p.endIfEveryStreamHungUp() } }
            var over = pipelines.allSatisfy(\.ended)
            // The program's session is gone: the relay daemon hangs its streams up within a live
            // period or two. Should one never be (a relay daemon that keeps it open), the view
            // still ends, 10 s later, with what was received.
            if !over, let c = child, c.sessionEndedAt != 0, monotonicNanoseconds() &- c.sessionEndedAt > 10_000_000_000 {
                warn("rltrace top: the relay daemon did not close every stream 10 s after the session ended; stopping with what was received")
                over = true
            }
            let now = monotonicNanoseconds()
            let withData = pipelines.filter { $0.hasData && !$0.ended }
            let due: Bool
            if over {
                due = true
            } else if !withData.isEmpty {
                due = withData.allSatisfy(\.intervalComplete) || now &- lastShown >= stalled
            } else {
                due = now >= started + 3_000_000_000 && now &- lastShown >= intervalNs
            }
            if due {
                try show(final: over)
                lastShown = now
                if over { return }
                if let c = count, shown >= c { child?.terminate(); return }
                continue
            }
            // Wait for keys, or until data may have arrived (the streams' retry delay).
            let wait: Int32 = busy ? 0 : 20
            if view.interactive {
                if view.waitForKeys(timeoutMs: wait) == .quit { child?.terminate(); return }
            } else if wait > 0 {
                usleep(UInt32(wait) * 1000)
            }
        }
    }

    func show(final: Bool) throws {
        var rows: [TopLoopRow] = []
        var sessions: [TopSessionRow] = []
        var begin = Int64.max, end = Int64.min
        for p in pipelines {
            let s = p.snapshot()
            rows += s.rows
            begin = min(begin, s.begin); end = max(end, s.end)
            sessions.append(TopSessionRow(host: p.live.info.hostname, session: p.live.info.name, url: p.live.url.description,
                                          streams: p.live.streamCount, openStreams: p.live.openStreamCount,
                                          events: p.decoder.totalEvents, runloopEvents: p.decoder.runLoopEvents,
                                          discardedEvents: Int64(clamping: p.live.discardedEvents), lostPackets: Int64(clamping: p.live.lostPackets),
                                          packets: p.live.packets, beacons: p.live.beacons, ended: p.ended))
        }
        shown += 1
        let now = Int64(bitPattern: monotonicNanoseconds())
        let snap = TopSnapshot(seq: shown, final: final, wallTime: ISO8601DateFormatter().string(from: Date()),
                               intervalBeginNs: begin == .max ? 0 : begin, intervalEndNs: end == .min ? 0 : end,
                               lagNs: end > 0 ? now - end : nil, sessions: sessions, loops: rows)
        view.show(snap)
    }
}

/// One attached session's figures in a snapshot.
struct TopSessionRow: Codable {
    var host: String, session: String, url: String
    var streams: Int, openStreams: Int, events: Int, runloopEvents: Int
    var discardedEvents: Int64, lostPackets: Int64, packets: Int, beacons: Int
    var ended: Bool
}

/// One refresh (docs/top-json.md).
struct TopSnapshot: Codable {
    var schema = "rltrace-top/1"
    var seq: Int
    var final: Bool
    var wallTime: String
    var intervalBeginNs: Int64, intervalEndNs: Int64
    var lagNs: Int64?
    var hangsInProgress = 0
    var sessions: [TopSessionRow]
    var loops: [TopLoopRow]

    init(seq: Int, final: Bool, wallTime: String, intervalBeginNs: Int64, intervalEndNs: Int64, lagNs: Int64?, sessions: [TopSessionRow], loops: [TopLoopRow]) {
        self.seq = seq; self.final = final; self.wallTime = wallTime
        self.intervalBeginNs = intervalBeginNs; self.intervalEndNs = intervalEndNs; self.lagNs = lagNs
        self.sessions = sessions; self.loops = loops
        hangsInProgress = loops.filter { $0.hang != nil }.count
    }
}

/// Sort columns.
enum SortKey: String, ExpressibleByArgument, CaseIterable {
    case busy, rate, p99, worst, hang, loop
    var next: SortKey { let a = SortKey.allCases; return a[(a.firstIndex(of: self)! + 1) % a.count] }
}
