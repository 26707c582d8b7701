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

/// Runs an analysis, mapping its errors to the documented exit codes.
func runAnalysis<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let e as AnalysisError {
        warn("rltrace: \(e)")
        throw ExitCode(e.exitCode)
    }
}

/// A duration option: a number with a unit (ns, us, µs, ms, s, m). A bare number is refused (is
/// `--hang-threshold 10` ten seconds or ten milliseconds?), and so is a negative one.
func parseThreshold(_ text: String, _ flag: String) throws -> Int64 {
    if text.hasPrefix("-") { throw ValidationError("\(flag): \(text.debugDescription) is negative; give a duration such as 250ms") }
    if Double(text) != nil { throw ValidationError("\(flag): \(text.debugDescription) has no unit; write e.g. \(text)ms or \(text)s") }
    guard let ns = parseDuration(text) else { throw ValidationError("\(flag): cannot read the duration \(text.debugDescription) (e.g. 250ms, 1.5s)") }
    return ns
}

/// A progress line on standard error when reading takes more than a second and stderr is a terminal.
final class Progress: @unchecked Sendable {
    private let timer: DispatchSourceTimer?
    private let started = Date()
    static func start(_ label: String) -> Progress { Progress(label) }
    private init(_ label: String) {
        guard isatty(2) != 0 else { timer = nil; return }
        let t = DispatchSource.makeTimerSource(queue: .global())
        let start = Date()
        t.schedule(deadline: .now() + 1, repeating: 0.5)
        t.setEventHandler { warnNoNewline("\r\(label)… \(Int(Date().timeIntervalSince(start)))s") }
        t.resume()
        timer = t
    }
    func stop() {
        guard let timer else { return }
        timer.cancel()
        if Date().timeIntervalSince(started) > 1 { warnNoNewline("\r\u{1B}[K") }
    }
}

func warnNoNewline(_ s: String) {
    var s = s
    s.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
