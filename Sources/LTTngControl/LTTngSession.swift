import Foundation

/// A recording session of one session daemon, driven through the `lttng` command.
///
/// Every method runs one `lttng` command and throws ``LTTngCommandError`` (with the command line and its
/// standard error) when it fails.
public struct LTTngSession: Sendable {
    /// How a channel's ring buffers are shared among traced processes.
    public enum BufferOwnership: String, Sendable {
        /// One set of buffers per user (LTTng's default; survives a killed process).
        case perUID = "--buffers-uid"
        /// One set of buffers per process.
        case perPID = "--buffers-pid"
    }

    /// The session's name.
    public let name: String
    /// The endpoint of the daemon owning the session.
    public let cli: LTTngCLI
    /// The trace output directory, if the session writes to local disk.
    public let outputDirectory: URL?
    /// Whether the session is in snapshot mode.
    public let isSnapshot: Bool
    /// The relay daemon's URL, if the session streams its trace (or its snapshots) to one.
    public let outputURL: String?

    init(name: String, cli: LTTngCLI, outputDirectory: URL?, isSnapshot: Bool, outputURL: String? = nil) {
        self.name = name
        self.cli = cli
        self.outputDirectory = outputDirectory
        self.isSnapshot = isSnapshot
        self.outputURL = outputURL
    }

    /// Creates a session writing its trace to `outputDirectory` (`lttng create NAME --output=DIR`).
    public static func create(name: String, outputDirectory: URL, cli: LTTngCLI = .ambient) throws -> LTTngSession {
        try cli.run(["create", name, "--output=\(outputDirectory.path)"])
        return LTTngSession(name: name, cli: cli, outputDirectory: outputDirectory, isSnapshot: false)
    }

    /// Creates a snapshot-mode session whose snapshots are written below `outputDirectory`
    /// (`lttng create NAME --snapshot --output=DIR`).
    public static func createSnapshot(name: String, outputDirectory: URL, cli: LTTngCLI = .ambient) throws -> LTTngSession {
        try cli.run(["create", name, "--snapshot", "--output=\(outputDirectory.path)"])
        return LTTngSession(name: name, cli: cli, outputDirectory: outputDirectory, isSnapshot: true)
    }

    /// Creates a session streaming its trace to a relay daemon (`lttng create NAME --set-url=URL`,
    /// URL `net://HOST[:CONTROL[:DATA]]` or another of lttng-create(1)'s network URLs).
    public static func create(name: String, url: String, cli: LTTngCLI = .ambient) throws -> LTTngSession {
        try cli.run(["create", name, "--set-url=\(url)"])
        return LTTngSession(name: name, cli: cli, outputDirectory: nil, isSnapshot: false, outputURL: url)
    }

    /// Creates a snapshot-mode session whose snapshots go to a relay daemon
    /// (`lttng create NAME --snapshot --set-url=URL`): `lttng snapshot record` and a trigger's
    /// `snapshot-session` action send each snapshot there.
    public static func createSnapshot(name: String, url: String, cli: LTTngCLI = .ambient) throws -> LTTngSession {
        try cli.run(["create", name, "--snapshot", "--set-url=\(url)"])
        return LTTngSession(name: name, cli: cli, outputDirectory: nil, isSnapshot: true, outputURL: url)
    }

    /// Restricts the session's user-space recording to the processes `pids`
    /// (`lttng track --userspace --vpid=PID,…`, LTTng 2.13's process attribute tracker): other
    /// processes registered with the daemon record nothing in this session.
    public func trackUserspaceProcesses(_ pids: [Int32]) throws {
        guard !pids.isEmpty else { return }
        try cli.run(Self.trackArguments(session: name, pids: pids))
    }

