import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One CTF trace: a directory holding a `metadata` file and its data stream files.
public final class CTFTrace: @unchecked Sendable {
    /// The trace directory.
    public let path: String
    /// The parsed metadata.
    public let metadata: CTFMetadata
    /// The data streams (one per file, in file name order).
    public private(set) var streams: [CTFStream] = []
    /// Warnings about the metadata (unknown attributes ignored, …), with line and column.
    public var warnings: [CTFWarning] { metadata.warnings + skipped }
    /// Files of the directory that are not regular files (FIFOs, sockets, devices), skipped with a warning each.
    public private(set) var skipped: [CTFWarning] = []
    /// The `hostname` from the `env` block, if any.
    public var hostname: String? { metadata.environment["hostname"] }
    let compiled: [UInt64: CompiledStreamClass]
    /// The stream classes linked for decoding, each once (LinkedStreamClass.swift).
    let linked = LinkedClasses()

    /// A trace whose metadata arrived over the network (LTTng live, LiveStream.swift): it holds no
    /// stream files; `path` names where it came from in messages.
    init(path: String, metadataText: String, packetByteOrder: CTFByteOrder?) throws {
        self.path = path
        let metaPath = path + "/metadata"
        (metadata, compiled) = try CTFTrace.parseAndCompile(metadataText, path: metaPath, packetByteOrder: packetByteOrder)
    }

    /// Parses metadata text and compiles its decoding programs, on a thread whose stack holds types
    /// nested as deep as the reader accepts (Nesting.swift): the caller's may be small.
    /// Then checks that the calling thread's stack holds values as deeply nested as the types, for
    /// walking, formatting and releasing them (``Nesting/checkStack(_:forDepth:path:)``).
    static func parseAndCompile(_ text: String, path: String, packetByteOrder: CTFByteOrder?) throws -> (CTFMetadata, [UInt64: CompiledStreamClass]) {
        // (The caller's stack is measured here, on its thread, and checked on the large one: refused
        // types are released there, where their release cannot overflow.)
        let callerStack = Nesting.StackBudget(withStackEnd: ())
        return try Nesting.onLargeStack {
            var parser = try MetadataParser(text: text, path: path, packetByteOrder: packetByteOrder)
            let metadata = try parser.parse()
            let compiled = try CTFTrace.compile(metadata, path: path)
            try Nesting.checkStack(callerStack, forDepth: metadata.nestingDepth, path: path)
            return (metadata, compiled)
        }
    }

