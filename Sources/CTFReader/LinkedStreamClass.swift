import Foundation
import Synchronization

// What the decoder needs of a stream class, worked out once per stream class and shared by every
// stream of the class (babeltrace2 keeps its decoding tables per stream class too): the programs
// flattened into raw tables, the per-class tables of the fast path and of the lazily read bodies
// (LazyBody.swift), the clock conversion and the event header's layout. A trace of 65 536 streams
// of one class links once, not 65 536 times (``CTFTrace/linkedClass(_:streamPath:)``).

/// The layout of the event header the decoder reads without the header program: LTTng's two.
@usableFromInline
enum LTTngHeader: Int {
    /// Any other header: read by the stream class's event header program.
    case generic = 0
    /// LTTng's compact header: 5-bit id, 27-bit timestamp (32 bits); id 31 is followed by a u32 id
    /// and a u64 timestamp (104 bits in all).
    case compact = 1
    /// LTTng's large header: u16 id, u32 timestamp (48 bits); id 65535 is followed by a u32 id and
    /// a u64 timestamp (112 bits in all).
    case large = 2

    /// Bits of the header when not extended.
    var bits: Int { self == .compact ? 32 : 48 }
    /// The id that announces the extended header.
    var extendedID: Int { self == .compact ? 31 : 65535 }
    /// Bits of the extended header.
    var extendedBits: Int { self == .compact ? 104 : 112 }
    /// Byte offset of the extended header's u32 id (its u64 timestamp follows it).
    var extendedIDByte: Int { self == .compact ? 1 : 2 }

    /// The id and the low bits of the timestamp of the (not extended) header at byte `b`, and how
    /// many bits of the timestamp it holds.
    @inline(__always)
    func read(_ base: UnsafeRawPointer, atByte b: Int) -> (id: Int, low: UInt64, clockBits: UInt64) {
        if self == .compact {
            let w = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: b, as: UInt32.self))
            return (Int(w & 31), UInt64(w >> 5), 27)
        }
        let id = UInt16(littleEndian: base.loadUnaligned(fromByteOffset: b, as: UInt16.self))
        let v = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: b + 2, as: UInt32.self))
        return (Int(id), UInt64(v), 32)
    }
}

/// A stream class linked for decoding: its programs and tables in raw memory, immutable once made,
/// shared by the streams of the class (they read it from several threads).
final class LinkedStreamClass: @unchecked Sendable {
    /// Links made so far in the process (read by tests: one per stream class of a trace opened).
    static let made = Atomic<Int>(0)

    let cls: CompiledStreamClass
    let clock: CTFClock?
    let clockIsNS: Bool
    let clockOffsetNS: Int64
    /// Clock values convert within ±2^62 ns iff `value &- minCycles <= cycleSpan` (one compare per event).
    let minCycles: UInt64
    let cycleSpan: UInt64
    /// The event header's layout when it is one of LTTng's (and the trace little-endian).
    let header: LTTngHeader
    let headerIDSlot: Int
    let traceBigEndian: Bool
    let headerHasID: Bool
    let eventHeaderProgram: Int
    let names: FieldNames
    let types: [CTFType]

    // The programs: the class's own, then per event class one combined program (stream event
    // context + event context + payload).
    let opsBuf: UnsafeMutablePointer<Op>
    let progStart: UnsafeMutablePointer<Int>
    let progCount: UnsafeMutablePointer<Int>
    let combinedProgs: UnsafeMutablePointer<Int>
    let varTagSlot: UnsafeMutablePointer<Int>
    let varSigned: UnsafeMutablePointer<Bool>
    let varRangeStart: UnsafeMutablePointer<Int>
    let varRangeCount: UnsafeMutablePointer<Int>
    let rangeLo: UnsafeMutablePointer<Int64>
    let rangeHi: UnsafeMutablePointer<Int64>
    let rangeProg: UnsafeMutablePointer<Int>
    let denseIDs: UnsafeMutablePointer<Int32>
    let denseCount: Int
    /// Per event class: body size in bits when it has a fixed layout (skipped with one bounds check), else -1.
    let fixedBodyBits: UnsafeMutablePointer<Int>
    /// Per event class: number of strings of a lazily skipped body with strings (0: fixed or decoded), and the
    /// start in `segmentBytes` of its fixed runs' sizes (strings + 1 of them).
    let lazyStrings: UnsafeMutablePointer<Int>
    let lazySegmentStart: UnsafeMutablePointer<Int>
    let segmentBytes: UnsafeMutablePointer<Int>
    /// The most strings of a lazily skipped body (a stream's `segmentBase` holds one more entry).
    let maxStrings: Int
    /// Per event class: range into `payloadRefs` of its payload fields.
    let payloadFieldStart: UnsafeMutablePointer<Int>
    let payloadFieldCounts: UnsafeMutablePointer<Int>
    let payloadRefs: UnsafeMutablePointer<FieldRef>
    /// Per event class, `contextFieldCount` references of the stream event context fields.
    let contextRefs: UnsafeMutablePointer<FieldRef>
    let contextFieldCount: Int
    /// The header the fast path of ``CTFStream/next()`` may read: ``header`` when it has an `id` and
    /// the clock counts nanoseconds, else `.generic` (every event takes the general path).
    let fastHeader: LTTngHeader
    /// Per event id below `fastIDCount`: the event's size in bits from its (byte-aligned) header to its end when
    /// the id is a compact one (not 31, or 65535: the extended header) naming a class whose body is fixed-size
    /// (`fixedBodyBits`; packed with the class index: `bits | classIndex << 32`, bits below 2^31); `-2 - classIndex`
    /// for a class whose body is runs of fixed bytes around strings (`lazyStrings`: skipped by a NUL scan per
    /// string, as the general path does); else -1.
    let fastEventBits: UnsafeMutablePointer<Int>
    let fastIDCount: Int

