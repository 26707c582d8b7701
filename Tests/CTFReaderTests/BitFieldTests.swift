import Foundation
import Testing
import CTFReader

/// Writes integers of any size at any bit position in CTF's little- or big-endian bit order.
struct BitWriter {
    var bytes: [UInt8] = []
    var pos = 0 // bits
    let bigEndian: Bool

    mutating func align(_ a: Int) {
        while pos % a != 0 { pos += 1 }
        ensure()
    }
    private mutating func ensure() { while bytes.count * 8 < pos { bytes.append(0) } }

    mutating func put(_ value: UInt64, bits n: Int, align a: Int = 1) {
        align(a)
        for i in 0..<n {
            let bit = bigEndian ? (value >> UInt64(n - 1 - i)) & 1 : (value >> UInt64(i)) & 1
            let p = pos + i
            while bytes.count <= p / 8 { bytes.append(0) }
            if bit == 1 { bytes[p / 8] |= bigEndian ? UInt8(0x80) >> UInt8(p % 8) : UInt8(1) << UInt8(p % 8) }
        }
        pos += n
        ensure()
    }
    mutating func putString(_ s: String) {
        align(8)
        for b in s.utf8 { put(UInt64(b), bits: 8) }
        put(0, bits: 8)
    }
}

/// A trace whose fields are bit-fields (not byte aligned), in either byte order, with a 27-bit timestamp that wraps.
enum BitTrace {
    static func metadata(bigEndian: Bool) -> String {
        """
        /* CTF 1.8 */
        typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
        typealias integer { size = 64; align = 8; signed = false; } := uint64_t;
        trace { major = 1; minor = 8; byte_order = \(bigEndian ? "be" : "le");
                packet.header := struct { uint32_t magic; uint32_t stream_id; }; };
        env { hostname = "bits"; };
        clock { name = "c"; freq = 1000000000; offset_s = 7; offset = 1500000000; };
        typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts64_t;
        typealias integer { size = 27; align = 1; signed = false; map = clock.c.value; } := ts27_t;
        stream {
            packet.context := struct { ts64_t timestamp_begin; ts64_t timestamp_end; uint64_t content_size; uint64_t packet_size; };
            event.header := struct { ts27_t timestamp; };
        };
        event {
            name = "bits:ev";
            fields := struct {
                integer { size = 3; align = 1; signed = true; } _a;
                integer { size = 13; align = 1; signed = false; base = 16; } _b;
                integer { size = 7; align = 1; signed = false; base = 8; } _c;
                integer { size = 41; align = 1; signed = true; } _d;
                enum : integer { size = 4; align = 1; signed = false; } { ZERO = 0, LOW = 1 ... 7, HIGH = 8 ... 14 } _e;
                integer { size = 2; align = 1; signed = false; base = 2; } _f;
                floating_point { exp_dig = 11; mant_dig = 53; align = 8; } _g;
                integer { size = 16; align = 16; signed = true; } _h;
                string _s;
            };
        };

        """
    }

    static func write(bigEndian: Bool, events n: Int) throws -> String {
        var w = BitWriter(bigEndian: bigEndian)
        let startTS: UInt64 = 1_000
        let step: UInt64 = 50_000_000 // below 2^27: each event's 27-bit timestamp may wrap once
        w.put(0xC1FC_1FC1, bits: 32, align: 8)
        w.put(0, bits: 32, align: 8)
        w.put(startTS, bits: 64, align: 8)
        w.put(startTS + step * UInt64(n), bits: 64, align: 8)
        let contentPos = w.pos
        w.put(0, bits: 64, align: 8) // content_size, patched below
        w.put(0, bits: 64, align: 8) // packet_size, patched below
        for i in 0..<n {
            let ts = startTS + step * UInt64(i + 1)
            w.put(ts & ((1 << 27) - 1), bits: 27)
            let a = UInt64(bitPattern: Int64(i % 8) - 4) & 0x7
            w.put(a, bits: 3)
            w.put(UInt64(i * 977) & 0x1FFF, bits: 13)
            w.put(UInt64(i * 13) & 0x7F, bits: 7)
            w.put(UInt64(bitPattern: (Int64(i) - 20) * 123_456_789) & ((1 << 41) - 1), bits: 41)
            w.put(UInt64(i % 16), bits: 4)
            w.put(UInt64(i % 4), bits: 2)
            w.put((Double(i) * -1.25e-3).bitPattern, bits: 64, align: 8)
            w.put(UInt64(bitPattern: Int64(i * 1000 - 20_000)) & 0xFFFF, bits: 16, align: 16)
            w.putString("e\(i)")
        }
        let content = UInt64(w.pos)
        w.align(8)
        while w.bytes.count % 64 != 0 { w.bytes.append(0) }
        let packet = UInt64(w.bytes.count * 8)
        var patch = BitWriter(bigEndian: bigEndian)
        patch.put(content, bits: 64); patch.put(packet, bits: 64)
        w.bytes.replaceSubrange((contentPos / 8)..<(contentPos / 8 + 16), with: patch.bytes)
        let dir = SharedDaemon.scratch.appendingPathComponent("bits-\(bigEndian ? "be" : "le")-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try metadata(bigEndian: bigEndian).write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        try Data(w.bytes).write(to: dir.appendingPathComponent("stream"))
        return dir.path
    }
}

@Suite("CTFReader on bit-fields, both byte orders, wrapping timestamps")
struct BitFieldTests {
    @Test("little-endian bit-fields, enums, bases, doubles and a wrapping 27-bit clock agree with babeltrace2")
    func littleEndian() throws {
        #expect(try expectAgreesWithBabeltrace([try BitTrace.write(bigEndian: false, events: 40)]) == 40)
    }

    @Test("big-endian bit-fields, enums, bases, doubles and a wrapping 27-bit clock agree with babeltrace2")
    func bigEndian() throws {
        #expect(try expectAgreesWithBabeltrace([try BitTrace.write(bigEndian: true, events: 40)]) == 40)
    }

    @Test("randomly corrupted traces never crash or hang: every run ends in events, an error or a warning")
    func corruptedNeverCrash() throws {
        let good = try BitTrace.write(bigEndian: false, events: 30)
        let original = try Data(contentsOf: URL(fileURLWithPath: good + "/stream"))
        var rng = SystemRandomNumberGenerator()
        var seed = UInt64.random(in: 0..<UInt64.max, using: &rng)
        func next() -> UInt64 { seed = seed &* 6364136223846793005 &+ 1442695040888963407; return seed >> 17 }
        var outcomes = (ok: 0, error: 0)
        for _ in 0..<200 {
            var bytes = [UInt8](original)
            for _ in 0..<(1 + Int(next() % 6)) { bytes[Int(next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: next()) }
            if next() % 4 == 0 { bytes.removeLast(Int(next() % UInt64(bytes.count))) }
            try Data(bytes).write(to: URL(fileURLWithPath: good + "/stream"))
            do {
                let (lines, _) = try readerLines([good])
                #expect(lines.count <= 30 * 64)
                outcomes.ok += 1
            } catch is CTFReaderError {
                outcomes.error += 1
            }
        }
        #expect(outcomes.ok + outcomes.error == 200)
    }
}
