import Foundation
import Testing

// Flight-recorder snapshots of one session overlap: the same packets, byte for byte, in two
// snapshot directories (docs/hangs.md). Built here from the committed demo trace (a real recording) by
// cutting its stream files at packet boundaries into two "snapshots", as LTTng writes them: same
// trace UUID, same stream file names, each holding a run of packets.

/// The packets of a stream file of an LTTng trace: (offset, size) in bytes, from each packet's
/// context (`packet_size`, bits, after the 32-byte header and two timestamps and `content_size`).
func lttngPackets(_ data: Data) throws -> [Range<Int>] {
    var out: [Range<Int>] = []
    var at = 0
    while at + 64 <= data.count {
        let magic = data.subdata(in: at..<at + 4).withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        try #require(magic == 0xC1FC_1FC1, "no packet magic at \(at)")
        let bits = data.subdata(in: at + 56..<at + 64).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        let size = Int(bits / 8)
        try #require(size > 0 && at + size <= data.count, "bad packet size at \(at)")
        out.append(at..<at + size)
        at += size
    }
    return out
}

/// Writes a "snapshot" of the demo trace into `dir`: for each stream file, the packets whose
/// index lies in `part` (a fraction range of the file's packets), their `packet_seq_num` moved by
/// `seqShift`; the metadata whole.
func writeSnapshot(_ dir: String, packets part: Range<Double>, seqShift: UInt64 = 0) throws {
    let src = URL(fileURLWithPath: demoTrace).appendingPathComponent("ust/uid/0/64-bit")
    let dst = URL(fileURLWithPath: dir).appendingPathComponent("ust/uid/0/64-bit")
    try FileManager.default.createDirectory(at: dst, withIntermediateDirectories: true)
    try FileManager.default.copyItem(at: src.appendingPathComponent("metadata"), to: dst.appendingPathComponent("metadata"))
    for f in ["channel0_0", "channel0_1"] {
        let data = try Data(contentsOf: src.appendingPathComponent(f))
        let packets = try lttngPackets(data)
        let lo = Int((part.lowerBound * Double(packets.count)).rounded()), hi = Int((part.upperBound * Double(packets.count)).rounded())
        var out = Data()
        for p in packets[lo..<hi] {
            var packet = data.subdata(in: p)
            if seqShift != 0 {
                let seq = packet.subdata(in: 64..<72).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) } + seqShift
                withUnsafeBytes(of: seq.littleEndian) { packet.replaceSubrange(64..<72, with: $0) }
            }
            out.append(packet)
        }
        try out.write(to: dst.appendingPathComponent(f))
    }
}

/// The report JSON without `trace.paths` (which names the directories read).
func reportWithoutPaths(_ json: String) throws -> NSDictionary {
    var doc = try JSONSerialization.jsonObject(with: Data(json.utf8)) as! [String: Any]
    var trace = doc["trace"] as! [String: Any]
    trace["paths"] = nil
    doc["trace"] = trace
    return doc as NSDictionary
}

@Suite("overlapping snapshots: shared packets read once, gaps never paired across")
struct SnapshotOverlapTests {
    func tempDir(_ tag: String) -> String {
        let d = NSTemporaryDirectory() + "rltrace-overlap-\(tag)-\(getpid())"
        try? FileManager.default.removeItem(atPath: d)
        return d
    }

    @Test func twoOverlappingSnapshotsReportExactlyAsTheWholeTrace() throws {
        let whole = try run("rltrace", ["report", "--format", "json", demoTrace])
        #expect(whole.status == 0, "\(whole.err)")
        // Identical copies, then the first two thirds and the last two thirds of every stream.
        for (tag, a, b) in [("same", 0.0..<1.0, 0.0..<1.0), ("thirds", 0.0..<(2.0 / 3), (1.0 / 3)..<1.0)] {
            let dir = tempDir(tag)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            try writeSnapshot(dir + "/snapshot-1-20261123-073737-0", packets: a)
            try writeSnapshot(dir + "/snapshot-1-20261123-073738-1", packets: b)
            for threads in [1, 2] {
                let r = try rltrace(["report", "--format", "json", dir], threads: threads)
                #expect(r.status == 0, "\(r.err)")
                let doc = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as! [String: Any]
                #expect(((doc["trace"] as! [String: Any])["paths"] as! [String]).count == 2)
                #expect(try reportWithoutPaths(r.out) == reportWithoutPaths(whole.out), "\(tag), \(threads) thread(s): the report differs from the whole trace's")
            }
            let h = try run("rltrace", ["hangs", dir]), hw = try run("rltrace", ["hangs", demoTrace])
            #expect(h.out == hw.out)
        }
    }

    /// The demo trace's streams hold two packets each: the first in one snapshot, the second in
    /// another whose sequence numbers say that packets were lost in between (as when two snapshots
    /// are taken further apart than the buffers reach). What was open at the gap is forgotten.
    @Test func snapshotsThatDoNotMeetAreNotPairedAcrossTheGap() throws {
        let dir = tempDir("gap")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writeSnapshot(dir + "/snapshot-1-20261123-073737-0", packets: 0.0..<0.5)
        try writeSnapshot(dir + "/snapshot-1-20261123-073739-1", packets: 0.5..<1.0, seqShift: 5)
        let r = try run("rltrace", ["report", "--format", "json", dir])
        #expect(r.status == 0, "\(r.err)")
        let whole = try JSONSerialization.jsonObject(with: Data(try run("rltrace", ["report", "--format", "json", demoTrace]).out.utf8)) as! [String: Any]
        let doc = try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as! [String: Any]
        // Every event once (no packet is shared), but iterations open at the gap are left out.
        #expect((doc["trace"] as! [String: Any])["events"] as? Int == (whole["trace"] as! [String: Any])["events"] as? Int)
        func iterations(_ d: [String: Any]) -> Int { (d["loops"] as! [[String: Any]]).reduce(0) { $0 + ($1["iterations"] as! Int) } }
        #expect(iterations(doc) < iterations(whole), "nothing was forgotten at the gap")
        #expect(iterations(doc) > iterations(whole) - 20)
        // No iteration spans the gap: no hang, and no iteration, longer than the whole trace's longest.
        func longest(_ d: [String: Any]) -> Int64 {
            (d["loops"] as! [[String: Any]]).flatMap { ($0["slowest"] as! [[String: Any]]).map { $0["busyNs"] as! Int64 } }.max() ?? 0
        }
        #expect(longest(doc) <= longest(whole), "an iteration was paired across the gap: \(longest(doc)) ns")
        let hangs = (doc["loops"] as! [[String: Any]]).reduce(0) { $0 + ($1["hangs"] as! [Any]).count }
        let wholeHangs = (whole["loops"] as! [[String: Any]]).reduce(0) { $0 + ($1["hangs"] as! [Any]).count }
        #expect(hangs <= wholeHangs)
    }
}
