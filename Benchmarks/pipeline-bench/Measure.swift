// pipeline-bench support: measuring whole commands as child processes, recording traces, counting events.
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Writes a progress line to standard error (the table or JSON goes to standard output).
func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

/// Stops with a message and exit status 2.
func fail(_ msg: String) -> Never {
    FileHandle.standardError.write(Data("pipeline-bench: \(msg)\n".utf8))
    exit(2)
}

/// What one run of a command cost.
struct ChildRun {
    /// Wall-clock seconds, spawn to exit.
    var wall: Double
    /// User + system CPU seconds (wait4's rusage).
    var cpu: Double
    /// Peak resident set size in KiB (`ru_maxrss`).
    var maxRSSKiB: Int
    /// The wait status.
    var status: Int32
    /// "rss" or "timeout" when the measuring helper killed the command, nil otherwise.
    var killed: String?
    /// The command's standard output when it was captured.
    var stdout: String
    /// The last lines of its standard error.
    var stderrTail: String

    /// Exited by itself with status 0.
    var ok: Bool { killed == nil && status & 0x7f == 0 && (status >> 8) & 0xff == 0 }
    var rssMB: Double { Double(maxRSSKiB) / 1024 }
    /// A short description of a failure ("" when ok).
    var failure: String {
        if let k = killed { return k == "rss" ? String(format: "killed above the RSS cap (%.0f MB)", rssMB) : "killed: timeout" }
        if status & 0x7f != 0 { return "killed by signal \(status & 0x7f)" }
        if (status >> 8) & 0xff != 0 { return "exit \((status >> 8) & 0xff): \(stderrTail)" }
        return ""
    }
}

/// Runs `argv` through `trace-workload --measure` and returns its time, CPU and peak RSS.
///
/// The helper fork()s the command from a small process and reads wait4's rusage: Linux keeps a
/// process's peak RSS across execve, and a command spawned straight from this (larger) process would
/// report at least this process's size. Standard output goes to /dev/null unless `captureStdout`.
func measure(_ argv: [String], helper: String, rssCapMB: Int, timeout: Double, captureStdout: Bool = false) throws -> ChildRun {
    let outPath = captureStdout ? FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-bench-\(getpid())-\(UUID().uuidString.prefix(8)).out").path : "/dev/null"
    defer { if captureStdout { unlink(outPath) } }
    let r: MeasuredRun
    do { r = try runMeasured(argv, helper: helper, stdoutPath: outPath, killAboveMB: rssCapMB, timeout: timeout) } catch {
        throw BenchError("\(error)")
    }
    let out = captureStdout ? ((try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "") : ""
    return ChildRun(wall: r.wallSeconds, cpu: r.userSeconds + r.systemSeconds, maxRSSKiB: r.maxRSSKiB, status: r.status, killed: r.killed,
                    stdout: out, stderrTail: r.stderr.split(separator: "\n").suffix(2).joined(separator: " | "))
}

/// An error with a message.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Runs a program to completion (output to standard error, so progress stays visible); true on status 0.
@discardableResult
func runLogged(_ argv: [String]) -> Bool {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: argv[0])
    p.arguments = Array(argv.dropFirst())
    p.standardOutput = FileHandle.standardError
    p.standardError = FileHandle.standardError
    p.standardInput = FileHandle.nullDevice
    do { try p.run() } catch { log("cannot run \(argv[0]): \(error)"); return false }
    p.waitUntilExit()
    return p.terminationStatus == 0
}

/// Bytes of the files below `dir`.
func diskBytes(_ dir: String) -> Int {
    var total = 0
    if let en = FileManager.default.enumerator(at: URL(fileURLWithPath: dir), includingPropertiesForKeys: [.fileSizeKey]) {
        for case let u as URL in en { total += (try? u.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0 }
    }
    return total
}

/// The event count babeltrace2's counter sink printed ("      2000000 Event messages"), or nil.
func counterEvents(_ out: String) -> Int? {
    out.split(separator: "\n").compactMap { line -> Int? in
        let t = line.trimmingCharacters(in: .whitespaces)
        return t.hasSuffix("Event messages") ? Int(t.split(separator: " ")[0]) : nil
    }.last
}

/// Resolves a program name through PATH.
func which(_ name: String) -> String? {
    if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
    for d in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let p = "\(d)/\(name)"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

/// 1-minute load average.
func loadAverage() -> Double? {
    guard let s = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
    return s.split(separator: " ").first.flatMap { Double($0) }
}

/// "3.0M", "300k".
func eventsLabel(_ n: Int) -> String {
    n >= 1_000_000 ? String(format: "%.1fM", Double(n) / 1e6) : String(format: "%.0fk", Double(n) / 1e3)
}
