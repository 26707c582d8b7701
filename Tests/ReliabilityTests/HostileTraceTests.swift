import Foundation
import Testing
import CTFReader
#if canImport(Glibc)
import Glibc
#endif

/// Hand-built CTF traces with every size field pushed to extremes (the TinyTrace layout of
/// CTFReaderTests: 8-byte header, 48-byte packet context, events `id ts _len _data[_len] _s`).
enum Hostile {
    static let metadata = HandBuiltTrace.metadata(hostname: "hostile", events: """
    event { name = "h:ev"; id = 0; fields := struct { uint32_t _len; uint8_t _data[_len]; string _s; }; };
    """)

    static func u32(_ v: UInt32) -> [UInt8] { HandBuiltTrace.le(v) }
    static func u64(_ v: UInt64) -> [UInt8] { HandBuiltTrace.le(v) }

    struct Packet {
        var events = 3
        var magic: UInt32 = 0xC1FC_1FC1
        var streamID: UInt32 = 0
        var content: UInt64? = nil
        var size: UInt64? = nil
        var seq: UInt64 = 0
        var discarded: UInt64 = 0
        var tsBegin: UInt64? = nil, tsEnd: UInt64? = nil
        var len: UInt32? = nil
        var eventID: UInt8 = 0
        var terminateString = true
        var body: [UInt8]? = nil
    }

    static func bytes(_ p: Packet) -> [UInt8] {
        var body: [UInt8] = []
        if let b = p.body { body = b } else {
            for i in 0..<p.events {
                let data = [UInt8](repeating: 7, count: i % 4)
                body += [p.eventID] + u64(100 + UInt64(i)) + u32(p.len ?? UInt32(data.count)) + data + Array("e\(i)".utf8)
                if p.terminateString || i < p.events - 1 { body += [0] }
            }
        }
        let content = UInt64(56 + body.count) * 8
        return HandBuiltTrace.packetPrefix(magic: p.magic, streamID: p.streamID, begin: p.tsBegin ?? 100, end: p.tsEnd ?? 200,
                                           contentBits: p.content ?? content, packetBits: p.size ?? content, seq: p.seq, discarded: p.discarded) + body
    }

    static let scratch: String = {
        let d = NSTemporaryDirectory() + "reliability-hostile-\(getpid())"
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "reliability-hostile-\(getpid())") }
        return d
    }()

    static func write(_ name: String, metadata: [UInt8], stream: [UInt8]) throws -> String {
        let dir = scratch + "/" + name
        try HandBuiltTrace.write(to: dir, metadata: metadata, stream: stream)
        return dir
    }

    static func replacing(_ a: String, _ b: String) -> [UInt8] {
        precondition(metadata.contains(a))
        return Array(metadata.replacingOccurrences(of: a, with: b).utf8)
    }

    /// Opens and decodes every event; returns "decoded N" or the reader error's description.
    static func decode(_ dir: String) -> (ok: Bool, text: String) {
        do {
            let t = try CTFTrace(directory: dir)
            var n = 0
            for s in t.streams { while try s.next() { _ = s.payload(); n += 1 } }
            return (true, "decoded \(n)")
        } catch let e as CTFReaderError {
            return (true, "error: \(e)")
        } catch {
            return (false, "unexpected error type: \(error)")
        }
    }
}

/// One hostile case: the trace, and what a good answer looks like.
struct HostileCase: CustomStringConvertible, Sendable {
    var name: String
    var metadata: [UInt8]
    var stream: [UInt8]
    /// Substrings the error must contain (empty: decoding successfully is also fine).
    var mustFailWith: [String] = []
    var timeLimit: Double = 20
    var description: String { name }
}

