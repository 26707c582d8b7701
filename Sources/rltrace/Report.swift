import ArgumentParser
import Foundation
import RLAnalysis

/// Options every analysis command shares: the traces and the common filters.
struct AnalysisOptions: ParsableArguments {
    @Argument(help: "Trace directories, or directories containing traces (LTTng session output, snapshots).")
    var traces: [String]

    @Option(help: "Only this process id (vpid context); repeatable.") var pid: [Int64] = []
    @Option(help: "Only the loop of this thread id; repeatable.") var tid: [Int64] = []
    @Option(help: "Only loops of this process name; repeatable.") var procname: [String] = []
    @Option(help: "Only this loop id; repeatable.") var loop: [UInt64] = []
    @Option(parsing: .unconditional,
            help: "Start at this time: a duration after the trace start (250ms, +1.5s) or an absolute time of the trace clock: @SECONDS as `dump` and `timeline` print it (seconds since the epoch), @YYYY-MM-DDTHH:MM:SS[.NNNNNNNNN] (UTC), or @HH:MM:SS[.NNNNNNNNN] (UTC, on the trace's first day, as `babeltrace2 --clock-gmt` prints it).")
    var begin: String?
    @Option(parsing: .unconditional, help: "Stop at this time (same forms as --begin).") var end: String?
    @Option(help: "Callout figures only for this kind (observer, source0, source1, timer, main_queue, block); repeatable or comma-separated.")
    var kind: [String] = []
    @Option(help: "Callout figures only for items whose name matches this glob (e.g. 'client*').") var item: String?
    @Option(help: "Callout figures only for callouts at least this long (e.g. 1ms).") var minDuration: String?

    func validate() throws { _ = try filter() }

    func filter() throws -> EventFilter {
        var f = EventFilter()
        f.pids = Set(pid); f.tids = Set(tid); f.procnames = Set(procname); f.loops = Set(loop)
        f.calloutKinds = try kindSet(kind)
        f.itemGlob = item
        if let m = minDuration { f.minCalloutNs = try parseThreshold(m, "--min-duration") }
        for (flag, v) in [("--begin", begin), ("--end", end)] {
            if let v, v.hasPrefix("-") {
                throw ValidationError("\(flag): \(v.debugDescription) is before the trace start; give a time after it (+1.5s) or on the trace clock (@SECONDS)")
            }
        }
        if let b = begin {
            guard let t = EventFilter.TimeBound(parsing: b) else { throw ValidationError("--begin: cannot read the time \(b.debugDescription) (e.g. 1.5s, 250ms, +2s, @1763875200.123456789, @2026-11-23T09:52:24.5, @09:52:24.5)") }
            f.begin = t
        }
        if let e = end {
            guard let t = EventFilter.TimeBound(parsing: e) else { throw ValidationError("--end: cannot read the time \(e.debugDescription) (e.g. 1.5s, 250ms, +2s, @1763875200.123456789, @2026-11-23T09:52:24.5, @09:52:24.5)") }
            f.end = t
        }
        return f
    }
}

/// Runs an analysis, mapping its errors to the documented exit codes.
func runAnalysis<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let e as AnalysisError {
        warn("rltrace: \(e)")
        throw ExitCode(e.exitCode)
    }
}

/// A duration option: a number with a unit (ns, us, µs, ms, s, m). A bare number is refused (is
/// `--hang-threshold 10` ten seconds or ten milliseconds?), and so is a negative one.
func parseThreshold(_ text: String, _ flag: String) throws -> Int64 {
    if text.hasPrefix("-") { throw ValidationError("\(flag): \(text.debugDescription) is negative; give a duration such as 250ms") }
    if Double(text) != nil { throw ValidationError("\(flag): \(text.debugDescription) has no unit; write e.g. \(text)ms or \(text)s") }
    guard let ns = parseDuration(text) else { throw ValidationError("\(flag): cannot read the duration \(text.debugDescription) (e.g. 250ms, 1.5s)") }
    return ns
}

/// The thresholds every finding uses, shared by `report`, `timeline` and `hangs`.
struct ThresholdOptions: ParsableArguments {
    @Option(name: [.customLong("hang-threshold"), .customLong("threshold")], help: "An iteration busy at least this long is a hang (with a unit: 250ms).")
    var hangThreshold = "250ms"
    @Option(help: "An iteration busy at least this long counts as slow.") var slowThreshold = "100ms"
    @Option(help: "A callout at least this long is a SLOW CALLOUT finding.") var slowCallout = "10ms"
    @Option(help: "A timer fired at least this late is a LATE TIMER finding.") var lateTimer = "10ms"
    @Option(help: "This many consecutive iterations without sleeping make a spin (at least 2).") var spinIterations = 100

