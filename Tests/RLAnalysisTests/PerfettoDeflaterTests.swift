import Foundation
import Testing
import CTFReader
import CZlib
@testable import RLAnalysis

// PerfettoDeflater (Sources/RLAnalysis/Renderers/PerfettoDeflater.swift) on generated packet
// streams cut into buffers at random places: what it writes, with every compressed_packets
// inflated in place (zlib, as Perfetto's reader does), is the input byte for byte.

/// A small deterministic generator (SplitMix64).
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

/// A `Trace.packet` field holding `body`.
func tracePacket(_ body: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [0x0A]
    var v = UInt64(body.count)
    while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
    out.append(UInt8(v))
    return out + body
}

/// The top-level fields of `b` (field number, the whole field's bytes, a length-delimited payload).
func topLevelFields(_ b: [UInt8]) -> [(number: UInt64, raw: ArraySlice<UInt8>, payload: ArraySlice<UInt8>)] {
    var out: [(UInt64, ArraySlice<UInt8>, ArraySlice<UInt8>)] = []
    var i = 0
    func varint() -> UInt64 {
        var v: UInt64 = 0, s: UInt64 = 0
        while true { let x = b[i]; i += 1; v |= UInt64(x & 0x7F) << s; s += 7; if x < 0x80 { return v } }
    }
    while i < b.count {
        let start = i
        let key = varint()
        precondition(key & 7 == 2, "only length-delimited fields are written")
        let n = Int(varint())
        out.append((key >> 3, b[start..<(i + n)], b[i..<(i + n)]))
        i += n
    }
    return out
}

/// ``topLevelFields(_:)``, or nil when `b` is not a run of length-delimited fields.
func topLevelFieldsOrNil(_ b: [UInt8]) -> [(number: UInt64, raw: ArraySlice<UInt8>, payload: ArraySlice<UInt8>)]? {
    var i = 0
    func varint() -> UInt64? {
        var v: UInt64 = 0, s: UInt64 = 0
        while i < b.count && s < 64 { let x = b[i]; i += 1; v |= UInt64(x & 0x7F) << s; s += 7; if x < 0x80 { return v } }
        return nil
    }
    while i < b.count {
        guard let key = varint(), key & 7 == 2, let n = varint(), Int(n) <= b.count - i else { return nil }
        i += Int(n)
    }
    return topLevelFields(b)
}

/// `b` with each `TracePacket { compressed_packets }` replaced by its inflated packets; the number
/// of such runs and the largest one's size.
func inflatedPerfetto(_ b: [UInt8]) -> (bytes: [UInt8], runs: Int, largest: Int) {
    var out: [UInt8] = [], runs = 0, largest = 0
    for f in topLevelFields(b) {
        // A packet that is one `compressed_packets` field (50, length-delimited: 0x92 0x03).
        let p = Array(f.payload)
        guard f.number == 1, p.count > 2, p[0] == 0x92, p[1] == 0x03,
              let inner = topLevelFieldsOrNil(Array(p)), inner.count == 1, inner[0].number == 50 else { out += f.raw; continue }
        runs += 1
        largest = max(largest, f.raw.count)
        let z = Array(inner[0].payload)
        var plain = [UInt8](repeating: 0, count: 2 << 20)
        var n = uLongf(plain.count)
        let status = plain.withUnsafeMutableBufferPointer { p in z.withUnsafeBufferPointer { uncompress(p.baseAddress, &n, $0.baseAddress, uLong($0.count)) } }
        #expect(status == Z_OK, "a run does not inflate (zlib \(status))")
        out += plain[..<(status == Z_OK ? Int(n) : 0)]
    }
    return (out, runs, largest)
}

@Suite("PerfettoDeflater: compressed_packets as Perfetto reads them")
struct PerfettoDeflaterTests {
    /// Feeds `input` to a deflater in buffers cut at `cuts`, as a ByteSink hands them over.
    func deflate(_ input: [UInt8], cuts: [Int]) -> [UInt8] {
        let d = PerfettoDeflater()
        var out: [UInt8] = []
        var from = 0
        for c in cuts + [input.count] where c >= from {
            input[from..<c].withUnsafeBufferPointer { d.encode($0) { out += $0 } }
            from = c
        }
        d.finish { out += $0 }
        return out
    }

