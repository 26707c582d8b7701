// pipeline-bench: rltrace's analysis commands against babeltrace2 on real run-loop traces, side by side
// in one run (docs/benchmarks.md). It records a trace of rl-example (≥ EVENTS events, default 3 M) and one SCALE
// times larger (default 10×; a longer real recording) with `rltrace record`, then runs, as child
// processes measured through `trace-workload --measure` (wall and CPU time, peak RSS from wait4):
// `rltrace report|timeline|histogram|hangs|export --format chrome|perfetto|dump`, `babeltrace2
// --component=sink.utils.counter`, `babeltrace2` (text) and analysis/rl_bt2_report.py (Debian's
// python3 + bt2). Every command's standard output goes to /dev/null (export writes to a temporary file,
// deleted). Rows carry the issue's targets and PASS/FAIL. `scripts/bench-pipeline.sh` builds and runs
// it; `scripts/bench.sh` runs it after rl-bench. See docs/benchmarks.md.
//
//   pipeline-bench [--json] [--quick] [--events N] [--scale K] [--no-large] [--reps N]
//                  [--rltrace PATH] [--rl-example PATH] [--helper PATH] [--analysis PATH]
//                  [--trace DIR] [--large-trace DIR] [--traces DIR] [--keep]
//                  [--bt2-analysis base|all|none] [--rss-cap MB] [--timeout S] [--only CMD,…]
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// MARK: - options

/// Command-line options.
struct Options {
    var json = false
    var quick = false
    /// Target event count of the base trace.
    var events = 3_000_000
    /// The large trace has about `scale` × the base trace's events.
    var scale = 10
    var large = true
    /// Runs per command on the base trace (best wall time kept); the large trace gets one of
    /// babeltrace2 text and `largeReps` of each rltrace command.
    var reps = 5
    var largeReps = 3
    var rltrace: String?
    var rlExample: String?
    var helper: String?
    var analysis: String?
    var python = "/usr/bin/python3"
    var baseTrace: String?
    var largeTrace: String?
    /// Where recorded traces go (kept, and reused when already there); nil = a temporary folder.
    var tracesDir: String?
    var keep = false
    /// Which traces the (slow) babeltrace2 Python analysis runs on.
    var bt2Analysis = "base"
    var rssCapMB = 2048
    var timeout = 1800.0
    var only: Set<String>?
}

let usage = """
usage: pipeline-bench [--json] [--quick] [--events N] [--scale K] [--no-large] [--reps N]
                      [--rltrace PATH] [--rl-example PATH] [--helper PATH] [--analysis PATH]
                      [--trace DIR] [--large-trace DIR] [--traces DIR] [--keep]
                      [--bt2-analysis base|all|none] [--rss-cap MB] [--timeout S] [--only report,timeline,…]
  --events N       the base trace has at least N events (default 3000000; --quick: 300000)
  --scale K        the large trace has about K × as many (default 10); --no-large: base trace only
  --reps N         runs per command on the base trace, best kept (default 5; --quick: 1)
  --large-reps N   runs of each rltrace command on the large trace, best kept (default 3; --quick: 1)
  --rltrace PATH   the rltrace under test (default: next to pipeline-bench); it also records
  --trace DIR, --large-trace DIR   measure these traces instead of recording (never deleted)
  --traces DIR     record into DIR/base and DIR/large and keep them; reused when already there
  --keep           keep the traces recorded in the temporary folder (their path is printed)
  --bt2-analysis   where analysis/rl_bt2_report.py runs: base (default), all, none (≈30 µs/event)
  --rss-cap MB     kill a command whose RSS passes MB (default 2048); --timeout S per command (1800)
  --only LIST      some of: report,timeline,histogram,hangs,export,export_perfetto,dump,counter,text,analysis
"""

