// `trace-workload --measure`: runs one program and writes its peak RSS and CPU time, for the pipeline
// benchmark (Benchmarks/pipeline-bench) and the bounded-memory test (Tests/rltraceTests/BoundedMemoryTests).
//
//   trace-workload --measure OUT [--kill-above-mb N] [--timeout S] -- PROGRAM ARGS…
//
// OUT receives one line: `maxrss_kib user_s sys_s wall_s status killed`, where status is the
// program's wait status and killed is `rss`, `timeout` or `-`. Standard input, output and error are
// the program's. This process exits 0 when it could measure (whatever the program did), 2 otherwise.
//
// Why a helper: Linux keeps a process's peak RSS (ru_maxrss) across execve, taking the old address
// space's high-water mark into it, and a posix_spawn (vfork) child's old address space is its
// parent's. A program spawned straight from a large process (a test runner, a Swift program with
// Foundation) therefore reports at least its parent's peak RSS. This helper is small (no Foundation)
// and starts the program with fork(), whose copy holds only the helper's few private pages, so the
// program's ru_maxrss is its own. It also kills the program when its resident set passes a bound
// (it has failed by then; this keeps a runaway command from taking minutes and gigabytes) or when it
// runs too long.
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Seconds on CLOCK_MONOTONIC.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// VmRSS of `pid` in KiB, read from /proc without Foundation.
func residentKiB(of pid: pid_t) -> Int? {
    let fd = open("/proc/\(pid)/status", O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buf = [UInt8](repeating: 0, count: 4096)
    let n = read(fd, &buf, buf.count)
    guard n > 0 else { return nil }
    let text = String(decoding: buf[0..<n], as: UTF8.self)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
    return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
}

/// The `--measure` mode; returns this process's exit status.
func measureMode(_ args: [String]) -> Int32 {
    func usage(_ why: String) -> Int32 {
        FileHandle2.err("trace-workload --measure: \(why)\nusage: trace-workload --measure OUT [--kill-above-mb N] [--timeout S] -- PROGRAM ARGS…")
        return 2
    }
    guard let out = args.first else { return usage("no OUT file") }
    var killAboveKiB = Int.max, timeout = Double.infinity
    var i = 1
    while i < args.count && args[i] != "--" {
        guard i + 1 < args.count else { return usage("\(args[i]) needs a value") }
        switch args[i] {
        case "--kill-above-mb": guard let v = Int(args[i + 1]) else { return usage("--kill-above-mb takes MB") }; killAboveKiB = v * 1024
        case "--timeout": guard let v = Double(args[i + 1]) else { return usage("--timeout takes seconds") }; timeout = v
        default: return usage("unknown option \(args[i])")
        }
        i += 2
    }
    let program = Array(args.dropFirst(i + 1))
    guard i < args.count, !program.isEmpty else { return usage("no program after --") }
    // Everything the child needs is allocated before fork: it only calls execvp and _exit.
    let cargs = program.map { strdup($0) } + [nil]
    let start = monotonicSeconds()
    let pid = fork()
    if pid == 0 {
        execvp(cargs[0]!, cargs)
        _exit(127)
    }
    guard pid > 0 else { return usage("fork failed: errno \(errno)") }
    // This thread waits for the program (its end is seen at once, so the wall time is exact);
    // a watcher thread checks its resident set and the time every 20 ms. (Polling wait4 every
    // 2 ms, as before, woke this process 500 times a second beside the program: a program that
    // keeps both cores busy, as rltrace's two-thread commands do, was preempted each time, and
    // its end was seen up to 2 ms late.)
    let watch = Watch(pid: pid, start: start, killAboveKiB: killAboveKiB, timeout: timeout)
    var watcher = pthread_t()
    let unmanaged = Unmanaged.passRetained(watch)
    guard pthread_create(&watcher, nil, { arg in
        let w = Unmanaged<Watch>.fromOpaque(arg!).takeRetainedValue()
        w.run()
        return nil
    }, unmanaged.toOpaque()) == 0 else { unmanaged.release(); return usage("pthread_create failed") }
    // Waited for without reaping it (WNOWAIT): until the watcher has stopped, the pid stays the
    // program's (a zombie), so the watcher can never signal another process that got the pid.
    var info = siginfo_t()
    while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) != 0 {
        if errno != EINTR { return usage("waitid failed: errno \(errno)") }
    }
    let wall = monotonicSeconds() - start
    watch.finished.store(1, ordering: .releasing)
    pthread_join(watcher, nil)
    let killed = watch.killed
    var status: Int32 = 0
    var ru = rusage()
    while wait4(pid, &status, 0, &ru) != pid {
        if errno != EINTR { return usage("wait4 failed: errno \(errno)") }
    }
    func secs(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    let line = "\(ru.ru_maxrss) \(secs(ru.ru_utime)) \(secs(ru.ru_stime)) \(wall) \(status) \(killed)\n"
    let fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard fd >= 0 else { return usage("cannot write \(out)") }
    let bytes = Array(line.utf8)
    _ = bytes.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    return 0
}

/// What the watcher thread of `--measure` checks: the program's resident set and its running time,
/// every 20 ms until the waiting thread sets `finished`; it kills the program past either bound.
final class Watch {
    let pid: pid_t, start: Double, killAboveKiB: Int, timeout: Double
    /// Set (1) by the waiting thread once the program has ended.
    let finished = Atomic<Int32>(0)
    /// `rss`, `timeout` or `-`: read by the waiting thread after pthread_join.
    var killed = "-"
    init(pid: pid_t, start: Double, killAboveKiB: Int, timeout: Double) {
        self.pid = pid; self.start = start; self.killAboveKiB = killAboveKiB; self.timeout = timeout
    }

    func run() {
        while finished.load(ordering: .acquiring) == 0 && killed == "-" {
            usleep(20_000)
            if finished.load(ordering: .acquiring) != 0 { return }
            // (An ended program is a zombie until the waiting thread reaps it after this thread
            // stops: it has no VmRSS, and a kill of it does nothing.)
            if let rss = residentKiB(of: pid), rss > killAboveKiB { kill(pid, SIGKILL); killed = "rss" }
            else if monotonicSeconds() - start > timeout { kill(pid, SIGKILL); killed = "timeout" }
        }
    }
}
