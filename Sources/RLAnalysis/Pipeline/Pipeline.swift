import Foundation
import CTFReader

// The pipeline every command runs, built once here (as babeltrace2's graph is: a source, filters,
// sinks): the reader's source → the selection (``SelectionStage``, ``EventGate``, ``TimeWindow``)
// → the loop model → the command's sinks (a ``SinkTee`` when there are several). No command and
// no sink applies a filter of its own.

/// Threads the pipeline uses by default: two (reading and decoding on one, the loop model and the
/// sinks on the other) when the machine has two cores or more. `RLTRACE_THREADS=1` forces one.
public let defaultAnalysisThreads: Int = {
    if let v = ProcessInfo.processInfo.environment["RLTRACE_THREADS"], let n = Int(v), n >= 1 { return min(n, 2) }
    return ProcessInfo.processInfo.activeProcessorCount >= 2 ? 2 : 1
}()

/// What one run of the pipeline leaves: the model (names, loops) and the loops selected.
public struct PipelineRun {
    /// The loop model, for names.
    public let model: LoopModel
    /// The loops the selection keeps that did something in the window, sorted.
    public let loops: [LoopInfo]
    /// Whether the window ends before the trace does (what comes after it is not known).
    public let windowEndsEarly: Bool
}

/// Runs the whole pipeline over `paths` into the report's figures: reader → selection → loop model
/// → ``Aggregator`` (and `also`, e.g. the HTML's busy strips). With `distributions`, each item of
/// the report carries its durations (for `rltrace diff`).
public func analyze(paths: [String], options: ReportOptions = ReportOptions(), filter: EventFilter = EventFilter(),
                    also: LoopModelSink? = nil, threads: Int = defaultAnalysisThreads, distributions: Bool = false,
                    symbols: SymbolOptions = SymbolOptions()) throws -> Report {
    let source = try RunLoopEventSource(paths: paths)
    let agg = Aggregator(options: options)
    let run = try runPipeline(source: source, filter: filter, into: also.map { SinkTee(agg, $0) } ?? agg, threads: threads)
    agg.model = run.model
    if agg.sawWatchdogEvents { agg.symbolizer = StackSymbolizer(modules: source.evidence.modules, options: symbols) }
    return agg.makeReport(source: source, loops: run.loops, distributions: distributions, windowEndsEarly: run.windowEndsEarly)
}

/// Runs the pipeline over `paths` into `sink` alone, for the commands that only render (timeline,
/// histogram, export): no report figures are computed.
public func streamAnalysis(paths: [String], filter: EventFilter = EventFilter(), into sink: LoopModelSink,
                           threads: Int = defaultAnalysisThreads) throws {
    let source = try RunLoopEventSource(paths: paths)
    _ = try runPipeline(source: source, filter: filter, into: sink, threads: threads)
}

/// A sink that wants the selection stage (to know which callouts of an iteration are selected).
public protocol SelectionAware: AnyObject {
    /// The stage (nil: everything is selected).
    var selectionStage: SelectionStage? { get set }
}

/// A sink whose output has work the pipeline's threads can do while they would wait for each
/// other (``RunLoopEventSource/spareWork``): the Perfetto export's deflate.
public protocol SpareWorkSink: AnyObject {
    /// The work (nil: none).
    var spareWork: SpareWork? { get }
}

