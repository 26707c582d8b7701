import ArgumentParser
import Foundation
import RLAnalysis

/// `rltrace diff BASE NEW`: what got slower between two traces or JSON reports (docs/diff-json.md).
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "What got slower between two traces (or JSON reports): per loop and item, BASE vs NEW, with significance tests.",
        discussion: """
        Examples:
          rltrace diff BASE-TRACE NEW-TRACE
          rltrace diff base.json new.json --fail-on 'p99>+20%,busy>+5pt,hangs>0'
          rltrace report TRACE --format json --distributions > base.json

        BASE and NEW are trace directories or `rltrace report --format json` files (rltrace-report/1 or /2); reports written with --distributions, as in the third example, give the tests what they need. Loops match by process and thread name, items by kind and name. A duration change is significant when Mann–Whitney U (whole distribution) or the exceedance test above BASE's p99 (slow tail) or above BASE's maximum gives p < alpha/3; reports written without --distributions give the figures with significance n/a. Items are sorted by impact: NEW time per second − BASE time per second.

        --fail-on METRIC OP VALUE[,…] (any holding fails): metrics p50 p90 p99 max (durations), impact (added time per second), busy (busy ratio), hangs, spins; OP > >= < <=. A signed value (+20%, +100us, +5pt, +1) is a change from BASE, which must be significant in that direction (hangs and spins need no test); an unsigned one is NEW's value (hangs>0, p99>50ms, busy>50%).

        The selection options (--host --pid --tid --procname --loop --kind --item --min-duration) select in both traces as they do for every command; they need traces, not reports.

        Every format goes to standard output unless -o names a file (an existing one is replaced only with --force). JSON output: docs/diff-json.md (schema rltrace-diff/1).

        Exit codes: 0 ok; 1 unreadable input or output; 2 an existing output file without --force; 3 no trace found; 4 no runloop events; 5 unsupported runloop schema; 7 a --fail-on condition held (they are printed on standard error); 64 bad command line (e.g. a --fail-on expression that cannot be read).
        """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json, html }

    @Argument(help: "The baseline: a trace directory or a report JSON file.") var base: String
    @Argument(help: "The trace or report JSON to compare with it.") var new: String
    @Option(help: "Output format: text, json (docs/diff-json.md), html.") var format: Format = .text
    @Option(name: .customLong("fail-on"), help: "Fail (exit 7) when a condition holds, e.g. 'p99>+20%,busy>+5pt,hangs>0'.")
    var failOn: String?
    @Option(help: "Significance level of the tests (0 < alpha < 1).") var alpha = 0.01
    @Option(name: .customLong("min-impact"), help: "A regression adds at least this much time per second of run (a duration with a unit; default 20ms: 2 % of a thread).")
    var minImpact = "20ms"
    @Option(name: .customLong("min-change"), help: "A regression grows p50, p99 or time per second by at least this much (default 25%).")
    var minChange = "25%"
    @OptionGroup var thresholds: ThresholdOptions
    @OptionGroup var selection: SelectionOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let failOn {
            do { _ = try FailCondition.parseList(failOn) } catch let e as FailCondition.ParseError {
                throw ValidationError("--fail-on: \(e.description)")
            }
        }
        guard alpha > 0 && alpha < 1 else { throw ValidationError("--alpha must be between 0 and 1 (e.g. 0.01)") }
        guard parseDurationWithUnit(minImpact) != nil else { throw ValidationError("--min-impact: \(minImpact.debugDescription) is not a duration with a unit (e.g. 5ms, 0ns)") }
        guard parsePercent(minChange) != nil else { throw ValidationError("--min-change: \(minChange.debugDescription) is not a percentage ≥ 0 (e.g. 20%)") }
    }

    private func parseDurationWithUnit(_ s: String) -> Int64? {
        guard s.last?.isLetter == true else { return nil }
        return parseDuration(s)
    }

    private func parsePercent(_ s: String) -> Double? {
        guard s.hasSuffix("%"), let v = Double(s.dropLast()), v.isFinite, v >= 0 else { return nil }
        return v / 100
    }

    func run() throws {
        let opts = try thresholds.options()
        let conditions = try failOn.map { try FailCondition.parseList($0) } ?? []
        let progress = Progress.start("reading")
        let (b, bi) = try load(base, opts)
        let (n, ni) = try load(new, opts)
        progress.stop()
        var d = DiffBuilder(alpha: alpha, minImpactNsPerSecond: Double(parseDurationWithUnit(minImpact)!), minChange: parsePercent(minChange)!)
            .diff(base: b, new: n, baseInput: bi, newInput: ni)
        if !conditions.isEmpty { d.failOn = FailCondition.evaluate(conditions, on: d) }
        let text: String
        switch format {
        case .text: text = TextDiffRenderer.render(d)
        case .json: text = try JSONDiffRenderer.render(d)
        case .html: text = HTMLDiffRenderer.render(d)
        }
        try output.write(text)
        if let f = d.failOn {
            for u in f.unchecked { warn("rltrace diff: --fail-on \(u)") }
            if !f.held.isEmpty {
                warn("rltrace diff: --fail-on: \(f.held.count) condition(s) held:")
                for h in f.held { warn("  \(h)") }
                throw ExitCode(7)
            }
        }
    }

    /// A trace directory (analysed, with distributions) or a report JSON file.
    func load(_ path: String, _ opts: ReportOptions) throws -> (Report, DiffInput) {
        let filter = try selection.filter()
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue {
            if filter.narrowsLoops || filter.narrowsCallouts || !filter.hosts.isEmpty {
                warn("rltrace diff: \(path) is a report: the selection options need traces (or write the report with them: rltrace report TRACE --format json --distributions --kind …)")
                throw ExitCode(64)
            }
            let r: Report
            do {
                r = try JSONDecoder().decode(Report.self, from: try Data(contentsOf: URL(fileURLWithPath: path)))
            } catch {
                warn("rltrace diff: \(path) is not a readable rltrace report JSON: \(error)")
                throw ExitCode(1)
            }
            guard r.schema.hasPrefix("rltrace-report/") else {
                warn("rltrace diff: \(path): unsupported schema \(r.schema.debugDescription) (rltrace-report/1 or /2)")
                throw ExitCode(1)
            }
            let dist = !r.loops.isEmpty && r.loops.allSatisfy { $0.items.allSatisfy { $0.distribution != nil } }
            return (r, DiffInput(path: path, source: "report", reportSchema: r.schema, distributions: dist,
                                 spanNs: r.trace.endNs - r.trace.beginNs, warnings: r.warnings))
        }
        let r = try runAnalysis { try analyze(paths: [path], options: opts, filter: filter, distributions: true) }
        return (r, DiffInput(path: path, source: "trace", reportSchema: r.schema, distributions: true,
                             spanNs: r.trace.endNs - r.trace.beginNs, warnings: r.warnings))
    }
}
