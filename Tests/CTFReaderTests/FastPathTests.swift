import Foundation
import Testing
@testable import CTFReader

/// `CTFStream.next()` reads the common LTTng event (compact or large header, not extended, of a
/// class whose body is fixed-size, inside the packet content, with a valid clock value) on an
/// inlined fast path and hands everything else to `nextGeneral()`. These tests decode hand-built
/// traces with LTTng's two event headers both ways (`CTFStream.fastPathDisabled`) and expect the
/// same events, fields, warnings and errors — and the events the traces were written with.
@Suite("CTFStream.next() fast path against the general path", .serialized)
struct StreamFastPathTests {
    enum Header { case compact, large }

    /// The shared hand-built layout (`HandBuiltTrace`) with LTTng's event headers, a `vtid` context
    /// and three classes: a fixed-size body, a string then a byte, and one byte.
    static func metadata(_ header: Header) -> String {
        HandBuiltTrace.metadata(hostname: "fast", typealiases: """
            typealias integer { size = 16; align = 8; signed = false; } := uint16_t;
            typealias integer { size = 32; align = 8; signed = true; } := int32_t;
            typealias integer { size = 5; align = 1; signed = false; } := uint5_t;

            """, afterClock: """
            typealias integer { size = 27; align = 1; signed = false; map = clock.c.value; } := uint27_clock_t;
            typealias integer { size = 32; align = 8; signed = false; map = clock.c.value; } := uint32_clock_t;
            struct event_header_compact {
                enum : uint5_t { compact = 0 ... 30, extended = 31 } id;
                variant <id> {
                    struct { uint27_clock_t timestamp; } compact;
                    struct { uint32_t id; ts_t timestamp; } extended;
                } v;
            } align(8);
            struct event_header_large {
                enum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;
                variant <id> {
                    struct { uint32_clock_t timestamp; } compact;
                    struct { uint32_t id; ts_t timestamp; } extended;
                } v;
            } align(8);

            """, eventHeader: header == .compact ? "struct event_header_compact" : "struct event_header_large",
            eventContext: "struct { int32_t _vtid; }", events: """
            event { name = "f:fixed"; id = 0; stream_id = 0; fields := struct { uint64_t _a; int32_t _b; }; };
            event { name = "f:str"; id = 1; stream_id = 0; fields := struct { string _s; uint8_t _c; }; };
            event { name = "f:byte"; id = 2; stream_id = 0; fields := struct { uint8_t _x; }; };
            """)
    }

    /// What an event was written with (and what the reader gives back).
    struct Event: Equatable, CustomStringConvertible {
        var ts: Int64; var cls: Int; var vtid: Int64?; var ints: [Int64?]; var str: String?
        var description: String { "ts \(ts) class \(cls) vtid \(vtid.map(String.init) ?? "-") ints \(ints) str \(str ?? "-")" }
    }

    static let clockOffset: Int64 = 1000 * 1_000_000_000

    /// Events of pseudo-random classes, with gaps between 1 ns and past 2^27 and 2^32 ns, and ties.
    static func events(_ n: Int, seed: UInt64, start: UInt64 = 5_000) -> [(cycles: UInt64, cls: Int, vtid: Int32, a: UInt64, b: Int32, s: String, x: UInt8)] {
        var r = seed &* 6364136223846793005 &+ 1442695040888963407
        func rnd() -> UInt64 { r = r &* 6364136223846793005 &+ 1442695040888963407; return r >> 17 }
        var t = start
        return (0..<n).map { i in
            let k = rnd() % 100
            t += k < 5 ? 0 : k < 90 ? 1 + rnd() % 2000 : k < 95 ? (1 << 27) + rnd() % 1000 : k < 98 ? (1 << 32) + rnd() % 7 : (1 << 27) - 1
            let cls = Int(rnd() % 7 < 4 ? 0 : rnd() % 2 == 0 ? 1 : 2)
            return (t, cls, Int32(truncatingIfNeeded: Int64(i) &* -7919), rnd() &* 977, Int32(truncatingIfNeeded: rnd()) , String(repeating: "s", count: Int(rnd() % 9)), UInt8(truncatingIfNeeded: rnd()))
        }
    }

