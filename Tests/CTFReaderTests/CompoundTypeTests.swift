import Foundation
import Testing
import CTFReader

/// A hand-built trace using the TSDL declarations LTTng-UST does not emit: typedef, named structs and enums,
/// a variant in the payload, nested structs, arrays of structs, sequences of strings and structs, an event
/// context, an int32 aligned on 32 bits, and a 1 kHz clock.
enum CompoundTrace {
    /// The types, trace, clock and stream (PathTrace declares its events after them too).
    static let declarations = """
    /* CTF 1.8 */
    typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
    typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
    typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
    typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
    typedef integer { size = 32; align = 32; signed = true; } int32_aligned;
    trace { major = 1; minor = 8; byte_order = le;
            packet.header := struct { uint32_t magic; uint32_t stream_id; }; };
    env { hostname = "cx"; };
    clock { name = "ms"; freq = 1000; offset_s = 100; offset = 250; };
    typealias integer { size = 64; align = 8; signed = false; map = clock.ms.value; } := ts_t;
    struct point { uint16_t x; uint16_t y; };
    enum kind_e : uint8_t { NUM, TEXT, PT };
    stream {
        packet.context := struct { ts_t timestamp_begin; ts_t timestamp_end; uint64_t content_size; uint64_t packet_size; };
        event.header := struct { uint8_t id; ts_t timestamp; };
    };

    """
    static let metadata = declarations + """
    event {
        name = "cx:one"; id = 0;
        fields := struct {
            enum kind_e kind;
            variant <kind> { int32_aligned NUM; string TEXT; struct point PT; } val;
            struct { uint8_t n; struct point pts[2]; } nested;
            uint8_t count;
            string names[count];
            struct point path[count];
        };
    };
    event { name = "cx:two"; id = 1; context := struct { uint16_t tag; }; fields := struct { uint8_t z; }; };

    """

    static func write(events n: Int) throws -> String {
        var b = EventBytes()
        let headerSize = 8 + 32
        for i in 0..<n {
            let ts = UInt64(10 + i * 3)
            if i % 4 == 3 {
                b.u8(1); b.u64(ts); b.u16(i * 7); b.u8(i)
                continue
            }
            b.u8(0); b.u64(ts)
            let kind = i % 3
            b.u8(kind)
            switch kind {
            case 0:
                while (headerSize + b.bytes.count) % 4 != 0 { b.u8(0) }
                b.bytes += withUnsafeBytes(of: Int32(-1000 * i).littleEndian, Array.init)
            case 1: b.str("text \(i)")
            default: b.u16(i); b.u16(i + 1)
            }
            b.u8(i % 5); b.u16(i); b.u16(2 * i); b.u16(3 * i); b.u16(4 * i)
            let count = i % 4
            b.u8(count)
            for k in 0..<count { b.str("n\(i).\(k)") }
            for k in 0..<count { b.u16(k); b.u16(i) }
        }
        return try TinyTrace.writeOnePacket("compound", metadata: metadata, begin: 10, end: UInt64(10 + n * 3), body: b.bytes)
    }
}

/// Little-endian bytes of the hand-built traces' events.
struct EventBytes {
    var bytes: [UInt8] = []
    mutating func u8(_ v: Int) { bytes.append(UInt8(truncatingIfNeeded: v)) }
    mutating func u16(_ v: Int) { bytes += withUnsafeBytes(of: UInt16(truncatingIfNeeded: v).littleEndian, Array.init) }
    mutating func u64(_ v: UInt64) { bytes += withUnsafeBytes(of: v.littleEndian, Array.init) }
    mutating func str(_ s: String) { bytes += Array(s.utf8) + [0] }
}

