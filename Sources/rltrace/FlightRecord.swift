import ArgumentParser
import Foundation
import LTTngControl
import RLAnalysis
#if canImport(Glibc)
import Glibc
#endif

/// `rltrace record --on-hang`: the flight recorder's settings.
struct FlightRecorderSettings {
    /// The hang threshold as the user wrote it (passed to the program) and in ns.
    var threshold: String, thresholdNs: Int64
    /// Ring buffer per CPU of the `runloop` channel (bytes), as sub-buffers.
    var subbufferSize: Int, subbufferCount: Int
    /// The most snapshots (one per hang).
    var maxSnapshots: Int
    /// The events the `runloop` channel records (``RecordedEvents/withHangEvents`` of `--events`).
    var events: RecordedEvents = .standard

    /// The event whose occurrence records a snapshot. `hang_end`, not `hang_begin`: the watchdog
    /// emits its stack samples while the hang goes on, so a snapshot at the end holds the whole
    /// hang — the seconds before it, its begin, every sample, its end — in one trace; a snapshot
    /// at `hang_begin` would hold no sample yet. A hang that never ends has no `hang_end`: when
    /// the program is interrupted (Ctrl-C on a hung service), rltrace takes one last snapshot.
    static let triggerEvent = "runloop:hang_end"
    /// The state dump channel (which binary is mapped where, for symbols): small, apart from the
    /// busy `runloop` channel so that a snapshot taken hours after start-up still holds it, and
    /// in discard mode so that the snapshots' flushes do not overwrite it (docs/hangs.md, "Session").
    static let statedumpSubbuffer = 65_536, statedumpSubbuffers = 2

    /// The most bytes one snapshot can hold (every CPU's buffers of both channels, full), metadata aside.
    var snapshotBound: Int {
        let cpus = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_CONF))))
        return cpus * (subbufferSize * subbufferCount + Self.statedumpSubbuffer * Self.statedumpSubbuffers)
    }
}

/// Parses a buffer size: bytes with an optional binary unit (`512K`, `4M`, `4MiB`, `1G`).
func parseSize(_ text: String) -> Int? {
    var t = text.uppercased()
    if t.hasSuffix("IB") { t.removeLast(2) } else if t.hasSuffix("B") { t.removeLast() }
    var mult = 1
    if let u = t.last, let m = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30][String(u)] { mult = m; t.removeLast() }
    guard let v = Double(t), v > 0, v * Double(mult) < Double(1 << 40) else { return nil }
    return Int(v * Double(mult))
}

/// Records `command` as a flight recorder into `output`: one snapshot per hang (at most
/// `settings.maxSnapshots`); returns the program's exit status.
func recordOnHang(_ command: [String], output: RecordOutput, settings: FlightRecorderSettings, contexts: [String], announce: Bool) throws -> Int32 {
    let (daemon, cli, daemonEnv) = try reachSessionDaemon(announce: announce)
    var env = daemonEnv
    defer { daemon?.stop() }
    var recorder = try startFlightRecorder(output: output, settings: settings, contexts: contexts, processes: [], cli: cli, announce: announce)

    env["RLTRACE_HANG_THRESHOLD"] = settings.threshold
    let p = Process()
    p.executableURL = URL(fileURLWithPath: resolveCommand(command[0]))
    p.arguments = Array(command.dropFirst())
    p.environment = tracedProgramEnvironment(env)
    var status: Int32 = 0
    var interrupted = false
    do {
        installSignalForwarding()
        try p.run()
        signalTarget = p.processIdentifier
        p.waitUntilExit()
        interrupted = p.terminationReason == .uncaughtSignal
        status = interrupted ? 128 + p.terminationStatus : p.terminationStatus
    } catch {
        warn("rltrace: cannot run \(command[0]): \(error.localizedDescription)")
        status = 127
    }
    signalTarget = 0
    restoreDefaultSignals()
    finishFlightRecorder(&recorder, output: output, settings: settings, lastSnapshot: interrupted, announce: announce)
    return status
}

