import Foundation
#if canImport(Glibc)
import Glibc
#endif

// What every test target needs to run the package's programs: where the built products are, and one
// process runner (output through files, so a child that leaves a daemon holding its stdout cannot
// hang the test; an optional time limit).

/// The build folder holding the running test bundle and the package's executables.
public let productsDirectory: URL = {
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    return URL(fileURLWithPath: exe).deletingLastPathComponent()
}()

/// An error in a test's own set-up (a product not built, a tool missing).
public struct TestSetupError: Error, CustomStringConvertible {
    /// What went wrong.
    public var message: String
    /// Creates the error.
    public init(message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// The path of the package executable `name`, built next to the test bundle (looked for in the
/// bundle's folder and up to three folders above it). Throws ``TestSetupError`` when absent.
public func productPath(_ name: String) throws -> String {
    var candidates: [URL] = []
    var dir = productsDirectory
    for _ in 0..<4 {
        candidates.append(dir.appendingPathComponent(name))
        dir = dir.deletingLastPathComponent()
    }
    for c in candidates where FileManager.default.isExecutableFile(atPath: c.path) { return c.path }
    throw TestSetupError(message: "cannot find built product \(name) near the test bundle (looked at \(candidates.map(\.path)))")
}

/// The path of `name` on `PATH`, if any.
public func which(_ name: String) -> String? {
    for d in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let p = "\(d)/\(name)"
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    return nil
}

/// A finished run of a program.
public struct ProgramRun: Sendable {
    /// The exit status (or the signal number, for a program killed by one).
    public var status: Int32
    /// Everything it wrote to standard output and standard error, as bytes.
    public var stdoutBytes: [UInt8], stderrBytes: [UInt8]
    /// The same as text (invalid UTF-8 replaced by U+FFFD).
    public var stdout: String { String(decoding: stdoutBytes, as: UTF8.self) }
    public var stderr: String { String(decoding: stderrBytes, as: UTF8.self) }
    /// Wall time from start to exit.
    public var seconds: Double
    /// Its process id.
    public var pid: Int32
    /// Whether it ended by a signal (a trap included) rather than by exiting.
    public var killedBySignal: Bool
}

/// Runs `path args` to completion: standard input from `stdin` (else /dev/null), `environment`
/// (else this process's). With `timeout` (seconds), a program still running then is terminated and
/// `timedOut` is called; the run is returned as it ended.
public func runProgram(_ path: String, _ args: [String], environment: [String: String]? = nil, stdin: FileHandle? = nil,
                       timeout: Double? = nil, timedOut: (() -> Void)? = nil) throws -> ProgramRun {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    if let environment { p.environment = environment }
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("test-run-\(getpid())-\(UUID().uuidString)")
    let outURL = base.appendingPathExtension("out"), errURL = base.appendingPathExtension("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: outURL); try? FileManager.default.removeItem(at: errURL) }
    let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
    p.standardOutput = out
    p.standardError = err
    p.standardInput = stdin ?? FileHandle.nullDevice
    let start = Date()
    try p.run()
    if let timeout {
        let deadline = start.addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(2_000) }
        if p.isRunning {
            p.terminate()
            timedOut?()
            // SIGTERM may be blocked or handled slowly (a child inherits the signal mask of the
            // thread that started it): after 5 s more, SIGKILL, so a test never waits forever.
            let grace = Date().addingTimeInterval(5)
            while p.isRunning && Date() < grace { usleep(10_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        }
    }
    p.waitUntilExit()
    let seconds = Date().timeIntervalSince(start)
    try? out.close(); try? err.close()
    return ProgramRun(status: p.terminationStatus,
                      stdoutBytes: [UInt8](FileManager.default.contents(atPath: outURL.path) ?? Data()),
                      stderrBytes: [UInt8](FileManager.default.contents(atPath: errURL.path) ?? Data()),
                      seconds: seconds, pid: p.processIdentifier, killedBySignal: p.terminationReason == .uncaughtSignal)
}
