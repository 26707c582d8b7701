import CTFReader
import ArgumentParser
import Foundation
import RLAnalysis

/// `rltrace hangs`: each hang with the callout that held it.
struct HangsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hangs",
        abstract: "Each hang (an iteration busy past the threshold) with its loop, time, duration, and the callout and item that held it.",
        discussion: """
        Examples:
          rltrace hangs TRACE --hang-threshold 100ms
          rltrace hangs DIR

        --threshold is the same option as --hang-threshold. A DIR written by `rltrace record --on-hang` is read whole: every flight-recorder snapshot in it; when it holds none, no hang was recorded (exit 0). The exit code is 0 also when there is no hang (the output says so).

        When the program's hang watchdog recorded hangs (runloop:hang_begin/hang_stack/hang_end), each is listed with its stack samples as function (file.swift:line), whatever --hang-threshold; frames of binaries missing here show as module+0xoffset (docs/hangs.md).

        \(exitCodesHelp)
        """
    )
    @OptionGroup var analysis: AnalysisOptions
    @OptionGroup var thresholds: ThresholdOptions
    @Option(help: "Output format: text or json.") var format: Format = .text
    enum Format: String, ExpressibleByArgument, CaseIterable { case text, json }

    func run() throws {
        if let none = flightRecordersWithoutHangs(analysis.traces) { writeStdout(format == .json ? "[]\n" : none); return }
        let opts = try thresholds.options()
        let t = opts.hangThresholdNs
        let filter = try analysis.filter()
        let r = try runAnalysis { try analyze(paths: analysis.traces, options: opts, filter: filter) }
        if format == .json {
            struct Row: Encodable { var host: String?; var pid: Int64; var loop: UInt64; var tid: Int64; var threadName: String; var hang: HangReport }
            let rows = r.loops.flatMap { l in l.hangs.map { Row(host: l.host, pid: l.pid, loop: l.loop, tid: l.tid, threadName: l.threadName, hang: $0) } }
            let enc = JSONEncoder()
            enc.outputFormatting = [.prettyPrinted, .sortedKeys]
            writeStdout(UntrustedText.hardenJSON(Array(try enc.encode(rows))) + "\n")
            return
        }
        // Watchdog hangs are listed whatever the threshold (the program's own threshold decided):
        // the header says so when there are any, so a short one under "≥ 10s" is not a surprise.
        let watched = r.loops.contains { $0.hangs.contains { $0.watchdog != nil && $0.busyNs < t } }
        var o = "hangs (iterations busy ≥ \(formatDuration(t))\(watched ? "; and the program's watchdog's, at its own threshold" : "")):\n"
        var n = 0
        for l in r.loops {
            for h in l.hangs {
                n += 1
                let c = h.culprit.map { "\($0.kind) \"\(UntrustedText.terminal($0.name))\" #\($0.item) ran \(formatDuration($0.durationNs))" } ?? "no callout (the time went to the loop itself)"
                o += "  \(TextReportRenderer().loopName(l, r)) iteration \(h.iteration) at +\(formatDuration(h.beginNs - r.trace.beginNs)): busy \(formatDuration(h.busyNs)) of \(formatDuration(h.durationNs)) — \(c)\n"
                o += HangStackText.render(h, indent: "    ")
            }
        }
        if n == 0 { o += "  none\n" }
        o += HangStackText.unresolvedNote(r)
        writeStdout(o)
    }
}