/// Creates and starts the flight recorder's session (its two channels and its triggers) writing
/// to `output`, limited to `processes` when not empty; exit 6 when LTTng refuses.
/// `minimumHangNs`: only hangs that lasted that long take a snapshot (attached programs' watchdogs
/// have their own threshold).
func startFlightRecorder(output: RecordOutput, settings: FlightRecorderSettings, contexts: [String], processes: [Int32],
                         minimumHangNs: Int64? = nil, cli: LTTngCLI, announce: Bool) throws -> FlightRecorder {
    let name = "rltrace-fr-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    var recorder: FlightRecorder
    do {
        switch output {
        case .directory(let dir):
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            FlightRecorderNote.write(in: dir, settings: settings)
            recorder = try FlightRecorder(name: name, outputDirectory: dir, cli: cli)
        case .relayDaemon(let url):
            recorder = try FlightRecorder(name: name, url: url, cli: cli)
        }
    } catch {
        warn("rltrace: cannot set up the flight recorder session: \(error)")
        if case .relayDaemon(let url) = output {
            warn("rltrace: is an lttng-relayd listening at \(url)? (lttng-relayd -d on the collector; its default ports are 5342 and 5343)")
        }
        throw ExitCode(6)
    }
    do {
        let ctx = contexts.filter { !$0.isEmpty }
        let events = settings.events.withHangEvents
        try recorder.addChannel("runloop", subbufferSize: settings.subbufferSize, subbufferCount: settings.subbufferCount,
                                patterns: events.patterns, excluding: events.excluded, contexts: ctx)
        try recorder.addChannel(RecordingChannel.statedumpName, subbufferSize: FlightRecorderSettings.statedumpSubbuffer,
                                subbufferCount: FlightRecorderSettings.statedumpSubbuffers,
                                patterns: RecordingChannel.statedumpPatterns, contexts: RecordingChannel.statedumpContexts(alongside: ctx),
                                overwrite: false)
        try recorder.session.trackUserspaceProcesses(processes)
        // A trigger matches every registered process: only the tracked ones' hangs take a snapshot.
        var terms: [String] = []
        if let m = minimumHangNs { terms.append("duration_ns >= \(m)") }
        if !processes.isEmpty { terms.append("(" + processes.map { "$ctx.vpid == \($0)" }.joined(separator: " || ") + ")") }
        let filter = terms.isEmpty ? nil : terms.joined(separator: " && ")
        try recorder.snapshotOn(event: FlightRecorderSettings.triggerEvent, filter: filter, maxSnapshots: settings.maxSnapshots)
        try recorder.session.start()
    } catch {
        warn("rltrace: cannot set up the flight recorder (snapshot session, channels, triggers): \(error)")
        try? recorder.destroy()
        throw ExitCode(6)
    }
    if announce {
        warn("rltrace: flight recorder: a snapshot per hang of \(settings.threshold) or more (on \(FlightRecorderSettings.triggerEvent)), at most \(settings.maxSnapshots) snapshot\(settings.maxSnapshots == 1 ? "" : "s") of ≤ \(formatBytes(settings.snapshotBound)) each (+ metadata), to \(output.place)")
    }
    return recorder
}

/// Lets the last snapshots finish, takes one more when `lastSnapshot` (a program interrupted,
/// perhaps while hung: a hang that never ended triggered nothing), removes the triggers and the
/// session, and says what was taken.
func finishFlightRecorder(_ recorder: inout FlightRecorder, output: RecordOutput, settings: FlightRecorderSettings,
                          lastSnapshot: Bool, announce: Bool) {
    // The daemon takes a trigger's snapshot shortly after the event: let the last ones finish.
    // Snapshots sent to a relay daemon cannot be watched from here: a second is left to them.
    func settle() { if output.localDirectory != nil { recorder.waitForSnapshots() } else { usleep(1_000_000) } }
    settle()
    var taken = recorder.snapshotDirectories().count
    if lastSnapshot && (output.localDirectory == nil || taken < settings.maxSnapshots) {
        do {
            try recorder.snapshotNow()
            settle()
            taken = recorder.snapshotDirectories().count
            if announce { warn("rltrace: the program was interrupted: one last snapshot keeps what led up to it (a hang that never ended triggers none)") }
        } catch {
            warn("rltrace: the last snapshot failed: \(error)")
        }
    }
    let failed = (try? recorder.failedSnapshots()) ?? 0
    if failed > 0 {
        warn("rltrace: \(failed) snapshot\(failed == 1 ? "" : "s") could not be written to \(output.place) (the session daemon's log says why: a relay daemon gone, a full disk): those hangs are lost")
    }
    do { try recorder.destroy() } catch {
        warn("rltrace: removing the flight recorder's triggers or session failed: \(error)")
    }
    guard announce else { return }
    guard let dir = output.localDirectory else {
        warn("rltrace: each hang's snapshot (at most \(settings.maxSnapshots)) was sent to \(output.place): on its host, below its output directory, \(localHostName())/\(recorder.session.name)-DATE-TIME/snapshot-K-…")
        return
    }
    if taken == 0 {
        warn("rltrace: no hang of \(settings.threshold) or more: no snapshot was taken")
    } else {
        warn("rltrace: \(taken) snapshot\(taken == 1 ? "" : "s") in \(dir.path) — rltrace hangs \(dir.path)")
    }
    if taken >= settings.maxSnapshots {
        warn("rltrace: the limit of \(settings.maxSnapshots) snapshot\(settings.maxSnapshots == 1 ? "" : "s") was reached: later hangs, if any, were not recorded (--max-snapshots)")
    }
}

func formatBytes(_ n: Int) -> String {
    n >= 1 << 20 ? "\((Double(n) / Double(1 << 20) * 10).rounded() / 10) MiB" : "\(n / 1024) KiB"
}