    @Test("generated packet streams, cut anywhere: inflated, the input byte for byte; every run under 512 KB", arguments: 0..<40)
    func roundTrip(seed: UInt64) {
        var g = SplitMix(state: seed)
        var input: [UInt8] = []
        // Packets of 1 byte to 40 KiB, sometimes 300 KiB (a run of its own), and once in a while
        // a field that is no packet (passed through as it is, with what follows).
        let count = 1 + g.below(400)
        for _ in 0..<count {
            let size = g.below(10) == 0 ? 1 + g.below(40 << 10) : (g.below(60) == 0 ? 300 << 10 : 1 + g.below(120))
            // Repetitive bodies, as the export's are (interned ids, small deltas).
            input += tracePacket((0..<size).map { UInt8(truncatingIfNeeded: ($0 / 7) &+ Int(seed)) })
        }
        if g.below(4) == 0 { input += [0x12, 0x03, 0x61, 0x62, 0x63] }
        let cuts = (0..<g.below(12)).map { _ in g.below(input.count + 1) }.sorted()
        let out = deflate(input, cuts: cuts)
        let back = inflatedPerfetto(out)
        // The first byte that differs (not `==` in #expect: Swift Testing would diff megabytes).
        let differs = back.bytes.count != input.count || back.bytes != input
        #expect(!differs, "seed \(seed): \(out.count) bytes written for \(input.count); inflated \(back.bytes.count), first difference at \((0..<min(back.bytes.count, input.count)).first { back.bytes[$0] != input[$0] } ?? min(back.bytes.count, input.count))")
        #expect(back.largest < 512 * 1024)
        #expect(back.runs >= 1)
    }

    /// Generated packets (repetitive bodies, as the export's, or random bytes that do not
    /// compress) and the offsets where they end.
    func packets(_ g: inout SplitMix, count: Int, random: Bool) -> (bytes: [UInt8], ends: [Int]) {
        var input: [UInt8] = [], ends: [Int] = []
        for i in 0..<count {
            let size = 1 + g.below(g.below(20) == 0 ? 4000 : 90)
            let body: [UInt8] = random ? (0..<size).map { _ in UInt8(truncatingIfNeeded: g.next()) }
                                       : (0..<size).map { UInt8(truncatingIfNeeded: ($0 / 5) &+ i % 7) }
            input += tracePacket(body)
            ends.append(input.count)
        }
        return (input, ends)
    }