var opt = Options()
do {
    var args = Array(CommandLine.arguments.dropFirst())[...]
    func value(_ flag: String) -> String {
        guard let v = args.popFirst() else { fail("\(flag) needs a value\n\(usage)") }
        return v
    }
    func int(_ flag: String) -> Int {
        guard let v = Int(value(flag).replacingOccurrences(of: "_", with: "")), v > 0 else { fail("\(flag) takes a positive number") }
        return v
    }
    var explicitReps = false, explicitEvents = false, explicitLargeReps = false
    while let a = args.popFirst() {
        switch a {
        case "--json": opt.json = true
        case "--quick": opt.quick = true
        case "--events": opt.events = int(a); explicitEvents = true
        case "--scale": opt.scale = int(a)
        case "--no-large": opt.large = false
        case "--reps": opt.reps = int(a); explicitReps = true
        case "--large-reps": opt.largeReps = int(a); explicitLargeReps = true
        case "--rltrace": opt.rltrace = value(a)
        case "--rl-example": opt.rlExample = value(a)
        case "--helper": opt.helper = value(a)
        case "--analysis": opt.analysis = value(a)
        case "--python": opt.python = value(a)
        case "--trace": opt.baseTrace = value(a)
        case "--large-trace": opt.largeTrace = value(a)
        case "--traces": opt.tracesDir = value(a)
        case "--keep": opt.keep = true
        case "--bt2-analysis":
            opt.bt2Analysis = value(a)
            guard ["base", "all", "none"].contains(opt.bt2Analysis) else { fail("--bt2-analysis takes base, all or none") }
        case "--rss-cap": opt.rssCapMB = int(a)
        case "--timeout": opt.timeout = Double(int(a))
        case "--only": opt.only = Set(value(a).split(separator: ",").map(String.init))
        case "-h", "--help": print(usage); exit(0)
        default: fail("unknown argument \(a)\n\(usage)")
        }
    }
    if opt.quick {
        if !explicitEvents { opt.events = 300_000 }
        if !explicitReps { opt.reps = 1 }
        if !explicitLargeReps { opt.largeReps = 1 }
    }
}

let selfDir = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
/// The package root (this file is Benchmarks/pipeline-bench/main.swift).
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
func sibling(_ name: String) -> String { selfDir.appendingPathComponent(name).path }
let rltrace = opt.rltrace ?? sibling("rltrace")
let rlExample = opt.rlExample ?? sibling("rl-example")
let helper = opt.helper ?? sibling("trace-workload")
let analysisScript = opt.analysis ?? packageRoot.appendingPathComponent("analysis/rl_bt2_report.py").path
for (what, path) in [("rltrace", rltrace), ("trace-workload (the measuring helper)", helper)] where !FileManager.default.isExecutableFile(atPath: path) {
    fail("\(what) not found at \(path); build it (scripts/bench-pipeline.sh does) or pass its path")
}
guard let babeltrace2 = which("babeltrace2") else { fail("babeltrace2 not found (scripts/install-deps.sh installs it)") }

// MARK: - the contenders

/// One measured command.
struct Contender {
    /// Stable id (JSON) and --only name.
    var id: String
    /// As printed.
    var label: String
    /// The command line; `TRACE` and `OUTFILE` are replaced.
    var argv: [String]
    /// The id of the contender whose speed the target is relative to, and the target ratio.
    var baseline: String?
    var targetRatio: Double?
    /// rltrace commands must stay within the memory bounds.
    var memoryBounded: Bool
}

let contenders: [Contender] = [
    Contender(id: "counter", label: "babeltrace2 counter", argv: [babeltrace2, "--component=sink.utils.counter", "--params=step=+0", "TRACE"], memoryBounded: false),
    Contender(id: "text", label: "babeltrace2 text", argv: [babeltrace2, "TRACE"], memoryBounded: false),
    Contender(id: "analysis", label: "bt2 analysis (python)", argv: [opt.python, analysisScript, "TRACE"], memoryBounded: false),
    Contender(id: "report", label: "rltrace report", argv: [rltrace, "report", "TRACE"], baseline: "counter", targetRatio: 20, memoryBounded: true),
    Contender(id: "hangs", label: "rltrace hangs", argv: [rltrace, "hangs", "TRACE"], baseline: "counter", targetRatio: 20, memoryBounded: true),
    Contender(id: "histogram", label: "rltrace histogram", argv: [rltrace, "histogram", "--of", "sleep", "--by", "reason", "TRACE"], baseline: "counter", targetRatio: 20, memoryBounded: true),
    Contender(id: "timeline", label: "rltrace timeline", argv: [rltrace, "timeline", "TRACE"], baseline: "counter", targetRatio: 10, memoryBounded: true),
    Contender(id: "export", label: "rltrace export chrome", argv: [rltrace, "export", "--format", "chrome", "-o", "OUTFILE", "TRACE"], baseline: "counter", targetRatio: 10, memoryBounded: true),
    // Perfetto's protobuf export: at least as fast as the Chrome JSON, at most a fifth of its size.
    Contender(id: "export_perfetto", label: "rltrace export perfetto", argv: [rltrace, "export", "--format", "perfetto", "-o", "OUTFILE", "TRACE"], baseline: "export", targetRatio: 1, memoryBounded: true),
    Contender(id: "dump", label: "rltrace dump", argv: [rltrace, "dump", "TRACE"], baseline: "text", targetRatio: 5, memoryBounded: true),
]
let rssLimitMB = 64.0, rssGrowthMB = 8.0

