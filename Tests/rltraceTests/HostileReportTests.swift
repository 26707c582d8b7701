import Foundation
import Testing

// Hostile traces through the whole pipeline (docs/divergences.md): mutated copies of the committed demo
// trace — packet header and context fields set to extreme values — given to `rltrace report`,
// `timeline` and `export`. Each must end with a report or a clear error (exit 0 or 1), never a
// trap (a signal).

/// LTTng-UST 64-bit packet header and context: (name, byte offset in the packet, size in bytes).
let packetFields: [(String, Int, Int)] = [
    ("timestamp_begin", 32, 8), ("timestamp_end", 40, 8), ("content_size", 48, 8), ("packet_size", 56, 8),
    ("packet_seq_num", 64, 8), ("events_discarded", 72, 8),
]

/// Byte offsets of the packets of a stream file (from its unmutated packet_size fields).
func packetOffsets(_ d: Data) -> [Int] {
    var out: [Int] = [], o = 0
    while o + 64 <= d.count {
        out.append(o)
        let bits = d[(o + 56)..<(o + 64)].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        guard bits >= 8 * 88, bits % 8 == 0 else { break }
        o += Int(bits / 8)
    }
    return out
}

func poke(_ d: inout Data, _ at: Int, _ size: Int, _ v: UInt64) {
    for i in 0..<size { d[at + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))) }
}

/// A copy of the demo trace in a new folder, with `mutate` applied to its first stream file.
func mutatedDemo(_ name: String, _ mutate: (inout Data) -> Void) throws -> String {
    let dir = NSTemporaryDirectory() + "rltrace-hostile-\(getpid())/\(name)"
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.createDirectory(atPath: (dir as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try FileManager.default.copyItem(atPath: demoTrace, toPath: dir)
    let stream = dir + "/ust/uid/0/64-bit/channel0_0"
    var d = try Data(contentsOf: URL(fileURLWithPath: stream))
    mutate(&d)
    try d.write(to: URL(fileURLWithPath: stream))
    return dir
}

@Suite("hostile traces through report, timeline and export: an answer or a clear error, never a trap", .serialized)
struct HostileReportTests {
    @Test func everyPacketFieldAtItsExtremes() throws {
        defer { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "rltrace-hostile-\(getpid())") }
        let original = try Data(contentsOf: URL(fileURLWithPath: demoTrace + "/ust/uid/0/64-bit/channel0_0"))
        let packets = packetOffsets(original)
        #expect(packets.count == 2)
        var runs = 0, reports = 0
        // Each packet; each field at 0, its maximum and bit 63 alone.
        for p in packets {
            for (field, off, size) in packetFields {
                for v: UInt64 in [0, .max, 1 << 63] {
                    let dir = try mutatedDemo("\(p)-\(field)-\(v)") { poke(&$0, p + off, size, v) }
                    for args in [["report", "--format", "json"]] {
                        let r = try run("rltrace", args + [dir])
                        runs += 1
                        #expect(r.status == 0 || r.status == 1, "\(args[0]) \(field)=\(v) at packet \(p): status \(r.status)\n\(r.err.prefix(300))")
                        if r.status == 1 { #expect(r.err.contains("channel0_0"), "the error names the file: \(r.err.prefix(300))") }
                        if r.status == 0 && args[0] == "report" { reports += 1 }
                    }
                    try? FileManager.default.removeItem(atPath: dir)
                }
            }
        }
        #expect(runs == 2 * packetFields.count * 3)
        #expect(reports > 0)
    }

    /// A packet whose clock base goes back (timestamp_begin of channel0_0's second packet moved
    /// 2 × 2^32 ns earlier, so its compact 32-bit event timestamps decode to exactly that much
    /// earlier, all before the trace's first event): every one of its events is reported as going
    /// backwards and taken as simultaneous with the event before — nothing is subtracted into a
    /// negative or huge duration.
    @Test func timestampsThatGoBackwardsAreReportedNotSubtracted() throws {
        defer { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "rltrace-hostile-\(getpid())") }
        let original = try Data(contentsOf: URL(fileURLWithPath: demoTrace + "/ust/uid/0/64-bit/channel0_0"))
        let packets = packetOffsets(original)
        try #require(packets.count == 2)
        let p2 = packets[1]
        // The oracle: babeltrace2 counts the events of that packet alone (a trace holding only it).
        let alone = try mutatedDemo("packet2-alone") { $0 = $0.subdata(in: p2..<$0.count) }
        try? FileManager.default.removeItem(atPath: alone + "/ust/uid/0/64-bit/channel0_1")
        try? FileManager.default.removeItem(atPath: alone + "/ust/uid/0/64-bit/index")
        let bt = try run(try #require(which("babeltrace2")), ["--component=sink.utils.counter", alone])
        let line = try #require(bt.out.split(separator: "\n").first { $0.hasSuffix("Event messages") }, "\(bt.out)")
        let inPacket2 = try #require(Int(line.split(separator: " ").first { Int($0) != nil } ?? ""))
        #expect(inPacket2 > 1000)

        let dir = try mutatedDemo("backwards") { d in
            let tsb = d[(p2 + 32)..<(p2 + 40)].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
            poke(&d, p2 + 32, 8, tsb - 2 * (1 << 32))
        }
        try? FileManager.default.removeItem(atPath: dir + "/ust/uid/0/64-bit/index")
        let r = try run("rltrace", ["report", "--format", "json", dir])
        #expect(r.status == 0, "\(r.err.prefix(300))")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any])
        let warnings = doc["warnings"] as? [String] ?? []
        #expect(warnings.contains { $0.hasPrefix("\(inPacket2) events have a timestamp earlier than the event before them") }, "\(warnings)")
        // No figure went negative.
        var negatives: [String] = []
        func walk(_ v: Any, _ path: String) {
            if let d = v as? [String: Any] { for (k, x) in d { walk(x, path + "." + k) } }
            else if let a = v as? [Any] { for (i, x) in a.enumerated() { walk(x, path + "[\(i)]") } }
            else if let n = v as? NSNumber, n.doubleValue < 0, !path.hasSuffix("clockOffsetNs") { negatives.append("\(path)=\(n)") }
        }
        walk(doc, "")
        #expect(negatives.isEmpty, "\(negatives.prefix(5))")
        for cmd in [["timeline"], ["hangs"], ["export", "--format", "chrome", "-o", dir + "/x.json"]] {
            let c = try run("rltrace", cmd + [dir])
            #expect(c.status == 0, "\(cmd[0]): \(c.status) \(c.err.prefix(300))")
        }
    }
}
