// tracing-bench summary: every figure of the recording targets in one run, as ONE JSON object on
// stdout and a table on stderr (scripts/bench-tracing.sh --json; docs/benchmarks.md, "One run, every
// recording figure: bench-tracing.sh --json").
//
//   tracing-bench summary --rltrace PATH --example PATH [--rounds N] [--reps K] [--duration S] [--clients N]
//                         [--contexts LIST|none]
//
// --contexts replaces rltrace's default contexts everywhere (the micro rows' session, and
// `rltrace record --context …` for the bytes and whole-service rows): a preview of another default.
//
// 1. Micro rows (child-summary children, best of N interleaved rounds × 5): LTTng's floor (C, one
//    integer field, no context), ours (RLTrace block entry + exit) recorded with the contexts
//    `rltrace record` adds by default (asked of rltrace: `rltrace record --print-default-contexts`),
//    and the source0 ping iteration untraced and recorded with those contexts.
// 2. Bytes per event: `rltrace record` (default options) of rl-example's paced load for ≤ 3 s; the
//    data stream files' sizes summed ÷ the events babeltrace2's sink.utils.counter counts.
// 3. Whole service: rl-example --max-load untraced, under `rltrace record` and under `rltrace record
//    --on-hang 250ms` (rltrace starts its own private session daemon each time), interleaved, K reps;
//    requests/s and process CPU µs per request, median (and best) of the K.
import Foundation
import LTTngControl
import TestSupport
import CTracingBenchFloor

/// The three micro rows the summary needs, from one child: floor pair, block pair, ping iteration.
/// Best of 5 interleaved passes; the rows it does not measure are 0.
func measureSummaryRows() -> RecordingNumbers {
    let n = 200_000
    let loop = opaque(UInt64(1)), item = opaque(UInt64(2))
    var r = RecordingNumbers.worst
    r.floorRecorded = rlbench_floor_int1_enabled() != 0
    rlbench_floor_int1_pairs(UInt64(n / 10)); blockPairs(n / 10, loop, item)
    _ = measureSourcePingPong(iterations: 2_000, reps: 1)
    for _ in 0..<5 {
        r.floorInt1Pair = min(r.floorInt1Pair, best(1) { rlbench_floor_int1_pairs(UInt64(n)) } / Double(n))
        r.blockPair = min(r.blockPair, best(1) { blockPairs(n, loop, item) } / Double(n))
        r.loopPingNs = min(r.loopPingNs, measureSourcePingPong(iterations: 20_000, reps: 1))
    }
    r.floorBlockLikePair = 0; r.source0Pair = 0; r.timerPair = 0; r.loopBlockNs = 0; r.batchNs = 0
    return r
}

/// rl-example --max-load's last line (`max-load requests=R wall_s=W rps=X cpu_us_per_request=C …`).
struct MaxLoadRun {
    var requests: Int, wallSeconds: Double, rps: Double, cpuUsPerRequest: Double

    init?(stdout: String) {
        guard let line = stdout.split(separator: "\n").last(where: { $0.hasPrefix("max-load ") }) else { return nil }
        var kv: [Substring: Substring] = [:]
        for part in line.split(separator: " ").dropFirst() {
            let p = part.split(separator: "=", maxSplits: 1)
            if p.count == 2 { kv[p[0]] = p[1] }
        }
        guard let r = kv["requests"].flatMap({ Int($0) }), let w = kv["wall_s"].flatMap({ Double($0) }),
              let x = kv["rps"].flatMap({ Double($0) }), let c = kv["cpu_us_per_request"].flatMap({ Double($0) }),
              r > 0, w > 0 else { return nil }
        requests = r; wallSeconds = w; rps = x; cpuUsPerRequest = c
    }
}

/// How the whole-service row runs rl-example.
enum ServiceConfig: String, CaseIterable {
    case untraced = "untraced", record = "rltrace record", onHang = "rltrace record --on-hang 250ms"
}