// MARK: - traces

/// A trace measured by the benchmark.
struct TraceInfo: Codable {
    /// "base" or "large".
    var id: String
    var path: String
    /// Events per babeltrace2's counter sink (the count every events/s figure uses).
    var events: Int
    /// rltrace report --format json: trace.events and trace.runloopEvents.
    var rltrace_events: Int?
    var rltrace_runloop_events: Int?
    var discarded_events: Int?
    var counts_agree: Bool
    var bytes: Int
    /// How it was made: "recorded: rl-example --duration S …", "reused", "given".
    var origin: String
    var record_seconds: Double?
}

let fm = FileManager.default
let workDir: URL = {
    if let d = opt.tracesDir { return URL(fileURLWithPath: d) }
    return fm.temporaryDirectory.appendingPathComponent("pipeline-bench-\(getpid())")
}()
let keepTraces = opt.keep || opt.tracesDir != nil
try? fm.createDirectory(at: workDir, withIntermediateDirectories: true)
let scratch = fm.temporaryDirectory.appendingPathComponent("pipeline-bench-scratch-\(getpid())")
try? fm.createDirectory(at: scratch, withIntermediateDirectories: true)
var tracesToDelete: [String] = []
func cleanUp() {
    try? fm.removeItem(at: scratch)
    if !keepTraces { for t in tracesToDelete { try? fm.removeItem(atPath: t) }; try? fm.removeItem(at: workDir) }
}
signal(SIGINT) { _ in cleanUp(); _exit(130) }
signal(SIGTERM) { _ in cleanUp(); _exit(143) }

/// The babeltrace2 counter's event count of a trace (also warms the page cache).
func countEvents(_ dir: String) -> Int? {
    guard let r = try? measure([babeltrace2, "--component=sink.utils.counter", "--params=step=+0", dir], helper: helper,
                               rssCapMB: opt.rssCapMB, timeout: opt.timeout, captureStdout: true), r.ok else { return nil }
    return counterEvents(r.stdout)
}

/// Records rl-example for `seconds` with `rltrace record` into `dir`; returns the wall seconds it took.
func record(seconds: Double, into dir: String) throws -> Double {
    guard fm.isExecutableFile(atPath: rlExample) else { throw BenchError("rl-example not found at \(rlExample) (pass --rl-example or --trace)") }
    try? fm.removeItem(atPath: dir)
    tracesToDelete.append(dir)
    let t0 = Date()
    // 16 clients, each pinging every ~2 ms; requests enough that none runs out before the end.
    let ok = runLogged([rltrace, "record", "-o", dir, "--quiet", "--", rlExample, "--duration", String(format: "%.1f", seconds),
                        "--clients", "16", "--requests", "100000000"])
    guard ok else { throw BenchError("rltrace record of rl-example failed") }
    return Date().timeIntervalSince(t0)
}

/// Where a recorded trace's description is kept (to reuse it with --traces).
func markerPath(_ dir: String) -> String { dir + "/pipeline-bench-trace.json" }

