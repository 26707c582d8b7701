import Foundation
import Testing

// The hang watchdog's stack samples, symbolized from the trace's own state dump; the
// flight recorder (`rltrace record --on-hang`). Real recordings of `hang-workload` (a RunLoopCore
// program whose main loop computes for 300 ms in `parseHugeDocument` at known times) under a
// private lttng-sessiond started by `rltrace record`.

/// `hang-workload`'s own account: the source lines of `parseHugeDocument` and when it hung.
struct HangWorkloadRun {
    var lines: ClosedRange<Int>
    var hangsAt: [Int]

    init(_ out: String) throws {
        var lines: ClosedRange<Int>?
        var at: [Int] = []
        for l in out.split(separator: "\n") {
            let w = l.split(separator: " ")
            if w.first == "function", w.count == 4 {
                let r = w[3].split(separator: "-").compactMap { Int($0) }
                if r.count == 2 { lines = r[0]...r[1] }
            }
            if w.first == "hang", w.count == 5, let ms = Int(w[3]) { at.append(ms) }
        }
        self.lines = try #require(lines, "hang-workload did not print its function's lines:\n\(out)")
        hangsAt = at
    }
}

/// Runs rltrace with the hang watchdog's threshold in its (and so the program's) environment.
func rltraceWatched(_ args: [String], threshold: String = "100ms", extra: [String: String] = [:]) throws -> Run {
    var env = ProcessInfo.processInfo.environment
    env["RLTRACE_HANG_THRESHOLD"] = threshold
    for (k, v) in extra { env[k] = v }
    let r = try runProgram(binDir.appendingPathComponent("rltrace").path, args, environment: env, timeout: 120)
    return Run(out: r.stdout, err: r.stderr, status: r.status)
}

/// The `hangs --format json` rows.
func hangRows(_ json: String) throws -> [[String: Any]] {
    try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]], "not a JSON array:\n\(json)")
}

/// The frames of every stack sample group of a `hangs --format json` row.
func frames(_ row: [String: Any]) -> [[String: Any]] {
    let hang = row["hang"] as? [String: Any] ?? [:]
    return (hang["stacks"] as? [[String: Any]] ?? []).flatMap { $0["frames"] as? [[String: Any]] ?? [] }
}

/// One recording of one 300 ms hang, shared by the tests of a process.
let oneHangRecording: Result<(dir: String, program: HangWorkloadRun), Error> = Result {
    let dir = NSTemporaryDirectory() + "rltrace-hang-\(getpid())"
    try? FileManager.default.removeItem(atPath: dir)
    let r = try rltraceWatched(["record", "-o", dir, "--quiet", "--", binDir.appendingPathComponent("hang-workload").path,
                                "--hangs", "1", "--first", "300", "--duration", "900"])
    guard r.status == 0 else { throw RecordingFailed(message: "rltrace record: status \(r.status)\n\(r.err)") }
    return (dir, try HangWorkloadRun(r.out))
}

@Suite("hang forensics: the watchdog's stacks, symbolized", .serialized)
struct HangForensicsTests {
    @Test func hangsPrintsTheHungFunctionWithItsSwiftLine() throws {
        let (dir, program) = try oneHangRecording.get()
        let t = try run("rltrace", ["hangs", dir])
        #expect(t.status == 0, "\(t.err)")
        #expect(t.out.contains("watchdog hang #"), "\(t.out)")
        // A frame `parseHugeDocument(_:) (main.swift:LINE)` with LINE inside the function.
        let hit = t.out.split(separator: "\n").first { $0.contains("parseHugeDocument") && $0.contains("(main.swift:") }
        let line = try #require(hit, "no frame of parseHugeDocument with its line:\n\(t.out)")
        let n = Int(line.split(separator: ":").last?.dropLast() ?? "") ?? -1
        #expect(program.lines.contains(n), "line \(n) is not in parseHugeDocument (\(program.lines)): \(line)")
    }

