import ArgumentParser
import Foundation
import LTTngControl
#if canImport(Glibc)
import Glibc
#endif

// `rltrace record --pid PID,… | --all`: recording programs that are already running (a service
// started by systemd or a container runtime) through the session daemon they registered with at
// start-up. docs/production.md shows it in use.

/// What `record` attaches to.
enum AttachTarget: Equatable {
    /// These processes only (`lttng track --userspace --vpid=…`).
    case processes([Int32])
    /// Every program registered with the daemon, and those that register while recording.
    case all

    /// The pids tracked (none for `.all`).
    var pids: [Int32] { if case .processes(let p) = self { return p } else { return [] } }
}

/// Reads `--pid`'s list: positive decimal pids separated by commas, each of a running process.
func parsePIDList(_ text: String) throws -> [Int32] {
    var pids: [Int32] = []
    for word in text.split(separator: ",", omittingEmptySubsequences: false) {
        let w = word.trimmingCharacters(in: .whitespaces)
        guard let n = Int32(w), n > 0 else {
            throw ValidationError("--pid: \(w.debugDescription) is not a process id (--pid PID[,PID...], e.g. --pid 4242,4243)")
        }
        guard kill(n, 0) == 0 || errno == EPERM else { throw ValidationError("--pid: no process \(n) is running") }
        if !pids.contains(n) { pids.append(n) }
    }
    return pids
}

/// Why an attached recording ended.
enum AttachEnd: Equatable {
    /// Ctrl-C or SIGTERM.
    case signal(Int32)
    /// `--duration` elapsed.
    case duration
    /// Every process of `--pid` has exited.
    case processesExited
}

/// The signal that asked an attached recording to end (0: none yet). Set by a plain handler.
nonisolated(unsafe) var attachStopSignal: sig_atomic_t = 0

/// SIGINT and SIGTERM end the recording (not rltrace): the handler only notes the signal; the
/// waiting loop then stops and destroys the session, so the trace is kept.
func installAttachStopHandlers() {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGINT)
    sigaddset(&set, SIGTERM)
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    for sig in [SIGINT, SIGTERM] {
        var sa = sigaction()
        sa.__sigaction_handler.sa_handler = { sig in attachStopSignal = sig }
        sigemptyset(&sa.sa_mask)
        sa.sa_flags = SA_RESTART
        sigaction(sig, &sa, nil)
    }
}

/// Waits until a signal, the `durationNs` limit, or (when `pids` is not empty) the end of every
/// process in `pids`, polling every 50 ms.
func waitForAttachEnd(pids: [Int32], durationNs: Int64?) -> AttachEnd {
    let start = DispatchTime.now().uptimeNanoseconds
    var polls = 0
    while true {
        if attachStopSignal != 0 { return .signal(Int32(attachStopSignal)) }
        if let d = durationNs, DispatchTime.now().uptimeNanoseconds - start >= UInt64(d) { return .duration }
        polls += 1
        if !pids.isEmpty, polls % 4 == 0, pids.allSatisfy({ kill($0, 0) != 0 && errno == ESRCH }) { return .processesExited }
        usleep(50_000)
    }
}

/// The daemon to attach through: the host's when reachable; else a private one, with a note that
/// the programs already running are not registered with it (exit 6 for `--pid`: nothing could be
/// recorded).
func reachAttachDaemon(_ target: AttachTarget) throws -> (PrivateSessionDaemon?, LTTngCLI) {
    if LTTngCLI.ambient.isSessionDaemonReachable() { return (nil, .ambient) }
    if case .processes(let pids) = target {
        warn("rltrace: no session daemon reachable: the running process\(pids.count == 1 ? "" : "es") \(pids.map(String.init).joined(separator: ",")) registered with none, and cannot be recorded; start lttng-sessiond on this host (as a service, before the programs) — docs/production.md")
        throw ExitCode(6)
    }
    let (daemon, cli, _) = try reachSessionDaemon(announce: false)
    if let d = daemon {
        warn("rltrace: no session daemon reachable: started a private one (LTTNG_HOME=\(d.home.path)). Only programs started from now on with LTTNG_HOME=\(d.home.path) register with it; the programs already running are not recorded (start lttng-sessiond on this host before them: docs/production.md)")
    }
    return (daemon, cli)
}

