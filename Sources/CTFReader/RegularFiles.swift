import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Opening files of a trace directory without blocking: everything in a trace is untrusted, and a FIFO
/// opened for reading blocks until a writer appears (forever, in a copied or mutated trace), a character
/// device may never end. Only regular files (or symbolic links to them) are read; anything else is
/// refused here and skipped, with a warning naming it, by the callers (`MalformedTests.nonRegularFiles`).
enum RegularFile {
    /// What `path` is when it is not a regular file ("a FIFO", "a socket", …), or nil when it is one.
    static func irregularKind(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }   // (open reports the error)
        return kind(st.st_mode)
    }

    static func kind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: return nil
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFDIR: return "a directory"
        default: return "not a regular file"
        }
    }

    /// Opens a regular file for reading without ever blocking (`O_NONBLOCK`, then `fstat`: a file swapped
    /// for a FIFO between a check and the open is refused too). The caller closes the descriptor.
    /// - Throws: ``CTFReaderError/io(path:message:)`` naming the file and what it is.
    static func open(_ path: String) throws -> Int32 {
        if let k = irregularKind(path) { throw CTFReaderError.io(path: path, message: "\(k), not a regular file: not read") }
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw CTFReaderError.io(path: path, message: String(cString: strerror(errno))) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            close(fd)
            throw CTFReaderError.io(path: path, message: String(cString: strerror(e)))
        }
        if let k = kind(st.st_mode) {
            close(fd)
            throw CTFReaderError.io(path: path, message: "\(k), not a regular file: not read")
        }
        // Back to blocking reads for a regular file (O_NONBLOCK has no effect on them; cleared for clarity).
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// The whole content of a regular file (at most `limit` bytes when given), or nil when it cannot be opened.
    /// - Throws: ``CTFReaderError/io(path:message:)`` when it is not a regular file or a read fails.
    static func read(_ path: String, limit: Int = Int.max) throws -> [UInt8] {
        let fd = try open(path)
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while out.count < limit {
            let want = min(chunk.count, limit - out.count)
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, want) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw CTFReaderError.io(path: path, message: "read failed: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }
}
