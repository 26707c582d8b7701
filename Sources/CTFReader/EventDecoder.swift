import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The event decoder (babeltrace2's msg-iter for one event, over its bfcr): reads the event at the
// current position of the packet content — its header, its class, its body skipped when it can be
// read in place (LazyBody.swift) or decoded by the interpreter (StreamInterpreter.swift). The
// packets themselves are PacketReader.swift's; the bytes, StreamMedium.swift's; the tables, the
// stream class's link (LinkedStreamClass.swift).

extension CTFStream {
    /// Hot decoding state lives behind a pointer: no dynamic exclusivity checks in the inner loop.
    @usableFromInline
    struct HotState {
        @usableFromInline var pos = 0
        @usableFromInline var end = 0
        var packetOffset = 0
        var nextPacketOffset = 0
        var packetTruncated = false
        @usableFromInline var clockValue: UInt64 = 0
        @usableFromInline var eventID: UInt64 = 0
        var finished = false { didSet { noteFast() } }
        var started = false { didSet { noteFast() } }
        @usableFromInline var currentClass = 0
        @usableFromInline var cycles: UInt64 = 0
        @usableFromInline var timestamp: Int64 = 0
        /// Start (bits) of the current event's lazily skipped body (see LazyBody.swift) whose slots are filled on
        /// first access, or -1 when the slots hold the body.
        @usableFromInline var lazyBody = -1
        /// Set by a seek: the current event has not been handed out yet, so the next `next()` returns it.
        var pending = false { didSet { noteFast() } }
        /// `started && !finished && !pending`: ``CTFStream/next()`` may take its fast path (one load to check).
        @usableFromInline var fastReady = false
        @inline(__always) mutating func noteFast() { fastReady = started && !finished && !pending }
        @usableFromInline init() {}
    }
}

/// A stream's decoding state and the per-event path: what ``CTFStream/next()`` and the field
/// accessors read at every event, copied from the medium and the stream class's link when the
/// stream is opened (stored inline in the stream: one load per field, as if the stream's own).
@usableFromInline
struct EventDecoder {
    /// The stream's bytes (``StreamMedium/base``).
    @usableFromInline let base: UnsafeRawPointer
    /// ``StreamMedium/wideLoadLimit``: ``CTFStream/readIntegers(_:count:into:)`` reads narrow fields
    /// with one 8-byte load when the current event ends at least 8 bytes before it.
    @usableFromInline let wideLoadLimit: Int
    /// The stream's own position, clock and current event (its own cache lines).
    @usableFromInline let hot: UnsafeMutablePointer<CTFStream.HotState>
    /// The decoded fields of the current packet and event (its own cache lines).
    @usableFromInline let slots: UnsafeMutablePointer<UInt64>
    /// For a lazily skipped body: byte offset (in the file) of each run of fixed fields, i.e. of the body start and
    /// of the byte after each string's NUL; valid while `lazyBody >= 0`. Every field a `FieldRef` locates from it was
    /// bounds-checked against the packet content when the body was skipped.
    @usableFromInline let segmentBase: UnsafeMutablePointer<Int>
    /// The header ``CTFStream/next()``'s fast path reads (LTTng's compact or large, with an `id`, a
    /// clock in nanoseconds and no debug output); `.generic`: every event takes the general path.
    @usableFromInline let fastHeader: LTTngHeader
    /// ``LinkedStreamClass/fastEventBits``.
    @usableFromInline let fastEventBits: UnsafeMutablePointer<Int>
    @usableFromInline let fastIDCount: Int
    /// Clock values convert within ±2^62 ns iff `value &- minCycles <= cycleSpan` (one compare per event).
    @usableFromInline let minCycles: UInt64
    @usableFromInline let cycleSpan: UInt64
    @usableFromInline let clockOffsetNS: Int64
    @usableFromInline let headerIDSlot: Int
    @usableFromInline let segmentBytes: UnsafeMutablePointer<Int>
    @usableFromInline let lazyStrings: UnsafeMutablePointer<Int>
    @usableFromInline let lazySegmentStart: UnsafeMutablePointer<Int>
    /// Per event class: range into `payloadRefs` of its payload fields.
    @usableFromInline let payloadFieldStart: UnsafeMutablePointer<Int>
    @usableFromInline let payloadFieldCounts: UnsafeMutablePointer<Int>
    @usableFromInline let payloadRefs: UnsafeMutablePointer<FieldRef>
    /// Per event class, `contextFieldCount` references of the stream event context fields.
    @usableFromInline let contextRefs: UnsafeMutablePointer<FieldRef>
    @usableFromInline let contextFieldCount: Int

    /// The state of a stream of class `l` over `medium`, its own memory allocated (``deallocate()``);
    /// `fast`: whether the fast path may be taken.
    init(medium: StreamMedium, linked l: LinkedStreamClass, fast: Bool) {
        base = medium.base
        wideLoadLimit = medium.wideLoadLimit
        hot = CTFStream.ownCacheLines(CTFStream.HotState.self, 1)
        hot.initialize(to: CTFStream.HotState())
        slots = CTFStream.ownCacheLines(UInt64.self, max(1, l.cls.slotCount))
        slots.initialize(repeating: 0, count: max(1, l.cls.slotCount))
        segmentBase = CTFStream.ownCacheLines(Int.self, l.maxStrings + 1)
        segmentBase.initialize(repeating: 0, count: l.maxStrings + 1)
        fastHeader = fast ? l.fastHeader : .generic
        fastEventBits = l.fastEventBits
        fastIDCount = l.fastIDCount
        minCycles = l.minCycles
        cycleSpan = l.cycleSpan
        clockOffsetNS = l.clockOffsetNS
        headerIDSlot = l.headerIDSlot
        segmentBytes = l.segmentBytes
        lazyStrings = l.lazyStrings
        lazySegmentStart = l.lazySegmentStart
        payloadFieldStart = l.payloadFieldStart
        payloadFieldCounts = l.payloadFieldCounts
        payloadRefs = l.payloadRefs
        contextRefs = l.contextRefs
        contextFieldCount = l.contextFieldCount
    }

    // (The paths are static functions given the stream, reading `s.dec.field` where they use it:
    // a method of the structure takes it whole as `self`, and the compiler then loaded every field
    // at every event — or copied the structure to the stack to pass it to a call out of line.)

    /// Frees the stream's own memory (the tables are the link's).
    func deallocate() {
        hot.deallocate()
        slots.deallocate()
        segmentBase.deallocate()
    }

    // MARK: the fast path

    /// The common event — LTTng's compact or large header, not extended, of a class whose body is
    /// fixed-size or fixed runs around strings (`fastEventBits`), wholly inside the packet content,
    /// with a valid clock value — read and accepted; false (the state untouched but `segmentBase`)
    /// for anything else, which the general path decodes (or reports) from scratch.
    ///
    /// What keeps the raw loads safe: `base` maps at least `end / 8` bytes (the packet content, checked against
    /// the file size by the packet reader), and the header's 6 (or 4) bytes and the whole event are checked to end at
    /// or before `end` before anything is read; a string's NUL scan reads 8-byte words only below
    /// `wideLoadLimit` (the mapping's pages) and takes a NUL only before `end` (`StreamFastPathTests`).
    @inlinable @inline(__always)
    static func nextFast(_ s: CTFStream) -> Bool {
        let h = s.dec.hot
        let kind = s.dec.fastHeader
        if kind != .generic && h.pointee.fastReady {
            let p = (h.pointee.pos &+ 7) & ~7
            let end = h.pointee.end
            if kind == .large {
                // Large header: u16 id, u32 timestamp (its low 32 bits).
                if p &+ 48 <= end {
                    let b = p &>> 3
                    let id = Int(UInt16(littleEndian: s.dec.base.loadUnaligned(fromByteOffset: b, as: UInt16.self)))
                    let v = UInt64(UInt32(littleEndian: s.dec.base.loadUnaligned(fromByteOffset: b &+ 2, as: UInt32.self)))
                    return takeFast(s, h, id: id, eventStart: p, headerBits: 48, end: end, clockLow: v, clockBits: 32)
                }
            } else if p &+ 32 <= end {
                // Compact header: 5-bit id, 27-bit timestamp (its low 27 bits).
                let w = UInt32(littleEndian: s.dec.base.loadUnaligned(fromByteOffset: p &>> 3, as: UInt32.self))
                return takeFast(s, h, id: Int(w & 31), eventStart: p, headerBits: 32, end: end, clockLow: UInt64(w &>> 5), clockBits: 27)
            }
        }
        return false
    }

    /// The fast path after either header: the event of compact id `id` at `eventStart`, whose header of
    /// `headerBits` held the low `clockBits` bits of its clock value, taken if its id is for the fast path, it ends
    /// within the packet content (`end`, its header already checked) and its clock value is valid; false (the
    /// state untouched but `segmentBase`, which the general path rewrites) otherwise.
    @inlinable @inline(__always)
    static func takeFast(_ s: CTFStream, _ h: UnsafeMutablePointer<CTFStream.HotState>, id: Int, eventStart p: Int, headerBits: Int,
                         end: Int, clockLow v: UInt64, clockBits: UInt64) -> Bool {
        guard id < s.dec.fastIDCount else { return false }
        let info = s.dec.fastEventBits[id]
        let after = fastEventEnd(s, info, eventStart: p, bodyStart: p &+ headerBits, end: end)
        guard after >= 0 else { return false }
        let c = EventDecoder.extendClock(h.pointee.clockValue, low: v, bits: clockBits)
        guard c &- s.dec.minCycles <= s.dec.cycleSpan else { return false }
        acceptFast(s, h, id: id, cls: info >= 0 ? info &>> 32 : -2 &- info, clock: c, bodyStart: p &+ headerBits, end: after)
        return true
    }

    /// The clock value whose low `bits` bits are `v`, the first at or after `c` (a field of fewer than 64 bits
    /// mapped to a clock: CTF 1.8, 8.1).
    @inlinable @inline(__always)
    static func extendClock(_ c: UInt64, low v: UInt64, bits: UInt64) -> UInt64 {
        let mask: UInt64 = (1 << bits) &- 1
        let wrapped = v < c & mask ? c &+ (1 << bits) : c
        return (wrapped & ~mask) | v
    }

    /// Where (bits) the event at `eventStart` whose id's `fastEventBits` entry is `info` ends, its body starting at
    /// `bodyStart`: by its constant size, or past its strings (``CTFStream/fastSkipStrings(_:from:end:)``); -1 when the id
    /// is not for the fast path or the event does not end within the packet content (`end`).
    @inlinable @inline(__always)
    static func fastEventEnd(_ s: CTFStream, _ info: Int, eventStart p: Int, bodyStart: Int, end: Int) -> Int {
        if info >= 0 {
            let after = p &+ (info & 0x7fff_ffff)
            return after <= end ? after : -1
        }
        return info == -1 ? -1 : s.fastSkipStrings(-2 &- info, from: bodyStart, end: end)
    }

    /// The state the general path leaves after an event whose body was skipped (read lazily).
    @inlinable @inline(__always)
    static func acceptFast(_ s: CTFStream, _ h: UnsafeMutablePointer<CTFStream.HotState>, id: Int, cls: Int, clock c: UInt64,
                           bodyStart: Int, end: Int) {
        h.pointee.clockValue = c
        h.pointee.eventID = UInt64(truncatingIfNeeded: id)
        s.dec.slots[s.dec.headerIDSlot] = UInt64(truncatingIfNeeded: id)
        h.pointee.currentClass = cls
        h.pointee.lazyBody = bodyStart
        s.dec.segmentBase[0] = bodyStart &>> 3
        h.pointee.pos = end
        h.pointee.cycles = c
        h.pointee.timestamp = s.dec.clockOffsetNS &+ Int64(bitPattern: c)
    }

    // MARK: the general path

    /// Reads the event at the current position of stream `s` (inside the packet content): its header
    /// (LTTng's natively, else by the header program), its class, and its body — skipped when it is
    /// fixed-size or fixed runs around strings (read in place later), else decoded. Leaves the
    /// position after the event, its clock value, id and class in ``CTFStream/HotState``.
    /// - Throws: ``CTFStream/OutOfBounds`` when the event passes the end of the packet content, and
    ///   ``CTFReaderError/malformed(path:offset:field:message:)`` for an unknown id and the
    ///   interpreter's errors.
    static func decodeEvent(_ s: CTFStream) throws {
        let l = s.linked
        let h = s.dec.hot, base = s.dec.base, slots = s.dec.slots, segmentBase = s.dec.segmentBase
        let start = h.pointee.pos
        let header = l.header
        if header != .generic {
            // LTTng's compact or large header, or its extended form: the id, then u32 id + u64 timestamp.
            let end = h.pointee.end
            var p = (start + 7) & ~7
            guard p + header.bits <= end else {
                h.pointee.pos = p
                throw CTFStream.OutOfBounds(pos: p, field: 0, message: "event header runs past the end of the packet content")
            }
            let (id, low, clockBits) = header.read(base, atByte: p >> 3)
            if id != header.extendedID {
                h.pointee.clockValue = EventDecoder.extendClock(h.pointee.clockValue, low: low, bits: clockBits)
                h.pointee.eventID = UInt64(id)
                p += header.bits
            } else {
                guard p + header.extendedBits <= end else {
                    h.pointee.pos = p
                    throw CTFStream.OutOfBounds(pos: p, field: 0, message: "extended event header runs past the end of the packet content")
                }
                let b = (p >> 3) + header.extendedIDByte
                h.pointee.eventID = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: b, as: UInt32.self)))
                h.pointee.clockValue = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: b + 4, as: UInt64.self))
                p += header.extendedBits
            }
            slots[s.dec.headerIDSlot] = h.pointee.eventID
            h.pointee.pos = p
        } else {
            try s.run(l.eventHeaderProgram)
        }
        let eventID = h.pointee.eventID
        var found = -1
        if !l.headerHasID {
            // No `id` in the event header: the stream class's only event class, whatever id it declares
            // (as babeltrace2 reads it; several classes without an id are refused when compiling).
            found = l.cls.eventClasses.isEmpty ? -1 : 0
        } else if eventID < UInt64(l.denseCount) { found = Int(l.denseIDs[Int(eventID)]) } else if let x = l.cls.sparseIDs[eventID] { found = x }
        guard found >= 0 else {
            throw CTFReaderError.malformed(path: s.path, offset: start >> 3, field: "stream.event.header.id",
                                           message: "unknown event id \(eventID) in stream class \(s.streamClassID)")
        }
        let ci = found
        h.pointee.currentClass = ci
        let pos = h.pointee.pos
        let fb = l.fixedBodyBits[ci]
        if fb >= 0 && pos & 7 == 0 {
            guard pos + fb <= h.pointee.end else {
                let op = l.opsBuf[l.progStart[l.combinedProgs[ci]]]
                throw CTFStream.OutOfBounds(pos: pos, field: op.field, message: "event body of \(fb / 8) bytes runs past the end of the packet content")
            }
            h.pointee.lazyBody = pos
            segmentBase[0] = pos >> 3
            h.pointee.pos = pos + fb
        } else if l.lazyStrings[ci] > 0 && pos & 7 == 0, let after = skipBody(s, ci) {
            h.pointee.lazyBody = pos
            h.pointee.pos = after
        } else {
            // Also a body that skipBody found malformed: the interpreter reports what is wrong, and where.
            h.pointee.lazyBody = -1
            try s.run(l.combinedProgs[ci])
        }
    }

    /// Finds the end (bits) of the current event's body of class `ci`, made of fixed runs and strings, starting at
    /// `pos` (byte-aligned), and records where each fixed run starts in `segmentBase`. Nil when the body does not fit
    /// in the packet content (then the caller decodes it, which throws the precise error).
    @inline(__always)
    static func skipBody(_ s: CTFStream, _ ci: Int) -> Int? {
        let h = s.dec.hot, base = s.dec.base
        let e = h.pointee.end
        let limit = e >> 3                  // strings end before this byte (the interpreter's bound)
        let seg = s.dec.segmentBytes + s.dec.lazySegmentStart[ci]
        let n = s.dec.lazyStrings[ci]
        let sb = s.dec.segmentBase
        var p = h.pointee.pos >> 3
        sb[0] = p
        for j in 0..<n {
            // Fixed runs are below sizeCap bytes, p below the file size: no overflow.
            p += seg[j]
            guard p < limit, let len = memchrRaw(base + p, limit - p) else { return nil }
            p += len + 1
            sb[j + 1] = p
        }
        p += seg[n]
        guard p << 3 <= e else { return nil }
        return p << 3
    }
}

