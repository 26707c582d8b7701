import Foundation
import Testing
import LTTngControl
import TestSupport

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
