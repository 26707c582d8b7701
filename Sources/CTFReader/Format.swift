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
        b.withUnsafeBytes { out += String(decoding: $0, as: UTF8.self) }
    }

    /// Appends the current event of `stream` to `out` as bytes (with a trailing newline): the fast path of
    /// `rltrace dump`, with no `String` or allocation per event. Flush `out` when it has grown large enough.
    public mutating func format(_ stream: CTFStream, into out: CTFOutputBuffer) {
        if !isKnownUniquelyReferenced(&cache) { cache = FormatterCache() }
        cache.plan(stream)._withUnsafeGuaranteedRef { plan in
            switch style {
            case .text: out.w.pointee.textEvent(stream, plan, previous: lastTimestamp)
            case .json: out.w.pointee.jsonEvent(stream, plan)
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
        switch (v, t) {
        case (.signed, .integer(let it)), (.unsigned, .integer(let it)):
            return intText(v, it)
        case (.enumeration(let labels, let value), .enumeration(let it, _)):
            return enumText(labels, intText(value, it))
        case (.array(let a), .array(let e, _)), (.array(let a), .sequence(let e, _)):
            if a.isEmpty { return "[ ]" }
            return "[ " + a.enumerated().map { "[\($0.offset)] = \(text($0.element, e))" }.joined(separator: ", ") + " ]"
        case (.structure(let f), .structure(let tf, _)):
            if f.isEmpty { return "{ }" }
            return "{ " + f.map { nv in
                let ft = tf.first(where: { $0.name == nv.name })?.type
                return "\(nv.name) = \(ft.map { text(nv.value, $0) } ?? text(nv.value))"
            }.joined(separator: ", ") + " }"
        case (.variant(let o, let inner), .variant(_, let opts)):
            let ot = opts.first(where: { $0.name == o })?.type
            return "{ \(ot.map { text(inner, $0) } ?? text(inner)) }"
        default:
            return text(v)
        }
    }

    private static func intText(_ v: CTFValue, _ it: CTFIntegerType) -> String {
        let bits: UInt64
        switch v { case .signed(let i): bits = UInt64(bitPattern: i); case .unsigned(let u): bits = u; default: return text(v) }
        let masked = it.size >= 64 ? bits : bits & ((UInt64(1) << UInt64(it.size)) - 1)
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

    private static func textStruct(_ fields: [CTFNamedValue]) -> String {
        if fields.isEmpty { return "{ }" }
        return "{ " + fields.map { "\($0.name) = \(text($0.value))" }.joined(separator: ", ") + " }"
    }

    static func text(_ v: CTFValue) -> String {
        switch v {
        case .signed(let i): return String(i)
        case .unsigned(let u): return String(u)
        case .float(let d): return formatG(d)
        case .string(let s): return quote(s)
        case .enumeration(let labels, let value):
            return enumText(labels, text(value))
        case .array(let a):
            if a.isEmpty { return "[ ]" }
            return "[ " + a.enumerated().map { "[\($0.offset)] = \(text($0.element))" }.joined(separator: ", ") + " ]"
        case .structure(let f): return textStruct(f)
        case .variant(_, let v): return "{ \(text(v)) }"
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

    /// A string in babeltrace2's text form, escaped as its `pretty` sink does (``StringEscapes``).
    static func quote(_ s: String) -> String { escaped(s, json: false) }

    static func json(_ v: CTFValue) -> String {
        switch v {
        case .signed(let i): return String(i)
        case .unsigned(let u): return String(u)
        case .float(let d): return d.isFinite ? "\(d)" : jsonString("\(d)")
        case .string(let s): return jsonString(s)
        case .enumeration(let labels, let value):
            return "{\"value\":\(json(value)),\"labels\":[" + labels.map(jsonString).joined(separator: ",") + "]}"
        case .array(let a): return "[" + a.map(json).joined(separator: ",") + "]"
        case .structure(let f): return "{" + f.map { jsonString($0.name) + ":" + json($0.value) }.joined(separator: ",") + "}"
        case .variant(let o, let v): return "{" + jsonString(o) + ":" + json(v) + "}"
        }
    }

    /// A JSON string literal (``StringEscapes``).
    static func jsonString(_ s: String) -> String { escaped(s, json: true) }

    /// `s` in double quotes, escaped for text or JSON as ``ByteWriter`` escapes the bytes it quotes.
    private static func escaped(_ s: String, json: Bool) -> String {
        var r = "\""
        for c in s.unicodeScalars {
            guard c.value < 0x80, StringEscapes.needsEscape(UInt8(c.value), json: json) else { r.unicodeScalars.append(c); continue }
            let b = UInt8(c.value)
            if let l = StringEscapes.named(b, json: json) {
                r += "\\" + String(UnicodeScalar(l))
            } else {
                let hex = (b < 16 ? "0" : "") + String(b, radix: 16)
                r += json ? "\\u00" + hex : "\\x" + hex
            }
        }
        return r + "\""
    }
}

/// Formats a double like C's `%g` (glibc's `gcvt` with 6 digits is `%.6g`).
func formatG(_ d: Double) -> String {
    var buf = [UInt8](repeating: 0, count: 64)
    buf.withUnsafeMutableBytes { _ = gcvt(d, 6, $0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
    return String(decoding: buf.prefix(while: { $0 != 0 }), as: UTF8.self)
}
