/// What the event formatter resolves once per event class of a stream class (when first seen): the constant text
/// around the values and, per top-level field, how to print it straight from the decoder's slots.

/// How one top-level field is printed.
enum FieldKind: UInt8 {
    /// An integer of at most 64 bits in a slot.
    case integer
    /// An enumeration over an integer of at most 64 bits in a slot (labels from the plan's table).
    case enumeration
    /// binary32 / binary64 floating point in a slot.
    case float32, float64
    /// A NUL-terminated string (slot: start bit, slot + 1: byte length).
    case string
    /// An array or sequence of 8-bit text characters, printed as a string up to its first NUL.
    case text
    /// An array or sequence of integers or enumerations of at most 64 bits (slot: start bit, slot + 1: count).
    case integerArray
    /// An integer wider than 64 bits: formatted by ``CTFEventFormatter/wideIntegerText(_:_:)`` and
    /// ``CTFEventFormatter/wideIntegerJSON(_:_:)``, the one place to change how such integers print.
    case wideInteger
    /// Anything else (structures, variants, arrays of compound types): decoded to a `CTFValue` and printed by the
    /// general `String` formatter (rare in practice).
    case other
}

/// A byte range in a plan's constant text.
struct TextRange {
    var offset: Int32 = 0
    var count: Int32 = 0
}

/// One top-level field: where its value is and the constant text before it.
struct FieldPlan {
    var kind: FieldKind
    /// Display base of the integer (or enumeration container, or array element): 2, 8, 10 or 16.
    var base: UInt8 = 10
    var signed = false
    /// Byte order of array elements (big endian).
    var bigEndian = false
    /// Integer size in bits (of the container or array element).
    var size = 64
    /// Alignment in bits of array elements.
    var elementAlignment = 1
    var slot: Int
    /// `name = ` (text) and `"name":` (JSON).
    var textName = TextRange()
    var jsonName = TextRange()
    /// Range in the plan's enumeration mappings (for enumerations and arrays of them).
    var mapStart = 0
    var mapCount = 0
    /// Whether array elements are enumerations.
    var elementIsEnum = false
    /// Index of the field's layout in the plan (for the decoded fallback).
    var layout: Int
}

/// The top-level fields of a scope that babeltrace2 2.0 prints (its "in IR" rule, `ctf-meta-update-in-ir.c`):
/// not an integer mapped to a clock, and, in a packet context, none of the fields it reads itself
/// (`timestamp_begin`, `timestamp_end`, `content_size`, `packet_size`, `events_discarded`, `packet_seq_num`).
/// (babeltrace2 keeps such a field when a printed sequence or variant of the scope names it as its length or
/// tag; this reader does not — no writer we know of does that.)
func printedFields(_ fields: [FieldLayout], packetContext: Bool) -> [FieldLayout] {
    let meanings: Set<String> = ["timestamp_begin", "timestamp_end", "content_size", "packet_size", "events_discarded", "packet_seq_num"]
    return fields.filter { f in
        switch f.type {
        case .integer(let it), .enumeration(let it, _):
            if it.mappedClock != nil { return false }
            return !(packetContext && meanings.contains(f.name))
        default:
            return true
        }
    }
}

/// The fields of one scope (packet context, stream event context, event context or payload) in a plan.
struct FieldGroup {
    var start: Int
    var count: Int
    /// Whether the text form prints the group (babeltrace2 prints `{ }` for a declared but empty scope).
    var present: Bool
}

/// Constant text, then the value of field `value` (an index into the plan's fields, or ``cpu`` or ``end``).
struct Step {
    var prefix: TextRange
    var value: Int32
    /// The packet context's `cpu_id`.
    static let cpu: Int32 = -1
    /// No value: the last step of the event.
    static let end: Int32 = -2
}

/// One enumeration label: its range and its text quoted for text and for JSON.
struct EnumMapPlan {
    var lower: Int64
    var upper: Int64
    var text: TextRange
    var json: TextRange
}

