import Foundation
import Testing
import LTTngControl
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

// LiveRecording (Sources/LTTngControl/LiveRecording.swift), what `rltrace top -- COMMAND` sets its
// session up with: the exact `lttng` commands of a live plan, then live sessions on the shared
// private session daemon streaming to real relay daemons, the relay daemon's listing read by
// babeltrace2 (its lttng-live source lists a relay daemon's sessions), ctf-testgen recorded
// (6 `rltest:*` events per thread and iteration).

/// The sessions a relay daemon's live port lists, as babeltrace2 lists them
/// (`net://HOST:PORT/host/HOSTNAME/SESSION (timer = …)`, one a line): (host name, session name, timer).
private func relayListing(host: String, port: Int) throws -> [(host: String, name: String, timer: String)] {
    let r = try runTool("/usr/bin/babeltrace2", ["--input-format=lttng-live", "net://\(host):\(port)"])
    if r.status != 0 { throw TestSetupError(message: "babeltrace2 listing \(host):\(port) failed: \(r.err)") }
    return r.out.split(separator: "\n").compactMap { line in
        let parts = line.split(separator: " ", maxSplits: 1)
        let path = parts.first?.split(separator: "/") ?? []
        // net:, HOST:PORT, host, HOSTNAME, SESSION
        guard path.count == 5, path[2] == "host" else { return nil }
        let timer = parts.count > 1 ? parts[1].split(separator: ",").first.map { String($0.dropFirst()) } ?? "" : ""
        return (String(path[3]), String(path[4]), timer)
    }
}