    static func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { HandBuiltTrace.le(v) }

    /// One event's bytes: extended header when asked or when the time since `previous` does not fit
    /// the compact timestamp.
    static func bytes(_ header: Header, _ e: (cycles: UInt64, cls: Int, vtid: Int32, a: UInt64, b: Int32, s: String, x: UInt8),
                      previous: UInt64?, extended forced: Bool, id: UInt32? = nil) -> [UInt8] {
        let bits: UInt64 = header == .compact ? 27 : 32
        let id = id ?? UInt32(e.cls)
        let extended = forced || previous == nil || e.cycles - previous! >= 1 << bits || id >= (header == .compact ? 31 : 65535)
        var b: [UInt8]
        switch (header, extended) {
        case (.compact, false): b = le(UInt32(id) | UInt32(e.cycles & ((1 << 27) - 1)) << 5)
        case (.compact, true): b = [31] + le(id) + le(e.cycles)
        case (.large, false): b = le(UInt16(id)) + le(UInt32(truncatingIfNeeded: e.cycles))
        case (.large, true): b = le(UInt16(65535)) + le(id) + le(e.cycles)
        }
        b += le(e.vtid)
        switch e.cls {
        case 0: b += le(e.a) + le(e.b)
        case 1: b += Array(e.s.utf8) + [0] + [e.x]
        default: b += [e.x]
        }
        return b
    }

    /// Writes a trace of `events` in packets of `perPacket` events (each with padding after its
    /// content); `cut` bytes are taken off the last packet's content size, `truncate` off the file,
    /// `badID` replaces the id of the event at that index.
    static func write(_ name: String, _ header: Header, _ events: [(cycles: UInt64, cls: Int, vtid: Int32, a: UInt64, b: Int32, s: String, x: UInt8)],
                      perPacket: Int, cut: Int = 0, truncate: Int = 0, badID: Int? = nil, corruptClockAt: Int? = nil) throws -> String {
        var file: [UInt8] = []
        var seq: UInt64 = 0
        var previous: UInt64?
        for start in stride(from: 0, to: events.count, by: perPacket) {
            let part = events[start ..< min(events.count, start + perPacket)]
            var body: [UInt8] = []
            for (k, e) in part.enumerated() {
                let i = start + k
                var e2 = e
                if i == corruptClockAt { e2.cycles = 1 << 63 }
                body += bytes(header, e2, previous: previous, extended: i % 17 == 3 || i == corruptClockAt, id: i == badID ? 40 : nil)
                previous = i == corruptClockAt ? nil : e2.cycles
            }
            let isLast = start + perPacket >= events.count
            let content = HandBuiltTrace.packetPrefixSize + body.count - (isLast ? cut : 0)
            let size = (HandBuiltTrace.packetPrefixSize + body.count + 7) / 8 * 8 + 24
            var packet = HandBuiltTrace.packetPrefix(begin: part.first!.cycles, end: part.last!.cycles,
                                                     contentBits: UInt64(content * 8), packetBits: UInt64(size * 8), seq: seq)
            packet += body
            packet += [UInt8](repeating: 0xAB, count: size - packet.count)
            file += packet
            seq += 1
        }
        if truncate > 0 { file.removeLast(truncate) }
        let dir = SharedDaemon.scratch.appendingPathComponent("fast-\(name)-\(UUID().uuidString.prefix(6))").path
        try HandBuiltTrace.write(to: dir, metadata: Array(metadata(header).utf8), stream: file)
        return dir
    }