/// A trace of at least `minEvents` (base) or about `targetEvents` (large) events: given, reused or recorded.
func obtainTrace(id: String, given: String?, targetEvents: Int, secondsPerEvent: inout Double) throws -> TraceInfo {
    if let g = given {
        log("\(id) trace: \(g) (given); counting its events")
        guard let n = countEvents(g) else { throw BenchError("babeltrace2 cannot read \(g)") }
        return TraceInfo(id: id, path: g, events: n, counts_agree: false, bytes: diskBytes(g), origin: "given")
    }
    let dir = workDir.appendingPathComponent(id).path
    if opt.tracesDir != nil, let d = fm.contents(atPath: markerPath(dir)), var t = try? JSONDecoder().decode(TraceInfo.self, from: d),
       t.events >= targetEvents * 9 / 10 {
        log("\(id) trace: reusing \(dir) (\(t.events) events)")
        t.origin = "reused (" + t.origin + ")"
        secondsPerEvent = (t.record_seconds ?? 0) / Double(max(1, t.events))
        _ = countEvents(dir) // warm the page cache
        return t
    }
    var seconds = max(1.0, Double(targetEvents) * secondsPerEvent * 1.05)
    for attempt in 0..<2 {
        log(String(format: "%@ trace: recording rl-example for %.1f s (target %@ events) into %@", id, seconds, eventsLabel(targetEvents), dir))
        let took = try record(seconds: seconds, into: dir)
        guard let n = countEvents(dir) else { throw BenchError("babeltrace2 cannot read the recorded \(dir)") }
        secondsPerEvent = seconds / Double(max(1, n))
        log(String(format: "%@ trace: %d events in %.1f s of recording (%.0f events/s)", id, n, took, Double(n) / seconds))
        // The base trace must reach its size; the large one is one recording, whatever it gives.
        if id == "large" || n >= targetEvents || attempt == 1 {
            let t = TraceInfo(id: id, path: dir, events: n, counts_agree: false, bytes: diskBytes(dir),
                              origin: String(format: "recorded: rltrace record -- rl-example --duration %.1f --clients 16", seconds),
                              record_seconds: seconds)
            return t
        }
        seconds = Double(targetEvents) * secondsPerEvent * 1.08
    }
    fatalError("unreachable")
}

/// Fills the rltrace event counts (report --format json) and whether they agree with babeltrace2's.
func checkCounts(_ t: inout TraceInfo) {
    guard let r = try? measure([rltrace, "report", "--format", "json", t.path], helper: helper, rssCapMB: opt.rssCapMB,
                               timeout: opt.timeout, captureStdout: true), r.ok,
          let doc = try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
          let trace = doc["trace"] as? [String: Any] else {
        log("\(t.id) trace: rltrace report --format json gave no trace counts")
        return
    }
    t.rltrace_events = trace["events"] as? Int
    t.rltrace_runloop_events = trace["runloopEvents"] as? Int
    t.discarded_events = trace["discardedEvents"] as? Int
    t.counts_agree = t.rltrace_events == t.events
}

// MARK: - rows

/// One result row (JSON: every key present, null when not applicable).
struct Row: Codable {
    /// "command" (one command on one trace) or "rss_growth" (large − base peak RSS of one command).
    var kind: String
    var id: String
    var trace: String?
    var events: Int?
    var command: String
    var argv: [String]?
    var wall_s: Double?
    var cpu_s: Double?
    /// Trace events / wall seconds, and / CPU seconds.
    var events_per_s: Double?
    var cpu_events_per_s: Double?
    var peak_rss_mb: Double?
    var runs: Int?
    /// The speed target's reference (a contender id) and this command's speed relative to it.
    var baseline: String?
    var ratio: Double?
    /// Speed relative to the babeltrace2 Python analysis on the same trace.
    var ratio_vs_bt2_analysis: Double?
    var target: String?
    var pass: Bool?
    /// ≤ 64 MB for rltrace commands.
    var rss_target: String?
    var rss_pass: Bool?
    /// rss_growth rows: the two peaks and their difference.
    var base_rss_mb: Double?
    var large_rss_mb: Double?
    var growth_mb: Double?
    /// Exports: the output's size, and (Perfetto's) its size relative to the Chrome export's with the target.
    var output_mb: Double?
    var output_ratio: Double?
    var size_target: String?
    var size_pass: Bool?
    var note: String?

