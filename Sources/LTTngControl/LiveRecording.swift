import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The relay daemon a ``LiveRecording`` streams to.
public enum LiveRelay: Sendable, Equatable {
    /// A ``PrivateRelayDaemon`` started for the recording, writing the trace below the directory.
    case start(outputDirectory: URL)
    /// A relay daemon already running: its `net://HOST:CONTROL:DATA` URL (for `lttng create
    /// --set-url`) and where its live port listens (for viewers).
    case running(sessionURL: String, liveHost: String, livePort: Int)
}

/// What went wrong setting a live recording up beyond an `lttng` command's failure.
public enum LiveRecordingError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The relay daemon did not list the session within `seconds` of its start.
    case notListed(endpoint: String, session: String, seconds: Double, listed: [String])

    /// A sentence for the user.
    public var description: String {
        switch self {
        case .notListed(let e, let s, let t, let l):
            "the relay daemon at \(e) (live port) did not list the live session \(s) within \(t) s of its start "
                + "(sessions there: \(l.isEmpty ? "none" : l.joined(separator: ", "))); is that relay daemon the one the session streams to?"
        }
    }
}

/// A live session (a ``RecordingPlan`` with a ``RecordingDestination/live(url:livePeriodMicroseconds:)``
/// destination) streaming to a relay daemon, the one started for it or one already running.
///
/// ``start(sessionName:channels:livePeriodMicroseconds:relay:cli:)`` starts the relay daemon when
/// asked, then the session; ``waitUntilListed(timeout:list:name:)`` waits until the relay daemon's
/// live port lists it (what a viewer can attach to); ``stop()`` stops recording, the session kept;
/// ``end()`` stops and destroys the session
/// once everything was sent (the traced program is over); ``discard()`` destroys it without
/// waiting (the viewer quit early); ``stopRelay()`` stops the relay daemon started for it, after
/// the session daemon (its only client) is gone.
public final class LiveRecording: @unchecked Sendable {
    /// The recording (its plan and session).
    public let recording: TraceRecording
    /// The relay daemon started for it (nil with ``LiveRelay/running(sessionURL:liveHost:livePort:)``).
    public let relay: PrivateRelayDaemon?
    /// Where the relay daemon's live port listens.
    public let liveHost: String, livePort: Int
    private let lock = NSLock()
    private var over = false, stopped = false

    /// `HOST:PORT` of the relay daemon's live port, for messages.
    public var endpoint: String { "\(liveHost):\(livePort)" }
    /// The session's name.
    public var sessionName: String { recording.session.name }
    /// Whether ``end()`` or ``discard()`` ran.
    public var isOver: Bool { lock.lock(); defer { lock.unlock() }; return over }

    private init(recording: TraceRecording, relay: PrivateRelayDaemon?, liveHost: String, livePort: Int) {
        self.recording = recording; self.relay = relay; self.liveHost = liveHost; self.livePort = livePort
    }

    /// The plan of a live session named `sessionName` recording `channels`, streaming to `url`
    /// (`net://HOST:CONTROL:DATA`) with a live period of `livePeriodMicroseconds`.
    public static func plan(sessionName: String, channels: [RecordingChannel], url: String, livePeriodMicroseconds: Int) -> RecordingPlan {
        RecordingPlan(sessionName: sessionName, destination: .live(url: url, livePeriodMicroseconds: livePeriodMicroseconds), channels: channels)
    }

    /// Starts the relay daemon (with ``LiveRelay/start(outputDirectory:)``), then the live session
    /// on the session daemon `cli` reaches (``RecordingPlan/start(cli:)``).
    ///
    /// - Throws: ``LTTngCommandError`` naming the failed command (the relay daemon started here is
    ///   stopped again).
    public static func start(sessionName: String, channels: [RecordingChannel], livePeriodMicroseconds: Int, relay: LiveRelay,
                             cli: LTTngCLI = .ambient) throws -> LiveRecording {
        let daemon: PrivateRelayDaemon?, url: String, host: String, port: Int
        switch relay {
        case .start(let dir):
            let d = try PrivateRelayDaemon.start(outputDirectory: dir)
            daemon = d; url = d.sessionURL; host = "127.0.0.1"; port = d.livePort
        case .running(let u, let h, let p):
            daemon = nil; url = u; host = h; port = p
        }
        do {
            let r = try plan(sessionName: sessionName, channels: channels, url: url, livePeriodMicroseconds: livePeriodMicroseconds).start(cli: cli)
            return LiveRecording(recording: r, relay: daemon, liveHost: host, livePort: port)
        } catch {
            daemon?.stop()
            throw error
        }
    }

    /// Waits until the relay daemon lists the session (it does once the session daemon connected
    /// to it): `list(host, port)` lists the sessions of its live port (a viewer's listing), `name`
    /// names each. Returns the session's entry.
    ///
    /// - Throws: ``LiveRecordingError/notListed(endpoint:session:seconds:listed:)`` after
    ///   `timeout` seconds, or what `list` throws.
    public func waitUntilListed<Listed>(timeout: Double = 10, list: (_ host: String, _ port: Int) throws -> [Listed],
                                        name: (Listed) -> String) throws -> Listed {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let sessions = try list(liveHost, livePort)
            if let s = sessions.first(where: { name($0) == sessionName }) { return s }
            guard Date() < deadline else {
                throw LiveRecordingError.notListed(endpoint: endpoint, session: sessionName, seconds: timeout, listed: sessions.map(name))
            }
            usleep(50_000)
        }
    }

    /// Stops recording, waiting until everything was sent to the relay daemon (once; nothing after
    /// ``end()`` or ``discard()``). The session stays, so the relay daemon keeps it and still
    /// announces its streams to a viewer that has not received them yet: a program that ran for
    /// less than the relay daemon takes to announce them (about a second) is still seen.
    ///
    /// - Throws: the command's ``LTTngCommandError``.
    public func stop() throws {
        lock.lock()
        if over || stopped { lock.unlock(); return }
        stopped = true
        lock.unlock()
        try recording.session.stop()
    }

    /// Stops the session (unless ``stop()`` did), waiting until everything was sent to the relay
    /// daemon, and destroys it (once; nothing after ``discard()``). The relay daemon then hangs
    /// its streams up.
    ///
    /// - Throws: the first failing command's ``LTTngCommandError``.
    public func end() throws {
        try stop()
        guard markOver() else { return }
        try recording.session.destroy()
    }

    /// Destroys the session without waiting for its buffers to be consumed (once; nothing after
    /// ``end()``): nobody reads the rest.
    public func discard() {
        guard markOver() else { return }
        _ = try? recording.discard()
    }

    /// Stops the relay daemon started for the recording (none otherwise); its output directory stays.
    public func stopRelay() { relay?.stop() }

    private func markOver() -> Bool {
        lock.lock(); defer { lock.unlock() }
        if over { return false }
        over = true
        return true
    }
}
