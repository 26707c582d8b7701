import Foundation
import Testing
import LTTngControl
import TestSupport

// RecordingPlan and TraceRecording (Sources/LTTngControl/TraceRecording.swift): the exact `lttng`
// commands a plan runs, then plans run against a real session daemon (the shared private one) and
// a real relay daemon, recording ctf-testgen (6 `rltest:*` events per thread and iteration).

/// The session names `lttng list` shows on `daemon`.
func sessionNames(_ daemon: PrivateSessionDaemon) throws -> [String] {
    try daemon.cli.run(["list"]).split(separator: "\n").compactMap { line in
        // `  1) NAME [active|inactive]`
        guard let paren = line.firstIndex(of: ")"), line[..<paren].allSatisfy({ $0 == " " || $0.isNumber }) else { return nil }
        return line[line.index(after: paren)...].split(separator: " ").first.map(String.init)
    }
}

@Suite("LTTngControl recording plans", .serialized)
struct RecordingPlanTests {
    @Test("a plan's commands: create, per channel enable-channel, enable-event per pattern, add-context, then track and start")
    func commands() {
        let dir = URL(fileURLWithPath: "/tmp/out")
        let plan = RecordingPlan(sessionName: "s", destination: .directory(dir), channels: [
            RecordingChannel(name: "runloop", eventPatterns: ["runloop:*"], contexts: ["vtid"]),
            .statedump(alongside: ["vtid", "perf:thread:task-clock", "vpid"]),
            RecordingChannel(name: "ring", eventPatterns: ["a:*"], subbufferSize: 8192, subbufferCount: 4, overwrite: true),
        ], trackedProcesses: [42, 43])
        #expect(plan.startCommands == [
            ["create", "s", "--output=/tmp/out"],
            ["enable-channel", "--userspace", "--session=s", "--buffers-uid", "--discard", "runloop"],
            ["enable-event", "--userspace", "--session=s", "--channel=runloop", "runloop:*"],
            ["add-context", "--userspace", "--session=s", "--channel=runloop", "--type=vtid"],
            ["enable-channel", "--userspace", "--session=s", "--buffers-uid", "--discard", "statedump"],
            ["enable-event", "--userspace", "--session=s", "--channel=statedump", "lttng_ust_statedump:*"],
            ["enable-event", "--userspace", "--session=s", "--channel=statedump", "lttng_ust_lib:*"],
            ["add-context", "--userspace", "--session=s", "--channel=statedump", "--type=vpid", "--type=vtid"],
            ["enable-channel", "--userspace", "--session=s", "--buffers-uid", "--subbuf-size=8192", "--num-subbuf=4", "--overwrite", "ring"],
            ["enable-event", "--userspace", "--session=s", "--channel=ring", "a:*"],
            ["track", "--userspace", "--session=s", "--vpid=42,43"],
            ["start", "s"],
        ])
        var snapshot = plan
        snapshot.snapshotMode = true
        snapshot.trackedProcesses = []
        #expect(snapshot.startCommands.first == ["create", "s", "--snapshot", "--output=/tmp/out"])
        #expect(snapshot.startCommands.contains { $0.first == "track" } == false)
    }

    @Test("excluded events: --exclude on each wildcard pattern that matches them, on no other pattern")
    func exclusions() {
        let plan = RecordingPlan(sessionName: "s", destination: .directory(URL(fileURLWithPath: "/tmp/out")), channels: [
            RecordingChannel(name: "runloop", eventPatterns: ["runloop:*", "runloop:hang_*", "other:x"],
                             excludedEvents: ["runloop:timer_armed", "runloop:hang_stack"]),
        ])
        #expect(plan.startCommands == [
            ["create", "s", "--output=/tmp/out"],
            ["enable-channel", "--userspace", "--session=s", "--buffers-uid", "--discard", "runloop"],
            ["enable-event", "--userspace", "--session=s", "--channel=runloop", "--exclude=runloop:timer_armed,runloop:hang_stack", "runloop:*"],
            ["enable-event", "--userspace", "--session=s", "--channel=runloop", "--exclude=runloop:hang_stack", "runloop:hang_*"],
            ["enable-event", "--userspace", "--session=s", "--channel=runloop", "other:x"],
            ["start", "s"],
        ])
    }

    @Test("a net:// plan creates its session with lttng create --set-url=URL (--snapshot before it in snapshot mode)")
    func relayURLArguments() {
        let url = "net://collector.example:5342:5343"
        var plan = RecordingPlan(sessionName: "rltrace-1-2", destination: .relayDaemon(url),
                                 channels: [RecordingChannel(name: "chan", eventPatterns: ["rltest:*"])])
        #expect(plan.createCommand == ["create", "rltrace-1-2", "--set-url=net://collector.example:5342:5343"])
        #expect(plan.startCommands.first == plan.createCommand)
        plan.snapshotMode = true
        #expect(plan.createCommand == ["create", "rltrace-1-2", "--snapshot", "--set-url=net://collector.example:5342:5343"])
    }

    @Test("a plan's session records ctf-testgen's events into a directory it creates, and is destroyed at the end")
    func recordsAndDestroys() throws {
        recordingLock.lock(); defer { recordingLock.unlock() }
        let daemon = try SharedDaemon.get()
        let name = SharedDaemon.uniqueName("plan")
        // A directory whose parent does not exist yet: the plan creates both.
        let out = SharedDaemon.scratch.appendingPathComponent(name).appendingPathComponent("trace")
        let plan = RecordingPlan(sessionName: name, destination: .directory(out),
                                 channels: [RecordingChannel(name: "chan", eventPatterns: ["rltest:*"], contexts: ["vtid", "procname"])])
        let recording = try plan.start(cli: daemon.cli)
        #expect(recording.session.name == name && recording.session.outputDirectory == out && !recording.session.isSnapshot)
        #expect(try sessionNames(daemon).contains(name))
        let r = try runTool(try builtProduct("ctf-testgen"), ["mixed", "4", "2"], environment: daemon.applicationEnvironment)
        #expect(r.status == 0, "\(r.err)")
        try recording.finish()
        #expect(try !sessionNames(daemon).contains(name))
        let lines = try babeltrace([out.path])
        // 2 threads × 4 iterations × 6 event kinds, each with the plan's contexts.
        #expect(lines.count == 48)
        #expect(lines.allSatisfy { $0.contains("procname = \"ctf-testgen\"") && $0.contains("vtid = ") })
    }

    @Test("a snapshot-mode plan's finish takes one snapshot, holding what was recorded, before stopping")
    func snapshotMode() throws {
        recordingLock.lock(); defer { recordingLock.unlock() }
        let daemon = try SharedDaemon.get()
        let name = SharedDaemon.uniqueName("plansnap")
        let out = SharedDaemon.scratch.appendingPathComponent(name)
        let plan = RecordingPlan(sessionName: name, destination: .directory(out), snapshotMode: true,
                                 channels: [RecordingChannel(name: "chan", eventPatterns: ["rltest:*"])])
        let recording = try plan.start(cli: daemon.cli)
        #expect(recording.session.isSnapshot)
        let r = try runTool(try builtProduct("ctf-testgen"), ["mixed", "3", "1"], environment: daemon.applicationEnvironment)
        #expect(r.status == 0, "\(r.err)")
        try recording.finish()
        #expect(try !sessionNames(daemon).contains(name))
        let snapshots = try FileManager.default.contentsOfDirectory(atPath: out.path)
        #expect(snapshots.count == 1 && snapshots.allSatisfy { $0.hasPrefix("snapshot-") }, "\(snapshots)")
        #expect(try babeltrace([out.path]).count == 18)
    }

    @Test("a plan that LTTng refuses part-way throws the failing command and leaves no session behind")
    func refusedPlanDestroysItsSession() throws {
        let daemon = try SharedDaemon.get()
        let name = SharedDaemon.uniqueName("planbad")
        let plan = RecordingPlan(sessionName: name, destination: .directory(SharedDaemon.scratch.appendingPathComponent(name)),
                                 channels: [RecordingChannel(name: "chan", eventPatterns: ["rltest:*"], contexts: ["no-such-context"])])
        do {
            _ = try plan.start(cli: daemon.cli)
            Issue.record("expected LTTng to refuse the context")
        } catch let e as LTTngCommandError {
            #expect(e.commandLine.contains("add-context") && e.commandLine.contains("--type=no-such-context"), "\(e)")
        }
        #expect(try !sessionNames(daemon).contains(name))
    }

    @Test("a net:// plan streams to a real relay daemon, which writes the events below its output directory")
    func recordsThroughRelayDaemon() throws {
        recordingLock.lock(); defer { recordingLock.unlock() }
        let daemon = try SharedDaemon.get()
        let name = SharedDaemon.uniqueName("planrelay")
        let relayOut = SharedDaemon.scratch.appendingPathComponent(name)
        let relay = try PrivateRelayDaemon.start(outputDirectory: relayOut)
        defer { relay.stop() }
        let plan = RecordingPlan(sessionName: name, destination: .relayDaemon(relay.sessionURL),
                                 channels: [RecordingChannel(name: "chan", eventPatterns: ["rltest:*"])])
        #expect(plan.createCommand == ["create", name, "--set-url=net://127.0.0.1:\(relay.controlPort):\(relay.dataPort)"])
        let recording = try plan.start(cli: daemon.cli)
        #expect(recording.session.outputURL == relay.sessionURL && recording.session.outputDirectory == nil)
        let r = try runTool(try builtProduct("ctf-testgen"), ["mixed", "2", "2"], environment: daemon.applicationEnvironment)
        #expect(r.status == 0, "\(r.err)")
        try recording.finish()
        relay.stop()
        // The relay daemon writes HOST/NAME-DATE-TIME/… below its output directory.
        let hosts = try FileManager.default.contentsOfDirectory(atPath: relayOut.path)
        #expect(hosts.count == 1)
        let sessions = try FileManager.default.contentsOfDirectory(atPath: relayOut.appendingPathComponent(hosts[0]).path)
        #expect(sessions.count == 1 && sessions[0].hasPrefix(name + "-"), "\(sessions)")
        #expect(try babeltrace([relayOut.path]).count == 24)
    }
}