    @Test func hangsJSONCarriesTheFrames() throws {
        let (dir, program) = try oneHangRecording.get()
        let j = try run("rltrace", ["hangs", dir, "--format", "json"])
        #expect(j.status == 0, "\(j.err)")
        let rows = try hangRows(j.out)
        let watched = rows.filter { ($0["hang"] as? [String: Any])?["watchdog"] != nil }
        #expect(watched.count == 1, "\(j.out)")
        let row = try #require(watched.first)
        let w = try #require((row["hang"] as? [String: Any])?["watchdog"] as? [String: Any])
        #expect(w["kind"] as? String == "timer")
        #expect(w["name"] as? String == "parser")
        #expect(w["thresholdNs"] as? Int64 == 100_000_000)
        #expect((w["durationNs"] as? Int64 ?? 0) >= 250_000_000, "\(w)")
        let f = try #require(frames(row).first { ($0["function"] as? String)?.contains("parseHugeDocument") == true }, "\(j.out)")
        #expect((f["file"] as? String)?.hasSuffix("main.swift") == true)
        #expect(program.lines.contains(f["line"] as? Int ?? -1))
        #expect((f["module"] as? String)?.hasSuffix("/hang-workload") == true)
        #expect((f["address"] as? String)?.hasPrefix("0x") == true && (f["offset"] as? String)?.hasPrefix("0x") == true)
        // The same hang in the report (JSON, text, HTML) and the Chrome export.
        let rj = try run("rltrace", ["report", dir, "--format", "json"])
        #expect(rj.out.contains("\"stacks\"") && rj.out.contains("parseHugeDocument"))
        let rt = try run("rltrace", ["report", dir])
        #expect(rt.out.contains("hang stacks") && rt.out.contains("parseHugeDocument"))
        let html = NSTemporaryDirectory() + "rltrace-hang-\(getpid()).html", chrome = NSTemporaryDirectory() + "rltrace-hang-\(getpid()).json"
        defer { try? FileManager.default.removeItem(atPath: html); try? FileManager.default.removeItem(atPath: chrome) }
        #expect(try run("rltrace", ["report", dir, "--format", "html", "-o", html]).status == 0)
        #expect(try String(contentsOfFile: html, encoding: .utf8).contains("parseHugeDocument"))
        #expect(try run("rltrace", ["export", dir, "--format", "chrome", "-o", chrome]).status == 0)
        let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: chrome))) as! [String: Any]
        let instants = (doc["traceEvents"] as! [[String: Any]]).filter { $0["cat"] as? String == "hang" }
        #expect(instants.contains { (($0["args"] as? [String: Any])?["frames"] as? [String])?.contains { $0.contains("parseHugeDocument") } == true })
    }

    /// docs/hangs.md: a watchdog hang is listed whatever --hang-threshold (the program's own
    /// threshold decided), and the header says so; an iteration-only view lists none.
    @Test func aWatchdogHangIsListedAboveAnyThresholdAndTheHeaderSaysSo() throws {
        let (dir, _) = try oneHangRecording.get()
        let t = try run("rltrace", ["hangs", dir, "--threshold", "10s"])
        #expect(t.status == 0, "\(t.err)")
        let lines = t.out.split(separator: "\n")
        #expect(lines.first == "hangs (iterations busy ≥ 10s; and the program's watchdog's, at its own threshold):", "\(t.out)")
        #expect(lines.filter { $0.hasPrefix("  loop ") }.count == 1, "\(t.out)")
        #expect(lines.filter { $0.contains("watchdog hang #") && $0.contains("(threshold 100ms") }.count == 1, "\(t.out)")
        #expect(!t.out.contains("  none"), "\(t.out)")
    }

    /// A trace read where its binaries are not: frames as module+offset, exit 0.
    @Test func missingBinariesShowModuleAndOffset() throws {
        // The program copied, recorded, then deleted.
        let tmp = NSTemporaryDirectory() + "rltrace-gone-\(getpid())"
        try? FileManager.default.removeItem(atPath: tmp)
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: tmp) }
        let copy = tmp + "/hang-workload-copy"
        try FileManager.default.copyItem(atPath: binDir.appendingPathComponent("hang-workload").path, toPath: copy)
        let r = try rltraceWatched(["record", "-o", tmp + "/trace", "--quiet", "--", copy, "--hangs", "1", "--first", "200", "--duration", "700"])
        #expect(r.status == 0, "\(r.err)")
        try FileManager.default.removeItem(atPath: copy)
        let t = try run("rltrace", ["hangs", tmp + "/trace"])
        #expect(t.status == 0, "\(t.err)")
        #expect(t.out.contains("hang-workload-copy+0x"), "\(t.out)")
        #expect(!t.out.contains("parseHugeDocument"))
        #expect(t.out.contains("binary not found"))
        let j = try run("rltrace", ["hangs", tmp + "/trace", "--format", "json"])
        #expect(j.status == 0)
        let fs = try hangRows(j.out).flatMap(frames)
        #expect(fs.contains { $0["unresolved"] as? String == "binary not found" && ($0["module"] as? String)?.hasSuffix("hang-workload-copy") == true })
        // The shared recording, its binaries looked for under a root that has none of them.
        let (dir, _) = try oneHangRecording.get()
        let s = try runProgram(binDir.appendingPathComponent("rltrace").path, ["hangs", dir],
                               environment: ProcessInfo.processInfo.environment.merging(["RLTRACE_SYSROOT": "/nonexistent-root"]) { $1 })
        #expect(s.status == 0)
        #expect(s.stdout.contains("hang-workload+0x") && !s.stdout.contains("parseHugeDocument"), "\(s.stdout)")
    }
}

