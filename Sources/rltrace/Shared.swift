import ArgumentParser
import Foundation
import RLAnalysis
import RunLoopSchema

// What the analysis commands share: reading once into a sink, opening the output, option values.

/// Reads the traces once, streaming what the model rebuilds into `sink` (a renderer that writes as
/// it goes); no report figures are computed.
func stream(_ a: AnalysisOptions, into sink: LoopModelSink) throws {
    let filter = try a.filter()
    let progress = Progress.start("reading")
    defer { progress.stop() }
    try runAnalysis { try streamAnalysis(paths: a.traces, filter: filter, into: sink) }
}

func kindSet(_ kinds: [String]) throws -> Set<RLCalloutKind> {
    Set(try kinds.flatMap { $0.split(separator: ",") }.map { k in
        guard let c = RLCalloutKind(label: String(k)) else {
            throw ValidationError("--kind: unknown callout kind \(String(k).debugDescription) (observer, source0, source1, timer, main_queue, block)")
        }
        return c
    })
}

extension String {
    func leftPad(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}
