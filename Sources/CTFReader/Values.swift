/// A decoded field value.
public indirect enum CTFValue: Sendable, Equatable {
    /// A signed integer.
    case signed(Int64)
    /// An unsigned integer.
    case unsigned(UInt64)
    /// A floating point number.
    case float(Double)
    /// A string.
    case string(String)
    /// An enumeration value with the labels whose ranges contain it.
    case enumeration(labels: [String], value: CTFValue)
    /// An array or sequence.
    case array([CTFValue])
    /// A structure's fields in order.
    case structure([CTFNamedValue])
    /// A variant's selected option.
    case variant(option: String, value: CTFValue)

    /// The value as a signed 64-bit integer, if it is an integer or enumeration.
    public var int64: Int64? {
        switch self {
        case .signed(let v): return v
        case .unsigned(let v): return Int64(bitPattern: v)
        case .enumeration(_, let v): return v.int64
        default: return nil
        }
    }
}

/// A named field value of a structure.
public struct CTFNamedValue: Sendable, Equatable {
    /// The field name.
    public var name: String
    /// The value.
    public var value: CTFValue
    /// Creates a named value.
    public init(name: String, value: CTFValue) { self.name = name; self.value = value }
}

/// Walks (and optionally decodes) values of arbitrary types at a bit position: the slow path used for lazy
/// decoding of compound fields and for skipping the rare types the flat programs do not handle.
struct GenericWalker {
    let base: UnsafeRawPointer
    let end: Int
    let traceBigEndian: Bool
    let path: String
    /// Resolves a length/tag reference that is not local to the walked value.
    let outer: (String) -> ScopeValue?
    /// The packet's first bit: alignments count from it.
    var origin = 0

    private func bigEndian(_ b: CTFByteOrder) -> Bool {
        switch b { case .big: return true; case .little: return false; case .native: return traceBigEndian }
    }

    private func fail(_ pos: Int, _ field: String, _ msg: String) -> CTFReaderError {
        .malformed(path: path, offset: pos >> 3, field: field, message: msg)
    }

    /// Decodes (when `decode`) or skips a value of `type` at `pos`, advancing `pos`.
    /// `depth` and `budget`: how deep this call is in a walk, and the stack the walk started with (a
    /// walk deeper than the type bound, or than the thread's stack holds, fails instead of crashing).
    ///
    /// The recursion goes through this function and `walkStructure`/`walkVariant`/`walkElements`
    /// only, each with few locals: the scalar cases are in `walkScalar`, out of line, so that a level
    /// of nesting costs small frames (a debug build's frame holds every case's locals: with them all
    /// here, a level took ~4.9 KiB of stack).
    func walk(_ type: CTFType, _ pos: inout Int, field: String, decode: Bool, scope: inout [String: ScopeValue],
              depth: Int = 0, budget: Nesting.StackBudget = Nesting.StackBudget()) throws -> CTFValue? {
        if depth & (Nesting.StackBudget.every - 1) == 0 || depth > Nesting.maxDepth {
            try checkDepth(depth, budget, pos, field)
        }
        switch type {
        case .structure:
            return try walkStructure(type, &pos, decode: decode, scope: scope, depth: depth, budget: budget)
        case .variant:
            return try walkVariant(type, &pos, field: field, decode: decode, scope: &scope, depth: depth, budget: budget)
        case .array, .sequence:
            return try walkArray(type, &pos, field: field, decode: decode, scope: &scope, depth: depth, budget: budget)
        case .integer, .enumeration, .floatingPoint, .string:
            return try walkScalar(type, &pos, field: field, decode: decode, scope: &scope)
        }
    }