    @Test("buffers of whole packets: deflated packet by packet (the deflate that knows them) in runs under 512 KB, also when they do not compress; inflated, the input byte for byte", arguments: 0..<12)
    func wholeBuffers(seed: UInt64) {
        var g = SplitMix(state: seed &+ 1000)
        // Compressible packets, then (odd seeds) a stretch of random ones that do not compress.
        let a = packets(&g, count: 20_000 + g.below(20_000), random: false)
        let b: (bytes: [UInt8], ends: [Int]) = seed % 2 == 1 ? packets(&g, count: 15_000, random: true) : ([], [])
        let input = a.bytes + b.bytes
        // Buffers of about a megabyte (a ByteSink's chunk), each ending where a packet ends; the
        // random packets in buffers of their own.
        var cuts: [Int] = []
        for part in [a, b] where !part.ends.isEmpty {
            let base = cuts.last ?? 0
            var k = 0
            while k < part.ends.count {
                let target = (cuts.last ?? 0) + (1 << 20) - g.below(1 << 16)
                while k < part.ends.count - 1 && base + part.ends[k] < target { k += 1 }
                cuts.append(base + part.ends[k])
                k += 1
            }
        }
        let d = PerfettoDeflater()
        var out: [UInt8] = [], from = 0
        var randomBuffers = 0
        for to in cuts {
            if from >= a.bytes.count { randomBuffers += 1 }
            input[from..<to].withUnsafeBufferPointer { d.encode($0, whole: true) { out += $0 } }
            from = to
        }
        d.finish { out += $0 }
        let back = inflatedPerfetto(out)
        let differs = back.bytes.count != input.count || back.bytes != input
        #expect(!differs, "seed \(seed): inflated \(back.bytes.count) bytes for \(input.count)")
        #expect(back.largest < 512 * 1024)
        // Every run from a whole buffer; a megabyte of random packets (9-bit literals) in at least
        // three runs, a compressible megabyte in one.
        #expect(d.runs == d.wholeRuns, "\(d.wholeRuns) of \(d.runs) runs from whole buffers")
        #expect(d.runs >= (cuts.count - randomBuffers) + 3 * randomBuffers, "\(d.runs) runs for \(cuts.count) buffers, \(randomBuffers) random")
        if seed % 2 == 1 { #expect(randomBuffers > 0) }
    }

    /// Packets shaped as the export writes them on `sequences` sequences — a slice's end (the
    /// sequence's head, then its timestamp delta) and a begin (head, name, the name's item as an
    /// `item` annotation, timestamp) — with, at `edgeEvery`, the edges: packets of 1 to 3 bytes, of
    /// 33 bytes to 70 000 (past the 64 KB the deflate takes: the rest of the buffer goes by igzip),
    /// and random bodies; as many as fit in `bytes`.
    func exportLikePackets(_ g: inout SplitMix, bytes: Int, sequences: Int, edgeEvery: Int) -> [UInt8] {
        func varint(_ v: UInt64) -> [UInt8] {
            var v = v, out: [UInt8] = []
            while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
            return out + [UInt8(v)]
        }
        // Each name its item (a small id, or an address-like one).
        let items = (0..<30).map { _ in varint(g.below(3) == 0 ? g.next() >> 12 : UInt64(g.below(100))) }
        var input: [UInt8] = []
        while true {
            let seq = UInt8(1 + g.below(sequences))
            // Timestamp deltas: mostly below 128 ns, some to 16 µs, a few to a millisecond.
            let r = g.below(32)
            let ts = varint(UInt64(r == 0 ? g.below(1 << 20) : (r < 5 ? g.below(1 << 14) : g.below(128))))
            var packet: [UInt8]
            if edgeEvery > 0 && g.below(edgeEvery) == 0 {
                switch g.below(3) {
                case 0: packet = tracePacket((0..<g.below(3)).map { _ in UInt8(truncatingIfNeeded: g.next()) })
                case 1: packet = tracePacket((0..<(33 + g.below(g.below(8) == 0 ? 70_000 : 300))).map { UInt8(truncatingIfNeeded: $0 % 13) })
                default: packet = tracePacket((0..<(1 + g.below(40))).map { _ in UInt8(truncatingIfNeeded: g.next()) })
                }
            } else if g.below(2) == 0 {
                packet = tracePacket([0x50, seq, 0x68, 0x02, 0x5A, 0x02, 0x48, 0x02, 0x40] + ts)
            } else {
                let name = g.below(items.count)
                let annotation: [UInt8] = [0x22, UInt8(4 + items[name].count), 0x08, 0x01, 0x18] + items[name]
                let event: [UInt8] = [0x48, 0x01, 0x50, UInt8(name)] + annotation
                packet = tracePacket([0x50, seq, 0x68, 0x02, 0x5A, UInt8(event.count)] + event + [0x40] + ts)
            }
            if input.count + packet.count > bytes { return input }
            input += packet
        }
    }

    @Test("the export's packet shapes and their edges, in whole buffers: inflated, the input byte for byte; the export's shapes at least 2.5 times smaller", arguments: 0..<24)
    func exportShapes(seed: UInt64) {
        var g = SplitMix(state: seed &+ 5000)
        let edges = seed % 3 == 0 ? 0 : 20
        // A few loops' sequences, as a service has (a third of the seeds, without the edges: the
        // size is checked on those), or up to 40 interleaved at random.
        var input = exportLikePackets(&g, bytes: 20_000 + g.below(1_500_000), sequences: 1 + g.below(edges == 0 ? 4 : 40), edgeEvery: edges)
        // Sometimes a field that is no packet at the end (the rest of the buffer as it is).
        if seed % 5 == 4 { input += [0x12, 0x03, 0x61, 0x62, 0x63] }
        let d = PerfettoDeflater()
        var out: [UInt8] = []
        input.withUnsafeBufferPointer { d.encode($0, whole: true) { out += $0 } }
        d.finish { out += $0 }
        let back = inflatedPerfetto(out)
        let differs = back.bytes.count != input.count || back.bytes != input
        #expect(!differs, "seed \(seed): \(out.count) bytes written for \(input.count); inflated \(back.bytes.count), first difference at \((0..<min(back.bytes.count, input.count)).first { back.bytes[$0] != input[$0] } ?? min(back.bytes.count, input.count))")
        #expect(back.largest < 512 * 1024)
        if edges == 0 {
            #expect(d.runs == d.wholeRuns)
            #expect(out.count * 5 <= input.count * 2, "seed \(seed): \(out.count) bytes for \(input.count)")
        }
    }

    @Test("through a ByteSink: the export's packets, each written with reserving, reach the deflater as whole buffers and run by run", arguments: [false, true])
    func throughByteSink(toFile: Bool) throws {
        var g = SplitMix(state: 77)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("deflater-\(UUID().uuidString)").path
        defer { unlink(path) }
        let sink = toFile ? try ByteSink(creating: path) : ByteSink()
        let d = PerfettoDeflater()
        sink.encoder = d
        let input = packets(&g, count: 150_000, random: false).bytes
        // One write per packet, as the export writes them.
        var at = 0
        while at < input.count {
            var len = 0, shift = 0, p = at + 1
            while true { let x = input[p]; len |= Int(x & 0x7F) << shift; p += 1; if x < 0x80 { break }; shift += 7 }
            let packet = input[at..<(p + len)]
            sink.reserving(packet.count) { c in packet.withUnsafeBytes { c.bytes($0) } }
            at = p + len
        }
        try sink.finish()
        var written: [UInt8] = []
        if toFile { written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) } else { sink.moveWritten(appendingTo: &written) }
        let back = inflatedPerfetto(written)
        let differs = back.bytes.count != input.count || back.bytes != input
        #expect(!differs, "inflated \(back.bytes.count) bytes for \(input.count)")
        #expect(d.runs == d.wholeRuns && d.runs >= input.count >> 20, "\(d.wholeRuns) of \(d.runs) runs deflated whole")
    }