/// Feeds `source`'s events through the selection and a loop model into `sink`, and tells `sink`
/// when the trace begins and ends. Throws ``AnalysisError/emptySelection(asked:holds:)`` when the
/// selection keeps no loop, or its kinds and items match no callout (after the sinks have written
/// what they hold).
public func runPipeline(source: RunLoopEventSource, filter: EventFilter, into sink: LoopModelSink,
                        threads: Int = defaultAnalysisThreads) throws -> PipelineRun {
    try filter.validate()
    let stage = SelectionStage.needed(for: filter) ? SelectionStage(filter: filter, next: sink) : nil
    let model = LoopModel(sink: stage ?? sink, names: source.names)
    model.evidence = source.evidence
    try source.selectHosts(filter)
    model.hostNames = source.hosts.map(\.name)
    model.pastWindowFlag = source.windowDone
    stage?.resolver = model
    (sink as? NameResolving)?.resolver = model
    (sink as? SelectionAware)?.selectionStage = stage
    source.spareWork = (sink as? SpareWorkSink)?.spareWork
    var started = false
    do {
        try withExtendedLifetime(stage) {
            try source.forEachBatch(threads: threads, filter: filter) { batch in
                if !started {
                    started = true
                    if let w = source.window { model.setWindow(lo: w.lo, hi: w.hi) }
                    sink.traceBegins(at: source.firstTs, epochOffset: source.clockOffset)
                }
                model.consume(batch)
            }
        }
    } catch {
        sink.finish(end: source.lastTs)      // what was read is written out before the error is reported
        throw error
    }
    if !started { sink.traceBegins(at: source.firstTs, epochOffset: source.clockOffset) }
    sink.finish(end: source.lastTs)
    func at(_ ns: Int64) -> String {
        let e = ns &+ source.clockOffset
        return "@\(e / 1_000_000_000).\(String(format: "%09lld", e % 1_000_000_000)) (+\(formatDuration(saturatingDifference(ns, source.firstTs))))"
    }
    let w = source.window ?? (lo: .min, hi: .max)
    let window = "\(w.lo == .min ? "start" : at(w.lo))…\(w.hi == .max ? "end" : at(w.hi))"
    // A window that misses the trace is a mistake (a time from another trace or clock), not "no findings".
    if source.lastTs >= source.firstTs, w.lo > source.lastTs || w.hi < source.firstTs || w.lo > w.hi {
        throw AnalysisError.contradictoryFilters("the time window \(window) lies outside the trace, \(at(source.firstTs))…\(at(source.lastTs))")
    }
    let loops = model.loops.filter { filter.acceptsLoop($0) }
    if loops.isEmpty {
        let all = model.knownLoops
        let inWindow = model.loops
        let asked = filter.loopSelectionText + (w.lo != .min || w.hi != .max ? " in the time window \(window)" : "")
        let away = source.turnedAway.sorted().prefix(20).map { "loop \($0.loop) of \(model.hostName(of: $0.pid).map { "host \($0) " } ?? "")pid \($0.processID)" }
        let holds = all.isEmpty ? (away.isEmpty ? "no loop" : away.joined(separator: ", ")) : describe(loops: all, active: inWindow, model: model)
        throw AnalysisError.emptySelection(asked: asked.isEmpty ? "every loop" : asked, holds: holds)
    }
    if let stage, !filter.modes.isEmpty, stage.iterationsSelected == 0 {
        let seen = stage.modesSeen.map { model.names[$0] }.filter { !$0.isEmpty }.sorted()
        throw AnalysisError.emptySelection(asked: "iterations of runs in \(filter.modes.sorted().map { "--mode \($0.debugDescription)" }.joined(separator: " "))",
                                           holds: seen.isEmpty ? "no iteration there" : "runs in the modes \(seen.map(\.debugDescription).joined(separator: ", "))")
    }
    if let stage, filter.calloutKinds.isEmpty == false || filter.itemGlob != nil, stage.calloutsOfSelectedItems == 0 {
        var asked: [String] = []
        if !filter.calloutKinds.isEmpty { asked.append("--kind \(filter.calloutKinds.map(\.label).sorted().joined(separator: ","))") }
        if let g = filter.itemGlob { asked.append("--item \(g.debugDescription)") }
        let items = model.itemLabels(in: Set(loops.map(\.key)))
        throw AnalysisError.emptySelection(asked: "callouts of \(asked.joined(separator: " ")) in \(loops.count) selected loop(s)",
                                           holds: items.isEmpty ? "no callout there" : "the items \(items.prefix(20).joined(separator: ", "))\(items.count > 20 ? ", …" : "")")
    }
    return PipelineRun(model: model, loops: loops, windowEndsEarly: w.hi < source.lastTs)
}

/// The loops of a trace, for an error message: id, process, pid, thread; those with nothing in
/// the window marked so.
private func describe(loops: [LoopInfo], active: [LoopInfo], model: LoopModel) -> String {
    let activeKeys = Set(active.map(\.key))
    let list = loops.prefix(20).map { l in
        "loop \(l.key.loop) (\(model.hostName(of: l.key.pid).map { "host \($0) " } ?? "")\(l.procname.isEmpty ? "" : "\(l.procname) ")pid \(l.key.processID) tid \(l.tid)\(activeKeys.contains(l.key) ? "" : ", nothing in the window"))"
    }
    return list.joined(separator: ", ") + (loops.count > 20 ? ", and \(loops.count - 20) more" : "")
}

/// A sink that needs item names once the stream is read.
public protocol NameResolving: AnyObject {
    /// The model, to look names up.
    var resolver: LoopModel? { get set }
}
