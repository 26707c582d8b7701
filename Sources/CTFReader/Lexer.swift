/// A token of the TSDL metadata language.
struct Token: Equatable {
    enum Kind: Equatable { case identifier, integer, string, punct, eof }
    var kind: Kind
    var text: String
    var line: Int
    var column: Int
}

/// Splits TSDL text into tokens (identifiers, integer and string literals, punctuation), skipping comments.
struct Lexer {
    private let bytes: [UInt8]
    private var i = 0
    private var line = 1
    private var lineStart = 0
    let path: String

    init(text: String, path: String) {
        self.bytes = Array(text.utf8)
        self.path = path
    }

    private func error(_ msg: String) -> CTFReaderError {
        .metadataSyntax(path: path, line: line, column: i - lineStart + 1, message: msg)
    }

    mutating func tokenize() throws -> [Token] {
        var out: [Token] = []
        out.reserveCapacity(bytes.count / 4)
        while true {
            try skipSpaceAndComments()
            let col = i - lineStart + 1
            guard i < bytes.count else {
                out.append(Token(kind: .eof, text: "<end of metadata>", line: line, column: col))
                return out
            }
            let c = bytes[i]
            if isIdentStart(c) {
                let s = i
                while i < bytes.count && isIdentPart(bytes[i]) { i += 1 }
                out.append(Token(kind: .identifier, text: String(decoding: bytes[s..<i], as: UTF8.self), line: line, column: col))
            } else if isDigit(c) {
                let s = i
                while i < bytes.count && (isIdentPart(bytes[i])) { i += 1 }
                out.append(Token(kind: .integer, text: String(decoding: bytes[s..<i], as: UTF8.self), line: line, column: col))
            } else if c == UInt8(ascii: "'") {
                // A character constant (`'a'`, `'\\n'`): an integer (CTF 1.8, 7.1: a C99 constant).
                i += 1
                guard i < bytes.count, bytes[i] != UInt8(ascii: "'"), bytes[i] != UInt8(ascii: "\n") else { throw error("empty character constant") }
                let v: UInt8
                if bytes[i] == UInt8(ascii: "\\") { v = try escape() } else { v = bytes[i]; i += 1 }
                guard i < bytes.count, bytes[i] == UInt8(ascii: "'") else { throw error("character constant of more than one character, or unterminated") }
                i += 1
                out.append(Token(kind: .integer, text: String(v), line: line, column: col))
            } else if c == UInt8(ascii: "\"") {
                i += 1
                var buf: [UInt8] = []
                while true {
                    guard i < bytes.count else { throw error("unterminated string literal") }
                    let d = bytes[i]
                    if d == UInt8(ascii: "\"") { i += 1; break }
                    if d == UInt8(ascii: "\n") { throw error("newline in string literal") }
                    if d == 0 { throw error("NUL character in string literal (write `\\0`)") }
                    if d == UInt8(ascii: "\\") {
                        buf.append(try escape())
                        continue
                    }
                    buf.append(d)
                    i += 1
                }
                // A string is a C string: it ends at its first NUL (`"a\\0b"` is "a").
                if let nul = buf.firstIndex(of: 0) { buf.removeSubrange(nul...) }
                out.append(Token(kind: .string, text: String(decoding: buf, as: UTF8.self), line: line, column: col))
            } else {
                // Multi-character punctuation first.
                let three = i + 2 < bytes.count ? String(decoding: bytes[i..<i+3], as: UTF8.self) : ""
                let two = i + 1 < bytes.count ? String(decoding: bytes[i..<i+2], as: UTF8.self) : ""
                if three == "..." {
                    out.append(Token(kind: .punct, text: "...", line: line, column: col)); i += 3
                } else if two == ":=" || two == "->" {
                    out.append(Token(kind: .punct, text: two, line: line, column: col)); i += 2
                } else if "{}[]()<>;:,=.-+*".utf8.contains(c) {
                    out.append(Token(kind: .punct, text: String(UnicodeScalar(c)), line: line, column: col)); i += 1
                } else {
                    throw error("unexpected character '\(c >= 32 && c < 127 ? String(UnicodeScalar(c)) : "\\x" + String(c, radix: 16))'")
                }
            }
        }
    }

    private mutating func skipSpaceAndComments() throws {
        while i < bytes.count {
            let c = bytes[i]
            if c == 10 { i += 1; line += 1; lineStart = i; continue }
            if c == 32 || c == 9 || c == 13 || c == 12 || c == 11 || c == 0 { i += 1; continue }
            if c == UInt8(ascii: "/") && i + 1 < bytes.count {
                if bytes[i + 1] == UInt8(ascii: "*") {
                    i += 2
                    while true {
                        guard i + 1 < bytes.count else { throw error("unterminated comment") }
                        if bytes[i] == UInt8(ascii: "*") && bytes[i + 1] == UInt8(ascii: "/") { i += 2; break }
                        if bytes[i] == 10 { line += 1; lineStart = i + 1 }
                        i += 1
                    }
                    continue
                }
                if bytes[i + 1] == UInt8(ascii: "/") {
                    while i < bytes.count && bytes[i] != 10 { i += 1 }
                    continue
                }
            }
            return
        }
    }

    /// The value of the escape sequence whose backslash is at `i`, which moves past it. C99's escapes (CTF 1.8, 7.1):
    /// the simple ones, an octal value of one to three digits, and a hexadecimal one of one to three digits after `x`
    /// (as babeltrace reads `\x0231`: `#1`); any other character stands for itself.
    private mutating func escape() throws -> UInt8 {
        guard i + 1 < bytes.count else { throw error("unterminated escape") }
        let e = bytes[i + 1]
        i += 2
        switch e {
        case UInt8(ascii: "a"): return 7
        case UInt8(ascii: "b"): return 8
        case UInt8(ascii: "f"): return 12
        case UInt8(ascii: "n"): return 10
        case UInt8(ascii: "r"): return 13
        case UInt8(ascii: "t"): return 9
        case UInt8(ascii: "v"): return 11
        case UInt8(ascii: "0")...UInt8(ascii: "7"), UInt8(ascii: "x"):
            let hex = e == UInt8(ascii: "x")
            var value = hex ? 0 : Int(e - UInt8(ascii: "0")), digits = hex ? 0 : 1
            while digits < 3, i < bytes.count, let v = Self.digitValue(bytes[i], hex: hex) {
                value = value * (hex ? 16 : 8) + v; digits += 1; i += 1
            }
            guard digits > 0 else { throw error("`\\x` escape with no hexadecimal digit") }
            guard value <= 255 else { throw error("escape value \(value) does not fit a byte") }
            return UInt8(value)
        default: return e   // \\ \" \' \? (and, leniently, any other character as itself)
        }
    }

    private func isIdentStart(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95 }
    private func isIdentPart(_ c: UInt8) -> Bool { isIdentStart(c) || isDigit(c) }
    private func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
    /// The value of `c` as an octal or hexadecimal digit, or nil.
    private static func digitValue(_ c: UInt8, hex: Bool) -> Int? {
        switch c {
        case 48...55: return Int(c - 48)
        case 56...57: return hex ? Int(c - 48) : nil
        case 65...70 where hex: return Int(c - 55)
        case 97...102 where hex: return Int(c - 87)
        default: return nil
        }
    }
}