    @Test("a packet larger than a run may hold goes through uncompressed; the packets around it are deflated")
    func hugePacketRaw() {
        let huge = tracePacket([UInt8](repeating: 7, count: PerfettoDeflater.rawLimit + 1))
        let small = tracePacket([1, 2, 3])
        let out = deflate(small + huge + small, cuts: [])
        let fields = topLevelFields(out)
        #expect(fields.count == 3)
        let raw = Array(fields[1].raw) == huge
        #expect(raw, "the huge packet is not written as it is")
        let back = inflatedPerfetto(out).bytes, whole = small + huge + small
        let same = back == whole
        #expect(same, "inflated \(back.count) bytes for \(whole.count)")
    }

    @Test("a whole-buffer deflater made for another thread deflates a buffer of whole packets to the bytes the deflater itself gives, and its runs count in the deflater's figures")
    func wholeBufferEncoder() throws {
        var g = SplitMix(state: 4242)
        // About a megabyte of the export's packets (one run), and a stretch of random packets too
        // large to deflate under 512 KB (cut in runs).
        let compressible = exportLikePackets(&g, bytes: 1 << 20, sequences: 8, edgeEvery: 0)
        let random = packets(&g, count: 8000, random: true).bytes
        #expect(compressible.count > 900 << 10 && random.count > 700 << 10)
        let d = PerfettoDeflater(), unrelated = PerfettoDeflater()
        let made = try #require(d.makeWholeBufferEncoder())
        #expect(made !== d, "the made encoder is the deflater itself")
        func encode(_ e: ByteSinkEncoder, _ b: [UInt8]) -> [UInt8] {
            var out: [UInt8] = []
            b.withUnsafeBufferPointer { e.encode($0, whole: true) { out += $0 } }
            return out
        }

        let byMade = encode(made, compressible)
        #expect(d.runs == 1 && d.wholeRuns == 1, "the made encoder's run counted \(d.runs) runs, \(d.wholeRuns) whole")
        #expect(d.bytesIn == compressible.count && d.bytesOut == byMade.count)
        let byOriginal = encode(d, compressible)
        let same = byMade == byOriginal
        #expect(same, "the made encoder wrote \(byMade.count) bytes, the deflater \(byOriginal.count)")
        #expect(d.runs == 2 && d.wholeRuns == 2)
        let back = inflatedPerfetto(byMade)
        let roundTrip = back.bytes == compressible
        #expect(roundTrip && back.runs == 1, "inflated \(back.bytes.count) bytes in \(back.runs) runs for \(compressible.count)")

        // A buffer that does not compress: cut in runs under the bound, the same either way.
        let randomByMade = encode(made, random)
        let madeRuns = d.runs - 2
        #expect(madeRuns >= 2 && d.wholeRuns == d.runs, "random packets: \(madeRuns) runs by the made encoder, \(d.wholeRuns) of \(d.runs) whole")
        let randomByOriginal = encode(d, random)
        let sameRandom = randomByMade == randomByOriginal
        #expect(sameRandom, "random packets: the made encoder wrote \(randomByMade.count) bytes, the deflater \(randomByOriginal.count)")
        #expect(d.runs == 2 + 2 * madeRuns && d.wholeRuns == d.runs)
        #expect(inflatedPerfetto(randomByMade).bytes == random)
        var held: [UInt8] = []
        made.finish { held += $0 }
        #expect(held.isEmpty, "the made encoder held \(held.count) bytes after whole packets")
        // Figures are shared with made encoders only.
        #expect(unrelated.runs == 0 && unrelated.bytesIn == 0)
    }
}