extension CTFStream {
    // The event decoder's scan of a body's strings on the fast path, out of line: a method of the
    // stream, which Swift passes in a register of its own (as a static function's argument it cost
    // two instructions more per call: +4.7 M on `rltrace report`'s 2.8 M events).

    /// ``EventDecoder/skipBody(_:_:)`` for a body at `bodyStart` (byte-aligned) of class `ci` (with strings): its end (bits),
    /// or -1 when a string or the last fixed run does not end within `end` (the general path then reports it).
    /// Records where each fixed run starts in `segmentBase`, which the general path rewrites for any event.
    @usableFromInline
    func fastSkipStrings(_ ci: Int, from bodyStart: Int, end e: Int) -> Int {
        let limit = e >> 3                  // strings end before this byte, as in skipBody
        let seg = dec.segmentBytes + dec.lazySegmentStart[ci]
        let n = dec.lazyStrings[ci]
        let sb = dec.segmentBase
        var p = bodyStart >> 3
        var j = 0
        while j < n {       // (not `for j in 0..<n`: its check that `n` is not negative cost instructions per call)
            p += seg[j]
            let nul = findNul(from: p, before: limit)
            guard nul >= 0 else { return -1 }
            p = nul + 1
            j &+= 1
            sb[j] = p
        }
        p += seg[n]
        guard p << 3 <= e else { return -1 }
        return p << 3
    }

    /// The offset of the first NUL byte at or after byte `from` and before byte `limit`, or -1. Eight bytes
    /// at a time (names are short: a `memchr` call cost more than the scan) while the 8-byte load stays inside
    /// the mapping (`wideLoadLimit`: the file's pages; bytes past `limit` are read but a NUL there is not
    /// taken), then `memchr` for the rest.
    @inline(__always)
    func findNul(from: Int, before limit: Int) -> Int {
        var q = from
        while q < limit && q &+ 8 <= dec.wideLoadLimit {
            let x = UInt64(littleEndian: dec.base.loadUnaligned(fromByteOffset: q, as: UInt64.self))
            // A byte's high bit in `t` for each zero byte, exact up to the first one (the lowest).
            let t = (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
            if t != 0 {
                let i = q &+ t.trailingZeroBitCount &>> 3
                return i < limit ? i : -1
            }
            q &+= 8
        }
        guard q < limit, let len = memchrRaw(dec.base + q, limit - q) else { return -1 }
        return q + len
    }
}
