#if canImport(Glibc)
import Glibc
#endif

/// Formats events like babeltrace2's default text output, or as one JSON object per line.
public struct CTFEventFormatter {
    /// Output form.
    public enum Style: Sendable {
        /// babeltrace2-like text; timestamps as `[seconds.nanoseconds]` since the epoch (like `--clock-seconds`).
        case text
        /// One JSON object per event.
        case json
    }
    /// The output style.
    public var style: Style
    private var lastTimestamp: Int64?
    /// Plans per event class (resolved when first seen) and a scratch buffer. A copy of the formatter that
    /// formats gets its own (value semantics: copies may be used on different threads).
    private var cache = FormatterCache()

    /// Creates a formatter.
    public init(style: Style = .text) { self.style = style }

    /// Appends the current event of `stream` to `out` (with a trailing newline).
    public mutating func format(_ stream: CTFStream, into out: inout String) {
        if !isKnownUniquelyReferenced(&cache) { cache = FormatterCache() }
        let b = cache.scratch
        b.removeAll()
        format(stream, into: b)
        out += b.text
    }

    /// Appends the current event of `stream` to `out` as bytes (with a trailing newline): the fast path of
    /// `rltrace dump`, with no `String` or allocation per event (`out` writes its chunks as it fills).
    public mutating func format(_ stream: CTFStream, into out: ByteSink) {
        if !isKnownUniquelyReferenced(&cache) { cache = FormatterCache() }
        cache.plan(stream)._withUnsafeGuaranteedRef { plan in
            switch style {
            case .text: out.textEvent(stream, plan, previous: lastTimestamp)
            case .json: out.jsonEvent(stream, plan)
            }
        }
        lastTimestamp = stream.timestamp
    }

    // MARK: the decoded fallback (fields of compound types; byte for byte what the fast path writes otherwise)

    /// The text of an integer wider than 64 bits (decoded to `.string` holding its hexadecimal text):
    /// printed unquoted, as an integer (`0x…`, `-0x…`): babeltrace2 refuses such integers.
    static func wideIntegerText(_ v: CTFValue, _ t: CTFType) -> String {
        wideIntegerDisplayText(v, t) ?? text(v, t)
    }

    /// The JSON of an integer wider than 64 bits (see ``wideIntegerText(_:_:)``).
    static func wideIntegerJSON(_ v: CTFValue, _ t: CTFType) -> String {
        json(v)
    }

    /// Formats a value with its type (integer display bases, nested types).
    static func text(_ v: CTFValue, _ t: CTFType) -> String {
        var out = ""
        appendText(v, t, to: &out)
        return out
    }

    /// Formats a value without its type (decimal integers).
    static func text(_ v: CTFValue) -> String {
        var out = ""
        appendText(v, nil, to: &out)
        return out
    }

    // The value's text is appended to one string, one call per level of nesting with few locals: a
    // value nests as deep as its type (2048 levels, Nesting.swift), and building each level's text
    // from its children's strings cost the square of the depth in copies and a large frame a level.

    /// Appends `v`'s text; with its type `t` (nil: printed as untyped, integers in decimal).
    private static func appendText(_ v: CTFValue, _ t: CTFType?, to out: inout String) {
        switch v {
        case .array(let a):
            let e: CTFType?
            switch t { case .array(let et, _)?, .sequence(let et, _)?: e = et; default: e = nil }
            appendArray(a, e, to: &out)
        case .structure(let f):
            var types: [CTFField]? = nil
            if case .structure(let tf, _)? = t { types = tf }
            appendStructure(f, types, to: &out)
        case .variant(let o, let inner):
            var ot: CTFType? = nil
            if case .variant(_, let opts)? = t { ot = opts.first(where: { $0.name == o })?.type }
            out += "{ "
            appendText(inner, ot, to: &out)
            out += " }"
        default:
            out += scalarText(v, t)
        }
    }

    @inline(never)
    private static func appendArray(_ a: [CTFValue], _ e: CTFType?, to out: inout String) {
        if a.isEmpty { out += "[ ]"; return }
        out += "[ "
        for (i, x) in a.enumerated() {
            if i > 0 { out += ", " }
            out += "[\(i)] = "
            appendText(x, e, to: &out)
        }
        out += " ]"
    }

