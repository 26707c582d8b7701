import ArgumentParser
import Foundation
import RLAnalysis

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