    /// Every event of the trace (fields read through the accessors), then the error and warnings.
    static func decode(_ dir: String, fast: Bool) throws -> (events: [Event], error: String, warnings: [String], fastHeader: Int) {
        CTFStream.fastPathDisabled = !fast
        let made = Result { try CTFTraceSet(paths: [dir]) }
        CTFStream.fastPathDisabled = false
        let set = try made.get()
        let s = set.streams[0]
        var out: [Event] = []
        var failure = ""
        do {
            while try s.next() {
                let str = s.payloadStringBytes(at: 0).map { String(decoding: $0, as: UTF8.self) }
                out.append(Event(ts: s.timestamp, cls: s.eventClassIndex, vtid: s.streamContextInteger(at: 0),
                                 ints: (0..<3).map { s.payloadInteger(at: $0) }, str: str))
                #expect(s.cycles == UInt64(s.timestamp - clockOffset))
            }
        } catch { failure = "\(error)" }
        return (out, failure, set.warnings.map(\.description), s.fastHeader)
    }

    static func expected(_ events: [(cycles: UInt64, cls: Int, vtid: Int32, a: UInt64, b: Int32, s: String, x: UInt8)]) -> [Event] {
        events.map { e in
            let ints: [Int64?] = e.cls == 0 ? [Int64(bitPattern: e.a), Int64(e.b), nil] : e.cls == 1 ? [nil, Int64(e.x), nil] : [Int64(e.x), nil, nil]
            return Event(ts: clockOffset + Int64(e.cycles), cls: e.cls, vtid: Int64(e.vtid), ints: ints, str: e.cls == 1 ? e.s : nil)
        }
    }

    @Test("well-formed traces: the fast path gives the events written, as the general path does", arguments: [Header.compact, .large])
    func wellFormed(_ header: Header) throws {
        let evs = Self.events(3000, seed: header == .compact ? 1 : 2)
        for perPacket in [1, 7, 1000] {
            let dir = try Self.write("ok", header, evs, perPacket: perPacket)
            let fast = try Self.decode(dir, fast: true), slow = try Self.decode(dir, fast: false)
            #expect(fast.fastHeader == (header == .compact ? 1 : 2))
            #expect(slow.fastHeader == 0)
            #expect(fast.error.isEmpty && slow.error.isEmpty, "\(fast.error) \(slow.error)")
            #expect(fast.events == slow.events, "\(perPacket) per packet")
            #expect(fast.events == Self.expected(evs), "\(perPacket) per packet")
            #expect(fast.warnings == slow.warnings && fast.warnings.isEmpty)
        }
    }

    @Test("malformed traces: the same events, then the same error (file, offset, field) or warnings", arguments: [Header.compact, .large])
    func malformed(_ header: Header) throws {
        let evs = Self.events(200, seed: header == .compact ? 3 : 4)
        // Content cut inside the last event's header, inside its fixed body, inside its string;
        // an unknown id mid-packet; a clock value beyond ±2^62 ns; a file cut inside a packet.
        var cases: [(String, String)] = []
        for cut in [1, 2, 3, 5, 9, 13] { cases.append(("cut \(cut)", try Self.write("cut\(cut)", header, evs, perPacket: 64, cut: cut))) }
        cases.append(("bad id", try Self.write("badid", header, evs, perPacket: 64, badID: 150)))
        cases.append(("corrupt clock", try Self.write("clock", header, evs, perPacket: 64, corruptClockAt: 120)))
        for t in [1, 4, 30, 37] { cases.append(("truncated \(t)", try Self.write("trunc\(t)", header, evs, perPacket: 64, truncate: t))) }
        for (label, dir) in cases {
            let fast = try Self.decode(dir, fast: true), slow = try Self.decode(dir, fast: false)
            #expect(fast.events == slow.events, "\(label)")
            #expect(fast.error == slow.error, "\(label)")
            #expect(fast.warnings == slow.warnings, "\(label)")
            #expect(!fast.error.isEmpty || !fast.warnings.isEmpty || fast.events.count < evs.count, "\(label): reported")
            #expect(fast.events == Array(Self.expected(evs).prefix(fast.events.count)), "\(label)")
            if label == "bad id" {
                #expect(fast.events.count == 150)
                #expect(fast.error.contains("stream.event.header.id") && fast.error.contains("unknown event id 40"), "\(fast.error)")
            }
            if label == "corrupt clock" {
                #expect(fast.events.count == 120)
                #expect(fast.error.contains("stream.event.header.timestamp"), "\(fast.error)")
            }
        }
    }
}