struct SummaryError: Error, CustomStringConvertible {
    var description: String
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.isEmpty ? .nan : s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// A fresh directory name under the temporary folder (not created: rltrace creates it).
func scratchDirectory(_ tag: String) -> String {
    sessionCounter += 1
    return FileManager.default.temporaryDirectory.appendingPathComponent("tracing-bench-\(tag)-\(getpid())-\(sessionCounter)").path
}

/// One whole-service run: rl-example --max-load as `config` runs it, in `env` (no daemon reachable:
/// untraced, and rltrace starts its own private session daemon).
func runService(_ config: ServiceConfig, rltrace: String, example: String, env: [String: String],
                duration: Double, clients: Int, contextOption: [String]) throws -> MaxLoadRun {
    let load = [example, "--max-load", "--duration", String(duration), "--clients", String(clients)]
    let dir = scratchDirectory("service")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let (exe, args): (String, [String])
    switch config {
    case .untraced: (exe, args) = (example, Array(load.dropFirst()))
    case .record: (exe, args) = (rltrace, ["record", "-o", dir, "--quiet"] + contextOption + ["--"] + load)
    case .onHang: (exe, args) = (rltrace, ["record", "--on-hang", "250ms", "-o", dir, "--quiet"] + contextOption + ["--"] + load)
    }
    let r = try runProgram(exe, args, environment: env, timeout: duration + 120)
    guard r.status == 0, let m = MaxLoadRun(stdout: r.stdout) else {
        throw SummaryError(description: "\(config.rawValue): rl-example --max-load exited \(r.status) without its max-load line:\n\(r.stdout)\n\(r.stderr)")
    }
    return m
}

/// `rltrace record` (default options) of rl-example's paced load for at most 3 s: the data stream
/// files' bytes (every file of the trace but `metadata` and the `index` folders) and the events
/// babeltrace2's counter sink counts in it (runloop:* and the state dump events rltrace also records).
func bytesPerEvent(rltrace: String, example: String, env: [String: String], contextOption: [String]) throws -> (bytes: Int, events: Int) {
    let dir = scratchDirectory("bytes")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let r = try runProgram(rltrace, ["record", "-o", dir, "--quiet"] + contextOption + ["--", example, "--duration", "3", "--requests", "1000"],
                           environment: env, timeout: 120)
    guard r.status == 0 else { throw SummaryError(description: "rltrace record of rl-example exited \(r.status):\n\(r.stderr)") }
    var bytes = 0
    let e = FileManager.default.enumerator(atPath: dir)
    while let f = e?.nextObject() as? String {
        let parts = f.split(separator: "/")
        guard parts.last != "metadata", !parts.contains("index") else { continue }
        let attrs = try FileManager.default.attributesOfItem(atPath: dir + "/" + f)
        if attrs[.type] as? FileAttributeType == .typeRegular { bytes += (attrs[.size] as? Int) ?? 0 }
    }
    let c = try runProgram("/usr/bin/babeltrace2", [dir, "--component=sink.utils.counter"], timeout: 300)
    // The counter sink prints a block of counts every 10000 events and a last one at the end:
    // "<N> Event messages", "<N> Discarded event messages" (a discard would lower bytes per event).
    let lines = c.stdout.split(separator: "\n")
    func last(_ label: String) -> Int? {
        lines.last(where: { $0.hasSuffix(label) && $0.split(separator: " ").count == 1 + label.split(separator: " ").count })
            .flatMap { Int($0.split(separator: " ")[0]) }
    }
    guard c.status == 0, let events = last("Event messages"), events > 0 else {
        throw SummaryError(description: "babeltrace2's counter sink did not count the trace's events:\n\(c.stdout)\n\(c.stderr)")
    }
    guard last("Discarded event messages") == 0 else {
        throw SummaryError(description: "the recording for bytes per event discarded events:\n\(c.stdout)")
    }
    return (bytes, events)
}

/// The contexts `rltrace record` adds by default, as rltrace itself states them.
func rltraceDefaultContexts(_ rltrace: String, env: [String: String]) throws -> [String] {
    let line = try runChild(rltrace, ["record", "--print-default-contexts"], env: env)
    return line == "none" ? [] : line.split(separator: ",").map(String.init)
}

/// `tracing-bench summary …`: see the top of this file.
func summary(_ args: [String], me: String, quiet: [String: String]) throws {
    func value(_ flag: String) -> String? { args.firstIndex(of: flag).flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil } }
    guard let rltrace = value("--rltrace"), let example = value("--example") else {
        throw SummaryError(description: "usage: tracing-bench summary --rltrace PATH --example PATH [--rounds N] [--reps K] [--duration S] [--clients N]")
    }
    let rounds = value("--rounds").flatMap(Int.init) ?? 3, reps = value("--reps").flatMap(Int.init) ?? 3
    let duration = value("--duration").flatMap(Double.init) ?? 3, clients = value("--clients").flatMap(Int.init) ?? 4
    func note(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }
    let loadStart = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"
    let given = value("--contexts").map { $0 == "none" ? [] : $0.split(separator: ",").map(String.init) }
    let contexts = try given ?? rltraceDefaultContexts(rltrace, env: quiet)
    let ctxLabel = contexts.isEmpty ? "none" : contexts.joined(separator: ",")
    // With --contexts, rltrace records with them too (`--context ""` records none).
    let contextOption = given.map { ["--context", $0.joined(separator: ",")] } ?? []
    note(given == nil ? "rltrace record's default contexts: \(ctxLabel)" : "contexts given (instead of rltrace's default): \(ctxLabel)")