/// Lengths and tags named by paths into structures: a sibling structure's field (`hdr.len`), the same
/// by its absolute path, a length two structures down (`hdr.inner.n`), and a variant inside a
/// structure whose tag is in that structure (`tag`, from inside `rec`). (babeltrace2 takes only a
/// plain name between a variant's `<>`.)
enum PathTrace {
    static let metadata = CompoundTrace.declarations + """
    enum sel_e : uint8_t { NUM, TEXT };
    event {
        name = "px:one"; id = 0;
        fields := struct {
            struct { uint8_t len; struct { uint8_t n; } inner; } hdr;
            enum sel_e kind;
            uint8_t data[hdr.len];
            uint16_t again[event.fields.hdr.len];
            uint8_t deep[hdr.inner.n];
            variant <kind> { uint16_t NUM; string TEXT; } v;
            struct { enum sel_e tag; variant <tag> { uint8_t NUM; string TEXT; } w; } rec;
        };
    };

    """

    static func write(events n: Int) throws -> String {
        var b = EventBytes()
        for i in 0..<n {
            b.u8(0); b.u64(UInt64(10 + i))
            let len = i % 4, n = i % 3, sel = i % 2
            b.u8(len); b.u8(n); b.u8(sel)
            for k in 0..<len { b.u8(i + k) }
            for k in 0..<len { b.u16(1000 * i + k) }
            for k in 0..<n { b.u8(100 + k) }
            if sel == 0 { b.u16(7 * i) } else { b.str("v\(i)") }
            b.u8(1 - sel)
            if sel == 1 { b.u8(i) } else { b.str("w\(i)") }
        }
        return try TinyTrace.writeOnePacket("paths", metadata: metadata, begin: 10, end: UInt64(10 + n), body: b.bytes)
    }
}

@Suite("CTFReader on compound TSDL types")
struct CompoundTypeTests {
    @Test("lengths and tags named by paths into structures (relative, absolute, two levels down, from inside a structure) agree with babeltrace2")
    func pathsIntoStructures() throws {
        let dir = try PathTrace.write(events: 12)
        #expect(try expectAgreesWithBabeltrace([dir]) == 12)
        var it = try CTFTraceSet(paths: [dir]).makeMergedIterator()
        for _ in 0..<3 { #expect(try it.next()) }
        // The third event (i = 2): two bytes, two 16-bit values, two more bytes, the NUM option.
        #expect(it.current.payloadField("data") == .array([.unsigned(2), .unsigned(3)]))
        #expect(it.current.payloadField("again") == .array([.unsigned(2000), .unsigned(2001)]))
        #expect(it.current.payloadField("deep") == .array([.unsigned(100), .unsigned(101)]))
        #expect(it.current.payloadField("v") == .variant(option: "NUM", value: .unsigned(14)))
    }

    @Test("variants, nested structs, arrays and sequences of structs and strings, event contexts, a 1 kHz clock agree with babeltrace2")
    func compound() throws {
        #expect(try expectAgreesWithBabeltrace([try CompoundTrace.write(events: 24)]) == 24)
    }

    @Test("lazily decoded values are exposed through the value API")
    func valueAPI() throws {
        let set = try CTFTraceSet(paths: [try CompoundTrace.write(events: 3)])
        var it = set.makeMergedIterator()
        #expect(try it.next())
        let s = it.current
        #expect(s.eventClass.name == "cx:one")
        #expect(s.timestamp == 100 * 1_000_000_000 + (250 + 10) * 1_000_000)
        #expect(s.payloadField("val") == .variant(option: "NUM", value: .signed(0)))
        #expect(s.payloadField("kind") == .enumeration(labels: ["NUM"], value: .unsigned(0)))
        #expect(try it.next())
        #expect(it.current.payloadField("val") == .variant(option: "TEXT", value: .string("text 1")))
        #expect(it.current.payloadField("names") == .array([.string("n1.0")]))
        #expect(it.current.payloadField("path") == .array([.structure([CTFNamedValue(name: "x", value: .unsigned(0)), CTFNamedValue(name: "y", value: .unsigned(1))])]))
    }
}
