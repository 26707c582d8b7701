import Foundation
import Testing
import CTFReader

/// Builds small CTF traces by hand (metadata text + one binary stream file) so each bad-input case is exact.
struct TinyTrace {
    struct Event { var id: UInt8 = 0; var ts: UInt64; var data: [UInt8]; var text: String; var lenOverride: UInt32? = nil }
    struct Packet {
        var events: [Event]
        var seq: UInt64
        var discarded: UInt64 = 0
        var contentOverride: UInt64? = nil
        var packetOverride: UInt64? = nil
        var padTo: Int = 0
    }

    static let metadata = HandBuiltTrace.metadata(hostname: "tiny", events: """
    event { name = "tiny:seq"; id = 0; fields := struct { uint32_t _len; uint8_t _data[_len]; string _s; }; };
    """)

    static func u32(_ v: UInt32) -> [UInt8] { HandBuiltTrace.le(v) }
    static func u64(_ v: UInt64) -> [UInt8] { HandBuiltTrace.le(v) }

    static func packetBytes(_ p: Packet) -> [UInt8] {
        var body: [UInt8] = []
        for e in p.events {
            body += [e.id] + u64(e.ts) + u32(e.lenOverride ?? UInt32(e.data.count)) + e.data + Array(e.text.utf8) + [0]
        }
        let content = UInt64(HandBuiltTrace.packetPrefixSize + body.count) * 8
        let size = max(content, UInt64(p.padTo) * 8)
        var bytes = HandBuiltTrace.packetPrefix(begin: p.events.first?.ts ?? 0, end: p.events.last?.ts ?? 0, contentBits: p.contentOverride ?? content,
                                                packetBits: p.packetOverride ?? size, seq: p.seq, discarded: p.discarded)
        bytes += body
        bytes += [UInt8](repeating: 0, count: Int(size / 8) - bytes.count)
        return bytes
    }

