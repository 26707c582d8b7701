import ArgumentParser
import Foundation
import RLAnalysis

/// Reads the traces once, keeping iterations for the views that need them.
func collect(_ a: AnalysisOptions, options: ReportOptions = ReportOptions(), limit: Int = 0,
             strips: Bool = false) throws -> (Report, IterationCollector, BusyStripCollector?) {
    let c = IterationCollector(limit: limit)
    let s = strips ? BusyStripCollector() : nil
    let sink: LoopModelSink = s.map { FanOutSink([c, $0]) } ?? c
    let filter = try a.filter()
    let progress = Progress.start("reading")
    defer { progress.stop() }
    let r = try runAnalysis { try analyze(paths: a.traces, options: options, filter: filter, also: sink) }
    return (r, c, s)
}

func kindSet(_ kinds: [String]) throws -> Set<CalloutKind> {
    Set(try kinds.flatMap { $0.split(separator: ",") }.map { k in
        guard let c = CalloutKind(label: String(k)) else {
            throw ValidationError("--kind: unknown callout kind \(String(k).debugDescription) (observer, source0, source1, timer, main_queue, block)")
        }
        return c
    })
}

/// `rltrace timeline`: one line per iteration.
struct Timeline: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "One line per iteration: start, busy and sleep time, wake reason, callouts with durations and nesting, flags.",
        discussion: """
        Examples:
          rltrace timeline TRACE --begin 1.2s --end 1.5s
          rltrace timeline TRACE --flagged                    (hangs, slow iterations, spins, late timers)
          rltrace timeline TRACE --kind timer --item 'heart*' --min-duration 1ms
        Nested runs are indented; observer callouts are counted, and listed when ≥ 1 ms.
        """
    )
    @OptionGroup var analysis: AnalysisOptions
    @Option(help: "Only iterations of runs in this mode (`default` for the default mode).") var mode: String?
    @Flag(help: "Only flagged iterations (hang, slow, spin, late timer).") var flagged = false
    @Option(help: "An iteration busy at least this long is flagged HANG.") var hangThreshold = "250ms"

    func run() throws {
        var sel = TimelineRenderer.Selection()
        // The common callout filters select iterations here: those with a matching callout; and
        // --min-duration selects iterations busy at least that long.
        sel.kinds = try kindSet(analysis.kind)
        sel.itemGlob = analysis.item
        sel.minBusyNs = try analysis.minDuration.map { try parseThreshold($0, "--min-duration") } ?? 0
        sel.mode = mode
        sel.flaggedOnly = flagged
        let opts = ReportOptions(hangThresholdNs: try parseThreshold(hangThreshold, "--hang-threshold"))
        let (r, c, _) = try collect(analysis, options: opts)
        writeStdout(TimelineRenderer(options: opts, selection: sel).render(c, origin: r.trace.beginNs))
    }
}

/// `rltrace hangs`: each hang with the callout that held it.
struct Hangs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Each hang (an iteration busy past the threshold) with its loop, time, duration, and the callout and item that held it.",
        discussion: "Example:  rltrace hangs TRACE --threshold 100ms\nExit code 0 also when there is no hang (the output says so)."
    )
    @OptionGroup var analysis: AnalysisOptions
    @Option(help: "Busy time that makes a hang.") var threshold = "250ms"
    @Option(help: "Output format: text or json.") var format: Format = .text
    enum Format: String, ExpressibleByArgument { case text, json }

    func run() throws {
        let t = try parseThreshold(threshold, "--threshold")
        let filter = try analysis.filter()
        let r = try runAnalysis { try analyze(paths: analysis.traces, options: ReportOptions(hangThresholdNs: t), filter: filter) }
        if format == .json {
            struct Row: Encodable { var pid: Int64; var loop: UInt64; var tid: Int64; var threadName: String; var hang: HangReport }
            let rows = r.loops.flatMap { l in l.hangs.map { Row(pid: l.pid, loop: l.loop, tid: l.tid, threadName: l.threadName, hang: $0) } }
            let enc = JSONEncoder()
            enc.outputFormatting = [.prettyPrinted, .sortedKeys]
            writeStdout(String(decoding: try enc.encode(rows), as: UTF8.self) + "\n")
            return
        }
        var o = "hangs (iterations busy ≥ \(formatDuration(t))):\n"
        var n = 0
        for l in r.loops {
            for h in l.hangs {
                n += 1
                let c = h.culprit.map { "\($0.kind) \"\($0.name)\" #\($0.item) ran \(formatDuration($0.durationNs))" } ?? "no callout (the time went to the loop itself)"
                o += "  loop \(l.loop) (\(l.procname.isEmpty ? "pid \(l.pid)" : l.procname) tid \(l.tid)\(l.threadName.isEmpty ? "" : " \"\(l.threadName)\"")) iteration \(h.iteration) at +\(formatDuration(h.beginNs - r.trace.beginNs)): busy \(formatDuration(h.busyNs)) of \(formatDuration(h.durationNs)) — \(c)\n"
            }
        }
        if n == 0 { o += "  none\n" }
        writeStdout(o)
    }
}

