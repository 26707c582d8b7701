/// Parses CTF 1.8 TSDL metadata text into a ``CTFMetadata``.
struct MetadataParser {
    var toks: [Token]
    var p = 0
    let path: String
    /// Type alias scopes (innermost last). Named struct/enum/variant types are stored as "struct NAME" etc.
    var scopes: [[String: CTFType]] = [[:]]
    var meta = CTFMetadata()
    var sawTrace = false
    var depth = 0
    /// Fields declared so far in each enclosing structure or variant body (innermost last), by unescaped name,
    /// to check variant tags where they are declared.
    var fieldStack: [[String: CTFType]] = []
    /// Byte order of the metadata packet headers when the metadata is packetized (nil for plain text).
    let packetByteOrder: CTFByteOrder?

    /// CTF 1.8 keywords (the TSDL lexer's reserved words): never a field, typedef or variant tag name.
    static let keywords: Set<String> = [
        "align", "callsite", "const", "char", "clock", "double", "enum", "env", "event", "floating_point", "float",
        "integer", "int", "long", "short", "signed", "stream", "string", "struct", "trace", "typealias", "typedef",
        "unsigned", "variant", "void", "_Bool", "_Complex", "_Imaginary",
    ]
    /// Keywords that are C type specifiers: a typealias may name a type with them (`typealias uint32_t := int;`).
    static let cTypeKeywords: Set<String> = [
        "const", "char", "double", "float", "int", "long", "short", "signed", "unsigned", "void", "_Bool", "_Complex", "_Imaginary",
    ]

    init(text: String, path: String, packetByteOrder: CTFByteOrder? = nil) throws {
        var lexer = Lexer(text: text, path: path)
        self.toks = try lexer.tokenize()
        self.path = path
        self.packetByteOrder = packetByteOrder
        meta.text = text
    }

    // MARK: token helpers

    var cur: Token { toks[p] }
    func peek(_ k: Int = 1) -> Token { toks[min(p + k, toks.count - 1)] }
    mutating func advance() -> Token { let t = toks[p]; if p < toks.count - 1 { p += 1 }; return t }
    func err(_ msg: String, _ t: Token? = nil) -> CTFReaderError {
        let t = t ?? cur
        return .metadataSyntax(path: path, line: t.line, column: t.column, message: msg)
    }
    func isPunct(_ s: String) -> Bool { cur.kind == .punct && cur.text == s }
    func isIdent(_ s: String) -> Bool { cur.kind == .identifier && cur.text == s }
    mutating func expect(_ s: String) throws {
        guard cur.text == s && (cur.kind == .punct || cur.kind == .identifier) else {
            throw err("expected `\(s)` but found `\(cur.text)`")
        }
        _ = advance()
    }
    mutating func expectIdentifier(_ what: String) throws -> String {
        guard cur.kind == .identifier else { throw err("expected \(what) but found `\(cur.text)`") }
        return advance().text
    }

    func lookup(_ name: String) -> CTFType? {
        for s in scopes.reversed() { if let t = s[name] { return t } }
        return nil
    }
    /// Declares a type name in the innermost scope; a name declared twice in one scope is an error (CTF 1.8 §7.3).
    mutating func define(_ name: String, _ t: CTFType, at tok: Token) throws {
        guard scopes[scopes.count - 1][name] == nil else {
            throw semantic("`\(name)` is already declared in this scope (a name may be declared once per scope)", tok)
        }
        scopes[scopes.count - 1][name] = t
    }

    /// Records a warning about the metadata (unknown attribute, ignored declaration) at a token.
    mutating func warn(_ msg: String, _ t: Token) {
        // Byte offset of the token in the metadata text, from its line and column.
        var line = 1, off = 0
        let bytes = meta.text.utf8
        var it = bytes.makeIterator()
        while line < t.line, let b = it.next() { off += 1; if b == 10 { line += 1 } }
        meta.warnings.append(CTFWarning(path: path, offset: off + t.column - 1, message: "line \(t.line), column \(t.column): \(msg)"))
    }

