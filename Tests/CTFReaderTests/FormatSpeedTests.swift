import Foundation
import Testing
import CTFReader

/// A hand-built trace with every field kind the byte formatter prints itself: signed and unsigned integers of
/// every size at their extremes, every display base, signed and unsigned enumerations with no, one and several
/// labels, strings needing every escape (and invalid UTF-8), text arrays and sequences, integer and enumeration
/// arrays and sequences, floats (finite and not), a structure (the decoded fallback), an event context, a
/// `cpu_id`, an origin with procname and vpid, timestamps before the epoch and a negative delta.
enum FormatTrace {
    static let metadata = """
    /* CTF 1.8 */
    typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
    typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
    typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
    trace { major = 1; minor = 8; byte_order = le;
            packet.header := struct { uint32_t magic; uint32_t stream_id; }; };
    env { hostname = "fmt"; procname = "proc"; vpid = 42; };
    clock { name = "c"; freq = 1000000000; offset_s = -2; offset = 0; };
    typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts_t;
    stream {
        packet.context := struct { ts_t timestamp_begin; ts_t timestamp_end; uint64_t content_size; uint64_t packet_size; uint32_t cpu_id; };
        event.header := struct { uint8_t id; ts_t timestamp; };
        event.context := struct {
            integer { size = 32; align = 8; signed = true; } _vtid;
            integer { size = 8; align = 8; signed = true; encoding = UTF8; } _procname[8];
        };
    };
    event { name = "fmt:ints"; id = 0; fields := struct {
        integer { size = 8; align = 8; signed = true; } _i8;
        integer { size = 16; align = 8; signed = true; } _i16;
        integer { size = 32; align = 8; signed = true; } _i32;
        integer { size = 64; align = 8; signed = true; } _i64;
        uint64_t _u64;
        integer { size = 32; align = 8; signed = true; base = 16; } _hex;
        integer { size = 16; align = 8; signed = false; base = 8; } _oct;
        integer { size = 8; align = 8; signed = true; base = 2; } _bin;
    }; };
    event { name = "fmt:enums"; id = 1; context := struct { uint8_t _tag; }; fields := struct {
        enum : integer { size = 8; align = 8; signed = true; } { NEG = -5 ... -1, ZERO = 0, ONE = 1, ANY = -5 ... 5 } _se;
        enum : integer { size = 32; align = 8; signed = false; base = 16; } { A = 1, B = 2 } _ue;
    }; };
    event { name = "fmt:strings"; id = 2; fields := struct {
        string _s;
        integer { size = 8; align = 8; signed = false; encoding = UTF8; } _txt[6];
        uint8_t _n;
        integer { size = 8; align = 8; signed = false; encoding = UTF8; } _seq[_n];
    }; };
    event { name = "fmt:arrays"; id = 3; fields := struct {
        integer { size = 16; align = 8; signed = true; } _a[3];
        uint8_t _m;
        integer { size = 32; align = 8; signed = false; base = 16; } _h[_m];
        enum : uint8_t { X = 1, Y = 2 } _e[2];
        floating_point { exp_dig = 8; mant_dig = 24; align = 8; } _f;
        floating_point { exp_dig = 11; mant_dig = 53; align = 8; } _d;
        struct { uint8_t _x; string _y; } _st;
    }; };

    """

