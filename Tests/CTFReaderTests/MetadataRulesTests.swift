import Foundation
import Testing
@testable import CTFReader

/// One CTF 1.8 metadata rule: TinyTrace's metadata with `replace` substituted by `with` (or appended), and the
/// error it must give: a `file:line:column` syntax/semantic error on the line holding `lineMarker`, naming `rule`.
struct MetadataRuleCase: CustomStringConvertible, Sendable {
    var name: String
    var replace: String?
    var with: String
    var lineMarker: String
    var rule: String
    var description: String { name }
}

private let lenField = "uint32_t _len;"

let refusedMetadata: [MetadataRuleCase] = [
    // A name declared twice in one scope.
    .init(name: "typealias declared twice", replace: nil,
          with: "typealias integer { size = 16; align = 8; signed = false; } := uint8_t;", lineMarker: "size = 16", rule: "`uint8_t` is already declared in this scope"),
    .init(name: "typedef declared twice", replace: nil,
          with: "typedef uint32_t myint;\ntypedef uint64_t myint;", lineMarker: "uint64_t myint", rule: "`myint` is already declared in this scope"),
    .init(name: "array typedef declared twice", replace: nil,
          with: "typedef uint32_t arr[10];\ntypedef uint64_t arr[10];", lineMarker: "uint64_t arr", rule: "`arr` is already declared in this scope"),
    .init(name: "struct name declared twice", replace: nil,
          with: "struct a { uint8_t x; };\nstruct a { uint8_t y; };", lineMarker: "uint8_t y", rule: "`struct a` is already declared in this scope"),
    .init(name: "field declared twice", replace: lenField, with: "uint32_t _len; uint8_t _len;", lineMarker: "uint8_t _len", rule: "duplicate field `_len`"),
    // Reserved keywords as names.
    .init(name: "keyword as field name", replace: lenField, with: "uint32_t stream; " + lenField, lineMarker: "uint32_t stream; ", rule: "`stream` is a reserved keyword and cannot be used as a field name"),
    .init(name: "keyword as typealias name", replace: nil, with: "typealias integer { size = 8; } := trace;", lineMarker: ":= trace", rule: "`trace` is a reserved keyword and cannot be used as a typealias name"),
    .init(name: "keyword as typedef name", replace: nil, with: "typedef uint32_t int;", lineMarker: "typedef uint32_t int", rule: "`int` is a reserved keyword and cannot be used as a typedef name"),
    .init(name: "keyword as variant tag", replace: lenField,
          with: "enum : uint8_t { a, b } _sel; variant <variant> { uint8_t a; uint32_t b; } _v; " + lenField, lineMarker: "<variant>", rule: "`variant` is a reserved keyword"),
    // Integer attributes written as strings.
    .init(name: "integer size as string", replace: nil, with: "typealias integer { size = \"32\"; } := str_size_t;", lineMarker: "str_size_t", rule: "attribute `size` must be an integer constant, not the string \"32\""),
    .init(name: "integer align as string", replace: nil, with: "typealias integer { size = 8; align = \"8\"; } := str_align_t;", lineMarker: "str_align_t", rule: "attribute `align` must be an integer constant"),
    .init(name: "integer signed as string", replace: nil, with: "typealias integer { size = 8; signed = \"false\"; } := str_signed_t;", lineMarker: "str_signed_t", rule: "attribute `signed` must not be a string literal"),
    .init(name: "integer base as string", replace: nil, with: "typealias integer { size = 8; base = \"decimal\"; } := str_base_t;", lineMarker: "str_base_t", rule: "attribute `base` must not be a string literal"),
    .init(name: "integer encoding as string", replace: nil, with: "typealias integer { size = 8; encoding = \"ascii\"; } := str_enc_t;", lineMarker: "str_enc_t", rule: "attribute `encoding` must not be a string literal"),
    // Enumerations.
    .init(name: "enumeration without entries", replace: lenField, with: "enum : uint8_t { } _e; " + lenField, lineMarker: "_e;", rule: "enumeration without any entry"),
    .init(name: "enumeration value above its container", replace: lenField, with: "enum : uint8_t { A, B, C = 256 } _e; " + lenField, lineMarker: "_e;", rule: "enumerator `C` value 256 is outside the range of its 8-bit unsigned container (0 … 255)"),
    .init(name: "implicit enumeration value above its container", replace: lenField, with: "enum : uint8_t { A = 255, B } _e; " + lenField, lineMarker: "_e;", rule: "enumerator `B` value 256 is outside"),
    .init(name: "negative enumeration value in an unsigned container", replace: nil, with: "enum neg : uint32_t { x = -1 };", lineMarker: "x = -1", rule: "enumerator `x` value -1 is outside the range of its 32-bit unsigned container"),
    .init(name: "enumeration value below a signed container", replace: nil,
          with: "typealias integer { size = 8; signed = true; } := int8_t;\nenum low : int8_t { A, B = -129 };", lineMarker: "B = -129", rule: "enumerator `B` value -129 is outside the range of its 8-bit signed container (-128 … 127)"),
    // Array lengths where a constant is required.
    .init(name: "array length identifier outside a structure", replace: nil, with: "typedef uint32_t A[x];", lineMarker: "A[x]", rule: "array length `x` must be an integer constant here"),
    .init(name: "array length keyword", replace: lenField, with: lenField + " uint8_t _k[typedef];", lineMarker: "_k[typedef]", rule: "array length `typedef`: `typedef` is a reserved keyword"),
    .init(name: "array length type name", replace: lenField, with: lenField + " uint8_t _k[uint32_t];", lineMarker: "_k[uint32_t]", rule: "array length `uint32_t` names a type"),
    // UUID literals.
    .init(name: "uuid too short", replace: "major = 1;", with: "major = 1; uuid = \"2a6422d0-6cee-11e0\";", lineMarker: "uuid =", rule: "is not a UUID"),
    .init(name: "uuid too long", replace: "major = 1;", with: "major = 1; uuid = \"2a6422d0-6cee-11e0-8c08-cb07d7b3a5642a6422d0\";", lineMarker: "uuid =", rule: "is not a UUID"),
    .init(name: "uuid with a bad character", replace: "major = 1;", with: "major = 1; uuid = \"2a6422d0-6cee-11e0-8c08-cb07d7b3a56g\";", lineMarker: "uuid =", rule: "is not a UUID"),
    .init(name: "clock uuid empty", replace: "clock { name = \"c\";", with: "clock { name = \"c\"; uuid = \"\";", lineMarker: "clock {", rule: "`clock uuid` \"\" (0 bytes) is not a UUID"),
    // Variant tags that are not enumerations.
    .init(name: "variant tag is a string", replace: lenField,
          with: lenField + " string _t; variant <_t> { uint8_t a; uint32_t b; } _v;", lineMarker: "variant <_t>", rule: "variant tag `t` is a string, not an enumeration"),
    .init(name: "variant tag is a floating point number", replace: lenField,
          with: lenField + " floating_point { exp_dig = 8; mant_dig = 24; } _t; variant <_t> { uint8_t a; uint32_t b; } _v;", lineMarker: "variant <_t>", rule: "variant tag `t` is a floating point number, not an enumeration"),
    .init(name: "variant whose options match no label of its tag", replace: lenField,
          with: lenField + " enum : uint8_t { \" a \", \" b \" } _t; variant <_t> { uint8_t a; uint32_t b; } _v;", lineMarker: "variant <_t>", rule: "no option of the variant matches a label"),
    // String escapes (C99's, as CTF 1.8 7.1 says).
    .init(name: "hexadecimal escape with no digit", replace: "hostname = \"tiny\"", with: "hostname = \"a\\xZZ\"", lineMarker: "hostname =", rule: "`\\x` escape with no hexadecimal digit"),
    .init(name: "escape beyond a byte", replace: "hostname = \"tiny\"", with: "hostname = \"\\x1FF\"", lineMarker: "hostname =", rule: "escape value 511 does not fit a byte"),
    .init(name: "octal escape beyond a byte", replace: "hostname = \"tiny\"", with: "hostname = \"\\777\"", lineMarker: "hostname =", rule: "escape value 511 does not fit a byte"),
    // Clock offsets beyond what Int64 nanoseconds hold.
    .init(name: "clock offset_s beyond 2^62 ns", replace: "offset_s = 1000;", with: "offset_s = 9223372036854775807;", lineMarker: "offset_s =", rule: "clock offset_s = 9223372036854775807 is beyond"),
]