/// Everything constant about how the events of one class (in one trace's stream class) print.
final class ClassPlan {
    /// The constant text, referenced by `TextRange`s.
    let arena: UnsafeMutablePointer<UInt8>
    let fields: UnsafeMutablePointer<FieldPlan>
    let maps: UnsafeMutablePointer<EnumMapPlan>
    let fieldCount: Int
    /// The fields' layouts, for decoded fallbacks.
    let layouts: [FieldLayout]
    /// The fields of the packet context (those babeltrace2 prints: ``printedFields(_:packetContext:)``), stream
    /// event context, event context and payload.
    let packetContext: FieldGroup
    let streamContext: FieldGroup
    let eventContext: FieldGroup
    let payload: FieldGroup
    /// Slot of the packet context's `cpu_id`, or -1.
    let cpuSlot: Int
    /// Text: `) ` + origin (`hostname[:procname:(vpid)] `) + name + `: `.
    let textHead: TextRange
    /// JSON: `,"name":"…"` and `,"hostname":"…"` (empty when the trace has no hostname).
    let jsonName: TextRange
    let jsonHost: TextRange
    /// The text and JSON forms as steps (constant text, then a value), ending with a ``Step/end`` step; nil
    /// when a field goes through the decoded fallback (then the per-group writers run).
    let textSteps: UnsafeMutablePointer<Step>?
    let jsonSteps: UnsafeMutablePointer<Step>?

