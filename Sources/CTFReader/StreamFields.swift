import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Access to the current event's fields, by layout or by name.

extension CTFStream {
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
                do {
                    guard let v = try w.walk(elem, &p, field: f.name, decode: true, scope: &scope) else { return nil }
                    out.append(v)
                } catch {
                    noteUnreadable(f, error)
                    return nil
                }
            }
            return .array(out)
        case .generic, .nestedStruct, .variant:
            var p = Int(raw)
            let w = walker()
            var scope: [String: ScopeValue] = [:]
            if case .variant(let tag, _) = f.type, let tv = resolveRuntime(tag) { scope[tag] = tv }
            do { return try w.walk(f.type, &p, field: f.name, decode: true, scope: &scope) } catch {
                noteUnreadable(f, error)
                return nil
            }
        }
    }

    /// A field whose value could not be decoded though its event was (the walk's own limits: a value
    /// nested deeper than the thread's stack holds): a warning, once per field and reason — the value
    /// is left out of what is printed, not silently.
    private func noteUnreadable(_ f: FieldLayout, _ error: Error) {
        let message = "field `\(f.name)` left out: \(error)"
        if warnedUnreadable.insert(message).inserted { warn(Int(slots[f.slot]) >> 3, message) }
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
    func lazyBytes(_ r: FieldRef) -> UnsafeRawBufferPointer? {
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

    func stringBytes(_ f: FieldLayout) -> UnsafeRawBufferPointer? {
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

    func decode(_ layouts: [FieldLayout]) -> [CTFNamedValue] {
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
    func typed(_ layouts: [FieldLayout]) -> [(String, CTFType, CTFValue)] {
        layouts.compactMap { f in value(f).map { (f.name, f.type, $0) } }
    }

    /// Whether the stream class has layouts for an empty stream event context.
    var hasStreamEventContext: Bool { !cls.streamEventContextLayout.isEmpty }
}