/// The time-ordered merges (``CTFMergedIterator/next()``, ``CTFMergedIterator/forEachEvent(_:)``,
/// ``CTFTraceSet/forEachInTimeOrder(extract:_:)`` with the calling thread decoding a stream or
/// not, small and large chunks) against an independent reference: every stream read on its own,
/// then sorted by (timestamp, stream index), stably.
@Suite("time-ordered merges against a sort of every stream's events", .serialized)
struct MergeOrderTests {
    struct Tagged: Equatable { var ts: Int64; var stream: Int; var n: Int }

    /// `streams` streams (stream_0…), finely interleaved (runs of one or two events, many ties);
    /// the stream `bad`, if any, ends in an event cut by its packet's content size.
    /// `steps`: stream `i`'s events are `steps[i]` cycles apart (and `counts[i]` of them) instead.
    static func write(streams k: Int, events n: Int, bad: Int? = nil, counts: [Int]? = nil, steps: [UInt64]? = nil) throws -> String {
        let dir = SharedDaemon.scratch.appendingPathComponent("merge-\(k)-\(UUID().uuidString.prefix(6))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try StreamFastPathTests.metadata(.large).write(toFile: dir + "/metadata", atomically: true, encoding: .utf8)
        for i in 0..<k {
            var evs = StreamFastPathTests.events(counts?[i] ?? n, seed: UInt64(10 + i))
            // Timestamps from a small set of values: runs of one or two events per stream, ties.
            var t: UInt64 = 5_000
            for j in evs.indices {
                if let steps { t += steps[i] } else { t += UInt64((j * 7 + i * 3) % 5 == 0 ? 0 : 1 + (j + i) % 3) }
                evs[j].cycles = t
            }
            let one = try StreamFastPathTests.write("m\(i)", .large, evs, perPacket: 50, cut: i == bad ? 3 : 0)
            try FileManager.default.copyItem(atPath: one + "/stream_0", toPath: dir + "/stream_\(i)")
        }
        return dir
    }

    /// Each stream on its own, then a stable sort; the error of the stream that fails, if any, and
    /// where the merge must stop: after the failing stream's last event.
    static func reference(_ dir: String) throws -> (events: [Tagged], error: String) {
        let set = try CTFTraceSet(paths: [dir])
        var all: [Tagged] = []
        var failing: (stream: Int, last: Tagged?, error: String)?
        for (i, s) in set.streams.enumerated() {
            var n = 0, last: Tagged?
            do {
                while try s.next() { last = Tagged(ts: s.timestamp, stream: i, n: n); all.append(last!); n += 1 }
            } catch { failing = (i, last, "\(error)") }
        }
        all.sort { ($0.ts, $0.stream, $0.n) < ($1.ts, $1.stream, $1.n) }
        guard let failing else { return (all, "") }
        // The merge meets the error when it needs the failing stream's next event: right after its last one.
        let cutAt = failing.last.flatMap { l in all.firstIndex(of: l).map { $0 + 1 } } ?? 0
        return (Array(all.prefix(cutAt)), failing.error)
    }

    func check(_ dir: String, _ ref: (events: [Tagged], error: String), label: String) throws {
        let paths = try CTFTraceSet(paths: [dir]).streams.map(\.path)
        func tag(_ s: CTFStream, _ counts: inout [Int]) -> Tagged {
            let i = paths.firstIndex(of: s.path)!
            defer { counts[i] += 1 }
            return Tagged(ts: s.timestamp, stream: i, n: counts[i])
        }
        // next()
        do {
            var got: [Tagged] = [], counts = [Int](repeating: 0, count: paths.count), failure = ""
            var it = try CTFTraceSet(paths: [dir]).makeMergedIterator()
            do { while try it.next() { got.append(tag(it.current, &counts)) } } catch { failure = "\(error)" }
            #expect(got == ref.events, "\(label): next()")
            #expect(failure == ref.error, "\(label): next()")
        }
        // forEachEvent, whole and stopped part-way then continued with next()
        for stopAfter in [Int.max, 1, 37] {
            var got: [Tagged] = [], counts = [Int](repeating: 0, count: paths.count), failure = ""
            var it = try CTFTraceSet(paths: [dir]).makeMergedIterator()
            do {
                try it.forEachEvent { _, s in got.append(tag(s, &counts)); return got.count < stopAfter }
                while try it.next() { got.append(tag(it.current, &counts)) }
            } catch { failure = "\(error)" }
            #expect(got == ref.events, "\(label): forEachEvent stopped after \(stopAfter)")
            #expect(failure == ref.error, "\(label): forEachEvent")
        }
        // forEachInTimeOrder
        for chunk in [1, 3, 64, 4096] {
            for inline in [true, false] {
                var got: [Tagged] = [], failure = ""
                do {
                    try CTFTraceSet(paths: [dir]).forEachInTimeOrder(chunk: chunk, inline: inline, extract: { s in
                        Tagged(ts: s.timestamp, stream: paths.firstIndex(of: s.path)!, n: 0)
                    }) { got.append($0) }
                } catch { failure = "\(error)" }
                var counts = [Int](repeating: 0, count: paths.count)
                for j in got.indices { got[j].n = counts[got[j].stream]; counts[got[j].stream] += 1 }
                #expect(got == ref.events, "\(label): forEachInTimeOrder, chunks of \(chunk), inline \(inline)")
                #expect(failure == ref.error, "\(label): forEachInTimeOrder, chunks of \(chunk), inline \(inline)")
                // The timestamps alone (no value kept, nothing called on the decoding threads).
                var times: [Int64] = []
                failure = ""
                do {
                    try CTFTraceSet(paths: [dir]).forEachTimestampInTimeOrder(chunk: chunk, inline: inline) { times.append($0) }
                } catch { failure = "\(error)" }
                #expect(times == ref.events.map(\.ts), "\(label): forEachTimestampInTimeOrder, chunks of \(chunk), inline \(inline)")
                #expect(failure == ref.error, "\(label): forEachTimestampInTimeOrder, chunks of \(chunk), inline \(inline)")
            }
        }
    }

    @Test("one stream, and two, three and five finely interleaved streams with ties", arguments: [1, 2, 3, 5])
    func interleaved(_ k: Int) throws {
        let dir = try Self.write(streams: k, events: 400)
        let ref = try Self.reference(dir)
        #expect(ref.error.isEmpty && ref.events.count == 400 * k)
        try check(dir, ref, label: "\(k) streams")
        // The public entry point (chunk size from the value's size, the calling thread decoding a
        // stream or not by the number of cores) with a large value: 232 bytes, chunks of 273 events
        // (64 KiB with the timestamps).
        struct Big: Sendable { var ts: Int64; var stream: Int; var pad: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) }
        #expect(MemoryLayout<Big>.stride == 232 && CTFTraceSet.concurrentChunk(for: Big.self) == 273)
        #expect(CTFTraceSet.concurrentChunk(for: Int64.self) == 4096)
        let paths = try CTFTraceSet(paths: [dir]).streams.map(\.path)
        var got: [Tagged] = [], counts = [Int](repeating: 0, count: k)
        try CTFTraceSet(paths: [dir]).forEachInTimeOrder(extract: { s in
            let i = paths.firstIndex(of: s.path)!
            return Big(ts: s.timestamp, stream: i, pad: (Int64(i), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, s.timestamp))
        }) { v in
            #expect(v.pad.0 == Int64(v.stream) && v.pad.26 == v.ts)
            got.append(Tagged(ts: v.ts, stream: v.stream, n: counts[v.stream])); counts[v.stream] += 1
        }
        #expect(got == ref.events, "public forEachInTimeOrder, \(k) streams")
        var times: [Int64] = []
        try CTFTraceSet(paths: [dir]).forEachTimestampInTimeOrder { times.append($0) }
        #expect(times == ref.events.map(\.ts), "public forEachTimestampInTimeOrder, \(k) streams")
    }