@Suite("flight recorder: rltrace record --on-hang", .serialized)
struct FlightRecorderTests {
    func snapshots(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { !$0.hasPrefix(".") }.sorted {
            (Int($0.split(separator: "-").last ?? "") ?? 0) < (Int($1.split(separator: "-").last ?? "") ?? 0)
        }.map { dir + "/" + $0 }
    }

    @Test("a hang that ends as the program exits (before the watchdog's next tick) still ends: its snapshot is taken, a file trace holds its hang_end")
    func hangEndingAtExit() throws {
        let dir = NSTemporaryDirectory() + "rltrace-fr-exit-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The run's 700 ms end passes during the 300 ms hang begun at 400 ms: the program returns
        // and exits within a millisecond of the hang's end, the watchdog ticking every 25 ms.
        let workload = [binDir.appendingPathComponent("hang-workload").path, "--hangs", "1", "--first", "400", "--hold", "300", "--duration", "700"]
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let r = try rltraceWatched(["record", "--on-hang", "100ms", "-o", dir + "/oh", "--"] + workload)
        #expect(r.status == 0, "\(r.err)")
        #expect(snapshots(dir + "/oh").count == 1, "\(r.err)")
        let j = try run("rltrace", ["hangs", dir + "/oh", "--format", "json"])
        let watched = try hangRows(j.out).compactMap { ($0["hang"] as? [String: Any])?["watchdog"] as? [String: Any] }
        // The watchdog counts a hang from its first look at the stuck loop, up to one tick (25 ms
        // at 100ms) after the callout began, later under load (CI: 15.7 ms, 285.5 ms of 300): a
        // 300 ms hang lasts at least 300 − 25 − 25 (scheduling) ms to it — not cut at exit.
        #expect(watched.count == 1 && (watched.first?["durationNs"] as? Int64 ?? 0) >= 250_000_000, "\(j.out)")
        let f = try rltraceWatched(["record", "-o", dir + "/file", "--quiet", "--"] + workload)
        #expect(f.status == 0, "\(f.err)")
        let counts = try eventNameCounts(dir + "/file")
        #expect(counts["runloop:hang_begin"] == 1 && counts["runloop:hang_end"] == 1, "\(counts)")
    }

