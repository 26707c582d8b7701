import Foundation
import Testing
import CTFReader

/// CTFReader's one byte buffer (Sources/CTFReader/Output): what every writer of rltrace writes through.
@Suite("ByteSink")
struct ByteSinkTests {
    @Test("ByteSink writes integers as String(describing:) does, at every digit count and at the extremes")
    func integers() {
        var values: [Int64] = [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, .max, .min, .min + 1, -1, -9, -10, -100]
        var p: Int64 = 1
        for _ in 0..<18 { p *= 10; values += [p - 1, p, p + 1, -(p - 1), -p, -(p + 1)] }
        let sink = ByteSink()
        for v in values { sink.int(v); sink.byte(0x20) }
        var unsigned: [UInt64] = [0, 7, 42, 1 << 63, .max, .max - 1, 10_000_000_000_000_000_000, 9_999_999_999_999_999_999]
        // Every bit length (the digit count is worked out from it), at and beside each boundary.
        for k in 1..<64 { unsigned += [(1 << k) - 1, 1 << k, (1 << k) + 1] }
        for v in unsigned { sink.uint(v); sink.byte(0x20) }
        let expected = values.map(String.init).joined(separator: " ") + " " + unsigned.map(String.init).joined(separator: " ") + " "
        #expect(sink.text == expected)
    }

    @Test("a record written through a cursor lands between the writes before and after it")
    func cursor() {
        let sink = ByteSink()
        sink.write("[")
        for i in 0..<5000 {      // more than one 64 KiB buffer: reserving flushes in between
            sink.reserving(64) { c in
                c.write("{\"n\":"); c.int(Int64(i) - 2500); c.write(",\"u\":"); c.uint(UInt64(i) * 1_000_003); c.byte(0x7D)
            }
            sink.byte(0x2C)
        }
        sink.write("]")
        let expected = "[" + (0..<5000).map { "{\"n\":\($0 - 2500),\"u\":\(UInt64($0) * 1_000_003)}," }.joined() + "]"
        #expect(sink.text == expected)
    }

    @Test("a record larger than the sink's buffer (a huge name in a damaged trace) grows it instead of failing")
    func hugeRecord() {
        let sink = ByteSink()
        sink.write("<")
        let n = 300_000
        sink.reserving(n) { c in for _ in 0..<n { c.byte(0x61) } }
        sink.write(">")
        #expect(sink.text == "<" + String(repeating: "a", count: n) + ">")
    }

