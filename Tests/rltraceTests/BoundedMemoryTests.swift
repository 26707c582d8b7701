import Foundation
import LTTngControl
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Rltrace's analyses stream the trace, so their memory must not depend on its length.
// Two real run-loop traces are recorded here (trace-workload, a deterministic RunLoopCore program, under
// a private lttng-sessiond with a blocking channel: nothing is discarded), one about four times as long
// as the other. Every analysis command then runs on each as a child process, as users run it, and its
// peak resident set comes from wait4's rusage (through `trace-workload --measure`, see
// measureChildMemory). Each must stay within 64 MB, and the longer trace may add at most 8 MB.
// Memory, not time, is asserted; two children run at a time to keep the suite quick.

/// The analysis commands whose memory is bounded, with their arguments (the trace path is appended).
enum PipelineCommand: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case report, timeline, histogram, hangs, export, perfetto, dump

    /// The rltrace arguments before the trace directory (`EXPORT` stands for the output file).
    var arguments: [String] {
        switch self {
        case .report: ["report", "--format", "json"]  // its JSON gives the trace's event counts too
        case .timeline: ["timeline"]
        case .histogram: ["histogram", "--of", "sleep", "--by", "reason"]
        case .hangs: ["hangs"]
        case .export: ["export", "--format", "chrome", "-o", "EXPORT"]
        case .perfetto: ["export", "--format", "perfetto", "-o", "EXPORT"]
        case .dump: ["dump"]
        }
    }

    var testDescription: String { rawValue }
}

/// One child's figures.
struct ChildMemory: CustomStringConvertible {
    /// Peak resident set size in KiB (`ru_maxrss` from wait4).
    var peakKiB: Int
    /// The wait status.
    var status: Int32
    /// Killed by this test because its resident set passed ``BoundedMemory/killAboveMB`` (it fails anyway).
    var killed: Bool
    /// The last lines of its standard error.
    var stderrTail: String

    var peakMB: Double { Double(peakKiB) / 1024 }
    var exitedNormally: Bool { !killed && status & 0x7f == 0 && (status >> 8) & 0xff == 0 }
    var description: String {
        killed ? String(format: "> %.0f MB (killed)", peakMB) : String(format: "%.1f MB", peakMB)
            + (exitedNormally ? "" : " (wait status \(status): \(stderrTail))")
    }
}

/// The recorded traces and every command's figures on them, measured once per test process.
struct BoundedMemory {
    /// The bound on any command's peak RSS.
    static let limitMB = 64.0
    /// How much more the ~4× longer trace may need.
    static let growthMB = 8.0
    /// A child whose RSS passes this is killed (it has failed; this keeps runaway commands quick).
    static let killAboveMB = 160
    /// trace-workload steps of the two traces (about 10 events a step).
    static let steps = (small: 5_000, large: 20_000)
    /// Blocks in the one burst of each trace, per step.
    static let burstPerStep = 10

    var smallEvents: Int
    var largeEvents: Int
    var discarded: Int
    var small: [PipelineCommand: ChildMemory]
    var large: [PipelineCommand: ChildMemory]

    var table: String {
        var s = String(format: "rltrace peak RSS, trace of %d events vs %d events (bound %.0f MB, growth ≤ %.0f MB):\n",
                       smallEvents, largeEvents, Self.limitMB, Self.growthMB)
        for c in PipelineCommand.allCases {
            let a = small[c]!, b = large[c]!
            func pad(_ t: String, _ n: Int) -> String { t + String(repeating: " ", count: max(1, n - t.count)) }
            s += "  " + pad(c.rawValue, 10) + pad(a.description, 24) + pad(b.description, 24)
                + String(format: "growth %+.1f MB\n", b.peakMB - a.peakMB)
        }
        return s
    }
}

struct BoundedMemorySetupFailed: Error, CustomStringConvertible { var description: String }