    /// Throws when a walk at `depth` is deeper than any type may nest, or than the stack it started
    /// with holds for ``Nesting/StackBudget/every`` more levels.
    @inline(never)
    private func checkDepth(_ depth: Int, _ budget: Nesting.StackBudget, _ pos: Int, _ field: String) throws {
        guard depth <= Nesting.maxDepth else { throw fail(pos, field, "values nested more than \(Nesting.maxDepth) deep") }
        if depth > 0 && !budget.allows(depth: depth) {
            throw fail(pos, field, "values nested \(depth) deep and deeper: more than this thread's stack can take")
        }
    }

    @inline(never)
    private func walkArray(_ type: CTFType, _ pos: inout Int, field: String, decode: Bool, scope: inout [String: ScopeValue],
                           depth: Int, budget: Nesting.StackBudget) throws -> CTFValue? {
        switch type {
        case .array(let e, let n):
            pos = alignUp(pos, e.alignment, from: origin)
            return try walkElements(e, count: n, &pos, field: field, decode: decode, scope: &scope, depth: depth, budget: budget)
        case .sequence(let e, let lf):
            pos = alignUp(pos, e.alignment, from: origin)
            guard let nv = scope[lf] ?? outer(lf) else { throw fail(pos, field, "sequence length field `\(lf)` not found") }
            let n = nv.int
            guard n >= 0 else { throw fail(pos, field, "negative sequence length \(n)") }
            return try walkElements(e, count: Int(n), &pos, field: field, decode: decode, scope: &scope, depth: depth, budget: budget)
        default:
            return nil
        }
    }

    @inline(never)
    private func walkStructure(_ type: CTFType, _ pos: inout Int, decode: Bool, scope: [String: ScopeValue],
                               depth: Int, budget: Nesting.StackBudget) throws -> CTFValue? {
        guard case .structure(let fields, _) = type else { return nil }
        pos = alignUp(pos, type.alignment, from: origin)
        var inner = scope
        var out: [CTFNamedValue] = []
        for f in fields {
            let v = try walk(f.type, &pos, field: f.name, decode: decode, scope: &inner, depth: depth + 1, budget: budget)
            if let v { out.append(CTFNamedValue(name: f.name, value: v)) }
        }
        return decode ? .structure(out) : nil
    }

    @inline(never)
    private func walkVariant(_ type: CTFType, _ pos: inout Int, field: String, decode: Bool,
                             scope: inout [String: ScopeValue], depth: Int, budget: Nesting.StackBudget) throws -> CTFValue? {
        guard case .variant(let tag, let options) = type else { return nil }
        guard let tv = scope[tag] ?? outer(tag) else { throw fail(pos, field, "variant tag `\(tag)` not found") }
        guard let maps = tv.maps else { throw fail(pos, field, "variant tag `\(tag)` is not an enumeration") }
        let labels = enumLabels(maps, raw: tv.raw, signed: tv.signed)
        // The first option whose selecting label is one of the value's (as compiled).
        let tagLabels = Set(maps.map(\.label))
        guard let opt = options.first(where: { $0.selectingLabel(tagLabels.contains).map(labels.contains) ?? false }) else {
            throw fail(pos, field, "variant tag `\(tag)` value \(tv.int) selects no option")
        }
        let v = try walk(opt.type, &pos, field: opt.name, decode: decode, scope: &scope, depth: depth + 1, budget: budget)
        return decode ? .variant(option: opt.name, value: v!) : nil
    }

