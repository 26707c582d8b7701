import ArgumentParser
import Foundation
import RLAnalysis

/// Reads the traces once, streaming what the model rebuilds into `sink` (a renderer that writes as
/// it goes) and returning the report's figures.
func stream(_ a: AnalysisOptions, options: ReportOptions = ReportOptions(), into sink: LoopModelSink?) throws -> Report {
    let filter = try a.filter()
    let progress = Progress.start("reading")
    defer { progress.stop() }
    return try runAnalysis { try analyze(paths: a.traces, options: options, filter: filter, also: sink) }
}

/// The output file of `-o`, or standard output.
func openOutput(_ path: String?) throws -> ByteSink {
    guard let path else { return ByteSink(fd: 1) }
    do { return try ByteSink(creating: path) } catch {
        warn("rltrace: \(error)")
        throw ExitCode(1)
    }
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
        Nested runs are indented; observer callouts are counted, and listed when ≥ 1 ms. The start
        column is the trace clock (epoch seconds): `--begin @SECONDS` in any command takes it.
        Iterations cut by --begin/--end are marked CLIPPED.
        \(exitCodesHelp)
        """
    )
    @OptionGroup var analysis: AnalysisOptions
    @Option(help: "Only iterations of runs in this mode (`default` for the default mode).") var mode: String?
    @Flag(help: "Only flagged iterations (hang, slow, spin, late timer).") var flagged = false
    @OptionGroup var thresholds: ThresholdOptions

    func run() throws {
        var sel = TimelineSink.Selection()
        // The common callout filters select iterations here: those with a matching callout; and
        // --min-duration selects iterations busy at least that long.
        sel.kinds = try kindSet(analysis.kind)
        sel.itemGlob = analysis.item
        sel.minBusyNs = try analysis.minDuration.map { try parseThreshold($0, "--min-duration") } ?? 0
        sel.mode = mode
        sel.flaggedOnly = flagged
        let opts = try thresholds.options()
        let out = ByteSink(fd: 1)
        let sink = TimelineSink(out: out, options: opts, selection: sel)
        _ = try stream(analysis, options: opts, into: sink)
        out.flush()
    }
}

/// `rltrace hangs`: each hang with the callout that held it.
struct Hangs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Each hang (an iteration busy past the threshold) with its loop, time, duration, and the callout and item that held it.",
        discussion: """
        Example:  rltrace hangs TRACE --hang-threshold 100ms      (--threshold is the same option)
        Exit code 0 also when there is no hang (the output says so).
        \(exitCodesHelp)
        """
    )
    @OptionGroup var analysis: AnalysisOptions
    @OptionGroup var thresholds: ThresholdOptions
    @Option(help: "Output format: text or json.") var format: Format = .text
    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json }

    func run() throws {
        let opts = try thresholds.options()
        let t = opts.hangThresholdNs
        let filter = try analysis.filter()
        let r = try runAnalysis { try analyze(paths: analysis.traces, options: opts, filter: filter) }
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
        Linear buckets of more than 32 values are placed from the HdrHistogram (within 0.1 %).
        \(exitCodesHelp)
        """
    )
    typealias Of = HistogramSink.Quantity
    typealias By = HistogramSink.Grouping
    typealias Scale = HistogramSink.Scale

    @OptionGroup var analysis: AnalysisOptions
    @Option(help: "What to histogram: sleep, iteration (busy time), callout, wake-latency, timer-lateness, signal-latency.") var of: Of = .sleep
    @Option(help: "Group by: none, reason (sleep), kind (callout), item (callout, timer-lateness, signal-latency), loop.") var by: By = .none
    @Option(help: "Bucket scale: log2 or linear.") var scale: Scale = .log2
    @Option(help: "Number of buckets (linear scale).") var buckets = 20
    @Option(help: "Ignore values below this duration.") var min: String?
    @Option(help: "Ignore values above this duration.") var max: String?

    func validate() throws {
        if by == .reason && of != .sleep { throw ValidationError("--by reason only applies to --of sleep") }
        if by == .kind && of != .callout { throw ValidationError("--by kind only applies to --of callout") }
        if by == .item && ![.callout, .timerLateness, .signalLatency].contains(of) {
            throw ValidationError("--by item applies to --of callout, timer-lateness and signal-latency")
        }
        if analysis.minDuration != nil && of != .callout { throw ValidationError("--min-duration applies to --of callout (use --min)") }
        if (!analysis.kind.isEmpty) && of != .callout { throw ValidationError("--kind applies to --of callout") }
        if analysis.item != nil && ![.callout, .timerLateness, .signalLatency].contains(of) {
            throw ValidationError("--item applies to --of callout, timer-lateness and signal-latency")
        }
        if buckets < 1 || buckets > 1000 { throw ValidationError("--buckets must be 1…1000") }
    }

    func run() throws {
        var lo = try min.map { try parseThreshold($0, "--min") } ?? 0
        let hi = try max.map { try parseThreshold($0, "--max") } ?? Int64.max
        if lo > hi { warn("rltrace: contradictory filters: --min is above --max"); throw ExitCode(2) }
        if let md = analysis.minDuration { lo = Swift.max(lo, try parseThreshold(md, "--min-duration")) }
        let sink = HistogramSink(of: of, by: by, lo: lo, hi: hi, kinds: try kindSet(analysis.kind), itemGlob: analysis.item)
        _ = try stream(analysis, into: sink)
        writeStdout(sink.render(scale: scale, buckets: buckets))
    }
}

extension HistogramSink.Quantity: ExpressibleByArgument {}
extension HistogramSink.Grouping: ExpressibleByArgument {}
extension HistogramSink.Scale: ExpressibleByArgument {}

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}

/// `rltrace export`.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Export for other tools: Chrome Trace Event JSON (Perfetto, chrome://tracing).",
        discussion: """
        Example:  rltrace export TRACE --format chrome -o trace.json   (then open it in ui.perfetto.dev)
        Written as the trace is read (memory does not grow with the trace).
        \(exitCodesHelp)
        """
    )
    enum Format: String, ExpressibleByArgument, CaseIterable { case chrome }
    @OptionGroup var analysis: AnalysisOptions
    @Option(help: "Export format.") var format: Format = .chrome
    @Option(name: .shortAndLong, help: "The output file.") var output: String

    func run() throws {
        let out = try openOutput(output)
        let sink = ChromeTraceSink(out: out, filter: try analysis.filter())
        _ = try stream(analysis, into: sink)      // the sink closes the document at the end of the stream
        do { try out.finish() } catch { warn("rltrace: \(error)"); throw ExitCode(1) }
        warn("wrote \(output)")
    }
}
