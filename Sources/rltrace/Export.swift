import ArgumentParser
import Foundation
import RLAnalysis

/// `rltrace export`.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export for other tools: Perfetto's protobuf trace, or Chrome Trace Event JSON (Perfetto, chrome://tracing).",
        discussion: """
        Example:  rltrace export TRACE --format perfetto -o trace.pftrace   (then open it in ui.perfetto.dev)
                  rltrace export TRACE --format chrome -o trace.json
        Written as the trace is read (memory does not grow with the trace).
        \(exitCodesHelp)
        """
    )
    enum Format: String, ExpressibleByArgument, CaseIterable { case chrome, perfetto }
    @OptionGroup var analysis: AnalysisOptions
    @OptionGroup var thresholds: ThresholdOptions
    @Option(help: "Export format.") var format: Format = .chrome
    @Option(name: .shortAndLong, help: "The output file.") var output: String

    func run() throws {
        let out = try openOutput(output)
        let sink: LoopModelSink = format == .perfetto
            ? PerfettoTraceSink(out: out, hangThresholdNs: try thresholds.options().hangThresholdNs)
            : ChromeTraceSink(out: out, filter: try analysis.filter())
        try stream(analysis, into: sink)      // the sink closes the document at the end of the stream
        do { try out.finish() } catch { warn("rltrace: \(error)"); throw ExitCode(1) }
        warn("wrote \(output)")
    }
}