/// Runs `argv` with standard output to `stdoutPath` and returns its peak RSS, through
/// `trace-workload --measure` (a small helper that fork()s the program and reads wait4's rusage: Linux
/// carries a process's peak RSS across exec, so a program spawned straight from this large test process
/// would report at least this process's size). The helper kills the program when its resident set passes
/// `killAboveMB`.
func measureChildMemory(_ argv: [String], stdoutPath: String, killAboveMB: Int) throws -> ChildMemory {
    let r = try runMeasured(argv, helper: binDir.appendingPathComponent("trace-workload").path, stdoutPath: stdoutPath, killAboveMB: killAboveMB)
    return ChildMemory(peakKiB: r.maxRSSKiB, status: r.status, killed: r.killed?.hasPrefix("rss") ?? false,
                       stderrTail: r.stderr.split(separator: "\n").suffix(3).joined(separator: " | "))
}

/// Records `trace-workload STEPS` into `dir` under `daemon` with a blocking channel (nothing discarded).
func recordWorkload(steps: Int, into dir: URL, daemon: PrivateSessionDaemon) throws {
    let session = try LTTngSession.create(name: "rlmem-\(getpid())-\(steps)", outputDirectory: dir, cli: daemon.cli)
    try session.enableChannel("rlmem", subbufferSize: 1 << 20, subbufferCount: 8, buffers: .perUID, blocking: true)
    try session.enableUserspaceEvents("runloop:*", channel: "rlmem")
    try session.addContexts(["vpid", "vtid", "procname"], channel: "rlmem")
    try session.start()
    let p = Process()
    p.executableURL = binDir.appendingPathComponent("trace-workload")
    // Half-way, one iteration drains a burst of blocks, 10 a step (50 000 and 200 000 callouts):
    // an iteration's callouts must not be kept one by one (LoopModel.calloutLimit).
    p.arguments = [String(steps), "--burst", String(steps * BoundedMemory.burstPerStep)]
    var env = daemon.applicationEnvironment
    env["LTTNG_UST_ALLOW_BLOCKING"] = "1"
    p.environment = env
    p.standardOutput = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    try session.stop()
    try session.destroy()
    guard p.terminationStatus == 0 else { throw BoundedMemorySetupFailed(description: "trace-workload \(steps) exited \(p.terminationStatus)") }
}

let boundedMemory: Result<BoundedMemory, Error> = Result {
    let fm = FileManager.default
    guard fm.isExecutableFile(atPath: binDir.appendingPathComponent("trace-workload").path) else {
        throw BoundedMemorySetupFailed(description: "trace-workload is not built next to the tests (\(binDir.path)): build with `swift build --build-tests` (scripts/test.sh does)")
    }
    let work = fm.temporaryDirectory.appendingPathComponent("rltrace-memory-\(getpid())")
    try? fm.removeItem(at: work)
    try fm.createDirectory(at: work, withIntermediateDirectories: true)
    defer { try? fm.removeItem(at: work) }
    let smallDir = work.appendingPathComponent("small"), largeDir = work.appendingPathComponent("large")
    do {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        try recordWorkload(steps: BoundedMemory.steps.small, into: smallDir, daemon: daemon)
        try recordWorkload(steps: BoundedMemory.steps.large, into: largeDir, daemon: daemon)
    }
    // Every (trace, command) pair, longest first, two at a time.
    // RLTRACE_UNDER_TEST=PATH measures another rltrace build (e.g. an older one, to see this test fail).
    let rltrace = ProcessInfo.processInfo.environment["RLTRACE_UNDER_TEST"] ?? binDir.appendingPathComponent("rltrace").path
    let jobs = [(largeDir, "large"), (smallDir, "small")].flatMap { t in PipelineCommand.allCases.map { (t.0, t.1, $0) } }
    let results = Mutex2<[String: ChildMemory]>([:])
    let failures = Mutex2<[String]>([])
    DispatchQueue.concurrentPerform(iterations: jobs.count) { i in
        let (dir, label, command) = jobs[i]
        let key = "\(label)-\(command.rawValue)"
        let out = command == .report ? work.appendingPathComponent("\(label).json").path : "/dev/null"
        let exportFile = work.appendingPathComponent("\(label).\(command.rawValue).out").path
        let args = command.arguments.map { $0 == "EXPORT" ? exportFile : $0 }
        do {
            let m = try measureChildMemory([rltrace] + args + [dir.path], stdoutPath: out, killAboveMB: BoundedMemory.killAboveMB)
            results.withLock { $0[key] = m }
        } catch {
            failures.withLock { $0.append("\(key): \(error)") }
        }
        if command == .export || command == .perfetto { unlink(exportFile) }
    }
    if let f = failures.withLock({ $0 }).first { throw BoundedMemorySetupFailed(description: f) }
    func counts(_ label: String) throws -> (events: Int, discarded: Int) {
        let path = work.appendingPathComponent("\(label).json").path
        guard let data = fm.contents(atPath: path),
              let doc = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let trace = doc["trace"] as? [String: Any], let events = trace["events"] as? Int else {
            throw BoundedMemorySetupFailed(description: "rltrace report --format json on the \(label) trace gave no trace.events (\(results.withLock { $0["\(label)-report"] }?.description ?? "not run"))")
        }
        return (events, trace["discardedEvents"] as? Int ?? 0)
    }
    let s = try counts("small"), l = try counts("large")
    let all = results.withLock { $0 }
    var small: [PipelineCommand: ChildMemory] = [:], large: [PipelineCommand: ChildMemory] = [:]
    for c in PipelineCommand.allCases {
        small[c] = all["small-\(c.rawValue)"]
        large[c] = all["large-\(c.rawValue)"]
    }
    let figures = BoundedMemory(smallEvents: s.events, largeEvents: l.events, discarded: s.discarded + l.discarded,
                                small: small, large: large)
    print(figures.table)
    return figures
}

