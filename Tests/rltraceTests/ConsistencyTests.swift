import Foundation
import Testing
import RLAnalysis
import TestSupport

// The commands agree (docs/report-json.md, "Selection and time window"): for a grid of selections —
// each loop filter matching and matching nothing, callout filters, windows at awkward edges (inside
// the hang, across sleeps, at the trace's ends, at seeded random edges) — every command's figures
// equal the report's: timeline rows, histogram totals, `hangs`, the Chrome export's slices and the
// LAMI tables; a selection that matches nothing is exit 4 in every command. Metamorphic rules too:
// a window split in two counts every callout once more per callout across the split; a filter and
// its complement add up to the unfiltered figures.

/// What every command said for one selection.
struct CommandFigures {
    var status: [String: Int32] = [:]
    /// Per loop "pid/loop": the report's iterations, top-level iterations, callouts, busy and hangs.
    var report: [String: (iterations: Int, topLevel: Int, callouts: Int, busy: Int, hangs: [Int], tid: Int, spurious: Int)] = [:]
    var timelineRows: [String: Int] = [:], timelineHangRows: [String: Set<Int>] = [:]
    var histogramCallouts = -1, histogramIterations = -1, histogramSleeps = -1, reportSleepHistogram = 0
    var hangsJSON: [String: [Int]] = [:]
    /// Per thread id: iteration slices and callout slices of the export.
    var exportIterations: [Int: Int] = [:], exportCallouts: [Int: Int] = [:]
    /// Per "pid/loop": iterations and busy ns of the LAMI loops table.
    var lami: [String: (iterations: Int, busy: Int)] = [:]
    var stderr: [String: String] = [:]
}

/// Runs every command on `traces` with the selection `sel` and collects their figures.
func commandFigures(_ traces: [String], _ sel: [String], tag: String) throws -> CommandFigures {
    var f = CommandFigures()
    func go(_ name: String, _ args: [String]) throws -> Run {
        let r = try run("rltrace", args)
        f.status[name] = r.status
        f.stderr[name] = r.err
        return r
    }
    let rep = try go("report", ["report", "--format", "json"] + traces + sel)
    if rep.status == 0 {
        let doc = try jsonObject(rep.out)
        for l in doc["loops"] as! [[String: Any]] {
            let key = "\(l["pid"]!)/\(l["loop"]!)"
            f.report[key] = (l["iterations"] as! Int, l["topLevelIterations"] as! Int, l["callouts"] as! Int, l["busyNs"] as! Int,
                             (l["hangs"] as! [[String: Any]]).map { $0["iteration"] as! Int }.sorted(), l["tid"] as! Int, l["spuriousWakes"] as! Int)
            for (_, h) in l["sleepHistogram"] as! [String: [String: Int]] { f.reportSleepHistogram += h.values.reduce(0, +) }
        }
    }
    let t = try go("timeline", ["timeline"] + traces + sel)
    if t.status == 0 {
        var current = ""
        for line in t.out.split(separator: "\n") {
            if line.hasPrefix("loop ") {
                // `loop 17 (pid 5117 rl-example tid 5117 …)`
                let w = line.split(separator: " ")
                current = "\(w[3])/\(w[1])"
                continue
            }
            let s = line.drop { $0 == " " }
            guard s.hasPrefix("#") else { continue }
            f.timelineRows[current, default: 0] += 1
            // Top-level rows are indented by 9 spaces before '#', nested ones by 4 more per level.
            if line.contains("HANG") && line.count - s.count <= 9, let n = Int(s.dropFirst().prefix { $0.isNumber }) {
                f.timelineHangRows[current, default: []].insert(n)
            }
        }
    }
    func histogramCount(_ of: String) throws -> Int {
        let h = try go("histogram-\(of)", ["histogram", "--of", of] + traces + sel)
        guard h.status == 0 else { return -1 }
        // `callout: 48 values · …` (no line when there is no value).
        guard let line = h.out.split(separator: "\n").first(where: { $0.contains(" values · ") || $0.hasSuffix(" values") }) else { return 0 }
        let afterColon = line[line.index(after: line.firstIndex(of: ":")!)...].drop { $0 == " " }
        return Int(afterColon.prefix { $0.isNumber }) ?? -1
    }
    let narrowsCallouts = sel.contains("--kind") || sel.contains("--item") || sel.contains("--min-duration")
    f.histogramCallouts = try histogramCount("callout")
    if !narrowsCallouts {
        f.histogramIterations = try histogramCount("iteration")
        f.histogramSleeps = try histogramCount("sleep")
    }
    let hj = try go("hangs", ["hangs", "--format", "json"] + traces + sel)
    if hj.status == 0 {
        for row in try JSONSerialization.jsonObject(with: Data(hj.out.utf8)) as! [[String: Any]] {
            f.hangsJSON["\(row["pid"]!)/\(row["loop"]!)", default: []].append((row["hang"] as! [String: Any])["iteration"] as! Int)
        }
    }
    let out = NSTemporaryDirectory() + "rltrace-consistency-\(getpid())-\(tag).json"
    defer { try? FileManager.default.removeItem(atPath: out) }
    try? FileManager.default.removeItem(atPath: out)
    let x = try go("export", ["export", "-o", out] + traces + sel)
    if x.status == 0 {
        let events = (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as! [String: Any])["traceEvents"] as! [[String: Any]]
        let kinds: Set<String> = ["observer", "source0", "source1", "timer", "main_queue", "block"]
        for e in events where e["ph"] as? String == "X" {
            let tid = e["tid"] as! Int
            if e["cat"] as? String == "iteration" { f.exportIterations[tid, default: 0] += 1 }
            if kinds.contains(e["cat"] as? String ?? "") { f.exportCallouts[tid, default: 0] += 1 }
        }
    }
    let l = try go("lami", ["report", "--format", "lami"] + traces + sel)
    if l.status == 0 {
        let doc = try jsonObject(l.out)
        let loops = (doc["results"] as! [[String: Any]])[0]["data"] as! [[[String: Any]]]
        for row in loops {
            let key = "\(row[1]["pid"]!)/\(row[2]["value"]!)"
            f.lami[key] = (row[3]["value"] as! Int, row[4]["value"] as! Int)
        }
    }
    return f
}

