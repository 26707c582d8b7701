import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A session daemon (`lttng-sessiond --no-kernel`) owned by this process, under a temporary `LTTNG_HOME`.
///
/// As a non-root user the daemon is private by construction (its run directory is `$LTTNG_HOME/.lttng`).
/// As root, `lttng-sessiond` always uses the global `/var/run/lttng`, so the daemon is started in a private
/// mount namespace (`unshare -m`) where a temporary directory is bind-mounted over `/var/run/lttng`; its
/// application socket is placed at `$LTTNG_HOME/.lttng/lttng-ust-sock-8`, where traced programs run with
/// ``applicationEnvironment`` register, and every `lttng` command enters the namespace with `nsenter`.
/// Several such daemons (e.g. of concurrent test processes) therefore never see each other.
///
/// Call ``stop()`` when done; it signals the daemon by its pid, waits for it and removes the temporary directory.
public final class PrivateSessionDaemon: @unchecked Sendable {
    /// The temporary directory used as `LTTNG_HOME`.
    public let home: URL
    /// The process id of `lttng-sessiond`.
    public let pid: Int32
    /// Whether the daemon runs in its own mount namespace (the root case).
    public let usesMountNamespace: Bool
    /// How to run `lttng` commands against this daemon.
    public let cli: LTTngCLI
    /// The daemon's log file (its standard output and error).
    public let logFile: URL

    private let process: Process
    private let lock = NSLock()
    private var stopped = false

