import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A flight recorder: a snapshot-mode session whose ring buffers (overwrite mode) always hold the
/// last moments, and triggers that record a snapshot of them when an event occurs
/// (`lttng add-trigger --condition=event-rule-matches … --action=snapshot-session`, LTTng 2.13).
///
/// The number of snapshots is bounded by construction: trigger *k* of *N* has the rate policy
/// `once-after:k`, so it acts only on the *k*-th matching event, and no trigger acts after the
/// *N*-th. Each snapshot holds at most the session's buffers, so the disk used is at most *N* ×
/// (buffers + metadata). Triggers belong to the session daemon, not to the session: call
/// ``removeTriggers()`` when done (``destroy()`` does).
public struct FlightRecorder: Sendable {
    /// The snapshot-mode session.
    public let session: LTTngSession
    /// The triggers added (their names).
    public private(set) var triggers: [String] = []
    /// The most snapshots the triggers can take.
    public private(set) var maxSnapshots = 0

    /// Creates the snapshot-mode session writing its snapshots below `outputDirectory` (one
    /// subdirectory per snapshot).
    public init(name: String, outputDirectory: URL, cli: LTTngCLI = .ambient) throws {
        session = try LTTngSession.createSnapshot(name: name, outputDirectory: outputDirectory, cli: cli)
    }

    /// Creates the snapshot-mode session sending its snapshots to the relay daemon at `url`
    /// (`net://HOST…`); the relay daemon writes each below its output directory
    /// (`HOST/NAME-DATE-TIME/snapshot-K-…`). ``snapshotDirectories()`` is then empty: they are
    /// not on this host.
    public init(name: String, url: String, cli: LTTngCLI = .ambient) throws {
        session = try LTTngSession.createSnapshot(name: name, url: url, cli: cli)
    }

    /// Adds one per-user channel of `subbufferCount` sub-buffers of `subbufferSize` bytes per
    /// CPU, recording `patterns` (but the events in `excluding`, LTTng's `--exclude`) with `contexts`.
    ///
    /// `overwrite` (the default) keeps the newest events: the ring of the flight recorder. A
    /// channel in discard mode keeps its *first* events instead — what a snapshot needs of events
    /// emitted once (the state dump): every snapshot flushes each channel, which closes the
    /// current packet and opens the next sub-buffer, so in overwrite mode the packet holding the
    /// state dump is overwritten by empty packets after `subbufferCount` snapshots, while in
    /// discard mode a full ring refuses the new packet and keeps it.
    public func addChannel(_ channel: String, subbufferSize: Int, subbufferCount: Int, patterns: [String], excluding: [String] = [],
                           contexts: [String], overwrite: Bool = true) throws {
        try session.enableChannel(channel, subbufferSize: subbufferSize, subbufferCount: subbufferCount, buffers: .perUID, overwrite: overwrite)
        let selection = RecordingChannel(name: channel, eventPatterns: patterns, excludedEvents: excluding)
        for p in patterns { try session.enableUserspaceEvents(p, channel: channel, excluding: selection.excludedEvents(for: p)) }
        try session.addContexts(contexts, channel: channel)
    }

    /// Adds `maxSnapshots` triggers that each record one snapshot: the *k*-th on the *k*-th event
    /// of the user-space event rule `event` (with an optional filter expression).
    ///
    /// A trigger belongs to the daemon: it matches the event in every registered process, whatever
    /// the session tracks; a `filter` such as `$ctx.vpid == 42 || $ctx.vpid == 43` limits it.
    public mutating func snapshotOn(event: String, filter: String? = nil, maxSnapshots: Int) throws {
        precondition(maxSnapshots >= 1)
        for k in 1...maxSnapshots {
            let name = "\(session.name)-snapshot-\(k)"
            var args = ["add-trigger", "--name=\(name)", "--condition=event-rule-matches", "--type=user", "--name=\(event)"]
            if let filter { args.append("--filter=\(filter)") }
            args += ["--action=snapshot-session", session.name, "--rate-policy=once-after:\(k)"]
            try session.cli.run(args)
            triggers.append(name)
        }
        self.maxSnapshots += maxSnapshots
    }

    /// Records a snapshot now (e.g. when the program was interrupted while a hang went on).
    public func snapshotNow() throws { try session.recordSnapshot() }

    /// The snapshots written so far: the subdirectories of the output directory, oldest first.
    public func snapshotDirectories() -> [URL] {
        guard let dir = session.outputDirectory,
              let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { return [] }
        return names.filter { !$0.hasPrefix(".") }.map { dir.appendingPathComponent($0) }
            .filter { (try? $0.resourceValues(forKeys: [.isDirectoryKey]).isDirectory) == true }
            .sorted { snapshotOrder($0.lastPathComponent) < snapshotOrder($1.lastPathComponent) }
    }

    /// Waits until the snapshots stop changing: a trigger's snapshot is taken by the session
    /// daemon shortly after its event, and may still be in progress when the program exits.
    /// Returns when nothing changed for `quiet` seconds, or after `timeout`.
    public func waitForSnapshots(quiet: Double = 0.6, timeout: Double = 10) {
        func state() -> [String: Int] {
            var s: [String: Int] = [:]
            for d in snapshotDirectories() {
                guard let e = FileManager.default.enumerator(at: d, includingPropertiesForKeys: [.fileSizeKey]) else { continue }
                for case let f as URL in e { s[f.path] = (try? f.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0 }
            }
            return s
        }
        let deadline = Date().addingTimeInterval(timeout)
        var last = state(), since = Date()
        while Date() < deadline {
            usleep(100_000)
            let now = state()
            if now != last { last = now; since = Date() } else if Date().timeIntervalSince(since) >= quiet { return }
        }
    }

    /// How many snapshots the triggers failed to take (their actions' "total execution
    /// failures" in `lttng list-triggers`: a relay daemon that went away, a full disk).
    public func failedSnapshots() throws -> Int {
        Self.executionFailures(inListing: try session.cli.run(["list-triggers"]), of: Set(triggers))
    }

    /// The sum of the `total execution failures: N` lines in the sections (`- name: T`) of `names`.
    static func executionFailures(inListing text: String, of names: Set<String>) -> Int {
        var mine = false, total = 0
        for line in text.split(separator: "\n") {
            if line.hasPrefix("- name: ") { mine = names.contains(String(line.dropFirst(8))); continue }
            let t = line.drop { $0 == " " }
            if mine, t.hasPrefix("total execution failures: "), let n = Int(t.dropFirst(26)) { total += n }
        }
        return total
    }

    /// Removes the triggers (each attempted; the first failure is thrown after all were tried).
    public mutating func removeTriggers() throws {
        var failure: Error?
        for t in triggers {
            do { try session.cli.run(["remove-trigger", t]) } catch { if failure == nil { failure = error } }
        }
        triggers = []
        if let failure { throw failure }
    }

    /// Removes the triggers, stops and destroys the session (the snapshots stay on disk).
    public mutating func destroy() throws {
        var failure: Error?
        do { try removeTriggers() } catch { failure = error }
        do { try session.stop() } catch { if failure == nil { failure = error } }
        do { try session.destroy() } catch { if failure == nil { failure = error } }
        if let failure { throw failure }
    }
}

/// Orders LTTng's snapshot directory names (`NAME-N-YYYYmmdd-HHMMSS-INDEX`) by their index.
func snapshotOrder(_ name: String) -> (Int, String) {
    (Int(name.split(separator: "-").last ?? "") ?? Int.max, name)
}