    // 1. Micro rows: untraced, floor (no context), rltrace's default contexts; interleaved rounds.
    var untraced = RecordingNumbers.worst, floor = RecordingNumbers.worst, deflt = RecordingNumbers.worst
    do {
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        func child(_ env: [String: String]) throws -> RecordingNumbers {
            try JSONDecoder().decode(RecordingNumbers.self, from: Data(try runChild(me, ["child-summary"], env: env).utf8))
        }
        for r in 0..<rounds {
            note("micro rows: round \(r + 1)/\(rounds)")
            untraced.merge(try child(quiet))
            floor.merge(try withRecordingSession(daemon, contexts: []) { try child(daemon.applicationEnvironment) })
            deflt.merge(try withRecordingSession(daemon, contexts: contexts) { try child(daemon.applicationEnvironment) })
        }
        if !floor.floorRecorded { throw SummaryError(description: "the session did not record rlbench_floor:int1") }
    }

    // 2. Bytes per event of a default recording.
    note("bytes per event: rltrace record -- rl-example --duration 3 --requests 1000")
    let (bytes, events) = try bytesPerEvent(rltrace: rltrace, example: example, env: quiet, contextOption: contextOption)

    // 3. Whole service, interleaved.
    var runs: [ServiceConfig: [MaxLoadRun]] = [:]
    for k in 0..<reps {
        for c in ServiceConfig.allCases {
            note("whole service: rep \(k + 1)/\(reps), \(c.rawValue)")
            runs[c, default: []].append(try runService(c, rltrace: rltrace, example: example, env: quiet, duration: duration, clients: clients,
                                                          contextOption: contextOption))
        }
    }
    func rps(_ c: ServiceConfig) -> Double { median(runs[c]!.map(\.rps)) }
    func cpu(_ c: ServiceConfig) -> Double { median(runs[c]!.map(\.cpuUsPerRequest)) }
    func bestRps(_ c: ServiceConfig) -> Double { runs[c]!.map(\.rps).max()! }
    func bestCpu(_ c: ServiceConfig) -> Double { runs[c]!.map(\.cpuUsPerRequest).min()! }
    let loadEnd = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "?"