    /// A large output to a file goes through the sink's writer thread (full buffers written while
    /// the next fills): the file holds every byte in order, with records larger than a buffer and a
    /// flush in the middle (which returns only once everything before it is written).
    @Test("a file sink's writer thread writes every byte in order, flushes and finishes")
    func writerThread() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bytesink-\(UUID().uuidString).txt").path
        defer { unlink(path) }
        let sink = try ByteSink(creating: path)
        var expected: [UInt8] = []
        for i in 0..<200_000 {
            let line = "line \(i) \(String(repeating: "x", count: i % 37))\n"
            sink.write(line)
            expected += Array(line.utf8)
            if i == 100_000 {
                sink.flush()
                let written = try Data(contentsOf: URL(fileURLWithPath: path))
                #expect(written.count == expected.count, "flush returns once everything before it is written")
            }
            if i % 50_000 == 7 {
                let n = 150_000 + i % 1000
                sink.reserving(n) { c in for _ in 0..<n { c.byte(0x41) } }
                expected += [UInt8](repeating: 0x41, count: n)
            }
        }
        try sink.finish()
        #expect(expected.count > 4 << 20)     // ~100 buffers: all but the first few through the writer thread
        let written = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(written.count == expected.count)
        let same = written == Data(expected)   // (a Bool: Swift Testing would diff megabytes)
        #expect(same, "the file differs from what was written")
    }

    /// A write error on the writer thread (a full device) is reported by ``ByteSink/finish()``.
    @Test("a write error on the writer thread is reported by finish")
    func writerThreadError() throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { return }
        let sink = try ByteSink(creating: "/dev/full")
        for _ in 0..<100_000 { sink.write("0123456789abcdef0123456789abcdef\n") }
        #expect(sink.writeError == ENOSPC)
        #expect(throws: ByteSinkError.self) { try sink.finish() }
    }

    /// An encoder that flips every byte and holds back the last 3 bytes of each buffer until the
    /// next one (or ``finish(_:)``): what a ``ByteSinkEncoder`` may do.
    final class FlipHolding: ByteSinkEncoder {
        var held: [UInt8] = []
        var calls = 0
        func encode(_ bytes: UnsafeBufferPointer<UInt8>, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
            calls += 1
            var all = held + bytes.map { ~$0 }
            held = Array(all.suffix(3))
            all.removeLast(held.count)
            all.withUnsafeBufferPointer { emit($0) }
        }
        func finish(_ emit: (UnsafeBufferPointer<UInt8>) -> Void) { held.withUnsafeBufferPointer { emit($0) }; held = [] }
    }

    @Test("an encoder sees every byte once and in order — on the writer thread from the first full buffer, the rest at flush on the caller's — and what it holds is written at finish", arguments: [false, true])
    func encoder(inMemory: Bool) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bytesink-enc-\(UUID().uuidString)").path
        defer { unlink(path) }
        let sink = inMemory ? ByteSink() : try ByteSink(creating: path)
        let e = FlipHolding()
        sink.encoder = e
        var expected: [UInt8] = []
        for i in 0..<(inMemory ? 20_000 : 400_000) {
            let line = "line \(i) \(String(repeating: "y", count: i % 29))\n"
            sink.write(line)
            expected += Array(line.utf8)
        }
        try sink.finish()
        var kept: [UInt8] = []
        if inMemory { sink.moveWritten(appendingTo: &kept) }     // (not `text`: the flipped bytes are no UTF-8)
        let written = inMemory ? kept : [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(written.count == expected.count)
        // The first byte that differs (not `==` in #expect: Swift Testing would diff a megabyte).
        let flipped = written.map { ~$0 }
        let common = min(flipped.count, expected.count)
        let firstDifference = (0..<common).first { flipped[$0] != expected[$0] } ?? (flipped.count == expected.count ? nil : common)
        #expect(firstDifference == nil, "the output differs from byte \(firstDifference ?? -1)")
        if !inMemory { #expect(e.calls > 4, "the writer thread encoded buffers too (\(e.calls) calls)") }
    }

    /// An encoder that keeps every buffer's place in the output and whether it was said whole.
    final class Recording: ByteSinkEncoder {
        var buffers: [(at: Int, count: Int, whole: Bool)] = []
        var written = 0
        func encode(_ bytes: UnsafeBufferPointer<UInt8>, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
            encode(bytes, whole: false, emit: emit)
        }
        func encode(_ bytes: UnsafeBufferPointer<UInt8>, whole: Bool, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
            buffers.append((written, bytes.count, whole))
            written += bytes.count
            emit(bytes)
        }
        func finish(_ emit: (UnsafeBufferPointer<UInt8>) -> Void) {}
    }

    @Test("an encoder is told a buffer is whole exactly when no write in it was larger than a buffer: such a buffer begins and ends where writes do", arguments: [false, true])
    func wholeBuffers(inMemory: Bool) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bytesink-whole-\(UUID().uuidString)").path
        defer { unlink(path) }
        let sink = inMemory ? ByteSink() : try ByteSink(creating: path)
        let e = Recording()
        sink.encoder = e
        // Writes of 1 to 300 bytes through a cursor, now and then one of 3 MB (larger than any
        // buffer: written in pieces); the offsets where writes end, and the huge writes' spans.
        var ends: Set<Int> = [0], huge: [Range<Int>] = [], at = 0, seed: UInt64 = 5
        func next(_ n: Int) -> Int { seed = seed &* 6364136223846793005 &+ 1442695040888963407; return Int((seed >> 33) % UInt64(n)) }
        for i in 0..<150_000 {
            if i % 50_000 == 24_999 {
                let big = [UInt8](repeating: UInt8(i % 251), count: 3 << 20)
                big.withUnsafeBytes { sink.bytes($0) }
                huge.append(at..<(at + big.count)); at += big.count
            } else {
                let n = 1 + next(300)
                sink.reserving(n) { c in for k in 0..<n { c.byte(UInt8(truncatingIfNeeded: k)) } }
                at += n
            }
            ends.insert(at)
        }
        try sink.finish()
        #expect(e.written == at)
        var wholeSeen = 0
        for b in e.buffers {
            let span = b.at..<(b.at + b.count)
            let touchesHuge = huge.contains { $0.overlaps(span) }
            if b.whole {
                wholeSeen += 1
                #expect(ends.contains(b.at) && ends.contains(b.at + b.count), "buffer \(span) said whole, but cut inside a write")
                #expect(!touchesHuge, "buffer \(span) said whole, but holds part of a write larger than a buffer")
            } else {
                // Only a buffer holding part of a huge write is not whole.
                #expect(touchesHuge, "buffer \(span) of ordinary writes not said whole")
            }
        }
        #expect(wholeSeen > 10 && huge.count == 3)
    }
}
