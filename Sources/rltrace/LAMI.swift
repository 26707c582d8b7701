import ArgumentParser
import Foundation
import RLAnalysis

/// `rltrace lami`: rltrace's report behind the LAMI 1.0 protocol, so Trace Compass can run it as an
/// external analysis (Trace Compass: Add External Analysis… → command `rltrace lami`).
struct LAMICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lami",
        abstract: "The run-loop report as a LAMI 1.0 external analysis (for Trace Compass).",
        discussion: """
        Trace Compass runs `rltrace lami --metadata` once to learn the result tables, then
        `rltrace lami [--begin NS] [--end NS] TRACE` (times in ns since the Unix epoch) for the selection.
        Example:  rltrace lami --metadata ;  rltrace lami ~/lttng-traces/demo-*
        """
    )
    @Flag(name: .customLong("mi-version"), help: "Print the LAMI version this analysis speaks and exit.") var miVersion = false
    @Flag(help: "Print the analysis's LAMI metadata and exit.") var metadata = false
    @Option(help: "Analyse from this time (ns since the Unix epoch).") var begin: Int64?
    @Option(help: "Analyse up to this time (ns since the Unix epoch).") var end: Int64?
    @Option(help: "Accepted for LAMI compatibility (rows are not truncated).") var limit: Int?
    @Flag(name: .customLong("output-progress"), help: "Accepted for LAMI compatibility.") var outputProgress = false
    @Argument(help: "The trace (directory).") var traces: [String] = []

    func run() throws {
        if miVersion { writeStdout("{\"major\": 1, \"minor\": 0}\n"); return }
        if metadata { writeStdout(try LAMIReportRenderer.metadata(version: "rltrace")); return }
        guard !traces.isEmpty else { throw ValidationError("give the trace to analyse (or --metadata / --mi-version)") }
        var f = EventFilter()
        if let b = begin { f.begin = .epoch(b) }
        if let e = end { f.end = .epoch(e) }
        let report = try runAnalysis { try analyze(paths: traces, filter: f) }
        writeStdout(try LAMIReportRenderer.render(report))
    }
}