    /// Refuses a reserved keyword used as a name.
    func checkNotKeyword(_ name: String, _ t: Token, _ what: String) throws {
        if MetadataParser.keywords.contains(name) {
            throw semantic("`\(name)` is a reserved keyword and cannot be used as \(what)", t)
        }
    }

    // MARK: top level

    mutating func parse() throws -> CTFMetadata {
        while cur.kind != .eof {
            if isPunct(";") { _ = advance(); continue }
            if cur.kind == .identifier && peek().kind == .punct && peek().text == "{" &&
                ["trace", "env", "clock", "stream", "event", "callsite"].contains(cur.text) {
                try parseBlock()
                continue
            }
            if isIdent("typealias") { try parseTypealias(); continue }
            if isIdent("typedef") { try parseTypedef(); continue }
            // A type declaration such as `struct name { ... } align(8);`, possibly with declarators (ignored).
            // Like C, one declaration may hold several specifiers (`struct a { … } struct b { … };`).
            _ = try parseTypeSpecifier(allowDeclarator: true)
            while cur.kind == .identifier && ["struct", "variant", "enum"].contains(cur.text) {
                _ = try parseTypeSpecifier(allowDeclarator: true)
            }
            while !isPunct(";") {
                if cur.kind == .eof { throw err("expected `;`") }
                _ = advance()
            }
            _ = advance()
        }
        guard sawTrace else { throw CTFReaderError.metadataSemantic(path: path, message: "no `trace` block") }
        if meta.streamClasses.isEmpty {
            meta.streamClasses[0] = CTFStreamClass(id: 0)
        }
        for e in meta.eventClasses where meta.streamClasses[e.streamID] == nil {
            throw CTFReaderError.metadataSemantic(path: path, message: "event `\(e.name)` refers to undeclared stream \(e.streamID)")
        }
        try mapUnmappedTimestamps()
        return meta
    }

    /// Maps the time fields no clock maps (`timestamp` in an event header; `timestamp_begin` and `timestamp_end` in a
    /// packet context; at any depth of structures and variants) to the trace's clock, as babeltrace2 reads them:
    /// its only clock, or, when it declares none, an implicit 1 GHz clock named `default` with no offset (the
    /// timestamps of lttng-modules 2.0's traces, for one). With several clocks the choice would be a guess: refused.
    mutating func mapUnmappedTimestamps() throws {
        func mapped(_ t: CTFType, _ names: Set<String>, _ scope: String) throws -> CTFType {
            switch t {
            case .structure(let fs, let a):
                return .structure(try fs.map { try mappedField($0, names, scope) }, alignment: a)
            case .variant(let tag, let fs):
                return .variant(tag: tag, options: try fs.map { try mappedField($0, names, scope) })
            default:
                return t
            }
        }
        func mappedField(_ f: CTFField, _ names: Set<String>, _ scope: String) throws -> CTFField {
            var f = f
            switch f.type {
            case .integer(var i) where names.contains(f.name) && i.mappedClock == nil:
                i.mappedClock = try implicitClock(scope + "." + f.name)
                f.type = .integer(i)
            case .enumeration(var i, let maps) where names.contains(f.name) && i.mappedClock == nil:
                i.mappedClock = try implicitClock(scope + "." + f.name)
                f.type = .enumeration(i, maps)
            default:
                f.type = try mapped(f.type, names, scope + "." + f.name)
            }
            return f
        }
        func implicitClock(_ field: String) throws -> String {
            switch meta.clocks.count {
            case 0:
                meta.clocks["default"] = CTFClock(name: "default")
                return "default"
            case 1:
                return meta.clocks.first!.key
            default:
                throw CTFReaderError.metadataSemantic(path: path, message: "field `\(field)` is mapped to no clock and the trace declares \(meta.clocks.count) (\(meta.clocks.keys.sorted().joined(separator: ", "))): add `map = clock.NAME.value`")
            }
        }
        for sid in meta.streamClasses.keys.sorted() {
            var sc = meta.streamClasses[sid]!
            sc.eventHeader = try sc.eventHeader.map { try mapped($0, ["timestamp"], "stream.event.header") }
            sc.packetContext = try sc.packetContext.map { try mapped($0, ["timestamp_begin", "timestamp_end"], "stream.packet.context") }
            meta.streamClasses[sid] = sc
        }
    }

