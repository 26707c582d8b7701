import Foundation

/// Where a recording's trace goes: a local directory or a relay daemon.
public enum RecordingDestination: Sendable, Equatable {
    /// A directory on this host (created, with its parents, when the recording starts):
    /// `lttng create --output=DIR`.
    case directory(URL)
    /// A relay daemon's URL, `net://HOST[:CONTROL_PORT[:DATA_PORT]]` or another of
    /// lttng-create(1)'s network URLs: `lttng create --set-url=URL`. The trace is written on the
    /// relay daemon's host, below its output directory.
    case relayDaemon(String)
    /// A live session streaming to a relay daemon's `net://HOST:CONTROL:DATA` URL, its buffers
    /// flushed every `livePeriodMicroseconds` so that a viewer attached to the relay daemon's live
    /// port sees the events as they come: `lttng create --live=PERIOD --set-url=URL`. Not with
    /// snapshot mode. ``LiveRecording`` starts one and waits until the relay daemon lists it.
    case live(url: String, livePeriodMicroseconds: Int)
}

/// One user-space channel of a ``RecordingPlan``: its buffers, the events it records and the
/// context fields added to them.
public struct RecordingChannel: Sendable, Equatable {
    /// The channel's name.
    public var name: String
    /// The event patterns enabled on it (e.g. `"runloop:*"`), in order.
    public var eventPatterns: [String]
    /// Events left out of the wildcard patterns that match them (LTTng's `enable-event --exclude`),
    /// e.g. `["runloop:timer_armed"]`; empty: none.
    public var excludedEvents: [String]
    /// Context fields added to its events (e.g. `["vtid", "procname"]`); empty: none.
    public var contexts: [String]
    /// Bytes per sub-buffer (a power of two), or nil for LTTng's default.
    public var subbufferSize: Int?
    /// Sub-buffers per CPU, or nil for LTTng's default.
    public var subbufferCount: Int?
    /// Overwrite the oldest packets when full (a flight recorder's ring) instead of discarding new events.
    public var overwrite: Bool

    /// Creates a per-user channel description (LTTng's default buffers unless sizes are given).
    public init(name: String, eventPatterns: [String], excludedEvents: [String] = [], contexts: [String] = [],
                subbufferSize: Int? = nil, subbufferCount: Int? = nil, overwrite: Bool = false) {
        self.name = name
        self.eventPatterns = eventPatterns
        self.excludedEvents = excludedEvents
        self.contexts = contexts
        self.subbufferSize = subbufferSize
        self.subbufferCount = subbufferCount
        self.overwrite = overwrite
    }

    /// The channel's name in the plans `rltrace record` builds for LTTng-UST's state dump.
    public static let statedumpName = "statedump"
    /// LTTng-UST's state dump events: which binary is mapped where in each process (emitted by
    /// liblttng-ust at start-up and on dlopen/dlclose), what symbolizing stack samples from the
    /// trace alone needs.
    public static let statedumpPatterns = ["lttng_ust_statedump:*", "lttng_ust_lib:*"]

    /// The contexts of the state dump's channel next to a channel recording with `contexts`:
    /// `vpid` (the state dump's events name no other thing that would name their process), then
    /// the other channel's contexts but `vpid` and its perf counters.
    public static func statedumpContexts(alongside contexts: [String]) -> [String] {
        ["vpid"] + contexts.filter { $0 != "vpid" && !$0.hasPrefix("perf:") }
    }

    /// The excluded events that `pattern` (a wildcard) matches: LTTng refuses an exclusion a
    /// pattern does not match, so each pattern takes only its own.
    public func excludedEvents(for pattern: String) -> [String] {
        guard pattern.hasSuffix("*") else { return [] }
        let prefix = pattern.dropLast()
        return excludedEvents.filter { $0.hasPrefix(prefix) }
    }

    /// The state dump's channel (``statedumpPatterns`` with ``statedumpContexts(alongside:)``)
    /// next to a channel recording with `contexts`.
    public static func statedump(alongside contexts: [String], subbufferSize: Int? = nil, subbufferCount: Int? = nil,
                                 overwrite: Bool = false) -> RecordingChannel {
        RecordingChannel(name: statedumpName, eventPatterns: statedumpPatterns, contexts: statedumpContexts(alongside: contexts),
                         subbufferSize: subbufferSize, subbufferCount: subbufferCount, overwrite: overwrite)
    }
}