    enum CodingKeys: String, CodingKey {
        case kind, id, trace, events, command, argv, wall_s, cpu_s, events_per_s, cpu_events_per_s, peak_rss_mb, runs, baseline,
             ratio, ratio_vs_bt2_analysis, target, pass, rss_target, rss_pass, base_rss_mb, large_rss_mb, growth_mb,
             output_mb, output_ratio, size_target, size_pass, note
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        func f(_ x: Double?) -> Double? { x.flatMap { $0.isFinite ? ($0 * 1e6).rounded() / 1e6 : nil } }
        try c.encode(kind, forKey: .kind); try c.encode(id, forKey: .id); try c.encode(trace, forKey: .trace)
        try c.encode(events, forKey: .events); try c.encode(command, forKey: .command); try c.encode(argv, forKey: .argv)
        try c.encode(f(wall_s), forKey: .wall_s); try c.encode(f(cpu_s), forKey: .cpu_s)
        try c.encode(f(events_per_s), forKey: .events_per_s); try c.encode(f(cpu_events_per_s), forKey: .cpu_events_per_s)
        try c.encode(f(peak_rss_mb), forKey: .peak_rss_mb); try c.encode(runs, forKey: .runs); try c.encode(baseline, forKey: .baseline)
        try c.encode(f(ratio), forKey: .ratio); try c.encode(f(ratio_vs_bt2_analysis), forKey: .ratio_vs_bt2_analysis)
        try c.encode(target, forKey: .target); try c.encode(pass, forKey: .pass)
        try c.encode(rss_target, forKey: .rss_target); try c.encode(rss_pass, forKey: .rss_pass)
        try c.encode(f(base_rss_mb), forKey: .base_rss_mb); try c.encode(f(large_rss_mb), forKey: .large_rss_mb)
        try c.encode(f(growth_mb), forKey: .growth_mb)
        try c.encode(f(output_mb), forKey: .output_mb); try c.encode(f(output_ratio), forKey: .output_ratio)
        try c.encode(size_target, forKey: .size_target); try c.encode(size_pass, forKey: .size_pass); try c.encode(note, forKey: .note)
    }
}

/// The best (fastest) run of each contender, with the highest peak RSS seen over its runs.
struct Best { var run: ChildRun; var maxRSSKiB: Int; var runs: Int; var outputBytes: Int? = nil }

/// Measures every wanted contender on `trace`, `reps` interleaved rounds; rltrace's commands (the
/// rows with a baseline) get at least `commandReps`.
func measureAll(_ trace: TraceInfo, reps: Int, commandReps: Int = 0) -> [String: Best] {
    var best: [String: Best] = [:]
    let wanted = contenders.filter { c in
        if c.id == "analysis" && !(opt.bt2Analysis == "all" || (opt.bt2Analysis == "base" && trace.id == "base")) { return false }
        // The speed targets need their baselines: keep those even with --only.
        if let only = opt.only, !only.contains(c.id), !contenders.contains(where: { only.contains($0.id) && $0.baseline == c.id }) { return false }
        return true
    }
    // The counter is the reference of five rows: it gets at least two runs on every trace (on the large
    // trace the others get one), so one noisy run of it does not flatter every ratio.
    func runs(_ c: Contender) -> Int { c.id == "counter" ? max(reps, 2) : c.baseline != nil ? max(reps, commandReps) : reps }
    for round in 0..<max(reps, 2, commandReps) {
        for c in wanted {
            if round >= runs(c) { continue }
            // A command that failed (killed above the RSS cap, timed out, exited non-zero) is not run again.
            if let b = best[c.id], !b.run.ok { continue }
            // The Python analysis is 10-100× slower than everything else: one run is enough.
            if c.id == "analysis" && round > 0 { continue }
            let outFile = scratch.appendingPathComponent("export-\(trace.id)-\(c.id).out").path
            let argv = c.argv.map { $0 == "TRACE" ? trace.path : ($0 == "OUTFILE" ? outFile : $0) }
            log("  [\(trace.id) \(round + 1)/\(runs(c))] \(c.label)")
            do {
                let r = try measure(argv, helper: helper, rssCapMB: opt.rssCapMB, timeout: opt.timeout)
                let outputBytes = argv.contains(outFile) ? ((try? fm.attributesOfItem(atPath: outFile))?[.size] as? NSNumber)?.intValue : nil
                unlink(outFile)
                log(String(format: "      %.2f s wall, %.2f s CPU, %.1f MB%@", r.wall, r.cpu, r.rssMB, r.ok ? "" : " — " + r.failure))
                if let b = best[c.id] {
                    best[c.id] = Best(run: r.wall < b.run.wall || !r.ok ? r : b.run, maxRSSKiB: max(b.maxRSSKiB, r.maxRSSKiB), runs: b.runs + 1,
                                      outputBytes: outputBytes ?? b.outputBytes)
                } else {
                    best[c.id] = Best(run: r, maxRSSKiB: r.maxRSSKiB, runs: 1, outputBytes: outputBytes)
                }
            } catch {
                log("      \(error)")
            }
        }
    }
    return best
}