    /// The calling thread merges and decodes one stream; the other stream's thread releases that
    /// stream's consumed pages for it (``CTFStream/releaseHandedOff()``): the events are the same,
    /// the releases were made there, and the calling thread takes them back at the end.
    @Test("the calling thread's stream has its consumed pages released by the other stream's thread")
    func releasesHandedOff() throws {
        let dir = try Self.write(streams: 2, events: 20_000)
        let ref = try Self.reference(dir)
        for run in 0..<2 {
            let set = try CTFTraceSet(paths: [dir])
            #expect(set.streams.allSatisfy { $0.medium.storage == .mapped(length: $0.fileSize) }, "the files are mapped (more than a page each)")
            let inlined = CTFTraceSet.inlineStream(set.streams)
            let s = set.streams[inlined]
            var times: [Int64] = [], handedOff = false
            let body: (Int64) throws -> Void = { t in
                if times.isEmpty { handedOff = s.releaseHandoff != nil }
                times.append(t)
            }
            if run == 0 { try set.forEachTimestampInTimeOrder(chunk: 64, inline: true, body) }
            else { try set.forEachInTimeOrder(chunk: 64, inline: true, extract: { $0.timestamp }, body) }
            #expect(times == ref.events.map(\.ts))
            #expect(handedOff, "run \(run): the releases were handed over during the merge")
            #expect(s.releaseHandoff == nil, "run \(run): and taken back at its end")
            #expect(s.releasesByOtherThread > 0, "run \(run): the other stream's thread released pages")
            #expect(s.releasedUpTo == s.fileSize & ~(s.pageSize - 1), "run \(run): every consumed page released at the end")
            #expect(set.streams.allSatisfy { $0 === s || $0.releaseHandoff == nil && $0.releasesByOtherThread == 0 })
        }
    }

