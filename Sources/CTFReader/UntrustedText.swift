/// Text read from a trace (item, thread, process and mode names, event and field names, string fields,
/// stack symbols, file names) written into each output format: one rule per format, used by every
/// writer — `rltrace dump`'s byte formatter, the renderers of `report`, `timeline`, `histogram`,
/// `hangs`, `diff`, `top` and `export`, and the JSON their encoders produce. docs/output-escaping.md
/// lists the rules and the outputs that use them.
///
/// - Terminal text (``terminal(_:)``): C0 control characters and DEL as babeltrace2's `pretty` sink
///   writes them (`\a \b \e \f \n \r \t \v`, the others `\xNN`); the C1 controls (U+0080–U+009F)
///   and the bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E,
///   U+2066–U+2069) as `\u{NNNN}` (lowercase hexadecimal, no leading zeros); a backslash as `\\`, so
///   every escape reads one way. ``quotedTerminal(_:)`` is the same in double quotes, with `"`, `'`
///   and `?` escaped too: a babeltrace2 string literal (`rltrace dump`).
/// - JSON (``json(_:)``): `"` and `\`, `\n \r \t` by name, every other C0 control, DEL, the C1
///   controls and the bidirectional formatting characters as `\uNNNN` — valid JSON that parses back
///   to the very string, and shows nothing raw when printed. ``hardenJSON(_:)`` gives the JSON of an
///   encoder (which escapes only C0) the same escapes.
/// - CSV (``csv(_:)``): the terminal form, a `'` before a leading `=`, `+`, `-` or `@` (so that a
///   spreadsheet does not take the field for a formula), in RFC 4180 double quotes when it holds a
///   comma, a quote or leading or trailing blanks.
/// - HTML (``html(_:)``): the terminal form with `& < > " '` as entities.
///
/// Invalid UTF-8 never reaches these: a trace's strings become Swift strings (or are decoded so) with
/// each invalid sequence replaced by U+FFFD, which every format shows as it is.
public enum UntrustedText {
    /// `s` for a terminal (see ``UntrustedText``); `s` itself when nothing in it is escaped.
    public static func terminal(_ s: String) -> String {
        var s = s
        return s.withUTF8 { u in
            guard let p = u.baseAddress, firstEscape(p, u.count, .terminal) < u.count else { return nil }
            return render(p, u.count, .terminal)
        } ?? s
    }

    /// `s` as a babeltrace2 string literal: in double quotes, escaped as ``terminal(_:)`` and with `"`,
    /// `'` and `?` escaped (as `rltrace dump` writes string fields).
    public static func quotedTerminal(_ s: String) -> String {
        var s = s
        return s.withUTF8 { u in
            var out = EscapedBytes()
            out.put(34)
            if let p = u.baseAddress { escape(p, u.count, .quoted, into: &out) }
            out.put(34)
            return String(decoding: out.bytes, as: UTF8.self)
        }
    }