    @inline(never)
    private static func appendStructure(_ f: [CTFNamedValue], _ types: [CTFField]?, to out: inout String) {
        if f.isEmpty { out += "{ }"; return }
        out += "{ "
        for (i, nv) in f.enumerated() {
            if i > 0 { out += ", " }
            out += nv.name
            out += " = "
            appendText(nv.value, types?.first(where: { $0.name == nv.name })?.type, to: &out)
        }
        out += " }"
    }

    /// An integer, float, string or enumeration (with its type: the integer's display base).
    @inline(never)
    private static func scalarText(_ v: CTFValue, _ t: CTFType?) -> String {
        switch (v, t) {
        case (.signed, .integer(let it)?), (.unsigned, .integer(let it)?):
            return intText(v, it)
        case (.enumeration(let labels, let value), .enumeration(let it, _)?):
            return enumText(labels, intText(value, it))
        case (.signed(let i), _): return String(i)
        case (.unsigned(let u), _): return String(u)
        case (.float(let d), _): return formatG(d)
        case (.string(let s), _): return quote(s)
        case (.enumeration(let labels, let value), _): return enumText(labels, scalarText(value, nil))
        default: return text(v)
        }
    }

    private static func intText(_ v: CTFValue, _ it: CTFIntegerType) -> String {
        let bits: UInt64
        switch v { case .signed(let i): bits = UInt64(bitPattern: i); case .unsigned(let u): bits = u; default: return text(v) }
        let masked = displayedBits(bits, size: it.size, base: Int(it.base.rawValue), signed: it.isSigned)
        switch it.base {
        case .decimal: return text(v)
        case .hexadecimal: return "0x" + String(masked, radix: 16, uppercase: true)
        case .octal: return "0" + String(masked, radix: 8)
        case .binary:
            // babeltrace2 prints every bit of the field.
            let digits = String(masked, radix: 2)
            return "0b" + String(repeating: "0", count: max(0, it.size - digits.count)) + digits
        }
    }

    /// An enumeration in babeltrace2's text form: its label(s) and its container value.
    private static func enumText(_ labels: [String], _ container: String) -> String {
        let l: String
        switch labels.count {
        case 0: l = "<unknown>"
        case 1: l = quote(labels[0])
        default: l = "{ " + labels.map(quote).joined(separator: ", ") + " }"
        }
        return "( \(l) : container = \(container) )"
    }

    /// A string in babeltrace2's text form (``UntrustedText/quotedTerminal(_:)``).
    static func quote(_ s: String) -> String { UntrustedText.quotedTerminal(s) }

    static func json(_ v: CTFValue) -> String {
        var out = ""
        appendJSON(v, to: &out)
        return out
    }

    /// Appends `v`'s JSON (one call per level of nesting, as ``appendText(_:_:to:)``).
    private static func appendJSON(_ v: CTFValue, to out: inout String) {
        switch v {
        case .signed(let i): out += String(i)
        case .unsigned(let u): out += String(u)
        case .float(let d): out += d.isFinite ? "\(d)" : jsonString("\(d)")
        case .string(let s): out += jsonString(s)
        case .enumeration(let labels, let value):
            out += "{\"value\":"
            appendJSON(value, to: &out)
            out += ",\"labels\":[" + labels.map(jsonString).joined(separator: ",") + "]}"
        case .array(let a):
            out += "["
            for (i, x) in a.enumerated() { if i > 0 { out += "," }; appendJSON(x, to: &out) }
            out += "]"
        case .structure(let f):
            out += "{"
            for (i, nv) in f.enumerated() { if i > 0 { out += "," }; out += jsonString(nv.name) + ":"; appendJSON(nv.value, to: &out) }
            out += "}"
        case .variant(let o, let inner):
            out += "{" + jsonString(o) + ":"
            appendJSON(inner, to: &out)
            out += "}"
        }
    }

    /// A JSON string literal (``UntrustedText/json(_:)``).
    static func jsonString(_ s: String) -> String { UntrustedText.json(s) }
}

/// Formats a double like C's `%g` (glibc's `gcvt` with 6 digits is `%.6g`).
func formatG(_ d: Double) -> String {
    var buf = [UInt8](repeating: 0, count: 64)
    buf.withUnsafeMutableBytes { _ = gcvt(d, 6, $0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
    return String(decoding: buf.prefix(while: { $0 != 0 }), as: UTF8.self)
}