/// `rltrace histogram`.
struct HistogramCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "histogram",
        abstract: "Terminal bar histograms with bucket bounds, counts and percentiles (HdrHistogram).",
        discussion: """
        Examples:
          rltrace histogram TRACE --of sleep --by reason
          rltrace histogram TRACE --of callout --by item --scale linear --buckets 20 --max 2ms
          rltrace histogram TRACE --of timer-lateness --by item
        """
    )
    enum Of: String, ExpressibleByArgument, CaseIterable { case sleep, iteration, callout, wakeLatency = "wake-latency", timerLateness = "timer-lateness", signalLatency = "signal-latency" }
    enum By: String, ExpressibleByArgument, CaseIterable { case none, reason, kind, item, loop }
    enum Scale: String, ExpressibleByArgument, CaseIterable { case log2, linear }

    @OptionGroup var analysis: AnalysisOptions
    @Option(help: "What to histogram: sleep, iteration (busy time), callout, wake-latency, timer-lateness, signal-latency.") var of: Of = .sleep
    @Option(help: "Group by: none, reason (sleep), kind (callout), item, loop.") var by: By = .none
    @Option(help: "Bucket scale: log2 or linear.") var scale: Scale = .log2
    @Option(help: "Number of buckets (linear scale).") var buckets = 20
    @Option(help: "Ignore values below this duration.") var min: String?
    @Option(help: "Ignore values above this duration.") var max: String?

    func validate() throws {
        if by == .reason && of != .sleep { throw ValidationError("--by reason only applies to --of sleep") }
        if by == .kind && of != .callout { throw ValidationError("--by kind only applies to --of callout") }
        if buckets < 1 || buckets > 1000 { throw ValidationError("--buckets must be 1…1000") }
    }

    func run() throws {
        let lo = try min.map { try parseThreshold($0, "--min") } ?? 0
        let hi = try max.map { try parseThreshold($0, "--max") } ?? Int64.max
        if lo > hi { warn("rltrace: contradictory filters: --min is above --max"); throw ExitCode(2) }
        let kinds = try kindSet(analysis.kind)
        let itemGlob = analysis.item
        let (r, c, _) = try collect(analysis)
        var groups: [String: [Int64]] = [:]
        func loopName(_ k: LoopKey) -> String {
            let l = r.loops.first { $0.pid == k.pid && $0.loop == k.loop }
            return "loop \(k.loop)\(l.map { $0.threadName.isEmpty ? "" : " \"\($0.threadName)\"" } ?? "")"
        }
        func add(_ g: String, _ v: Int64) { if v >= lo && v <= hi { groups[g, default: []].append(v) } }
        func itemName(_ kind: CalloutKind, _ item: UInt64, _ pid: Int64, blockName: String? = nil) -> String {
            kind == .mainQueue ? "main-queue" : kind == .block ? (blockName ?? "") : c.name(kind, item, pid: pid)
        }
        func nameOK(_ kind: CalloutKind, _ item: UInt64, _ pid: Int64, blockName: String? = nil) -> Bool {
            itemGlob.map { globMatch($0, itemName(kind, item, pid, blockName: blockName)) } ?? true
        }
        switch of {
        case .sleep:
            for s in c.sleeps { add(by == .reason ? s.reason.label : by == .loop ? loopName(s.key) : "sleep", s.duration) }
        case .iteration:
            for row in c.rows where row.record.depth == 0 { add(by == .loop ? loopName(row.record.key) : "iteration busy", row.record.busyNs) }
        case .callout:
            for x in c.callouts where (kinds.isEmpty || kinds.contains(x.kind)) && nameOK(x.kind, x.item, x.key.pid, blockName: x.blockName) {
                let g: String
                switch by {
                case .kind: g = x.kind.label
                case .item: g = "\(x.kind.label) \"\(itemName(x.kind, x.item, x.key.pid, blockName: x.blockName))\""
                case .loop: g = loopName(x.key)
                default: g = "callout"
                }
                add(g, x.duration)
            }
        case .wakeLatency:
            for w in c.wakeUps { add(by == .loop ? loopName(w.key) : "wakeUp → wake", w.ns) }
        case .timerLateness:
            for t in c.lateness where nameOK(.timer, t.item, t.key.pid) {
                add(by == .item ? "timer \"\(c.name(.timer, t.item, pid: t.key.pid))\"" : by == .loop ? loopName(t.key) : "timer lateness", t.ns)
            }
        case .signalLatency:
            for s in c.signal where nameOK(.source0, s.item, s.key.pid) {
                add(by == .item ? "source0 \"\(c.name(.source0, s.item, pid: s.key.pid))\"" : by == .loop ? loopName(s.key) : "signal → perform", s.ns)
            }
        }
        var o = ""
        if groups.isEmpty { o = "no values (nothing of that kind in the selected range)\n" }
        for (g, values) in groups.sorted(by: { $0.key < $1.key }) {
            var acc = DurationAccumulator()
            for v in values { acc.add(v) }
            o += "\(g): \(values.count) values · p50 \(formatDuration(acc.percentile(50))) · p90 \(formatDuration(acc.percentile(90))) · p99 \(formatDuration(acc.percentile(99))) · p99.9 \(formatDuration(acc.percentile(99.9))) · max \(formatDuration(acc.max))\n"
            if scale == .log2 {
                var h: [String: Int] = [:]
                for v in values { h[String(log2Bucket(v)), default: 0] += 1 }
                o += histogramLines(h, indent: "  ")
            } else {
                let vmin = values.min()!, vmax = values.max()!
                let width = Swift.max(1, (vmax - vmin + Int64(buckets)) / Int64(buckets))
                var counts = [Int](repeating: 0, count: buckets)
                for v in values { counts[Swift.min(buckets - 1, Int((v - vmin) / width))] += 1 }
                let top = counts.max() ?? 1
                for (i, n) in counts.enumerated() {
                    let a = vmin + Int64(i) * width
                    o += "  " + "[\(formatDuration(a)), \(formatDuration(a + width)))".padding(toLength: 24, withPad: " ", startingAt: 0)
                        + String(n).leftPad(8) + " " + String(repeating: "█", count: n == 0 ? 0 : Swift.max(1, n * 40 / Swift.max(1, top))) + "\n"
                }
            }
        }
        writeStdout(o)
    }
}

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}

/// `rltrace export`.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export for other tools: Chrome Trace Event JSON (Perfetto, chrome://tracing).",
        discussion: "Example:  rltrace export TRACE --format chrome -o trace.json   (then open it in ui.perfetto.dev)"
    )
    enum Format: String, ExpressibleByArgument { case chrome }
    @OptionGroup var analysis: AnalysisOptions
    @Option(help: "Export format.") var format: Format = .chrome
    @Option(name: .shortAndLong, help: "The output file.") var output: String

    func run() throws {
        let (r, c, s) = try collect(analysis, strips: true)
        try emit(try ChromeTraceRenderer.render(c, report: r, strips: s), to: output)
    }
}
