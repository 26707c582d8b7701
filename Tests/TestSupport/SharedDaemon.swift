import Foundation
import LTTngControl
#if canImport(Glibc)
import Glibc
#endif

/// One private session daemon per test process, started lazily and stopped by pid at exit.
public enum SharedDaemon {
    nonisolated(unsafe) private static var instance: PrivateSessionDaemon?
    private static let lock = NSLock()
    nonisolated(unsafe) private static var counter = 0

    /// The daemon, started on first use.
    public static func get() throws -> PrivateSessionDaemon {
        lock.lock(); defer { lock.unlock() }
        if let d = instance { return d }
        let d = try PrivateSessionDaemon.start()
        instance = d
        atexit { SharedDaemon.stopAtExit() }
        return d
    }

    /// Stops the daemon by pid and removes the scratch directory (registered with atexit).
    public static func stopAtExit() {
        instance?.stop()
        instance = nil
        try? FileManager.default.removeItem(at: scratch)
    }

    /// A session name unique in this process: PREFIX-PID-N.
    public static func uniqueName(_ prefix: String) -> String {
        lock.lock(); defer { lock.unlock() }
        counter += 1
        return "\(prefix)-\(getpid())-\(counter)"
    }

    /// A per-process scratch directory for recorded and hand-built traces.
    public static let scratch: URL = {
        let u = FileManager.default.temporaryDirectory.appendingPathComponent("ctfreader-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: u, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("ctfreader-tests-\(getpid())")) }
        return u
    }()
}

/// Finds an executable product built next to the test bundle (the same `.build/<config>/` folder).
public func builtProduct(_ name: String) throws -> String { try productPath(name) }

/// Runs a program to completion, returning (status, stdout, stderr).
@discardableResult
public func runTool(_ path: String, _ args: [String], environment: [String: String]? = nil) throws -> (status: Int32, out: String, err: String) {
    let r = try runProgram(path, args, environment: environment)
    return (r.status, r.stdout, r.stderr)
}

/// Serializes recordings: every session of the shared daemon traces every registered program, so two
/// recordings at once would see each other's events.
public let recordingLock = NSLock()

/// Records a trace of `ctf-testgen ARGS` with a fresh session on the shared daemon; returns the output directory.
public func recordTestgen(_ args: [String], contexts: [String] = [], buffers: LTTngSession.BufferOwnership = .perUID,
                   subbufferSize: Int? = nil) throws -> URL {
    recordingLock.lock(); defer { recordingLock.unlock() }
    let daemon = try SharedDaemon.get()
    let name = SharedDaemon.uniqueName("ctft")
    let out = SharedDaemon.scratch.appendingPathComponent(name)
    let session = try LTTngSession.create(name: name, outputDirectory: out, cli: daemon.cli)
    try session.enableChannel("chan", subbufferSize: subbufferSize, subbufferCount: subbufferSize == nil ? nil : 4, buffers: buffers)
    try session.enableUserspaceEvents("rltest:*", channel: "chan")
    try session.addContexts(contexts, channel: "chan")
    try session.start()
    // lttng-ust waits at start at most LTTNG_UST_REGISTER_TIMEOUT (3 s by default) for the session
    // daemon to set up the program's buffers, then runs untraced until they come: on a loaded
    // machine a per-PID recording lost thousands of events that way, counted nowhere (seen twice in
    // CI in `DifferentialTests`). -1: wait until registered, so the exact counts hold.
    var environment = daemon.applicationEnvironment
    environment["LTTNG_UST_REGISTER_TIMEOUT"] = "-1"
    if buffers == .perPID {
        // Per-PID buffers belong to the process: once it has exited, the session daemon flushes
        // them when it handles its unregistration, asynchronously, and a stop that overtakes that
        // handling leaves the last packets unwritten, counted nowhere (3 798 of 10 800 events in ~1
        // of 4 runs on a loaded 2-core VM; with a 300 ms pause 2 284; waiting until `lttng list -u`
        // no longer named the process still lost 1 104 in a CI run). So the program stays alive
        // (CTF_TESTGEN_HOLD) until the session has stopped — `lttng stop` flushes a live process's
        // buffers and waits until their data is written — and exits when its standard input closes.
        environment["CTF_TESTGEN_HOLD"] = "1"
        let (status, err) = try runHeld(try builtProduct("ctf-testgen"), args, environment: environment) { try session.stop() }
        try session.destroy()
        if status != 0 { throw TestSetupError(message: "ctf-testgen \(args) exited \(status): \(err)") }
        return out
    }
    let r = try runTool(try builtProduct("ctf-testgen"), args, environment: environment)
    try session.stop()
    try session.destroy()
    if r.status != 0 { throw TestSetupError(message: "ctf-testgen \(args) exited \(r.status): \(r.err)") }
    return out
}

/// Runs `path ARGS`, which prints `done` once it has done its work and then waits for its standard
/// input to close; runs `whileAlive` after `done`, then closes the input and waits for the exit.
/// Returns the exit status and standard error.
func runHeld(_ path: String, _ args: [String], environment: [String: String], whileAlive: () throws -> Void) throws -> (Int32, String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    p.environment = environment
    let input = Pipe(), output = Pipe(), errors = Pipe()
    p.standardInput = input
    p.standardOutput = output
    p.standardError = errors
    try p.run()
    // Everything it prints, up to `done` (or its end, if it fails first).
    var printed = Data()
    while !String(decoding: printed, as: UTF8.self).contains("done\n") {
        let chunk = output.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        printed += chunk
    }
    var failure: Error?
    do { try whileAlive() } catch { failure = error }
    try? input.fileHandleForWriting.close()
    let err = errors.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    if let failure { throw failure }
    return (p.terminationStatus, String(decoding: err, as: UTF8.self))
}

/// Runs `babeltrace2 ARGS` and returns its standard output lines.
public func babeltrace(_ args: [String]) throws -> [Substring] {
    let r = try runTool("/usr/bin/babeltrace2", args)
    if r.status != 0 { throw TestSetupError(message: "babeltrace2 \(args) failed: \(r.err)") }
    return r.out.split(separator: "\n", omittingEmptySubsequences: true)
}
