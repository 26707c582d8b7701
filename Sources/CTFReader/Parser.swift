/// Parses CTF 1.8 TSDL metadata text into a ``CTFMetadata``.
struct MetadataParser {
    private var toks: [Token]
    private var p = 0
    private let path: String
    /// Type alias scopes (innermost last). Named struct/enum/variant types are stored as "struct NAME" etc.
    private var scopes: [[String: CTFType]] = [[:]]
    private var meta = CTFMetadata()
    private var sawTrace = false
    private var depth = 0

    init(text: String, path: String) throws {
        var lexer = Lexer(text: text, path: path)
        self.toks = try lexer.tokenize()
        self.path = path
        meta.text = text
    }

    // MARK: token helpers

    private var cur: Token { toks[p] }
    private func peek(_ k: Int = 1) -> Token { toks[min(p + k, toks.count - 1)] }
    private mutating func advance() -> Token { let t = toks[p]; if p < toks.count - 1 { p += 1 }; return t }
    private func err(_ msg: String, _ t: Token? = nil) -> CTFReaderError {
        let t = t ?? cur
        return .metadataSyntax(path: path, line: t.line, column: t.column, message: msg)
    }
    private func isPunct(_ s: String) -> Bool { cur.kind == .punct && cur.text == s }
    private func isIdent(_ s: String) -> Bool { cur.kind == .identifier && cur.text == s }
    private mutating func expect(_ s: String) throws {
        guard cur.text == s && (cur.kind == .punct || cur.kind == .identifier) else {
            throw err("expected `\(s)` but found `\(cur.text)`")
        }
        _ = advance()
    }
    private mutating func expectIdentifier(_ what: String) throws -> String {
        guard cur.kind == .identifier else { throw err("expected \(what) but found `\(cur.text)`") }
        return advance().text
    }