/// After the session started with `pids` tracked: the pids registered with the daemon (a
/// RunLoopCore program linked with LTTng-UST registers when it starts). Warns about the others;
/// exit 6, after `cleanUp`, when none is.
func checkRegistered(_ pids: [Int32], cli: LTTngCLI, cleanUp: () -> Void) throws {
    guard !pids.isEmpty else { return }
    let registered = (try? cli.registeredApplications()) ?? []
    let missing = pids.filter { !registered.contains($0) }
    for p in missing {
        warn("rltrace: process \(p) is not registered with the session daemon (not a program traced with LTTng-UST, or registered with another session daemon): nothing of it is recorded")
    }
    if missing.count == pids.count {
        cleanUp()
        throw ExitCode(6)
    }
}

/// Says what ended the recording.
func announceEnd(_ end: AttachEnd) {
    switch end {
    case .signal(let s): warn("rltrace: \(s == SIGINT ? "interrupted" : "terminated"): stopping the recording (the programs keep running)")
    case .duration: warn("rltrace: --duration elapsed: stopping the recording (the programs keep running)")
    case .processesExited: warn("rltrace: every traced process has exited: stopping the recording")
    }
}

/// `record --pid|--all`: records the programs of `target` into `output` until a signal, the
/// duration, or the processes' end; the session is then stopped and destroyed (the trace kept).
func recordAttached(_ target: AttachTarget, output: RecordOutput, snapshot: Bool, contexts: [String], events: RecordedEvents,
                    durationNs: Int64?, announce: Bool) throws {
    let (daemon, cli) = try reachAttachDaemon(target)
    defer { daemon?.stop() }
    installAttachStopHandlers()
    let recording = try startRecordingSession(output: output, snapshot: snapshot, contexts: contexts, events: events,
                                              processes: target.pids, cli: cli)
    try checkRegistered(target.pids, cli: cli) { _ = try? recording.session.destroy() }
    if announce {
        let what = target == .all ? "every program of the session daemon (and those that start)" : "process\(target.pids.count == 1 ? "" : "es") \(target.pids.map(String.init).joined(separator: ","))"
        warn("rltrace: recording \(what) to \(output.place); Ctrl-C or SIGTERM stops\(durationNs == nil ? "" : ", or --duration")")
    }
    let end = waitForAttachEnd(pids: target.pids, durationNs: durationNs)
    if announce { announceEnd(end) }
    finishRecordingSession(recording, output: output, events: events, announce: announce)
    restoreDefaultSignals()
    try finishSummary(output: output, contexts: contexts, quiet: !announce)
}

/// `record --pid|--all --on-hang`: the flight recorder on running programs: one snapshot per
/// hang of theirs (their own watchdog's threshold, at least `settings.threshold` long).
func recordAttachedOnHang(_ target: AttachTarget, output: RecordOutput, settings: FlightRecorderSettings, contexts: [String],
                          durationNs: Int64?, announce: Bool) throws {
    let (daemon, cli) = try reachAttachDaemon(target)
    defer { daemon?.stop() }
    installAttachStopHandlers()
    var recorder = try startFlightRecorder(output: output, settings: settings, contexts: contexts, processes: target.pids,
                                           minimumHangNs: settings.thresholdNs, cli: cli, announce: announce)
    try checkRegistered(target.pids, cli: cli) { var r = recorder; try? r.destroy() }
    let end = waitForAttachEnd(pids: target.pids, durationNs: durationNs)
    if announce { announceEnd(end) }
    finishFlightRecorder(&recorder, output: output, settings: settings, lastSnapshot: false, announce: announce)
    restoreDefaultSignals()
}