    /// Links `c` of `metadata`; `streamPath` names a stream file of the trace (for messages).
    /// - Throws: ``CTFReaderError/metadataSemantic(path:message:)`` when the class's clock puts every
    ///   timestamp beyond what converts.
    init(_ c: CompiledStreamClass, metadata: CTFMetadata, streamPath: String) throws {
        cls = c
        clock = c.clockName.flatMap { metadata.clocks[$0] } ?? (metadata.clocks.count == 1 ? metadata.clocks.first!.value : nil)
        clockIsNS = clock == nil || clock!.frequency == 1_000_000_000
        clockOffsetNS = clock.map { $0.offsetSeconds &* 1_000_000_000 &+ ($0.frequency == 1_000_000_000 ? $0.offsetCycles : 0) } ?? 0
        let validCycles: ClosedRange<UInt64>? = clock.map(\.validCycleRange) ?? (0...UInt64(CTFClock.timestampLimitNanoseconds - 1))
        guard let validCycles else {
            throw CTFReaderError.metadataSemantic(path: (streamPath as NSString).deletingLastPathComponent + "/metadata",
                message: "clock `\(clock!.name)`: its offset places every timestamp beyond ±2^62 ns of the epoch (years 1824–2116)")
        }
        minCycles = validCycles.lowerBound
        cycleSpan = validCycles.upperBound - validCycles.lowerBound
        header = metadata.byteOrder == .little ? LTTngHeader(rawValue: c.lttngHeaderKind) ?? .generic : .generic
        headerIDSlot = c.eventHeaderLayout.first(where: { $0.name == "id" })?.slot ?? 0
        traceBigEndian = metadata.byteOrder == .big
        headerHasID = c.headerHasID
        eventHeaderProgram = c.eventHeaderProgram
        names = c.names
        types = c.types
        func buf<T>(_ a: [T]) -> UnsafeMutablePointer<T> {
            let p = UnsafeMutablePointer<T>.allocate(capacity: max(1, a.count))
            _ = UnsafeMutableBufferPointer(start: p, count: a.count).initialize(from: a)
            return p
        }
        // Per event class, one combined program: stream event context + event context + payload.
        var allOps = c.ops
        var starts0 = c.programs.map(\.start), counts0 = c.programs.map(\.count)
        var combined: [Int] = []
        for ci in c.eventClasses.indices {
            let parts = [c.streamEventContextProgram, c.eventContextPrograms[ci], c.payloadPrograms[ci]]
            let st = allOps.count
            for pi in parts { allOps.append(contentsOf: c.ops[c.programs[pi].start ..< c.programs[pi].start + c.programs[pi].count]) }
            combined.append(starts0.count)
            starts0.append(st); counts0.append(allOps.count - st)
        }
        progStart = buf(starts0)
        progCount = buf(counts0)
        combinedProgs = buf(combined)
        opsBuf = buf(allOps)
        // Bodies of byte-sized, byte-aligned fields and strings (what LTTng-UST writes) are skipped by size, or by
        // size plus a NUL scan per string, and read in place or decoded when a field is read (LazyBody.swift).
        var fixed: [Int] = [], nStrings: [Int] = [], segStart: [Int] = [], segs: [Int] = []
        var pRefs: [FieldRef] = [], cRefs: [FieldRef] = [], pfs: [Int] = [], pfc: [Int] = []
        var most = 0
        for ci in c.eventClasses.indices {
            let pi = combined[ci]
            let layout = LazyBodyLayout(allOps[starts0[pi] ..< starts0[pi] + counts0[pi]])
            let n = layout?.strings ?? 0
            fixed.append(layout != nil && n == 0 ? layout!.segments[0] * 8 : -1)
            nStrings.append(n)
            segStart.append(segs.count)
            segs += layout?.segments ?? []
            most = max(most, n)
            func ref(_ f: FieldLayout) -> FieldRef { layout?.ref(for: f) ?? LazyBodyLayout.slotRef(for: f) }
            pfs.append(pRefs.count); pfc.append(c.payloadLayouts[ci].count)
            pRefs += c.payloadLayouts[ci].map(ref)
            cRefs += c.streamEventContextLayout.map(ref)
        }
        maxStrings = most
        fixedBodyBits = buf(fixed)
        lazyStrings = buf(nStrings); lazySegmentStart = buf(segStart); segmentBytes = buf(segs)
        payloadFieldStart = buf(pfs); payloadFieldCounts = buf(pfc); payloadRefs = buf(pRefs)
        contextRefs = buf(cRefs); contextFieldCount = c.streamEventContextLayout.count
        varTagSlot = buf(c.variants.map(\.tagSlot))
        varSigned = buf(c.variants.map(\.tagSigned))
        var starts: [Int] = [], counts: [Int] = [], los: [Int64] = [], his: [Int64] = [], progs: [Int] = []
        for v in c.variants {
            starts.append(los.count); counts.append(v.ranges.count)
            for r in v.ranges { los.append(r.lo); his.append(r.hi); progs.append(r.program) }
        }
        varRangeStart = buf(starts); varRangeCount = buf(counts)
        rangeLo = buf(los); rangeHi = buf(his); rangeProg = buf(progs)
        denseIDs = buf(c.denseIDs); denseCount = c.denseIDs.count
        fastHeader = header != .generic && c.headerHasID && clockIsNS ? header : .generic
        fastIDCount = fastHeader == .generic ? 0 : min(c.denseIDs.count, fastHeader.extendedID)
        var table: [Int] = []
        for id in 0..<fastIDCount {
            let ci = Int(c.denseIDs[id])
            let bits = ci >= 0 && fixed[ci] >= 0 ? fastHeader.bits + fixed[ci] : -1
            // A body of fixed runs and strings (LTTng's events with a string field): -2 - its class.
            let strings = ci >= 0 && nStrings[ci] > 0 ? -2 - ci : -1
            table.append(bits >= 0 && bits < 1 << 31 ? bits | ci << 32 : strings)
        }
        fastEventBits = buf(table)
        LinkedStreamClass.made.add(1, ordering: .relaxed)
    }