    mutating func parseTypealias() throws {
        try expect("typealias")
        let t = try parseTypeSpecifier(allowDeclarator: false)
        try expect(":=")
        var name: [String] = []
        let nameTok = cur
        while cur.kind == .identifier {
            // C type keywords may form an alias name (`unsigned int`); CTF's own keywords may not.
            if MetadataParser.keywords.contains(cur.text) && !MetadataParser.cTypeKeywords.contains(cur.text) {
                throw semantic("`\(cur.text)` is a reserved keyword and cannot be used as a typealias name", cur)
            }
            name.append(advance().text)
        }
        guard !name.isEmpty else { throw err("expected alias name after `:=`") }
        // A pointer or array declarator in an alias is not supported.
        if isPunct("*") || isPunct("[") { throw err("unsupported declarator in typealias `\(name.joined(separator: " "))`") }
        try expect(";")
        try define(name.joined(separator: " "), t, at: nameTok)
    }

    mutating func parseTypedef() throws {
        try expect("typedef")
        let t = try parseTypeSpecifier(allowDeclarator: true)
        let d = try parseDeclarator(base: t)
        try checkNotKeyword(d.raw.text, d.raw, "a typedef name")
        try expect(";")
        try define(d.raw.text, d.type, at: d.raw)
    }

    // MARK: blocks

    enum Value {
        case int(Int64, String)
        case string(String)
        case ident(String)
        case type(CTFType)
    }

    mutating func parseBlock() throws {
        let kindTok = advance()
        let kind = kindTok.text
        try expect("{")
        scopes.append([:])
        var entries: [(String, Value, Token)] = []
        while !isPunct("}") {
            if cur.kind == .eof { throw err("unterminated `\(kind)` block") }
            if isPunct(";") { _ = advance(); continue }
            if isIdent("typealias") { try parseTypealias(); continue }
            if isIdent("typedef") { try parseTypedef(); continue }
            let keyTok = cur
            var key = try expectIdentifier("attribute name")
            while isPunct(".") { _ = advance(); key += "." + (try expectIdentifier("attribute name")) }
            if isPunct(":=") {
                _ = advance()
                let t = try parseTypeSpecifier(allowDeclarator: false)
                entries.append((key, .type(t), keyTok))
            } else if isPunct("=") {
                _ = advance()
                entries.append((key, try parseValue(), keyTok))
            } else {
                throw err("expected `=` or `:=` after `\(key)`")
            }
            try expect(";")
        }
        _ = advance()
        if isPunct(";") { _ = advance() }
        scopes.removeLast()
        try apply(kind: kind, entries: entries, at: kindTok)
    }

    mutating func parseValue() throws -> Value {
        if isPunct("-") || isPunct("+") {
            let neg = advance().text == "-"
            guard cur.kind == .integer else { throw err("expected a number") }
            let t = advance()
            guard let v = parseIntLiteral(t.text) else { throw err("bad integer literal `\(t.text)`", t) }
            return .int(neg ? 0 &- v : v, (neg ? "-" : "") + t.text)
        }
        switch cur.kind {
        case .integer:
            let t = advance()
            guard let v = parseIntLiteral(t.text) else { throw err("bad integer literal `\(t.text)`", t) }
            return .int(v, t.text)
        case .string:
            return .string(advance().text)
        case .identifier:
            var s = advance().text
            while isPunct(".") { _ = advance(); s += "." + (try expectIdentifier("name")) }
            return .ident(s)
        default:
            throw err("expected a value but found `\(cur.text)`")
        }
    }

