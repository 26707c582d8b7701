import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Function, file and line of an address in a binary, as a symbolizer reports them (several when
/// the address is in code inlined into its caller: innermost first).
struct SourceLocation: Sendable {
    var function: String
    var file: String?
    var line: Int?
    /// The line the function starts at (its declaration), and its first address, when known.
    var functionLine: Int? = nil
    var functionStart: UInt64? = nil
}

/// The external tools that turn (binary, address) into names: one `llvm-symbolizer` process for
/// the whole run, fed in batches on its standard input (JSON output, one line per request); or,
/// when llvm-symbolizer is missing, `addr2line` once per binary and batch. Swift names are
/// demangled by `swift-demangle --simplified` (llvm-symbolizer demangles only C++), once per batch.
/// The tools are looked up next to `swift` (the toolchain's, which reads what the Swift compiler
/// writes), then on `PATH`; `RLTRACE_SYMBOLIZER` names the symbolizer (or `none`).
final class SymbolizerProcess: @unchecked Sendable {
    enum Tool { case llvm(String), addr2line(String), none }
    let tool: Tool
    let demangler: String?
    private var process: Process?
    private var input: FileHandle?
    private var reader: LineReader?
    private let lock = NSLock()

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let toolchain = findExecutable("swift", environment).map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().deletingLastPathComponent().path }
        func find(_ name: String) -> String? {
            if let dir = toolchain, FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") { return "\(dir)/\(name)" }
            return findExecutable(name, environment)
        }
        if let chosen = environment["RLTRACE_SYMBOLIZER"], !chosen.isEmpty {
            if chosen == "none" { tool = .none }
            else if chosen.hasSuffix("addr2line") { tool = findExecutable(chosen, environment).map { .addr2line($0) } ?? .none }
            else { tool = findExecutable(chosen, environment).map { .llvm($0) } ?? .none }
        } else if let l = find("llvm-symbolizer") {
            tool = .llvm(l)
        } else if let a = findExecutable("addr2line", environment) {
            tool = .addr2line(a)
        } else {
            tool = .none
        }
        demangler = find("swift-demangle")
    }

    deinit {
        try? input?.close()
        process?.waitUntilExit()
    }

    /// Describes the tools for messages.
    var toolName: String {
        switch tool {
        case .llvm(let p): p
        case .addr2line(let p): p
        case .none: "none"
        }
    }

    /// The locations of `requests` (binary path, address in the file), in order; an empty list
    /// where the tool knows nothing (or failed).
    func locate(_ requests: [(path: String, address: UInt64)]) -> [[SourceLocation]] {
        lock.lock(); defer { lock.unlock() }
        var out: [[SourceLocation]]
        switch tool {
        case .llvm(let exe): out = llvmLocate(exe, requests)
        case .addr2line(let exe): out = addr2lineLocate(exe, requests)
        case .none: out = requests.map { _ in [] }
        }
        demangle(&out)
        return out
    }

    // MARK: llvm-symbolizer

    private func startLLVM(_ exe: String) -> Bool {
        if process != nil { return process!.isRunning }
        // A symbolizer that dies must not kill rltrace with SIGPIPE: writes then just fail.
        signal(SIGPIPE, SIG_IGN)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = ["--output-style=JSON", "--functions=linkage", "--inlining", "--demangle"]
        let i = Pipe(), o = Pipe()
        p.standardInput = i
        p.standardOutput = o
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { process = Process(); return false }
        process = p
        input = i.fileHandleForWriting
        reader = LineReader(o.fileHandleForReading)
        return true
    }

    private func llvmLocate(_ exe: String, _ requests: [(path: String, address: UInt64)]) -> [[SourceLocation]] {
        var out = [[SourceLocation]](repeating: [], count: requests.count)
        // A path the request syntax cannot carry is not asked about.
        let asked = requests.indices.filter { !requests[$0].path.contains("\"") && !requests[$0].path.contains("\n") }
        guard !asked.isEmpty, startLLVM(exe), let input, let reader else { return out }
        var text = ""
        for i in asked { text += "\"\(requests[i].path)\" 0x\(String(requests[i].address, radix: 16))\n" }
        // Written from another thread: the answers must be read while the requests are written, or
        // both pipes fill up.
        let data = Data(text.utf8)
        let writer = DispatchGroup()
        writer.enter()
        DispatchQueue.global().async {
            try? input.write(contentsOf: data)
            writer.leave()
        }
        for i in asked {
            guard let line = reader.nextLine() else { break }
            guard let obj = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let symbols = obj["Symbol"] as? [[String: Any]] else { continue }
            out[i] = symbols.compactMap { s in
                guard let f = s["FunctionName"] as? String, !f.isEmpty, f != "??" else { return nil }
                let file = (s["FileName"] as? String).flatMap { $0.isEmpty || $0 == "??" ? nil : $0 }
                let line = (s["Line"] as? Int).flatMap { $0 > 0 ? $0 : nil }
                let start = (s["StartLine"] as? Int).flatMap { $0 > 0 ? $0 : nil }
                let startAddress = (s["StartAddress"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
                return SourceLocation(function: f, file: file, line: line, functionLine: start, functionStart: startAddress)
            }
        }
        writer.wait()
        return out
    }

    // MARK: addr2line

    private func addr2lineLocate(_ exe: String, _ requests: [(path: String, address: UInt64)]) -> [[SourceLocation]] {
        var out = [[SourceLocation]](repeating: [], count: requests.count)
        let byPath = Dictionary(grouping: requests.indices, by: { requests[$0].path })
        for (path, indices) in byPath {
            // `-a` prints each address before its answer, so inlined frames (-i) can be told apart.
            let args = ["-e", path, "-f", "-i", "-a"] + indices.map { "0x" + String(requests[$0].address, radix: 16) }
            guard let text = runToEnd(exe, args, input: nil) else { continue }
            var current = -1, k = -1
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false).makeIterator()
            while let l = lines.next() {
                if l.hasPrefix("0x") { k += 1; current = k < indices.count ? indices[k] : -1; continue }
                guard current >= 0, let where_ = lines.next() else { continue }
                let fn = String(l)
                guard fn != "??" else { continue }
                let parts = where_.split(separator: ":")
                let file = parts.first.map(String.init).flatMap { $0 == "??" ? nil : $0 }
                let line = parts.count > 1 ? Int(parts[1].split(separator: " ").first ?? "") : nil
                out[current].append(SourceLocation(function: fn, file: file, line: line.flatMap { $0 > 0 ? $0 : nil }))
            }
        }
        return out
    }

    // MARK: Swift names

    /// Demangles Swift symbols (`$s…`) in place, all of them through one `swift-demangle` run.
    private func demangle(_ out: inout [[SourceLocation]]) {
        var names: [String] = []
        var seen: Set<String> = []
        for locs in out { for l in locs where isSwiftMangled(l.function) && seen.insert(l.function).inserted { names.append(l.function) } }
        guard !names.isEmpty, let exe = demangler,
              let text = runToEnd(exe, ["--simplified", "--compact"], input: names.joined(separator: "\n") + "\n") else { return }
        let demangled = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard demangled.count >= names.count else { return }
        var map: [String: String] = [:]
        for (m, d) in zip(names, demangled) where !d.isEmpty { map[m] = d }
        for i in out.indices { for j in out[i].indices { if let d = map[out[i][j].function] { out[i][j].function = d } } }
    }
}

