// reader-bench: records multi-million-event LTTng traces with ctf-testgen, then decodes each with CTFReader and
// with `babeltrace2 --component=sink.utils.counter` in child processes, printing events/s, the ratio and the peak
// RSS (from wait4) of both, side by side, for two trace sizes (the second ten times the first).
//
//   reader-bench [EVENTS]        (default 2000000; the large trace has 10× EVENTS)
//   reader-bench --decode DIR    (child mode: decode every event of DIR with CTFReader and print the count)
//   reader-bench --decode-all DIR (child mode: same, also reading every integer field of every event)
//   reader-bench --decode-concurrent DIR (child mode: --decode with the streams decoded on threads of their
//                                own and the merge on the main thread: CTFTraceSet.forEachTimestampInTimeOrder)
//   reader-bench --record N DIR  (only record a trace of N events into DIR)
import Foundation
import CTFReader
import LTTngControl
#if canImport(Glibc)
import Glibc
#endif

func decodeMode(_ dir: String, allFields: Bool) -> Int32 {
    do {
        let set = try CTFTraceSet(paths: [dir])
        var it = set.makeMergedIterator()
        var count = 0
        var checksum: Int64 = 0
        while try it.next() {
            count += 1
            // Order-dependent: --decode-concurrent must give the same sum (the same events, in the same order).
            checksum = checksum &* 31 &+ it.currentTimestamp
            if allFields {
                // Read every integer field of the stream context and the payload.
                it.withCurrent { s in
                    var i = 0
                    while let v = s.streamContextInteger(at: i) { checksum &+= v; i += 1 }
                    for j in 0..<s.payloadFieldCount { checksum &+= s.payloadInteger(at: j) ?? 0 }
                }
            }
        }
        print("\(count) \(checksum)")
        return 0
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        return 1
    }
}

/// `--decode` with the streams decoded on threads of their own (one per stream) and merged in time
/// order on this thread: the same count and the same order-dependent checksum.
func decodeConcurrentMode(_ dir: String) -> Int32 {
    do {
        let set = try CTFTraceSet(paths: [dir])
        // (Sums in raw memory: variables captured by the closure would be boxed and checked for
        // exclusive access at every event.)
        let sums = UnsafeMutablePointer<Int64>.allocate(capacity: 2)
        sums.initialize(repeating: 0, count: 2)
        defer { sums.deallocate() }
        try set.forEachTimestampInTimeOrder { ts in
            sums[0] &+= 1
            sums[1] = sums[1] &* 31 &+ ts
        }
        print("\(sums[0]) \(sums[1])")
        return 0
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        return 1
    }
}

struct ChildResult { var seconds: Double; var cpuSeconds: Double; var maxRSSKiB: Int; var stdout: String; var status: Int32 }

/// Runs a child with posix_spawn and measures wall time and peak RSS with wait4.
func measure(_ argv: [String]) throws -> ChildResult {
    let outPath = NSTemporaryDirectory() + "reader-bench-\(getpid()).out"
    var fa: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&fa)
    posix_spawn_file_actions_addopen(&fa, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let cargs = argv.map { strdup($0) } + [nil]
    defer { cargs.forEach { free($0) } }
    var pid: pid_t = 0
    let start = Date()
    let rc = posix_spawnp(&pid, argv[0], &fa, nil, cargs, environ)
    posix_spawn_file_actions_destroy(&fa)
    guard rc == 0 else { throw NSError(domain: "spawn", code: Int(rc), userInfo: [NSLocalizedDescriptionKey: "cannot spawn \(argv[0])"]) }
    var status: Int32 = 0
    var ru = rusage()
    _ = wait4(pid, &status, 0, &ru)
    let secs = Date().timeIntervalSince(start)
    let out = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    unlink(outPath)
    let cpu = Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6 + Double(ru.ru_stime.tv_sec) + Double(ru.ru_stime.tv_usec) / 1e6
    return ChildResult(seconds: secs, cpuSeconds: cpu, maxRSSKiB: Int(ru.ru_maxrss), stdout: out, status: status)
}