    func validate() throws {
        _ = try options()
        if spinIterations < 2 { throw ValidationError("--spin-iterations must be at least 2 (a spin is a run of iterations that never sleep)") }
    }

    func options() throws -> ReportOptions {
        ReportOptions(hangThresholdNs: try parseThreshold(hangThreshold, "--hang-threshold"),
                      slowThresholdNs: try parseThreshold(slowThreshold, "--slow-threshold"),
                      spinMinIterations: spinIterations,
                      slowCalloutNs: try parseThreshold(slowCallout, "--slow-callout"),
                      lateTimerNs: try parseThreshold(lateTimer, "--late-timer"))
    }
}

/// The exit codes every analysis command documents.
let exitCodesHelp = """
Exit codes: 0 ok; 1 unreadable trace or output; 2 contradictory options (a window outside the trace, an existing output file without --force); 3 no trace found; 4 no runloop events; 5 unsupported runloop schema; 6 LTTng session set-up failed (record, demo); 64 bad command line.
"""

/// `rltrace report`: the overview per process and loop.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Per-loop overview: iterations, busy/asleep time, callouts per kind and item, wakes, latencies, hangs, spins.",
        discussion: """
        Examples:
          rltrace report ~/lttng-traces/demo-20261122-101500
          rltrace report TRACE --format json -o report.json
          rltrace report TRACE --format html > report.html
          rltrace report TRACE --hang-threshold 100ms --procname rl-example

        Every format goes to standard output unless -o names a file, which is written whole or not at all; an existing file is replaced only with --force. The JSON schema is docs/report-json.md.

        Times: +1.5s after the trace start, or on the trace clock: @SECONDS (as dump and timeline print), @YYYY-MM-DDTHH:MM:SS.N or @HH:MM:SS.N (UTC, as babeltrace2 --clock-gmt prints).

        \(exitCodesHelp)
        """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json, csv, lami, html }

    @OptionGroup var analysis: AnalysisOptions
    @Option(help: "Output format: text, json (docs/report-json.md), csv, lami (LAMI 1.0 for Trace Compass), html.")
    var format: Format = .text
    @OptionGroup var thresholds: ThresholdOptions
    @OptionGroup var output: OutputOptions
    @Flag(help: "json: give each item its durations (\"distribution\": [[valueNs, count], …]) for `rltrace diff`'s tests.")
    var distributions = false

    func validate() throws {
        if distributions && format != .json { throw ValidationError("--distributions needs --format json") }
    }

    func run() throws {
        let opts = try thresholds.options()
        let filter = try analysis.filter()
        let progress = Progress.start("reading")
        let strips = format == .html ? BusyStripCollector() : nil
        let report = try runAnalysis { try analyze(paths: analysis.traces, options: opts, filter: filter, also: strips, distributions: distributions && format == .json) }
        progress.stop()
        let text: String
        switch format {
        case .text: text = TextReportRenderer().render(report)
        case .json: text = try JSONReportRenderer.render(report)
        case .csv: text = CSVReportRenderer.render(report)
        case .lami: text = try LAMIReportRenderer.render(report, window: LAMIReportRenderer.window(for: filter, in: report))
        case .html: text = HTMLReportRenderer.render(report, strips: strips)
        }
        try output.write(text)
        for w in report.warnings where format != .text { warn("rltrace: warning: \(w)") }
    }
}

/// A progress line on standard error when reading takes more than a second and stderr is a terminal.
final class Progress: @unchecked Sendable {
    private let timer: DispatchSourceTimer?
    private let started = Date()
    static func start(_ label: String) -> Progress { Progress(label) }
    private init(_ label: String) {
        guard isatty(2) != 0 else { timer = nil; return }
        let t = DispatchSource.makeTimerSource(queue: .global())
        let start = Date()
        t.schedule(deadline: .now() + 1, repeating: 0.5)
        t.setEventHandler { warnNoNewline("\r\(label)… \(Int(Date().timeIntervalSince(start)))s") }
        t.resume()
        timer = t
    }
    func stop() {
        guard let timer else { return }
        timer.cancel()
        if Date().timeIntervalSince(started) > 1 { warnNoNewline("\r\u{1B}[K") }
    }
}

func warnNoNewline(_ s: String) {
    var s = s
    s.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