    /// Writes the trace; returns its directory.
    static func write() throws -> String {
        var body: [UInt8] = []
        func le<T: FixedWidthInteger>(_ v: T) { body += withUnsafeBytes(of: v.littleEndian, Array.init) }
        func str(_ bytes: [UInt8]) { body += bytes + [0] }
        func header(_ id: UInt8, _ ts: UInt64) {
            body.append(id); le(ts)
            le(Int32(-7)); body += Array("worker\u{1}".utf8) + [0]
        }
        let t0: UInt64 = 999_999_900   // 0.0000001 s before -1 s
        header(0, t0)
        le(Int8.min); le(Int16(-2)); le(Int32.min); le(Int64.min); le(UInt64.max); le(Int32(-1)); le(UInt16(0o777)); le(Int8(-3))
        header(0, t0 + 1_000_000_050)
        le(Int8(0)); le(Int16(0)); le(Int32(0)); le(Int64(0)); le(UInt64(0)); le(Int32(0)); le(UInt16(0)); le(Int8(0))
        header(1, t0 + 1_000_000_100)
        body.append(7); le(Int8(-3)); le(UInt32(2))
        header(1, t0 + 1_000_000_090)   // earlier than the previous event: a negative delta
        body.append(0); le(Int8(7)); le(UInt32(9))
        header(1, t0 + 3_000_000_000)
        body.append(255); le(Int8(0)); le(UInt32(1))
        header(2, t0 + 3_000_000_001)
        str(Array("q\"b\\s\nt\tr\r\u{1}\u{1f}\u{7f} é ✓'?\u{7}\u{8}\u{1b}\u{c}\u{b}\u{85}\u{202e}\u{2069}".utf8)); body += Array("ab".utf8) + [0, 99, 100, 0]; body.append(3); body += Array("xyz".utf8)
        header(2, t0 + 3_000_000_002)
        str([0x41, 0xFF, 0x42, 0xC3]); body += Array("abcdef".utf8); body.append(0)
        header(3, t0 + 3_000_000_003)
        le(Int16(-1)); le(Int16(2)); le(Int16.min); body.append(2); le(UInt32(0xDEAD)); le(UInt32(0)); body += [1, 3]
        le(Float(1.5).bitPattern); le((-2.5e-10).bitPattern); body.append(7); str(Array("y".utf8))
        header(3, t0 + 3_000_000_004)
        le(Int16(0)); le(Int16(0)); le(Int16(0)); body.append(0); body += [2, 2]
        le(Float.infinity.bitPattern); le(Double.nan.bitPattern); body.append(0); str([])
        return try TinyTrace.writeOnePacket("format", metadata: metadata, begin: t0, end: t0 + 3_000_000_004,
                                            context: TinyTrace.u32(3), body: body)
    }

    /// Every event formatted into one in-memory `ByteSink` and, separately, line by line into a `String`.
    static func dump(_ path: String, style: CTFEventFormatter.Style) throws -> (buffer: String, lines: [String]) {
        let set = try CTFTraceSet(paths: [path])
        var it = set.makeMergedIterator()
        var f = CTFEventFormatter(style: style)
        let out = ByteSink()
        while try it.next() { f.format(it.current, into: out) }
        let buffer = out.text
        var it2 = try CTFTraceSet(paths: [path]).makeMergedIterator()   // streams are consumed: open again
        var g = CTFEventFormatter(style: style)
        var lines: [String] = []
        while try it2.next() {
            var s = ""
            g.format(it2.current, into: &s)
            lines.append(s)
        }
        return (buffer, lines)
    }
}

@Suite("rltrace dump's byte formatter: exact text and JSON for every field kind")
struct FormatSpeedTests {
    static let origin = "fmt:proc:(42)"
    static let ctx = "{ cpu_id = 3 }, { vtid = -7, procname = \"worker\\x01\" }"

