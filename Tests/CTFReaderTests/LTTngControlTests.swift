import Foundation
import Testing
import LTTngControl
import CTFReader

@Suite("LTTngControl", .serialized)
struct LTTngControlTests {
    @Test("a private daemon records a session that babeltrace2 reads back with the exact event count")
    func recordsSession() throws {
        let out = try recordTestgen(["mixed", "5", "2"], contexts: ["vtid", "procname"])
        let lines = try babeltrace([out.path])
        // 2 threads × 5 iterations × 6 event kinds.
        #expect(lines.count == 60)
        #expect(lines.allSatisfy { $0.contains("procname = \"ctf-testgen\"") })
    }

    @Test("a failing lttng command throws an error carrying its command line and stderr")
    func failingCommandThrows() throws {
        let daemon = try SharedDaemon.get()
        #expect(daemon.cli.isSessionDaemonReachable())
        do {
            try daemon.cli.run(["destroy", "no-such-session-xyz"])
            Issue.record("expected a failure")
        } catch let e as LTTngCommandError {
            #expect(e.commandLine.contains("destroy"))
            #expect(e.commandLine.contains("no-such-session-xyz"))
            #expect(e.exitStatus != 0)
            #expect(!e.standardError.isEmpty, "stdout: \(e.standardOutput) status \(e.exitStatus)")
        }
    }

    @Test("a daemon that was stopped is no longer reachable and its home is removed")
    func stopRemovesDaemon() throws {
        let d = try PrivateSessionDaemon.start()
        #expect(d.cli.isSessionDaemonReachable())
        let pid = d.pid
        d.stop()
        #expect(kill(pid, 0) != 0 || isZombie(pid))
        #expect(!FileManager.default.fileExists(atPath: d.home.path))
    }
}

private func isZombie(_ pid: Int32) -> Bool {
    guard let s = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
    return s.contains(") Z ")
}

@Suite("LTTngControl snapshots", .serialized)
struct LTTngSnapshotTests {
    @Test("a snapshot session's snapshot folder is discovered and decodes like babeltrace2 reads it")
    func snapshot() throws {
        recordingLock.lock(); defer { recordingLock.unlock() }
        let daemon = try SharedDaemon.get()
        let name = SharedDaemon.uniqueName("snap")
        let out = SharedDaemon.scratch.appendingPathComponent(name)
        let session = try LTTngSession.createSnapshot(name: name, outputDirectory: out, cli: daemon.cli)
        #expect(session.isSnapshot)
        try session.enableUserspaceEvents("rltest:*")
        try session.start()
        let r = try runTool(try builtProduct("ctf-testgen"), ["mixed", "7", "2"], environment: daemon.applicationEnvironment)
        #expect(r.status == 0)
        try session.recordSnapshot()
        try session.stop()
        try session.destroy()
        // Snapshots land in a `snapshot-…` folder below the output directory.
        let traces = try discoverCTFTraces(in: [out.path])
        #expect(traces.count == 1)
        #expect(traces.allSatisfy { $0.contains("snapshot-") })
        #expect(try expectAgreesWithBabeltrace([out.path]) == 7 * 2 * 6)
    }
}