    /// Opens the trace in `directory`: reads and parses its metadata, compiles the decoding programs and
    /// maps every data stream file.
    public init(directory: String) throws {
        path = directory
        let metaPath = (directory as NSString).appendingPathComponent("metadata")
        let (text, packetOrder) = try CTFTrace.readMetadata(metaPath)
        (metadata, compiled) = try CTFTrace.parseAndCompile(text, path: metaPath, packetByteOrder: packetOrder)
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: directory) else {
            throw CTFReaderError.io(path: directory, message: "cannot list directory")
        }
        for name in names.sorted() where name != "metadata" && !name.hasPrefix(".") {
            let full = (directory as NSString).appendingPathComponent(name)
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: full, isDirectory: &isDir), !isDir.boolValue else { continue }
            // A FIFO, socket or device among the stream files is skipped, not opened: reading one blocks.
            if let k = RegularFile.irregularKind(full) {
                skipped.append(CTFWarning(path: full, offset: 0, message: "\(k), not a regular file: skipped"))
                continue
            }
            let ids = try CTFTrace.firstPacketIDs(full, metadata: metadata)
            guard let ids else { continue } // empty file
            let s = try CTFStream(path: full, trace: self, firstStreamID: ids.streamClass)
            // babeltrace2's stream id (`src.ctf.fs`, `create_streams_for_trace`): the first packet's
            // `stream_instance_id` when it has one and a `timestamp_begin`, else the next of a counter over the
            // files in path order (``CTFTraceSet/streams``: the merge order of equal timestamps).
            if let inst = ids.instance, compiled[ids.streamClass]?.tsBeginSlot ?? -1 >= 0 {
                s.babeltraceStreamID = inst
            } else {
                s.babeltraceStreamID = nextAutomaticStreamID
                nextAutomaticStreamID += 1
            }
            streams.append(s)
        }
    }

    private var nextAutomaticStreamID: UInt64 = 0

    /// Reads the stream id of a stream file's first packet (nil for an empty file).
    static func firstStreamID(_ path: String, metadata: CTFMetadata) throws -> UInt64? {
        try firstPacketIDs(path, metadata: metadata)?.streamClass
    }

    /// Reads the metadata file, unpacking the packetized form (magic 0x75D11D57) when present.
    static func readMetadataText(_ path: String) throws -> String { try readMetadata(path).text }

    /// Reads the metadata file: its text and, when packetized, the byte order of its packet headers.
    static func readMetadata(_ path: String) throws -> (text: String, packetByteOrder: CTFByteOrder?) {
        guard FileManager.default.fileExists(atPath: path) else { throw CTFReaderError.io(path: path, message: "no such file") }
        let bytes = try RegularFile.read(path)
        let (text, order, _) = try unpackMetadata(bytes, path: path, partial: false)
        return (text, order)
    }

    /// The metadata text of `bytes`: as is when it is plain TSDL, else the content of its packets
    /// (CTF 1.8 §7.1: a 37-byte header each — magic, uuid, checksum, content and packet sizes in
    /// bits, compression, encryption, checksum scheme, major, minor), with their byte order. With
    /// `partial` (metadata arriving over the network), a packet not yet complete is left for later
    /// and the bytes used are returned; otherwise a truncated packet is an error naming it.
    static func unpackMetadata(_ bytes: [UInt8], path: String, partial: Bool) throws -> (text: String, packetByteOrder: CTFByteOrder?, used: Int) {
        guard bytes.count >= 4 else { return (String(decoding: bytes, as: UTF8.self), nil, bytes.count) }
        let le = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
        let magic: UInt32 = 0x75D1_1D57
        guard le == magic || le.byteSwapped == magic else { return (String(decoding: bytes, as: UTF8.self), nil, bytes.count) }
        let isBE = le != magic
        func u32(_ o: Int) -> Int {
            let v = UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
            return Int(isBE ? v.byteSwapped : v)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var off = 0
        let headerSize = 37
        while off < bytes.count {
            guard off + headerSize <= bytes.count else {
                if partial { break }   // the rest comes later
                throw CTFReaderError.malformed(path: path, offset: off, field: "metadata packet header", message: "truncated metadata packet header")
            }
            let m = u32(off)
            guard m == Int(magic) else {
                throw CTFReaderError.malformed(path: path, offset: off, field: "metadata packet header magic", message: "bad metadata packet magic 0x\(String(m, radix: 16))")
            }
            let contentBits = u32(off + 24), packetBits = u32(off + 28)
            guard bytes[off + 32] == 0, bytes[off + 33] == 0 else {
                throw CTFReaderError.malformed(path: path, offset: off + 32, field: "metadata packet header compression_scheme", message: "compressed or encrypted metadata is not supported")
            }
            guard contentBits % 8 == 0, packetBits % 8 == 0, contentBits >= headerSize * 8, contentBits <= packetBits else {
                throw CTFReaderError.malformed(path: path, offset: off + 24, field: "metadata packet header content_size", message: "content size \(contentBits) / packet size \(packetBits) bits are inconsistent")
            }
            if partial && off + packetBits / 8 > bytes.count { break }   // the rest comes later
            let contentEnd = off + contentBits / 8
            guard contentEnd <= bytes.count else {
                throw CTFReaderError.malformed(path: path, offset: off + 24, field: "metadata packet header content_size", message: "metadata packet claims \(contentBits / 8) bytes but the file ends at \(bytes.count)")
            }
            out.append(contentsOf: bytes[(off + headerSize)..<contentEnd])
            off += packetBits / 8
        }
        return (String(decoding: out, as: UTF8.self), isBE ? .big : .little, min(off, bytes.count))
    }

    static func compile(_ m: CTFMetadata, path: String) throws -> [UInt64: CompiledStreamClass] {
        var out: [UInt64: CompiledStreamClass] = [:]
        for (sid, sc) in m.streamClasses {
            // The clock of the stream: the one its event header or packet context maps to.
            var clockName: String?
            func findClock(_ t: CTFType?) {
                guard let t else { return }
                switch t {
                case .integer(let i): if clockName == nil { clockName = i.mappedClock }
                case .enumeration(let i, _): if clockName == nil { clockName = i.mappedClock }
                case .structure(let fs, _), .variant(_, let fs): for f in fs { findClock(f.type) }
                default: break
                }
            }
            findClock(sc.eventHeader); findClock(sc.packetContext)
            if let c = clockName, m.clocks[c] == nil {
                throw CTFReaderError.metadataSemantic(path: path, message: "stream \(sid) maps to undeclared clock `\(c)`")
            }
            let cls = CompiledStreamClass(clockName: clockName)
            var comp = ProgramCompiler(cls: cls, traceByteOrder: m.byteOrder, path: path)
            (cls.packetHeaderProgram, cls.packetHeaderLayout) = try comp.compileScope(m.packetHeader, scope: "trace.packet.header")
            (cls.packetContextProgram, cls.packetContextLayout) = try comp.compileScope(sc.packetContext, scope: "stream.packet.context")
            cls.hasPacketContext = sc.packetContext != nil
            cls.hasStreamEventContext = sc.eventContext != nil
            (cls.eventHeaderProgram, cls.eventHeaderLayout) = try comp.compileScope(sc.eventHeader, scope: "stream.event.header")
            (cls.streamEventContextProgram, cls.streamEventContextLayout) = try comp.compileScope(sc.eventContext, scope: "stream.event.context")
            func slot(_ l: [FieldLayout], _ n: String) -> Int { l.first(where: { $0.name == n && $0.storage == .scalar })?.slot ?? -1 }
            cls.lttngHeaderKind = lttngHeaderKind(sc.eventHeader)
            cls.magicSlot = slot(cls.packetHeaderLayout, "magic")
            cls.streamIDSlot = slot(cls.packetHeaderLayout, "stream_id")
            cls.streamInstanceSlot = slot(cls.packetHeaderLayout, "stream_instance_id")
            cls.contentSizeSlot = slot(cls.packetContextLayout, "content_size")
            cls.packetSizeSlot = slot(cls.packetContextLayout, "packet_size")
            cls.tsBeginSlot = slot(cls.packetContextLayout, "timestamp_begin")
            cls.tsEndSlot = slot(cls.packetContextLayout, "timestamp_end")
            cls.discardedSlot = slot(cls.packetContextLayout, "events_discarded")
            cls.seqNumSlot = slot(cls.packetContextLayout, "packet_seq_num")
            cls.cpuIDSlot = slot(cls.packetContextLayout, "cpu_id")
            let base = cls.slotCount
            var maxSlots = base
            let classes = m.eventClasses.filter { $0.streamID == sid }
            if !cls.headerHasID && classes.count > 1 {
                throw CTFReaderError.metadataSemantic(path: path, message: "stream \(sid) has \(classes.count) event classes but its event header has no `id` field")
            }
            for ec in classes {
                cls.slotCount = base
                let savedAbsolute = comp.absolute
                let (cp, cl) = try comp.compileScope(ec.context, scope: "event.context")
                let (pp, pl) = try comp.compileScope(ec.payload, scope: "event.fields")
                comp.absolute = savedAbsolute
                maxSlots = max(maxSlots, cls.slotCount)
                let idx = cls.eventClasses.count
                cls.eventClasses.append(ec)
                cls.eventContextPrograms.append(cp)
                cls.payloadPrograms.append(pp)
                cls.eventContextLayouts.append(cl)
                cls.payloadLayouts.append(pl)
                if ec.id < 65536 {
                    if cls.denseIDs.count <= Int(ec.id) { cls.denseIDs += Array(repeating: -1, count: Int(ec.id) + 1 - cls.denseIDs.count) }
                    if cls.denseIDs[Int(ec.id)] >= 0 {
                        throw CTFReaderError.metadataSemantic(path: path, message: "duplicate event id \(ec.id) in stream \(sid)")
                    }
                    cls.denseIDs[Int(ec.id)] = Int32(idx)
                } else {
                    cls.sparseIDs[ec.id] = idx
                }
            }
            cls.slotCount = maxSlots
            out[sid] = cls
        }
        return out
    }

    /// Reads the stream class id and `stream_instance_id` of a stream file's first packet (nil for an empty file).
    static func firstPacketIDs(_ path: String, metadata: CTFMetadata) throws -> (streamClass: UInt64, instance: UInt64?)? {
        let data = try RegularFile.read(path, limit: 4096)
        if data.isEmpty { return nil }
        guard let ph = metadata.packetHeader else { return (metadata.streamClasses.keys.min() ?? 0, nil) }
        let bytes = [UInt8](data) + [UInt8](repeating: 0, count: 16)
        return try bytes.withUnsafeBytes { raw -> (streamClass: UInt64, instance: UInt64?) in
            let w = GenericWalker(base: raw.baseAddress!, end: data.count * 8, traceBigEndian: metadata.byteOrder == .big, path: path, outer: { _ in nil })
            var pos = 0
            var scope: [String: ScopeValue] = [:]
            do {
                // The header's own fields, walked at this level: a structure walk keeps the values
                // it reads in an inner scope, and `stream_id` would not be seen (every file of a
                // trace with several stream classes, e.g. two LTTng channels, read as class 0).
                if case .structure(let fields, _) = ph {
                    for f in fields { _ = try w.walk(f.type, &pos, field: f.name, decode: false, scope: &scope) }
                } else {
                    _ = try w.walk(ph, &pos, field: "trace.packet.header", decode: false, scope: &scope)
                }
            } catch {
                throw CTFReaderError.malformed(path: path, offset: 0, field: "trace.packet.header", message: "file too short for a packet header")
            }
            return (scope["stream_id"]?.raw ?? metadata.streamClasses.keys.min() ?? 0, scope["stream_instance_id"]?.raw)
        }
    }
}

