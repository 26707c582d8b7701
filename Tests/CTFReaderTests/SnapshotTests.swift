import Foundation
import Testing
import LTTngControl
import CTFReader

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
