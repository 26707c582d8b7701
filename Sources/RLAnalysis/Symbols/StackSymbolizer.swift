import Foundation

/// One frame of a hang's stack sample, as far as it could be resolved (`docs/report-json.md`).
public struct StackFrame: Codable, Sendable, Equatable {
    /// The return address (hex, `0x…`).
    public var address: String
    /// The binary that mapped it, as the traced process saw it (absent: no module reported there).
    public var module: String? = nil
    /// The address within that binary (hex; relative to its load address when position-independent).
    public var offset: String? = nil
    /// The function (Swift names demangled, simplified), source file and line.
    public var function: String? = nil
    public var file: String? = nil
    public var line: Int? = nil
    /// The line the function starts at: given when the address has no line of its own (DWARF line
    /// 0, compiler-generated code such as a `for`-loop's iterator calls in a debug build).
    public var functionLine: Int? = nil
    /// Whether `line` is that of the code just before the address, which itself has none (line 0):
    /// the nearest preceding instruction of the same function with a line, as profilers attribute it.
    public var lineInferred: Bool? = nil
    /// Whether this frame is code inlined into the next one (same address).
    public var inlined: Bool? = nil
    /// Why function and line are missing: `no module`, `binary not found`, `build-id mismatch`,
    /// `no symbolizer`, `no symbol` (absent when resolved).
    public var unresolved: String? = nil

    /// `function (file.swift:line)`, or `function (module+0xoffset)` without a line, or
    /// `module+0xoffset` without a function, or the bare address.
    public var text: String {
        let where_: String
        if let module { where_ = "\((module as NSString).lastPathComponent)+\(offset ?? "?")" } else { where_ = address }
        guard let function else { return where_ }
        if let file, let line { return "\(function) (\((file as NSString).lastPathComponent):\(line))" }
        if let file, let functionLine { return "\(function) (\((file as NSString).lastPathComponent), in the function at line \(functionLine))" }
        return "\(function) (\(where_))"
    }
}

/// Options of symbolization.
public struct SymbolOptions: Sendable {
    /// Resolve function, file and line with the external tools (else module and offset only).
    public var enabled = true
    /// A directory under which the binaries are looked for (their trace paths appended), instead
    /// of where the traced process had them: traces read on another machine (`RLTRACE_SYSROOT`).
    public var sysroot: String? = nil
    /// Defaults from the environment: `RLTRACE_SYMBOLIZER=none` disables, `RLTRACE_SYSROOT`.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        enabled = environment["RLTRACE_SYMBOLIZER"] != "none"
        sysroot = environment["RLTRACE_SYSROOT"].flatMap { $0.isEmpty ? nil : $0 }
    }
}

/// Turns return addresses of a traced process into frames: module and offset from the trace's
/// own state dump (``ModuleMap``), then function, file and line from the binary when it is on
/// this machine with the build id the trace recorded (never failing: what cannot be resolved
/// stays `module+0xoffset`). One symbolizer process serves the whole run; answers are cached.
public final class StackSymbolizer: @unchecked Sendable {
    private let map: ModuleMap
    private let options: SymbolOptions
    private static let shared = SymbolizerProcess()
    private var cache: [CacheKey: [SourceLocation]] = [:]
    /// Per binary path: the file to read (nil: unusable) and why not.
    private var files: [String: (file: String?, reason: String?)] = [:]
    private struct CacheKey: Hashable { var file: String; var address: UInt64 }
    private let lock = NSLock()

    /// Statistics of the run: frames resolved to a line, and time spent in the tools (ns).
    public private(set) var framesSymbolized = 0, toolNs: Int64 = 0

    /// A symbolizer for the binaries `modules` reported.
    public init(modules: [ModuleRecord], options: SymbolOptions = SymbolOptions()) {
        map = ModuleMap(modules)
        self.options = options
    }