@Suite("CTF 1.8 metadata rules: what the specification forbids is refused with file:line:column and the rule")
struct MetadataRulesTests {
    static func metadata(_ c: MetadataRuleCase) -> String {
        if let r = c.replace {
            precondition(TinyTrace.metadata.contains(r), "base metadata lacks \(r)")
            return TinyTrace.metadata.replacingOccurrences(of: r, with: c.with)
        }
        // Declarations that need the base typealiases go after them, before `trace`.
        return TinyTrace.metadata.replacingOccurrences(of: "trace {", with: c.with + "\ntrace {")
    }

    @Test("refused", arguments: refusedMetadata)
    func refused(_ c: MetadataRuleCase) throws {
        let text = Self.metadata(c)
        let line = text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex(where: { $0.contains(c.lineMarker) })! + 1
        let p = try TinyTrace.write("rule", packets: [.init(events: TinyTrace.events(2), seq: 0)], metadata: text)
        expectReaderError([p]) { e in
            guard case .metadataSyntax(let path, let l, let col, let m) = e else { return false }
            return path.hasSuffix("/metadata") && l == line && col >= 1 && m.contains(c.rule)
        }
    }

    @Test("packetized metadata whose packet headers are big-endian while the trace is little-endian is refused")
    func packetizedByteOrderMismatch() throws {
        func packetize(bigEndian: Bool) -> [UInt8] {
            let text = Array(TinyTrace.metadata.utf8)
            func u32(_ v: UInt32) -> [UInt8] { bigEndian ? withUnsafeBytes(of: v.bigEndian, Array.init) : TinyTrace.u32(v) }
            var bin: [UInt8] = []
            var off = 0
            while off < text.count {
                let chunk = Array(text[off..<min(off + 200, text.count)])
                bin += u32(0x75D1_1D57) + [UInt8](repeating: 0, count: 16) + u32(0) + u32(UInt32(37 + chunk.count) * 8) + u32(UInt32(37 + 200) * 8)
                bin += [0, 0, 0, 1, 8] + chunk + [UInt8](repeating: 0, count: 200 - chunk.count)
                off += 200
            }
            return bin
        }
        let p = try TinyTrace.write("pk-be", packets: [.init(events: TinyTrace.events(2), seq: 0)])
        try Data(packetize(bigEndian: true)).write(to: URL(fileURLWithPath: p).appendingPathComponent("metadata"))
        let line = TinyTrace.metadata.split(separator: "\n", omittingEmptySubsequences: false).firstIndex(where: { $0.contains("byte_order = le") })! + 1
        expectReaderError([p]) { e in
            guard case .metadataSyntax(let path, let l, _, let m) = e else { return false }
            return path.hasSuffix("/metadata") && l == line && m.contains("contradicts the big-endian headers of the packetized metadata")
        }
        // The same packets in little endian agree with the trace and decode.
        try Data(packetize(bigEndian: false)).write(to: URL(fileURLWithPath: p).appendingPathComponent("metadata"))
        #expect(try readerLines([p]).lines.count == 2)
    }

