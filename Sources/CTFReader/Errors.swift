/// Any failure of the reader. Every case names the file and, where it applies, the position and field.
public enum CTFReaderError: Error, CustomStringConvertible, Sendable {
    /// A file could not be opened, read or mapped.
    case io(path: String, message: String)
    /// No CTF trace (a directory holding a `metadata` file) was found below the given paths.
    case noTrace(paths: [String])
    /// The metadata does not parse; `line` and `column` are 1-based.
    case metadataSyntax(path: String, line: Int, column: Int, message: String)
    /// The metadata parses but declares something this reader does not support or that is inconsistent.
    case metadataSemantic(path: String, message: String)
    /// The data stream is malformed at `offset` (bytes from the start of the file) while reading `field`.
    case malformed(path: String, offset: Int, field: String, message: String)

    /// A human-readable description naming file, position and field.
    public var description: String {
        switch self {
        case .io(let p, let m): return "\(p): \(m)"
        case .noTrace(let ps): return "no CTF trace (directory with a `metadata` file) found in \(ps.joined(separator: ", "))"
        case .metadataSyntax(let p, let l, let c, let m): return "\(p):\(l):\(c): metadata syntax error: \(m)"
        case .metadataSemantic(let p, let m): return "\(p): metadata: \(m)"
        case .malformed(let p, let o, let f, let m): return "\(p): at byte offset \(o), field `\(f)`: \(m)"
        }
    }
}

/// A non-fatal problem found while reading (e.g. a truncated final packet).
public struct CTFWarning: Sendable, CustomStringConvertible {
    /// The file concerned.
    public var path: String
    /// Byte offset in the file.
    public var offset: Int
    /// What happened.
    public var message: String
    /// A human-readable description.
    public var description: String { "\(path): at byte offset \(offset): \(message)" }
}
