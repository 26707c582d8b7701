import Foundation

/// The machine's CPU time so far, from /proc/stat's first line, in USER_HZ ticks (10 ms): all of
/// it (user through steal) and the part the hypervisor stole from the vCPUs. nil where /proc/stat
/// has no such line. Benchmarks report a run's steal with it; tests allow for it where a clock
/// that counts stolen time (the perf task clock) is compared with one that does not.
public func cpuTicks() -> (total: Int64, steal: Int64)? {
    guard let s = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
          let line = s.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
    let v = line.split(separator: " ").dropFirst().compactMap { Int64($0) }
    guard v.count >= 8 else { return nil }
    return (v.prefix(8).reduce(0, +), v[7])
}
