import ArgumentParser
import Foundation
import RLAnalysis

/// `rltrace export`.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export for other tools: Perfetto's protobuf trace, or Chrome Trace Event JSON (Perfetto, chrome://tracing).",
        discussion: """
        Example:
          rltrace export TRACE --format perfetto -o trace.pftrace
          rltrace export TRACE --format chrome -o trace.json

        Then open trace.pftrace or trace.json in ui.perfetto.dev (the JSON also in chrome://tracing); perfetto is a few times smaller and opens traces too long for JSON. The export is written as the trace is read (memory does not grow with the trace), to standard output unless -o names a file, which appears complete when the export ends (an existing one is replaced only with --force). For the report as JSON use `rltrace report --format json`.

        \(exitCodesHelp)
        """
    )
    enum Format: String, ExpressibleByArgument, CaseIterable { case chrome, perfetto }
    @OptionGroup var analysis: AnalysisOptions
    @OptionGroup var thresholds: ThresholdOptions
    @Option(help: ArgumentHelp("Export format: perfetto or chrome (the report as JSON is `rltrace report --format json`).", valueName: "format"),
            transform: ExportCommand.format(_:))
    var format: Format = .chrome
    @OptionGroup var output: OutputOptions

    func run() throws {
        try output.write { out in
            let sink: LoopModelSink = format == .perfetto
                ? PerfettoTraceSink(out: out, options: try thresholds.options()) : ChromeTraceSink(out: out)
            try stream(analysis, into: sink)      // the sink closes the document at the end of the stream
        }
    }
}
