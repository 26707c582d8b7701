import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

let debugPositions = getenv("CTFREADER_DEBUG") != nil

extension CTFStream {
    /// Streams opened while this is set decode every event with ``nextGeneral()`` (tests compare the
    /// two paths; a stream opened meanwhile by another test only takes the slower, equivalent path).
    nonisolated(unsafe) static var fastPathDisabled = false
}

/// How far a stream decoded on one thread has consumed its file, for the thread that releases the
/// consumed pages (``CTFStream/releaseHandedOff()``).
final class ReleaseHandoff: Sendable {
    let upTo = Atomic<Int>(0)
    /// Cleared by the releasing thread when it stops releasing (its own stream ended): the
    /// decoding thread releases its pages itself again from there.
    let active = Atomic<Bool>(true)
}

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
    public internal(set) var losses: [CTFLoss] = []
    /// Warnings found so far (e.g. a truncated final packet).
    public internal(set) var warnings: [CTFWarning] = []
    /// The messages of ``warnings`` about fields left out (StreamFields.swift), each warned once.
    var warnedUnreadable: Set<String> = []

    let cls: CompiledStreamClass
    @usableFromInline let base: UnsafeRawPointer
    /// Bytes mapped from the file (0: memory owned by the stream — a file of one page at most, read whole, or an
    /// 8-byte placeholder for an empty one; -1: `base` is memory the stream does not own, see LiveStream.swift).
    let mapLength: Int
    /// Bytes of data: the file's size, or what a live stream was fed (LiveStream.swift).
    var fileSize: Int
    /// An 8-byte load at any byte offset `o` with `o + 8 <= wideLoadLimit` stays inside the mapping:
    /// the file's size rounded up to whole pages (a mapping covers the last page whole; its bytes
    /// past the end of the file read as zero). 0 where no such load is allowed (a live stream's
    /// memory, an empty file). ``readIntegers(_:count:into:)`` reads narrow fields with one 8-byte
    /// load when the current event ends at least 8 bytes before it.
    @usableFromInline let wideLoadLimit: Int
    @usableFromInline let slots: UnsafeMutablePointer<UInt64>
    let opsBuf: UnsafeMutablePointer<Op>
    let clock: CTFClock?
    let clockIsNS: Bool
    @usableFromInline let clockOffsetNS: Int64
    /// Clock values convert within ±2^62 ns iff `value &- minCycles <= cycleSpan` (one compare per event).
    @usableFromInline let minCycles: UInt64
    @usableFromInline let cycleSpan: UInt64
    /// 0: generic header program; 1: LTTng compact header (5-bit id, 27-bit timestamp); 2: LTTng large header.
    let headerKind: Int
    @usableFromInline let headerIDSlot: Int
    let traceBigEndian: Bool

    // Decoding state.
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
    @usableFromInline let hot: UnsafeMutablePointer<HotState>
    /// For a lazily skipped body: byte offset (in the file) of each run of fixed fields, i.e. of the body start and
    /// of the byte after each string's NUL; valid while `lazyBody >= 0`. Every field a `FieldRef` locates from it was
    /// bounds-checked against the packet content when the body was skipped.
    @usableFromInline let segmentBase: UnsafeMutablePointer<Int>
    var pos: Int { @inline(__always) get { hot.pointee.pos } @inline(__always) set { hot.pointee.pos = newValue } }
    var end: Int { @inline(__always) get { hot.pointee.end } @inline(__always) set { hot.pointee.end = newValue } }
    var packetOffset: Int { get { hot.pointee.packetOffset } set { hot.pointee.packetOffset = newValue } }
    var nextPacketOffset: Int { get { hot.pointee.nextPacketOffset } set { hot.pointee.nextPacketOffset = newValue } }
    var packetTruncated: Bool { get { hot.pointee.packetTruncated } set { hot.pointee.packetTruncated = newValue } }
    var clockValue: UInt64 { @inline(__always) get { hot.pointee.clockValue } @inline(__always) set { hot.pointee.clockValue = newValue } }
    var eventID: UInt64 { @inline(__always) get { hot.pointee.eventID } @inline(__always) set { hot.pointee.eventID = newValue } }
    var finished: Bool { @inline(__always) get { hot.pointee.finished } @inline(__always) set { hot.pointee.finished = newValue } }
    var started: Bool { @inline(__always) get { hot.pointee.started } @inline(__always) set { hot.pointee.started = newValue } }
    // Flattened copies of the compiled stream class for the inner loop.
    let progStart: UnsafeMutablePointer<Int>
    let progCount: UnsafeMutablePointer<Int>
    let varTagSlot: UnsafeMutablePointer<Int>
    let varSigned: UnsafeMutablePointer<Bool>
    let varRangeStart: UnsafeMutablePointer<Int>
    let varRangeCount: UnsafeMutablePointer<Int>
    let rangeLo: UnsafeMutablePointer<Int64>
    let rangeHi: UnsafeMutablePointer<Int64>
    let rangeProg: UnsafeMutablePointer<Int>
    @usableFromInline let denseIDs: UnsafeMutablePointer<Int32>
    let denseCount: Int
    let ctxProgs: UnsafeMutablePointer<Int>
    let combinedProgs: UnsafeMutablePointer<Int>
    /// Per event class: body size in bits when it has a fixed layout (skipped with one bounds check), else -1.
    let fixedBodyBits: UnsafeMutablePointer<Int>
    /// Per event class: number of strings of a lazily skipped body with strings (0: fixed or decoded), and the
    /// start in `segmentBytes` of its fixed runs' sizes (strings + 1 of them).
    let lazyStrings: UnsafeMutablePointer<Int>
    let lazySegmentStart: UnsafeMutablePointer<Int>
    let segmentBytes: UnsafeMutablePointer<Int>
    /// Per event class: range into `payloadRefs` of its payload fields.
    @usableFromInline let payloadFieldStart: UnsafeMutablePointer<Int>
    @usableFromInline let payloadFieldCounts: UnsafeMutablePointer<Int>
    @usableFromInline let payloadRefs: UnsafeMutablePointer<FieldRef>
    /// Per event class, `contextFieldCount` references of the stream event context fields.
    @usableFromInline let contextRefs: UnsafeMutablePointer<FieldRef>
    @usableFromInline let contextFieldCount: Int
    let payloadProgs: UnsafeMutablePointer<Int>
    let headerHasID: Bool
    let eventHeaderProgram: Int
    let streamEventContextProgram: Int
    let debug: Bool
    /// Which form of ``next()``'s fast path applies: LTTng's compact (1) or large (2) event header, with an `id`
    /// field, a clock in nanoseconds and no debug output; 0: every event takes the general path.
    @usableFromInline let fastHeader: Int
    /// Per event id below `fastIDCount`: the event's size in bits from its (byte-aligned) header to its end when
    /// the id is a compact one (not 31, or 65535: the extended header) naming a class whose body is fixed-size
    /// (`fixedBodyBits`; packed with the class index: `bits | classIndex << 32`, bits below 2^31); `-2 - classIndex`
    /// for a class whose body is runs of fixed bytes around strings (`lazyStrings`: skipped by a `memchr` per
    /// string, as ``nextGeneral()`` does); else -1.
    @usableFromInline let fastEventBits: UnsafeMutablePointer<Int>
    @usableFromInline let fastIDCount: Int
    let names: FieldNames
    let types: [CTFType]
    var lastDiscarded: UInt64?
    var lastSeq: UInt64?
    var lastPacketEndNS: Int64?
    var lastPacketBeginNS: Int64 = 0
    var releasedUpTo = 0
    /// Set while another thread releases this stream's consumed pages: ``releaseConsumed(upTo:)``
    /// only publishes how far (set and cleared while that thread is not running).
    var releaseHandoff: ReleaseHandoff?
    /// Releases ``releaseHandedOff()`` made (read by tests once the releasing thread has stopped).
    var releasesByOtherThread = 0
    /// Chunks of this stream another stream's thread decoded ahead of the calling thread in
    /// ``CTFTraceSet/forEachInTimeOrder(extract:_:)`` (read by tests once the threads have stopped).
    @usableFromInline var chunksDecodedElsewhere = 0
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

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
    /// The id babeltrace2 gives this stream (its first packet's `stream_instance_id`, or a counter over the
    /// trace's files in path order): with the stream class id, what orders events of equal timestamps.
    public internal(set) var babeltraceStreamID: UInt64 = 0
    /// Whether the last seek used LTTng's `index/<stream>.idx` file (rather than scanning packet headers).
    public internal(set) var seekUsedIndexFile = false
    var packetIndex: [PacketEntry]?

    /// Byte offset of the current packet in the file.
    public var currentPacketOffset: Int { packetOffset }

    init(path: String, trace: CTFTrace, metadata: CTFMetadata, compiled: [UInt64: CompiledStreamClass], firstStreamID: UInt64,
         memory: UnsafeRawPointer? = nil) throws {
        self.path = path
        self.trace = trace
        self.environment = metadata.environment
        if let memory {
            // A live stream: packets are copied into `memory` as they arrive (LiveStream.swift).
            base = memory
            fileSize = 0
            mapLength = -1
            wideLoadLimit = 0
        } else {
        let fd = try RegularFile.open(path)
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CTFReaderError.io(path: path, message: String(cString: strerror(errno))) }
        fileSize = Int(st.st_size)
        let page = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
        if fileSize > 0 && fileSize <= page {
            // A file of one page at most is read into memory of its own: a mapping each would use one of the
            // process's vm.max_map_count (65 530) entries per stream, and a trace of 65 536 small streams (ctf-
            // testsuite's stress/many-streams) failed. Zero-filled to whole 8-byte words (`wideLoadLimit`).
            let size = (fileSize + 7) / 8 * 8
            let b = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
            b.initializeMemory(as: UInt8.self, repeating: 0, count: size)
            var got = 0
            while got < fileSize {
                let n = pread(fd, b + got, fileSize - got, off_t(got))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    b.deallocate()
                    throw CTFReaderError.io(path: path, message: n < 0 ? "read failed: \(String(cString: strerror(errno)))" : "the file shrank to \(got) bytes while read")
                }
                got += n
            }
            base = UnsafeRawPointer(b)
            mapLength = 0
            wideLoadLimit = size
        } else if fileSize > 0 {
            guard let m = mmap(nil, fileSize, PROT_READ, MAP_PRIVATE, fd, 0), m != MAP_FAILED else {
                let e = errno
                let limit = (try? String(contentsOfFile: "/proc/sys/vm/max_map_count", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
                throw CTFReaderError.io(path: path, message: "mmap failed: \(String(cString: strerror(e)))" +
                    (e == ENOMEM ? " (every stream file of more than a page is mapped: more such streams than vm.max_map_count = \(limit ?? "?") allows?)" : ""))
            }
            _ = madvise(m, fileSize, MADV_SEQUENTIAL)
            base = UnsafeRawPointer(m)
            mapLength = fileSize
            wideLoadLimit = (fileSize + page - 1) / page * page
        } else {
            base = UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8))
            mapLength = 0
            wideLoadLimit = 0
        }
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
        hot = CTFStream.ownCacheLines(HotState.self, 1)
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
        segmentBase = CTFStream.ownCacheLines(Int.self, maxStrings + 1)
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
        fastHeader = (headerKind == 1 || headerKind == 2) && c.headerHasID && clockIsNS && !debug && !CTFStream.fastPathDisabled ? headerKind : 0
        let compactHeaderBits = headerKind == 1 ? 32 : 48, extendedID = headerKind == 1 ? 31 : 65535
        fastIDCount = fastHeader == 0 ? 0 : min(c.denseIDs.count, extendedID)
        fastEventBits = .allocate(capacity: max(1, fastIDCount))
        for id in 0..<fastIDCount {
            let ci = Int(c.denseIDs[id])
            let bits = ci >= 0 && fixed[ci] >= 0 ? compactHeaderBits + fixed[ci] : -1
            // A body of fixed runs and strings (LTTng's events with a string field): -2 - its class.
            let strings = ci >= 0 && nStrings[ci] > 0 ? -2 - ci : -1
            (fastEventBits + id).initialize(to: bits >= 0 && bits < 1 << 31 ? bits | ci << 32 : strings)
        }
        names = c.names
        types = c.types
        eventHeaderProgram = c.eventHeaderProgram
        streamEventContextProgram = c.streamEventContextProgram
        slots = CTFStream.ownCacheLines(UInt64.self, max(1, c.slotCount))
        slots.initialize(repeating: 0, count: max(1, c.slotCount))
        opsBuf = .allocate(capacity: max(1, allOps.count))
        _ = UnsafeMutableBufferPointer(start: opsBuf, count: allOps.count).initialize(from: allOps)
        if fileSize == 0 { finished = true }
    }

    /// Bytes of the blocks ``ownCacheLines(_:_:)`` allocates: two 64-byte cache lines, as the
    /// adjacent-line prefetcher pulls lines in pairs.
    static let cacheBlock = 128

    /// Memory for `n` values of `T` on cache lines of its own: aligned to, and a multiple of,
    /// ``cacheBlock`` bytes, so no other allocation shares a line with it. For the state a stream
    /// writes at every event (`hot`, `slots`, `segmentBase`): ``CTFTraceSet/forEachInTimeOrder(extract:_:)``
    /// decodes streams on two threads, and malloc placed one stream's small buffers beside
    /// another's, so each event's write bounced the shared line between the cores. Measured on the
    /// 10 M-event trace of reader-bench, old and new builds alternated 20 times: CPU time 229 → 170 ms
    /// (best), 290 → 229 ms (median); see docs/benchmarks.md.
    /// Freed with `deallocate()` like any allocation.
    static func ownCacheLines<T>(_ t: T.Type, _ n: Int) -> UnsafeMutablePointer<T> {
        let bytes = (max(1, n) * MemoryLayout<T>.stride + cacheBlock - 1) / cacheBlock * cacheBlock
        return UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: cacheBlock).bindMemory(to: T.self, capacity: max(1, n))
    }

    deinit {
        if mapLength > 0 { munmap(UnsafeMutableRawPointer(mutating: base), mapLength) }
        else if mapLength == 0 { UnsafeMutableRawPointer(mutating: base).deallocate() }
        slots.deallocate()
        opsBuf.deallocate()
        hot.deallocate()
        progStart.deallocate(); progCount.deallocate(); varTagSlot.deallocate(); varSigned.deallocate()
        varRangeStart.deallocate(); varRangeCount.deallocate(); rangeLo.deallocate(); rangeHi.deallocate(); rangeProg.deallocate()
        fastEventBits.deallocate()
        denseIDs.deallocate(); ctxProgs.deallocate(); payloadProgs.deallocate(); combinedProgs.deallocate(); fixedBodyBits.deallocate()
        payloadFieldStart.deallocate(); payloadFieldCounts.deallocate(); payloadRefs.deallocate(); contextRefs.deallocate()
        lazyStrings.deallocate(); lazySegmentStart.deallocate(); segmentBytes.deallocate(); segmentBase.deallocate()
    }

    @inline(__always)
    func nanoseconds(_ cycles: UInt64) -> Int64 {
        if clockIsNS { return clockOffsetNS &+ Int64(bitPattern: cycles) }
        return clock!.nanoseconds(fromCycles: cycles)
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
        GenericWalker(base: base, end: end, traceBigEndian: traceBigEndian, path: path, outer: { [unowned self] name in self.resolveRuntime(name) },
                      origin: packetOffset &<< 3)
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

    /// Releases the pages of packets already consumed so resident memory does not grow with the trace
    /// (or, with a ``releaseHandoff``, publishes how far for another thread to release them).
    func releaseConsumed(upTo offset: Int) {
        if let h = releaseHandoff {
            h.upTo.store(offset, ordering: .releasing)
            // (After the releasing thread has let go, `releasedUpTo` is this thread's again: the
            // acquiring load sees that thread's last write of it.)
            if h.active.load(ordering: .acquiring) { return }
        }
        _ = releasePages(upTo: offset)
    }

    /// Releases the mapped pages from `releasedUpTo` to the page of `offset`; whether there were any.
    private func releasePages(upTo offset: Int) -> Bool {
        let start = releasedUpTo & ~(pageSize - 1)
        let stop = offset & ~(pageSize - 1)
        guard stop > start && mapLength > 0 else { return false }
        _ = madvise(UnsafeMutableRawPointer(mutating: base).advanced(by: start), stop - start, MADV_DONTNEED)
        releasedUpTo = stop
        return true
    }

    /// Releases the pages up to where ``releaseHandoff`` says the decoding has gone: called on the
    /// thread that took the releases over (ConcurrentMerge.swift). What keeps it safe while this
    /// stream is decoded on another thread: only pages before the packet being read are released
    /// (the decoding thread publishes an offset once it has moved past it), and the mapping is
    /// private and read-only — a released page read again is read again from the file, the same
    /// bytes — so the two threads never need to agree on more than that offset.
    @usableFromInline func releaseHandedOff() {
        guard let h = releaseHandoff, h.active.load(ordering: .relaxed) else { return }
        if releasePages(upTo: h.upTo.load(ordering: .acquiring)) { releasesByOtherThread &+= 1 }
    }

    /// Called by the releasing thread when it stops (its own stream ended, or the merge is over):
    /// releases what was published, then lets the decoding thread release its pages itself.
    @usableFromInline func stopReleasingHandedOff() {
        guard let h = releaseHandoff, h.active.load(ordering: .relaxed) else { return }
        releaseHandedOff()
        h.active.store(false, ordering: .releasing)
    }

    /// Hands the releases of consumed pages over to another thread (``releaseHandedOff()``), until
    /// ``takeBackReleases()``; call both while that thread is not running.
    @usableFromInline func handOffReleases() {
        releaseHandoff = ReleaseHandoff()
    }

    /// Releases what was consumed and not yet released, and releases on this thread again.
    @usableFromInline func takeBackReleases() {
        guard let h = releaseHandoff else { return }
        releaseHandoff = nil
        // (The releasing thread has stopped and been joined: its writes are visible.)
        _ = releasePages(upTo: h.upTo.load(ordering: .relaxed))
    }

    func warn(_ offset: Int, _ msg: String) {
        warnings.append(CTFWarning(path: path, offset: offset, message: msg))
    }

    /// Reads the packet at `offset`; returns false at the end of the file.
    func loadPacket(at offset: Int) throws -> Bool {
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
        // Sizes: either one stands for the other when only one is declared (as babeltrace2 reads them: a packet
        // with a content size and no packet size ends at the byte where its content does, and the next packet
        // follows — the rest of the file is not padding); with neither, the rest of the file is one packet.
        // (A content size below the header's own bits is refused below, so every packet moves forward.)
        var packetBits = (fileSize - offset) * 8
        if cls.packetSizeSlot >= 0 { packetBits = Int(clamping: slots[cls.packetSizeSlot]) }
        else if cls.contentSizeSlot >= 0 {
            let c = slots[cls.contentSizeSlot]
            packetBits = c > UInt64(Int.max - 7) ? Int.max : Int((c + 7) / 8 * 8)
        }
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
    ///
    /// Inlinable: the common event — LTTng's compact or large header, not extended, of a class whose body is
    /// fixed-size or fixed runs around strings (`fastEventBits`), wholly inside the packet content, with a valid
    /// clock value — is read here (its body skipped by a constant, or by a NUL scan per string, as
    /// ``nextGeneral()`` does); anything else, and every error, goes to ``nextGeneral()`` with the state
    /// untouched, which decodes (or reports) the event from scratch.
    ///
    /// What keeps the raw loads safe: `base` maps at least `end / 8` bytes (the packet content, checked against
    /// the file size by `loadPacket`), and the header's 6 (or 4) bytes and the whole event are checked to end at
    /// or before `end` before anything is read; a string's NUL scan reads 8-byte words only below
    /// `wideLoadLimit` (the mapping's pages) and takes a NUL only before `end` (`StreamFastPathTests`).
    @inlinable @inline(__always)
    public func next() throws -> Bool {
        let h = hot
        let kind = fastHeader
        if kind != 0 && h.pointee.fastReady {
            let p = (h.pointee.pos &+ 7) & ~7
            let end = h.pointee.end
            if kind == 2 {
                // Large header: u16 id, u32 timestamp (its low 32 bits).
                if p &+ 48 <= end {
                    let b = p &>> 3
                    let id = Int(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: b, as: UInt16.self)))
                    let v = UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: b &+ 2, as: UInt32.self)))
                    if takeFast(h, id: id, eventStart: p, headerBits: 48, end: end, clockLow: v, clockBits: 32) { return true }
                }
            } else if p &+ 32 <= end {
                // Compact header: 5-bit id, 27-bit timestamp (its low 27 bits).
                let w = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: p &>> 3, as: UInt32.self))
                if takeFast(h, id: Int(w & 31), eventStart: p, headerBits: 32, end: end, clockLow: UInt64(w &>> 5), clockBits: 27) { return true }
            }
        }
        return try nextGeneral()
    }

    /// The fast path after either header: the event of compact id `id` at `eventStart`, whose header of
    /// `headerBits` held the low `clockBits` bits of its clock value, taken if its id is for the fast path, it ends
    /// within the packet content (`end`, its header already checked) and its clock value is valid; false (the
    /// state untouched but `segmentBase`, which the general path rewrites) otherwise.
    @inlinable @inline(__always)
    func takeFast(_ h: UnsafeMutablePointer<HotState>, id: Int, eventStart p: Int, headerBits: Int, end: Int,
                  clockLow v: UInt64, clockBits: UInt64) -> Bool {
        guard id < fastIDCount else { return false }
        let info = fastEventBits[id]
        let after = fastEventEnd(info, eventStart: p, bodyStart: p &+ headerBits, end: end)
        guard after >= 0 else { return false }
        let c = CTFStream.extendClock(h.pointee.clockValue, low: v, bits: clockBits)
        guard c &- minCycles <= cycleSpan else { return false }
        acceptFast(h, id: id, cls: info >= 0 ? info &>> 32 : -2 &- info, clock: c, bodyStart: p &+ headerBits, end: after)
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
    /// `bodyStart`: by its constant size, or past its strings (``fastSkipStrings(_:from:end:)``); -1 when the id
    /// is not for the fast path or the event does not end within the packet content (`end`).
    @inlinable @inline(__always)
    func fastEventEnd(_ info: Int, eventStart p: Int, bodyStart: Int, end: Int) -> Int {
        if info >= 0 {
            let after = p &+ (info & 0x7fff_ffff)
            return after <= end ? after : -1
        }
        return info == -1 ? -1 : fastSkipStrings(-2 &- info, from: bodyStart, end: end)
    }

    /// ``skipBody(_:)`` for a body at `bodyStart` (byte-aligned) of class `ci` (with strings): its end (bits),
    /// or -1 when a string or the last fixed run does not end within `end` (the general path then reports it).
    /// Records where each fixed run starts in `segmentBase`, which the general path rewrites for any event.
    @usableFromInline
    func fastSkipStrings(_ ci: Int, from bodyStart: Int, end e: Int) -> Int {
        let limit = e >> 3                  // strings end before this byte, as in skipBody
        let seg = segmentBytes + lazySegmentStart[ci]
        let n = lazyStrings[ci]
        let sb = segmentBase
        var p = bodyStart >> 3
        for j in 0..<n {
            p += seg[j]
            let nul = findNul(from: p, before: limit)
            guard nul >= 0 else { return -1 }
            p = nul + 1
            sb[j + 1] = p
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
        while q < limit && q &+ 8 <= wideLoadLimit {
            let x = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: q, as: UInt64.self))
            // A byte's high bit in `t` for each zero byte, exact up to the first one (the lowest).
            let t = (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
            if t != 0 {
                let i = q &+ t.trailingZeroBitCount &>> 3
                return i < limit ? i : -1
            }
            q &+= 8
        }
        guard q < limit, let len = memchrRaw(base + q, limit - q) else { return -1 }
        return q + len
    }

    /// The state ``nextGeneral()`` leaves after an event whose body was skipped (read lazily).
    @inlinable @inline(__always)
    func acceptFast(_ h: UnsafeMutablePointer<HotState>, id: Int, cls: Int, clock c: UInt64, bodyStart: Int, end: Int) {
        h.pointee.clockValue = c
        h.pointee.eventID = UInt64(truncatingIfNeeded: id)
        slots[headerIDSlot] = UInt64(truncatingIfNeeded: id)
        h.pointee.currentClass = cls
        h.pointee.lazyBody = bodyStart
        segmentBase[0] = bodyStart &>> 3
        h.pointee.pos = end
        h.pointee.cycles = c
        h.pointee.timestamp = clockOffsetNS &+ Int64(bitPattern: c)
    }

    /// ``next()`` for every event: any header, class and body; errors; packet boundaries.
    @usableFromInline @inline(never)
    func nextGeneral() throws -> Bool {
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
                        clockValue = CTFStream.extendClock(clockValue, low: UInt64(w >> 5), bits: 27)
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
                        clockValue = CTFStream.extendClock(clockValue, low: v, bits: 32)
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
                var found = -1
                if !headerHasID {
                    // No `id` in the event header: the stream class's only event class, whatever id it declares
                    // (as babeltrace2 reads it; several classes without an id are refused when compiling).
                    found = cls.eventClasses.isEmpty ? -1 : 0
                } else if eventID < UInt64(denseCount) { found = Int(denseIDs[Int(eventID)]) } else if let x = cls.sparseIDs[eventID] { found = x }
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

}
