/// Operation kinds of a compiled decoding program.
enum OpKind: UInt8 {
    case align          // align pos to `align`
    case int8, int16, int32, int64   // byte-aligned little-endian fast paths (host is little endian)
    case intBits        // any integer/float bits: size, flags (signed, big endian)
    case string         // slot = start bit, slot+1 = byte length (without NUL)
    case mark           // slot = pos (start of a flattened nested struct or a variant)
    case arrayFixed     // slot = start bit, slot+1 = count(aux); skip aux*aux2 bits
    case seqFixed       // slot = start bit, slot+1 = count from slots[aux]; skip count*aux2 bits
    case generic        // slot = start bit; skip a type (types[aux2]) with the generic walker
    case seqGeneric     // slot = start bit, slot+1 = count from slots[aux]; walk count elements of types[aux2]
    case variant        // select sub-program by tag in slots[variants[aux].tagSlot]
}

/// One step of a decoding program.
struct Op {
    var kind: OpKind
    /// Bit 0 signed, bit 1 big endian, bit 2 updates the clock, bit 3 is the event id.
    var flags: UInt8 = 0
    var size: Int32 = 0
    var align: Int32 = 1
    var slot: Int32 = -1
    var aux: Int32 = 0
    var aux2: Int32 = 0
    /// Index of the field's dotted name (for error messages).
    var field: Int32 = 0
}

/// A variant's selection table: tag slot, tag value ranges, sub-program per range.
struct VariantTable {
    var tagSlot: Int
    var tagSigned: Bool
    var ranges: [(lo: Int64, hi: Int64, program: Int)]
}

/// How one top-level field of a scope is stored in the slot buffer.
struct FieldLayout {
    enum Storage { case scalar, string, fixedArray, sequence, generic, nestedStruct, variant }
    var name: String
    var type: CTFType
    var slot: Int
    var storage: Storage
}

/// The decoding programs of one stream class plus its event classes, flattened for the interpreter.
final class CompiledStreamClass {
    var ops: [Op] = []
    /// Program ranges into `ops`.
    var programs: [(start: Int, count: Int)] = []
    var variants: [VariantTable] = []
    var types: [CTFType] = []
    /// Every field's dotted name, for error messages (``Op/field`` indexes it).
    var names = FieldNames()
    var slotCount = 0
    /// Integer values of named scope fields by slot (used to resolve lengths and tags during compilation).
    var slotTypes: [Int: CTFType] = [:]

    var packetHeaderProgram = -1
    var packetContextProgram = -1
    var eventHeaderProgram = -1
    var streamEventContextProgram = -1
    var packetHeaderLayout: [FieldLayout] = []
    var packetContextLayout: [FieldLayout] = []
    /// Whether the stream class declares a packet context (babeltrace2 prints `{ }` for an empty one).
    var hasPacketContext = false
    /// Whether the stream class declares a stream event context.
    var hasStreamEventContext = false
    var eventHeaderLayout: [FieldLayout] = []
    var streamEventContextLayout: [FieldLayout] = []
    /// Per event class (by index into `eventClasses`).
    var eventClasses: [CTFEventClass] = []
    var eventContextPrograms: [Int] = []
    var payloadPrograms: [Int] = []
    var eventContextLayouts: [[FieldLayout]] = []
    var payloadLayouts: [[FieldLayout]] = []
    /// Event id → index in `eventClasses` (dense for small ids).
    var denseIDs: [Int32] = []
    var sparseIDs: [UInt64: Int] = [:]
    /// Whether any event header field carries the id.
    var headerHasID = false
    /// 1 when the event header is exactly LTTng's compact header, 2 for LTTng's large header, else 0.
    var lttngHeaderKind = 0

    // Slots of well-known fields, -1 when absent.
    var magicSlot = -1, streamIDSlot = -1, streamInstanceSlot = -1
    var contentSizeSlot = -1, packetSizeSlot = -1, tsBeginSlot = -1, tsEndSlot = -1
    var discardedSlot = -1, seqNumSlot = -1, cpuIDSlot = -1
    var tsBeginSize = 64, tsEndSize = 64

    let clockName: String?

    init(clockName: String?) { self.clockName = clockName }

    @inline(__always)
    func eventIndex(for id: UInt64) -> Int? {
        if id < UInt64(denseIDs.count) {
            let i = denseIDs[Int(id)]
            return i >= 0 ? Int(i) : nil
        }
        return sparseIDs[id]
    }
}