    /// The frames of each stack (`pid`, time, return addresses innermost first), resolved in one batch.
    public func frames(_ stacks: [(pid: Int64, ts: Int64, addresses: [UInt64])]) -> [[StackFrame]] {
        lock.lock(); defer { lock.unlock() }
        var result: [[StackFrame]] = []
        var pending: [(stack: Int, frame: Int, file: String, address: UInt64)] = []
        for (si, st) in stacks.enumerated() {
            var out: [StackFrame] = []
            for (fi, a) in st.addresses.enumerated() {
                var f = StackFrame(address: hex(a))
                guard let m = map.module(pid: st.pid, address: a, at: st.ts) else {
                    f.unresolved = "no module"
                    out.append(f)
                    continue
                }
                let fileAddress = ModuleMap.fileAddress(a, in: m)
                f.module = m.path
                f.offset = hex(fileAddress)
                let (file, reason) = usableFile(m)
                if let file, options.enabled {
                    // A return address points after its call: look up the call itself (frame 0 is
                    // where the thread was stopped, exact).
                    pending.append((si, fi, file, fi == 0 || fileAddress == 0 ? fileAddress : fileAddress - 1))
                } else {
                    f.unresolved = reason ?? "symbolization disabled"
                }
                out.append(f)
            }
            result.append(out)
        }
        let missing = Array(Set(pending.map { CacheKey(file: $0.file, address: $0.address) }).filter { cache[$0] == nil })
        if !missing.isEmpty {
            let t0 = DispatchTime.now().uptimeNanoseconds
            let answers = StackSymbolizer.shared.locate(missing.map { ($0.file, $0.address) })
            toolNs += Int64(DispatchTime.now().uptimeNanoseconds - t0)
            for (k, a) in zip(missing, answers) { cache[k] = a }
            inferLines(missing)
        }
        // Expand inlined frames (innermost first) in place, from the last frame backwards.
        for p in pending.reversed() {
            let locs = cache[CacheKey(file: p.file, address: p.address)] ?? []
            var base = result[p.stack][p.frame]
            guard !locs.isEmpty else {
                base.unresolved = { if case .none = StackSymbolizer.shared.tool { return "no symbolizer" }; return "no symbol" }()
                result[p.stack][p.frame] = base
                continue
            }
            var expanded: [StackFrame] = []
            for (i, l) in locs.enumerated() {
                var f = base
                f.function = l.function; f.file = l.file; f.line = l.line
                f.functionLine = l.line == nil ? l.functionLine : nil
                if i == 0, let inferred = inferred[CacheKey(file: p.file, address: p.address)] { f.line = inferred; f.functionLine = nil; f.lineInferred = true }
                f.inlined = i < locs.count - 1 ? true : nil
                expanded.append(f)
            }
            if expanded.contains(where: { $0.line != nil }) { framesSymbolized += 1 }
            result[p.stack].replaceSubrange(p.frame...p.frame, with: expanded)
        }
        return result
    }

    /// Lines inferred for addresses whose innermost location has no line (DWARF line 0).
    private var inferred: [CacheKey: Int] = [:]

    /// For each of `keys` whose answer has a function but no line, the line of the nearest
    /// preceding address of the same function that has one (up to 96 bytes back; one batch).
    private func inferLines(_ keys: [CacheKey]) {
        var probes: [(key: CacheKey, probe: CacheKey)] = []
        for k in keys {
            guard let l = cache[k]?.first, l.line == nil, l.file != nil, let start = l.functionStart, start < k.address else { continue }
            for d in 1...min(96, k.address - start) { probes.append((k, CacheKey(file: k.file, address: k.address - d))) }
        }
        guard !probes.isEmpty else { return }
        let answers = StackSymbolizer.shared.locate(probes.map { ($0.probe.file, $0.probe.address) })
        for (p, a) in zip(probes, answers) where inferred[p.key] == nil {
            // Probes run nearest first: the first with a line in the same function wins.
            if let l = a.first, let line = l.line, l.function == cache[p.key]?.first?.function { inferred[p.key] = line }
        }
    }

    /// The file to read for module `m`, or why there is none.
    private func usableFile(_ m: ModuleRecord) -> (String?, String?) {
        if let known = files[m.path] { return known }
        let r: (String?, String?)
        let path = options.sysroot.map { ($0 as NSString).appendingPathComponent(m.path) } ?? m.path
        if !m.path.hasPrefix("/") {
            r = (nil, "no file")                        // [linux-vdso.so.1]
        } else if !FileManager.default.isReadableFile(atPath: path) {
            r = (nil, "binary not found")
        } else if !isRegularFile(path) {
            r = (nil, "not a regular file")             // a FIFO or a device the trace names: never opened
        } else if let want = m.buildID, let have = elfBuildID(path: path), have != want {
            r = (nil, "build-id mismatch")
        } else {
            r = (path, nil)
        }
        files[m.path] = r
        return r
    }

    /// The symbolizer tool in use (for messages).
    public static var toolDescription: String { shared.toolName }
}

func hex(_ v: UInt64) -> String { "0x" + String(v, radix: 16) }