let hostileCases: [HostileCase] = {
    let ok = Hostile.bytes(.init())
    let field = "uint32_t _len;"
    var c: [HostileCase] = []
    // --- metadata ---
    let bigID = String(repeating: "a", count: 1 << 20)
    c.append(.init(name: "identifier-1MiB", metadata: Hostile.replacing(field, "uint32_t \(bigID); " + field), stream: ok))
    c.append(.init(name: "type-name-1MiB", metadata: Hostile.replacing(field, "\(bigID) _x; " + field), stream: ok, mustFailWith: ["metadata"]))
    let deep = String(repeating: "struct { ", count: 100_000) + "uint8_t x; " + String(repeating: "} y; ", count: 99_999) + "} _deep;"
    c.append(.init(name: "struct-nesting-100k", metadata: Hostile.replacing(field, deep + " " + field), stream: ok, mustFailWith: ["metadata"]))
    let deepArr = "uint8_t _a" + String(repeating: "[1]", count: 100_000) + ";"
    c.append(.init(name: "array-dims-100k", metadata: Hostile.replacing(field, deepArr + " " + field), stream: ok, mustFailWith: ["metadata"]))
    let dims32 = "uint8_t _a" + String(repeating: "[1]", count: 32) + ";"
    c.append(.init(name: "array-dims-32", metadata: Hostile.replacing(field, dims32 + " " + field), stream: ok))
    let deepVar = String(repeating: "variant <_len> { ", count: 50_000) + "uint8_t x; " + String(repeating: "} y; ", count: 49_999) + "} _v;"
    c.append(.init(name: "variant-nesting-50k", metadata: Hostile.replacing(field, field + " " + deepVar), stream: ok, mustFailWith: ["metadata"]))
    let parens = "integer { size = " + String(repeating: "(", count: 100_000) + "8" + String(repeating: ")", count: 100_000) + "; } _p;"
    c.append(.init(name: "parentheses-100k", metadata: Hostile.replacing(field, parens + " " + field), stream: ok))
    c.append(.init(name: "self-recursive-typealias", metadata: Hostile.replacing(field, "typealias struct { selfref_t inner; } := selfref_t; selfref_t _r; " + field), stream: ok, mustFailWith: ["metadata"]))
    c.append(.init(name: "self-recursive-named-struct", metadata: Hostile.replacing(field, "struct rec { struct rec inner; } _r; " + field), stream: ok, mustFailWith: ["metadata"]))
    var chain = "typealias uint8_t := t0; "
    for i in 1..<20_000 { chain += "typealias t\(i - 1) := t\(i); " }
    c.append(.init(name: "typealias-chain-20k", metadata: Hostile.replacing(field, chain + "t19999 _c; " + field), stream: ok))
    c.append(.init(name: "integer-size-huge", metadata: Hostile.replacing(field, "integer { size = 18446744073709551615; } _i; " + field), stream: ok, mustFailWith: ["metadata"]))
    c.append(.init(name: "integer-size-overflowing-literal", metadata: Hostile.replacing(field, "integer { size = 999999999999999999999999999999; } _i; " + field), stream: ok, mustFailWith: ["metadata"]))
    c.append(.init(name: "integer-size-zero", metadata: Hostile.replacing(field, "integer { size = 0; } _i; " + field), stream: ok, mustFailWith: ["metadata"]))
    c.append(.init(name: "integer-align-2^62", metadata: Hostile.replacing(field, "integer { size = 8; align = 4611686018427387904; } _i; " + field), stream: ok))
    c.append(.init(name: "integer-align-not-power-of-two", metadata: Hostile.replacing(field, "integer { size = 8; align = 3; } _i; " + field), stream: ok))
    c.append(.init(name: "struct-align-huge", metadata: Hostile.replacing(field, "struct { uint8_t x; } align(4611686018427387904) _s; " + field), stream: ok))
    c.append(.init(name: "array-length-2^62-empty-struct", metadata: Hostile.replacing(field, "struct { } _e[4611686018427387904]; " + field), stream: ok))
    c.append(.init(name: "array-length-UInt64.max", metadata: Hostile.replacing(field, "uint8_t _e[18446744073709551615]; " + field), stream: ok))
    c.append(.init(name: "enum-huge-range", metadata: Hostile.replacing(field, "enum : uint32_t { A = 0 ... 18446744073709551615, B } _en; " + field), stream: ok))
    let manyFields = (0..<100_000).map { "uint8_t f\($0);" }.joined(separator: " ")
    // The bound catches a quadratic pass over 100k fields (minutes), not machine load: ~1.5 s alone,
    // 5.07 s once on CI's two cores with builds running, so the default 20 s like every other case.
    c.append(.init(name: "fields-100k", metadata: Hostile.replacing(field, manyFields + " " + field), stream: ok))
    let someFields = (0..<5_000).map { "uint8_t f\($0);" }.joined(separator: " ")
    c.append(.init(name: "fields-5k", metadata: Hostile.replacing(field, someFields + " " + field), stream: ok))
    let manyEvents = (1..<50_000).map { "event { name = \"h:e\($0)\"; id = \($0); fields := struct { uint8_t x; }; };" }.joined(separator: "\n")
    c.append(.init(name: "events-50k", metadata: Array((Hostile.metadata + manyEvents).utf8), stream: ok))
    c.append(.init(name: "event-id-UInt64.max", metadata: Array((Hostile.metadata + "event { name = \"h:big\"; id = 18446744073709551615; fields := struct { uint8_t x; }; };").utf8), stream: ok))
    c.append(.init(name: "unterminated-comment", metadata: Array((Hostile.metadata + "/* " + String(repeating: "x", count: 1 << 20)).utf8), stream: ok, mustFailWith: ["metadata"]))
    c.append(.init(name: "unterminated-string", metadata: Array((Hostile.metadata + "env { x = \"" + String(repeating: "x", count: 1 << 20)).utf8), stream: ok, mustFailWith: ["metadata"]))
    var rng = XorShift(seed: 42)
    c.append(.init(name: "metadata-random-1MiB", metadata: (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, stream: ok, mustFailWith: ["metadata"]))
    c.append(.init(name: "metadata-nul-bytes", metadata: [UInt8](repeating: 0, count: 1 << 16), stream: ok, mustFailWith: ["metadata"]))
    // packetized metadata header claiming huge sizes
    var pk = Hostile.u32(0x75D1_1D57) + [UInt8](repeating: 0, count: 16) + Hostile.u32(0xFFFF_FFFF) + Hostile.u32(0xFFFF_FFFF)
    pk += [1, 8, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 64)
    c.append(.init(name: "packetized-metadata-huge-sizes", metadata: pk, stream: ok, mustFailWith: ["metadata"]))
    // --- stream ---
    let m = Array(Hostile.metadata.utf8)
    c.append(.init(name: "content-size-UInt64.max", metadata: m, stream: Hostile.bytes(.init(content: .max)), mustFailWith: ["stream_0"]))
    c.append(.init(name: "packet-size-UInt64.max", metadata: m, stream: Hostile.bytes(.init(size: .max)), mustFailWith: ["stream_0"]))
    c.append(.init(name: "both-sizes-UInt64.max", metadata: m, stream: Hostile.bytes(.init(content: .max, size: .max)), mustFailWith: ["stream_0"]))
    c.append(.init(name: "packet-size-not-byte-multiple", metadata: m, stream: Hostile.bytes(.init(content: 8 * 56 + 3, size: 8 * 56 + 3))))
    c.append(.init(name: "packet-size-smaller-than-header", metadata: m, stream: Hostile.bytes(.init(content: 64, size: 64)), mustFailWith: ["stream_0"]))
    c.append(.init(name: "packet-size-2^63", metadata: m, stream: Hostile.bytes(.init(content: 1 << 63, size: 1 << 63)), mustFailWith: ["stream_0"]))
    c.append(.init(name: "sequence-length-UInt32.max", metadata: m, stream: Hostile.bytes(.init(len: .max)), mustFailWith: ["stream_0"]))
    c.append(.init(name: "bad-magic", metadata: m, stream: Hostile.bytes(.init(magic: 0xDEAD_BEEF)), mustFailWith: ["stream_0"]))
    c.append(.init(name: "unknown-stream-id", metadata: m, stream: Hostile.bytes(.init(streamID: .max)), mustFailWith: ["stream_0"]))
    c.append(.init(name: "unknown-event-id", metadata: m, stream: Hostile.bytes(.init(eventID: 255)), mustFailWith: ["stream_0"]))
    c.append(.init(name: "unterminated-string-to-eof", metadata: m, stream: Hostile.bytes(.init(terminateString: false))))
    c.append(.init(name: "timestamps-UInt64.max", metadata: m, stream: Hostile.bytes(.init(tsBegin: .max, tsEnd: .max))))
    c.append(.init(name: "discarded-UInt64.max-seq-UInt64.max", metadata: m, stream: Hostile.bytes(.init(seq: .max, discarded: .max)) + Hostile.bytes(.init(seq: 0, discarded: 0))))
    // Arithmetic on packet-context counters and clocks (each trapped before).
    c.append(.init(name: "seq-UInt64.max-then-1", metadata: m, stream: Hostile.bytes(.init(seq: .max)) + Hostile.bytes(.init(seq: 1))))
    c.append(.init(name: "seq-2^63-gap", metadata: m, stream: Hostile.bytes(.init(seq: 0)) + Hostile.bytes(.init(seq: (1 << 63) + 5))))
    c.append(.init(name: "discarded-summing-past-2^64", metadata: m, stream: Hostile.bytes(.init(seq: 0, discarded: (1 << 63) - 1))
        + Hostile.bytes(.init(seq: 1, discarded: .max)) + Hostile.bytes(.init(seq: 2, discarded: (1 << 63) - 1))))
    c.append(.init(name: "timestamp_begin-bit63", metadata: m, stream: Hostile.bytes(.init(tsBegin: 1 << 63)) + Hostile.bytes(.init(seq: 1))))
    c.append(.init(name: "timestamp_end-bit63", metadata: m, stream: Hostile.bytes(.init(tsEnd: 1 << 63))))
    let bigTS = [UInt8(0)] + Hostile.u64(1 << 63) + Hostile.u32(0) + Array("e\0".utf8)
    c.append(.init(name: "event-timestamp-bit63", metadata: m, stream: Hostile.bytes(.init(body: bigTS)), mustFailWith: ["stream_0", "stream.event.header.timestamp"]))
    c.append(.init(name: "clock-offset-Int64.max", metadata: Hostile.replacing("offset_s = 1000;", "offset_s = 1000; offset = 9223372036854775807;"), stream: ok, mustFailWith: ["metadata", "offset"]))
    c.append(.init(name: "clock-offset_s-Int64.max", metadata: Hostile.replacing("offset_s = 1000;", "offset_s = 9223372036854775807;"), stream: ok, mustFailWith: ["metadata", "offset_s"]))
    c.append(.init(name: "clock-offset_s-Int64.min", metadata: Hostile.replacing("offset_s = 1000;", "offset_s = -9223372036854775808;"), stream: ok, mustFailWith: ["metadata", "offset_s"]))
    c.append(.init(name: "clock-freq-1-max-cycles", metadata: Hostile.replacing("freq = 1000000000;", "freq = 1;"), stream: Hostile.bytes(.init(tsBegin: .max - 1, tsEnd: .max))))
    c.append(.init(name: "clock-freq-Int64.max", metadata: Hostile.replacing("freq = 1000000000;", "freq = 9223372036854775807;"), stream: Hostile.bytes(.init(tsBegin: .max - 1, tsEnd: .max))))
    c.append(.init(name: "stream-header-only", metadata: m, stream: Array(Hostile.bytes(.init()).prefix(5))))
    var sr = XorShift(seed: 7)
    c.append(.init(name: "stream-random-1MiB", metadata: m, stream: (0..<(1 << 20)).map { _ in UInt8(truncatingIfNeeded: sr.next()) }, mustFailWith: ["stream_0"]))
    c.append(.init(name: "many-empty-packets-100k", metadata: m, stream: (0..<100_000).flatMap { Hostile.bytes(.init(events: 0, seq: UInt64($0))) }))
    return c
}()

@Suite("Hostile traces: extreme sizes, recursion, huge identifiers, deep nesting — clear errors, bounded memory and time", .serialized)
struct HostileTraceTests {
    /// Each case runs in a forked child (a crash or runaway is contained and reported, memory is
    /// capped with RLIMIT_AS, time by the parent); without fork (sanitizer runs) in-process.
    @Test("hostile trace", arguments: hostileCases)
    func hostile(_ c: HostileCase) throws {
        try check(c)
    }

    func check(_ c: HostileCase) throws {
        let dir = try Hostile.write(c.name, metadata: c.metadata, stream: c.stream)
        let resultPath = dir + "/result.txt"
        let limitSeconds = c.timeLimit
        let start = Date()
        var text = ""
        if forkAllowed {
            let vm = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8))?
                .split(separator: "\n").first { $0.hasPrefix("VmSize:") }
                .flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0   // kB
            let st = inChild(timeout: limitSeconds) {
                var lim = rlimit(rlim_cur: rlim_t((vm + 1_048_576) * 1024), rlim_max: rlim_t.max)   // +1 GiB
                setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &lim)
                let (ok, t) = Hostile.decode(dir)
                _ = FileManager.default.createFile(atPath: resultPath, contents: Data(t.utf8))
                return ok ? 0 : 5
            }
            text = (try? String(contentsOfFile: resultPath, encoding: .utf8)) ?? ""
            #expect(st != nil, "\(c.name): no answer within \(limitSeconds) s (killed)")
            #expect(st.map(exitedZero) ?? true, "\(c.name): child crashed or failed, signal \(st.map { $0 & 0x7f } ?? 0) wait status \(st.map(String.init) ?? "-"): \(text)")
        } else {
            let (ok, t) = Hostile.decode(dir)
            text = t
            #expect(ok, "\(c.name): \(t)")
        }
        let secs = Date().timeIntervalSince(start)
        report("hostile", ["case": c.name, "seconds": String(format: "%.3f", secs), "result": text.prefix(160).replacingOccurrences(of: "\n", with: " ")])
        #expect(secs < limitSeconds)
        if !c.mustFailWith.isEmpty {
            #expect(text.hasPrefix("error: "), "\(c.name): expected a reader error, got \(text.prefix(200))")
            for s in c.mustFailWith { #expect(text.contains(s), "\(c.name): error does not name \(s): \(text.prefix(300))") }
        }
    }
}