    /// Writes a trace directory; returns its path.
    static func write(_ name: String, packets: [Packet], metadata: String = TinyTrace.metadata, truncateBy: Int = 0) throws -> String {
        let dir = SharedDaemon.scratch.appendingPathComponent("tiny-\(name)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try metadata.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        var data: [UInt8] = packets.flatMap(packetBytes)
        if truncateBy > 0 { data.removeLast(truncateBy) }
        try Data(data).write(to: dir.appendingPathComponent("stream_0"))
        return dir.path
    }

    /// A trace of one packet in the layout CompoundTrace, PathTrace and FormatTrace declare: packet
    /// header (magic, stream id 0), packet context (begin, end, content and packet sizes in bits, then
    /// `context`), `body`, padded to whole 512-bit blocks; written as `stream_0` beside `metadata` in a
    /// new scratch directory named `name-…`. Returns its path.
    static func writeOnePacket(_ name: String, metadata: String, begin: UInt64, end: UInt64, context: [UInt8] = [],
                               body: [UInt8]) throws -> String {
        let content = UInt64(8 + 32 + context.count + body.count) * 8
        let packet = (content + 511) / 512 * 512
        var data = u32(0xC1FC_1FC1) + u32(0) + u64(begin) + u64(end) + u64(content) + u64(packet) + context + body
        data += [UInt8](repeating: 0, count: Int(packet / 8) - data.count)
        let dir = SharedDaemon.scratch.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try metadata.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        try Data(data).write(to: dir.appendingPathComponent("stream_0"))
        return dir.path
    }

    static func events(_ n: Int, from t0: UInt64 = 100) -> [Event] {
        (0..<n).map { i in Event(ts: t0 + UInt64(i) * 10, data: Array(0..<UInt8(i % 5)), text: "ev\(i)") }
    }
}

func expectReaderError(_ paths: [String], _ check: (CTFReaderError) -> Bool, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let (lines, _) = try readerLines(paths)
        Issue.record("expected an error, decoded \(lines.count) events", sourceLocation: sourceLocation)
    } catch let e as CTFReaderError {
        #expect(check(e), "unexpected error: \(e)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error type: \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("CTFReader on hand-built and malformed traces")
struct MalformedTests {
    @Test("a valid hand-built trace agrees with babeltrace2 (sequences, strings, two packets)")
    func validTiny() throws {
        let p = try TinyTrace.write("valid", packets: [
            .init(events: TinyTrace.events(7), seq: 0),
            .init(events: TinyTrace.events(5, from: 1000), seq: 1, padTo: 512),
        ])
        #expect(try expectAgreesWithBabeltrace([p]) == 12)
    }

    @Test("a missing path is an I/O error naming it; a directory without a trace says so")
    func missingFiles() throws {
        expectReaderError(["/nonexistent/trace/dir"]) { e in
            if case .io(let p, _) = e { return p == "/nonexistent/trace/dir" }
            return false
        }
        let empty = SharedDaemon.scratch.appendingPathComponent("empty-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        expectReaderError([empty.path]) { e in if case .noTrace = e { return true }; return false }
    }

    @Test("metadata that does not parse reports line and column")
    func metadataSyntax() throws {
        let bad = TinyTrace.metadata.replacingOccurrences(of: "uint64_t packet_seq_num;", with: "uint64_t packet_seq_num")
        let p = try TinyTrace.write("syntax", packets: [.init(events: TinyTrace.events(1), seq: 0)], metadata: bad)
        let line = bad.split(separator: "\n", omittingEmptySubsequences: false).firstIndex(where: { $0.contains("events_discarded") })! + 1
        expectReaderError([p]) { e in
            if case .metadataSyntax(let path, let l, let c, let m) = e {
                return path.hasSuffix("metadata") && l == line && c > 1 && m.contains("expected")
            }
            return false
        }
    }

    @Test("unknown and unsupported declarations are named")
    func unsupported() throws {
        let unknownType = TinyTrace.metadata.replacingOccurrences(of: "uint32_t _len;", with: "mystery_t _len;")
        let p1 = try TinyTrace.write("unknown", packets: [.init(events: TinyTrace.events(1), seq: 0)], metadata: unknownType)
        expectReaderError([p1]) { e in "\(e)".contains("unknown type `mystery_t`") }
        let weirdFloat = TinyTrace.metadata.replacingOccurrences(of: "uint32_t _len;", with: "floating_point { exp_dig = 5; mant_dig = 11; align = 8; } _h; uint32_t _len;")
        let p2 = try TinyTrace.write("float16", packets: [.init(events: TinyTrace.events(1), seq: 0)], metadata: weirdFloat)
        expectReaderError([p2]) { e in "\(e)".contains("unsupported floating_point with exp_dig = 5, mant_dig = 11") }
        // Integers wider than 64 bits are decoded (MetadataRulesTests.wideIntegers), up to 65536 bits.
        let bigInt = TinyTrace.metadata.replacingOccurrences(of: "uint32_t _len;", with: "integer { size = 65537; } _big; uint32_t _len;")
        let p3 = try TinyTrace.write("int65537", packets: [.init(events: TinyTrace.events(1), seq: 0)], metadata: bigInt)
        expectReaderError([p3]) { e in "\(e)".contains("unsupported integer size 65537 bits (at most 65536)") }
    }

    @Test("absurd declarations (nesting 2049 deep, arrays of 2^28 × 2^28 elements) are refused or bounded, never a crash")
    func absurdDeclarations() throws {
        // (NestingTests: 2048 levels are read.)
        let deep = String(repeating: "struct { ", count: 2049) + "uint8_t x; " + String(repeating: "} y; ", count: 2048) + "} _deep;"
        let m1 = TinyTrace.metadata.replacingOccurrences(of: "uint32_t _len;", with: deep + " uint32_t _len;")
        let p1 = try TinyTrace.write("deep", packets: [.init(events: TinyTrace.events(1), seq: 0)], metadata: m1)
        expectReaderError([p1]) { e in "\(e)".contains("nested more than 2048 deep") }
        let huge = "uint64_t _huge[268435456][268435456];"
        let m2 = TinyTrace.metadata.replacingOccurrences(of: "uint32_t _len;", with: huge + " uint32_t _len;")
        let p2 = try TinyTrace.write("huge", packets: [.init(events: TinyTrace.events(2), seq: 0)], metadata: m2)
        expectReaderError([p2]) { e in
            if case .malformed(let path, _, let field, _) = e { return path.hasSuffix("stream_0") && field == "event.fields.huge" }
            return false
        }
    }

    @Test("a sequence length claiming gigabytes is refused with file, offset and field, without allocating")
    func hugeSequence() throws {
        var evs = TinyTrace.events(3)
        evs[1].lenOverride = 0xFFFF_FFF0
        let p = try TinyTrace.write("hugeseq", packets: [.init(events: evs, seq: 0)])
        // Event 1 starts after the 56-byte header and event 0 (1 + 8 + 4 + 0 data + "ev0\0").
        let lenEnd = 56 + (13 + 4) + 13
        expectReaderError([p]) { e in
            if case .malformed(let path, let off, let field, let m) = e {
                return path.hasSuffix("stream_0") && off == lenEnd && field == "event.fields.data" && m.contains("4294967280")
            }
            return false
        }
    }

    @Test("packet sizes that lie are refused naming the field")
    func lyingSizes() throws {
        let p1 = try TinyTrace.write("content>packet", packets: [.init(events: TinyTrace.events(2), seq: 0, contentOverride: 1 << 20, packetOverride: 4096)])
        expectReaderError([p1]) { e in
            if case .malformed(_, let off, let field, _) = e { return off == 0 && field == "stream.packet.context.content_size" }
            return false
        }
        let p2 = try TinyTrace.write("packet0", packets: [.init(events: TinyTrace.events(2), seq: 0, contentOverride: 0, packetOverride: 0)])
        expectReaderError([p2]) { e in
            if case .malformed(_, _, let field, _) = e { return field == "stream.packet.context.packet_size" }
            return false
        }
        // A content size shorter than the events it holds cuts an event in half.
        let p3 = try TinyTrace.write("shortcontent", packets: [.init(events: TinyTrace.events(3), seq: 0, contentOverride: (56 + 20) * 8, padTo: 256)])
        expectReaderError([p3]) { e in
            if case .malformed(let path, let off, _, let m) = e { return path.hasSuffix("stream_0") && off >= 56 && (m.contains("past the end") || m.contains("unterminated")) }
            return false
        }
    }

    @Test("a truncated final packet yields the valid events and a warning")
    func truncatedTail() throws {
        let evs = TinyTrace.events(6)
        let p = try TinyTrace.write("trunc", packets: [
            .init(events: TinyTrace.events(4, from: 10), seq: 0),
            .init(events: evs, seq: 1, padTo: 512),
        ], truncateBy: 512 - (56 + 6 * 16))
        // Cut inside the last event: 5 of the 6 events of packet 2 survive... compute from the builder.
        let (lines, set) = try readerLines([p])
        let full = 56 + evs.reduce(0) { $0 + 13 + $1.data.count + $1.text.utf8.count + 1 }
        let cut = 56 + 6 * 16
        var fits = 0, off = 56
        for e in evs { off += 13 + e.data.count + e.text.utf8.count + 1; if off <= cut { fits += 1 } }
        #expect(full > cut)
        #expect(lines.count == 4 + fits)
        #expect(set.warnings.count >= 1)
        #expect(set.warnings.contains { $0.path.hasSuffix("stream_0") && $0.message.contains("truncated") })
    }

    @Test("discarded events and lost packets are surfaced with their time ranges")
    func lossAccounting() throws {
        let p = try TinyTrace.write("loss", packets: [
            .init(events: TinyTrace.events(2, from: 100), seq: 0, discarded: 0),
            .init(events: TinyTrace.events(2, from: 200), seq: 1, discarded: 7),
            .init(events: TinyTrace.events(2, from: 400), seq: 4, discarded: 7),
        ])
        let (lines, set) = try readerLines([p])
        #expect(lines.count == 6)
        let losses = set.losses
        #expect(losses.count == 2)
        let base: Int64 = 1000 * 1_000_000_000
        #expect(losses.contains { $0.kind == .discardedEvents(7) && $0.beginNanoseconds == base + 110 && $0.endNanoseconds == base + 210 })
        #expect(losses.contains { $0.kind == .lostPackets(2) && $0.beginNanoseconds == base + 210 && $0.endNanoseconds == base + 400 })
    }

    @Test("an unterminated string and an unknown event id are refused naming offset and field")
    func badEvents() throws {
        var evs = TinyTrace.events(2)
        evs[0].id = 9
        let p = try TinyTrace.write("badid", packets: [.init(events: evs, seq: 0)])
        expectReaderError([p]) { e in
            if case .malformed(_, let off, let field, let m) = e { return off == 56 && field == "stream.event.header.id" && m.contains("unknown event id 9") }
            return false
        }
        // Cut the NUL of the last string off by declaring a content size one byte short.
        let evs2 = TinyTrace.events(2)
        let content = 56 + evs2.reduce(0) { $0 + 13 + $1.data.count + $1.text.utf8.count + 1 } - 1
        let p2 = try TinyTrace.write("nonul", packets: [.init(events: evs2, seq: 0, contentOverride: UInt64(content * 8), padTo: 256)])
        expectReaderError([p2]) { e in
            if case .malformed(_, _, let field, let m) = e { return field == "event.fields.s" && m.contains("unterminated string") }
            return false
        }
    }

    @Test("rltrace dump exits non-zero with a clear message on a trace it cannot read")
    func cliRefuses() throws {
        var evs = TinyTrace.events(3)
        evs[2].lenOverride = 0x7FFF_FFFF
        let p = try TinyTrace.write("cli", packets: [.init(events: evs, seq: 0)])
        let r = try runTool(try builtProduct("rltrace"), ["dump", p])
        #expect(r.status != 0)
        #expect(r.err.contains("stream_0"))
        #expect(r.err.contains("event.fields.data"))
        #expect(r.err.contains("byte offset"))
    }

    @Test("packetized metadata (magic 0x75D11D57) is unpacked")
    func packetizedMetadata() throws {
        let text = Array(TinyTrace.metadata.utf8)
        var bin: [UInt8] = []
        var off = 0
        var seq = 0
        while off < text.count {
            let chunk = Array(text[off..<min(off + 100, text.count)])
            let content = UInt32(37 + chunk.count) * 8
            let packet = UInt32(37 + 128) * 8
            bin += TinyTrace.u32(0x75D1_1D57) + [UInt8](repeating: 0, count: 16) + TinyTrace.u32(0) + TinyTrace.u32(content) + TinyTrace.u32(packet)
            bin += [0, 0, 0, 1, 8]
            bin += chunk + [UInt8](repeating: 0, count: 128 - chunk.count)
            off += 100; seq += 1
        }
        let p = try TinyTrace.write("packetized", packets: [.init(events: TinyTrace.events(4), seq: 0)])
        try Data(bin).write(to: URL(fileURLWithPath: p).appendingPathComponent("metadata"))
        #expect(try expectAgreesWithBabeltrace([p]) == 4)
    }

    @Test("stream files of a page or less are read, not mapped: a trace of thousands of small streams uses no mapping each")
    func smallStreamsAreNotMapped() throws {
        // A mapping per stream spent the process's vm.max_map_count (65 530): ctf-testsuite's stress/many-streams
        // with 65 536 one-event streams failed with "mmap failed". Here 3000 streams, whose events all decode in order.
        let p = try TinyTrace.write("many-small", packets: [.init(events: TinyTrace.events(1), seq: 0)])
        let one = try Data(contentsOf: URL(fileURLWithPath: p).appendingPathComponent("stream_0"))
        #expect(one.count <= 4096)
        for i in 1..<3000 { try one.write(to: URL(fileURLWithPath: p).appendingPathComponent("stream_\(i)")) }
        func mappings() throws -> Int {   // (read to its end: procfs files report a size of 0)
            let h = try #require(FileHandle(forReadingAtPath: "/proc/self/maps"))
            defer { try? h.close() }
            return h.readDataToEndOfFile().split(separator: UInt8(ascii: "\n")).count
        }
        let before = try mappings()
        let set = try CTFTraceSet(paths: [p])
        #expect(set.streams.count == 3000)
        var it = set.makeMergedIterator()
        var n = 0
        var during = 0
        while try it.next() {
            if n == 0 { during = try mappings() }   // every stream is open, its first event read
            n += 1
        }
        #expect(n == 3000)
        #expect(during - before < 100, "\(during - before) mappings for 3000 streams")
        // A file of more than a page is mapped, and decodes the same way.
        let big = try TinyTrace.write("one-big", packets: [.init(events: TinyTrace.events(400), seq: 0)])
        #expect(try Data(contentsOf: URL(fileURLWithPath: big).appendingPathComponent("stream_0")).count > 4096)
        #expect(try expectAgreesWithBabeltrace([big]) == 400)
    }

}