    init(stream s: CTFStream, classIndex ci: Int) {
        let cls = s.cls
        var arena: [UInt8] = []
        let w = ByteSink()
        func add(_ build: (ByteSink) -> Void) -> TextRange {
            let offset = arena.count
            build(w)
            w.moveWritten(appendingTo: &arena)
            return TextRange(offset: Int32(offset), count: Int32(arena.count - offset))
        }
        let env = s.environment
        var origin = env["hostname"] ?? ""
        if let pn = env["procname"] { origin += (origin.isEmpty ? "" : ":") + pn }
        if let vp = env["vpid"] { origin += (origin.isEmpty ? "" : ":") + "(\(vp))" }
        let ec = cls.eventClasses[ci]
        textHead = add { $0.write(") "); if !origin.isEmpty { $0.terminalText(origin); $0.write(" ") }; $0.terminalText(ec.name); $0.write(": ") }
        jsonName = add { $0.write(",\"name\":"); $0.quoted(ec.name, json: true) }
        jsonHost = add { w in if let h = env["hostname"] { w.write(",\"hostname\":"); w.quoted(h, json: true) } }
        cpuSlot = cls.cpuIDSlot

        var fields: [FieldPlan] = []
        var maps: [EnumMapPlan] = []
        var layouts: [FieldLayout] = []
        let bigEndianTrace = s.walker().traceBigEndian
        func addGroup(_ group: [FieldLayout], present: Bool) -> FieldGroup {
            let start = fields.count
            for f in group {
                var p = FieldPlan(kind: .other, slot: f.slot, layout: layouts.count)
                layouts.append(f)
                p.textName = add { $0.write(f.name); $0.write(" = ") }
                p.jsonName = add { $0.quoted(f.name, json: true); $0.write(":") }
                func setInteger(_ it: CTFIntegerType) {
                    p.size = it.size; p.signed = it.isSigned; p.base = UInt8(it.base.rawValue)
                    p.elementAlignment = it.alignment
                    switch it.byteOrder { case .big: p.bigEndian = true; case .little: p.bigEndian = false; case .native: p.bigEndian = bigEndianTrace }
                }
                func addMaps(_ ms: [CTFEnumMapping]) {
                    p.mapStart = maps.count; p.mapCount = ms.count
                    for m in ms {
                        maps.append(EnumMapPlan(lower: m.lower, upper: m.upper,
                                                text: add { $0.quoted(m.label, json: false) },
                                                json: add { $0.quoted(m.label, json: true) }))
                    }
                }
                switch (f.storage, f.type) {
                case (.scalar, .integer(let it)) where it.size <= 64:
                    p.kind = .integer; setInteger(it)
                case (.scalar, .enumeration(let it, let ms)) where it.size <= 64:
                    p.kind = .enumeration; setInteger(it); addMaps(ms)
                case (.scalar, .floatingPoint(let ft)) where ft.size == 32 || ft.size == 64:
                    p.kind = ft.size == 32 ? .float32 : .float64
                case (.string, _):
                    p.kind = .string
                case (.fixedArray, .array(let e, _)), (.fixedArray, .sequence(let e, _)),
                     (.sequence, .array(let e, _)), (.sequence, .sequence(let e, _)):
                    if e.isTextElement {
                        p.kind = .text
                    } else if case .integer(let it) = e, it.size <= 64 {
                        p.kind = .integerArray; setInteger(it)
                    } else if case .enumeration(let it, let ms) = e, it.size <= 64 {
                        p.kind = .integerArray; setInteger(it); addMaps(ms); p.elementIsEnum = true
                    }
                case (.generic, .integer(let it)) where it.size > 64:
                    p.kind = .wideInteger
                default:
                    break
                }
                fields.append(p)
            }
            return FieldGroup(start: start, count: group.count, present: present)
        }
        // A packet context is printed whole, as babeltrace2 prints it (with each field's display base), when it
        // declares no field or prints one.
        let pcFields = printedFields(cls.packetContextLayout, packetContext: true)
        packetContext = addGroup(pcFields, present: cls.hasPacketContext && (cls.packetContextLayout.isEmpty || !pcFields.isEmpty))
        let secFields = printedFields(cls.streamEventContextLayout, packetContext: false)
        streamContext = addGroup(secFields, present: cls.hasStreamEventContext && (cls.streamEventContextLayout.isEmpty || !secFields.isEmpty))
        let ecFields = printedFields(cls.eventContextLayouts[ci], packetContext: false)
        eventContext = addGroup(ecFields, present: ec.context != nil && (cls.eventContextLayouts[ci].isEmpty || !ecFields.isEmpty))
        // An event class with no `fields` prints no payload braces (babeltrace2's text: `name: ` and nothing more).
        let plFields = printedFields(cls.payloadLayouts[ci], packetContext: false)
        payload = addGroup(plFields, present: ec.payload != nil && (cls.payloadLayouts[ci].isEmpty || !plFields.isEmpty))
        self.layouts = layouts
        // Without fallback fields (whose value may be absent, changing the separators) every event of the class
        // prints the same constant text between its values: one step per value.
        var textSteps: [Step] = [], jsonSteps: [Step] = []
        if !fields.contains(where: { $0.kind == .other || $0.kind == .wideInteger }) {
            var cur: [UInt8] = Array(arena[Int(textHead.offset) ..< Int(textHead.offset + textHead.count)])
            func step(_ value: Int32, into steps: inout [Step]) {
                steps.append(Step(prefix: TextRange(offset: Int32(arena.count), count: Int32(cur.count)), value: value))
                arena += cur
                cur = []
            }
            func text(_ r: TextRange) -> [UInt8] { Array(arena[Int(r.offset) ..< Int(r.offset + r.count)]) }
            var first = true
            for g in [packetContext, streamContext, eventContext, payload] where g.present {
                if !first { cur += Array(", ".utf8) }
                first = false
                cur += Array("{ ".utf8)
                for i in g.start ..< g.start + g.count {
                    if i > g.start { cur += Array(", ".utf8) }
                    cur += text(fields[i].textName)
                    step(Int32(i), into: &textSteps)
                }
                cur += Array((g.count > 0 ? " }" : "}").utf8)
            }
            cur += Array("\n".utf8)
            step(Step.end, into: &textSteps)

            cur = text(jsonName)
            if cpuSlot >= 0 { cur += Array(",\"cpu_id\":".utf8); step(Step.cpu, into: &jsonSteps) }
            cur += text(jsonHost)
            func object(_ open: String, _ groups: [FieldGroup]) {
                cur += Array(open.utf8)
                var any = false
                for g in groups {
                    for i in g.start ..< g.start + g.count {
                        if any { cur += Array(",".utf8) }
                        any = true
                        cur += text(fields[i].jsonName)
                        step(Int32(i), into: &jsonSteps)
                    }
                }
                cur += Array("}".utf8)
            }
            if streamContext.count + eventContext.count > 0 { object(",\"context\":{", [streamContext, eventContext]) }
            object(",\"fields\":{", [payload])
            cur += Array("}\n".utf8)
            step(Step.end, into: &jsonSteps)
        }
        func buffer(_ a: [Step]) -> UnsafeMutablePointer<Step>? {
            guard !a.isEmpty else { return nil }
            let b = UnsafeMutablePointer<Step>.allocate(capacity: a.count)
            b.initialize(from: a, count: a.count)
            return b
        }
        self.textSteps = buffer(textSteps)
        self.jsonSteps = buffer(jsonSteps)
        fieldCount = fields.count
        self.fields = .allocate(capacity: max(1, fields.count))
        self.fields.initialize(from: fields, count: fields.count)
        self.maps = .allocate(capacity: max(1, maps.count))
        self.maps.initialize(from: maps, count: maps.count)
        self.arena = .allocate(capacity: max(1, arena.count))
        self.arena.initialize(from: arena, count: arena.count)
    }

