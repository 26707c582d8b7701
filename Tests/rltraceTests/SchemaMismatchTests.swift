import Foundation
import Testing

// The reading thread's three outcomes for an event (RunLoopEventSource's `step`): a complete
// `runloop` event delivered, an event of another provider passed over, and a `runloop` event whose
// class lacks a field the analysis requires — an error naming the event and the field, with the
// documented exit code, whichever thread reads the trace. Traces built by hand (TestSupport's
// HandBuiltTrace layout): a class lacking a field is not an error until one of its events is read.

/// A trace of one loop's iterations, one packet: `iteration_end` declared with `callouts` when
/// `complete`, without it otherwise; an `other:tick` event between the iterations; `endCount`
/// iterations end (each begins first).
private func iterationTrace(_ label: String, complete: Bool, endCount: Int) throws -> String {
    let end = complete ? "uint64_t loop_id; uint8_t handled_source; uint32_t callouts;" : "uint64_t loop_id; uint8_t handled_source;"
    let metadata = HandBuiltTrace.metadata(hostname: "schema", events: """
    event { name = "runloop:iteration_begin"; id = 0; stream_id = 0; fields := struct { uint64_t loop_id; uint64_t iteration; }; };
    event { name = "runloop:iteration_end"; id = 1; stream_id = 0; fields := struct { \(end) }; };
    event { name = "other:tick"; id = 2; stream_id = 0; fields := struct { uint64_t x; }; };
    """)
    func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { HandBuiltTrace.le(v) }
    var body: [UInt8] = []
    var ts: UInt64 = 1_000
    for i in 0..<3 {
        body += [0] + le(ts) + le(UInt64(7)) + le(UInt64(i + 1)); ts += 1_000                 // iteration_begin
        body += [2] + le(ts) + le(UInt64(99)); ts += 1_000                                   // other:tick
        if i < endCount {
            body += [1] + le(ts) + le(UInt64(7)) + [0] + (complete ? le(UInt32(0)) : []); ts += 1_000
        }
    }
    let content = UInt64(HandBuiltTrace.packetPrefixSize + body.count) * 8
    let packetBits = (content + 511) / 512 * 512
    var data = HandBuiltTrace.packetPrefix(begin: 1_000, end: ts, contentBits: content, packetBits: packetBits, seq: 0)
    data += body
    data += [UInt8](repeating: 0, count: Int(packetBits / 8) - data.count)
    let dir = try scratchDirectory("schema-\(label)")
    try metadata.write(toFile: dir + "/metadata", atomically: true, encoding: .utf8)
    try Data(data).write(to: URL(fileURLWithPath: dir + "/stream_0"))
    return dir
}

/// `rltrace report TRACE --format json` on `threads` threads: its exit status and its loops.
private func reportLoops(_ dir: String, threads: Int) throws -> (run: Run, loops: [[String: Any]]) {
    let r = try rltrace(["report", dir, "--format", "json"], threads: threads)
    let doc = r.status == 0 ? try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any] : nil
    return (r, doc?["loops"] as? [[String: Any]] ?? [])
}

@Suite("A runloop event lacking a field the analysis requires")
struct SchemaMismatchTests {
    @Test("complete events are delivered and another provider's passed over, on one thread and two", arguments: [1, 2])
    func completeEventsAndAnotherProvider(threads: Int) throws {
        let dir = try iterationTrace("complete", complete: true, endCount: 3)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (r, loops) = try reportLoops(dir, threads: threads)
        #expect(r.status == 0, "\(r.err)")
        #expect(loops.count == 1)
        #expect(loops.first?["iterations"] as? Int == 3, "\(r.out)")
    }

    @Test("an event of a class lacking `callouts`: exit 5, naming the event and the field, on one thread and two", arguments: [1, 2])
    func incompleteEventIsAnError(threads: Int) throws {
        let dir = try iterationTrace("incomplete", complete: false, endCount: 2)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for command in [["report"], ["export", "--format", "perfetto", "-o", dir + "/out.pftrace"], ["hangs"]] {
            let r = try rltrace(command + [dir], threads: threads)
            #expect(r.status == 5, "\(command): \(r.err)")
            #expect(r.err.contains("runloop:iteration_end has no integer field `callouts`"), "\(command): \(r.err)")
            #expect(!FileManager.default.fileExists(atPath: dir + "/out.pftrace"), "\(command)")
        }
    }

    @Test("a class lacking a field with no event read is no error", arguments: [1, 2])
    func incompleteClassWithoutEvents(threads: Int) throws {
        let dir = try iterationTrace("unused", complete: false, endCount: 0)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (r, loops) = try reportLoops(dir, threads: threads)
        #expect(r.status == 0, "\(r.err)")
        #expect(loops.count == 1, "\(r.out)")
    }
}
