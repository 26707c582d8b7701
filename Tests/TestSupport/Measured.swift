import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What one measured run of a program cost (through `trace-workload --measure`).
public struct MeasuredRun: Sendable {
    /// Peak resident set size in KiB (`ru_maxrss`).
    public var maxRSSKiB: Int
    /// User and system CPU seconds, and wall-clock seconds from spawn to exit.
    public var userSeconds: Double, systemSeconds: Double, wallSeconds: Double
    /// The program's wait status.
    public var status: Int32
    /// "rss" or "timeout" when the helper killed the program, nil otherwise.
    public var killed: String?
    /// Its standard error.
    public var stderr: String
}

/// Runs `argv` through `helper --measure` (the `trace-workload` program: it fork()s the program from
/// a small process and reads wait4's rusage — Linux carries a process's peak RSS across exec, so a
/// program spawned straight from a large test or benchmark process would report at least that
/// process's size). Standard output goes to `stdoutPath`; the helper kills the program when its
/// resident set passes `killAboveMB`, or after `timeout` seconds when given.
public func runMeasured(_ argv: [String], helper: String, stdoutPath: String = "/dev/null", killAboveMB: Int,
                        timeout: Double? = nil) throws -> MeasuredRun {
    let tag = FileManager.default.temporaryDirectory.appendingPathComponent("measured-\(getpid())-\(UUID().uuidString.prefix(8))").path
    let errPath = tag + ".err", figuresPath = tag + ".rusage"
    defer { unlink(errPath); unlink(figuresPath) }
    let full = [helper, "--measure", figuresPath, "--kill-above-mb", String(killAboveMB)]
        + (timeout.map { ["--timeout", String($0)] } ?? []) + ["--"] + argv
    var fa = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&fa)
    defer { posix_spawn_file_actions_destroy(&fa) }
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&fa, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&fa, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let cargs = full.map { strdup($0) } + [nil]
    defer { cargs.forEach { free($0) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, helper, &fa, nil, cargs, environ)
    guard rc == 0 else { throw TestSetupError(message: "cannot spawn \(helper): \(String(cString: strerror(rc)))") }
    var helperStatus: Int32 = 0
    while waitpid(pid, &helperStatus, 0) < 0 && errno == EINTR {}
    let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
    // maxrss_kib user_s sys_s wall_s status killed
    let f = ((try? String(contentsOfFile: figuresPath, encoding: .utf8)) ?? "").split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    guard helperStatus == 0, f.count == 6, let kib = Int(f[0]), let user = Double(f[1]), let sys = Double(f[2]),
          let wall = Double(f[3]), let status = Int32(f[4]) else {
        throw TestSetupError(message: "\(helper) --measure failed for \(argv.joined(separator: " ")) (wait status \(helperStatus)): \(err)")
    }
    return MeasuredRun(maxRSSKiB: kib, userSeconds: user, systemSeconds: sys, wallSeconds: wall, status: status,
                       killed: f[5] == "-" ? nil : f[5], stderr: err)
}