    func parseIntLiteral(_ raw: String) -> Int64? {
        var s = Substring(raw)
        while let l = s.last, "uUlL".contains(l) { s = s.dropLast() }
        if s.hasPrefix("0x") || s.hasPrefix("0X") {
            return UInt64(s.dropFirst(2), radix: 16).map { Int64(bitPattern: $0) }
        }
        if s.count > 1 && s.hasPrefix("0") {
            return UInt64(s.dropFirst(), radix: 8).map { Int64(bitPattern: $0) }
        }
        return UInt64(s, radix: 10).map { Int64(bitPattern: $0) }
    }

    func semantic(_ msg: String, _ t: Token) -> CTFReaderError {
        .metadataSyntax(path: path, line: t.line, column: t.column, message: msg)
    }

    mutating func apply(kind: String, entries: [(String, Value, Token)], at tok: Token) throws {
        func intValue(_ v: Value, _ t: Token, _ key: String) throws -> Int64 {
            if case .int(let i, _) = v { return i }
            throw semantic("`\(key)` must be an integer", t)
        }
        func uuidValue(_ v: Value, _ t: Token, _ key: String) throws -> String {
            guard case .string(let u) = v else { throw semantic("`\(key)` must be a string literal UUID", t) }
            // xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx: 36 characters, hex digits and dashes at 8, 13, 18, 23.
            let b = Array(u.utf8)
            let ok = b.count == 36 && b.indices.allSatisfy { i in
                [8, 13, 18, 23].contains(i) ? b[i] == UInt8(ascii: "-")
                    : (b[i] >= 48 && b[i] <= 57) || (b[i] | 0x20 >= 97 && b[i] | 0x20 <= 102)
            }
            guard ok else {
                let shown = u.count > 40 ? String(u.prefix(40)) + "…" : u
                let printable = shown.unicodeScalars.map { $0.value < 32 ? "\\x" + String($0.value, radix: 16) : String($0) }.joined()
                throw semantic("`\(key)` \"\(printable)\" (\(b.count) bytes) is not a UUID (expected 36 characters xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx of hex digits)", t)
            }
            return u
        }
        let known: [String: Set<String>] = [
            "trace": ["major", "minor", "uuid", "byte_order", "packet.header"],
            "clock": ["name", "uuid", "description", "freq", "precision", "offset_s", "offset", "absolute"],
            "stream": ["id", "packet.context", "event.header", "event.context"],
            "event": ["name", "id", "stream_id", "loglevel", "context", "fields", "model.emf.uri"],
        ]
        if let k = known[kind] {
            for (key, _, t) in entries where !k.contains(key) {
                warn("unknown attribute `\(key)` in `\(kind)` block ignored", t)
            }
        }
        func stringValue(_ v: Value) -> String {
            switch v {
            case .int(let i, _): return String(i)
            case .string(let s): return s
            case .ident(let s): return s
            case .type: return ""
            }
        }
        switch kind {
        case "trace":
            sawTrace = true
            for (k, v, t) in entries {
                switch k {
                case "byte_order":
                    let s = stringValue(v)
                    switch s {
                    case "le", "little": meta.byteOrder = .little
                    case "be", "big", "network": meta.byteOrder = .big
                    default: throw semantic("trace byte_order must be le or be, not `\(s)`", t)
                    }
                    if let pb = packetByteOrder, pb != meta.byteOrder {
                        throw semantic("trace byte_order = \(s) contradicts the \(pb == .big ? "big" : "little")-endian headers of the packetized metadata (they must match)", t)
                    }
                case "uuid": meta.uuid = try uuidValue(v, t, "trace uuid")
                case "packet.header":
                    guard case .type(let ty) = v else { throw semantic("packet.header must be a type", t) }
                    meta.packetHeader = ty
                case "major":
                    let m = try intValue(v, t, k)
                    if m != 1 { throw semantic("unsupported CTF major version \(m) (this reader decodes CTF 1.8)", t) }
                default: break
                }
            }
        case "env":
            for (k, v, _) in entries { meta.environment[k] = stringValue(v) }
        case "clock":
            var c = CTFClock(name: "")
            for (k, v, t) in entries {
                switch k {
                case "name": c.name = stringValue(v)
                case "freq":
                    let f = try intValue(v, t, k)
                    guard f > 0 else { throw semantic("clock freq must be positive", t) }
                    c.frequency = UInt64(f)
                case "offset_s":
                    c.offsetSeconds = try intValue(v, t, k)
                    // Timestamps are Int64 ns within ±2^62 (CTFClock.timestampLimitNanoseconds).
                    guard c.offsetSeconds.magnitude <= UInt64(CTFClock.timestampLimitNanoseconds / 1_000_000_000) else {
                        throw semantic("clock offset_s = \(c.offsetSeconds) is beyond ±\(CTFClock.timestampLimitNanoseconds / 1_000_000_000) s (years 1824–2116), which 64-bit nanosecond timestamps cannot hold", t)
                    }
                case "offset": c.offsetCycles = try intValue(v, t, k)
                case "uuid": c.uuid = try uuidValue(v, t, "clock uuid")
                case "description": c.description = stringValue(v)
                default: break
                }
            }
            guard !c.name.isEmpty else { throw semantic("clock without a name", tok) }
            // Normalise so that offsetCycles < frequency (keeps conversions exact).
            if c.offsetCycles >= Int64(c.frequency) || c.offsetCycles < 0 {
                let f = Int64(c.frequency)
                var s = c.offsetCycles / f
                var r = c.offsetCycles % f
                if r < 0 { r += f; s -= 1 }
                let limit = CTFClock.timestampLimitNanoseconds / 1_000_000_000
                let (sum, o) = c.offsetSeconds.addingReportingOverflow(s)
                guard !o, sum.magnitude <= UInt64(limit) else {
                    throw semantic("clock `\(c.name)`: offset_s + offset / freq is beyond ±\(limit) s (years 1824–2116), which 64-bit nanosecond timestamps cannot hold", tok)
                }
                c.offsetSeconds = sum
                c.offsetCycles = r
            }
            meta.clocks[c.name] = c
        case "stream":
            var s = CTFStreamClass(id: 0)
            for (k, v, t) in entries {
                switch k {
                case "id": s.id = UInt64(bitPattern: try intValue(v, t, k))
                case "packet.context", "event.header", "event.context":
                    guard case .type(let ty) = v else { throw semantic("\(k) must be a type", t) }
                    if k == "packet.context" { s.packetContext = ty } else if k == "event.header" { s.eventHeader = ty } else { s.eventContext = ty }
                default: break
                }
            }
            meta.streamClasses[s.id] = s
        case "event":
            var name = "", id: UInt64 = 0, sid: UInt64 = 0, ll: Int64? = nil
            var ctx: CTFType?, fields: CTFType?
            var attrs: [String: String] = [:]
            for (k, v, t) in entries {
                switch k {
                case "name": name = stringValue(v)
                case "id": id = UInt64(bitPattern: try intValue(v, t, k))
                case "stream_id": sid = UInt64(bitPattern: try intValue(v, t, k))
                case "loglevel": ll = try intValue(v, t, k)
                case "context", "fields":
                    guard case .type(let ty) = v else { throw semantic("\(k) must be a type", t) }
                    if k == "context" { ctx = ty } else { fields = ty }
                default: attrs[k] = stringValue(v)
                }
            }
            meta.eventClasses.append(CTFEventClass(id: id, name: name, streamID: sid, logLevel: ll, context: ctx, payload: fields, attributes: attrs))
        default:
            break
        }
    }
}