var rows: [Row] = []
var traces: [TraceInfo] = []
let loadStart = loadAverage()
let t0 = Date()

func commandRows(_ trace: TraceInfo, _ best: [String: Best]) {
    let n = Double(trace.events)
    for c in contenders {
        guard let b = best[c.id] else { continue }
        let r = b.run
        let wall: Double? = r.ok ? r.wall : nil
        var row = Row(kind: "command", id: "\(trace.id).\(c.id)", trace: trace.id, events: trace.events, command: c.label,
                      argv: c.argv.map { $0 == "TRACE" ? "TRACE" : $0 }, wall_s: wall, cpu_s: r.ok ? r.cpu : nil,
                      events_per_s: wall.map { n / $0 }, cpu_events_per_s: r.ok ? n / r.cpu : nil,
                      peak_rss_mb: Double(b.maxRSSKiB) / 1024, runs: b.runs, note: r.ok ? nil : r.failure)
        if let base = c.baseline, let ratioTarget = c.targetRatio {
            row.baseline = base
            let bw = best[base].flatMap { $0.run.ok ? $0.run.wall : nil }
            row.ratio = (wall != nil && bw != nil) ? bw! / wall! : nil
            row.target = String(format: "≥%.0f× %@", ratioTarget, contenders.first { $0.id == base }!.label)
            row.pass = r.ok ? row.ratio.map { $0 >= ratioTarget } : false
        }
        if c.memoryBounded {
            row.rss_target = String(format: "≤%.0f MB", rssLimitMB)
            row.rss_pass = r.killed == nil && row.peak_rss_mb! <= rssLimitMB
            if let aw = best["analysis"].flatMap({ $0.run.ok ? $0.run.wall : nil }), let w = wall { row.ratio_vs_bt2_analysis = aw / w }
        }
        if let bytes = b.outputBytes, r.ok {
            row.output_mb = Double(bytes) / 1e6
            if c.id == "export_perfetto", let chrome = best["export"]?.outputBytes, chrome > 0 {
                row.output_ratio = Double(bytes) / Double(chrome)
                row.size_target = "≤1/5 of the Chrome export's size"
                row.size_pass = bytes * 5 <= chrome
            }
        }
        rows.append(row)
    }
}

// MARK: - run

