import ArgumentParser
import Foundation
import RLAnalysis

/// `rltrace lami`: rltrace's report behind the LAMI 1.0 protocol (lttng/lami-spec `lami.adoc`), so
/// Trace Compass can run it as an external analysis (Trace Compass: Add External Analysis… →
/// command `rltrace lami`).
///
/// The four phases: `--mi-version` prints `1.0`; `--metadata` the metadata object;
/// `--test-compatibility TRACE` exits 0 with nothing on standard output when the trace can be
/// analysed, else non-zero with an error object; otherwise the results object of TRACE, over
/// `--begin`/`--end` (ns since the Unix epoch) when given, at most `--limit` rows per table, after
/// progress lines with `--output-progress`. An error in the results or compatibility phase prints a
/// LAMI error object on standard output (and the message on standard error) and exits with the
/// documented code: 1 unreadable trace, 2 contradictory options (`--begin` after `--end`, a window
/// outside the trace), 3 no trace, 4 no runloop events, 5 unsupported schema; 64 bad command line.
struct LAMICommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lami",
        abstract: "The run-loop report as a LAMI 1.0 external analysis (for Trace Compass).",
        usage: "rltrace lami [<options>] [<traces> ...]",
        discussion: """
        The LAMI 1.0 phases, as Trace Compass runs them:
          rltrace lami --mi-version                  prints 1.0
          rltrace lami --metadata                    the table classes (JSON)
          rltrace lami --test-compatibility TRACE    exit 0: TRACE can be read
          rltrace lami [--output-progress] [--begin NS] [--end NS] [--limit N] TRACE

        --begin/--end: ns since the Unix epoch, both included; each result table's time range is that window (without them, the whole trace). Errors print a LAMI error object on standard output.

        Example:
          rltrace lami --begin 1763875200000000000 ~/lttng-traces/demo-1

        \(exitCodesHelp)
        """
    )
    @Flag(name: .customLong("mi-version"), help: "Print the LAMI version this analysis produces (1.0) and exit.") var miVersion = false
    @Flag(help: "Print the analysis's LAMI metadata and exit.") var metadata = false
    @Flag(name: .customLong("test-compatibility"), help: "Exit 0, printing nothing, if the trace can be analysed; else print a LAMI error object and exit non-zero.")
    var testCompatibility = false
    @Option(help: "Analyse from this time (ns since the Unix epoch, included).") var begin: Int64?
    @Option(help: "Analyse up to this time (ns since the Unix epoch, included).") var end: Int64?
    @Option(help: "At most this many rows per result table (a count, or `unlimited`).") var limit: String = "unlimited"
    @Flag(name: .customLong("output-progress"), help: "Print LAMI progress lines (`VALUE MESSAGE`, VALUE in 0…1) before the results.") var outputProgress = false
    @Argument(help: "The trace (directory).") var traces: [String] = []

    /// The row limit: nil for `unlimited`.
    func rowLimit() throws -> Int? {
        if limit == "unlimited" { return nil }
        guard let n = Int(limit), n >= 0 else {
            throw ValidationError("--limit: \(limit.debugDescription) is neither a count of rows (0 or more) nor `unlimited`")
        }
        return n
    }

    func validate() throws {
        _ = try rowLimit()
        if miVersion && metadata { throw ValidationError("--mi-version and --metadata are separate LAMI phases; give one") }
        if (miVersion || metadata) && testCompatibility {
            throw ValidationError("--test-compatibility is a phase of its own; it does not combine with --mi-version or --metadata")
        }
        if !miVersion && !metadata && traces.isEmpty {
            throw ValidationError("give the trace to analyse (or --metadata / --mi-version)")
        }
    }

    func run() throws {
        if miVersion { writeStdout(LAMIReportRenderer.miVersionLine); return }
        if metadata { writeStdout(try LAMIReportRenderer.metadata(version: rltraceVersion)); return }
        if let b = begin, let e = end, b > e {
            fail(AnalysisError.contradictoryFilters("--begin \(b) is after --end \(e)"))
        }
        if testCompatibility { return try checkCompatibility() }

        let limit = try rowLimit()
        var f = EventFilter()
        if let b = begin { f.begin = .epoch(b) }
        if let e = end { f.end = .epoch(e) }
        let what = traces.count == 1 ? traces[0] : "\(traces.count) traces"
        if outputProgress { writeStdout(LAMIReportRenderer.progress(0, "reading \(what)")) }
        let report: Report
        do { report = try analyze(paths: traces, filter: f) } catch let e as AnalysisError { fail(e) }
        if outputProgress { writeStdout(LAMIReportRenderer.progress(1, "done: \(report.trace.runloopEvents) runloop events, \(report.loops.count) loops")) }
        let window = LAMIReportRenderer.window(begin: begin, end: end, in: report)
        writeStdout(try LAMIReportRenderer.render(report, window: window, limit: limit))
        for w in report.warnings { warn("rltrace: warning: \(w)") }
    }

    /// The compatibility test phase: the traces are found, hold `runloop` events of the schema this
    /// rltrace reads, and decode; only their first millisecond is modelled.
    func checkCompatibility() throws {
        var f = EventFilter()
        f.begin = .relative(0)
        f.end = .relative(1_000_000)
        do { _ = try analyze(paths: traces, filter: f) } catch let e as AnalysisError { fail(e) }
    }

    /// Reports an analysis error the LAMI way (an error object on standard output) and on standard
    /// error, and exits with its documented code.
    func fail(_ e: AnalysisError) -> Never {
        writeStdout(LAMIReportRenderer.error("\(e)", code: e.exitCode))
        warn("rltrace: \(e)")
        LAMICommand.exit(withError: ExitCode(e.exitCode))
    }
}