/// Recognises LTTng's compact (1) and large (2) event headers exactly, so the reader can decode them natively.
func lttngHeaderKind(_ t: CTFType?) -> Int {
    guard case .structure(let f, let align)? = t, align == 8, f.count == 2, f[0].name == "id", f[1].name == "v",
          case .enumeration(let idt, let maps) = f[0].type, !idt.isSigned, idt.byteOrder != .big,
          case .variant(let tag, let opts) = f[1].type, tag == "id", opts.count == 2,
          opts[0].name == "compact", opts[1].name == "extended",
          case .structure(let cf, _) = opts[0].type, cf.count == 1, cf[0].name == "timestamp",
          case .integer(let cts) = cf[0].type, cts.mappedClock != nil, !cts.isSigned, cts.byteOrder != .big,
          case .structure(let ef, _) = opts[1].type, ef.count == 2, ef[0].name == "id", ef[1].name == "timestamp",
          case .integer(let eid) = ef[0].type, eid.size == 32, eid.alignment == 8, !eid.isSigned, eid.byteOrder != .big,
          case .integer(let ets) = ef[1].type, ets.size == 64, ets.alignment == 8, ets.mappedClock != nil, ets.byteOrder != .big
    else { return 0 }
    func range(_ l: String) -> (Int64, Int64)? {
        let m = maps.filter { $0.label == l }
        return m.count == 1 ? (m[0].lower, m[0].upper) : nil
    }
    if idt.size == 5 && idt.alignment == 1 && cts.size == 27 && cts.alignment == 1,
       let c = range("compact"), c == (0, 30), let e = range("extended"), e == (31, 31) { return 1 }
    if idt.size == 16 && idt.alignment == 8 && cts.size == 32 && cts.alignment == 8,
       let c = range("compact"), c == (0, 65534), let e = range("extended"), e == (65535, 65535) { return 2 }
    return 0
}

