import Foundation
import Testing
@testable import CTFReader

/// The allocation-free accessors read lazily skipped bodies in place (LazyBody.swift); these tests check that they
/// give exactly what decoding the body gives, and that a malformed body skipped that way fails like a decoded one.
@Suite("CTFReader per-event accessors")
struct AccessorTests {
    /// A trace whose stream event context and payloads mix integers of every width, strings and a text array, as
    /// LTTng-UST writes them.
    static let metadata = HandBuiltTrace.metadata(hostname: "acc", typealiases: """
    typealias integer { size = 8; align = 8; signed = true; } := int8_t;
    typealias integer { size = 16; align = 8; signed = true; } := int16_t;
    typealias integer { size = 32; align = 8; signed = true; } := int32_t;
    typealias integer { size = 32; align = 8; signed = true; byte_order = be; } := be32_t;

    """, eventContext: "struct { int32_t _vpid; string _procname; int32_t _vtid; }", events: """
    event { name = "acc:mixed"; id = 0; fields := struct {
        uint64_t _loop; string _name; int8_t _i8; int16_t _i16; string _mode; uint32_t _u32; be32_t _be;
        integer { size = 8; align = 8; signed = false; encoding = UTF8; } _text[4]; int32_t _last;
    }; };
    event { name = "acc:fixed"; id = 1; fields := struct { uint64_t _a; int8_t _b; }; };
    """)

    struct Values { var vpid: Int32; var procname: String; var vtid: Int32; var loop: UInt64; var name: String
        var i8: Int8; var i16: Int16; var mode: String; var u32: UInt32; var be: Int32; var text: String; var last: Int32 }

    static func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { HandBuiltTrace.le(v) }

    static func eventBytes(_ i: Int, _ v: Values) -> [UInt8] {
        var b: [UInt8] = i % 3 == 2 ? [1] : [0]
        b += le(UInt64(100 + i * 10))
        b += le(v.vpid) + Array(v.procname.utf8) + [0] + le(v.vtid)
        if i % 3 == 2 { return b + le(v.loop) + le(v.i8) }
        b += le(v.loop) + Array(v.name.utf8) + [0] + le(v.i8) + le(v.i16) + Array(v.mode.utf8) + [0] + le(v.u32)
        b += withUnsafeBytes(of: v.be.bigEndian, Array.init)
        b += Array((v.text + "\0\0\0\0").utf8.prefix(4)) + le(v.last)
        return b
    }

    static func values(_ i: Int) -> Values {
        Values(vpid: Int32(1000 + i), procname: i % 2 == 0 ? "main" : "", vtid: Int32(-i), loop: UInt64.max - UInt64(i),
               name: String(repeating: "n", count: i % 7), i8: Int8(truncatingIfNeeded: -i), i16: Int16(-300 * i),
               mode: i % 4 == 0 ? "" : "kCFRunLoopDefaultMode", u32: UInt32.max - UInt32(i), be: Int32(-77 * i),
               text: String(repeating: "t", count: i % 5), last: Int32(i) - 5)
    }