func record(_ daemon: PrivateSessionDaemon, events: Int, into dir: URL, testgen: String) throws {
    let name = "bench-\(events)-\(getpid())"
    let s = try LTTngSession.create(name: name, outputDirectory: dir, cli: daemon.cli)
    try s.enableChannel("chan", subbufferSize: 1 << 20, subbufferCount: 8, buffers: .perUID, blocking: true)
    try s.enableUserspaceEvents("rltest:tick", channel: "chan")
    // The contexts run-loop analyses record (thread and process name).
    try s.addContexts(["vtid", "procname"], channel: "chan")
    try s.start()
    var env = daemon.applicationEnvironment
    env["LTTNG_UST_ALLOW_BLOCKING"] = "1"
    let p = Process()
    p.executableURL = URL(fileURLWithPath: testgen)
    p.arguments = ["bench", String(events), "4"]
    p.environment = env
    try p.run()
    p.waitUntilExit()
    try s.stop()
    try s.destroy()
}

func duSize(_ dir: URL) -> Int {
    var total = 0
    if let en = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: [.fileSizeKey]) {
        for case let u as URL in en { total += (try? u.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0 }
    }
    return total
}

let args = CommandLine.arguments
if args.count >= 3 && args[1] == "--decode" { exit(decodeMode(args[2], allFields: false)) }
if args.count >= 3 && args[1] == "--decode-all" { exit(decodeMode(args[2], allFields: true)) }
if args.count >= 3 && args[1] == "--decode-concurrent" { exit(decodeConcurrentMode(args[2])) }

if args.count >= 4 && args[1] == "--record" {
    // reader-bench --record EVENTS DIR: only record a trace (for profiling).
    let tg = URL(fileURLWithPath: URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path).deletingLastPathComponent().appendingPathComponent("ctf-testgen").path
    let d = try PrivateSessionDaemon.start()
    try record(d, events: Int(args[2]) ?? 1_000_000, into: URL(fileURLWithPath: args[3]), testgen: tg)
    d.stop()
    exit(0)
}

