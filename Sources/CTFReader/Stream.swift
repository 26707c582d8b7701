import Foundation
#if canImport(Glibc)
import Glibc
#endif

nonisolated(unsafe) let debugPositions = getenv("CTFREADER_DEBUG") != nil

/// A loss the tracer reported or that the packet sequence reveals.
public struct CTFLoss: Sendable, CustomStringConvertible {
    /// What was lost.
    public enum Kind: Sendable, Equatable {
        /// The tracer discarded this many events (ring buffer full), from the packet context counter.
        case discardedEvents(UInt64)
        /// This many packets are missing (a gap in the packet sequence numbers).
        case lostPackets(UInt64)
    }
    /// What was lost.
    public var kind: Kind
    /// The data stream file concerned.
    public var streamPath: String
    /// Start of the time range in which the loss happened (ns since the epoch).
    public var beginNanoseconds: Int64
    /// End of that time range (ns since the epoch).
    public var endNanoseconds: Int64

    /// A human-readable description.
    public var description: String {
        switch kind {
        case .discardedEvents(let n):
            return "\(streamPath): tracer discarded \(n) event(s) between \(beginNanoseconds) and \(endNanoseconds) ns"
        case .lostPackets(let n):
            return "\(streamPath): \(n) packet(s) lost between \(beginNanoseconds) and \(endNanoseconds) ns"
        }
    }
}

/// One data stream file of a trace, decoded event by event with precompiled programs over a memory-mapped file.
///
/// Call ``next()`` to advance; after it returns true, the accessors describe the current event until the next call.
public final class CTFStream: @unchecked Sendable {
    /// The stream file's path.
    public let path: String
    /// The trace this stream belongs to (nil once the trace is released).
    public private(set) weak var trace: CTFTrace?
    /// The trace's `env` block (hostname, procname, vpid, …).
    public let environment: [String: String]
    /// Losses found so far (filled as packets are read).
    public private(set) var losses: [CTFLoss] = []
    /// Warnings found so far (e.g. a truncated final packet).
    public private(set) var warnings: [CTFWarning] = []

    let cls: CompiledStreamClass
    @usableFromInline let base: UnsafeRawPointer
    private let mapLength: Int
    let fileSize: Int
    @usableFromInline let slots: UnsafeMutablePointer<UInt64>
    private let opsBuf: UnsafeMutablePointer<Op>
    private let clock: CTFClock?
    private let clockIsNS: Bool
    private let clockOffsetNS: Int64
    /// Clock values convert within ±2^62 ns iff `value &- minCycles <= cycleSpan` (one compare per event).
    private let minCycles: UInt64
    private let cycleSpan: UInt64
    /// 0: generic header program; 1: LTTng compact header (5-bit id, 27-bit timestamp); 2: LTTng large header.
    private let headerKind: Int
    private let headerIDSlot: Int
    private let traceBigEndian: Bool

    // Decoding state.
    /// Hot decoding state lives behind a pointer: no dynamic exclusivity checks in the inner loop.
    @usableFromInline
    struct HotState {
        var pos = 0
        var end = 0
        var packetOffset = 0
        var nextPacketOffset = 0
        var packetTruncated = false
        var clockValue: UInt64 = 0
        var eventID: UInt64 = 0
        var finished = false
        var started = false
        @usableFromInline var currentClass = 0
        @usableFromInline var cycles: UInt64 = 0
        @usableFromInline var timestamp: Int64 = 0
        /// Start (bits) of the current event's lazily skipped body (see LazyBody.swift) whose slots are filled on
        /// first access, or -1 when the slots hold the body.
        @usableFromInline var lazyBody = -1
        /// Set by a seek: the current event has not been handed out yet, so the next `next()` returns it.
        var pending = false
        @usableFromInline init() {}
    }
    @usableFromInline let hot: UnsafeMutablePointer<HotState>
    /// For a lazily skipped body: byte offset (in the file) of each run of fixed fields, i.e. of the body start and
    /// of the byte after each string's NUL; valid while `lazyBody >= 0`. Every field a `FieldRef` locates from it was
    /// bounds-checked against the packet content when the body was skipped.
    @usableFromInline let segmentBase: UnsafeMutablePointer<Int>
    var pos: Int { @inline(__always) get { hot.pointee.pos } @inline(__always) set { hot.pointee.pos = newValue } }
    var end: Int { @inline(__always) get { hot.pointee.end } @inline(__always) set { hot.pointee.end = newValue } }
    private var packetOffset: Int { get { hot.pointee.packetOffset } set { hot.pointee.packetOffset = newValue } }
    private var nextPacketOffset: Int { get { hot.pointee.nextPacketOffset } set { hot.pointee.nextPacketOffset = newValue } }
    private var packetTruncated: Bool { get { hot.pointee.packetTruncated } set { hot.pointee.packetTruncated = newValue } }
    private var clockValue: UInt64 { @inline(__always) get { hot.pointee.clockValue } @inline(__always) set { hot.pointee.clockValue = newValue } }
    private var eventID: UInt64 { @inline(__always) get { hot.pointee.eventID } @inline(__always) set { hot.pointee.eventID = newValue } }
    private var finished: Bool { @inline(__always) get { hot.pointee.finished } @inline(__always) set { hot.pointee.finished = newValue } }
    private var started: Bool { @inline(__always) get { hot.pointee.started } @inline(__always) set { hot.pointee.started = newValue } }
    // Flattened copies of the compiled stream class for the inner loop.
    private let progStart: UnsafeMutablePointer<Int>
    private let progCount: UnsafeMutablePointer<Int>
    private let varTagSlot: UnsafeMutablePointer<Int>
    private let varSigned: UnsafeMutablePointer<Bool>
    private let varRangeStart: UnsafeMutablePointer<Int>
    private let varRangeCount: UnsafeMutablePointer<Int>
    private let rangeLo: UnsafeMutablePointer<Int64>
    private let rangeHi: UnsafeMutablePointer<Int64>
    private let rangeProg: UnsafeMutablePointer<Int>
    private let denseIDs: UnsafeMutablePointer<Int32>
    private let denseCount: Int
    private let ctxProgs: UnsafeMutablePointer<Int>
    private let combinedProgs: UnsafeMutablePointer<Int>
    /// Per event class: body size in bits when it has a fixed layout (skipped with one bounds check), else -1.
    private let fixedBodyBits: UnsafeMutablePointer<Int>
    /// Per event class: number of strings of a lazily skipped body with strings (0: fixed or decoded), and the
    /// start in `segmentBytes` of its fixed runs' sizes (strings + 1 of them).
    private let lazyStrings: UnsafeMutablePointer<Int>
    private let lazySegmentStart: UnsafeMutablePointer<Int>
    private let segmentBytes: UnsafeMutablePointer<Int>
    /// Per event class: range into `payloadRefs` of its payload fields.
    @usableFromInline let payloadFieldStart: UnsafeMutablePointer<Int>
    @usableFromInline let payloadFieldCounts: UnsafeMutablePointer<Int>
    @usableFromInline let payloadRefs: UnsafeMutablePointer<FieldRef>
    /// Per event class, `contextFieldCount` references of the stream event context fields.
    @usableFromInline let contextRefs: UnsafeMutablePointer<FieldRef>
    @usableFromInline let contextFieldCount: Int
    private let payloadProgs: UnsafeMutablePointer<Int>
    private let headerHasID: Bool
    private let eventHeaderProgram: Int
    private let streamEventContextProgram: Int
    private let debug: Bool
    private let names: [String]
    private let types: [CTFType]
    private var lastDiscarded: UInt64?
    private var lastSeq: UInt64?
    private var lastPacketEndNS: Int64?
    private var lastPacketBeginNS: Int64 = 0
    private var releasedUpTo = 0
    private let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// The index into the stream class's event classes of the current event.
    var currentClass: Int { @inline(__always) get { hot.pointee.currentClass } @inline(__always) set { hot.pointee.currentClass = newValue } }
    /// The current event's timestamp in clock cycles (extended to 64 bits).
    public internal(set) var cycles: UInt64 { @inlinable get { hot.pointee.cycles } @inline(__always) set { hot.pointee.cycles = newValue } }
    /// The current event's timestamp in nanoseconds since the epoch.
    public internal(set) var timestamp: Int64 { @inlinable get { hot.pointee.timestamp } @inline(__always) set { hot.pointee.timestamp = newValue } }
    /// The current event's class.
    public var eventClass: CTFEventClass { cls.eventClasses[currentClass] }
    /// The current packet's `cpu_id`, if the packet context has one.
    public var cpuID: UInt64? { cls.cpuIDSlot >= 0 ? slots[cls.cpuIDSlot] : nil }
    /// The stream class id.
    public private(set) var streamClassID: UInt64 = 0
    /// Byte offset of the current packet in the file.
    public var currentPacketOffset: Int { packetOffset }