/// The fields a scope, or a structure or variant in it, makes reachable by a relative or absolute
/// path (a sequence's length, a variant's tag): its integer fields' slots by name, and its structures
/// and variants as scopes of their own, so `a.b.c` is found by descending.
///
/// (Each finished structure once had its fields copied into the enclosing scope under `name.` +
/// their keys: every level of a nesting copied every key below it, with a longer name — variants
/// nested 1 000 deep, each with its tag, compiled in 4.6 s against babeltrace2's 0.55 s.)
final class FieldScope {
    var slots: [String: Int] = [:]
    var children: [String: FieldScope] = [:]

    /// The slot of the field at `path` (`len`, `hdr.len`) in this scope, or nil.
    func slot(_ path: Substring) -> Int? {
        guard let dot = path.firstIndex(of: ".") else { return slots[String(path)] }
        return children[String(path[..<dot])]?.slot(path[path.index(after: dot)...])
    }

    /// Adds what `other` reaches (a variant's option, to the variant's scope).
    func merge(_ other: FieldScope) {
        for (k, v) in other.slots { slots[k] = v }
        for (k, c) in other.children { children[k] = c }
    }
}

/// Compiles CTF types into flat programs.
struct ProgramCompiler {
    let cls: CompiledStreamClass
    let traceByteOrder: CTFByteOrder
    let path: String
    /// Absolute scopes: name → its fields, for already compiled scopes.
    var absolute: [String: FieldScope] = [:]
    /// Relative lookup chain for the current compilation (innermost last).
    var local: [FieldScope] = []
    /// Which scope is being compiled ("stream.event.header", …).
    var scopeName = ""
    /// Alignment (bits) the position is known to have at this point of the program (align ops below it are elided).
    var known = 1
    /// The size (bits) of the field compiled last, when fixed.
    var lastBits: Int?

    init(cls: CompiledStreamClass, traceByteOrder: CTFByteOrder, path: String) {
        self.cls = cls
        self.traceByteOrder = traceByteOrder
        self.path = path
    }

    private func bigEndian(_ b: CTFByteOrder) -> Bool {
        switch b { case .big: return true; case .little: return false; case .native: return traceByteOrder == .big }
    }

    private mutating func allocSlots(_ n: Int) -> Int { let s = cls.slotCount; cls.slotCount += n; return s }

    private func resolve(_ ref: String) -> Int? {
        let prefixes = ["trace.packet.header.", "stream.packet.context.", "stream.event.header.", "stream.event.context.", "event.context.", "event.fields."]
        for p in prefixes where ref.hasPrefix(p) {
            let scope = String(p.dropLast())
            let rest = String(ref.dropFirst(p.count))
            if scope == scopeName, let s = lookupLocal(rest) { return s }
            return absolute[scope]?.slot(rest[...])
        }
        if let s = lookupLocal(ref) { return s }
        // Relative references may also name fields of previously compiled scopes.
        for scope in ["event.fields", "event.context", "stream.event.context", "stream.event.header", "stream.packet.context", "trace.packet.header"] {
            if let s = absolute[scope]?.slot(ref[...]) { return s }
        }
        return nil
    }

    private func lookupLocal(_ name: String) -> Int? {
        for l in local.reversed() { if let s = l.slot(name[...]) { return s } }
        return nil
    }

    /// Compiles a scope's struct type into a new program; returns (program index, top-level layouts).
    mutating func compileScope(_ type: CTFType?, scope: String) throws -> (Int, [FieldLayout]) {
        scopeName = scope
        local = [FieldScope()]
        var ops: [Op] = []
        var layouts: [FieldLayout] = []
        if let t = type {
            guard case .structure(let fields, _) = t else {
                throw CTFReaderError.metadataSemantic(path: path, message: "\(scope) must be a structure")
            }
            let scopeEntry = cls.names.add(scope, parent: -1)
            if t.alignment > 1 { ops.append(Op(kind: .align, align: Int32(t.alignment), field: scopeEntry)) }
            known = max(1, t.alignment)
            for f in fields {
                layouts.append(try compileField(f, parent: scopeEntry, into: &ops, depth: 0))
            }
        }
        absolute[scope] = local.first ?? FieldScope()
        let idx = cls.programs.count
        cls.programs.append((cls.ops.count, ops.count))
        cls.ops.append(contentsOf: ops)
        return (idx, layouts)
    }