do {
    var secondsPerEvent = 1.0 / 140_000 // rl-example's rate on the 2-core VM, refined by the base recording
    var base = try obtainTrace(id: "base", given: opt.baseTrace, targetEvents: opt.events, secondsPerEvent: &secondsPerEvent)
    checkCounts(&base)
    if base.origin.hasPrefix("recorded"), let d = try? JSONEncoder().encode(base) { _ = fm.createFile(atPath: markerPath(base.path), contents: d) }
    traces.append(base)
    log("measuring on the base trace (\(base.events) events, \(base.bytes / 1_000_000) MB), \(opt.reps) round(s)")
    let bestBase = measureAll(base, reps: opt.reps)
    commandRows(base, bestBase)

    if opt.large || opt.largeTrace != nil { do {
        var large = try obtainTrace(id: "large", given: opt.largeTrace, targetEvents: base.events * opt.scale, secondsPerEvent: &secondsPerEvent)
        checkCounts(&large)
        if large.origin.hasPrefix("recorded"), let d = try? JSONEncoder().encode(large) { _ = fm.createFile(atPath: markerPath(large.path), contents: d) }
        traces.append(large)
        log("measuring on the large trace (\(large.events) events, \(large.bytes / 1_000_000) MB), 1 round of babeltrace2 text, 2 of the counter, \(opt.largeReps) of each rltrace command")
        // A single run of a few seconds on this trace moves by up to a third on a shared VM: rltrace's
        // commands are cheap enough to take the best of several.
        let bestLarge = measureAll(large, reps: 1, commandReps: opt.largeReps)
        commandRows(large, bestLarge)
        for c in contenders where c.memoryBounded {
            guard let a = bestBase[c.id], let b = bestLarge[c.id] else { continue }
            let ra = Double(a.maxRSSKiB) / 1024, rb = Double(b.maxRSSKiB) / 1024
            let cut = !a.run.ok || !b.run.ok
            rows.append(Row(kind: "rss_growth", id: "growth.\(c.id)", command: c.label, target: String(format: "≤%.0f MB", rssGrowthMB),
                            pass: !cut && rb - ra <= rssGrowthMB, base_rss_mb: ra, large_rss_mb: rb, growth_mb: rb - ra,
                            note: cut ? "a run failed: " + [a.run.failure, b.run.failure].filter { !$0.isEmpty }.joined(separator: "; ") : nil))
        }
    } catch {
        // The base trace's rows are still printed.
        log("pipeline-bench: large trace: \(error)")
        rows.append(Row(kind: "command", id: "large.failed", command: "large trace", note: "\(error)"))
    } }
} catch {
    log("pipeline-bench: \(error)")
    cleanUp()
    exit(1)
}
let loadEnd = loadAverage()
if keepTraces { log("traces kept: " + traces.map(\.path).joined(separator: " ")) }
cleanUp()

// MARK: - output

func fmt(_ x: Double?, _ f: String = "%.2f") -> String { x.map { $0.isFinite ? String(format: f, $0) : "n/a" } ?? "n/a" }
func pad(_ s: String, _ n: Int, right: Bool = false) -> String {
    s.count >= n ? s : (right ? String(repeating: " ", count: n - s.count) + s : s + String(repeating: " ", count: n - s.count))
}
func table(_ lines: [[String]], rightAligned: Set<Int>) {
    var w = Array(repeating: 0, count: lines[0].count)
    for l in lines { for (i, s) in l.enumerated() { w[i] = max(w[i], s.count) } }
    for (n, l) in lines.enumerated() {
        var s = ""
        for (i, c) in l.enumerated() { s += pad(c, w[i], right: rightAligned.contains(i)) + "  " }
        while s.hasSuffix(" ") { s.removeLast() }
        print(s)
        if n == 0 { print(String(repeating: "-", count: w.reduce(0, +) + 2 * (w.count - 1))) }
    }
}

var uts = utsname()
uname(&uts)
let host = withUnsafeBytes(of: &uts.nodename) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
let stamp = ISO8601DateFormatter().string(from: Date())
let cpus = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))

/// The JSON document.
struct Report: Codable {
    var schema: Int
    var tool: String
    var date: String
    var host: String
    var cpus: Int
    var quick: Bool
    var rltrace: String
    var loadavg_start: Double?
    var loadavg_end: Double?
    var seconds: Double
    var traces: [TraceInfo]
    var rows: [Row]
    /// Every row with a target passed.
    var all_pass: Bool
}
let targetRows = rows.filter { $0.pass != nil || $0.rss_pass != nil || $0.size_pass != nil }
let allPass = targetRows.allSatisfy { ($0.pass ?? true) && ($0.rss_pass ?? true) && ($0.size_pass ?? true) } && !rows.contains { $0.id == "large.failed" }