    /// An integer, enumeration, floating point number or string (no recursion).
    @inline(never)
    private func walkScalar(_ type: CTFType, _ pos: inout Int, field: String, decode: Bool, scope: inout [String: ScopeValue]) throws -> CTFValue? {
        pos = alignUp(pos, type.alignment, from: origin)
        switch type {
        case .integer(let it) where it.size > 64:
            guard pos + it.size <= end else { throw fail(pos, field, "integer of \(it.size) bits runs past the end of the packet content") }
            let limbs = readWideBits(base, pos, it.size, bigEndian: bigEndian(it.byteOrder))
            pos += it.size
            return decode ? .string(wideIntegerText(limbs: limbs, size: it.size, signed: it.isSigned)) : nil
        case .integer(let it), .enumeration(let it, _):
            guard pos + it.size <= end else { throw fail(pos, field, "integer of \(it.size) bits runs past the end of the packet content") }
            let raw = readBits(base, pos, it.size, bigEndian: bigEndian(it.byteOrder))
            pos += it.size
            let v: Int64 = it.isSigned ? signExtend(raw, it.size) : Int64(bitPattern: raw)
            if case .enumeration(_, let maps) = type {
                scope[field] = ScopeValue(raw: UInt64(bitPattern: v), signed: it.isSigned, maps: maps)
            } else {
                scope[field] = ScopeValue(raw: UInt64(bitPattern: v), signed: it.isSigned, maps: nil)
            }
            guard decode else { return nil }
            let iv: CTFValue = it.isSigned ? .signed(v) : .unsigned(raw)
            if case .enumeration(_, let maps) = type {
                return .enumeration(labels: enumLabels(maps, raw: raw, signed: it.isSigned), value: iv)
            }
            return iv
        case .floatingPoint(let ft):
            guard pos + ft.size <= end else { throw fail(pos, field, "floating point number runs past the end of the packet content") }
            let raw = readBits(base, pos, ft.size, bigEndian: bigEndian(ft.byteOrder))
            pos += ft.size
            guard decode else { return nil }
            return .float(ft.size == 32 ? Double(Float(bitPattern: UInt32(truncatingIfNeeded: raw))) : Double(bitPattern: raw))
        case .string:
            let (s, len) = try scanString(pos, field: field)
            pos += (len + 1) * 8
            return decode ? .string(s) : nil
        default:
            return nil
        }
    }

    @inline(never)
    private func walkElements(_ e: CTFType, count n: Int, _ pos: inout Int, field: String, decode: Bool, scope: inout [String: ScopeValue], depth: Int, budget: Nesting.StackBudget) throws -> CTFValue? {
        // Never trust the count: each element needs at least its minimum size (8 bits when that is zero-sized).
        // Elements that may hold nothing (an empty structure) fit anywhere, even at the packet's end, as
        // babeltrace2 reads them: at most 65 536 of them, which bounds the work.
        let minBits = max(1, e.minimumBitSize)
        let remaining = end - pos
        guard n <= remaining / minBits + 1 || (e.minimumBitSize == 0 && n <= Nesting.maxEmptyElements) else {
            throw fail(pos, field, "length \(n) exceeds what the remaining \(max(0, remaining) / 8) bytes of the packet can hold")
        }
        if e.isTextElement {
            pos = alignUp(pos, e.alignment, from: origin)
            guard pos + n * 8 <= end else { throw fail(pos, field, "text runs past the end of the packet content") }
            let p = base.advanced(by: pos >> 3).assumingMemoryBound(to: UInt8.self)
            var len = 0
            while len < n && p[len] != 0 { len += 1 }
            let s = decode ? String(decoding: UnsafeBufferPointer(start: p, count: len), as: UTF8.self) : ""
            pos += n * 8
            return decode ? .string(s) : nil
        }
        var out: [CTFValue] = []
        if decode { out.reserveCapacity(min(n, 4096)) }
        var dummy = scope
        for _ in 0..<n {
            let v = try walk(e, &pos, field: field, decode: decode, scope: &dummy, depth: depth + 1, budget: budget)
            if let v { out.append(v) }
        }
        return decode ? .array(out) : nil
    }

    func scanString(_ pos: Int, field: String) throws -> (String, Int) {
        guard pos & 7 == 0 else { throw fail(pos, field, "string not byte aligned") }
        let start = pos >> 3
        let limit = end >> 3
        guard start < limit else { throw fail(pos, field, "string starts at the end of the packet content") }
        let p = base.advanced(by: start)
        guard let nul = memchrRaw(p, limit - start) else {
            throw fail(pos, field, "unterminated string (no NUL before the end of the packet content)")
        }
        return (String(decoding: UnsafeRawBufferPointer(start: p, count: nul), as: UTF8.self), nul)
    }
}