    /// Compiles field `f`, enclosed by the field (or scope) whose name entry is `parent`.
    private mutating func compileField(_ f: CTFField, parent: Int32, into ops: inout [Op], depth: Int) throws -> FieldLayout {
        guard depth <= Nesting.maxDepth else {
            // (Named by its first and last levels: the whole path of so deep a field is tens of kilobytes.)
            let levels = cls.names.components(Int(parent)).dropFirst() + [f.name]
            let at = levels.count <= 6 ? levels.joined(separator: ".") : (levels.prefix(3) + ["…"] + levels.suffix(2)).joined(separator: ".")
            throw CTFReaderError.metadataSemantic(path: path, message: "types nested more than \(Nesting.maxDepth) deep at `\(scopeName).\(at)`")
        }
        let fieldIdx = cls.names.add(f.name, parent: parent)
        // The field's dotted name, put together for an error message only.
        var dotted: String { cls.names[Int(fieldIdx)] }
        let t = f.type
        // A structure's size is summed from its fields' as they are compiled below (`lastBits`):
        // `layout` visits the whole type, and called at every level of a nesting it cost d².
        let tAlignment: Int
        var tBits: Int?
        if case .structure = t { tAlignment = t.alignment } else { (tAlignment, tBits) = t.layout }
        if tAlignment > known { ops.append(Op(kind: .align, align: Int32(tAlignment), field: fieldIdx)) }
        known = max(known, tAlignment)
        // After this field the position is aligned to the largest power of two dividing its size (if fixed).
        defer {
            if let bits = tBits, bits > 0 {
                let low = bits & -bits
                known = min(known, low)
            } else if case .string = t {
                known = 8
            } else {
                known = 1
            }
            lastBits = tBits
        }
        switch t {
        case .integer(let it) where it.size > 64:
            // Wider than a slot: skipped by size here, read whole (and shown in hex) when the field is decoded.
            let slot = allocSlots(2)
            cls.types.append(t)
            ops.append(Op(kind: .generic, slot: Int32(slot), aux2: Int32(cls.types.count - 1), field: fieldIdx))
            cls.names.keepWhole(fieldIdx)
            return FieldLayout(name: f.name, type: t, slot: slot, storage: .generic)
        case .integer(let it), .enumeration(let it, _):
            let slot = allocSlots(1)
            var op = Op(kind: .intBits, size: Int32(it.size), align: Int32(it.alignment), slot: Int32(slot), field: fieldIdx)
            let be = bigEndian(it.byteOrder)
            if it.isSigned { op.flags |= 1 }
            if be { op.flags |= 2 }
            if it.mappedClock != nil {
                if scopeName == "stream.event.header" || (scopeName == "stream.packet.context" && f.name == "timestamp_begin" && depth == 0) {
                    op.flags |= 4
                }
            }
            if scopeName == "stream.event.header" && f.name == "id" { op.flags |= 8; cls.headerHasID = true }
            if !be && it.alignment % 8 == 0 && op.flags & 4 == 0 {
                switch it.size { case 8: op.kind = .int8; case 16: op.kind = .int16; case 32: op.kind = .int32; case 64: op.kind = .int64; default: break }
            }
            ops.append(op)
            local[local.count - 1].slots[f.name] = slot
            cls.slotTypes[slot] = t
            return FieldLayout(name: f.name, type: t, slot: slot, storage: .scalar)
        case .floatingPoint(let ft):
            let slot = allocSlots(1)
            var op = Op(kind: .intBits, size: Int32(ft.size), align: Int32(ft.alignment), slot: Int32(slot), field: fieldIdx)
            if bigEndian(ft.byteOrder) { op.flags |= 2 }
            ops.append(op)
            return FieldLayout(name: f.name, type: t, slot: slot, storage: .scalar)
        case .string:
            let slot = allocSlots(2)
            ops.append(Op(kind: .string, slot: Int32(slot), field: fieldIdx))
            return FieldLayout(name: f.name, type: t, slot: slot, storage: .string)
        case .array(let e, let n):
            let slot = allocSlots(2)
            if let bits = e.fixedBitSize, bits % max(1, e.alignment) == 0, bits <= Int(Int32.max) {
                guard n <= Int(Int32.max) else { throw CTFReaderError.metadataSemantic(path: path, message: "array `\(dotted)` too long") }
                ops.append(Op(kind: .arrayFixed, slot: Int32(slot), aux: Int32(n), aux2: Int32(bits), field: fieldIdx))
                return FieldLayout(name: f.name, type: t, slot: slot, storage: .fixedArray)
            }
            cls.types.append(t)
            ops.append(Op(kind: .generic, slot: Int32(slot), aux2: Int32(cls.types.count - 1), field: fieldIdx))
            cls.names.keepWhole(fieldIdx)
            return FieldLayout(name: f.name, type: t, slot: slot, storage: .generic)
        case .sequence(let e, let lengthField):
            guard let lslot = resolve(lengthField) else {
                throw CTFReaderError.metadataSemantic(path: path, message: "sequence `\(dotted)`: length field `\(lengthField)` not found")
            }
            guard let lt = cls.slotTypes[lslot], case .integer = lt else {
                throw CTFReaderError.metadataSemantic(path: path, message: "sequence `\(dotted)`: length field `\(lengthField)` is not an integer")
            }
            let slot = allocSlots(2)
            if let bits = e.fixedBitSize, bits % max(1, e.alignment) == 0, bits <= Int(Int32.max) {
                ops.append(Op(kind: .seqFixed, slot: Int32(slot), aux: Int32(lslot), aux2: Int32(bits), field: fieldIdx))
            } else {
                cls.types.append(e)
                ops.append(Op(kind: .seqGeneric, slot: Int32(slot), aux: Int32(lslot), aux2: Int32(cls.types.count - 1), field: fieldIdx))
                cls.names.keepWhole(fieldIdx)
            }
            return FieldLayout(name: f.name, type: t, slot: slot, storage: .sequence)
        case .structure(let fields, _):
            let slot = allocSlots(1)
            ops.append(Op(kind: .mark, slot: Int32(slot), field: fieldIdx))
            local.append(FieldScope())
            var size = FixedStructureSize()
            for sub in fields {
                _ = try compileField(sub, parent: fieldIdx, into: &ops, depth: depth + 1)
                size.add(alignment: sub.type.alignment, bits: lastBits)
            }
            tBits = size.total(alignment: tAlignment)
            local[local.count - 2].children[f.name] = local.removeLast()
            return FieldLayout(name: f.name, type: t, slot: slot, storage: .nestedStruct)
        case .variant(let tag, let options):
            guard let tslot = resolve(tag) else {
                throw CTFReaderError.metadataSemantic(path: path, message: "variant `\(dotted)`: tag `\(tag)` not found")
            }
            guard case .enumeration(let ti, let maps)? = cls.slotTypes[tslot] else {
                throw CTFReaderError.metadataSemantic(path: path, message: "variant `\(dotted)`: tag `\(tag)` is not an enumeration")
            }
            let slot = allocSlots(1)
            var table = VariantTable(tagSlot: tslot, tagSigned: ti.isSigned, ranges: [])
            // Each label's ranges, found once (a variant of 2^19 options matched them option by option, label by
            // label: ctf-testsuite's stress/variant-many-tags ran past 120 s).
            var rangesOfLabel: [String: [(lo: Int64, hi: Int64)]] = [:]
            for m in maps { rangesOfLabel[m.label, default: []].append((m.lower, m.upper)) }
            let knownAtStart = known
            // The options' fields, reachable as `name.option.field` as each option is compiled.
            let reached = FieldScope()
            local[local.count - 1].children[f.name] = reached
            for opt in options {
                known = knownAtStart
                var subOps: [Op] = []
                local.append(FieldScope())
                _ = try compileField(opt, parent: fieldIdx, into: &subOps, depth: depth + 1)
                reached.merge(local.removeLast())
                let pidx = cls.programs.count
                cls.programs.append((cls.ops.count, subOps.count))
                cls.ops.append(contentsOf: subOps)
                for r in opt.selectingLabel({ rangesOfLabel[$0] != nil }).flatMap({ rangesOfLabel[$0] }) ?? [] {
                    table.ranges.append((r.lo, r.hi, pidx))
                }
            }
            if table.ranges.isEmpty && !options.isEmpty {
                throw CTFReaderError.metadataSemantic(path: path, message: "variant `\(dotted)`: no option matches a label of its tag enumeration `\(tag)`")
            }
            cls.variants.append(table)
            ops.append(Op(kind: .variant, slot: Int32(slot), aux: Int32(cls.variants.count - 1), field: fieldIdx))
            return FieldLayout(name: f.name, type: t, slot: slot, storage: .variant)
        }
    }
}
