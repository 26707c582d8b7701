import ArgumentParser
import Foundation
import RLAnalysis

/// `rltrace histogram`.
struct HistogramCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "histogram",
        abstract: "Terminal bar histograms with bucket bounds, counts and percentiles (HdrHistogram).",
        discussion: """
        Examples:
          rltrace histogram TRACE --of sleep --by reason
          rltrace histogram TRACE --of callout --by item --scale linear --max 2ms
          rltrace histogram TRACE --of timer-lateness --by item

        Linear buckets of more than 32 values are placed from the HdrHistogram (within 0.1 %).

        \(exitCodesHelp)
        """
    )
    typealias Of = HistogramSink.Quantity
    typealias By = HistogramSink.Grouping
    typealias Scale = HistogramSink.Scale

    @OptionGroup var analysis: AnalysisOptions
    @Option(help: "What to histogram: sleep, iteration (busy time), callout, wake-latency, timer-lateness, signal-latency.") var of: Of = .sleep
    @Option(help: "Group by: none, reason (sleep), kind (callout), item (callout, timer-lateness, signal-latency), loop.") var by: By = .none
    @Option(help: "Bucket scale: log2 or linear.") var scale: Scale = .log2
    @Option(help: "Number of buckets (linear scale).") var buckets = 20
    @Option(help: "Ignore values below this duration.") var min: String?
    @Option(help: "Ignore values above this duration.") var max: String?

    func validate() throws {
        if by == .reason && of != .sleep { throw ValidationError("--by reason only applies to --of sleep") }
        if by == .kind && of != .callout { throw ValidationError("--by kind only applies to --of callout") }
        if by == .item && ![.callout, .timerLateness, .signalLatency].contains(of) {
            throw ValidationError("--by item applies to --of callout, timer-lateness and signal-latency")
        }
        if analysis.minDuration != nil && of != .callout { throw ValidationError("--min-duration applies to --of callout (use --min)") }
        if (!analysis.kind.isEmpty) && of != .callout { throw ValidationError("--kind applies to --of callout") }
        if analysis.item != nil && ![.callout, .timerLateness, .signalLatency].contains(of) {
            throw ValidationError("--item applies to --of callout, timer-lateness and signal-latency")
        }
        if buckets < 1 || buckets > 1000 { throw ValidationError("--buckets must be 1…1000") }
    }

    func run() throws {
        let lo = try min.map { try parseThreshold($0, "--min") } ?? 0
        let hi = try max.map { try parseThreshold($0, "--max") } ?? Int64.max
        if lo > hi { warn("rltrace: contradictory filters: --min is above --max"); throw ExitCode(2) }
        let sink = HistogramSink(of: of, by: by, lo: lo, hi: hi)
        try stream(analysis, into: sink)
        writeStdout(sink.render(scale: scale, buckets: buckets))
    }
}

extension HistogramSink.Quantity: ExpressibleByArgument {}
extension HistogramSink.Grouping: ExpressibleByArgument {}
extension HistogramSink.Scale: ExpressibleByArgument {}
