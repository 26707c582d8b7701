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
    let r = try runTool(try builtProduct("ctf-testgen"), args, environment: environment)
    // Per-PID buffers belong to the process: the session daemon flushes them when it handles the
    // exited process's unregistration, asynchronously. A stop that overtakes that handling can
    // leave the process's last packets unwritten (3798 of 10800 events missing, none counted as
    // discarded, in ~1 of 4 runs on a loaded 2-core VM; a fixed 300 ms pause still lost 2284 in a
    // CI run). So wait until the daemon lists the process no more (`lttng list -u` names every
    // registered application), at most 10 s.
    if buffers == .perPID {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, let apps = try? daemon.cli.run(["list", "-u"], timeout: 10), apps.contains("ctf-testgen") {
            usleep(20_000)
        }
    }
    try session.stop()
    try session.destroy()
    if r.status != 0 { throw TestSetupError(message: "ctf-testgen \(args) exited \(r.status): \(r.err)") }
    return out
}

/// Runs `babeltrace2 ARGS` and returns its standard output lines.
public func babeltrace(_ args: [String]) throws -> [Substring] {
    let r = try runTool("/usr/bin/babeltrace2", args)
    if r.status != 0 { throw TestSetupError(message: "babeltrace2 \(args) failed: \(r.err)") }
    return r.out.split(separator: "\n", omittingEmptySubsequences: true)
}
