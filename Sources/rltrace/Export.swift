import ArgumentParser
import Foundation
import RLAnalysis

/// `rltrace export`.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
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
        let sink = ChromeTraceSink(out: out)
        try stream(analysis, into: sink)      // the sink closes the document at the end of the stream
        do { try out.finish() } catch { warn("rltrace: \(error)"); throw ExitCode(1) }
        warn("wrote \(output)")
    }
}