    deinit {
        opsBuf.deallocate(); progStart.deallocate(); progCount.deallocate(); combinedProgs.deallocate()
        varTagSlot.deallocate(); varSigned.deallocate(); varRangeStart.deallocate(); varRangeCount.deallocate()
        rangeLo.deallocate(); rangeHi.deallocate(); rangeProg.deallocate(); denseIDs.deallocate()
        fixedBodyBits.deallocate(); lazyStrings.deallocate(); lazySegmentStart.deallocate(); segmentBytes.deallocate()
        payloadFieldStart.deallocate(); payloadFieldCounts.deallocate(); payloadRefs.deallocate(); contextRefs.deallocate()
        fastEventBits.deallocate()
    }

    /// `cycles` of the class's clock in nanoseconds since the epoch.
    @inline(__always)
    func nanoseconds(_ cycles: UInt64) -> Int64 {
        if clockIsNS { return clockOffsetNS &+ Int64(bitPattern: cycles) }
        return clock!.nanoseconds(fromCycles: cycles)
    }
}

/// The stream classes of a trace linked so far, by stream class id.
final class LinkedClasses: Sendable {
    let byID = Mutex<[UInt64: LinkedStreamClass]>([:])
}

extension CTFTrace {
    /// Stream class `id` linked for decoding: made by the first stream of the class opened, then
    /// shared by every other (live streams may be opened on several threads: under a lock).
    /// - Throws: ``CTFReaderError/malformed(path:offset:field:message:)`` naming `streamPath` when the
    ///   trace declares no such class, and the linking's errors.
    func linkedClass(_ id: UInt64, streamPath: String) throws -> LinkedStreamClass {
        guard let c = compiled[id] else {
            throw CTFReaderError.malformed(path: streamPath, offset: 0, field: "trace.packet.header.stream_id", message: "unknown stream class id \(id)")
        }
        return try linked.byID.withLock { byID in
            if let l = byID[id] { return l }
            let l = try LinkedStreamClass(c, metadata: metadata, streamPath: streamPath)
            byID[id] = l
            return l
        }
    }
}
