import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A relay daemon (`lttng-relayd`) owned by this process, listening on loopback on three free
/// ports chosen at run time (control, data, live), writing what it receives below
/// ``outputDirectory``. Several (of concurrent tests, say) never collide.
///
/// Call ``stop()`` when done: it signals the daemon by its pid and waits for it. The output
/// directory is kept (it holds the traces the sessions streamed).
public final class PrivateRelayDaemon: @unchecked Sendable {
    /// The control, data and live ports (all on 127.0.0.1).
    public let controlPort: Int, dataPort: Int, livePort: Int
    /// Where the daemon writes the traces (`HOSTNAME/SESSION-DATE-TIME/…` below it).
    public let outputDirectory: URL
    /// The process id of `lttng-relayd`.
    public let pid: Int32
    /// Its log (standard output and error).
    public let logFile: URL
    private let process: Process
    private let home: URL
    private let lock = NSLock()
    private var stopped = false

    /// `net://127.0.0.1:CONTROL:DATA`, for `lttng create --set-url`.
    public var sessionURL: String { "net://127.0.0.1:\(controlPort):\(dataPort)" }

    private init(controlPort: Int, dataPort: Int, livePort: Int, outputDirectory: URL, pid: Int32, logFile: URL, process: Process, home: URL) {
        self.controlPort = controlPort; self.dataPort = dataPort; self.livePort = livePort
        self.outputDirectory = outputDirectory; self.pid = pid; self.logFile = logFile; self.process = process; self.home = home
    }

    /// Ports the kernel reports free now (bound to port 0 on loopback, then released).
    public static func freePorts(_ n: Int) -> [Int] {
        var fds: [Int32] = [], ports: [Int] = []
        for _ in 0..<n {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = 0
            var len = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
            _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
            ports.append(Int(UInt16(bigEndian: addr.sin_port)))
            fds.append(fd)
        }
        for fd in fds { close(fd) }
        return ports
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    public static func isListening(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    /// Starts `lttng-relayd -C tcp://127.0.0.1:P1 -D tcp://127.0.0.1:P2 -L tcp://127.0.0.1:P3 -o DIR`
    /// on free ports and waits until its three ports accept connections (tries other ports if one
    /// was taken meanwhile).
    /// - Throws: ``LTTngCommandError`` with the command line and the daemon's log.
    public static func start(outputDirectory: URL, timeout: Double = 15, relaydPath: String = "lttng-relayd") throws -> PrivateRelayDaemon {
        var env = ProcessInfo.processInfo.environment
        guard let relayd = resolveExecutable(relaydPath, environment: env) else {
            throw LTTngCommandError(commandLine: relaydPath, exitStatus: -1, standardError: "", reason: "lttng-relayd not found")
        }
        let fm = FileManager.default
        try fm.createDirectory(at: outputDirectory, withIntermediateDirectories: true)
        let home = fm.temporaryDirectory.appendingPathComponent("lttng-relayd-home-\(getpid())-\(UUID().uuidString.prefix(8))")
        try fm.createDirectory(at: home, withIntermediateDirectories: true)
        env["LTTNG_HOME"] = home.path
        var lastFailure: LTTngCommandError?
        for _ in 0..<5 {
            let ports = freePorts(3)
            let argv = [relayd, "-C", "tcp://127.0.0.1:\(ports[0])", "-D", "tcp://127.0.0.1:\(ports[1])",
                        "-L", "tcp://127.0.0.1:\(ports[2])", "-o", outputDirectory.path]
            let logFile = home.appendingPathComponent("relayd-\(ports[2]).log")
            _ = fm.createFile(atPath: logFile.path, contents: nil)
            let p: Process
            do { p = try startDaemonProcess(argv, environment: env, log: logFile) } catch {
                try? fm.removeItem(at: home)
                throw error
            }
            let d = PrivateRelayDaemon(controlPort: ports[0], dataPort: ports[1], livePort: ports[2], outputDirectory: outputDirectory,
                                       pid: p.processIdentifier, logFile: logFile, process: p, home: home)
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline && p.isRunning {
                if ports.allSatisfy({ isListening(port: $0) }) { return d }
                usleep(20_000)
            }
            let log = String(decoding: (try? Data(contentsOf: logFile)) ?? Data(), as: UTF8.self)
            let running = p.isRunning
            d.stop(removeHome: false)
            lastFailure = LTTngCommandError(commandLine: shellQuoted(argv), exitStatus: running ? -1 : p.terminationStatus, standardError: log,
                                            reason: running ? "relay daemon did not listen within \(timeout) s" : "relay daemon exited")
            if running { break }   // not a port taken meanwhile: do not retry
        }
        try? fm.removeItem(at: home)
        throw lastFailure!
    }

    /// Stops the daemon by its pid (SIGTERM, then SIGKILL after `grace` seconds) and waits for it.
    /// Calling it more than once is harmless.
    public func stop(grace: Double = 5) { stop(grace: grace, removeHome: true) }

    private func stop(grace: Double = 5, removeHome: Bool) {
        lock.lock()
        if stopped { lock.unlock(); return }
        stopped = true
        lock.unlock()
        stopDaemonProcess(process, grace: grace)
        if removeHome { try? FileManager.default.removeItem(at: home) }
    }

    deinit { stop() }
}
