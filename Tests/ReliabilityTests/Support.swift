import Foundation
@_exported import TestSupport
import Testing
import Synchronization
@testable import RunLoopCore
#if canImport(Glibc)
import Glibc
#endif

/// A counter shared by threads.
final class Counter: @unchecked Sendable {
    private let v = Atomic<Int>(0)
    @discardableResult func add(_ n: Int = 1) -> Int { v.add(n, ordering: .relaxed).newValue }
    var value: Int { v.load(ordering: .relaxed) }
    func storeMax(_ n: Int) {
        var cur = v.load(ordering: .relaxed)
        while n > cur {
            let (ok, now) = v.compareExchange(expected: cur, desired: n, ordering: .relaxed)
            if ok { return }
            cur = now
        }
    }
}

/// The states of every thread of this process (`/proc/self/task/*`): name, state letter, wait channel.
func threadStates() -> String {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    var lines: [String] = []
    for t in tasks.sorted() {
        func read(_ f: String) -> String {
            (try? String(contentsOfFile: "/proc/self/task/\(t)/\(f)", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        }
        let stat = read("stat")
        let state = stat.split(separator: ")").last?.split(separator: " ").first.map(String.init) ?? "?"
        lines.append("tid \(t) \(read("comm")) state=\(state) wchan=\(read("wchan"))")
    }
    return lines.joined(separator: "\n")
}

/// Fails the process (a deadlock would otherwise hang CI) with every thread's state if not
/// disarmed within `seconds`.
final class Watchdog: @unchecked Sendable {
    private let done = Atomic<Bool>(false)
    private let sem = DispatchSemaphore(value: 0)
    let label: String

    init(_ label: String, seconds: Double) {
        self.label = label
        let t = Thread { [self] in
            if sem.wait(timeout: .now() + seconds) == .timedOut && !done.load(ordering: .acquiring) {
                let msg = "WATCHDOG: \(label) did not finish within \(seconds) s — deadlock? thread states:\n\(threadStates())\n"
                FileHandle.standardError.write(msg.data(using: .utf8)!)
                abort()
            }
        }
        t.start()
    }

    func disarm() {
        done.store(true, ordering: .releasing)
        sem.signal()
    }
}

/// Polls `cond` until it holds or `seconds` pass.
@discardableResult
func eventually(_ seconds: Double = 10, _ cond: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if cond() { return true }
        usleep(1000)
    }
    return cond()
}

/// A xorshift generator (each thread its own).
struct XorShift: RandomNumberGenerator {
    var s: UInt64
    init(seed: UInt64) { s = seed | 1 }
    mutating func next() -> UInt64 {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17
        return s
    }
}

/// Prints a count line the report and docs quote (`RELIABILITY name key=value …`).
func report(_ name: String, _ fields: KeyValuePairs<String, Any>) {
    let s = fields.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    print("RELIABILITY \(name) \(s)")
}

/// Scale factor for the stress durations (`RELIABILITY_SCALE`, default 1; the sanitizer script
/// uses less, a soak more).
let stressScale: Double = Double(ProcessInfo.processInfo.environment["RELIABILITY_SCALE"] ?? "") ?? 1

/// A pthread-mutex-protected value. The tests use it instead of `Synchronization.Mutex`, whose lock
/// ThreadSanitizer does not see on Linux (every access it guards is reported as a race); TSan
/// intercepts pthread mutexes. See docs/reliability.md.
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let m: UnsafeMutablePointer<pthread_mutex_t>
    init(_ v: Value) { value = v; m = .allocate(capacity: 1); pthread_mutex_init(m, nil) }
    deinit { pthread_mutex_destroy(m); m.deallocate() }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(m); defer { pthread_mutex_unlock(m) }
        return try body(&value)
    }
}