/// A lock-protected value (Foundation's NSLock; the tests run in Swift 5 mode).
final class Mutex2<T>: @unchecked Sendable {
    private var value: T
    private let lock = NSLock()
    init(_ v: T) { value = v }
    func withLock<R>(_ body: (inout T) -> R) -> R { lock.lock(); defer { lock.unlock() }; return body(&value) }
}

@Suite("rltrace's peak memory is bounded and does not grow with the trace (docs/benchmarks.md)", .serialized)
struct BoundedMemoryTests {
    @Test func theTwoTracesAreCompleteAndTheSecondAboutFourTimesLonger() throws {
        let f = try boundedMemory.get()
        #expect(f.discarded == 0, "events were discarded while recording: the blocking channel did not block")
        // About 10 events per step and 2 per burst block: the figures below compare traces of known,
        // different lengths.
        #expect(f.smallEvents >= BoundedMemory.steps.small * (5 + 2 * BoundedMemory.burstPerStep), "small trace: \(f.smallEvents) events")
        #expect(Double(f.largeEvents) >= 3.5 * Double(f.smallEvents), "\(f.largeEvents) events is not about 4 × \(f.smallEvents)")
    }

    @Test(arguments: PipelineCommand.allCases)
    func peakRSSIsBoundedAndDoesNotGrowWithTheTrace(_ command: PipelineCommand) throws {
        let f = try boundedMemory.get()
        let small = try #require(f.small[command]), large = try #require(f.large[command])
        let name = "rltrace \(command.arguments.joined(separator: " "))"
        #expect(small.exitedNormally, "\(name) on \(f.smallEvents) events: \(small)")
        #expect(large.exitedNormally, "\(name) on \(f.largeEvents) events: \(large)")
        // A child's peak RSS cannot be zero: this checks the measurement itself.
        #expect(small.peakKiB > 1024 && large.peakKiB > 1024, "wait4 reported no memory: \(small), \(large)")
        #expect(small.peakMB <= BoundedMemory.limitMB, "\(name) on \(f.smallEvents) events peaked at \(small), above \(BoundedMemory.limitMB) MB")
        #expect(large.peakMB <= BoundedMemory.limitMB, "\(name) on \(f.largeEvents) events peaked at \(large), above \(BoundedMemory.limitMB) MB")
        #expect(large.peakMB - small.peakMB <= BoundedMemory.growthMB,
                "\(name): \(small) on \(f.smallEvents) events, \(large) on \(f.largeEvents) events: grows with the trace by \(String(format: "%.1f", large.peakMB - small.peakMB)) MB (at most \(BoundedMemory.growthMB))")
    }
}