    func r2(_ x: Double) -> Double { (x * 100).rounded() / 100 }
    func r3(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
    let bpe = Double(bytes) / Double(events)
    let figures: [String: Double] = [
        "floor_ns_per_callout": r2(floor.floorInt1Pair),
        "record_default_ns_per_callout": r2(deflt.blockPair),
        "record_default_over_floor": r3(deflt.blockPair / floor.floorInt1Pair),
        "ping_iteration_untraced_ns": r2(untraced.loopPingNs),
        "ping_iteration_record_default_ns": r2(deflt.loopPingNs),
        "ping_record_over_untraced": r3(deflt.loopPingNs / untraced.loopPingNs),
        "bytes_per_event": r2(bpe),
        "max_load_untraced_rps": r2(rps(.untraced)), "max_load_record_rps": r2(rps(.record)), "max_load_on_hang_rps": r2(rps(.onHang)),
        "max_load_record_over_untraced": r3(rps(.record) / rps(.untraced)),
        "max_load_on_hang_over_untraced": r3(rps(.onHang) / rps(.untraced)),
        "max_load_untraced_cpu_us_per_request": r3(cpu(.untraced)), "max_load_record_cpu_us_per_request": r3(cpu(.record)),
        "max_load_on_hang_cpu_us_per_request": r3(cpu(.onHang)),
        "max_load_record_cpu_over_untraced": r3(cpu(.record) / cpu(.untraced)),
        "max_load_on_hang_cpu_over_untraced": r3(cpu(.onHang) / cpu(.untraced)),
        "max_load_untraced_rps_best": r2(bestRps(.untraced)), "max_load_record_rps_best": r2(bestRps(.record)),
        "max_load_on_hang_rps_best": r2(bestRps(.onHang)),
    ]
    // The targets: (key, bound, at most?).
    let targets: [(String, Double, Bool)] = [
        ("record_default_over_floor", 1.2, true), ("ping_record_over_untraced", 2.2, true),
        ("bytes_per_event", 24, true), ("max_load_on_hang_over_untraced", 0.90, false),
    ]
    var targetRows: [[String: Any]] = []
    for (k, bound, atMost) in targets {
        let v = figures[k]!
        targetRows.append(["key": k, "value": v, "target": (atMost ? "<= " : ">= ") + "\(bound)", "pass": atMost ? v <= bound : v >= bound])
    }
    var object: [String: Any] = figures
    object["schema"] = 1
    object["tool"] = "tracing-bench summary"
    object["date"] = ISO8601DateFormatter().string(from: Date())
    object["default_contexts"] = contexts
    object["contexts_given"] = given != nil
    object["bytes_per_event_stream_bytes"] = bytes
    object["bytes_per_event_events"] = events
    object["bytes_per_event_counted_by"] = "babeltrace2 sink.utils.counter"
    object["micro_rounds"] = rounds
    object["max_load_reps"] = reps
    object["max_load_statistic"] = "median of reps (_best: best of reps)"
    object["max_load_duration_s"] = duration
    object["max_load_clients"] = clients
    object["loadavg_start"] = loadStart
    object["loadavg_end"] = loadEnd
    object["targets"] = targetRows

    // The table (stderr).
    func row(_ label: String, _ v: String) { note(label.padding(toLength: 52, withPad: " ", startingAt: 0) + v) }
    note("")
    note("recording figures (tracing-bench summary; load average \(loadStart) → \(loadEnd))")
    note("micro rows: ns, best of \(rounds) interleaved rounds × 5; recorded with the contexts \(ctxLabel)\(given == nil ? " (rltrace record's default)" : " (--contexts)")")
    row("LTTng floor: C int1 × 2, no context", String(format: "%10.1f ns/callout", floor.floorInt1Pair))
    row("ours: block entry+exit, those contexts", String(format: "%10.1f ns/callout  (%.2f× floor)", deflt.blockPair, deflt.blockPair / floor.floorInt1Pair))
    row("source0 ping iteration, untraced", String(format: "%10.1f ns", untraced.loopPingNs))
    row("source0 ping iteration, those contexts", String(format: "%10.1f ns  (%.2f× untraced)", deflt.loopPingNs, deflt.loopPingNs / untraced.loopPingNs))
    row("bytes per event (rltrace record, rl-example)", String(format: "%10.2f  (%d bytes / %d events)", bpe, bytes, events))
    note("whole service: rl-example --max-load --duration \(duration) --clients \(clients); median (best) of \(reps) interleaved reps")
    for c in ServiceConfig.allCases {
        row("  " + c.rawValue, String(format: "%10.0f req/s (%.0f)  %8.2f µs CPU/req (%.2f)  %.3f× / %.3f× untraced",
                                      rps(c), bestRps(c), cpu(c), bestCpu(c), rps(c) / rps(.untraced), cpu(c) / cpu(.untraced)))
    }
    note("targets:")
    for t in targetRows {
        note("  \(t["key"]!) = \(t["value"]!) (target \(t["target"]!)): \(t["pass"] as! Bool ? "PASS" : "MISS")")
    }
    let json = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    FileHandle.standardOutput.write(json + Data("\n".utf8))
}