/// A recording session described before it exists: its name, destination, mode, channels and the
/// processes it is limited to. ``start(cli:)`` creates it and starts recording; the
/// ``TraceRecording`` it returns stops and destroys it.
///
/// ``startCommands`` are the `lttng` commands ``start(cli:)`` runs, in order: `create`, then per
/// channel `enable-channel`, `enable-event` per pattern and `add-context` (when it has contexts),
/// then `track` (when processes are given) and `start`.
public struct RecordingPlan: Sendable, Equatable {
    /// The session's name (unique on its session daemon).
    public var sessionName: String
    /// Where the trace (or, in snapshot mode, each snapshot) goes.
    public var destination: RecordingDestination
    /// Snapshot mode: the session records into memory; ``TraceRecording/finish()`` takes one
    /// snapshot of the buffers before stopping.
    public var snapshotMode: Bool
    /// The channels, set up in this order.
    public var channels: [RecordingChannel]
    /// The processes recorded (`lttng track --userspace --vpid=…`); empty: every process registered
    /// with the session daemon, those that register later included.
    public var trackedProcesses: [Int32]

    /// Creates a plan.
    public init(sessionName: String, destination: RecordingDestination, snapshotMode: Bool = false,
                channels: [RecordingChannel], trackedProcesses: [Int32] = []) {
        self.sessionName = sessionName
        self.destination = destination
        self.snapshotMode = snapshotMode
        self.channels = channels
        self.trackedProcesses = trackedProcesses
    }

    /// The `lttng` command (the arguments after `lttng --no-sessiond`) that creates the session.
    public var createCommand: [String] {
        var args = ["create", sessionName]
        if snapshotMode { args.append("--snapshot") }
        switch destination {
        case .directory(let dir): args.append("--output=\(dir.path)")
        case .relayDaemon(let url): args.append("--set-url=\(url)")
        case .live(let url, let period): args += ["--live=\(period)", "--set-url=\(url)"]
        }
        return args
    }

    /// Every `lttng` command ``start(cli:)`` runs, in order (arguments after `lttng --no-sessiond`).
    public var startCommands: [[String]] {
        var commands = [createCommand]
        for c in channels {
            commands.append(LTTngSession.enableChannelArguments(session: sessionName, channel: c.name, subbufferSize: c.subbufferSize,
                                                                subbufferCount: c.subbufferCount, buffers: .perUID,
                                                                overwrite: c.overwrite, blocking: false))
            for p in c.eventPatterns {
                commands.append(LTTngSession.enableEventArguments(session: sessionName, pattern: p, channel: c.name,
                                                                  excluding: c.excludedEvents(for: p)))
            }
            if !c.contexts.isEmpty {
                commands.append(LTTngSession.addContextArguments(session: sessionName, contexts: c.contexts, channel: c.name))
            }
        }
        if !trackedProcesses.isEmpty {
            commands.append(LTTngSession.trackArguments(session: sessionName, pids: trackedProcesses))
        }
        commands.append(["start", sessionName])
        return commands
    }

    /// Creates the session on the daemon `cli` reaches (a local destination's directory first),
    /// sets up its channels, events, contexts and tracked processes, and starts recording.
    ///
    /// - Throws: the first failure (an ``LTTngCommandError`` naming the `lttng` command, or the
    ///   directory's creation error); a session already created is destroyed first.
    public func start(cli: LTTngCLI = .ambient) throws -> TraceRecording {
        if case .directory(let dir) = destination {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        }
        let commands = startCommands
        try cli.run(commands[0])
        let session: LTTngSession
        switch destination {
        case .directory(let dir):
            session = LTTngSession(name: sessionName, cli: cli, outputDirectory: dir, isSnapshot: snapshotMode)
        case .relayDaemon(let url):
            session = LTTngSession(name: sessionName, cli: cli, outputDirectory: nil, isSnapshot: snapshotMode, outputURL: url)
        case .live(let url, _):
            session = LTTngSession(name: sessionName, cli: cli, outputDirectory: nil, isSnapshot: false, outputURL: url)
        }
        do {
            for c in commands.dropFirst() { try cli.run(c) }
        } catch {
            try? session.destroy()
            throw error
        }
        return TraceRecording(plan: self, session: session)
    }
}

/// A recording started from a ``RecordingPlan``: its session records until ``finish()``.
public struct TraceRecording: Sendable {
    /// The plan it was started from.
    public let plan: RecordingPlan
    /// The session recording.
    public let session: LTTngSession

    /// Takes the snapshot (in snapshot mode), stops recording (waiting until every buffer is
    /// written to the destination) and destroys the session; the trace stays.
    ///
    /// - Throws: the first failing command's ``LTTngCommandError``; the commands after it are not run.
    public func finish() throws {
        if plan.snapshotMode { try session.recordSnapshot() }
        try session.stop()
        try session.destroy()
    }

    /// Destroys the session without waiting for its buffers to be consumed (`lttng destroy
    /// --no-wait`): for a recording whose rest is not wanted (a live viewer that quit early).
    ///
    /// - Throws: the command's ``LTTngCommandError``.
    public func discard() throws {
        try session.cli.run(["destroy", "--no-wait", session.name])
    }
}