    /// The releasing thread's own stream ends long before the calling thread's (its 30 000 events
    /// are 1 cycle apart, the other's 10 000 are 10 apart): from then on the calling thread releases
    /// its stream's pages itself again, rather than keep them mapped to the end.
    @Test("the calling thread releases its pages itself again once the other stream's thread has ended")
    func releasesTakenBackWhenTheOtherThreadEnds() throws {
        let dir = try Self.write(streams: 2, events: 0, counts: [30_000, 10_000], steps: [1, 10])
        let ref = try Self.reference(dir)
        let set = try CTFTraceSet(paths: [dir])
        let inlined = CTFTraceSet.inlineStream(set.streams)
        #expect(inlined == 1, "the stream with the fewest bytes")
        let s = set.streams[inlined]
        var times: [Int64] = []
        var releasedWhenLetGo: Int?, releasedLater = false
        // The other stream's last event: past it, the merge waits (up to 5 s) for that stream's
        // thread to let go, which it does right after handing its last chunk over — else, on a
        // loaded machine, the merge could finish this stream before that thread is scheduled again.
        let otherEnd = ref.events.last { $0.stream != inlined }!.ts
        var waited = false
        try set.forEachTimestampInTimeOrder(chunk: 64, inline: true) { t in
            times.append(t)
            if t > otherEnd && !waited, let h = s.releaseHandoff {
                waited = true
                for _ in 0..<5000 where h.active.load(ordering: .acquiring) { usleep(1000) }
            }
            guard let h = s.releaseHandoff, !h.active.load(ordering: .acquiring) else { return }
            // (The other thread has let go: `releasedUpTo` is this thread's to read.)
            if let r = releasedWhenLetGo { if s.releasedUpTo > r { releasedLater = true } } else { releasedWhenLetGo = s.releasedUpTo }
        }
        #expect(times == ref.events.map(\.ts))
        #expect(releasedWhenLetGo != nil, "the other stream's thread let go before the merge ended")
        #expect(releasedLater, "and the calling thread released pages itself after that")
        #expect(s.releasesByOtherThread > 0)
        #expect(s.releasedUpTo == s.fileSize & ~(s.pageSize - 1))
    }