    @Test("text: integers at their extremes in every base, enums, escapes, arrays, floats, a struct, negative times")
    func text() throws {
        let (buffer, lines) = try FormatTrace.dump(try FormatTrace.write(), style: .text)
        let o = Self.origin, c = Self.ctx
        let expected = [
            "[-1.000000100] (+?.?????????) \(o) fmt:ints: \(c), { i8 = -128, i16 = -2, i32 = -2147483648, i64 = -9223372036854775808, u64 = 18446744073709551615, hex = 0xFFFFFFFF, oct = 0777, bin = 0b11111101 }",
            "[-0.000000050] (+1.000000050) \(o) fmt:ints: \(c), { i8 = 0, i16 = 0, i32 = 0, i64 = 0, u64 = 0, hex = 0x0, oct = 00, bin = 0b00000000 }",
            "[0.000000000] (+0.000000050) \(o) fmt:enums: \(c), { tag = 7 }, { se = ( { \"NEG\", \"ANY\" } : container = -3 ), ue = ( \"B\" : container = 0x2 ) }",
            "[-0.000000010] (-0.000000010) \(o) fmt:enums: \(c), { tag = 0 }, { se = ( <unknown> : container = 7 ), ue = ( <unknown> : container = 0x9 ) }",
            "[1.999999900] (+1.999999910) \(o) fmt:enums: \(c), { tag = 255 }, { se = ( { \"ZERO\", \"ANY\" } : container = 0 ), ue = ( \"A\" : container = 0x1 ) }",
            "[1.999999901] (+0.000000001) \(o) fmt:strings: \(c), { s = \"q\\\"b\\\\s\\nt\\tr\\r\\x01\\x1f\\x7f é ✓\\'\\?\\a\\b\\e\\f\\v\\u{85}\\u{202e}\\u{2069}\", txt = \"ab\", n = 3, seq = \"xyz\" }",
            "[1.999999902] (+0.000000001) \(o) fmt:strings: \(c), { s = \"A\u{FFFD}B\u{FFFD}\", txt = \"abcdef\", n = 0, seq = \"\" }",
            "[1.999999903] (+0.000000001) \(o) fmt:arrays: \(c), { a = [ [0] = -1, [1] = 2, [2] = -32768 ], m = 2, h = [ [0] = 0xDEAD, [1] = 0x0 ], e = [ [0] = ( \"X\" : container = 1 ), [1] = ( <unknown> : container = 3 ) ], f = 1.5, d = -2.5e-10, st = { x = 7, y = \"y\" } }",
            "[1.999999904] (+0.000000001) \(o) fmt:arrays: \(c), { a = [ [0] = 0, [1] = 0, [2] = 0 ], m = 0, h = [ ], e = [ [0] = ( \"Y\" : container = 2 ), [1] = ( \"Y\" : container = 2 ) ], f = inf, d = nan, st = { x = 0, y = \"\" } }",
        ]
        #expect(lines.count == expected.count)
        for (got, want) in zip(lines, expected) { #expect(got == want + "\n") }
        #expect(buffer == lines.joined())
    }

    @Test("JSON: one valid object per event, decimal integers, enum objects, escapes, non-finite floats as strings")
    func json() throws {
        let (buffer, lines) = try FormatTrace.dump(try FormatTrace.write(), style: .json)
        let head = ",\"cpu_id\":3,\"hostname\":\"fmt\",\"context\":{\"vtid\":-7,\"procname\":\"worker\\u0001\"}"
        let expected = [
            "{\"timestamp_ns\":-1000000100,\"name\":\"fmt:ints\"\(head),\"fields\":{\"i8\":-128,\"i16\":-2,\"i32\":-2147483648,\"i64\":-9223372036854775808,\"u64\":18446744073709551615,\"hex\":-1,\"oct\":511,\"bin\":-3}}",
            "{\"timestamp_ns\":-50,\"name\":\"fmt:ints\"\(head),\"fields\":{\"i8\":0,\"i16\":0,\"i32\":0,\"i64\":0,\"u64\":0,\"hex\":0,\"oct\":0,\"bin\":0}}",
            "{\"timestamp_ns\":0,\"name\":\"fmt:enums\"\(head.dropLast()),\"tag\":7},\"fields\":{\"se\":{\"value\":-3,\"labels\":[\"NEG\",\"ANY\"]},\"ue\":{\"value\":2,\"labels\":[\"B\"]}}}",
            "{\"timestamp_ns\":-10,\"name\":\"fmt:enums\"\(head.dropLast()),\"tag\":0},\"fields\":{\"se\":{\"value\":7,\"labels\":[]},\"ue\":{\"value\":9,\"labels\":[]}}}",
            "{\"timestamp_ns\":1999999900,\"name\":\"fmt:enums\"\(head.dropLast()),\"tag\":255},\"fields\":{\"se\":{\"value\":0,\"labels\":[\"ZERO\",\"ANY\"]},\"ue\":{\"value\":1,\"labels\":[\"A\"]}}}",
            "{\"timestamp_ns\":1999999901,\"name\":\"fmt:strings\"\(head),\"fields\":{\"s\":\"q\\\"b\\\\s\\nt\\tr\\r\\u0001\\u001f\\u007f é ✓'?\\u0007\\u0008\\u001b\\u000c\\u000b\\u0085\\u202e\\u2069\",\"txt\":\"ab\",\"n\":3,\"seq\":\"xyz\"}}",
            "{\"timestamp_ns\":1999999902,\"name\":\"fmt:strings\"\(head),\"fields\":{\"s\":\"A\u{FFFD}B\u{FFFD}\",\"txt\":\"abcdef\",\"n\":0,\"seq\":\"\"}}",
            "{\"timestamp_ns\":1999999903,\"name\":\"fmt:arrays\"\(head),\"fields\":{\"a\":[-1,2,-32768],\"m\":2,\"h\":[57005,0],\"e\":[{\"value\":1,\"labels\":[\"X\"]},{\"value\":3,\"labels\":[]}],\"f\":1.5,\"d\":-2.5e-10,\"st\":{\"x\":7,\"y\":\"y\"}}}",
            "{\"timestamp_ns\":1999999904,\"name\":\"fmt:arrays\"\(head),\"fields\":{\"a\":[0,0,0],\"m\":0,\"h\":[],\"e\":[{\"value\":2,\"labels\":[\"Y\"]},{\"value\":2,\"labels\":[\"Y\"]}],\"f\":\"inf\",\"d\":\"nan\",\"st\":{\"x\":0,\"y\":\"\"}}}",
        ]
        #expect(lines.count == expected.count)
        for (got, want) in zip(lines, expected) { #expect(got == want + "\n") }
        #expect(buffer == lines.joined())
        for l in lines {
            #expect((try? JSONSerialization.jsonObject(with: Data(l.utf8))) != nil, "not JSON: \(l)")
        }
    }

    @Test("an event class with no `fields` prints no payload in text (babeltrace2: `name: `), an empty object in JSON")
    func eventWithoutPayload() throws {
        let dir = SharedDaemon.scratch.appendingPathComponent("no-payload-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try """
        /* CTF 1.8 */
        typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
        trace { major = 1; minor = 8; byte_order = le; };
        stream { event.header := struct { uint8_t id; }; };
        event { name = e; id = 1; };
        event { name = f; id = 2; fields := struct { uint8_t x; }; };
        """.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        try Data([1, 2, 7, 1]).write(to: dir.appendingPathComponent("stream_0"))
        let (buffer, lines) = try FormatTrace.dump(dir.path, style: .text)
        #expect(lines == ["[0.000000000] (+?.?????????) e: \n", "[0.000000000] (+0.000000000) f: { x = 7 }\n", "[0.000000000] (+0.000000000) e: \n"])
        #expect(buffer == lines.joined())
        let (jsonBuffer, json) = try FormatTrace.dump(dir.path, style: .json)
        #expect(json.first?.hasSuffix(",\"fields\":{}}\n") == true, "\(json)")
        #expect(jsonBuffer == json.joined())
    }

    /// The sink writes its buffer out in chunks (64 KiB in memory and to a pipe): a string field larger
    /// than a chunk — plain, or needing escapes and UTF-8 repair — goes through in pieces, whole and in order.
    @Test("string fields larger than the sink's chunk print whole, plain or escaped, in text and JSON")
    func hugeStrings() throws {
        let dir = SharedDaemon.scratch.appendingPathComponent("huge-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try """
        /* CTF 1.8 */
        typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
        trace { major = 1; minor = 8; byte_order = le; };
        stream { event.header := struct { uint8_t id; }; };
        event { name = big; id = 1; fields := struct { string s; uint8_t n; }; };
        """.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        let plain = String(repeating: "x", count: 200_000)
        let mixed = String(repeating: "y", count: 150_000) + "\n" + String(repeating: "é", count: 50_000) + String(repeating: "z", count: 100_000)
        var stream: [UInt8] = []
        stream += [1] + Array(plain.utf8) + [0, 7]
        stream += [1] + Array(mixed.utf8) + [0xFF, 0, 8]      // with an invalid byte: U+FFFD
        try Data(stream).write(to: dir.appendingPathComponent("stream_0"))
        let mixedShown = String(repeating: "y", count: 150_000) + "\\n" + String(repeating: "é", count: 50_000) + String(repeating: "z", count: 100_000) + "\u{FFFD}"
        let (text, textLines) = try FormatTrace.dump(dir.path, style: .text)
        #expect(textLines == ["[0.000000000] (+?.?????????) big: { s = \"\(plain)\", n = 7 }\n",
                              "[0.000000000] (+0.000000000) big: { s = \"\(mixedShown)\", n = 8 }\n"])
        #expect(text == textLines.joined())
        let (json, jsonLines) = try FormatTrace.dump(dir.path, style: .json)
        #expect(jsonLines == ["{\"timestamp_ns\":0,\"name\":\"big\",\"fields\":{\"s\":\"\(plain)\",\"n\":7}}\n",
                              "{\"timestamp_ns\":0,\"name\":\"big\",\"fields\":{\"s\":\"\(mixedShown)\",\"n\":8}}\n"])
        #expect(json == jsonLines.joined())
    }

    @Test("a buffer flushed to a file descriptor writes exactly its bytes and empties")
    func flush() throws {
        let path = SharedDaemon.scratch.appendingPathComponent("flush-\(UUID().uuidString.prefix(6))").path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0)
        let (buffer, _) = try FormatTrace.dump(try FormatTrace.write(), style: .text)
        let set = try CTFTraceSet(paths: [try FormatTrace.write()])
        var it = set.makeMergedIterator()
        var f = CTFEventFormatter(style: .text)
        let out = ByteSink(fd: fd, path: path)
        var written = 0
        while try it.next() {
            f.format(it.current, into: out)
            out.flush()
            #expect(out.writeError == 0)
            // Everything formatted so far is in the file once `flush` returns.
            let size = (FileManager.default.contents(atPath: path) ?? Data()).count
            #expect(size > written)
            written = size
        }
        close(fd)
        #expect(String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self) == buffer)
        out.flush()   // nothing pending: no write at all (the descriptor is closed)
        #expect(out.writeError == 0)
    }
}