    deinit {
        textSteps?.deallocate()
        jsonSteps?.deallocate()
        fields.deinitialize(count: fieldCount)
        fields.deallocate()
        maps.deallocate()
        arena.deallocate()
    }
}

/// The plans of one stream class of one trace (event classes planned when first seen).
final class StreamClassPlans {
    /// Held so that the cache key (its identity) is never reused while the plans exist.
    let cls: CompiledStreamClass
    /// Per event class index: its plan (retained here), or nil until first seen.
    let classes: UnsafeMutablePointer<Unmanaged<ClassPlan>?>
    let count: Int

    init(_ cls: CompiledStreamClass) {
        self.cls = cls
        count = cls.eventClasses.count
        classes = .allocate(capacity: max(1, count))
        classes.initialize(repeating: nil, count: max(1, count))
    }

    deinit {
        for i in 0..<count { classes[i]?.release() }
        classes.deallocate()
    }
}

/// The formatter's per-trace state: plans by stream class, and a scratch buffer for `String` output.
final class FormatterCache {
    private var plans: [ObjectIdentifier: StreamClassPlans] = [:]
    /// The plans of the stream class seen last (the per-event fast path: no hashing, no reference counting).
    private var lastKey: ObjectIdentifier?
    private var lastClasses: UnsafeMutablePointer<Unmanaged<ClassPlan>?>?
    /// Where `format(_:into:)` for a `String` writes (in memory).
    private(set) lazy var scratch = ByteSink()

    /// The plan of the current event of `s` (kept alive by the cache).
    @inline(__always)
    func plan(_ s: CTFStream) -> Unmanaged<ClassPlan> {
        let ci = s.currentClass
        if lastKey == ObjectIdentifier(s.cls), let c = lastClasses, let p = c[ci] { return p }
        return slowPlan(s, ci)
    }

    @inline(never)
    private func slowPlan(_ s: CTFStream, _ ci: Int) -> Unmanaged<ClassPlan> {
        let key = ObjectIdentifier(s.cls)
        let scp: StreamClassPlans
        if let x = plans[key] { scp = x } else { scp = StreamClassPlans(s.cls); plans[key] = scp }
        lastKey = key
        lastClasses = scp.classes
        if let p = scp.classes[ci] { return p }
        let p = Unmanaged.passRetained(ClassPlan(stream: s, classIndex: ci))
        scp.classes[ci] = p
        return p
    }
}