    /// `s` as a JSON string literal (double quotes included).
    public static func json(_ s: String) -> String {
        var out: [UInt8] = []
        appendJSON(s, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `s` as a JSON string literal (double quotes included) to `out`.
    public static func appendJSON(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { appendJSON($0, to: &out) }
    }

    /// Appends the UTF-8 text `bytes` as a JSON string literal (double quotes included) to `out`;
    /// invalid UTF-8 in `bytes` is written as U+FFFD.
    public static func appendJSON(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        guard let p = bytes.baseAddress else { out.append(34); out.append(34); return }
        let n = bytes.count
        guard validUTF8(p, n) else { return appendJSON(String(decoding: bytes, as: UTF8.self), to: &out) }
        out.append(34)
        if firstEscape(p, n, .json) == n {
            out.append(contentsOf: bytes)
        } else {
            var o = EscapedBytes(out)
            out = []
            escape(p, n, .json, into: &o)
            out = o.bytes
        }
        out.append(34)
    }

    /// The JSON text `encoded` (an encoder's output: valid JSON) with what ``json(_:)`` escapes and
    /// the encoder may have left raw — DEL, the C1 controls, the bidirectional formatting
    /// characters — escaped as `\uNNNN`. Outside its strings JSON is ASCII, so only strings change,
    /// and each decodes to the same text.
    public static func hardenJSON(_ encoded: [UInt8]) -> String {
        encoded.withUnsafeBufferPointer { u in
            guard let p = u.baseAddress else { return "" }
            guard firstEscape(p, u.count, .encodedJSON) < u.count else { return String(decoding: u, as: UTF8.self) }
            return render(p, u.count, .encodedJSON)
        }
    }

    /// ``hardenJSON(_:)`` of a string.
    public static func hardenJSON(_ encoded: String) -> String {
        hardenJSON(Array(encoded.utf8))
    }

    /// `s` as a CSV field (see ``UntrustedText``): the terminal form; a `'` first when it starts
    /// with `=`, `+`, `-` or `@`; in double quotes (inner ones doubled) when it holds a comma, a
    /// double quote, or blanks at either end.
    public static func csv(_ s: String) -> String {
        var t = terminal(s)
        if let f = t.utf8.first, f == 0x3D || f == 0x2B || f == 0x2D || f == 0x40 { t = "'" + t }
        let quote = t.utf8.contains { $0 == 0x2C || $0 == 0x22 } || t.utf8.first == 0x20 || t.utf8.last == 0x20
        return quote ? "\"" + t.replacing("\"", with: "\"\"") + "\"" : t
    }

    /// `s` for HTML text or an attribute value: the terminal form with `&`, `<`, `>`, `"` and `'` as
    /// entities.
    public static func html(_ s: String) -> String { htmlEntities(terminal(s)) }

    /// `s`, already in terminal form (a line of rltrace's text output), with `&`, `<`, `>`, `"` and
    /// `'` as entities (its escapes are left as they are).
    public static func htmlEntities(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == 0x26 || $0 == 0x3C || $0 == 0x3E || $0 == 0x22 || $0 == 0x27 }) else { return s }
        var o = ""
        o.reserveCapacity(s.utf8.count + 16)
        for c in s.unicodeScalars {
            switch c {
            case "&": o += "&amp;"
            case "<": o += "&lt;"
            case ">": o += "&gt;"
            case "\"": o += "&quot;"
            case "'": o += "&#39;"
            default: o.unicodeScalars.append(c)
            }
        }
        return o
    }

    // MARK: the one escaping loop

    /// The escapes in force: the terminal's (bare, or in a babeltrace2 string literal), a JSON
    /// string's, or those an encoder's JSON lacks (DEL and the code points from U+0080).
    enum Style { case terminal, quoted, json, encodedJSON }

    /// Whether the ASCII byte `c` is escaped in `style`.
    @inline(__always)
    static func escapesASCII(_ c: UInt8, _ style: Style) -> Bool {
        switch style {
        case .terminal: return c < 0x20 || c == 0x7F || c == 0x5C
        case .quoted: return c < 0x20 || c == 0x7F || c == 0x5C || c == 0x22 || c == 0x27 || c == 0x3F
        case .json: return c < 0x20 || c == 0x7F || c == 0x5C || c == 0x22
        case .encodedJSON: return c == 0x7F
        }
    }

    /// The code point escaped at `p[i]` (a lead byte ≥ 0x80 of valid UTF-8) and its length in bytes,
    /// or nil: the C1 controls (`C2 80`…`C2 9F`), U+061C (`D8 9C`), U+200E and U+200F (`E2 80 8E`,
    /// `E2 80 8F`), U+202A…U+202E (`E2 80 AA`…`E2 80 AE`) and U+2066…U+2069 (`E2 81 A6`…`E2 81 A9`).
    @inline(__always)
    static func escapedScalar(_ p: UnsafePointer<UInt8>, _ i: Int, _ n: Int) -> (value: UInt32, length: Int)? {
        let c = p[i]
        if c == 0xC2, i + 1 < n, p[i + 1] < 0xA0 { return (UInt32(p[i + 1]), 2) }
        if c == 0xD8, i + 1 < n, p[i + 1] == 0x9C { return (0x61C, 2) }
        if c == 0xE2, i + 2 < n {
            let b = p[i + 1], d = p[i + 2]
            if b == 0x80 && (d == 0x8E || d == 0x8F || (d >= 0xAA && d <= 0xAE)) { return (0x2000 | UInt32(d & 0x3F), 3) }
            if b == 0x81 && d >= 0xA6 && d <= 0xA9 { return (0x2040 | UInt32(d & 0x3F), 3) }
        }
        return nil
    }

    /// The index of the first byte of the `n` at `p` that `style` escapes (`n` when none).
    @inline(__always)
    static func firstEscape(_ p: UnsafePointer<UInt8>, _ n: Int, _ style: Style) -> Int {
        var i = 0
        while i < n {
            let c = p[i]
            if c < 0x80 ? escapesASCII(c, style) : (c == 0xC2 || c == 0xD8 || c == 0xE2) && escapedScalar(p, i, n) != nil { return i }
            i &+= 1
        }
        return n
    }