    @Test("an event whose empty, aligned payload struct would end past the packet content is refused")
    func emptyAlignedPayloadPastTheEnd() throws {
        let meta = """
        /* CTF 1.8 */
        typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
        trace { major = 1; minor = 8; byte_order = le; packet.header := struct { uint32_t magic; uint32_t stream_id; }; };
        event { name = "e"; fields := struct { struct { } align(4096) _s; }; };
        """
        let dir = SharedDaemon.scratch.appendingPathComponent("aligned-empty-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try meta.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        // Header (8 bytes) and one byte: the payload would align to byte 512, past the 9-byte packet.
        try Data(TinyTrace.u32(0xC1FC_1FC1) + TinyTrace.u32(0) + [0x42]).write(to: dir.appendingPathComponent("stream_0"))
        expectReaderError([dir.path]) { e in
            guard case .malformed(let path, let off, let field, let m) = e else { return false }
            return path.hasSuffix("stream_0") && off == 8 && field == "event.fields" && m.contains("alignment to 4096 bits") && m.contains("past the end")
        }
    }

    // MARK: what the specification allows

    /// Appends `extra` to the single event of a one-packet TinyTrace and fixes the packet's sizes.
    static func appendToSingleEvent(_ dir: String, _ extra: [UInt8]) throws {
        try insertIntoPacket(dir, [(extra, nil)])
    }

    /// Inserts each chunk at its byte offset in the one packet of a TinyTrace (at the end for nil; offsets in the
    /// original file, later ones first) and fixes the packet's sizes.
    static func insertIntoPacket(_ dir: String, _ chunks: [(bytes: [UInt8], at: Int?)]) throws {
        let streamURL = URL(fileURLWithPath: dir).appendingPathComponent("stream_0")
        var bytes = [UInt8](try Data(contentsOf: streamURL))
        for c in chunks.sorted(by: { ($0.at ?? .max) > ($1.at ?? .max) }) { bytes.insert(contentsOf: c.bytes, at: c.at ?? bytes.count) }
        let size = UInt64(bytes.count * 8)
        bytes.replaceSubrange(24..<32, with: TinyTrace.u64(size))   // content_size
        bytes.replaceSubrange(32..<40, with: TinyTrace.u64(size))   // packet_size
        try Data(bytes).write(to: streamURL)
    }

    @Test("names that differ only by the leading-underscore escape are distinct declarations")
    func escapedNamesAreDistinct() throws {
        let m = TinyTrace.metadata.replacingOccurrences(of: "string _s; }", with: "string _s; string s; string __s; }")
        var evs = TinyTrace.events(1)
        evs[0].text = "a"
        let p = try TinyTrace.write("escapes", packets: [.init(events: evs, seq: 0)], metadata: m)
        try Self.appendToSingleEvent(p, Array("b\0c\0".utf8))
        let set = try CTFTraceSet(paths: [p])
        let s = set.streams[0]
        #expect(try s.next())
        #expect(s.payloadFieldNames == ["len", "data", "s", "s", "_s"])
        #expect(s.payload().map(\.value).suffix(3) == [.string("a"), .string("b"), .string("c")])
        #expect(try !s.next())
    }

    @Test("a struct declared inside another struct's body, and two struct specifiers in one declaration")
    func innerStructDeclarations() throws {
        let decls = """
        struct dummy1 { uint8_t f1; }
        struct dummy2 { uint32_t f2; struct dummy1 f3; };
        struct outer { struct inner { uint8_t a; }; struct inner x; uint8_t y; };
        """
        let m = TinyTrace.metadata.replacingOccurrences(of: "trace {", with: decls + "\ntrace {")
            .replacingOccurrences(of: "string _s; }", with: "string _s; struct outer _o; struct dummy2 _d; }")
        var evs = TinyTrace.events(1)
        evs[0].text = "x"
        let p = try TinyTrace.write("inner", packets: [.init(events: evs, seq: 0)], metadata: m)
        // The payload's extra structs read past the hand-built event: only the metadata is checked here.
        let t = try CTFTrace(directory: p)
        guard case .structure(let fs, _)? = t.metadata.eventClasses[0].payload else { Issue.record("no payload"); return }
        #expect(fs.map(\.name) == ["len", "data", "s", "o", "d"])
        guard case .structure(let outer, _) = fs[3].type, case .structure(let inner, _) = outer[0].type else { Issue.record("bad outer"); return }
        #expect(outer.map(\.name) == ["x", "y"] && inner.map(\.name) == ["a"])
    }

    @Test("`field`, `_field` and `__field` in one struct are three fields")
    func underscoreFields() throws {
        let m = TinyTrace.metadata.replacingOccurrences(of: "trace {", with: "struct dummy { uint32_t field; uint32_t _field; uint32_t __field; };\ntrace {")
        let p = try TinyTrace.write("underscores", packets: [.init(events: TinyTrace.events(1), seq: 0)], metadata: m)
        #expect(try readerLines([p]).lines.count == 1)
    }

    @Test("unknown attributes are ignored with a warning naming file, line and column")
    func unknownAttributesWarn() throws {
        let m = TinyTrace.metadata
            .replacingOccurrences(of: "typealias integer { size = 8; align = 8; signed = false; }", with: "typealias integer { size = 8; align = 8; signed = false; aa = bb; }")
            .replacingOccurrences(of: "major = 1;", with: "major = 1; blah = \"aaa\";")
            .replacingOccurrences(of: "event { name = \"tiny:seq\"; id = 0;", with: "event { name = \"tiny:seq\"; id = 0; extra := struct { uint8_t f; };")
        let p = try TinyTrace.write("unknown-attrs", packets: [.init(events: TinyTrace.events(3), seq: 0)], metadata: m)
        let (lines, set) = try readerLines([p])
        #expect(lines.count == 3)
        let w = set.warnings.filter { $0.path.hasSuffix("/metadata") }.map(\.message)
        #expect(w.count == 3, "\(w)")
        #expect(w.contains { $0.hasPrefix("line 2, column ") && $0.contains("unknown integer attribute `aa` ignored") })
        #expect(w.contains { $0.contains("unknown attribute `blah` in `trace` block ignored") })
        #expect(w.contains { $0.contains("unknown attribute `extra` in `event` block ignored") })
        // The byte offset points at the attribute in the file.
        let aa = set.warnings.first { $0.message.contains("`aa`") }!
        let bytes = Array(m.utf8)
        #expect(String(decoding: bytes[aa.offset..<(aa.offset + 2)], as: UTF8.self) == "aa")
    }

    @Test("integers wider than 64 bits are decoded and shown in hexadecimal")
    func wideIntegers() throws {
        let m = TinyTrace.metadata
            .replacingOccurrences(of: "trace {", with: "typealias integer { size = 128; align = 8; signed = false; } := uint128_t;\ntypealias integer { size = 72; align = 8; signed = true; } := int72_t;\ntrace {")
            .replacingOccurrences(of: "string _s; }", with: "string _s; uint128_t _w; int72_t _n; uint8_t _after; }")
        var evs = TinyTrace.events(1)
        // _w = 0x0102…10 little endian; _n = -2 in 72 bits; then 0x2A.
        let wide: [UInt8] = Array(1...16).reversed().map(UInt8.init)
        let neg: [UInt8] = [0xFE] + [UInt8](repeating: 0xFF, count: 8)
        evs[0].text = "w"
        let p = try TinyTrace.write("wide", packets: [.init(events: evs, seq: 0)], metadata: m)
        try Self.appendToSingleEvent(p, wide + neg + [0x2A])
        let set = try CTFTraceSet(paths: [p])
        let s = set.streams[0]
        #expect(try s.next())
        let typed = s.typedPayload()
        let w = typed.first { $0.0 == "w" }!, n = typed.first { $0.0 == "n" }!
        #expect(wideIntegerDisplayText(w.2, w.1) == "0x102030405060708090a0b0c0d0e0f10")
        #expect(wideIntegerDisplayText(n.2, n.1) == "-0x2")
        #expect(s.payloadField("after") == .unsigned(42))
        #expect(wideIntegerDisplayText(.unsigned(1), w.1) == nil)
        #expect(try !s.next())
        // Big-endian bit order, unaligned.
        let be: [UInt8] = [0x80, 0, 0, 0, 0, 0, 0, 0, 0x01]
        let limbs = be.withUnsafeBytes { readWideBits($0.baseAddress!, 0, 72, bigEndian: true) }
        #expect(limbs == [0x01, 0x80])
        #expect(wideIntegerText(limbs: limbs, size: 72, signed: false) == "0x800000000000000001")
    }

    @Test("a packet with a content size and no packet size ends with its content; the next packet follows (as babeltrace2 reads it)",
          arguments: [(fieldBits: 32, contentBits: 224, packetBytes: 28), (fieldBits: 4, contentBits: 196, packetBytes: 25)])
    func contentSizeWithoutPacketSize(_ c: (fieldBits: Int, contentBits: Int, packetBytes: Int)) throws {
        // ctf-testsuite's regression/stream/pass/2-packets-no-packet-size, and the same with a content that ends
        // inside a byte (the packet then ends at the next byte). Read as one packet spanning the file, the second
        // packet's events were lost without a word.
        let meta = """
        /* CTF 1.8 */
        typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
        typealias integer { size = 32; align = 8; signed = false; base = hex; } := uint32_t;
        trace { major = 1; minor = 8; byte_order = le; packet.header := struct { uint32_t magic; uint8_t uuid[16]; }; };
        stream { packet.context := struct { uint32_t content_size; }; };
        event { name = e; fields := struct { integer { size = \(c.fieldBits); align = 1; signed = false; } f; }; };
        """
        let dir = SharedDaemon.scratch.appendingPathComponent("content-only-\(c.fieldBits)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try meta.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        func packet(_ value: UInt32) -> [UInt8] {
            var p = TinyTrace.u32(0xC1FC_1FC1) + [UInt8](repeating: 0xAB, count: 16) + TinyTrace.u32(UInt32(c.contentBits))
            p += c.fieldBits == 32 ? TinyTrace.u32(value) : [UInt8(value & 0xF)]
            #expect(p.count == c.packetBytes)
            return p
        }
        try Data(packet(0x4242_4242 & (c.fieldBits == 32 ? ~0 : 0xF)) + packet(0x4343_4343 & (c.fieldBits == 32 ? ~0 : 0xF)))
            .write(to: dir.appendingPathComponent("stream_0"))
        let set = try CTFTraceSet(paths: [dir.path])
        let s = set.streams[0]
        var values: [Int64] = []
        while try s.next() { values.append(try #require(s.payloadInteger(at: 0))) }
        #expect(values == (c.fieldBits == 32 ? [0x4242_4242, 0x4343_4343] : [0x2, 0x3]))
        #expect(s.warnings.isEmpty, "\(s.warnings)")
    }


    @Test("string literals take C99's escapes: simple, octal of one to three digits, hexadecimal of one to three; a NUL ends the string")
    func stringEscapes() throws {
        // ctf-testsuite's regression/metadata/pass/string-literal-escape, whose expected text is babeltrace's.
        let value = #"\nabc \" hex: \x41, \x23, \x023, \x0231,\noct: \101, \043, \43, \0431, \a\b\f\r\t\v\\\'\?\0NOT SEEN"#
        let m = TinyTrace.metadata.replacingOccurrences(of: "hostname = \"tiny\"", with: "hostname = \"\(value)\"")
        let p = try TinyTrace.write("escapes-lit", packets: [.init(events: TinyTrace.events(1), seq: 0)], metadata: m)
        let set = try CTFTraceSet(paths: [p])
        #expect(set.traces[0].hostname == "\nabc \" hex: A, #, #, #1,\noct: A, #, #, #1, \u{7}\u{8}\u{c}\r\t\u{b}\\'?")
    }


    /// The timestamps (ns since the epoch) of a TinyTrace of three events written with `metadata`.
    static func timestamps(_ metadata: String, _ name: String) throws -> [Int64] {
        let p = try TinyTrace.write(name, packets: [.init(events: TinyTrace.events(3), seq: 0)], metadata: metadata)
        let s = try CTFTraceSet(paths: [p]).streams[0]
        var out: [Int64] = []
        while try s.next() { out.append(s.timestamp) }
        return out
    }

    @Test("time fields no clock maps take the trace's only clock, or an implicit 1 GHz one; with several clocks they are refused")
    func unmappedTimestamps() throws {
        // babeltrace2's rule (lttng-modules 2.0's traces map no clock: ctf-testsuite's stream/pass/lttng-modules-trace).
        // The packet context's timestamp_begin/end and the event header's timestamp are all unmapped here.
        let mapped = try Self.timestamps(TinyTrace.metadata, "ts-mapped")
        #expect(mapped == [1000_000_000_100, 1000_000_000_110, 1000_000_000_120])
        let unmapped = TinyTrace.metadata.replacingOccurrences(of: "map = clock.c.value; ", with: "")
        #expect(unmapped != TinyTrace.metadata)
        #expect(try Self.timestamps(unmapped, "ts-one-clock") == mapped)
        let noClock = unmapped.replacingOccurrences(of: #"clock { name = "c"; freq = 1000000000; offset_s = 1000; };"#, with: "")
        #expect(noClock != unmapped)
        #expect(try Self.timestamps(noClock, "ts-no-clock") == [100, 110, 120])
        let twoClocks = unmapped.replacingOccurrences(of: "offset_s = 1000; };", with: #"offset_s = 1000; }; clock { name = "d"; };"#)
        let p = try TinyTrace.write("ts-two-clocks", packets: [.init(events: TinyTrace.events(3), seq: 0)], metadata: twoClocks)
        expectReaderError([p]) { e in
            guard case .metadataSemantic(let path, let m) = e else { return false }
            return path.hasSuffix("/metadata") && m.contains("field `stream.") && m.contains("is mapped to no clock and the trace declares 2 (c, d)")
        }
    }

    @Test("a variant option is chosen by the tag label equal to its name as written (`_x`), else to its name (`x`)")
    func variantOptionsByWrittenName() throws {
        // babeltrace2 matches labels to the names as written (its tests' meta-variant-two-underscores: label
        // "__PELCHAT", option `__PELCHAT`, a field named `_PELCHAT`); a label equal to the unescaped name still selects.
        for (labels, options) in [(#""_a", "__b""#, "uint8_t _a; uint32_t __b;"), (#""a", "b""#, "uint8_t _a; uint32_t _b;")] {
            let m = TinyTrace.metadata.replacingOccurrences(of: lenField,
                with: "enum : uint8_t { \(labels) } _t; variant <_t> { \(options) } _v; " + lenField)
            var evs = TinyTrace.events(2)
            evs[0].data = []; evs[1].data = []
            let p = try TinyTrace.write("variant-written", packets: [.init(events: evs, seq: 0)], metadata: m)
            // Put the tag and the option before each event's _len: tag 1 (the second option, 4 bytes), then tag 0 (1 byte).
            // Each event: id (1 byte), timestamp (8), then its fields; event 0's are _len 0 and "ev0\0" (8 bytes).
            let first = HandBuiltTrace.packetPrefixSize + 9, second = first + 8 + 9
            try Self.insertIntoPacket(p, [([1, 0x44, 0x33, 0x22, 0x11], first), ([0, 0x2A], second)])
            let lines = try readerLines([p]).lines
            #expect(lines.count == 2)
            #expect(lines.first?.contains("v = { 0x11223344 }") == true || lines.first?.contains("v = { 287454020 }") == true, "\(lines)")
            #expect(lines.last?.contains("v = { 42 }") == true, "\(lines)")
        }
    }

    @Test("a character constant is an integer: `'\\n'` and `'a'` as attribute values and enumeration values")
    func characterConstants() throws {
        let m = TinyTrace.metadata.replacingOccurrences(of: "byte_order = le;", with: "byte_order = le; test3 = '\\n';")
            .replacingOccurrences(of: lenField, with: "enum : uint8_t { nl = '\\n', a = 'a' } _e; " + lenField)
        let p = try TinyTrace.write("char-const", packets: [.init(events: TinyTrace.events(1), seq: 0)], metadata: m)
        let set = try CTFTraceSet(paths: [p])
        guard case .structure(let fields, _)? = set.traces[0].metadata.eventClasses.first?.payload,
              case .enumeration(_, let maps)? = fields.first(where: { $0.name == "e" })?.type else {
            Issue.record("no enumeration `e`"); return
        }
        #expect(maps.map { "\($0.label)=\($0.lower)" } == ["nl=10", "a=97"])
        for bad in ["''", "'ab'", "'a"] {
            let b = TinyTrace.metadata.replacingOccurrences(of: "byte_order = le;", with: "byte_order = le; test3 = \(bad);")
            let q = try TinyTrace.write("char-bad", packets: [.init(events: TinyTrace.events(1), seq: 0)], metadata: b)
            expectReaderError([q]) { e in
                guard case .metadataSyntax(_, _, _, let msg) = e else { return false }
                return msg.contains("character constant")
            }
        }
    }


    @Test("a variant of 3000 options selects by label (each label's ranges found once, not option by option)")
    func largeVariant() throws {
        // ctf-testsuite's stress/variant-many-tags (2^19 options) ran past 120 s when every option scanned every label.
        let n = 3000
        let labels = (0..<n).map { "\"l\($0)\"" }.joined(separator: ", ")
        let options = (0..<n).map { "uint8_t l\($0);" }.joined(separator: " ")
        let m = TinyTrace.metadata
            .replacingOccurrences(of: "trace {", with: "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\ntrace {")
            .replacingOccurrences(of: lenField, with: "enum : uint16_t { \(labels) } _t; variant <_t> { \(options) } _v; " + lenField)
        var evs = TinyTrace.events(1)
        evs[0].data = []
        let p = try TinyTrace.write("large-variant", packets: [.init(events: evs, seq: 0)], metadata: m)
        try Self.insertIntoPacket(p, [([UInt8(2999 & 0xFF), UInt8(2999 >> 8), 0x7B], HandBuiltTrace.packetPrefixSize + 9)])
        let lines = try readerLines([p]).lines
        #expect(lines.count == 1 && lines[0].contains(#"t = ( "l2999" : container = 2999 ), v = { 123 }"#), "\(lines)")
    }

}
