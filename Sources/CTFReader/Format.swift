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

    /// Creates a formatter.
    public init(style: Style = .text) { self.style = style }

    /// Appends the current event of `stream` to `out` (with a trailing newline).
    public mutating func format(_ stream: CTFStream, into out: inout String) {
        switch style {
        case .text: formatText(stream, into: &out)
        case .json: formatJSON(stream, into: &out)
        }
        lastTimestamp = stream.timestamp
    }

    private func formatText(_ s: CTFStream, into out: inout String) {
        let ts = s.timestamp
        out += "["
        out += secondsString(ts)
        out += "] ("
        if let l = lastTimestamp {
            let d = ts - l
            out += d < 0 ? "-" : "+"
            out += secondsString(abs(d))
        } else {
            out += "+?.?????????"
        }
        out += ") "
        // Like babeltrace2: hostname, then the per-process trace's procname and (vpid).
        let env = s.environment
        var origin = env["hostname"] ?? ""
        if let pn = env["procname"] { origin += (origin.isEmpty ? "" : ":") + pn }
        if let vp = env["vpid"] { origin += (origin.isEmpty ? "" : ":") + "(\(vp))" }
        if !origin.isEmpty { out += origin; out += " " }
        out += s.eventClass.name
        out += ": "
        var groups: [String] = []
        if let cpu = s.cpuID { groups.append("{ cpu_id = \(cpu) }") }
        if s.hasStreamEventContext { groups.append(typedStruct(s.typedStreamEventContext())) }
        if s.eventClass.context != nil { groups.append(typedStruct(s.typedEventContext())) }
        groups.append(typedStruct(s.typedPayload()))
        out += groups.joined(separator: ", ")
        out += "\n"
    }

    private func secondsString(_ ns: Int64) -> String {
        let neg = ns < 0
        let a = neg ? UInt64(0) &- UInt64(bitPattern: ns) : UInt64(ns)
        let frac = String(a % 1_000_000_000)
        return (neg ? "-" : "") + String(a / 1_000_000_000) + "." + String(repeating: "0", count: 9 - frac.count) + frac
    }

    private func typedStruct(_ fields: [(String, CTFType, CTFValue)]) -> String {
        if fields.isEmpty { return "{ }" }
        return "{ " + fields.map { "\($0.0) = \(text($0.2, $0.1))" }.joined(separator: ", ") + " }"
    }

    /// Formats a value with its type (integer display bases, nested types).
    func text(_ v: CTFValue, _ t: CTFType) -> String {
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

    private func intText(_ v: CTFValue, _ it: CTFIntegerType) -> String {
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

    private func textStruct(_ fields: [CTFNamedValue]) -> String {
        if fields.isEmpty { return "{ }" }
        return "{ " + fields.map { "\($0.name) = \(text($0.value))" }.joined(separator: ", ") + " }"
    }

    func text(_ v: CTFValue) -> String {
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
    private func enumText(_ labels: [String], _ container: String) -> String {
        let l: String
        switch labels.count {
        case 0: l = "<unknown>"
        case 1: l = quote(labels[0])
        default: l = "{ " + labels.map(quote).joined(separator: ", ") + " }"
        }
        return "( \(l) : container = \(container) )"
    }

    /// A string in babeltrace2's text form (control characters as `\xNN`).
    func quote(_ s: String) -> String {
        escaped(s) { v in "\\x" + (v < 16 ? "0" : "") + String(v, radix: 16) }
    }

    private func formatJSON(_ s: CTFStream, into out: inout String) {
        out += "{\"timestamp_ns\":\(s.timestamp),\"name\":"
        out += jsonString(s.eventClass.name)
        if let cpu = s.cpuID { out += ",\"cpu_id\":\(cpu)" }
        if let h = s.environment["hostname"] { out += ",\"hostname\":" + jsonString(h) }
        let ctx = s.streamEventContext() + s.eventContext()
        if !ctx.isEmpty { out += ",\"context\":" + json(.structure(ctx)) }
        out += ",\"fields\":" + json(.structure(s.payload()))
        out += "}\n"
    }

    func json(_ v: CTFValue) -> String {
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

    /// A JSON string literal (control characters as `\u00NN`).
    func jsonString(_ s: String) -> String {
        escaped(s) { v in
            let h = String(v, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - h.count) + h
        }
    }

    /// `s` in double quotes with `"`, `\`, newline, tab and return escaped, and other control
    /// characters written by `control`.
    private func escaped(_ s: String, control: (UInt32) -> String) -> String {
        var r = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": r += "\\\""
            case "\\": r += "\\\\"
            case "\n": r += "\\n"
            case "\t": r += "\\t"
            case "\r": r += "\\r"
            default:
                if c.value < 0x20 { r += control(c.value) } else { r.unicodeScalars.append(c) }
            }
        }
        return r + "\""
    }
}

/// Formats a double like C's `%g`.
func formatG(_ d: Double) -> String {
    var buf = [CChar](repeating: 0, count: 64)
    _ = withVaList([d]) { vsnprintf(&buf, 64, "%g", $0) }
    return String(cString: buf)
}