if opt.json {
    let enc = JSONEncoder()
    enc.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    let rep = Report(schema: 1, tool: "pipeline-bench", date: stamp, host: host, cpus: cpus, quick: opt.quick, rltrace: rltrace,
                     loadavg_start: loadStart, loadavg_end: loadEnd, seconds: Date().timeIntervalSince(t0),
                     traces: traces, rows: rows, all_pass: allPass)
    print(String(decoding: try! enc.encode(rep), as: UTF8.self))
} else {
    print("pipeline-bench \(stamp) on \(host), \(cpus) CPUs; rltrace = \(rltrace); load average \(fmt(loadStart)) before, \(fmt(loadEnd)) after")
    for t in traces {
        let agree = t.rltrace_events == nil ? "rltrace count n/a" :
            (t.counts_agree ? "rltrace agrees" : "rltrace DIFFERS: \(t.rltrace_events!)") + " (runloop events \(t.rltrace_runloop_events.map(String.init) ?? "?"), discarded \(t.discarded_events.map(String.init) ?? "?"))"
        print("trace \(t.id): \(t.events) events (babeltrace2 counter), \(agree), \(t.bytes / 1_000_000) MB, \(t.origin): \(t.path)")
    }
    print("")
    var lines: [[String]] = [["trace", "command", "wall s", "CPU s", "M ev/s", "peak RSS MB", "speed ratio", "target", "pass", "vs py", "RSS", "pass"]]
    for r in rows where r.kind == "command" && r.trace != nil {
        lines.append([eventsLabel(r.events ?? 0), r.command, fmt(r.wall_s), fmt(r.cpu_s), fmt(r.events_per_s.map { $0 / 1e6 }),
                      fmt(r.peak_rss_mb, "%.1f"), r.ratio.map { String(format: "%.2f×", $0) } ?? (r.baseline == nil ? "" : "n/a"),
                      r.target ?? "", r.pass.map { $0 ? "PASS" : "FAIL" } ?? "",
                      r.ratio_vs_bt2_analysis.map { String(format: "%.1f×", $0) } ?? "",
                      r.rss_target ?? "", r.rss_pass.map { $0 ? "PASS" : "FAIL" } ?? ""])
    }
    table(lines, rightAligned: [2, 3, 4, 5, 6, 9])
    let growth = rows.filter { $0.kind == "rss_growth" }
    if !growth.isEmpty, traces.count == 2 {
        print("")
        var g: [[String]] = [["peak RSS growth, \(eventsLabel(traces[0].events)) → \(eventsLabel(traces[1].events)) events", "base MB", "large MB", "growth MB", "target", "pass"]]
        for r in growth {
            g.append([r.command, fmt(r.base_rss_mb, "%.1f"), fmt(r.large_rss_mb, "%.1f"), fmt(r.growth_mb, "%+.1f"), r.target ?? "", r.pass! ? "PASS" : "FAIL"])
        }
        table(g, rightAligned: [1, 2, 3])
    }
    let exports = rows.filter { $0.output_mb != nil }
    if !exports.isEmpty {
        print("")
        var e: [[String]] = [["trace", "export", "output MB", "vs chrome", "target", "pass"]]
        for r in exports {
            e.append([eventsLabel(r.events ?? 0), r.command, fmt(r.output_mb, "%.1f"), r.output_ratio.map { String(format: "1/%.1f", 1 / $0) } ?? "",
                      r.size_target ?? "", r.size_pass.map { $0 ? "PASS" : "FAIL" } ?? ""])
        }
        table(e, rightAligned: [2, 3])
    }
    let notes = rows.filter { $0.note != nil }
    print("")
    print("speed ratio = the target's reference wall time / this command's (= events/s ratio, same trace); vs py = × faster than analysis/rl_bt2_report.py; M ev/s = trace events / wall s; best of \(opt.reps) run(s) on the base trace, of \(opt.largeReps) on the large (babeltrace2 text: 1; the counter: at least 2 on each); peak RSS = highest over runs (wait4 ru_maxrss)")
    for r in notes { print("note [\(r.id)]: \(r.note!)") }
    print(allPass ? "all targets met" : "targets missed: " + targetRows.filter { !(($0.pass ?? true) && ($0.rss_pass ?? true) && ($0.size_pass ?? true)) }.map(\.id).joined(separator: ", ")
          + (rows.contains { $0.id == "large.failed" } ? " (and the large trace failed)" : ""))
}
