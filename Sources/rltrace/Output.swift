import ArgumentParser
import Foundation
import CTFReader
import RLAnalysis
#if canImport(Glibc)
import Glibc
#endif

// Where a command's output goes, for every command that writes one (report, export, diff, demo's
// HTML): standard output, or a file that is never half-written and never silently replaced.

/// `-o/--output` and `--force`, shared by the commands that write a file.
struct OutputOptions: ParsableArguments {
    @Option(name: .shortAndLong,
            help: ArgumentHelp("Write to this file instead of standard output (`-` is standard output). An existing file is kept unless --force is given.", valueName: "file"))
    var output: String?
    @Flag(help: "Replace the output file if it exists.")
    var force = false

    /// Refuses an output that cannot be written before anything is read (exit 2 for an existing
    /// file without --force, 1 for a missing directory).
    func validate() throws {
        do { _ = try OutputFile.target(output, force: force) } catch let r as OutputFile.Refusal {
            warn("rltrace: \(r.description)")
            throw ExitCode(r.exitCode)
        }
    }

    /// Writes `text` to the output (see ``writeOutput(to:force:_:)``).
    func write(_ text: String) throws {
        try writeOutput(to: output, force: force) { $0.write(text) }
    }

    /// Lets `body` write the output (see ``writeOutput(to:force:_:)``).
    func write(_ body: (ByteSink) throws -> Void) throws {
        try writeOutput(to: output, force: force, body)
    }
}

/// Decides where the output goes (`nil` and `-`: standard output; an existing file without
/// `force` is refused, exit 2; a missing directory is named, exit 1), lets `body` write to it,
/// then completes it: a file is written to a temporary file beside it and renamed over the path
/// once complete, so a reader never sees part of it; when `body` or the write fails, the
/// temporary file is removed and the path is left as it was.
func writeOutput(to path: String?, force: Bool, _ body: (ByteSink) throws -> Void) throws {
    let out = try OutputFile.open(path, force: force)
    do {
        try body(out.sink)
    } catch {
        out.abandon()
        throw error
    }
    try out.complete()
}

/// An output being written: standard output, a path written in place (a device, a FIFO), or a
/// temporary file renamed over the path when complete.
final class OutputFile {
    /// Where the output goes.
    enum Target: Equatable {
        /// Standard output (no `-o`, or `-o -`).
        case stdout
        /// Written in place: `/dev/stdout` and anything under /dev or /proc, a FIFO, a terminal, a
        /// socket — replacing one by renaming a new file over it would replace the device node or
        /// the FIFO itself (as root, `-o /dev/stdout` once replaced the system's /dev/stdout).
        case inPlace(String)
        /// A regular file (new, or replaced with --force): written beside it, then renamed. For a
        /// symbolic link to a regular file, the file the link names is replaced; the link stays.
        case replace(String)
    }

    /// Why an output is refused before anything is written.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
        var exitCode: Int32
    }

    let sink: ByteSink
    let target: Target
    /// The temporary file (for `.replace`) and its descriptor.
    private var temporary: String?
    private var fd: Int32 = -1
    /// The mode the completed file gets.
    private var mode: mode_t = 0o644

    private init(sink: ByteSink, target: Target, temporary: String?, fd: Int32, mode: mode_t) {
        self.sink = sink; self.target = target; self.temporary = temporary; self.fd = fd; self.mode = mode
    }

    /// Where `path` goes: `nil` and `-` are standard output.
    static func target(_ path: String?, force: Bool) throws -> Target {
        guard let path, path != "-" else { return .stdout }
        if path.isEmpty { throw Refusal(description: "-o: an empty path", exitCode: 64) }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        if absolute.hasPrefix("/dev/") || absolute.hasPrefix("/proc/") { return .inPlace(path) }
        var st = stat()
        if lstat(path, &st) != 0 {
            let dir = (absolute as NSString).deletingLastPathComponent
            var d = stat()
            guard stat(dir, &d) == 0, (d.st_mode & S_IFMT) == S_IFDIR else {
                throw Refusal(description: "cannot write \(path): the directory \(dir) does not exist", exitCode: 1)
            }
            return .replace(path)
        }
        var resolved = path
        if (st.st_mode & S_IFMT) == S_IFLNK {
            // A link: what it names decides (a dangling link is written through, creating its target).
            guard let r = realpath(path, nil) else { return .inPlace(path) }
            resolved = String(cString: r)
            free(r)
            if resolved.hasPrefix("/dev/") || resolved.hasPrefix("/proc/") || stat(resolved, &st) != 0 { return .inPlace(path) }
        }
        switch st.st_mode & S_IFMT {
        case S_IFREG:
            guard force else {
                throw Refusal(description: "\(path) already exists; choose another -o, or --force to replace it", exitCode: 2)
            }
            return .replace(resolved)
        case S_IFDIR:
            throw Refusal(description: "cannot write \(path): it is a directory", exitCode: 1)
        default:
            return .inPlace(path)
        }
    }

    /// Opens the output `path` (see ``target(_:force:)``); refusals and open errors are reported
    /// on standard error and thrown as their exit code.
    static func open(_ path: String?, force: Bool) throws -> OutputFile {
        do {
            switch try target(path, force: force) {
            case .stdout:
                return OutputFile(sink: ByteSink(fd: 1), target: .stdout, temporary: nil, fd: -1, mode: 0)
            case .inPlace(let p):
                return OutputFile(sink: try ByteSink(creating: p), target: .inPlace(p), temporary: nil, fd: -1, mode: 0)
            case .replace(let p):
                let url = URL(fileURLWithPath: p)
                let dir = url.deletingLastPathComponent().path
                var template = Array("\(dir)/.\(url.lastPathComponent).rltrace-XXXXXX".utf8CString)
                let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
                guard fd >= 0 else { throw Refusal(description: "cannot write \(p): \(String(cString: strerror(errno)))", exitCode: 1) }
                let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                // An existing file keeps its mode; a new one gets the umask's.
                var st = stat()
                let mask = umask(0); umask(mask)
                let mode = stat(p, &st) == 0 ? st.st_mode & 0o7777 : 0o666 & ~mask
                return OutputFile(sink: ByteSink(fd: fd, path: p), target: .replace(p), temporary: temporary, fd: fd, mode: mode)
            }
        } catch let r as Refusal {
            warn("rltrace: \(r.description)")
            throw ExitCode(r.exitCode)
        } catch {
            warn("rltrace: \(error)")
            throw ExitCode(1)
        }
    }

    /// Removes the temporary file (the output failed); the path is left as it was.
    func abandon() {
        guard let t = temporary else { return }
        _ = try? sink.finish()
        if fd >= 0 { close(fd); fd = -1 }
        unlink(t)
        temporary = nil
    }

    /// Writes what is pending and puts the output in place (exit 1 when that fails).
    func complete() throws {
        do {
            try sink.finish()
            if let t = temporary, case .replace(let p) = target {
                if fchmod(fd, mode) != 0 || close(fd) != 0 { fd = -1; throw Refusal(description: "cannot write \(p): \(String(cString: strerror(errno)))", exitCode: 1) }
                fd = -1
                guard rename(t, p) == 0 else { throw Refusal(description: "cannot write \(p): \(String(cString: strerror(errno)))", exitCode: 1) }
                temporary = nil
            }
        } catch {
            abandon()
            warn("rltrace: \(error)")
            throw ExitCode(1)
        }
        switch target {
        case .stdout: break
        case .inPlace(let p), .replace(let p): warn("wrote \(p)")
        }
    }

    deinit { abandon() }
}
