// rl-bench support: clocks, threads, statistics, allocation counting, result rows.
import CRunLoopShims
import Foundation
import TestSupport
import RLBenchMallocCounter
import Synchronization

/// CLOCK_MONOTONIC in ns (the clock RunLoopCore, timerfd and LTTng use).
@inline(__always) func nowNs() -> UInt64 { rl_monotonic_ns() }

@inline(never) func blackHole<T>(_ x: T) { withExtendedLifetime(x) {} }

/// The three columns of every workload.
enum Engine: String, CaseIterable, Codable {
    case ours, cf, floor
}

/// Runs `body` on a new pthread (so it gets a fresh run loop of each kind) and returns its result.
func onFreshThread<T>(name: String = "rl-bench", _ body: @escaping () -> T) -> T {
    var result: T?
    let h = Helper(name: name) { result = body() }
    h.join()
    return result!
}

/// A helper thread (signallers, writers); join with the returned handle (TestSupport's RawThread).
typealias Helper = RawThread

/// Percentile (0...1) of unsorted samples (nearest rank).
func percentile(_ xs: [Double], _ p: Double) -> Double {
    guard !xs.isEmpty else { return .nan }
    let s = xs.sorted()
    let i = min(s.count - 1, max(0, Int((p * Double(s.count)).rounded(.up)) - 1))
    return s[i]
}

func median(_ xs: [Double]) -> Double { percentile(xs, 0.5) }

/// Deterministic pseudo-random numbers (same timer dates for every engine).
struct LCG {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return state >> 11
    }
    /// Uniform in 0..<1.
    mutating func unit() -> Double { Double(next() & ((1 << 53) - 1)) / Double(1 << 53) }
}

/// Counts allocations (all threads) made while `body` runs.
func countingAllocations<T>(_ body: () -> T) -> (T, UInt64) {
    rlb_malloc_reset()
    rlb_malloc_counting(1)
    let r = body()
    rlb_malloc_counting(0)
    return (r, rlb_malloc_count())
}

/// A shared monotonic stamp / flag pair for cross-thread workloads.
final class Shared: @unchecked Sendable {
    let stamp = Atomic<UInt64>(0)
    let handled = Atomic<Int>(0)
    let stop = Atomic<Bool>(false)
}

/// Sleeps about `us` microseconds.
func pause(us: Int) {
    var ts = timespec(tv_sec: 0, tv_nsec: us * 1000)
    var rem = timespec()
    while nanosleep(&ts, &rem) != 0 && errno == EINTR { ts = rem }
}

/// Waits (sleeping in short steps) until `cond` holds or `timeoutNs` passed; false on timeout.
@discardableResult
func waitUntil(timeoutNs: UInt64 = 10_000_000_000, _ cond: () -> Bool) -> Bool {
    let end = nowNs() + timeoutNs
    while !cond() {
        if nowNs() > end { return false }
        sched_yield()
    }
    return true
}

func fail(_ msg: String) -> Never {
    FileHandle.standardError.write(Data("rl-bench: \(msg)\n".utf8))
    exit(2)
}