    /// The environment a traced program needs so it registers with this daemon: this process's environment
    /// with `LTTNG_HOME` set to ``home``.
    public var applicationEnvironment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["LTTNG_HOME"] = home.path
        return env
    }

    private init(home: URL, pid: Int32, usesMountNamespace: Bool, cli: LTTngCLI, logFile: URL, process: Process) {
        self.home = home
        self.pid = pid
        self.usesMountNamespace = usesMountNamespace
        self.cli = cli
        self.logFile = logFile
        self.process = process
    }

    /// Starts a private session daemon and waits until it answers `lttng list`.
    /// - Parameters:
    ///   - timeout: how long to wait for the daemon to answer, in seconds.
    ///   - sessiondPath: the `lttng-sessiond` executable (looked up in `PATH` by default).
    ///   - hostname: as root, the host name the daemon sees (its own UTS namespace, `unshare -u`):
    ///     the name its traces' `env.hostname` and a relay daemon's `HOST/` directory take — one
    ///     machine standing for several hosts of a fleet. Nil: the machine's.
    /// - Throws: ``LTTngCommandError`` with the daemon's command line and log when it does not start or answer.
    public static func start(timeout: Double = 15, sessiondPath: String = "lttng-sessiond", hostname: String? = nil) throws -> PrivateSessionDaemon {
        var env = ProcessInfo.processInfo.environment
        guard let sessiond = resolveExecutable(sessiondPath, environment: env) else {
            throw LTTngCommandError(commandLine: sessiondPath, exitStatus: -1, standardError: "", reason: "lttng-sessiond not found")
        }
        let fm = FileManager.default
        let home = fm.temporaryDirectory.appendingPathComponent("lttng-home-\(getpid())-\(UUID().uuidString.prefix(8))")
        let dotLTTng = home.appendingPathComponent(".lttng")
        let rundir = home.appendingPathComponent("rundir")
        try fm.createDirectory(at: dotLTTng, withIntermediateDirectories: true)
        try fm.createDirectory(at: rundir, withIntermediateDirectories: true)
        env["LTTNG_HOME"] = home.path
        let logFile = home.appendingPathComponent("sessiond.log")
        _ = fm.createFile(atPath: logFile.path, contents: nil)

        let isRoot = geteuid() == 0
        var argv: [String]
        if isRoot {
            guard let unshare = resolveExecutable("unshare", environment: env) else {
                throw LTTngCommandError(commandLine: "unshare", exitStatus: -1, standardError: "", reason: "unshare not found (needed to isolate a root session daemon)")
            }
            try? fm.createDirectory(atPath: "/var/run/lttng", withIntermediateDirectories: true)
            // Each root daemon needs its own agent port; pick one from the pid to avoid clashing with others.
            let agentPort = 20000 + Int(getpid() % 20000) + Int.random(in: 0..<5000)
            let setName = hostname == nil ? "" : "hostname \"$5\" && "
            let script = setName + "mount --bind \"$1\" /var/run/lttng && exec \"$2\" --no-kernel --apps-sock=\"$3\" --agent-tcp-port=\"$4\""
            argv = [unshare, "-m"] + (hostname == nil ? [] : ["-u"]) + ["--propagation", "private", "--", "/bin/sh", "-c", script, "sh",
                    rundir.path, sessiond, dotLTTng.appendingPathComponent("lttng-ust-sock-8").path, String(agentPort)] + (hostname.map { [$0] } ?? [])
        } else {
            if hostname != nil {
                throw LTTngCommandError(commandLine: sessiondPath, exitStatus: -1, standardError: "", reason: "a host name of its own needs root (a UTS namespace)")
            }
            argv = [sessiond, "--no-kernel"]
        }
        let p: Process
        do { p = try startDaemonProcess(argv, environment: env, log: logFile) } catch {
            try? fm.removeItem(at: home)
            throw error
        }
        let pid = p.processIdentifier
        let cli = LTTngCLI(environment: env,
                           launcherPrefix: isRoot ? ["nsenter", "--mount=/proc/\(pid)/ns/mnt", "--"] : [])
        let daemon = PrivateSessionDaemon(home: home, pid: pid, usesMountNamespace: isRoot, cli: cli, logFile: logFile, process: p)
        let deadline = Date().addingTimeInterval(timeout)
        var lastError = ""
        while Date() < deadline {
            if !p.isRunning { break }
            // The daemon is ready when its client socket answers and the app socket exists.
            do {
                try cli.run(["list"], timeout: 10)
                let appSock = isRoot ? dotLTTng.appendingPathComponent("lttng-ust-sock-8").path
                                     : dotLTTng.appendingPathComponent("lttng-ust-sock-8").path
                if fm.fileExists(atPath: appSock) { return daemon }
            } catch let e as LTTngCommandError {
                lastError = e.standardError
            }
            usleep(50_000)
        }
        let log = String(decoding: (try? Data(contentsOf: logFile)) ?? Data(), as: UTF8.self)
        daemon.stop()
        throw LTTngCommandError(commandLine: shellQuoted(argv), exitStatus: p.isRunning ? -1 : p.terminationStatus,
                                standardError: log + lastError, reason: "session daemon did not become reachable within \(timeout) s")
    }

    /// Stops the daemon by its pid (SIGTERM, then SIGKILL after `grace` seconds), waits for it and removes ``home``.
    /// Calling it more than once is harmless.
    public func stop(grace: Double = 5) {
        lock.lock()
        if stopped { lock.unlock(); return }
        stopped = true
        lock.unlock()
        stopDaemonProcess(process, grace: grace)
        try? FileManager.default.removeItem(at: home)
    }

    deinit { stop() }
}

/// Stops a daemon started by ``startDaemonProcess(_:environment:log:)`` by its pid: SIGTERM, then
/// SIGKILL after `grace` seconds; waits for it to end.
func stopDaemonProcess(_ process: Process, grace: Double) {
    guard process.isRunning else { return }
    let pid = process.processIdentifier
    kill(pid, SIGTERM)
    let deadline = Date().addingTimeInterval(grace)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning { kill(pid, SIGKILL) }
    process.waitUntilExit()
}

/// Starts a daemon `argv` (run in the foreground, so its pid is the daemon's) with its output
/// appended to `log`. Throws ``LTTngCommandError`` when it cannot be started.
func startDaemonProcess(_ argv: [String], environment: [String: String], log: URL) throws -> Process {
    if !FileManager.default.fileExists(atPath: log.path) { _ = FileManager.default.createFile(atPath: log.path, contents: nil) }
    let logHandle = try FileHandle(forWritingTo: log)
    defer { try? logHandle.close() }
    return try launchProcess(argv, executable: argv[0], environment: environment, output: logHandle, errorOutput: logHandle)
}