    private func lookup(_ name: String) -> CTFType? {
        for s in scopes.reversed() { if let t = s[name] { return t } }
        return nil
    }
    private mutating func define(_ name: String, _ t: CTFType) { scopes[scopes.count - 1][name] = t }

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
            _ = try parseTypeSpecifier(allowDeclarator: true)
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
        return meta
    }

    private mutating func parseTypealias() throws {
        try expect("typealias")
        let t = try parseTypeSpecifier(allowDeclarator: false)
        try expect(":=")
        var name: [String] = []
        while cur.kind == .identifier { name.append(advance().text) }
        guard !name.isEmpty else { throw err("expected alias name after `:=`") }
        // A pointer or array declarator in an alias is not supported.
        if isPunct("*") || isPunct("[") { throw err("unsupported declarator in typealias `\(name.joined(separator: " "))`") }
        try expect(";")
        define(name.joined(separator: " "), t)
    }

    private mutating func parseTypedef() throws {
        try expect("typedef")
        let t = try parseTypeSpecifier(allowDeclarator: true)
        let (name, type) = try parseDeclarator(base: t)
        try expect(";")
        define(name, type)
    }

    // MARK: blocks

    private enum Value {
        case int(Int64, String)
        case string(String)
        case ident(String)
        case type(CTFType)
    }

    private mutating func parseBlock() throws {
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

    private mutating func parseValue() throws -> Value {
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

    private func parseIntLiteral(_ raw: String) -> Int64? {
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

    private func semantic(_ msg: String, _ t: Token) -> CTFReaderError {
        .metadataSyntax(path: path, line: t.line, column: t.column, message: msg)
    }

    private mutating func apply(kind: String, entries: [(String, Value, Token)], at tok: Token) throws {
        func intValue(_ v: Value, _ t: Token, _ key: String) throws -> Int64 {
            if case .int(let i, _) = v { return i }
            throw semantic("`\(key)` must be an integer", t)
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
                case "uuid": meta.uuid = stringValue(v)
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
                case "offset_s": c.offsetSeconds = try intValue(v, t, k)
                case "offset": c.offsetCycles = try intValue(v, t, k)
                case "uuid": c.uuid = stringValue(v)
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
                c.offsetSeconds &+= s
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

    // MARK: types

    /// Parses a type specifier. With `allowDeclarator`, a trailing identifier (the field name) is not consumed.
    private mutating func parseTypeSpecifier(allowDeclarator: Bool) throws -> CTFType {
        let start = cur
        depth += 1
        defer { depth -= 1 }
        guard depth <= 64 else { throw err("type declarations nested more than 64 deep") }
        guard cur.kind == .identifier else { throw err("expected a type but found `\(cur.text)`") }
        switch cur.text {
        case "integer":
            _ = advance()
            return .integer(try parseIntegerAttributes())
        case "floating_point":
            _ = advance()
            return .floatingPoint(try parseFloatAttributes())
        case "string":
            _ = advance()
            if isPunct("{") {
                let attrs = try parseAttributeList()
                for (k, v, t) in attrs where k == "encoding" && !["UTF8", "ASCII", "utf8", "ascii"].contains(v) {
                    throw semantic("unsupported string encoding `\(v)`", t)
                }
            }
            return .string
        case "enum":
            _ = advance()
            var name: String?
            if cur.kind == .identifier && !isPunct(":") { name = advance().text }
            var container: CTFIntegerType?
            if isPunct(":") {
                _ = advance()
                let ct = try parseTypeSpecifier(allowDeclarator: false)
                guard case .integer(let i) = ct else { throw err("enum container must be an integer type", start) }
                container = i
            }
            if isPunct("{") {
                if container == nil {
                    guard case .integer(let i)? = lookup("int") else { throw err("enum without container type and no `int` alias", start) }
                    container = i
                }
                let maps = try parseEnumBody(container!)
                let t = CTFType.enumeration(container!, maps)
                if let n = name { define("enum " + n, t) }
                return t
            }
            guard let n = name, let t = lookup("enum " + n) else { throw err("unknown enum `\(name ?? "")`", start) }
            return t
        case "struct":
            _ = advance()
            var name: String?
            if cur.kind == .identifier && !isIdent("align") { name = advance().text }
            if isPunct("{") {
                _ = advance()
                let fields = try parseFieldList()
                var align = 1
                if isIdent("align") {
                    _ = advance(); try expect("(")
                    guard cur.kind == .integer, let a = parseIntLiteral(advance().text), a > 0, a <= 4096, a & (a - 1) == 0 else {
                        throw err("struct alignment must be a power of two")
                    }
                    align = Int(a)
                    try expect(")")
                }
                let t = CTFType.structure(fields, alignment: align)
                if let n = name { define("struct " + n, t) }
                return t
            }
            guard let n = name, let t = lookup("struct " + n) else { throw err("unknown struct `\(name ?? "")`", start) }
            return t
        case "variant":
            _ = advance()
            var name: String?
            if cur.kind == .identifier { name = advance().text }
            var tag: String?
            if isPunct("<") {
                _ = advance()
                var s = try expectIdentifier("variant tag")
                while isPunct(".") { _ = advance(); s += "." + (try expectIdentifier("variant tag")) }
                try expect(">")
                tag = s
            }
            if isPunct("{") {
                _ = advance()
                let fields = try parseFieldList()
                let t = CTFType.variant(tag: tag ?? "", options: fields)
                if let n = name { define("variant " + n, t) }
                if tag == nil { return t }
                return .variant(tag: stripUnderscore(tag!), options: fields)
            }
            guard let n = name, case .variant(_, let opts)? = lookup("variant " + n) else { throw err("unknown variant `\(name ?? "")`", start) }
            guard let tg = tag else { throw err("variant `\(n)` used without a tag", start) }
            return .variant(tag: stripUnderscore(tg), options: opts)
        default:
            // A (possibly multi-word) alias name.
            var n = 0
            while peek(n).kind == .identifier { n += 1 }
            var take = n
            if allowDeclarator && n >= 2 {
                let after = peek(n)
                if after.kind == .punct && [";", "[", ",", ":"].contains(after.text) { take = n - 1 }
            }
            var words: [String] = []
            for _ in 0..<take { words.append(advance().text) }
            let name = words.joined(separator: " ")
            if let t = lookup(name) { return t }
            // A known type followed by a declarator and a missing `;`: say so where the `;` belongs.
            if allowDeclarator {
                for j in stride(from: words.count - 1, to: 0, by: -1) where lookup(words[0..<j].joined(separator: " ")) != nil {
                    if j + 1 < words.count {
                        throw err("expected `;` after field `\(words[j])` but found `\(words[j + 1])`", toks[p - words.count + j + 1])
                    }
                }
            }
            // C keywords LTTng sometimes relies on without alias.
            throw err("unknown type `\(name)`", start)
        }
    }

    private mutating func parseAttributeList() throws -> [(String, String, Token)] {
        try expect("{")
        var out: [(String, String, Token)] = []
        while !isPunct("}") {
            if cur.kind == .eof { throw err("unterminated attribute list") }
            if isPunct(";") { _ = advance(); continue }
            let kt = cur
            let k = try expectIdentifier("attribute name")
            try expect("=")
            let v = try parseValue()
            let s: String
            switch v {
            case .int(_, let raw): s = raw
            case .string(let x): s = x
            case .ident(let x): s = x
            case .type: s = ""
            }
            out.append((k, s, kt))
            if !isPunct("}") { try expect(";") }
        }
        _ = advance()
        return out
    }

    private mutating func parseIntegerAttributes() throws -> CTFIntegerType {
        let open = cur
        var t = CTFIntegerType(size: 0, alignment: 0, isSigned: false, byteOrder: .native, base: .decimal, isText: false, mappedClock: nil)
        for (k, v, tok) in try parseAttributeList() {
            switch k {
            case "size":
                guard let s = parseIntLiteral(v), s >= 1 else { throw semantic("bad integer size `\(v)`", tok) }
                guard s <= 64 else { throw semantic("unsupported integer size \(s) bits (at most 64)", tok) }
                t.size = Int(s)
            case "align":
                guard let a = parseIntLiteral(v), a >= 1, a <= 4096 * 8, a & (a - 1) == 0 else { throw semantic("integer alignment must be a power of two, not `\(v)`", tok) }
                t.alignment = Int(a)
            case "signed":
                switch v { case "true", "1", "TRUE": t.isSigned = true; case "false", "0", "FALSE": t.isSigned = false
                default: throw semantic("bad signed value `\(v)`", tok) }
            case "byte_order":
                switch v { case "le", "little": t.byteOrder = .little; case "be", "big", "network": t.byteOrder = .big
                case "native": t.byteOrder = .native
                default: throw semantic("bad byte_order `\(v)`", tok) }
            case "base":
                switch v {
                case "10", "decimal", "dec", "d", "i", "u": t.base = .decimal
                case "16", "hexadecimal", "hex", "x", "X", "p": t.base = .hexadecimal
                case "8", "octal", "oct", "o": t.base = .octal
                case "2", "binary", "b": t.base = .binary
                default: throw semantic("bad integer base `\(v)`", tok)
                }
            case "encoding":
                switch v { case "none": t.isText = false; case "UTF8", "ASCII", "utf8", "ascii": t.isText = true
                default: throw semantic("unsupported integer encoding `\(v)`", tok) }
            case "map":
                // clock.NAME.value
                let parts = v.split(separator: ".")
                guard parts.count == 3, parts[0] == "clock", parts[2] == "value" else { throw semantic("unsupported integer map `\(v)`", tok) }
                t.mappedClock = String(parts[1])
            default:
                throw semantic("unknown integer attribute `\(k)`", tok)
            }
        }
        guard t.size > 0 else { throw err("integer without size", open) }
        if t.alignment == 0 { t.alignment = t.size % 8 == 0 ? 8 : 1 }
        return t
    }

    private mutating func parseFloatAttributes() throws -> CTFFloatType {
        let open = cur
        var f = CTFFloatType(exponentDigits: 0, mantissaDigits: 0, alignment: 8, byteOrder: .native)
        for (k, v, tok) in try parseAttributeList() {
            switch k {
            case "exp_dig": f.exponentDigits = Int(parseIntLiteral(v) ?? 0)
            case "mant_dig": f.mantissaDigits = Int(parseIntLiteral(v) ?? 0)
            case "align":
                guard let a = parseIntLiteral(v), a >= 1, a <= 4096 * 8, a & (a - 1) == 0 else { throw semantic("bad alignment `\(v)`", tok) }
                f.alignment = Int(a)
            case "byte_order":
                switch v { case "le", "little": f.byteOrder = .little; case "be", "big", "network": f.byteOrder = .big
                case "native": f.byteOrder = .native
                default: throw semantic("bad byte_order `\(v)`", tok) }
            default: throw semantic("unknown floating_point attribute `\(k)`", tok)
            }
        }
        guard (f.exponentDigits == 8 && f.mantissaDigits == 24) || (f.exponentDigits == 11 && f.mantissaDigits == 53) else {
            throw err("unsupported floating_point with exp_dig = \(f.exponentDigits), mant_dig = \(f.mantissaDigits) (only binary32 and binary64)", open)
        }
        return f
    }

    private mutating func parseEnumBody(_ container: CTFIntegerType) throws -> [CTFEnumMapping] {
        try expect("{")
        var out: [CTFEnumMapping] = []
        var next: Int64 = 0
        while !isPunct("}") {
            if cur.kind == .eof { throw err("unterminated enum") }
            guard cur.kind == .identifier || cur.kind == .string else { throw err("expected an enum label but found `\(cur.text)`") }
            let label = advance().text
            var lo = next, hi = next
            if isPunct("=") {
                _ = advance()
                guard case .int(let a, _) = try parseValue() else { throw err("enum value must be an integer") }
                lo = a; hi = a
                if isPunct("...") {
                    _ = advance()
                    guard case .int(let b, _) = try parseValue() else { throw err("enum range end must be an integer") }
                    hi = b
                }
            }
            out.append(CTFEnumMapping(label: label, lower: lo, upper: hi))
            next = hi &+ 1
            if isPunct(",") { _ = advance() } else if !isPunct("}") { throw err("expected `,` or `}` in enum") }
        }
        _ = advance()
        return out
    }

    /// Parses `type declarator[, declarator];` entries up to and including the closing `}`.
    private mutating func parseFieldList() throws -> [CTFField] {
        scopes.append([:])
        defer { scopes.removeLast() }
        var fields: [CTFField] = []
        var names = Set<String>()   // O(1) duplicate check: a hostile list may have 100k fields
        while !isPunct("}") {
            if cur.kind == .eof { throw err("unterminated struct or variant") }
            if isPunct(";") { _ = advance(); continue }
            if isIdent("typealias") { try parseTypealias(); continue }
            if isIdent("typedef") { try parseTypedef(); continue }
            let base = try parseTypeSpecifier(allowDeclarator: true)
            if isPunct(";") { _ = advance(); continue } // a bare type declaration
            while true {
                let (name, t) = try parseDeclarator(base: base)
                if !names.insert(name).inserted { throw err("duplicate field `\(name)`") }
                fields.append(CTFField(name: name, type: t))
                if isPunct(",") { _ = advance(); continue }
                break
            }
            try expect(";")
        }
        _ = advance()
        return fields
    }

    private func stripUnderscore(_ s: String) -> String {
        // CTF 1.8: a leading underscore of an identifier is not part of the field name; paths strip it per component.
        s.split(separator: ".", omittingEmptySubsequences: false).map { $0.hasPrefix("_") ? String($0.dropFirst()) : String($0) }.joined(separator: ".")
    }

    private mutating func parseDeclarator(base: CTFType) throws -> (String, CTFType) {
        if isPunct("*") { throw err("pointer declarators are not supported") }
        let raw = try expectIdentifier("field name")
        var dims: [(Int?, String?)] = []
        while isPunct("[") {
            // Each dimension is a level of nesting: counted against the same limit as nested types.
            guard depth + dims.count < 64 else { throw err("declarator `\(raw)` nests arrays and types more than 64 deep") }
            _ = advance()
            if cur.kind == .integer {
                let t = advance()
                guard let n = parseIntLiteral(t.text), n >= 0, n <= 1 << 28 else { throw err("bad array length `\(t.text)`", t) }
                dims.append((Int(n), nil))
            } else {
                var s = try expectIdentifier("sequence length field")
                while isPunct(".") { _ = advance(); s += "." + (try expectIdentifier("sequence length field")) }
                dims.append((nil, stripUnderscore(s)))
            }
            try expect("]")
        }
        if isPunct(":") { throw err("bit-field declarators are not supported (field `\(raw)`)") }
        var t = base
        for (n, s) in dims.reversed() {
            if let n = n { t = .array(t, length: n) } else { t = .sequence(t, lengthField: s!) }
        }
        return (stripUnderscore(raw), t)
    }
}
