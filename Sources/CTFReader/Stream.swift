import Foundation
#if canImport(Glibc)
import Glibc
#endif

let debugPositions = getenv("CTFREADER_DEBUG") != nil

extension CTFStream {
    /// Streams opened while this is set decode every event with ``nextGeneral()`` (tests compare the
    /// two paths; a stream opened meanwhile by another test only takes the slower, equivalent path).
    nonisolated(unsafe) static var fastPathDisabled = false
}

/// One data stream file of a trace, decoded event by event with precompiled programs over a memory-mapped file.
///
/// Call ``next()`` to advance; after it returns true, the accessors describe the current event until the next call.
///
/// Its parts, as babeltrace2 keeps them apart: the bytes (``StreamMedium``: the mapping and the release of
/// consumed pages), the stream class linked once for every stream of the class (``LinkedStreamClass``), the
/// packet reader (``PacketReader``: packet header and context, sizes, losses) and the event decoder
/// (``EventDecoder``: the per-event fast path, and the general path over the interpreter). docs/reader.md,
/// "The parts of a stream".
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

    /// The bytes the stream is read from.
    let medium: StreamMedium
    /// The stream class, linked for decoding (shared with the other streams of the class).
    let linked: LinkedStreamClass
    /// The per-event state and path.
    @usableFromInline let dec: EventDecoder
    /// The packet-level state.
    var packets = PacketReader()
    let debug: Bool

    /// The stream class id.
    public private(set) var streamClassID: UInt64 = 0
    /// The id babeltrace2 gives this stream (its first packet's `stream_instance_id`, or a counter over the
    /// trace's files in path order): with the stream class id, what orders events of equal timestamps.
    public internal(set) var babeltraceStreamID: UInt64 = 0
    /// Whether the last seek used LTTng's `index/<stream>.idx` file (rather than scanning packet headers).
    public internal(set) var seekUsedIndexFile = false
    var packetIndex: [PacketEntry]?
    /// Chunks of this stream another stream's thread decoded ahead of the calling thread in
    /// ``CTFTraceSet/forEachInTimeOrder(extract:_:)`` (read by tests once the threads have stopped).
    @usableFromInline var chunksDecodedElsewhere = 0

    /// Opens the data stream file at `path` of `trace`, whose first packet is of stream class `firstStreamID`;
    /// with `memory`, a live stream read from that buffer (LiveStream.swift) instead of a file.
    init(path: String, trace: CTFTrace, firstStreamID: UInt64, memory: UnsafeRawPointer? = nil) throws {
        self.path = path
        self.trace = trace
        self.environment = trace.metadata.environment
        medium = try memory.map { StreamMedium(live: $0, path: path) } ?? StreamMedium(file: path)
        linked = try trace.linkedClass(firstStreamID, streamPath: path)
        streamClassID = firstStreamID
        debug = debugPositions
        dec = EventDecoder(medium: medium, linked: linked, fast: !debug && !CTFStream.fastPathDisabled)
        if medium.fileSize == 0 { finished = true }
    }

    deinit {
        dec.deallocate()
    }

    // The parts' state, by the names the accessors and the interpreter use.
    @inlinable var hot: UnsafeMutablePointer<HotState> { @inline(__always) get { dec.hot } }
    @inlinable var base: UnsafeRawPointer { @inline(__always) get { dec.base } }
    @inlinable var slots: UnsafeMutablePointer<UInt64> { @inline(__always) get { dec.slots } }
    @inlinable var segmentBase: UnsafeMutablePointer<Int> { @inline(__always) get { dec.segmentBase } }
    @inlinable var wideLoadLimit: Int { @inline(__always) get { dec.wideLoadLimit } }
    @inlinable var payloadFieldStart: UnsafeMutablePointer<Int> { @inline(__always) get { dec.payloadFieldStart } }
    @inlinable var payloadFieldCounts: UnsafeMutablePointer<Int> { @inline(__always) get { dec.payloadFieldCounts } }
    @inlinable var payloadRefs: UnsafeMutablePointer<FieldRef> { @inline(__always) get { dec.payloadRefs } }
    @inlinable var contextRefs: UnsafeMutablePointer<FieldRef> { @inline(__always) get { dec.contextRefs } }
    @inlinable var contextFieldCount: Int { @inline(__always) get { dec.contextFieldCount } }
    var cls: CompiledStreamClass { linked.cls }
    var names: FieldNames { linked.names }
    var types: [CTFType] { linked.types }
    var traceBigEndian: Bool { linked.traceBigEndian }
    var minCycles: UInt64 { linked.minCycles }
    var cycleSpan: UInt64 { linked.cycleSpan }
    /// The fast path's header (0: none, 1: LTTng's compact, 2: its large one).
    var fastHeader: Int { dec.fastHeader.rawValue }
    /// Bytes of data: the file's size, or what a live stream was fed.
    var fileSize: Int { get { medium.fileSize } set { medium.fileSize = newValue } }
    var pageSize: Int { medium.pageSize }
    var releasedUpTo: Int { medium.releasedUpTo }
    var releaseHandoff: ReleaseHandoff? { medium.releaseHandoff }
    var releasesByOtherThread: Int { medium.releasesByOtherThread }

    var pos: Int { @inline(__always) get { hot.pointee.pos } @inline(__always) set { hot.pointee.pos = newValue } }
    var end: Int { @inline(__always) get { hot.pointee.end } @inline(__always) set { hot.pointee.end = newValue } }
    var packetOffset: Int { get { hot.pointee.packetOffset } set { hot.pointee.packetOffset = newValue } }
    var nextPacketOffset: Int { get { hot.pointee.nextPacketOffset } set { hot.pointee.nextPacketOffset = newValue } }
    var packetTruncated: Bool { get { hot.pointee.packetTruncated } set { hot.pointee.packetTruncated = newValue } }
    var clockValue: UInt64 { @inline(__always) get { hot.pointee.clockValue } @inline(__always) set { hot.pointee.clockValue = newValue } }
    var eventID: UInt64 { @inline(__always) get { hot.pointee.eventID } @inline(__always) set { hot.pointee.eventID = newValue } }
    var finished: Bool { @inline(__always) get { hot.pointee.finished } @inline(__always) set { hot.pointee.finished = newValue } }
    var started: Bool { @inline(__always) get { hot.pointee.started } @inline(__always) set { hot.pointee.started = newValue } }

    /// The index into the stream class's event classes of the current event.
    var currentClass: Int { @inline(__always) get { hot.pointee.currentClass } @inline(__always) set { hot.pointee.currentClass = newValue } }
    /// The current event's timestamp in clock cycles (extended to 64 bits).
    public internal(set) var cycles: UInt64 { @inlinable get { hot.pointee.cycles } @inline(__always) set { hot.pointee.cycles = newValue } }
    /// The current event's timestamp in nanoseconds since the epoch.
    public internal(set) var timestamp: Int64 { @inlinable get { hot.pointee.timestamp } @inline(__always) set { hot.pointee.timestamp = newValue } }
    /// The current event's class.
    public var eventClass: CTFEventClass { cls.eventClasses[currentClass] }
    /// The stream's clock offset (the metadata's `offset_s` and `offset`, in ns): ``timestamp`` is
    /// ``cycles`` plus this for a 1 GHz clock. Constant for a stream; LTTng measures it per session
    /// (the host's wall clock minus its monotonic clock).
    public var clockOffsetNanoseconds: Int64 { dec.clockOffsetNS }
    /// The current packet's `cpu_id`, if the packet context has one.
    public var cpuID: UInt64? { cls.cpuIDSlot >= 0 ? slots[cls.cpuIDSlot] : nil }

    /// Byte offset of the current packet in the file.
    public var currentPacketOffset: Int { packetOffset }

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

    @inline(__always)
    func nanoseconds(_ cycles: UInt64) -> Int64 { linked.nanoseconds(cycles) }

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
        try? run(linked.combinedProgs[currentClass])
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

    /// ``StreamMedium/releaseHandedOff()``, on the thread that took the releases over.
    @usableFromInline func releaseHandedOff() { medium.releaseHandedOff() }
    /// ``StreamMedium/stopReleasingHandedOff()``.
    @usableFromInline func stopReleasingHandedOff() { medium.stopReleasingHandedOff() }
    /// ``StreamMedium/handOffReleases()``.
    @usableFromInline func handOffReleases() { medium.handOffReleases() }
    /// ``StreamMedium/takeBackReleases()``.
    @usableFromInline func takeBackReleases() { medium.takeBackReleases() }

    func warn(_ offset: Int, _ msg: String) {
        warnings.append(CTFWarning(path: path, offset: offset, message: msg))
    }

    /// Reads the packet at `offset` (``PacketReader/load(at:in:)``); returns false at the end of the file.
    func loadPacket(at offset: Int) throws -> Bool {
        try packets.load(at: offset, in: self)
    }

    /// Advances to the next event. Returns false at the end of the stream.
    /// - Throws: ``CTFReaderError/malformed(path:offset:field:message:)`` naming file, offset and field.
    ///
    /// Inlinable: the common event is read here by the event decoder's fast path (``EventDecoder/nextFast(_:)``);
    /// anything else, and every error, goes to ``nextGeneral()`` with the state untouched, which decodes (or
    /// reports) the event from scratch.
    @inlinable @inline(__always)
    public func next() throws -> Bool {
        if EventDecoder.nextFast(self) { return true }
        return try nextGeneral()
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
                    medium.releaseConsumed(upTo: fileSize)
                    return false
                }
                continue
            }
            let start = pos
            do {
                try EventDecoder.decodeEvent(self)
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
            let clockValue = self.clockValue
            guard clockValue &- dec.minCycles <= dec.cycleSpan else {
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