    /// Writes a one-packet trace of `n` events; `cut` bytes are removed from the declared content size.
    static func write(_ name: String, events n: Int, cut: Int = 0, truncateFile: Int = 0) throws -> String {
        let body = (0..<n).flatMap { eventBytes($0, values($0)) }
        let header = HandBuiltTrace.packetPrefixSize
        let content = header + body.count - cut
        let size = (header + body.count + 7) / 8 * 8 + 64
        var bytes = HandBuiltTrace.packetPrefix(begin: 100, end: UInt64(100 + n * 10), contentBits: UInt64(content * 8), packetBits: UInt64(size * 8), seq: 0)
        bytes += body
        bytes += [UInt8](repeating: 0, count: size - bytes.count)
        if truncateFile > 0 { bytes.removeLast(size - (header + body.count) + truncateFile) }
        let dir = SharedDaemon.scratch.appendingPathComponent("acc-\(name)-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try metadata.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        try Data(bytes).write(to: dir.appendingPathComponent("stream_0"))
        return dir.path
    }

    static func string(_ b: UnsafeRawBufferPointer?) -> String? { b.map { String(decoding: $0, as: UTF8.self) } }

    @Test("integers and strings read in place equal the decoded fields, before and after decoding")
    func inPlaceEqualsDecoded() throws {
        let n = 60
        let set = try CTFTraceSet(paths: [try Self.write("ok", events: n)])
        var it = set.makeMergedIterator()
        var i = 0, skipped = 0
        while try it.next() {
            let s = it.current
            let v = Self.values(i)
            if s.hot.pointee.lazyBody >= 0 { skipped += 1 }
            for pass in 0..<2 {
                // Pass 0 reads the skipped body in place; pass 1 after `payload()` decoded it into the slots.
                #expect(s.streamContextInteger(at: 0) == Int64(v.vpid))
                #expect(s.streamContextInteger(at: 1) == nil)
                #expect(Self.string(s.streamContextStringBytes(at: 1)) == v.procname)
                #expect(s.streamContextInteger(at: 2) == Int64(v.vtid))
                #expect(s.streamContextInteger(at: 3) == nil && s.streamContextInteger(at: -1) == nil)
                #expect(s.payloadInteger(at: 0) == Int64(bitPattern: v.loop))
                if i % 3 == 2 {
                    #expect(s.payloadInteger(at: 1) == Int64(v.i8))
                    #expect(s.payloadInteger(at: 2) == nil)
                } else {
                    #expect(s.payloadInteger(at: 1) == nil)
                    #expect(Self.string(s.payloadStringBytes(at: 1)) == v.name)
                    #expect(s.payloadInteger(at: 2) == Int64(v.i8))
                    #expect(s.payloadInteger(at: 3) == Int64(v.i16))
                    #expect(Self.string(s.payloadStringBytes(at: 4)) == v.mode)
                    #expect(s.payloadInteger(at: 5) == Int64(v.u32))
                    #expect(s.payloadInteger(at: 6) == Int64(v.be), "big-endian field, decoded on access")
                    #expect(Self.string(s.payloadStringBytes(at: 7)) == v.text)
                    #expect(s.payloadInteger(at: 8) == Int64(v.last))
                    #expect(s.payloadInteger(at: 9) == nil && s.payloadStringBytes(at: 9) == nil)
                    #expect(s.payloadStringBytes(at: 0) == nil)
                }
                if pass == 0 {
                    let decoded = s.payload()
                    for (k, f) in decoded.enumerated() {
                        if let x = f.value.int64 { #expect(s.payloadInteger(at: k) == x) }
                    }
                    #expect(s.hot.pointee.lazyBody < 0)
                }
            }
            i += 1
        }
        #expect(i == n)
        #expect(skipped == n, "every body of this trace is skipped lazily")
    }

    @Test("readIntegers gives what the per-field accessors give: in place, after a field that needs decoding, and from the slots")
    func readIntegersEqualsAccessors() throws {
        let n = 60
        let set = try CTFTraceSet(paths: [try Self.write("reads", events: n)])
        var it = set.makeMergedIterator()
        var i = 0, compared = 0
        let sentinel: Int64 = 0x5EED
        while try it.next() {
            let s = it.current
            let ci = s.eventClassIndex
            // Every context and payload position (absent ones too), each to its own destination, in
            // an order that puts the big-endian field (not readable in place) in the middle.
            var refs: [CTFIntegerRef] = []
            var positions: [(context: Bool, k: Int)] = []
            for k in [0, 1, 2, 3, -1] {
                var r = s.integerRef(contextField: k, ofClass: ci)
                r.destination = refs.count
                refs.append(r); positions.append((true, k))
            }
            for k in [0, 1, 2, 6, 3, 4, 5, 7, 8, 9, 10] {
                var r = s.integerRef(payloadField: k, ofClass: ci)
                r.destination = refs.count
                refs.append(r); positions.append((false, k))
            }
            let lazy = s.hot.pointee.lazyBody >= 0
            func read() -> [Int64] {
                var out = [Int64](repeating: sentinel, count: refs.count)
                out.withUnsafeMutableBufferPointer { o in
                    refs.withUnsafeBufferPointer { r in s.readIntegers(r.baseAddress!, count: r.count, into: o.baseAddress!) }
                }
                return out
            }
            // Pass 0 on the skipped body (the big-endian field in the middle decodes it), pass 1 from the slots.
            let first = read()
            _ = s.payload()
            let second = read()
            for (k, p) in positions.enumerated() {
                let e = p.context ? s.streamContextInteger(at: p.k) : s.payloadInteger(at: p.k)
                #expect(refs[k].isPresent == (e != nil), "reference \(k) of \(s.eventClass.name)")
                #expect(first[k] == (e ?? sentinel), "event \(i) in place, reference \(k)")
                #expect(second[k] == (e ?? sentinel), "event \(i) from the slots, reference \(k)")
                compared += 1
            }
            #expect(lazy)
            i += 1
        }
        #expect(i == n)
        #expect(compared == n * 16)
    }

    /// The events of `readIntegersEqualsAccessors`' trace, each read with one 8-byte load per field
    /// and with loads of each field's own width: the same values (signed fields of 1, 2 and 4
    /// bytes holding negative values included).
    @Test("readIntegers' 8-byte loads give what loads of each field's width give")
    func wideLoadsEqualNarrowLoads() throws {
        let n = 60
        let set = try CTFTraceSet(paths: [try Self.write("wide", events: n)])
        var it = set.makeMergedIterator()
        var i = 0
        while try it.next() {
            let s = it.current
            let ci = s.eventClassIndex
            var refs: [CTFIntegerRef] = []
            for k in [0, 2] { var r = s.integerRef(contextField: k, ofClass: ci); r.destination = refs.count; refs.append(r) }
            // The big-endian payload field (6) is left out: it would decode the body.
            for k in [0, 2, 3, 5, 8] {
                var r = s.integerRef(payloadField: k, ofClass: ci)
                guard r.isPresent else { continue }
                r.destination = refs.count; refs.append(r)
            }
            #expect(s.hot.pointee.lazyBody >= 0)
            #expect((s.hot.pointee.pos >> 3) + 8 <= s.wideLoadLimit, "event \(i) is read with 8-byte loads")
            #expect(refs.allSatisfy { $0.readsInPlace })
            var wide = [Int64](repeating: 0, count: refs.count), narrow = wide, inPlace = wide
            refs.withUnsafeBufferPointer { r in
                wide.withUnsafeMutableBufferPointer { s.readIntegers(r.baseAddress!, count: r.count, into: $0.baseAddress!) }
                narrow.withUnsafeMutableBufferPointer { s.readIntegersNarrow(r.baseAddress!, count: r.count, into: UnsafeMutableRawPointer($0.baseAddress!)) }
                inPlace.withUnsafeMutableBufferPointer { s.readIntegers(r.baseAddress!, count: r.count, allInPlace: true, into: UnsafeMutableRawPointer($0.baseAddress!)) }
            }
            #expect(wide == narrow, "event \(i)")
            #expect(inPlace == wide, "event \(i), every field known to read in place")
            let v = Self.values(i)
            #expect(wide[0] == Int64(v.vpid) && wide[1] == Int64(v.vtid))
            if i % 3 != 2 { #expect(wide[3] == Int64(v.i8) && wide[4] == Int64(v.i16) && wide[5] == Int64(v.u32) && wide[6] == Int64(v.last)) }
            i += 1
        }
        #expect(i == n)
    }

    /// A file of exactly one page whose last event's last field (one byte) ends the file: an 8-byte
    /// load there would read past the mapping, so that event is read with loads of each field's
    /// width — and gives the right values.
    @Test("readIntegers never loads past the end of the mapping: an event ending a page-sized file")
    func noLoadPastTheMapping() throws {
        let page = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
        let header = HandBuiltTrace.packetPrefixSize
        var body: [UInt8] = []
        let n = 30
        for i in 0..<(n - 1) { body += Self.eventBytes(i, Self.values(i)) }
        // The last event (a fixed one: uint64 then int8) absorbs what is left of the page in its
        // procname context string.
        let lastIndex = n - 1    // (29: a fixed event, i % 3 == 2)
        var last = Self.values(lastIndex)
        last.procname = ""
        let without = Self.eventBytes(lastIndex, last).count
        last.procname = String(repeating: "p", count: page - header - body.count - without)
        last.i8 = -5
        body += Self.eventBytes(lastIndex, last)
        let size = header + body.count
        #expect(size == page)
        var bytes = HandBuiltTrace.packetPrefix(begin: 100, end: UInt64(100 + 2000 * 10), contentBits: UInt64(size * 8), packetBits: UInt64(size * 8), seq: 0)
        bytes += body
        let dir = SharedDaemon.scratch.appendingPathComponent("acc-page-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Self.metadata.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        try Data(bytes).write(to: dir.appendingPathComponent("stream_0"))
        let set = try CTFTraceSet(paths: [dir.path])
        var it = set.makeMergedIterator()
        var count = 0
        while try it.next() {
            count += 1
            guard count == n else { continue }
            let s = it.current
            #expect(s.eventClass.name == "acc:fixed")
            #expect(s.hot.pointee.pos >> 3 == page)
            #expect(s.wideLoadLimit == page)
            var refs = [s.integerRef(payloadField: 0, ofClass: s.eventClassIndex), s.integerRef(payloadField: 1, ofClass: s.eventClassIndex),
                        s.integerRef(contextField: 2, ofClass: s.eventClassIndex)]
            for k in refs.indices { refs[k].destination = k }
            var out = [Int64](repeating: 0, count: 3)
            refs.withUnsafeBufferPointer { r in out.withUnsafeMutableBufferPointer { s.readIntegers(r.baseAddress!, count: 3, into: $0.baseAddress!) } }
            #expect(out == [Int64(bitPattern: last.loop), -5, Int64(last.vtid)])
            // Known to read in place, it still takes each field's own width at the end of the mapping.
            #expect(refs.allSatisfy { $0.readsInPlace })
            var known = [Int64](repeating: 0, count: 3)
            refs.withUnsafeBufferPointer { r in known.withUnsafeMutableBufferPointer { s.readIntegers(r.baseAddress!, count: 3, allInPlace: true, into: UnsafeMutableRawPointer($0.baseAddress!)) } }
            #expect(known == out)
        }
        #expect(count == n)
    }

    /// Two streams with equal timestamps (ties go to the lower stream index), the second one
    /// malformed at its last event: decoded concurrently, the events before the error come in the
    /// merged iterator's order, then the same error.
    @Test("forEachInTimeOrder: ties in stream order, the events before a reader error, then the error")
    func concurrentDecodingAndErrors() throws {
        let n = 40
        let good = try Self.write("conc-a", events: n)
        let bad = try Self.write("conc-b", events: n, cut: 3)
        let dir = SharedDaemon.scratch.appendingPathComponent("acc-conc-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: good + "/metadata", toPath: dir.path + "/metadata")
        try FileManager.default.copyItem(atPath: good + "/stream_0", toPath: dir.path + "/stream_0")
        try FileManager.default.copyItem(atPath: bad + "/stream_0", toPath: dir.path + "/stream_1")
        struct Event: Equatable { var ts: Int64; var path: String; var loop: Int64? }
        @Sendable func event(_ s: CTFStream) -> Event { Event(ts: s.timestamp, path: s.path, loop: s.payloadInteger(at: 0)) }
        var expected: [Event] = []
        var expectedError = ""
        do {
            var it = try CTFTraceSet(paths: [dir.path]).makeMergedIterator()
            while try it.next() { expected.append(event(it.current)) }
        } catch { expectedError = "\(error)" }
        #expect(!expectedError.isEmpty, "the second stream is malformed")
        #expect(expected.count > n)
        for chunk in [1, 7, 4096] {
            var got: [Event] = []
            var gotError = ""
            do {
                try CTFTraceSet(paths: [dir.path]).forEachInTimeOrder(chunk: chunk, extract: { event($0) }) { got.append($0) }
            } catch { gotError = "\(error)" }
            #expect(got == expected, "chunks of \(chunk)")
            #expect(gotError == expectedError, "chunks of \(chunk)")
        }
        // The iterator's own loop (runs of one stream without touching the heap) gives the same.
        var looped: [Event] = []
        var loopError = ""
        do {
            var it = try CTFTraceSet(paths: [dir.path]).makeMergedIterator()
            try it.forEachEvent { _, s in looped.append(event(s)); return true }
        } catch { loopError = "\(error)" }
        #expect(looped == expected)
        #expect(loopError == expectedError)
        // Stopped part-way, the iterator goes on with next() from the event after the last delivered.
        var it = try CTFTraceSet(paths: [dir.path]).makeMergedIterator()
        var firstPart: [Event] = []
        try it.forEachEvent { _, s in firstPart.append(event(s)); return firstPart.count < 25 }
        var rest: [Event] = []
        do { while try it.next() { rest.append(event(it.current)) } } catch {}
        #expect(firstPart + rest == expected)
    }

    @Test("readIntegers on a lazily skipped body reads in place, and decodes it once for a field that needs it")
    func readIntegersInPlace() throws {
        let set = try CTFTraceSet(paths: [try Self.write("reads-lazy", events: 6)])
        var it = set.makeMergedIterator()
        var i = 0
        while try it.next() {
            let s = it.current
            let v = Self.values(i)
            #expect(s.hot.pointee.lazyBody >= 0)
            let ci = s.eventClassIndex
            var loop = s.integerRef(payloadField: 0, ofClass: ci); loop.destination = 0
            var vtid = s.integerRef(contextField: 2, ofClass: ci); vtid.destination = 1
            var out: [Int64] = [0, 0]
            out.withUnsafeMutableBufferPointer { o in
                [loop, vtid].withUnsafeBufferPointer { r in s.readIntegers(r.baseAddress!, count: 2, into: o.baseAddress!) }
            }
            #expect(out == [Int64(bitPattern: v.loop), Int64(v.vtid)])
            #expect(s.hot.pointee.lazyBody >= 0, "integers readable in place leave the body undecoded")
            if i % 3 != 2 {
                var be = s.integerRef(payloadField: 6, ofClass: ci); be.destination = 0
                var o2: [Int64] = [0]
                o2.withUnsafeMutableBufferPointer { o in
                    [be].withUnsafeBufferPointer { r in s.readIntegers(r.baseAddress!, count: 1, into: o.baseAddress!) }
                }
                #expect(o2 == [Int64(v.be)])
                #expect(s.hot.pointee.lazyBody < 0, "a big-endian field is read from the decoded body")
            }
            i += 1
        }
        #expect(i == 6)
    }

    @Test("a skipped body with an unterminated string or a field past the content fails like a decoded one")
    func malformedSkippedBodies() throws {
        // The last event is `fixed` (i = 2 of 3); take 4 events so the last one has strings.
        let n = 4
        // Cut the last int32 in half, then the NUL of the text before it, then into the `_mode` string.
        let cases: [(Int, String, String)] = [
            (2, "event.fields.last", "past the end"),
            (4 + 4 + 4 + 4 + 4 + 2, "event.fields.mode", "unterminated string"),
        ]
        for (cut, field, message) in cases {
            let p = try Self.write("bad\(cut)", events: n, cut: cut)
            expectReaderError([p]) { e in
                if case .malformed(let path, let off, let f, let m) = e { return path.hasSuffix("stream_0") && off > 56 && f == field && m.contains(message) }
                return false
            }
        }
        // A file cut inside the last event: the events before it, and a warning.
        let p = try Self.write("trunc", events: n, truncateFile: 3)
        let (lines, set) = try readerLines([p])
        #expect(lines.count == n - 1)
        #expect(set.warnings.contains { $0.message.contains("truncated") })
    }
}