    /// Creates (enables) a userspace channel with explicit buffer settings.
    /// - Parameters:
    ///   - channel: the channel name.
    ///   - subbufferSize: bytes per sub-buffer (a power of two, e.g. `1 << 20`), or nil for LTTng's default.
    ///   - subbufferCount: number of sub-buffers, or nil for the default.
    ///   - buffers: per-user or per-process buffers.
    ///   - overwrite: overwrite the oldest packets when full (flight-recorder mode) instead of discarding new events.
    ///   - blocking: make traced programs wait (instead of discarding events) when the buffers are full; they
    ///     must run with `LTTNG_UST_ALLOW_BLOCKING=1` in their environment.
    public func enableChannel(_ channel: String, subbufferSize: Int? = nil, subbufferCount: Int? = nil,
                              buffers: BufferOwnership = .perUID, overwrite: Bool = false, blocking: Bool = false) throws {
        try cli.run(Self.enableChannelArguments(session: name, channel: channel, subbufferSize: subbufferSize, subbufferCount: subbufferCount,
                                                buffers: buffers, overwrite: overwrite, blocking: blocking))
    }

    /// Enables userspace events matching `pattern` (e.g. `"rlrunloop:*"` or `"*"`), on `channel` if
    /// given, but the events named in `excluding` (LTTng's `--exclude`: only with a wildcard
    /// `pattern` that matches them).
    public func enableUserspaceEvents(_ pattern: String, channel: String? = nil, excluding: [String] = []) throws {
        try cli.run(Self.enableEventArguments(session: name, pattern: pattern, channel: channel, excluding: excluding))
    }

    /// Adds context fields (e.g. `["vtid", "procname"]`) to the userspace events of `channel` (or of every channel).
    public func addContexts(_ contexts: [String], channel: String? = nil) throws {
        guard !contexts.isEmpty else { return }
        try cli.run(Self.addContextArguments(session: name, contexts: contexts, channel: channel))
    }

    /// Starts recording.
    public func start() throws { try cli.run(["start", name]) }

    /// Stops recording and waits until all data is flushed to the output.
    public func stop() throws { try cli.run(["stop", name]) }

    /// Records a snapshot of a snapshot-mode session (to its output directory).
    public func recordSnapshot() throws { try cli.run(["snapshot", "record", "--session=\(name)"]) }

    /// Destroys the session (stopping it first if needed); the written trace stays on disk.
    public func destroy() throws { try cli.run(["destroy", name]) }
}

// The arguments of each command, shared with ``RecordingPlan/startCommands``.
extension LTTngSession {
    /// `enable-channel --userspace --session=SESSION BUFFERS [--blocking-timeout=inf] [--subbuf-size=N] [--num-subbuf=N] --overwrite|--discard CHANNEL`.
    static func enableChannelArguments(session: String, channel: String, subbufferSize: Int?, subbufferCount: Int?,
                                       buffers: BufferOwnership, overwrite: Bool, blocking: Bool) -> [String] {
        var args = ["enable-channel", "--userspace", "--session=\(session)", buffers.rawValue]
        if blocking { args.append("--blocking-timeout=inf") }
        if let s = subbufferSize { args.append("--subbuf-size=\(s)") }
        if let n = subbufferCount { args.append("--num-subbuf=\(n)") }
        args.append(overwrite ? "--overwrite" : "--discard")
        args.append(channel)
        return args
    }

    /// `enable-event --userspace --session=SESSION [--channel=CHANNEL] [--exclude=E,…] PATTERN`.
    static func enableEventArguments(session: String, pattern: String, channel: String?, excluding: [String] = []) -> [String] {
        var args = ["enable-event", "--userspace", "--session=\(session)"]
        if let c = channel { args.append("--channel=\(c)") }
        if !excluding.isEmpty { args.append("--exclude=" + excluding.joined(separator: ",")) }
        args.append(pattern)
        return args
    }

    /// `add-context --userspace --session=SESSION [--channel=CHANNEL] --type=C…`.
    static func addContextArguments(session: String, contexts: [String], channel: String?) -> [String] {
        var args = ["add-context", "--userspace", "--session=\(session)"]
        if let c = channel { args.append("--channel=\(c)") }
        for c in contexts { args.append("--type=\(c)") }
        return args
    }

    /// `track --userspace --session=SESSION --vpid=PID,…`.
    static func trackArguments(session: String, pids: [Int32]) -> [String] {
        ["track", "--userspace", "--session=\(session)", "--vpid=" + pids.map(String.init).joined(separator: ",")]
    }
}
