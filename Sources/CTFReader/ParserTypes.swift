// Type specifiers of TSDL: integers, floats, strings, enumerations, structures, variants, arrays
// and sequences, with their attributes and declarators.

extension MetadataParser {
    // MARK: types

    /// Parses a type specifier. With `allowDeclarator`, a trailing identifier (the field name) is not consumed.
    mutating func parseTypeSpecifier(allowDeclarator: Bool) throws -> CTFType {
        let start = cur
        depth += 1
        defer { depth -= 1 }
        // (The count includes the scope's own structure and the innermost type: a field inside `maxDepth` compound
        // types is at depth `maxDepth + 2`. The compiler checks the exact bound for each field.)
        guard depth <= Nesting.maxDepth + 2 else { throw err("type declarations nested more than \(Nesting.maxDepth) deep") }
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
                for (k, v, t) in try parseAttributeList() {
                    if k == "encoding" {
                        let e = text(v)
                        guard ["UTF8", "ASCII", "utf8", "ascii"].contains(e) else { throw semantic("unsupported string encoding `\(e)`", t) }
                    } else {
                        warn("unknown string attribute `\(k)` ignored", t)
                    }
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
                guard container!.size <= 64 else { throw semantic("enumeration container of \(container!.size) bits is not supported (at most 64)", start) }
                let maps = try parseEnumBody(container!)
                let t = CTFType.enumeration(container!, maps)
                if let n = name { try define("enum " + n, t, at: start) }
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
                // Stored with its fields' alignment (``CTFType/alignment`` reads a nested structure's as stored).
                let t = CTFType.structure(fields, alignment: fields.reduce(align) { max($0, $1.type.storedAlignment) })
                if let n = name { try define("struct " + n, t, at: start) }
                return t
            }
            guard let n = name, let t = lookup("struct " + n) else { throw err("unknown struct `\(name ?? "")`", start) }
            return t
        case "variant":
            _ = advance()
            var name: String?
            if cur.kind == .identifier { name = advance().text }
            var tag: String?
            var tagTok = cur
            if isPunct("<") {
                _ = advance()
                tagTok = cur
                var parts = [try expectIdentifier("variant tag")]
                while isPunct(".") { _ = advance(); parts.append(try expectIdentifier("variant tag")) }
                try expect(">")
                // Scope prefixes (`stream.event.header.id`) are keywords; the field name itself may not be one.
                let scoped = parts.count > 1 && ["trace", "stream", "event", "env", "clock"].contains(parts[0])
                if let k = (scoped ? [parts.last!] : parts).first(where: { MetadataParser.keywords.contains($0) }) {
                    throw semantic("variant tag `\(parts.joined(separator: "."))`: `\(k)` is a reserved keyword, not a field name", tagTok)
                }
                tag = parts.joined(separator: ".")
            }
            if isPunct("{") {
                _ = advance()
                let fields = try parseFieldList()
                let t = CTFType.variant(tag: tag ?? "", options: fields)
                if let n = name { try define("variant " + n, t, at: start) }
                if tag == nil { return t }
                try checkVariantTag(stripUnderscore(tag!), options: fields, at: tagTok)
                return .variant(tag: stripUnderscore(tag!), options: fields)
            }
            guard let n = name, case .variant(_, let opts)? = lookup("variant " + n) else { throw err("unknown variant `\(name ?? "")`", start) }
            guard let tg = tag else { throw err("variant `\(n)` used without a tag", start) }
            try checkVariantTag(stripUnderscore(tg), options: opts, at: tagTok)
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

    /// The text of an attribute value (an integer's literal as written).
    func text(_ v: Value) -> String {
        switch v {
        case .int(_, let raw): return raw
        case .string(let x): return x
        case .ident(let x): return x
        case .type: return ""
        }
    }

    mutating func parseAttributeList() throws -> [(String, Value, Token)] {
        try expect("{")
        var out: [(String, Value, Token)] = []
        while !isPunct("}") {
            if cur.kind == .eof { throw err("unterminated attribute list") }
            if isPunct(";") { _ = advance(); continue }
            let kt = cur
            let k = try expectIdentifier("attribute name")
            try expect("=")
            out.append((k, try parseValue(), kt))
            if !isPunct("}") { try expect(";") }
        }
        _ = advance()
        return out
    }

    /// An attribute that must be an unquoted integer constant (CTF 1.8: `size = "32"` is not an integer).
    func constant(_ v: Value, _ k: String, _ tok: Token, _ what: String) throws -> (negative: Bool, magnitude: UInt64) {
        switch v {
        case .int(let i, let raw):
            let neg = raw.hasPrefix("-")
            return (neg, neg ? UInt64(bitPattern: 0 &- i) : UInt64(bitPattern: i))
        case .string(let x): throw semantic("\(what) attribute `\(k)` must be an integer constant, not the string \"\(x)\"", tok)
        case .ident(let x): throw semantic("\(what) attribute `\(k)` must be an integer constant, not `\(x)`", tok)
        case .type: throw semantic("\(what) attribute `\(k)` must be an integer constant", tok)
        }
    }

    /// An attribute that must be an unquoted identifier or integer (`signed = true`, `base = hex`, `encoding = UTF8`).
    func word(_ v: Value, _ k: String, _ tok: Token, _ what: String) throws -> String {
        if case .string(let x) = v { throw semantic("\(what) attribute `\(k)` must not be a string literal (\"\(x)\"): write it unquoted", tok) }
        return text(v)
    }

    /// Widest integer decoded (wider than 64 bits: read as a whole and shown in hexadecimal).
    static let maxIntegerSize = 1 << 16

    mutating func parseIntegerAttributes() throws -> CTFIntegerType {
        let open = cur
        var t = CTFIntegerType(size: 0, alignment: 0, isSigned: false, byteOrder: .native, base: .decimal, isText: false, mappedClock: nil)
        for (k, v, tok) in try parseAttributeList() {
            switch k {
            case "size":
                let (neg, s) = try constant(v, k, tok, "integer")
                guard !neg, s >= 1 else { throw semantic("bad integer size `\(text(v))`", tok) }
                guard s <= UInt64(MetadataParser.maxIntegerSize) else { throw semantic("unsupported integer size \(s) bits (at most \(MetadataParser.maxIntegerSize))", tok) }
                t.size = Int(s)
            case "align":
                let (neg, a) = try constant(v, k, tok, "integer")
                guard !neg, a >= 1, a <= 4096 * 8, a & (a - 1) == 0 else { throw semantic("integer alignment must be a power of two, not `\(text(v))`", tok) }
                t.alignment = Int(a)
            case "signed":
                switch try word(v, k, tok, "integer") { case "true", "1", "TRUE": t.isSigned = true; case "false", "0", "FALSE": t.isSigned = false
                default: throw semantic("bad signed value `\(text(v))`", tok) }
            case "byte_order":
                switch try word(v, k, tok, "integer") { case "le", "little": t.byteOrder = .little; case "be", "big", "network": t.byteOrder = .big
                case "native": t.byteOrder = .native
                default: throw semantic("bad byte_order `\(text(v))`", tok) }
            case "base":
                switch try word(v, k, tok, "integer") {
                case "10", "decimal", "dec", "d", "i", "u": t.base = .decimal
                case "16", "hexadecimal", "hex", "x", "X", "p": t.base = .hexadecimal
                case "8", "octal", "oct", "o": t.base = .octal
                case "2", "binary", "b": t.base = .binary
                default: throw semantic("bad integer base `\(text(v))`", tok)
                }
            case "encoding":
                switch try word(v, k, tok, "integer") { case "none": t.isText = false; case "UTF8", "ASCII", "utf8", "ascii": t.isText = true
                default: throw semantic("unsupported integer encoding `\(text(v))`", tok) }
            case "map":
                // clock.NAME.value
                let m = try word(v, k, tok, "integer")
                let parts = m.split(separator: ".")
                guard parts.count == 3, parts[0] == "clock", parts[2] == "value" else { throw semantic("unsupported integer map `\(m)`", tok) }
                t.mappedClock = String(parts[1])
            default:
                // CTF 1.8 §4: unknown attributes are ignored with a warning.
                warn("unknown integer attribute `\(k)` ignored", tok)
            }
        }
        guard t.size > 0 else { throw err("integer without size", open) }
        if t.size > 64 && t.mappedClock != nil { throw err("a clock cannot map an integer of \(t.size) bits (at most 64)", open) }
        if t.alignment == 0 { t.alignment = t.size % 8 == 0 ? 8 : 1 }
        return t
    }

    mutating func parseFloatAttributes() throws -> CTFFloatType {
        let open = cur
        var f = CTFFloatType(exponentDigits: 0, mantissaDigits: 0, alignment: 8, byteOrder: .native)
        for (k, v, tok) in try parseAttributeList() {
            switch k {
            case "exp_dig": let (n, m) = try constant(v, k, tok, "floating_point"); f.exponentDigits = n || m > 1024 ? 0 : Int(m)
            case "mant_dig": let (n, m) = try constant(v, k, tok, "floating_point"); f.mantissaDigits = n || m > 1024 ? 0 : Int(m)
            case "align":
                let (neg, a) = try constant(v, k, tok, "floating_point")
                guard !neg, a >= 1, a <= 4096 * 8, a & (a - 1) == 0 else { throw semantic("bad alignment `\(text(v))`", tok) }
                f.alignment = Int(a)
            case "byte_order":
                switch try word(v, k, tok, "floating_point") { case "le", "little": f.byteOrder = .little; case "be", "big", "network": f.byteOrder = .big
                case "native": f.byteOrder = .native
                default: throw semantic("bad byte_order `\(text(v))`", tok) }
            default: warn("unknown floating_point attribute `\(k)` ignored", tok)
            }
        }
        guard (f.exponentDigits == 8 && f.mantissaDigits == 24) || (f.exponentDigits == 11 && f.mantissaDigits == 53) else {
            throw err("unsupported floating_point with exp_dig = \(f.exponentDigits), mant_dig = \(f.mantissaDigits) (only binary32 and binary64)", open)
        }
        return f
    }

    mutating func parseEnumBody(_ container: CTFIntegerType) throws -> [CTFEnumMapping] {
        let open = cur
        try expect("{")
        var out: [CTFEnumMapping] = []
        // Values are checked against the container's range in 128-bit arithmetic (no literal can overflow it).
        let n = container.size
        let minV: Int128 = container.isSigned ? -(Int128(1) << (n - 1)) : 0
        let maxV: Int128 = container.isSigned ? (Int128(1) << (n - 1)) - 1 : (Int128(1) << n) - 1
        func literal(_ v: Value) -> Int128? {
            guard case .int(let i, let raw) = v else { return nil }
            return raw.hasPrefix("-") ? -Int128(UInt64(bitPattern: 0 &- i)) : Int128(UInt64(bitPattern: i))
        }
        var next: Int128 = 0
        while !isPunct("}") {
            if cur.kind == .eof { throw err("unterminated enum") }
            guard cur.kind == .identifier || cur.kind == .string else { throw err("expected an enum label but found `\(cur.text)`") }
            let labelTok = advance()
            let label = labelTok.text
            var lo = next, hi = next
            if isPunct("=") {
                _ = advance()
                guard let a = literal(try parseValue()) else { throw err("enum value must be an integer") }
                lo = a; hi = a
                if isPunct("...") {
                    _ = advance()
                    guard let b = literal(try parseValue()) else { throw err("enum range end must be an integer") }
                    hi = b
                }
            }
            for v in [lo, hi] where v < minV || v > maxV {
                throw semantic("enumerator `\(label)` value \(v) is outside the range of its \(n)-bit \(container.isSigned ? "signed" : "unsigned") container (\(minV) … \(maxV))", labelTok)
            }
            out.append(CTFEnumMapping(label: label, lower: Int64(truncatingIfNeeded: lo), upper: Int64(truncatingIfNeeded: hi)))
            next = hi + 1
            if isPunct(",") { _ = advance() } else if !isPunct("}") { throw err("expected `,` or `}` in enum") }
        }
        guard !out.isEmpty else { throw semantic("enumeration without any entry (CTF 1.8 requires at least one)", open) }
        _ = advance()
        return out
    }

    /// Checks a variant's tag where it can be resolved at declaration time (a field of an enclosing structure):
    /// it must be an enumeration, and at least one option must match one of its labels.
    func checkVariantTag(_ tag: String, options: [CTFField], at tok: Token) throws {
        let parts = tag.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var found: CTFType?
        for scope in fieldStack.reversed() { if let t = scope[parts[0]] { found = t; break } }
        guard var t = found else { return }   // an absolute path or an outer scope: checked when compiled
        for p in parts.dropFirst() {
            guard case .structure(let fs, _) = t, let f = fs.last(where: { $0.name == p }) else { return }
            t = f.type
        }
        let kind: String
        switch t {
        case .enumeration(_, let maps):
            let labels = Set(maps.map(\.label))
            if !options.isEmpty && !options.contains(where: { $0.selectingLabel(labels.contains) != nil }) {
                throw semantic("variant tag `\(tag)`: no option of the variant matches a label of the enumeration (\(maps.prefix(4).map { "\"\($0.label)\"" }.joined(separator: ", ")))", tok)
            }
            return
        case .string: kind = "a string"
        case .floatingPoint: kind = "a floating point number"
        case .integer: kind = "an integer"
        case .structure: kind = "a structure"
        case .variant: kind = "a variant"
        case .array, .sequence: kind = "an array"
        }
        throw semantic("variant tag `\(tag)` is \(kind), not an enumeration", tok)
    }

    /// Parses `type declarator[, declarator];` entries up to and including the closing `}`.
    mutating func parseFieldList() throws -> [CTFField] {
        scopes.append([:])
        fieldStack.append([:])
        defer { scopes.removeLast(); fieldStack.removeLast() }
        var fields: [CTFField] = []
        var names = Set<String>()   // O(1) duplicate check: a hostile list may have 100k fields
        while !isPunct("}") {
            if cur.kind == .eof { throw err("unterminated struct or variant") }
            if isPunct(";") { _ = advance(); continue }
            if isIdent("typealias") { try parseTypealias(); continue }
            if isIdent("typedef") { try parseTypedef(); continue }
            let base = try parseTypeSpecifier(allowDeclarator: true)
            if isPunct(";") { _ = advance(); continue } // a bare type declaration (e.g. a named struct)
            while true {
                let d = try parseDeclarator(base: base)
                try checkNotKeyword(d.raw.text, d.raw, "a field name")
                // Names are compared as written: `_x` escapes `x`, and `x`, `_x`, `__x` are distinct declarations.
                if !names.insert(d.raw.text).inserted { throw semantic("duplicate field `\(d.raw.text)` in this structure", d.raw) }
                fields.append(CTFField(name: d.name, type: d.type, writtenName: d.raw.text))
                fieldStack[fieldStack.count - 1][d.name] = d.type
                if isPunct(",") { _ = advance(); continue }
                break
            }
            try expect(";")
        }
        _ = advance()
        return fields
    }

    func stripUnderscore(_ s: String) -> String {
        // CTF 1.8: a leading underscore of an identifier is not part of the field name; paths strip it per component.
        s.split(separator: ".", omittingEmptySubsequences: false).map { $0.hasPrefix("_") ? String($0.dropFirst()) : String($0) }.joined(separator: ".")
    }

    /// Parses a declarator: the name as written (`raw`), the unescaped name, and the type with its array and
    /// sequence dimensions.
    mutating func parseDeclarator(base: CTFType) throws -> (name: String, raw: Token, type: CTFType) {
        if isPunct("*") { throw err("pointer declarators are not supported") }
        guard cur.kind == .identifier else { throw err("expected field name but found `\(cur.text)`") }
        let rawTok = advance()
        let raw = rawTok.text
        var dims: [(Int?, String?)] = []
        while isPunct("[") {
            // Each dimension is a level of nesting: counted against the same limit as nested types.
            guard depth + dims.count <= Nesting.maxDepth + 1 else { throw err("declarator `\(raw)` nests arrays and types more than \(Nesting.maxDepth) deep") }
            _ = advance()
            if cur.kind == .integer {
                let t = advance()
                guard let n = parseIntLiteral(t.text), n >= 0, n <= 1 << 28 else { throw err("bad array length `\(t.text)`", t) }
                dims.append((Int(n), nil))
            } else {
                let lenTok = cur
                var parts = [try expectIdentifier("array length (an integer constant or a length field)")]
                while isPunct(".") { _ = advance(); parts.append(try expectIdentifier("sequence length field")) }
                let s = parts.joined(separator: ".")
                let scoped = parts.count > 1 && ["trace", "stream", "event", "env", "clock"].contains(parts[0])
                if let k = (scoped ? [parts.last!] : parts).first(where: { MetadataParser.keywords.contains($0) }) {
                    throw semantic("array length `\(s)`: `\(k)` is a reserved keyword, not a constant or a length field", lenTok)
                }
                if parts.count == 1, lookup(s) != nil {
                    throw semantic("array length `\(s)` names a type, not a constant or a length field", lenTok)
                }
                if fieldStack.isEmpty && !scoped {
                    throw semantic("array length `\(s)` must be an integer constant here: a sequence length field is only meaningful inside a structure", lenTok)
                }
                dims.append((nil, stripUnderscore(s)))
            }
            try expect("]")
        }
        if isPunct(":") { throw err("bit-field declarators are not supported (field `\(raw)`)") }
        var t = base
        for (n, s) in dims.reversed() {
            if let n = n { t = .array(t, length: n) } else { t = .sequence(t, lengthField: s!) }
        }
        return (stripUnderscore(raw), rawTok, t)
    }
}
