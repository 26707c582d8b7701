import ArgumentParser
import Foundation
import CTFReader
import RLAnalysis

/// `rltrace timeline`: one line per iteration.
struct TimelineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timeline",
        abstract: "One line per iteration: start, busy and sleep time, wake reason, callouts with durations and nesting, flags.",
        discussion: """
        Examples:
          rltrace timeline TRACE --begin 1.2s --end 1.5s
          rltrace timeline TRACE --flagged
          rltrace timeline TRACE --kind timer --item 'heart*' --min-duration 1ms

        --flagged keeps hangs, slow iterations, spins and late timers. Nested runs are indented; observer callouts are counted, and listed when ≥ 1 ms; an iteration of more than 4096 callouts (a flood of perform-blocks) lists its first 4096 and ends with `+N more callouts` (its flags still count them all). The start column is the trace clock (epoch seconds): `--begin @SECONDS` in any command takes it. Iterations cut by --begin/--end are marked CLIPPED.

        \(exitCodesHelp)
        """
    )
    @OptionGroup var analysis: AnalysisOptions
    @Flag(help: "Only flagged iterations (hang, slow, spin, late timer).") var flagged = false
    @OptionGroup var thresholds: ThresholdOptions

    func run() throws {
        var sel = TimelineSink.Selection()
        // The common filters (loops, callouts, time) are the pipeline's selection: with --kind,
        // --item or --min-duration, the iterations that hold a selected callout are listed.
        sel.flaggedOnly = flagged
        let opts = try thresholds.options()
        let out = ByteSink(fd: 1)
        let sink = TimelineSink(out: out, options: opts, selection: sel)
        try stream(analysis, into: sink)
        out.flush()
    }
}