    @Test func twoHangsLeaveTwoSnapshotsEachWithItsHangAndWhatCameBefore() throws {
        let dir = NSTemporaryDirectory() + "rltrace-fr-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try rltraceWatched(["record", "--on-hang", "100ms", "-o", dir, "--",
                                    binDir.appendingPathComponent("hang-workload").path, "--hangs", "2", "--first", "600", "--every", "1000", "--duration", "2300"])
        #expect(r.status == 0, "\(r.err)")
        let program = try HangWorkloadRun(r.out)
        #expect(program.hangsAt.count == 2)
        let snaps = snapshots(dir)
        #expect(snaps.count == 2, "\(snaps)\n\(r.err)")
        #expect(r.err.contains("2 snapshots"))
        // Each snapshot: its own hang (the k-th), with events from well before it.
        var ids: [UInt64] = []
        for (k, snap) in snaps.enumerated() {
            let j = try run("rltrace", ["hangs", snap, "--format", "json"])
            #expect(j.status == 0, "\(j.err)")
            let watched = try hangRows(j.out).compactMap { ($0["hang"] as? [String: Any])?["watchdog"] as? [String: Any] }
            #expect(watched.count == k + 1, "snapshot \(k + 1) holds \(watched.count) watchdog hangs")
            let mine = try #require(watched.last)
            ids.append(mine["hangId"] as? UInt64 ?? 0)
            #expect(mine["durationNs"] != nil, "the snapshot lacks the end of hang \(k + 1)")
            #expect((mine["samples"] as? Int ?? 0) >= 1, "the snapshot lacks the stack samples of hang \(k + 1)")
            let report = try JSONSerialization.jsonObject(with: Data(try run("rltrace", ["report", snap, "--format", "json"]).out.utf8)) as! [String: Any]
            let begin = (report["trace"] as! [String: Any])["beginNs"] as! Int64
            #expect((mine["stuckSinceNs"] as! Int64) - begin >= 400_000_000, "snapshot \(k + 1) begins too late to show what led to its hang")
            // Recorded by default (no CPU clock context): the watchdog's readings of the hung
            // callout, in the snapshot, give its on-CPU time and state by the report's rule.
            let reported = (report["loops"] as! [[String: Any]]).flatMap { $0["hangs"] as! [[String: Any]] }
            let h = try #require(reported.last, "snapshot \(k + 1): no hang in the report")
            let cpu = try #require(h["onCpuNs"] as? Int64, "snapshot \(k + 1)'s hang has no on-CPU time: \(h)")
            #expect(cpu > 0 && h["state"] as? String == (cpu * 4 >= h["busyNs"] as! Int64 ? "computing" : "blocked"), "\(h)")
        }
        #expect(Set(ids).count == 2)
        // The directory: two hangs, and what both snapshots hold counted once (babeltrace2's lines,
        // without the delta column, as the oracle).
        let j = try run("rltrace", ["hangs", dir, "--format", "json"])
        let watched = try hangRows(j.out).filter { ($0["hang"] as? [String: Any])?["watchdog"] != nil }
        #expect(watched.count == 2, "\(j.out)")
        #expect(watched.allSatisfy { frames($0).contains { ($0["function"] as? String)?.contains("parseHugeDocument") == true } })
        let t = try run("rltrace", ["hangs", dir])
        #expect(t.out.components(separatedBy: "watchdog hang #").count == 3, "\(t.out)")
        let bt = try #require(which("babeltrace2"))
        var distinct = Set<Substring>(), total = 0
        for snap in snaps {
            let lines = try run(bt, [snap]).out.split(separator: "\n")
            total += lines.count
            for l in lines { distinct.insert(l.replacingOccurrences(of: #"\(\+[0-9.?]+\) "#, with: "", options: .regularExpression)[...]) }
        }
        let report = try JSONSerialization.jsonObject(with: Data(try run("rltrace", ["report", dir, "--format", "json"]).out.utf8)) as! [String: Any]
        let events = (report["trace"] as! [String: Any])["events"] as! Int
        #expect(events == distinct.count, "rltrace read \(events) events; babeltrace2 shows \(distinct.count) distinct of \(total)")
        #expect(events < total, "the snapshots do not overlap: the dedup was not exercised")
    }

    /// A snapshot names its perform-blocks by the block-name pool (docs/tracepoints.md, "Constant
    /// pools"): the hung block in the watchdog's hang and in the report, and every block of the
    /// report, as many as babeltrace2 shows entries of.
    @Test func aSnapshotNamesItsBlocks() throws {
        let dir = NSTemporaryDirectory() + "rltrace-fr-blocks-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try rltraceWatched(["record", "--on-hang", "100ms", "-o", dir, "--",
                                    binDir.appendingPathComponent("hang-workload").path, "--hangs", "1", "--first", "600",
                                    "--duration", "1200", "--blocks", "1"])
        #expect(r.status == 0, "\(r.err)")
        let snap = try #require(snapshots(dir).first, "no snapshot: \(r.err)")
        let j = try run("rltrace", ["hangs", snap, "--format", "json"])
        let watched = try hangRows(j.out).compactMap { ($0["hang"] as? [String: Any])?["watchdog"] as? [String: Any] }
        let hang = try #require(watched.last, "\(j.out)")
        #expect(hang["kind"] as? String == "block" && hang["name"] as? String == "parse-block", "\(hang)")
        let report = try JSONSerialization.jsonObject(with: Data(try run("rltrace", ["report", snap, "--format", "json"]).out.utf8)) as! [String: Any]
        let loops = report["loops"] as! [[String: Any]]
        let blocks = loops.flatMap { $0["items"] as! [[String: Any]] }.filter { $0["kind"] as? String == "block" }
        #expect(Set(blocks.compactMap { $0["name"] as? String }) == ["beat-0", "beat-1", "beat-2", "parse-block"], "\(blocks)")
        let lines = try run(try #require(which("babeltrace2")), [snap]).out.split(separator: "\n")
        #expect(blocks.reduce(0) { $0 + ($1["count"] as? Int ?? 0) } == lines.filter { $0.contains("runloop:block_entry") }.count)
        let culprits = loops.flatMap { $0["hangs"] as! [[String: Any]] }.compactMap { $0["culprit"] as? [String: Any] }
        #expect(culprits.contains { $0["kind"] as? String == "block" && $0["name"] as? String == "parse-block" }, "\(culprits)")
    }

    @Test func noHangLeavesNoSnapshot() throws {
        let dir = NSTemporaryDirectory() + "rltrace-fr-none-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try rltraceWatched(["record", "--on-hang", "100ms", "-o", dir, "--",
                                    binDir.appendingPathComponent("hang-workload").path, "--hangs", "0", "--duration", "800"])
        #expect(r.status == 0, "\(r.err)")
        #expect(snapshots(dir).isEmpty)
        #expect(r.err.contains("no snapshot was taken"))
    }

    @Test func theSnapshotLimitHoldsAndIsReported() throws {
        let dir = NSTemporaryDirectory() + "rltrace-fr-max-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try rltraceWatched(["record", "--on-hang", "100ms", "--max-snapshots", "1", "--buffer", "1M", "-o", dir, "--",
                                    binDir.appendingPathComponent("hang-workload").path, "--hangs", "2", "--first", "300", "--every", "600", "--hold", "200", "--duration", "1400"])
        #expect(r.status == 0, "\(r.err)")
        #expect(snapshots(dir).count == 1)
        #expect(r.err.contains("limit of 1 snapshot"), "\(r.err)")
    }
}
