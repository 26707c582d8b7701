import Foundation
import Testing
import CTFReader
#if canImport(Glibc)
import Glibc
#endif

/// Mutations of a real LTTng-UST trace (the rltraceTests demo fixture, copied, never modified): every
/// packet-header and packet-context integer field of every packet set to 0, its maximum, and only bit 63
/// (or the top bit of a 32-bit field). Each mutant must decode to events (with warnings) or a clear
/// `CTFReaderError` naming the file — never trap (docs/divergences.md).
enum PacketMutation {
    /// The demo trace's stream directory (LTTng-UST per-uid, 64-bit).
    static let fixture: String = {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        return here.appendingPathComponent("rltraceTests/Fixtures/demo-trace/ust/uid/0/64-bit").path
    }()

    /// LTTng-UST 64-bit packet header and context: (name, byte offset in the packet, size in bytes).
    static let fields: [(String, Int, Int)] = [
        ("magic", 0, 4), ("stream_id", 20, 4), ("stream_instance_id", 24, 8),
        ("timestamp_begin", 32, 8), ("timestamp_end", 40, 8), ("content_size", 48, 8), ("packet_size", 56, 8),
        ("packet_seq_num", 64, 8), ("events_discarded", 72, 8), ("cpu_id", 80, 4),
    ]

    static func le(_ v: UInt64, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }

    /// Packet offsets of a stream file, from the (unmutated) packet_size fields.
    static func packetOffsets(_ d: [UInt8]) -> [Int] {
        var out: [Int] = []
        var o = 0
        while o + 88 <= d.count {
            guard d[o..<(o + 4)].elementsEqual(le(0xC1FC_1FC1, 4)) else { break }
            out.append(o)
            let size = d[(o + 56)..<(o + 64)].enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
            guard size >= 88 * 8, size % 8 == 0 else { break }
            o += Int(size / 8)
        }
        return out
    }
}

@Suite("Packet-context mutations of a real trace: events or a clear error, never a trap", .serialized)
struct PacketMutationTests {
    @Test("every packet header/context field of every packet set to 0, max and bit 63")
    func mutateEveryField() throws {
        let src = PacketMutation.fixture
        let fm = FileManager.default
        let streams = try fm.contentsOfDirectory(atPath: src).filter { $0.hasPrefix("channel") }.sorted()
        #expect(streams.count >= 2)
        let work = Hostile.scratch + "/packet-mutations"
        try? fm.removeItem(atPath: work)
        try fm.createDirectory(atPath: work, withIntermediateDirectories: true)
        let metadata = try Data(contentsOf: URL(fileURLWithPath: src + "/metadata"))
        var mutants = 0, decodedEvents = 0, errors = 0
        var failures: [String] = []
        for name in streams {
            let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: src + "/" + name)))
            let packets = PacketMutation.packetOffsets(original)
            #expect(!packets.isEmpty, "no LTTng packet found in \(name): has the fixture's layout changed?")
            for (pi, off) in packets.enumerated() {
                for (field, fo, size) in PacketMutation.fields {
                    let top = UInt64(1) << UInt64(8 * size - 1)
                    let maxV = size == 8 ? UInt64.max : (UInt64(1) << UInt64(8 * size)) - 1
                    for (label, v) in [("0", UInt64(0)), ("max", maxV), ("top-bit", top)] {
                        var d = original
                        d.replaceSubrange((off + fo)..<(off + fo + size), with: PacketMutation.le(v, size))
                        let dir = work + "/m"
                        try? fm.removeItem(atPath: dir)
                        try fm.createDirectory(atPath: dir, withIntermediateDirectories: true)
                        try metadata.write(to: URL(fileURLWithPath: dir + "/metadata"))
                        try Data(d).write(to: URL(fileURLWithPath: dir + "/" + name))
                        let what = "\(name) packet \(pi) \(field) = \(label)"
                        let result = dir + "/result.txt"
                        mutants += 1
                        if forkAllowed {
                            let st = inChild(timeout: 60) {
                                let (ok, t) = Hostile.decode(dir)
                                _ = FileManager.default.createFile(atPath: result, contents: Data(t.utf8))
                                return ok ? 0 : 5
                            }
                            let text = (try? String(contentsOfFile: result, encoding: .utf8)) ?? ""
                            if !exitedZero(st) { failures.append("\(what): wait status \(st.map(String.init) ?? "timeout") \(text.prefix(200))") }
                            if text.hasPrefix("decoded ") { decodedEvents += Int(text.dropFirst(8)) ?? 0 } else if text.hasPrefix("error: ") {
                                errors += 1
                                if !text.contains(name) && !text.contains("metadata") { failures.append("\(what): error does not name the file: \(text.prefix(200))") }
                            }
                        } else {
                            let (ok, t) = Hostile.decode(dir)
                            if !ok { failures.append("\(what): \(t)") }
                        }
                    }
                }
            }
        }
        report("packet-mutations", ["mutants": mutants, "events": decodedEvents, "errors": errors, "failures": failures.count])
        #expect(mutants >= 60)
        #expect(failures.isEmpty, "\(failures.count) mutant(s) trapped or failed:\n\(failures.prefix(10).joined(separator: "\n"))")
        // The mutations must exercise both outcomes: some still decode, some are refused.
        if forkAllowed { #expect(decodedEvents > 0 && errors > 0) }
    }
}