    /// Writes the `n` bytes at `p` (valid UTF-8) to `out` escaped in `style`: runs that need no
    /// escape are copied whole. (Continuation bytes are 0x80…0xBF, never a lead byte the escapes
    /// start with, so the scan goes byte by byte.)
    @inline(__always)
    static func escape<O: EscapeOutput>(_ p: UnsafePointer<UInt8>, _ n: Int, _ style: Style, into out: inout O) {
        var run = 0
        var i = 0
        while i < n {
            let c = p[i]
            if c < 0x80 {
                if !escapesASCII(c, style) { i &+= 1; continue }
                if i > run { out.put(p + run, i &- run) }
                writeASCIIEscape(c, style, into: &out)
                i &+= 1
            } else {
                guard c == 0xC2 || c == 0xD8 || c == 0xE2, let e = escapedScalar(p, i, n) else { i &+= 1; continue }
                if i > run { out.put(p + run, i &- run) }
                writeScalarEscape(e.value, style, into: &out)
                i &+= e.length
            }
            run = i
        }
        if n > run { out.put(p + run, n &- run) }
    }

    /// Lowercase hexadecimal digits.
    private static var hexDigits: StaticString { "0123456789abcdef" }

    @inline(never)
    static func writeASCIIEscape<O: EscapeOutput>(_ c: UInt8, _ style: Style, into out: inout O) {
        let h = hexDigits.utf8Start
        out.put(0x5C)
        let terminal = style == .terminal || style == .quoted
        switch c {
        case 0x22, 0x5C, 0x27, 0x3F: out.put(c)
        case 0x0A: out.put(0x6E)
        case 0x09: out.put(0x74)
        case 0x0D: out.put(0x72)
        case 0x07 where terminal: out.put(0x61)
        case 0x08 where terminal: out.put(0x62)
        case 0x1B where terminal: out.put(0x65)
        case 0x0C where terminal: out.put(0x66)
        case 0x0B where terminal: out.put(0x76)
        default:
            if terminal {
                out.put(0x78)
            } else {
                out.put(0x75); out.put(0x30); out.put(0x30)
            }
            out.put(h[Int(c >> 4)]); out.put(h[Int(c & 15)])
        }
    }

    @inline(never)
    static func writeScalarEscape<O: EscapeOutput>(_ v: UInt32, _ style: Style, into out: inout O) {
        let h = hexDigits.utf8Start
        out.put(0x5C); out.put(0x75)
        if style == .terminal || style == .quoted {
            out.put(0x7B)
            var shift = 12
            while shift > 0 && v >> UInt32(shift) == 0 { shift -= 4 }
            while shift >= 0 { out.put(h[Int((v >> UInt32(shift)) & 15)]); shift -= 4 }
            out.put(0x7D)
        } else {
            var shift = 12
            while shift >= 0 { out.put(h[Int((v >> UInt32(shift)) & 15)]); shift -= 4 }
        }
    }

    /// The `n` bytes at `p` (valid UTF-8) escaped in `style`, as a string.
    private static func render(_ p: UnsafePointer<UInt8>, _ n: Int, _ style: Style) -> String {
        var out = EscapedBytes()
        out.bytes.reserveCapacity(n + 16)
        escape(p, n, style, into: &out)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    /// Whether the `n` bytes at `p` are valid UTF-8.
    static func validUTF8(_ p: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        var i = 0
        while i < n && p[i] < 0x80 { i &+= 1 }
        if i == n { return true }
        var it = UnsafeBufferPointer(start: p + i, count: n - i).makeIterator()
        var d = UTF8()
        while true {
            switch d.decode(&it) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}

/// Where ``UntrustedText``'s loop writes: a growable byte buffer.
protocol EscapeOutput {
    /// Appends one byte.
    mutating func put(_ b: UInt8)
    /// Appends `n` bytes from `p`.
    mutating func put(_ p: UnsafePointer<UInt8>, _ n: Int)
}

/// Bytes in an array (the `String` forms).
struct EscapedBytes: EscapeOutput {
    var bytes: [UInt8]
    init(_ bytes: [UInt8] = []) { self.bytes = bytes }
    mutating func put(_ b: UInt8) { bytes.append(b) }
    mutating func put(_ p: UnsafePointer<UInt8>, _ n: Int) { bytes.append(contentsOf: UnsafeBufferPointer(start: p, count: n)) }
}