/// An integer seen while walking, kept to resolve sequence lengths and variant tags.
struct ScopeValue {
    var raw: UInt64
    var signed: Bool
    var maps: [CTFEnumMapping]?
    var int: Int64 { Int64(bitPattern: raw) }
}

/// The labels of `maps` whose ranges contain the value.
func enumLabels(_ maps: [CTFEnumMapping], raw: UInt64, signed: Bool) -> [String] {
    var out: [String] = []
    for m in maps {
        if signed {
            let v = Int64(bitPattern: raw)
            if v >= m.lower && v <= m.upper { out.append(m.label) }
        } else {
            let lo = UInt64(bitPattern: m.lower), hi = UInt64(bitPattern: m.upper)
            if raw >= lo && raw <= hi { out.append(m.label) }
        }
    }
    return out
}

#if canImport(Glibc)
import Glibc
#endif

@inline(__always)
func memchrRaw(_ p: UnsafeRawPointer, _ n: Int) -> Int? {
    guard n > 0, let r = memchr(p, 0, n) else { return nil }
    return UnsafeRawPointer(r) - p
}

/// Reads an integer of any size (also wider than 64 bits) at bit `pos`, as 64-bit limbs, least significant first
/// (the caller checked the bounds). Same bit order as ``readBits(_:_:_:bigEndian:)``.
func readWideBits(_ base: UnsafeRawPointer, _ pos: Int, _ size: Int, bigEndian: Bool) -> [UInt64] {
    var limbs = [UInt64](repeating: 0, count: (size + 63) / 64)
    let p = base.assumingMemoryBound(to: UInt8.self)
    for i in 0..<size {
        let bit: Int
        if bigEndian {
            let j = pos + size - 1 - i          // the value's bit i is the stream's bit j, most significant first
            bit = Int(p[j >> 3] >> UInt8(7 - (j & 7))) & 1
        } else {
            let j = pos + i
            bit = Int(p[j >> 3] >> UInt8(j & 7)) & 1
        }
        if bit != 0 { limbs[i >> 6] |= 1 << UInt64(i & 63) }
    }
    return limbs
}

/// The text of an integer wider than 64 bits: `0x` and its hexadecimal digits (negative values of a signed
/// integer as `-0x` and the magnitude). babeltrace2 2.0 refuses such integers; this is the reader's own form.
public func wideIntegerText(limbs: [UInt64], size: Int, signed: Bool) -> String {
    var l = limbs
    var negative = false
    if signed && size > 0 && (l[(size - 1) >> 6] >> UInt64((size - 1) & 63)) & 1 != 0 {
        // Two's complement within `size` bits: magnitude = ~v + 1, masked to `size` bits.
        negative = true
        var carry: UInt64 = 1
        for i in l.indices {
            let (s, o) = (~l[i]).addingReportingOverflow(carry)
            l[i] = s
            carry = o ? 1 : 0
        }
        let top = size & 63
        if top != 0 { l[l.count - 1] &= (UInt64(1) << UInt64(top)) - 1 }
    }
    var digits = ""
    for (i, limb) in l.enumerated().reversed() {
        let h = String(limb, radix: 16)
        if digits.isEmpty {
            if limb != 0 || i == 0 { digits = h }
        } else {
            digits += String(repeating: "0", count: 16 - h.count) + h
        }
    }
    return (negative ? "-0x" : "0x") + digits
}

/// For formatters: the display text of a decoded value of an integer type wider than 64 bits (such values
/// decode to `.string` holding ``wideIntegerText(limbs:size:signed:)``), unquoted; nil for any other value or type.
public func wideIntegerDisplayText(_ value: CTFValue, _ type: CTFType) -> String? {
    guard case .integer(let it) = type, it.size > 64, case .string(let s) = value else { return nil }
    return s
}