@Suite("LTTngControl live recordings", .serialized)
struct LiveRecordingTests {
    @Test("a live plan's commands: create --live=PERIOD --set-url=URL, then per channel enable-channel, enable-event, add-context, then start")
    func commands() {
        let url = "net://127.0.0.1:5342:5343"
        let plan = LiveRecording.plan(sessionName: "s", channels: [
            RecordingChannel(name: "runloop", eventPatterns: ["runloop:*"], contexts: ["vtid"]),
            .statedump(alongside: ["vtid"]),
        ], url: url, livePeriodMicroseconds: 100_000)
        #expect(plan.destination == .live(url: url, livePeriodMicroseconds: 100_000))
        #expect(!plan.snapshotMode && plan.trackedProcesses.isEmpty)
        #expect(plan.startCommands == [
            ["create", "s", "--live=100000", "--set-url=net://127.0.0.1:5342:5343"],
            ["enable-channel", "--userspace", "--session=s", "--buffers-uid", "--discard", "runloop"],
            ["enable-event", "--userspace", "--session=s", "--channel=runloop", "runloop:*"],
            ["add-context", "--userspace", "--session=s", "--channel=runloop", "--type=vtid"],
            ["enable-channel", "--userspace", "--session=s", "--buffers-uid", "--discard", "statedump"],
            ["enable-event", "--userspace", "--session=s", "--channel=statedump", "lttng_ust_statedump:*"],
            ["enable-event", "--userspace", "--session=s", "--channel=statedump", "lttng_ust_lib:*"],
            ["add-context", "--userspace", "--session=s", "--channel=statedump", "--type=vpid", "--type=vtid"],
            ["start", "s"],
        ])
    }

    @Test("a live session streaming to a relay daemon started for it: listed by the relay daemon with its live timer, the events written there, stopped by stop(), destroyed by end()")
    func startedRelayListsAndEnds() throws {
        recordingLock.lock(); defer { recordingLock.unlock() }
        let daemon = try SharedDaemon.get()
        let name = SharedDaemon.uniqueName("live")
        let relayOut = SharedDaemon.scratch.appendingPathComponent(name)
        let rec = try LiveRecording.start(sessionName: name, channels: [RecordingChannel(name: "chan", eventPatterns: ["rltest:*"])],
                                          livePeriodMicroseconds: 200_000, relay: .start(outputDirectory: relayOut), cli: daemon.cli)
        defer { rec.discard(); rec.stopRelay() }
        let relay = try #require(rec.relay)
        #expect(rec.liveHost == "127.0.0.1" && rec.livePort == relay.livePort && rec.endpoint == "127.0.0.1:\(relay.livePort)")
        #expect(rec.recording.session.outputURL == relay.sessionURL && rec.recording.session.outputDirectory == nil)
        #expect(try sessionNames(daemon).contains(name))
        let listed = try rec.waitUntilListed(list: relayListing, name: { $0.name })
        #expect(listed.name == name && listed.timer == "timer = 200000", "\(listed)")
        let r = try runTool(try builtProduct("ctf-testgen"), ["mixed", "3", "2"], environment: daemon.applicationEnvironment)
        #expect(r.status == 0, "\(r.err)")
        // stop(): recording stopped, the session kept (the relay daemon still lists it).
        try rec.stop()
        #expect(try !rec.isOver && sessionNames(daemon).contains(name))
        #expect(try daemon.cli.run(["list", name]).contains("[inactive]"))
        #expect(try relayListing(host: rec.liveHost, port: rec.livePort).contains { $0.name == name })
        try rec.end()
        #expect(rec.isOver)
        #expect(try !sessionNames(daemon).contains(name))
        // Torn down on the relay daemon's side too: once the session daemon closed it, it is no
        // longer listed (within 5 s).
        let deadline = Date().addingTimeInterval(5)
        while try relayListing(host: rec.liveHost, port: rec.livePort).contains(where: { $0.name == name }) && Date() < deadline { usleep(50_000) }
        #expect(try !relayListing(host: rec.liveHost, port: rec.livePort).contains { $0.name == name })
        rec.stopRelay()
        #expect(kill(relay.pid, 0) != 0)
        // 2 threads × 3 iterations × 6 event kinds, written by the relay daemon.
        #expect(try babeltrace([relayOut.path]).count == 36)
    }

    @Test("a live session streaming to a relay daemon already running: discard() destroys it without waiting, end() after it does nothing, the relay daemon keeps running")
    func runningRelayDiscard() throws {
        let daemon = try SharedDaemon.get()
        let name = SharedDaemon.uniqueName("livediscard")
        let relay = try PrivateRelayDaemon.start(outputDirectory: SharedDaemon.scratch.appendingPathComponent(name))
        defer { relay.stop() }
        let rec = try LiveRecording.start(sessionName: name, channels: [RecordingChannel(name: "chan", eventPatterns: ["rltest:*"])],
                                          livePeriodMicroseconds: 100_000,
                                          relay: .running(sessionURL: relay.sessionURL, liveHost: "127.0.0.1", livePort: relay.livePort), cli: daemon.cli)
        #expect(rec.relay == nil && rec.livePort == relay.livePort)
        #expect(try rec.waitUntilListed(list: relayListing, name: { $0.name }).name == name)
        rec.discard()
        #expect(rec.isOver)
        #expect(try !sessionNames(daemon).contains(name))
        try rec.end()
        rec.stopRelay()
        #expect(PrivateRelayDaemon.isListening(port: relay.livePort))
    }

    @Test("a relay daemon that never lists the session (the live port of another): notListed naming that endpoint, the session and what it lists")
    func notListedNamesEndpointAndSession() throws {
        let daemon = try SharedDaemon.get()
        let name = SharedDaemon.uniqueName("livewrong")
        let a = try PrivateRelayDaemon.start(outputDirectory: SharedDaemon.scratch.appendingPathComponent(name + "-a"))
        defer { a.stop() }
        let b = try PrivateRelayDaemon.start(outputDirectory: SharedDaemon.scratch.appendingPathComponent(name + "-b"))
        defer { b.stop() }
        let rec = try LiveRecording.start(sessionName: name, channels: [RecordingChannel(name: "chan", eventPatterns: ["rltest:*"])],
                                          livePeriodMicroseconds: 100_000,
                                          relay: .running(sessionURL: a.sessionURL, liveHost: "127.0.0.1", livePort: b.livePort), cli: daemon.cli)
        defer { rec.discard() }
        let started = Date()
        do {
            _ = try rec.waitUntilListed(timeout: 1, list: relayListing, name: { $0.name })
            Issue.record("expected notListed")
        } catch let e as LiveRecordingError {
            #expect(e == .notListed(endpoint: "127.0.0.1:\(b.livePort)", session: name, seconds: 1, listed: []))
            #expect(e.description.contains("relay daemon at 127.0.0.1:\(b.livePort)") && e.description.contains("live session \(name)")
                    && e.description.contains("sessions there: none"), "\(e)")
        }
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 1 && waited < 5, "\(waited) s")
        // The relay daemon it does stream to lists it.
        #expect(try relayListing(host: "127.0.0.1", port: a.livePort).map(\.name) == [name])
    }
}