    /// When the merge is behind (a slow body here), the other stream's thread decodes chunks of the
    /// calling thread's stream ahead of it (``StreamQueue/steal()``): the same events in the same
    /// order, a reader error delivered at the same point, whichever thread decoded it.
    @Test("a merge that is behind gets its own stream decoded ahead by the other thread", arguments: [nil, 0, 1])
    func decodedAheadForTheCaller(_ bad: Int?) throws {
        let dir = try Self.write(streams: 2, events: 20_000, bad: bad)
        let ref = try Self.reference(dir)
        for run in 0..<2 {
            let set = try CTFTraceSet(paths: [dir])
            let inlined = CTFTraceSet.inlineStream(set.streams)
            var times: [Int64] = [], failure = ""
            let body: (Int64) throws -> Void = { t in
                times.append(t)
                if times.count % 500 == 0 { usleep(300) }
            }
            do {
                if run == 0 { try set.forEachTimestampInTimeOrder(chunk: 64, inline: true, body) }
                else { try set.forEachInTimeOrder(chunk: 64, inline: true, extract: { $0.timestamp }, body) }
            } catch { failure = "\(error)" }
            #expect(times == ref.events.map(\.ts), "bad \(bad.map(String.init) ?? "none"), run \(run)")
            #expect(failure == ref.error, "bad \(bad.map(String.init) ?? "none"), run \(run)")
            #expect(set.streams[inlined].chunksDecodedElsewhere > 0, "bad \(bad.map(String.init) ?? "none"), run \(run): decoded ahead by the other thread")
            #expect(set.streams[1 - inlined].chunksDecodedElsewhere == 0)
        }
    }

    /// The concurrent merge decodes streams on different threads: the state each stream writes at
    /// every event must share no cache line with another stream's (or any other allocation), or
    /// the line bounces between the cores at every event (``CTFStream/ownCacheLines(_:_:)``).
    @Test("each stream's per-event state is on cache lines of its own")
    func perEventStateOnOwnLines() throws {
        let dir = try Self.write(streams: 3, events: 10)
        let set = try CTFTraceSet(paths: [dir])
        #expect(set.streams.count == 3)
        let block = CTFStream.cacheBlock
        var blocks: [Int: String] = [:]
        for (i, s) in set.streams.enumerated() {
            let regions: [(String, UnsafeRawPointer, Int)] = [
                ("hot", UnsafeRawPointer(s.hot), MemoryLayout<CTFStream.HotState>.stride),
                ("slots", UnsafeRawPointer(s.slots), 8), ("segmentBase", UnsafeRawPointer(s.segmentBase), 8)]
            for (name, p, bytes) in regions {
                let a = Int(bitPattern: p)
                #expect(a % block == 0, "stream \(i) \(name) at \(a) is not aligned to \(block) bytes")
                for b in stride(from: a / block, through: (a + bytes - 1) / block, by: 1) {
                    #expect(blocks[b] == nil, "stream \(i) \(name) shares a \(block)-byte block with \(blocks[b] ?? "")")
                    blocks[b] = "stream \(i) \(name)"
                }
            }
        }
    }

    @Test("a stream failing mid-trace: the events before the error in order, then the error", arguments: [0, 1])
    func failing(_ bad: Int) throws {
        let dir = try Self.write(streams: 2, events: 300, bad: bad)
        let ref = try Self.reference(dir)
        #expect(!ref.error.isEmpty)
        try check(dir, ref, label: "stream \(bad) failing")
        let dir3 = try Self.write(streams: 3, events: 300, bad: bad)
        try check(dir3, try Self.reference(dir3), label: "3 streams, stream \(bad) failing")
    }
}