/// Checks that every command agrees with the report for one selection.
func expectAgreement(_ f: CommandFigures, _ what: String, narrowsCallouts: Bool) {
    let statuses = Set(f.status.values)
    #expect(statuses.count == 1, "\(what): exit statuses differ: \(f.status) \(f.stderr.filter { !$0.value.isEmpty })")
    guard f.status["report"] == 0 else {
        #expect(f.status["report"] == 4, "\(what): \(f.stderr["report"] ?? "")")
        for (cmd, err) in f.stderr { #expect(err.contains("nothing matches the selection"), "\(what): \(cmd): \(err)") }
        return
    }
    #expect(!f.report.isEmpty, "\(what): a report with no loop")
    let totalCallouts = f.report.values.reduce(0) { $0 + $1.callouts }
    #expect(f.histogramCallouts == totalCallouts, "\(what): histogram --of callout \(f.histogramCallouts) against the report's \(totalCallouts)")
    if !narrowsCallouts {
        #expect(f.histogramIterations == f.report.values.reduce(0) { $0 + $1.topLevel }, "\(what): histogram --of iteration")
        #expect(f.histogramSleeps == f.reportSleepHistogram, "\(what): histogram --of sleep \(f.histogramSleeps) against \(f.reportSleepHistogram)")
    }
    for (key, r) in f.report {
        #expect(r.iterations > 0 || r.callouts == 0, "\(what): loop \(key) listed with callouts and no iteration")
        if narrowsCallouts {
            #expect((f.timelineRows[key] ?? 0) <= r.iterations, "\(what): loop \(key): timeline rows")
        } else {
            #expect(f.timelineRows[key, default: 0] == r.iterations, "\(what): loop \(key): timeline rows \(f.timelineRows[key, default: 0]) against \(r.iterations) iterations")
        }
        // (With callout filters the timeline lists the iterations holding a selected callout: a
        // hang held by another item is not among them.)
        if narrowsCallouts {
            #expect(f.timelineHangRows[key, default: []].isSubset(of: Set(r.hangs)), "\(what): loop \(key): HANG rows")
        } else {
            #expect(f.timelineHangRows[key, default: []] == Set(r.hangs), "\(what): loop \(key): HANG rows")
        }
        #expect(f.hangsJSON[key, default: []].sorted() == r.hangs, "\(what): loop \(key): hangs")
        #expect(f.exportIterations[r.tid, default: 0] == r.iterations, "\(what): loop \(key): iteration slices")
        #expect(f.exportCallouts[r.tid, default: 0] == r.callouts, "\(what): loop \(key): callout slices \(f.exportCallouts[r.tid, default: 0]) against \(r.callouts)")
        #expect(f.lami[key]?.iterations == r.iterations && f.lami[key]?.busy == r.busy, "\(what): loop \(key): LAMI row")
    }
    #expect(Set(f.lami.keys) == Set(f.report.keys), "\(what): LAMI loops")
    #expect(Set(f.timelineRows.keys).isSubset(of: Set(f.report.keys)), "\(what): timeline loops \(f.timelineRows.keys.sorted()) against \(f.report.keys.sorted())")
}

/// Seeded windows at random edges of a trace `spanNs` long (relative `+Nns` bounds).
func randomWindows(spanNs: Int64, count: Int, seed: UInt64) -> [[String]] {
    var g = SplitMix64(seed: seed)
    return (0..<count).map { _ in
        let a = Int64(g.next() % UInt64(spanNs)), b = Int64(g.next() % UInt64(spanNs))
        return ["--begin", "+\(min(a, b))ns", "--end", "+\(max(a, b) + 1)ns"]
    }
}

@Suite("every command gives the same figures for the same selection", .serialized)
struct ConsistencyTests {
    /// The demo trace (one process, two loops, a 300 ms hang at +301 ms in loop 17 iteration 446).
    static let selections: [[String]] = [
        [], ["--loop", "17"], ["--tid", "5121"], ["--procname", "rl-example"], ["--pid", "5117"],
        ["--procname", "nosuch"], ["--pid", "1"], ["--tid", "99999"], ["--loop", "99"],
        ["--kind", "timer"], ["--item", "comp*"], ["--kind", "block", "--item", "reply"], ["--min-duration", "1ms"],
        ["--kind", "source1", "--loop", "17"], ["--item", "no-such-item"], ["--mode", "default"], ["--mode", "nosuch"],
    ]
    static let windows: [[String]] = [
        [], ["--begin", "400ms", "--end", "500ms"], ["--end", "1s"], ["--begin", "1s", "--end", "2s"],
        ["--begin", "301ms", "--end", "301ms"], ["--begin", "2.9s"],
    ] + randomWindows(spanNs: 3_000_000_000, count: 3, seed: 0x5EED)

    @Test("on the demo trace, for every loop or callout filter", arguments: selections)
    func demoFilters(sel: [String]) throws {
        let f = try commandFigures([demoTrace], sel, tag: "f\(sel.joined())")
        expectAgreement(f, "\(sel)", narrowsCallouts: sel.contains("--kind") || sel.contains("--item") || sel.contains("--min-duration"))
        if sel.contains("nosuch") || sel.contains("1") && sel.first == "--pid" || sel.contains("99999") || sel.contains("99") || sel.contains("no-such-item") {
            #expect(f.status["report"] == 4, "\(sel) matches nothing")
        } else {
            #expect(f.status["report"] == 0, "\(sel): \(f.stderr["report"] ?? "")")
        }
    }

    @Test("on the demo trace, for windows at awkward edges, alone and with a filter", arguments: windows)
    func demoWindows(window: [String]) throws {
        let whole = try commandFigures([demoTrace], [], tag: "w0")
        for sel in [[], ["--loop", "17"], ["--kind", "block"]] {
            let f = try commandFigures([demoTrace], window + sel, tag: "w\((window + sel).joined())")
            expectAgreement(f, "\(window + sel)", narrowsCallouts: sel.contains("--kind"))
            // A window invents nothing: no spurious wake the whole trace does not have, no hang that
            // is not one of the whole trace's hangs.
            for (key, r) in f.report {
                #expect(r.spurious <= whole.report[key]?.spurious ?? 0, "\(window): loop \(key) spurious wakes")
                #expect(Set(r.hangs).isSubset(of: Set(whole.report[key]?.hangs ?? [])), "\(window): loop \(key) hangs")
            }
        }
    }

    @Test("across two processes (two recordings read together), filters and windows")
    func twoProcesses() throws {
        let d = try diffRecordings.get()
        let both = [d.base, d.new]
        let all = try commandFigures(both, [], tag: "p0")
        expectAgreement(all, "two processes", narrowsCallouts: false)
        let pids = Set(all.report.keys.map { $0.split(separator: "/")[0] })
        #expect(pids.count == 2, "\(all.report.keys)")
        let pid = try #require(pids.sorted().first)
        for sel in [["--pid", String(pid)], ["--procname", "rl-example", "--begin", "1s", "--end", "2.5s"], ["--item", "compute*", "--end", "3s"]] {
            let f = try commandFigures(both, sel, tag: "p\(sel.joined())")
            expectAgreement(f, "two processes \(sel)", narrowsCallouts: sel.contains("--item"))
            if sel.first == "--pid" { #expect(Set(f.report.keys.map { String($0.split(separator: "/")[0]) }) == [String(pid)]) }
        }
    }

    @Test("on overlapping flight-recorder snapshots read together (shared packets once, a gap between two), alone and with selections")
    func snapshots() throws {
        let root = NSTemporaryDirectory() + "rltrace-consistency-snapshots-\(getpid())"
        try? FileManager.default.removeItem(atPath: root)
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Two overlapping snapshots, and a third that does not meet the second (a gap).
        try writeSnapshot(root + "/snapshot-1", packets: 0.0..<0.5)
        try writeSnapshot(root + "/snapshot-2", packets: 0.3..<0.7)
        try writeSnapshot(root + "/snapshot-3", packets: 0.85..<1.0)
        for sel in [[], ["--loop", "17"], ["--kind", "timer"], ["--begin", "400ms", "--end", "500ms"], ["--procname", "nosuch"]] {
            let f = try commandFigures([root], sel, tag: "s\(sel.joined())")
            expectAgreement(f, "snapshots \(sel)", narrowsCallouts: sel.contains("--kind"))
            #expect(f.status["report"] == (sel.contains("nosuch") ? 4 : 0), "\(sel): \(f.stderr["report"] ?? "")")
        }
    }

    @Test("--mode selects the runs of a mode in every command, and the modes add up to the whole (runs in three modes, nested)")
    func modes() throws {
        let dir = NSTemporaryDirectory() + "rltrace-consistency-modes-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let r = try run("rltrace", ["record", "-o", dir, "--quiet", "--", binDir.appendingPathComponent("rlc-scenarios").path, "mainqueue"])
        try #require(r.status == 0, "\(r.err)")
        var sums = (iterations: 0, callouts: 0)
        for mode in ["default", "tracking", "nested-empty"] {
            let f = try commandFigures([dir], ["--mode", mode], tag: "m\(mode)")
            expectAgreement(f, "--mode \(mode)", narrowsCallouts: false)
            sums.iterations += f.report.values.reduce(0) { $0 + $1.iterations }
            sums.callouts += f.report.values.reduce(0) { $0 + $1.callouts }
        }
        let all = try commandFigures([dir], [], tag: "m-all")
        expectAgreement(all, "every mode", narrowsCallouts: false)
        #expect(sums.iterations == all.report.values.reduce(0) { $0 + $1.iterations }, "iterations of the three modes against all")
        #expect(sums.callouts == all.report.values.reduce(0) { $0 + $1.callouts }, "callouts of the three modes against all")
        let tracking = try commandFigures([dir], ["--mode", "tracking"], tag: "m-tracking-only")
        #expect(tracking.report.values.reduce(0) { $0 + $1.iterations } > 0 && tracking.report.values.reduce(0) { $0 + $1.iterations } < all.report.values.reduce(0) { $0 + $1.iterations })
    }

    @Test("on-CPU time is never larger than the busy time it is part of: a loop's, a hang's, an item's, whatever the window")
    func onCpuWithinBusy() throws {
        // The CPU time across each
        // sleep (the wait's system call, the tracer's work at sleep_begin and wake) is not busy time.
        // The recordings as `record` makes them by default (no CPU clock context: the watchdog's
        // readings of long callouts), and one with the thread CPU clock (every callout's).
        let d = try diffRecordings.get()
        let clocked = try cpuClockRecording.get()
        var loopsWithCpu = 0, slowestWithCpu = 0
        for window in [[], ["--begin", "1s", "--end", "2s"], ["--end", "500ms"]] {
            for inputs in [[d.base, d.new], [clocked]] {
                let doc = try jsonObject(try run("rltrace", ["report", "--format", "json"] + inputs + window).out)
                for l in doc["loops"] as! [[String: Any]] {
                    if let cpu = l["onCpuNs"] as? Int {
                        loopsWithCpu += 1
                        #expect(cpu <= l["busyNs"] as! Int, "\(window): loop \(l["loop"]!) on CPU \(cpu) ns, busy \(l["busyNs"]!) ns")
                    }
                    for h in l["hangs"] as! [[String: Any]] {
                        if let c = h["onCpuNs"] as? Int { #expect(c <= h["busyNs"] as! Int, "\(window): hang \(h)") }
                    }
                    for i in l["items"] as! [[String: Any]] {
                        if let c = i["onCpuNs"] as? Int { #expect(c <= i["totalNs"] as! Int, "\(window): item \(i["name"]!) on CPU \(c) ns of \(i["totalNs"]!) ns") }
                        if let c = i["slowestOnCpuNs"] as? Int {
                            slowestWithCpu += 1
                            #expect(c <= i["maxNs"] as! Int, "\(window): item \(i["name"]!) slowest on CPU \(c) ns, max \(i["maxNs"]!) ns")
                        }
                    }
                }
            }
            let text = try run("rltrace", ["report", clocked] + window).out
            #expect(text.contains("(on CPU while busy "), "the text says what the figure covers")
        }
        #expect(loopsWithCpu >= 3, "the clocked recording has the thread CPU clock")
        // The injected 50 ms slow callouts of NEW are read by the watchdog in every window that
        // holds one whole: at least in the whole trace.
        #expect(slowestWithCpu >= 2, "the watchdog read the long callouts")
    }

    @Test("diff selects as every command does: items of the selected kind only, nothing selected is exit 4, a report input refuses a selection")
    func diffSelects() throws {
        let d = try run("rltrace", ["diff", demoTrace, demoTrace, "--kind", "timer", "--format", "json"])
        #expect(d.status == 0, "\(d.err)")
        let doc = try jsonObject(d.out)
        let kinds = Set((doc["loops"] as! [[String: Any]]).flatMap { ($0["items"] as! [[String: Any]]).map { $0["kind"] as! String } })
        #expect(kinds == ["timer"], "\(kinds)")
        let loops = try run("rltrace", ["diff", demoTrace, demoTrace, "--loop", "17", "--format", "json"])
        #expect((try jsonObject(loops.out)["loops"] as! [[String: Any]]).count == 1)
        let none = try run("rltrace", ["diff", demoTrace, demoTrace, "--procname", "nosuch"])
        #expect(none.status == 4 && none.err.contains("nothing matches the selection"), "\(none.err)")
        let json = NSTemporaryDirectory() + "rltrace-diff-sel-\(getpid()).json"
        defer { try? FileManager.default.removeItem(atPath: json) }
        try run("rltrace", ["report", demoTrace, "--format", "json", "--distributions"]).out.write(toFile: json, atomically: true, encoding: .utf8)
        let refused = try run("rltrace", ["diff", json, demoTrace, "--kind", "timer"])
        #expect(refused.status == 64 && refused.err.contains("need traces"), "\(refused.err)")
    }

    @Test("a filter and its complement add up to the unfiltered figures")
    func complements() throws {
        func loops(_ sel: [String]) throws -> [String: (Int, Int)] {
            let doc = try jsonObject(try run("rltrace", ["report", "--format", "json", demoTrace] + sel).out)
            var d: [String: (Int, Int)] = [:]
            for l in doc["loops"] as! [[String: Any]] { d["\(l["loop"]!)"] = (l["iterations"] as! Int, l["callouts"] as! Int) }
            return d
        }
        let all = try loops([])
        let a = try loops(["--loop", "17"]), b = try loops(["--loop", "18"])
        #expect(a.count == 1 && b.count == 1 && a["17"]! == all["17"]! && b["18"]! == all["18"]!)
        let kinds = ["observer", "source0", "source1", "timer", "main_queue", "block"]
        for k in kinds {
            let one = try loops(["--kind", k]), rest = try loops(["--kind", kinds.filter { $0 != k }.joined(separator: ",")])
            for (loop, (it, c)) in all {
                #expect((one[loop]?.1 ?? 0) + (rest[loop]?.1 ?? 0) == c, "--kind \(k): loop \(loop) callouts")
                #expect(one[loop].map { $0.0 == it } ?? true, "--kind \(k) narrows no iteration")
            }
        }
    }

    @Test("a window split in two counts each callout once, and those across the split in both halves",
          arguments: randomWindows(spanNs: 3_000_000_000, count: 4, seed: 0xC0FFEE))
    func splitWindows(window: [String]) throws {
        let lo = Int64(window[1].dropFirst().dropLast(2))!, hi = Int64(window[3].dropFirst().dropLast(2))!
        let mid = lo + (hi - lo) / 2
        func callouts(_ a: Int64, _ b: Int64) throws -> Int {
            let r = try run("rltrace", ["report", "--format", "json", demoTrace, "--begin", "+\(a)ns", "--end", "+\(b)ns"])
            if r.status == 4 { return 0 }     // nothing ran in that part
            #expect(r.status == 0, "\(r.err)")
            return (try jsonObject(r.out)["loops"] as! [[String: Any]]).reduce(0) { $0 + ($1["callouts"] as! Int) }
        }
        let whole = try callouts(lo, hi), first = try callouts(lo, mid), second = try callouts(mid + 1, hi)
        // Callouts across the split: from the export of the whole window (exact ns: µs with 3 decimals).
        let out = NSTemporaryDirectory() + "rltrace-split-\(getpid()).json"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let x = try run("rltrace", ["export", "-o", out, demoTrace, "--begin", "+\(lo)ns", "--end", "+\(hi)ns"])
        var across = 0
        if x.status == 0 {
            let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as! [String: Any]
            let kinds: Set<String> = ["observer", "source0", "source1", "timer", "main_queue", "block"]
            for case let e as [String: Any] in doc["traceEvents"] as! [Any] where kinds.contains(e["cat"] as? String ?? "") {
                let ts = Int64(((e["ts"] as! NSNumber).doubleValue * 1000).rounded()), dur = Int64(((e["dur"] as! NSNumber).doubleValue * 1000).rounded())
                // Export times are after the trace's first event, as the window's bounds are.
                if ts <= mid && ts + dur >= mid + 1 { across += 1 }
            }
        }
        #expect(first + second == whole + across, "\(window): \(first) + \(second) against \(whole) + \(across) across +\(mid)ns")
    }
}

/// rl-example recorded with the thread CPU clock context (`--context perf:thread:task-clock`):
/// every callout's and iteration's on-CPU time.
let cpuClockRecording: Result<String, Error> = Result {
    let dir = NSTemporaryDirectory() + "rltrace-cpuclock-\(getpid())"
    try? FileManager.default.removeItem(atPath: dir)
    let r = try run("rltrace", ["record", "-o", dir, "--quiet", "--context", "perf:thread:task-clock", "--",
                                binDir.appendingPathComponent("rl-example").path, "--duration", "20", "--requests", "1000"])
    guard r.status == 0 else { throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "record failed: \(r.err)"]) }
    return dir
}
