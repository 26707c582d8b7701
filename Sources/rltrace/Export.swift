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

        Then open trace.pftrace or trace.json in ui.perfetto.dev (the JSON also in chrome://tracing); perfetto is about a seventeenth of the JSON's size and opens traces too long for JSON. Its packets are deflated into compressed_packets, as Perfetto's own traced writes them (Perfetto's trace processor and UI read them); --compression none writes each packet as it is, for tools that decode Perfetto's protos themselves (protoc --decode=perfetto.protos.Trace). The export is written as the trace is read (memory does not grow with the trace), to standard output unless -o names a file, which appears complete when the export ends (an existing one is replaced only with --force). For the report as JSON use `rltrace report --format json`.

        \(exitCodesHelp)
        """
    )
    enum Format: String, ExpressibleByArgument, CaseIterable { case chrome, perfetto }
    @OptionGroup var analysis: AnalysisOptions
    @OptionGroup var thresholds: ThresholdOptions
    @Option(help: ArgumentHelp("Export format: perfetto or chrome (the report as JSON is `rltrace report --format json`).", valueName: "format"),
            transform: ExportCommand.format(_:))
    var format: Format = .chrome
    @Option(help: ArgumentHelp("With --format perfetto: deflate (the default: Perfetto's compressed_packets) or none.", valueName: "compression"),
            transform: ExportCommand.compression(_:))
    var compression: PerfettoCompression?
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if compression != nil && format != .perfetto {
            throw ValidationError("--compression applies to --format perfetto (Perfetto's compressed_packets); the Chrome export is JSON text")
        }
    }

    func run() throws {
        try output.write { out in
            let sink: LoopModelSink
            if format == .perfetto {
                let p = PerfettoTraceSink(out: out, options: try thresholds.options(), compression: compression ?? .deflate)
                // RLTRACE_PERFETTO_PENDING=N: a loop writes what it can of an open iteration every N
                // slices (tests make it small to exercise the early writes on small traces).
                if let v = ProcessInfo.processInfo.environment["RLTRACE_PERFETTO_PENDING"], let n = Int(v), n >= 1 { p.pendingLimit = n }
                sink = p
            } else {
                sink = ChromeTraceSink(out: out)
            }
            try stream(analysis, into: sink)      // the sink closes the document at the end of the stream
        }
    }
}
