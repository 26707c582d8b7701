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
            } else if c == UInt8(ascii: "\"") {
                i += 1
                var buf: [UInt8] = []
                while true {
                    guard i < bytes.count else { throw error("unterminated string literal") }
                    let d = bytes[i]
                    if d == UInt8(ascii: "\"") { i += 1; break }
                    if d == UInt8(ascii: "\n") { throw error("newline in string literal") }
                    if d == UInt8(ascii: "\\") {
                        guard i + 1 < bytes.count else { throw error("unterminated escape") }
                        let e = bytes[i + 1]
                        switch e {
                        case UInt8(ascii: "n"): buf.append(10)
                        case UInt8(ascii: "t"): buf.append(9)
                        case UInt8(ascii: "r"): buf.append(13)
                        case UInt8(ascii: "0"): buf.append(0)
                        default: buf.append(e)
                        }
                        i += 2
                        continue
                    }
                    buf.append(d)
                    i += 1
                }
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

    private func isIdentStart(_ c: UInt8) -> Bool { (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95 }
    private func isIdentPart(_ c: UInt8) -> Bool { isIdentStart(c) || isDigit(c) }
    private func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }
}