/// Finds every CTF trace (directory holding a `metadata` file) below the given paths: LTTng per-uid and
/// per-pid layouts, snapshot folders, relay-daemon trees, several traces at once.
/// - Returns: the trace directories, sorted and without duplicates.
/// - Throws: ``CTFReaderError/io(path:message:)`` when a path does not exist.
public func discoverCTFTraces(in paths: [String]) throws -> [String] {
    let fm = FileManager.default
    var found = Set<String>()
    for p in paths {
        var isDir: ObjCBool = false
        guard fm.fileExists(atPath: p, isDirectory: &isDir) else { throw CTFReaderError.io(path: p, message: "no such file or directory") }
        if !isDir.boolValue {
            if (p as NSString).lastPathComponent == "metadata" { found.insert((p as NSString).deletingLastPathComponent) }
            continue
        }
        let root = URL(fileURLWithPath: p).standardizedFileURL.path
        if fm.fileExists(atPath: root + "/metadata") { found.insert(root) }
        guard let en = fm.enumerator(atPath: root) else { continue }
        var visited = 0
        while let rel = en.nextObject() as? String {
            visited += 1
            if visited > 1_000_000 { break }
            if (rel as NSString).lastPathComponent == "metadata" {
                let dir = (root as NSString).appendingPathComponent((rel as NSString).deletingLastPathComponent)
                found.insert(URL(fileURLWithPath: dir).standardizedFileURL.path)
            }
        }
    }
    return found.sorted()
}