let baseEvents = args.count >= 2 ? Int(args[1]) ?? 2_000_000 : 2_000_000
let selfPath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
let testgen = URL(fileURLWithPath: selfPath).deletingLastPathComponent().appendingPathComponent("ctf-testgen").path
guard FileManager.default.isExecutableFile(atPath: testgen) else {
    print("ctf-testgen not found next to reader-bench (\(testgen)); build it: swift build -c release --product ctf-testgen")
    exit(2)
}
let work = FileManager.default.temporaryDirectory.appendingPathComponent("reader-bench-\(getpid())")
try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: work) }
let daemon = try PrivateSessionDaemon.start()
var rows: [String] = []
print("reader-bench: recording traces of \(baseEvents) and \(baseEvents * 10) events (rltest:tick {u64, i32} + vtid/procname context, 4 threads, per-uid buffers)…")
for n in [baseEvents, baseEvents * 10] {
    let dir = work.appendingPathComponent("t\(n)")
    try record(daemon, events: n, into: dir, testgen: testgen)
    let bytes = duSize(dir)
    sync() // let the freshly written trace reach the disk before timing anything
    _ = try measure([selfPath, "--decode", dir.path]) // warm the page cache for both contenders
    // Best of alternating runs (the machine's cores are shared with other work): babeltrace2 twice,
    // CTFReader's one-thread and concurrent decoding three times each, interleaved so that both
    // see the same minutes of the machine.
    var mines: [ChildResult] = [], bts: [ChildResult] = [], alls: [ChildResult] = [], pars: [ChildResult] = []
    for round in 0..<3 {
        mines.append(try measure([selfPath, "--decode", dir.path]))
        pars.append(try measure([selfPath, "--decode-concurrent", dir.path]))
        if round < 2 {
            bts.append(try measure(["babeltrace2", "--component=sink.utils.counter", "--params=step=+0", dir.path]))
            alls.append(try measure([selfPath, "--decode-all", dir.path]))
        }
    }
    let best = { (runs: [ChildResult]) in runs.min(by: { $0.seconds < $1.seconds })! }
    let mine = best(mines), bt = best(bts), all = best(alls), par = best(pars)
    let mineCount = Int(mine.stdout.split(separator: " ").first ?? "") ?? -1
    // The counter sink prints e.g. "       2000000 Event messages".
    let btCount = bt.stdout.split(separator: "\n").compactMap { line -> Int? in
        let t = line.trimmingCharacters(in: .whitespaces)
        return t.hasSuffix("Event messages") ? Int(t.split(separator: " ")[0]) : nil
    }.last ?? -1
    let mineRate = Double(mineCount) / mine.seconds, btRate = Double(btCount) / bt.seconds
    let mineCPURate = Double(mineCount) / mine.cpuSeconds, btCPURate = Double(btCount) / bt.cpuSeconds
    print(String(format: "trace of %d events (%.0f MB on disk):", n, Double(bytes) / 1e6))
    print(String(format: "  CTFReader          %9d events  wall %7.3f s = %7.2f M ev/s  cpu %7.3f s = %7.2f M ev/s  peak RSS %6.1f MB",
                 mineCount, mine.seconds, mineRate / 1e6, mine.cpuSeconds, mineCPURate / 1e6, Double(mine.maxRSSKiB) / 1024))
    print(String(format: "  babeltrace2 counter %8d events  wall %7.3f s = %7.2f M ev/s  cpu %7.3f s = %7.2f M ev/s  peak RSS %6.1f MB",
                 btCount, bt.seconds, btRate / 1e6, bt.cpuSeconds, btCPURate / 1e6, Double(bt.maxRSSKiB) / 1024))
    let allCount = Int(all.stdout.split(separator: " ").first ?? "") ?? -1
    let allRate = Double(allCount) / all.seconds, allCPURate = Double(allCount) / all.cpuSeconds
    print(String(format: "  CTFReader, every integer field read %9d events  wall %7.3f s = %7.2f M ev/s  cpu %7.3f s = %7.2f M ev/s  peak RSS %6.1f MB",
                 allCount, all.seconds, allRate / 1e6, all.cpuSeconds, allCPURate / 1e6, Double(all.maxRSSKiB) / 1024))
    let parCount = Int(par.stdout.split(separator: " ").first ?? "") ?? -1
    let parRate = Double(parCount) / par.seconds, parCPURate = Double(parCount) / par.cpuSeconds
    print(String(format: "  CTFReader, streams on their own threads %9d events  wall %7.3f s = %7.2f M ev/s  cpu %7.3f s = %7.2f M ev/s  peak RSS %6.1f MB",
                 parCount, par.seconds, parRate / 1e6, par.cpuSeconds, parCPURate / 1e6, Double(par.maxRSSKiB) / 1024))
    print(String(format: "  ratio (concurrent / one thread): %.2fx by wall time", mine.seconds / par.seconds))
    if par.stdout != mine.stdout { print("  WARNING: the concurrent decoding differs (count and order checksum: \(par.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) against \(mine.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))") }
    print(String(format: "  ratio (CTFReader / babeltrace2): %.1fx by wall time, %.1fx by CPU time (timestamps and names only)", mineRate / btRate, mineCPURate / btCPURate))
    print(String(format: "  ratio (CTFReader reading every integer field / babeltrace2): %.1fx by wall time, %.1fx by CPU time", allRate / btRate, allCPURate / btCPURate))
    if mineCount != btCount { print("  WARNING: event counts differ (CTFReader \(mineCount), babeltrace2 \(btCount))") }
    rows.append("\(n) \(mine.maxRSSKiB) \(bt.maxRSSKiB)")
    try? FileManager.default.removeItem(at: dir)
}
daemon.stop()
let r0 = rows[0].split(separator: " ").compactMap { Int($0) }, r1 = rows[1].split(separator: " ").compactMap { Int($0) }
print(String(format: "peak RSS growth for a 10x larger trace: CTFReader %+.1f MB, babeltrace2 %+.1f MB",
             Double(r1[1] - r0[1]) / 1024, Double(r1[2] - r0[2]) / 1024))