    init(path: String, trace: CTFTrace, metadata: CTFMetadata, compiled: [UInt64: CompiledStreamClass], firstStreamID: UInt64) throws {
        self.path = path
        self.trace = trace
        self.environment = metadata.environment
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw CTFReaderError.io(path: path, message: String(cString: strerror(errno))) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CTFReaderError.io(path: path, message: String(cString: strerror(errno))) }
        fileSize = Int(st.st_size)
        if fileSize > 0 {
            guard let m = mmap(nil, fileSize, PROT_READ, MAP_PRIVATE, fd, 0), m != MAP_FAILED else {
                throw CTFReaderError.io(path: path, message: "mmap failed: \(String(cString: strerror(errno)))")
            }
            _ = madvise(m, fileSize, MADV_SEQUENTIAL)
            base = UnsafeRawPointer(m)
            mapLength = fileSize
        } else {
            base = UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8))
            mapLength = 0
        }
        guard let c = compiled[firstStreamID] else {
            throw CTFReaderError.malformed(path: path, offset: 0, field: "trace.packet.header.stream_id", message: "unknown stream class id \(firstStreamID)")
        }
        cls = c
        streamClassID = firstStreamID
        clock = c.clockName.flatMap { metadata.clocks[$0] } ?? (metadata.clocks.count == 1 ? metadata.clocks.first!.value : nil)
        clockIsNS = clock == nil || clock!.frequency == 1_000_000_000
        clockOffsetNS = clock.map { $0.offsetSeconds &* 1_000_000_000 &+ ($0.frequency == 1_000_000_000 ? $0.offsetCycles : 0) } ?? 0
        let validCycles: ClosedRange<UInt64>? = clock.map(\.validCycleRange) ?? (0...UInt64(CTFClock.timestampLimitNanoseconds - 1))
        guard let validCycles else {
            throw CTFReaderError.metadataSemantic(path: (path as NSString).deletingLastPathComponent + "/metadata",
                message: "clock `\(clock!.name)`: its offset places every timestamp beyond ±2^62 ns of the epoch (years 1824–2116)")
        }
        minCycles = validCycles.lowerBound
        cycleSpan = validCycles.upperBound - validCycles.lowerBound
        headerKind = metadata.byteOrder == .little ? c.lttngHeaderKind : 0
        headerIDSlot = c.eventHeaderLayout.first(where: { $0.name == "id" })?.slot ?? 0
        traceBigEndian = metadata.byteOrder == .big
        hot = .allocate(capacity: 1)
        hot.initialize(to: HotState())
        debug = debugPositions
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
        // Bodies of byte-sized, byte-aligned fields and strings (what LTTng-UST writes) are skipped by size, or by
        // size plus a memchr per string, and read in place or decoded when a field is read (LazyBody.swift).
        var fixed: [Int] = [], nStrings: [Int] = [], segStart: [Int] = [], segs: [Int] = []
        var pRefs: [FieldRef] = [], cRefs: [FieldRef] = [], pfs: [Int] = [], pfc: [Int] = []
        var maxStrings = 0
        for ci in c.eventClasses.indices {
            let pi = combined[ci]
            let layout = LazyBodyLayout(allOps[starts0[pi] ..< starts0[pi] + counts0[pi]])
            let n = layout?.strings ?? 0
            fixed.append(layout != nil && n == 0 ? layout!.segments[0] * 8 : -1)
            nStrings.append(n)
            segStart.append(segs.count)
            segs += layout?.segments ?? []
            maxStrings = max(maxStrings, n)
            func ref(_ f: FieldLayout) -> FieldRef { layout?.ref(for: f) ?? LazyBodyLayout.slotRef(for: f) }
            pfs.append(pRefs.count); pfc.append(c.payloadLayouts[ci].count)
            pRefs += c.payloadLayouts[ci].map(ref)
            cRefs += c.streamEventContextLayout.map(ref)
        }
        fixedBodyBits = buf(fixed)
        lazyStrings = buf(nStrings); lazySegmentStart = buf(segStart); segmentBytes = buf(segs)
        segmentBase = .allocate(capacity: maxStrings + 1)
        segmentBase.initialize(repeating: 0, count: maxStrings + 1)
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
        ctxProgs = buf(c.eventContextPrograms); payloadProgs = buf(c.payloadPrograms)
        headerHasID = c.headerHasID
        names = c.names
        types = c.types
        eventHeaderProgram = c.eventHeaderProgram
        streamEventContextProgram = c.streamEventContextProgram
        slots = .allocate(capacity: max(1, c.slotCount))
        slots.initialize(repeating: 0, count: max(1, c.slotCount))
        opsBuf = .allocate(capacity: max(1, allOps.count))
        _ = UnsafeMutableBufferPointer(start: opsBuf, count: allOps.count).initialize(from: allOps)
        if fileSize == 0 { finished = true }
    }

    deinit {
        if mapLength > 0 { munmap(UnsafeMutableRawPointer(mutating: base), mapLength) }
        else { UnsafeMutableRawPointer(mutating: base).deallocate() }
        slots.deallocate()
        opsBuf.deallocate()
        hot.deallocate()
        progStart.deallocate(); progCount.deallocate(); varTagSlot.deallocate(); varSigned.deallocate()
        varRangeStart.deallocate(); varRangeCount.deallocate(); rangeLo.deallocate(); rangeHi.deallocate(); rangeProg.deallocate()
        denseIDs.deallocate(); ctxProgs.deallocate(); payloadProgs.deallocate(); combinedProgs.deallocate(); fixedBodyBits.deallocate()
        payloadFieldStart.deallocate(); payloadFieldCounts.deallocate(); payloadRefs.deallocate(); contextRefs.deallocate()
        lazyStrings.deallocate(); lazySegmentStart.deallocate(); segmentBytes.deallocate(); segmentBase.deallocate()
    }

    @inline(__always)
    func nanoseconds(_ cycles: UInt64) -> Int64 {
        if clockIsNS { return clockOffsetNS &+ Int64(bitPattern: cycles) }
        return clock!.nanoseconds(fromCycles: cycles)
    }

    private func fail(_ pos: Int, _ field: Int32, _ msg: String) -> CTFReaderError {
        .malformed(path: path, offset: pos >> 3, field: names[Int(field)], message: msg)
    }

    /// Thrown internally when a read would pass the end of the content.
    private struct OutOfBounds: Error { var pos: Int; var field: Int32; var message: String }

    /// Runs a compiled program from `pos`.
    private func run(_ program: Int) throws {
        let start = progStart[program], count = progCount[program]
        var i = start
        let stop = start + count
        var p = pos
        let e = end
        let b = base
        let s = slots
        while i < stop {
            let op = opsBuf[i]
            i += 1
            switch op.kind {
            case .align:
                let q = (p + Int(op.align) - 1) & ~(Int(op.align) - 1)
                guard q <= e else {
                    pos = p
                    throw OutOfBounds(pos: p, field: op.field, message: "alignment to \(op.align) bits moves to byte \(q >> 3), past the end of the packet content (byte \(e >> 3))")
                }
                p = q
            case .int8:
                guard p + 8 <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "8-bit integer runs past the end of the packet content") }
                let v = UInt64(b.load(fromByteOffset: p >> 3, as: UInt8.self))
                s[Int(op.slot)] = op.flags & 1 != 0 ? UInt64(bitPattern: Int64(Int8(truncatingIfNeeded: v))) : v
                if op.flags & 8 != 0 { eventID = v }
                p += 8
            case .int16:
                guard p + 16 <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "16-bit integer runs past the end of the packet content") }
                let v = UInt64(UInt16(littleEndian: b.loadUnaligned(fromByteOffset: p >> 3, as: UInt16.self)))
                s[Int(op.slot)] = op.flags & 1 != 0 ? UInt64(bitPattern: Int64(Int16(truncatingIfNeeded: v))) : v
                if op.flags & 8 != 0 { eventID = v }
                p += 16
            case .int32:
                guard p + 32 <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "32-bit integer runs past the end of the packet content") }
                let v = UInt64(UInt32(littleEndian: b.loadUnaligned(fromByteOffset: p >> 3, as: UInt32.self)))
                s[Int(op.slot)] = op.flags & 1 != 0 ? UInt64(bitPattern: Int64(Int32(truncatingIfNeeded: v))) : v
                if op.flags & 8 != 0 { eventID = v }
                p += 32
            case .int64:
                guard p + 64 <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "64-bit integer runs past the end of the packet content") }
                let v = UInt64(littleEndian: b.loadUnaligned(fromByteOffset: p >> 3, as: UInt64.self))
                s[Int(op.slot)] = v
                if op.flags & 8 != 0 { eventID = v }
                p += 64
            case .intBits:
                let size = Int(op.size)
                guard p + size <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "\(size)-bit field runs past the end of the packet content") }
                var v = readBits(b, p, size, bigEndian: op.flags & 2 != 0)
                p += size
                if op.flags & 4 != 0 {
                    if size >= 64 {
                        clockValue = v
                    } else {
                        let mask = (UInt64(1) << UInt64(size)) - 1
                        if v < clockValue & mask { clockValue &+= UInt64(1) << UInt64(size) }
                        clockValue = (clockValue & ~mask) | v
                    }
                }
                if op.flags & 8 != 0 { eventID = v }
                if op.flags & 1 != 0 { v = UInt64(bitPattern: signExtend(v, size)) }
                s[Int(op.slot)] = v
            case .string:
                guard p & 7 == 0, p < e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "string starts past the end of the packet content") }
                let start = p >> 3
                guard let n = memchrRaw(b.advanced(by: start), (e >> 3) - start) else {
                    pos = p; throw OutOfBounds(pos: p, field: op.field, message: "unterminated string (no NUL before the end of the packet content)")
                }
                s[Int(op.slot)] = UInt64(p)
                s[Int(op.slot) + 1] = UInt64(n)
                p += (n + 1) << 3
            case .mark:
                s[Int(op.slot)] = UInt64(p)
            case .arrayFixed:
                let total = Int(op.aux) * Int(op.aux2)
                guard p + total <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "array of \(op.aux) elements runs past the end of the packet content") }
                s[Int(op.slot)] = UInt64(p)
                s[Int(op.slot) + 1] = UInt64(op.aux)
                p += total
            case .seqFixed:
                let n = s[Int(op.aux)]
                let elemBits = Int(op.aux2)
                let remaining = max(0, e - p)
                if elemBits > 0 {
                    guard n <= UInt64(remaining / elemBits) else {
                        pos = p
                        throw fail(p, op.field, "sequence length \(n) exceeds what the remaining \(max(0, remaining) / 8) bytes of the packet can hold")
                    }
                } else if n > UInt64(Int32.max) {
                    throw fail(p, op.field, "sequence length \(n) is not plausible")
                }
                s[Int(op.slot)] = UInt64(p)
                s[Int(op.slot) + 1] = n
                p += Int(n) * elemBits
            case .generic, .seqGeneric:
                s[Int(op.slot)] = UInt64(p)
                var count: Int? = nil
                if op.kind == .seqGeneric {
                    let n = s[Int(op.aux)]
                    guard n <= UInt64(max(0, e - p)) else {
                        throw fail(p, op.field, "sequence length \(n) exceeds what the remaining \(max(0, e - p) / 8) bytes of the packet can hold")
                    }
                    count = Int(n)
                    s[Int(op.slot) + 1] = n
                }
                let w = walker()
                var scope: [String: ScopeValue] = [:]
                let t = types[Int(op.aux2)]
                do {
                    if let c = count {
                        let minBits = max(1, t.minimumBitSize)
                        guard c <= (e - p) / minBits + 1 else { throw fail(p, op.field, "sequence length \(c) exceeds the packet") }
                        for _ in 0..<c { _ = try w.walk(t, &p, field: names[Int(op.field)], decode: false, scope: &scope) }
                    } else {
                        _ = try w.walk(t, &p, field: names[Int(op.field)], decode: false, scope: &scope)
                    }
                } catch let err as CTFReaderError {
                    if case .malformed(_, let o, _, let m) = err, m.contains("past the end") || m.contains("unterminated") {
                        pos = p; throw OutOfBounds(pos: o * 8, field: op.field, message: m)
                    }
                    throw err
                }
            case .variant:
                s[Int(op.slot)] = UInt64(p)
                let vi = Int(op.aux)
                let raw = s[varTagSlot[vi]]
                var chosen = -1
                let rs = varRangeStart[vi], re = rs + varRangeCount[vi]
                var r = rs
                if varSigned[vi] {
                    let v = Int64(bitPattern: raw)
                    while r < re { if v >= rangeLo[r] && v <= rangeHi[r] { chosen = rangeProg[r]; break }; r += 1 }
                } else {
                    while r < re { if raw >= UInt64(bitPattern: rangeLo[r]) && raw <= UInt64(bitPattern: rangeHi[r]) { chosen = rangeProg[r]; break }; r += 1 }
                }
                guard chosen >= 0 else { pos = p; throw fail(p, op.field, "variant tag value \(Int64(bitPattern: raw)) selects no option") }
                pos = p
                try run(chosen)
                p = pos
            }
        }
        pos = p
    }

    /// Finds the end (bits) of the current event's body of class `ci`, made of fixed runs and strings, starting at
    /// `pos` (byte-aligned), and records where each fixed run starts in `segmentBase`. Nil when the body does not fit
    /// in the packet content (then the caller decodes it, which throws the precise error).
    @inline(__always)
    private func skipBody(_ ci: Int) -> Int? {
        let e = end
        let limit = e >> 3                  // strings end before this byte (the interpreter's bound)
        let seg = segmentBytes + lazySegmentStart[ci]
        let n = lazyStrings[ci]
        let sb = segmentBase
        var p = pos >> 3
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

    /// Fills the slots of a lazily skipped event body.
    @inline(__always)
    func materialize() {
        if hot.pointee.lazyBody >= 0 { materializeSlow() }
    }

    @usableFromInline @inline(never)
    func materializeSlow() {
        let lb = hot.pointee.lazyBody
        if lb < 0 { return }
        hot.pointee.lazyBody = -1
        let saved = pos
        pos = lb
        try? run(combinedProgs[currentClass])
        pos = saved
    }

    func walker() -> GenericWalker {
        GenericWalker(base: base, end: end, traceBigEndian: traceBigEndian, path: path, outer: { [unowned self] name in self.resolveRuntime(name) })
    }

    /// Resolves a field name against the current event's scopes (for lazily decoded compound values).
    func resolveRuntime(_ name: String) -> ScopeValue? {
        materialize()
        let layouts: [[FieldLayout]] = [cls.payloadLayouts[currentClass], cls.eventContextLayouts[currentClass], cls.streamEventContextLayout, cls.eventHeaderLayout, cls.packetContextLayout, cls.packetHeaderLayout]
        var n = Substring(name)
        for pfx in ["event.fields.", "event.context.", "stream.event.context.", "stream.event.header.", "stream.packet.context.", "trace.packet.header."] where n.hasPrefix(pfx) {
            n = n.dropFirst(pfx.count)
        }
        for l in layouts {
            if let f = l.first(where: { $0.name == n }), f.storage == .scalar {
                switch f.type {
                case .integer(let it): return ScopeValue(raw: slots[f.slot], signed: it.isSigned, maps: nil)
                case .enumeration(let it, let m): return ScopeValue(raw: slots[f.slot], signed: it.isSigned, maps: m)
                default: return nil
                }
            }
        }
        return nil
    }

    /// Releases the pages of packets already consumed so resident memory does not grow with the trace.
    private func releaseConsumed(upTo offset: Int) {
        let start = releasedUpTo & ~(pageSize - 1)
        let stop = offset & ~(pageSize - 1)
        if stop > start && mapLength > 0 {
            _ = madvise(UnsafeMutableRawPointer(mutating: base).advanced(by: start), stop - start, MADV_DONTNEED)
            releasedUpTo = stop
        }
    }

    private func warn(_ offset: Int, _ msg: String) {
        warnings.append(CTFWarning(path: path, offset: offset, message: msg))
    }

    /// Reads the packet at `offset`; returns false at the end of the file.
    private func loadPacket(at offset: Int) throws -> Bool {
        releaseConsumed(upTo: offset)
        guard offset < fileSize else { return false }
        packetOffset = offset
        pos = offset * 8
        end = fileSize * 8
        packetTruncated = false
        do {
            try run(cls.packetHeaderProgram)
            if cls.magicSlot >= 0 && slots[cls.magicSlot] != 0xC1FC_1FC1 {
                throw fail(offset * 8, Int32(names.firstIndex(of: "trace.packet.header.magic") ?? 0),
                           "bad packet magic 0x\(String(slots[cls.magicSlot], radix: 16)) (expected 0xc1fc1fc1)")
            }
            if cls.streamIDSlot >= 0 && slots[cls.streamIDSlot] != streamClassID {
                throw CTFReaderError.malformed(path: path, offset: offset, field: "trace.packet.header.stream_id",
                                               message: "packet of stream class \(slots[cls.streamIDSlot]) in a stream of class \(streamClassID)")
            }
            try run(cls.packetContextProgram)
        } catch let oob as OutOfBounds {
            warn(offset, "truncated packet header/context (\(oob.message)); stream ends here")
            return false
        }
        let headerBits = pos - offset * 8
        var packetBits = (fileSize - offset) * 8
        if cls.packetSizeSlot >= 0 { packetBits = Int(clamping: slots[cls.packetSizeSlot]) }
        var contentBits = packetBits
        if cls.contentSizeSlot >= 0 { contentBits = Int(clamping: slots[cls.contentSizeSlot]) }
        if cls.packetSizeSlot >= 0 {
            guard packetBits > 0, packetBits % 8 == 0, packetBits >= headerBits else {
                throw CTFReaderError.malformed(path: path, offset: offset, field: "stream.packet.context.packet_size",
                                               message: "packet size \(slots[cls.packetSizeSlot]) bits is impossible (a positive multiple of 8 of at least the \(headerBits) bits of header and context)")
            }
        }
        guard contentBits <= packetBits, contentBits >= headerBits else {
            throw CTFReaderError.malformed(path: path, offset: offset, field: "stream.packet.context.content_size",
                                           message: "content size \(cls.contentSizeSlot >= 0 ? slots[cls.contentSizeSlot] : UInt64(contentBits)) bits is outside [\(headerBits), packet size \(packetBits)] bits")
        }
        let available = (fileSize - offset) * 8
        if packetBits > available {
            packetTruncated = true
            warn(offset, "packet claims \(packetBits / 8) bytes but the file ends after \(available / 8); decoding the events that fit")
            nextPacketOffset = fileSize
            end = offset * 8 + min(contentBits, available)
        } else {
            nextPacketOffset = offset + packetBits / 8
            end = offset * 8 + contentBits
        }
        // Packet timestamps: a value converting outside ±2^62 ns is corrupt; the packet is skipped with a warning
        // (its events' timestamps derive from it).
        for (slot, name) in [(cls.tsBeginSlot, "timestamp_begin"), (cls.tsEndSlot, "timestamp_end")] where slot >= 0 {
            let v = slots[slot]
            if v &- minCycles > cycleSpan {
                warn(offset, "field `stream.packet.context.\(name)`: clock value \(v) cycles converts outside ±2^62 ns of the epoch (corrupt); packet of \(packetBits / 8) bytes skipped")
                end = pos   // no events: next() moves on to the next packet
                return true
            }
        }
        // Loss accounting. Counters at or above 2^63 are corrupt (no tracer gets there): warned about and not counted,
        // so every reported count, and their sum per stream, fits an Int64.
        let beginNS = cls.tsBeginSlot >= 0 ? nanoseconds(slots[cls.tsBeginSlot]) : (lastPacketEndNS ?? 0)
        let endNS = cls.tsEndSlot >= 0 ? nanoseconds(slots[cls.tsEndSlot]) : beginNS
        let corrupt: UInt64 = 1 << 63
        if cls.discardedSlot >= 0 {
            // The counter is cumulative per ring buffer; LTTng may write packets whose snapshot is older than a
            // previous one, so only growth beyond the highest value seen counts (never a negative loss).
            let d = slots[cls.discardedSlot]
            let prev = lastDiscarded ?? 0
            if d >= corrupt {
                warn(offset, "field `stream.packet.context.events_discarded`: counter value \(d) is implausible (≥ 2^63, corrupt); not counted")
            } else if d > prev {
                losses.append(CTFLoss(kind: .discardedEvents(d - prev), streamPath: path,
                                      beginNanoseconds: lastPacketEndNS ?? beginNS, endNanoseconds: endNS))
                lastDiscarded = d
            }
        }
        if cls.seqNumSlot >= 0 {
            let sq = slots[cls.seqNumSlot]
            if sq >= corrupt {
                warn(offset, "field `stream.packet.context.packet_seq_num`: sequence number \(sq) is implausible (≥ 2^63, corrupt); ignored")
            } else {
                if let prev = lastSeq, sq > prev, sq - prev > 1 {
                    losses.append(CTFLoss(kind: .lostPackets(sq - prev - 1), streamPath: path,
                                          beginNanoseconds: lastPacketEndNS ?? beginNS, endNanoseconds: beginNS))
                }
                lastSeq = sq
            }
        }
        lastPacketBeginNS = beginNS
        lastPacketEndNS = endNS
        return true
    }

    /// Advances to the next event. Returns false at the end of the stream.
    /// - Throws: ``CTFReaderError/malformed(path:offset:field:message:)`` naming file, offset and field.
    public func next() throws -> Bool {
        if hot.pointee.pending { hot.pointee.pending = false; return true }
        if finished { return false }
        if !started {
            started = true
            nextPacketOffset = 0
            end = 0
            pos = 0
        }
        while true {
            if pos >= end {
                if !(try loadPacket(at: nextPacketOffset)) {
                    finished = true
                    releaseConsumed(upTo: fileSize)
                    return false
                }
                continue
            }
            let start = pos
            do {
                if headerKind == 1 {
                    // LTTng compact header: 5-bit id + 27-bit timestamp, or id 31 + u32 id + u64 timestamp.
                    var p = (pos + 7) & ~7
                    guard p + 32 <= end else { pos = p; throw OutOfBounds(pos: p, field: 0, message: "event header runs past the end of the packet content") }
                    let w = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: p >> 3, as: UInt32.self))
                    let id = w & 31
                    if id != 31 {
                        let v = UInt64(w >> 5)
                        var c = clockValue
                        let mask: UInt64 = (1 << 27) - 1
                        if v < c & mask { c &+= 1 << 27 }
                        clockValue = (c & ~mask) | v
                        eventID = UInt64(id)
                        p += 32
                    } else {
                        guard p + 104 <= end else { pos = p; throw OutOfBounds(pos: p, field: 0, message: "extended event header runs past the end of the packet content") }
                        eventID = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: (p >> 3) + 1, as: UInt32.self)))
                        clockValue = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: (p >> 3) + 5, as: UInt64.self))
                        p += 104
                    }
                    slots[headerIDSlot] = eventID
                    pos = p
                } else if headerKind == 2 {
                    // LTTng large header: u16 id + u32 timestamp, or id 65535 + u32 id + u64 timestamp.
                    var p = (pos + 7) & ~7
                    guard p + 48 <= end else { pos = p; throw OutOfBounds(pos: p, field: 0, message: "event header runs past the end of the packet content") }
                    let id = UInt16(littleEndian: base.loadUnaligned(fromByteOffset: p >> 3, as: UInt16.self))
                    if id != 65535 {
                        let v = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: (p >> 3) + 2, as: UInt32.self)))
                        var c = clockValue
                        let mask: UInt64 = (1 << 32) - 1
                        if v < c & mask { c &+= 1 << 32 }
                        clockValue = (c & ~mask) | v
                        eventID = UInt64(id)
                        p += 48
                    } else {
                        guard p + 112 <= end else { pos = p; throw OutOfBounds(pos: p, field: 0, message: "extended event header runs past the end of the packet content") }
                        eventID = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: (p >> 3) + 2, as: UInt32.self)))
                        clockValue = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: (p >> 3) + 6, as: UInt64.self))
                        p += 112
                    }
                    slots[headerIDSlot] = eventID
                    pos = p
                } else {
                    try run(eventHeaderProgram)
                }
                let eid = headerHasID ? eventID : 0
                var found = -1
                if eid < UInt64(denseCount) { found = Int(denseIDs[Int(eid)]) } else if let x = cls.sparseIDs[eid] { found = x }
                guard found >= 0 else {
                    throw CTFReaderError.malformed(path: path, offset: start >> 3, field: "stream.event.header.id",
                                                   message: "unknown event id \(eventID) in stream class \(streamClassID)")
                }
                let ci = found
                currentClass = ci
                let fb = fixedBodyBits[ci]
                if fb >= 0 && pos & 7 == 0 {
                    guard pos + fb <= end else {
                        let op = opsBuf[progStart[combinedProgs[ci]]]
                        throw OutOfBounds(pos: pos, field: op.field, message: "event body of \(fb / 8) bytes runs past the end of the packet content")
                    }
                    hot.pointee.lazyBody = pos
                    segmentBase[0] = pos >> 3
                    pos += fb
                } else if lazyStrings[ci] > 0 && pos & 7 == 0, let after = skipBody(ci) {
                    hot.pointee.lazyBody = pos
                    pos = after
                } else {
                    // Also a body that skipBody found malformed: the interpreter reports what is wrong, and where.
                    hot.pointee.lazyBody = -1
                    try run(combinedProgs[ci])
                }
            } catch let oob as OutOfBounds {
                if packetTruncated {
                    warn(start >> 3, "truncated final packet: \(oob.message) at byte \(oob.pos >> 3) (field `\(names[Int(oob.field)])`); the stream ends here")
                    finished = true
                    return false
                }
                throw CTFReaderError.malformed(path: path, offset: oob.pos >> 3, field: names[Int(oob.field)], message: oob.message)
            }
            guard pos > start else {
                throw CTFReaderError.malformed(path: path, offset: start >> 3, field: eventClass.name, message: "event of zero size")
            }
            guard clockValue &- minCycles <= cycleSpan else {
                throw CTFReaderError.malformed(path: path, offset: start >> 3, field: "stream.event.header.timestamp",
                                               message: "clock value \(clockValue) cycles converts outside ±2^62 ns of the epoch (years 1824–2116): corrupt timestamp")
            }
            cycles = clockValue
            timestamp = nanoseconds(clockValue)
            if debug { materialize(); print("DEBUG event \(eventClass.name) at \(start >> 3)..<\(pos >> 3) slots \(Array(UnsafeBufferPointer(start: slots, count: cls.slotCount)))") }
            return true
        }
    }

    // MARK: seeking

    /// One packet of the stream: byte offset, time range in clock cycles and the loss counters before it.
    struct PacketEntry {
        var offset: Int
        var tsBegin: UInt64
        var tsEnd: UInt64
        var discarded: UInt64?
        var seq: UInt64?
    }

    /// Whether the last seek used LTTng's `index/<stream>.idx` file (rather than scanning packet headers).
    public private(set) var seekUsedIndexFile = false
    private var packetIndex: [PacketEntry]?

    /// Reads LTTng's packet index for this stream, if present and consistent with the file.
    private func readIndexFile() -> [PacketEntry]? {
        let dir = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let idx = dir + "/index/" + name + ".idx"
        guard let data = FileManager.default.contents(atPath: idx), data.count >= 16 else { return nil }
        let b = [UInt8](data)
        func be64(_ o: Int) -> UInt64 { var v: UInt64 = 0; for i in 0..<8 { v = v << 8 | UInt64(b[o + i]) }; return v }
        func be32(_ o: Int) -> UInt32 { var v: UInt32 = 0; for i in 0..<4 { v = v << 8 | UInt32(b[o + i]) }; return v }
        guard be32(0) == 0xC1F1_DCC1 else { return nil }
        let entryLen = Int(be32(12))
        guard entryLen >= 56, entryLen <= 4096 else { return nil }
        var out: [PacketEntry] = []
        var o = 16
        var prevDiscarded: UInt64? = nil, prevSeq: UInt64? = nil
        while o + entryLen <= b.count {
            let off = be64(o)
            guard off < UInt64(fileSize), out.last.map({ UInt64($0.offset) < off }) ?? true else { return nil }
            out.append(PacketEntry(offset: Int(off), tsBegin: be64(o + 24), tsEnd: be64(o + 32), discarded: prevDiscarded, seq: prevSeq))
            prevDiscarded = be64(o + 40)
            prevSeq = entryLen >= 72 ? be64(o + 64) : nil
            o += entryLen
        }
        return out.isEmpty ? nil : out
    }

    /// Builds the packet list by reading every packet's header and context (when there is no index file).
    private func scanPackets() throws -> [PacketEntry] {
        let savedLosses = losses, savedWarnings = warnings
        let savedDiscarded = lastDiscarded, savedSeq = lastSeq, savedEnd = lastPacketEndNS
        let savedHot = hot.pointee
        defer {
            losses = savedLosses; warnings = savedWarnings
            lastDiscarded = savedDiscarded; lastSeq = savedSeq; lastPacketEndNS = savedEnd
            hot.pointee = savedHot
        }
        var out: [PacketEntry] = []
        var off = 0
        var prevDiscarded: UInt64? = nil, prevSeq: UInt64? = nil
        while try loadPacket(at: off) {
            let b = cls.tsBeginSlot >= 0 ? slots[cls.tsBeginSlot] : 0
            let e = cls.tsEndSlot >= 0 ? slots[cls.tsEndSlot] : UInt64.max
            out.append(PacketEntry(offset: off, tsBegin: b, tsEnd: e, discarded: prevDiscarded, seq: prevSeq))
            prevDiscarded = cls.discardedSlot >= 0 ? slots[cls.discardedSlot] : nil
            prevSeq = cls.seqNumSlot >= 0 ? slots[cls.seqNumSlot] : nil
            guard nextPacketOffset > off else { break }
            off = nextPacketOffset
        }
        return out
    }

    /// Positions the stream on its first event at or after `nanoseconds` (since the epoch), using LTTng's
    /// `index/*.idx` file when present (else a scan of the packet headers) to skip whole packets.
    /// The next call to ``next()`` returns that event.
    /// - Returns: false when no event of the stream is at or after that time.
    @discardableResult
    public func seek(toNanoseconds target: Int64) throws -> Bool {
        if packetIndex == nil {
            if let idx = readIndexFile() { packetIndex = idx; seekUsedIndexFile = true }
            else { packetIndex = try scanPackets(); seekUsedIndexFile = false }
        }
        let entries = packetIndex!
        // The first packet that may hold an event at or after the target.
        var start = entries.count
        // An end time that does not convert (corrupt index or packet) is treated as unknown: the packet is kept.
        for (i, e) in entries.enumerated() where e.tsEnd &- minCycles > cycleSpan || nanoseconds(e.tsEnd) >= target {
            start = i
            break
        }
        hot.pointee = HotState()
        hot.pointee.started = true
        if start >= entries.count {
            hot.pointee.finished = true
            return false
        }
        let e = entries[start]
        nextPacketOffset = e.offset
        // Index values at or above 2^63 are corrupt, as in the packet contexts (see `loadPacket`).
        lastDiscarded = e.discarded.flatMap { $0 < 1 << 63 ? $0 : nil }
        lastSeq = e.seq.flatMap { $0 < 1 << 63 ? $0 : nil }
        let prevEnd = start > 0 ? entries[start - 1].tsEnd : 0
        lastPacketEndNS = start > 0 && prevEnd &- minCycles <= cycleSpan ? nanoseconds(prevEnd) : nil
        // The packet's timestamp_begin sets the clock when it is loaded.
        while try next() {
            if timestamp >= target {
                hot.pointee.pending = true
                return true
            }
        }
        return false
    }

    // MARK: field access

    /// Decodes the value of a top-level field laid out in `layout`.
    func value(_ f: FieldLayout) -> CTFValue? {
        materialize()
        let raw = slots[f.slot]
        switch f.storage {
        case .scalar:
            switch f.type {
            case .integer(let it): return it.isSigned ? .signed(Int64(bitPattern: raw)) : .unsigned(raw)
            case .enumeration(let it, let maps):
                let bits = it.isSigned ? raw : raw
                return .enumeration(labels: enumLabels(maps, raw: bits, signed: it.isSigned),
                                    value: it.isSigned ? .signed(Int64(bitPattern: raw)) : .unsigned(raw))
            case .floatingPoint(let ft):
                return .float(ft.size == 32 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: raw))) : Double(bitPattern: raw))
            default: return nil
            }
        case .string:
            let p = base.advanced(by: Int(raw) >> 3)
            return .string(String(decoding: UnsafeRawBufferPointer(start: p, count: Int(slots[f.slot + 1])), as: UTF8.self))
        case .fixedArray, .sequence:
            let elem: CTFType
            switch f.type { case .array(let e, _), .sequence(let e, _): elem = e; default: return nil }
            var p = Int(raw)
            let n = Int(slots[f.slot + 1])
            let w = walker()
            var scope: [String: ScopeValue] = [:]
            if elem.isTextElement {
                let bp = base.advanced(by: p >> 3).assumingMemoryBound(to: UInt8.self)
                var len = 0
                while len < n && bp[len] != 0 { len += 1 }
                return .string(String(decoding: UnsafeBufferPointer(start: bp, count: len), as: UTF8.self))
            }
            var out: [CTFValue] = []
            out.reserveCapacity(n)
            for _ in 0..<n {
                guard let v = try? w.walk(elem, &p, field: f.name, decode: true, scope: &scope) else { return nil }
                out.append(v)
            }
            return .array(out)
        case .generic, .nestedStruct, .variant:
            var p = Int(raw)
            let w = walker()
            var scope: [String: ScopeValue] = [:]
            if case .variant(let tag, _) = f.type, let tv = resolveRuntime(tag) { scope[tag] = tv }
            return try? w.walk(f.type, &p, field: f.name, decode: true, scope: &scope)
        }
    }

    /// The number of top-level payload fields of the current event's class.
    public var payloadFieldCount: Int { payloadFieldCounts[currentClass] }

    /// The payload field at `index` (declaration order) as an integer, without allocating: integers and
    /// enumerations give their value (unsigned ones as their bit pattern), other fields nil.
    @inlinable @inline(__always)
    public func payloadInteger(at index: Int) -> Int64? {
        let ci = hot.pointee.currentClass
        guard UInt(bitPattern: index) < UInt(bitPattern: payloadFieldCounts[ci]) else { return nil }
        return integer(payloadRefs[payloadFieldStart[ci] &+ index])
    }

    /// The stream event context field at `index` (e.g. `vtid`) as an integer, without allocating (nil if not an integer).
    @inlinable @inline(__always)
    public func streamContextInteger(at index: Int) -> Int64? {
        guard UInt(bitPattern: index) < UInt(bitPattern: contextFieldCount) else { return nil }
        return integer(contextRefs[hot.pointee.currentClass &* contextFieldCount &+ index])
    }

    /// Reads an integer field of the current event: in place for a lazily skipped body (the reference's bytes
    /// were bounds-checked when the body was skipped), else from its slot.
    @inlinable @inline(__always)
    func integer(_ r: FieldRef) -> Int64? {
        let lazy = hot.pointee.lazyBody >= 0
        if lazy && r.width != 0 {
            let p = base + (segmentBase[Int(r.segment)] &+ Int(r.offset))
            switch r.width {
            case 1: return Int64(p.load(as: UInt8.self))
            case -1: return Int64(p.load(as: Int8.self))
            case 2: return Int64(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
            case -2: return Int64(Int16(littleEndian: p.loadUnaligned(as: Int16.self)))
            case 4: return Int64(UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)))
            case -4: return Int64(Int32(littleEndian: p.loadUnaligned(as: Int32.self)))
            default: return Int64(littleEndian: p.loadUnaligned(as: Int64.self))
            }
        }
        guard r.slot >= 0 else { return nil }
        if lazy { materializeSlow() }
        return Int64(bitPattern: slots[Int(r.slot)])
    }

    /// The bytes of a string or text-array field of a lazily skipped body, in place (nil for other fields).
    @inline(__always)
    private func lazyBytes(_ r: FieldRef) -> UnsafeRawBufferPointer? {
        let start = segmentBase[Int(r.segment)] + Int(r.offset)
        switch r.form {
        case .string:
            // A string in run j ends with the NUL just before run j + 1.
            return UnsafeRawBufferPointer(start: base + start, count: segmentBase[Int(r.segment) + 1] - 1 - start)
        case .textArray:
            let bp = (base + start).assumingMemoryBound(to: UInt8.self)
            let n = Int(r.count)
            var len = 0
            while len < n && bp[len] != 0 { len += 1 }
            return UnsafeRawBufferPointer(start: base + start, count: len)
        case .other:
            return nil
        }
    }

    /// Names of the stream event context fields, in the order ``streamContextInteger(at:)`` indexes them.
    public var streamContextFieldNames: [String] { cls.streamEventContextLayout.map(\.name) }
    /// Names of the current event class's payload fields, in the order ``payloadInteger(at:)`` indexes them.
    public var payloadFieldNames: [String] { cls.payloadLayouts[currentClass].map(\.name) }

    /// Index of the current event's class among ``eventClasses`` (stable for the stream): lets an analysis
    /// resolve field positions once per class and switch on an integer per event.
    public var eventClassIndex: Int { @inlinable get { hot.pointee.currentClass } }
    /// The event classes of this stream's class, indexed by ``eventClassIndex``.
    public var eventClasses: [CTFEventClass] { cls.eventClasses }
    /// Payload field names of the event class at `classIndex`, in the order ``payloadInteger(at:)`` indexes them.
    public func payloadFieldNames(ofClass classIndex: Int) -> [String] { cls.payloadLayouts[classIndex].map(\.name) }

    /// The UTF-8 bytes (without the NUL) of the current event's payload string field at `index`,
    /// without allocating; valid until the stream moves to another event. Nil when that field is not
    /// a string (or a text array or sequence, read up to its first NUL).
    public func payloadStringBytes(at index: Int) -> UnsafeRawBufferPointer? {
        let ci = currentClass
        guard index >= 0 && index < payloadFieldCounts[ci] else { return nil }
        let r = payloadRefs[payloadFieldStart[ci] + index]
        if hot.pointee.lazyBody >= 0 && r.form != .other { return lazyBytes(r) }
        return stringBytes(cls.payloadLayouts[ci][index])
    }

    /// The UTF-8 bytes of the stream event context string field at `index` (e.g. `procname`), without
    /// allocating; valid until the stream moves to another event. Nil when that field is not a string.
    public func streamContextStringBytes(at index: Int) -> UnsafeRawBufferPointer? {
        guard index >= 0 && index < contextFieldCount else { return nil }
        let r = contextRefs[currentClass * contextFieldCount + index]
        if hot.pointee.lazyBody >= 0 && r.form != .other { return lazyBytes(r) }
        return stringBytes(cls.streamEventContextLayout[index])
    }

    private func stringBytes(_ f: FieldLayout) -> UnsafeRawBufferPointer? {
        switch f.storage {
        case .string, .fixedArray, .sequence: break
        default: return nil     // the slot holds no position (an integer's value would not convert)
        }
        materialize()
        let raw = slots[f.slot]
        let start = base.advanced(by: Int(raw) >> 3)
        switch f.storage {
        case .string:
            return UnsafeRawBufferPointer(start: start, count: Int(slots[f.slot + 1]))
        case .fixedArray, .sequence:
            // A text array or sequence (LTTng's ctf_array_text / ctf_sequence_text): up to the first NUL.
            switch f.type {
            case .array(let e, _) where e.isTextElement, .sequence(let e, _) where e.isTextElement:
                let bp = start.assumingMemoryBound(to: UInt8.self)
                let n = Int(slots[f.slot + 1])
                var len = 0
                while len < n && bp[len] != 0 { len += 1 }
                return UnsafeRawBufferPointer(start: start, count: len)
            default:
                return nil
            }
        default:
            return nil
        }
    }

    /// The current event's payload fields, decoded.
    public func payload() -> [CTFNamedValue] { decode(cls.payloadLayouts[currentClass]) }
    /// The current event's specific context fields, decoded.
    public func eventContext() -> [CTFNamedValue] { decode(cls.eventContextLayouts[currentClass]) }
    /// The current event's stream event context fields (e.g. `vtid`, `procname`), decoded.
    public func streamEventContext() -> [CTFNamedValue] { decode(cls.streamEventContextLayout) }
    /// The current packet's context fields, decoded.
    public func packetContext() -> [CTFNamedValue] { decode(cls.packetContextLayout) }

    private func decode(_ layouts: [FieldLayout]) -> [CTFNamedValue] {
        layouts.compactMap { f in value(f).map { CTFNamedValue(name: f.name, value: $0) } }
    }

    /// The value of one payload field of the current event, decoded on demand (nil if absent).
    public func payloadField(_ name: String) -> CTFValue? {
        guard let f = cls.payloadLayouts[currentClass].first(where: { $0.name == name }) else { return nil }
        return value(f)
    }

    /// The value of one stream or event context field of the current event (nil if absent).
    public func contextField(_ name: String) -> CTFValue? {
        if let f = cls.streamEventContextLayout.first(where: { $0.name == name }) { return value(f) }
        if let f = cls.eventContextLayouts[currentClass].first(where: { $0.name == name }) { return value(f) }
        return nil
    }

    /// Typed top-level fields of the current event's scopes, for formatters.
    func typedPayload() -> [(String, CTFType, CTFValue)] { typed(cls.payloadLayouts[currentClass]) }
    func typedEventContext() -> [(String, CTFType, CTFValue)] { typed(cls.eventContextLayouts[currentClass]) }
    func typedStreamEventContext() -> [(String, CTFType, CTFValue)] { typed(cls.streamEventContextLayout) }
    private func typed(_ layouts: [FieldLayout]) -> [(String, CTFType, CTFValue)] {
        layouts.compactMap { f in value(f).map { (f.name, f.type, $0) } }
    }

    /// Whether the stream class has layouts for an empty stream event context.
    var hasStreamEventContext: Bool { !cls.streamEventContextLayout.isEmpty }
}