/// Whether `name` is a mangled Swift symbol.
func isSwiftMangled(_ name: String) -> Bool {
    name.hasPrefix("$s") || name.hasPrefix("$S") || name.hasPrefix("_$s") || name.hasPrefix("$e") || name.hasPrefix("_T0")
}

/// Runs a tool to completion with `input` on its standard input; its standard output (nil when it
/// could not run).
func runToEnd(_ exe: String, _ args: [String], input: String?) -> String? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: exe)
    p.arguments = args
    let o = Pipe(), i = Pipe()
    p.standardOutput = o
    p.standardError = FileHandle.nullDevice
    p.standardInput = input == nil ? FileHandle.nullDevice : i
    signal(SIGPIPE, SIG_IGN)
    do { try p.run() } catch { return nil }
    if let input {
        let h = i.fileHandleForWriting
        let data = Data(input.utf8)
        DispatchQueue.global().async { try? h.write(contentsOf: data); try? h.close() }
    }
    let data = o.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}

/// An executable by name (on `PATH`) or path.
func findExecutable(_ name: String, _ environment: [String: String]) -> String? {
    if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
    for dir in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let p = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

/// Reads lines from a pipe as they come.
final class LineReader: @unchecked Sendable {
    private let handle: FileHandle
    private var buffer = [UInt8]()
    private var start = 0
    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line without its newline; nil at end of file.
    func nextLine() -> String? {
        while true {
            if let nl = buffer[start...].firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[start..<nl], as: UTF8.self)
                start = nl + 1
                if start > 65536 { buffer.removeFirst(start); start = 0 }
                return line
            }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(contentsOf: chunk)
        }
    }
}
