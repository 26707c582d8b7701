import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The failure of one `lttng` (or `lttng-sessiond`) invocation: the command line, its exit status and its output.
public struct LTTngCommandError: Error, CustomStringConvertible, Sendable {
    /// The full command line that was run, shell-quoted for copy and paste.
    public let commandLine: String
    /// The exit status of the command, or -1 when it could not be started or timed out.
    public let exitStatus: Int32
    /// Everything the command wrote to its standard error.
    public let standardError: String
    /// Everything the command wrote to its standard output.
    public let standardOutput: String
    /// A short explanation added by this library (e.g. "timed out"), empty when the command itself failed.
    public let reason: String

    /// Creates an error for a command line, its status and output.
    public init(commandLine: String, exitStatus: Int32, standardError: String, standardOutput: String = "", reason: String = "") {
        self.commandLine = commandLine
        self.exitStatus = exitStatus
        self.standardError = standardError
        self.standardOutput = standardOutput
        self.reason = reason
    }

    /// A human-readable description naming the command, the status and its standard error.
    public var description: String {
        var s = "`\(commandLine)` failed"
        if !reason.isEmpty { s += " (\(reason))" }
        if exitStatus >= 0 { s += " with exit status \(exitStatus)" }
        let err = standardError.trimmingCharacters(in: .whitespacesAndNewlines)
        if !err.isEmpty { s += ": \(err)" }
        return s
    }
}

/// How to reach one session daemon with the `lttng` command: the environment and an optional launcher
/// prefix (e.g. `nsenter` into the daemon's private mount namespace).
public struct LTTngCLI: Sendable {
    /// The path (or name, looked up in `PATH`) of the `lttng` executable.
    public var lttngPath: String
    /// The environment every `lttng` invocation gets (at least `LTTNG_HOME`).
    public var environment: [String: String]
    /// Arguments placed before `lttng` (empty for the ambient daemon).
    public var launcherPrefix: [String]

    /// Creates a command runner.
    /// - Parameters:
    ///   - lttngPath: the `lttng` executable; the default looks it up in `PATH`.
    ///   - environment: the environment of each invocation; the default is this process's environment.
    ///   - launcherPrefix: a command placed before `lttng` (e.g. `["nsenter", "--mount=/proc/42/ns/mnt", "--"]`).
    public init(lttngPath: String = "lttng", environment: [String: String] = ProcessInfo.processInfo.environment, launcherPrefix: [String] = []) {
        self.lttngPath = lttngPath
        self.environment = environment
        self.launcherPrefix = launcherPrefix
    }

    /// The daemon this process would reach by default (its own `LTTNG_HOME`, or the root daemon).
    public static var ambient: LTTngCLI { LTTngCLI() }

    /// Runs `lttng --no-sessiond ARGUMENTS…` (never auto-spawning a daemon) and returns its standard output.
    /// - Throws: ``LTTngCommandError`` carrying the command line and its standard error on a non-zero exit.
    @discardableResult
    public func run(_ arguments: [String], timeout: Double = 60) throws -> String {
        let argv = launcherPrefix + [lttngPath, "--no-sessiond"] + arguments
        let result = try runProcess(argv, environment: environment, timeout: timeout)
        if result.status != 0 {
            throw LTTngCommandError(commandLine: shellQuoted(argv), exitStatus: result.status,
                                    standardError: result.stderr, standardOutput: result.stdout)
        }
        return result.stdout
    }

    /// Whether a session daemon answers on this endpoint (runs `lttng list` without spawning one).
    public func isSessionDaemonReachable() -> Bool {
        (try? run(["list"], timeout: 10)) != nil
    }

    /// The process ids of the applications registered with this daemon (LTTng-UST programs it
    /// can trace), from `lttng list --userspace` (its `PID: N - Name: …` lines).
    public func registeredApplications() throws -> Set<Int32> {
        Self.registeredApplications(inListing: try run(["list", "--userspace"], timeout: 20))
    }

    /// The `PID: N - Name: …` lines' pids in an `lttng list --userspace` listing.
    static func registeredApplications(inListing text: String) -> Set<Int32> {
        var pids = Set<Int32>()
        for line in text.split(separator: "\n") {
            let t = line.drop { $0 == " " }
            guard t.hasPrefix("PID: ") else { continue }
            if let n = Int32(t.dropFirst(5).prefix { $0.isNumber }) { pids.insert(n) }
        }
        return pids
    }
}

/// The outcome of a finished child process.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Quotes arguments for display as a shell command line.
func shellQuoted(_ argv: [String]) -> String {
    argv.map { a in
        if !a.isEmpty && a.allSatisfy({ $0.isLetter || $0.isNumber || "-_./=:,+@%".contains($0) }) { return a }
        return "'" + a.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }.joined(separator: " ")
}

/// Resolves an executable name through `PATH`.
func resolveExecutable(_ name: String, environment: [String: String]) -> String? {
    if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
    let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    for dir in path.split(separator: ":") {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    for dir in ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"] {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// Starts `argv` (`executable` resolved from its first word) with standard input from /dev/null
/// and its output and error streams to `output` and `errorOutput` (a `Pipe` or a `FileHandle`).
/// Throws ``LTTngCommandError`` when it cannot be started.
func launchProcess(_ argv: [String], executable: String, environment: [String: String], output: Any, errorOutput: Any) throws -> Process {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = Array(argv.dropFirst())
    p.environment = environment
    p.standardOutput = output
    p.standardError = errorOutput
    p.standardInput = FileHandle.nullDevice
    do { try p.run() } catch {
        throw LTTngCommandError(commandLine: shellQuoted(argv), exitStatus: -1, standardError: "\(error)", reason: "could not start")
    }
    return p
}

/// Runs a command to completion, capturing both output streams through pipes read until end of file.
func runProcess(_ argv: [String], environment: [String: String], timeout: Double) throws -> ProcessResult {
    guard let exe = resolveExecutable(argv[0], environment: environment) else {
        throw LTTngCommandError(commandLine: shellQuoted(argv), exitStatus: -1, standardError: "", reason: "\(argv[0]) not found in PATH")
    }
    let outPipe = Pipe(), errPipe = Pipe()
    let p = try launchProcess(argv, executable: exe, environment: environment, output: outPipe, errorOutput: errPipe)
    let pid = p.processIdentifier
    let timedOut = TimeoutFlag()
    let killer = DispatchWorkItem {
        timedOut.set()
        kill(pid, SIGKILL)
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
    let outBox = DataBox()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async {
        outBox.data = outPipe.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    let errData = errPipe.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    p.waitUntilExit()
    killer.cancel()
    let out = String(decoding: outBox.data, as: UTF8.self)
    let err = String(decoding: errData, as: UTF8.self)
    if timedOut.isSet {
        throw LTTngCommandError(commandLine: shellQuoted(argv), exitStatus: -1, standardError: err, standardOutput: out,
                                reason: "timed out after \(timeout) s")
    }
    return ProcessResult(status: p.terminationStatus, stdout: out, stderr: err)
}

private final class DataBox: @unchecked Sendable { var data = Data() }

private final class TimeoutFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
