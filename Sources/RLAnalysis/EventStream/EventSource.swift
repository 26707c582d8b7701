import Foundation
import CTFReader

/// Errors of the analysis front end, with the exit codes the CLI documents.
public enum AnalysisError: Error, CustomStringConvertible {
    /// The paths hold no CTF trace.
    case noTrace([String])
    /// The traces hold no `runloop` event; `providers` lists what they do hold.
    case noRunLoopEvents(providers: [String])
    /// The `runloop` provider in the trace has a layout this rltrace does not understand.
    case schemaMismatch(String)
    /// The reader refused the trace.
    case reader(String)
    /// Options that cannot all hold.
    case contradictoryFilters(String)

    /// A sentence for the user.
    public var description: String {
        switch self {
        case .noTrace(let p): "no CTF trace (a directory holding a `metadata` file) below \(p.joined(separator: ", "))"
        case .noRunLoopEvents(let providers):
            "the trace has no `runloop` events (was the program built on RunLoopCore, and was `runloop:*` enabled?); providers present: \(providers.isEmpty ? "none" : providers.joined(separator: ", "))"
        case .schemaMismatch(let s): "unsupported `runloop` event schema: \(s) (this rltrace reads the schema of docs/tracepoints.md)"
        case .reader(let s): s
        case .contradictoryFilters(let s): "contradictory filters: \(s)"
        }
    }

    /// The process exit code (documented in `rltrace --help`).
    public var exitCode: Int32 {
        switch self {
        case .noTrace: 3
        case .noRunLoopEvents: 4
        case .schemaMismatch: 5
        case .reader: 1
        case .contradictoryFilters: 2
        }
    }
}

/// Reads CTF traces and delivers their `runloop` events, in time order, as ``RunLoopEvent``s.
public final class RunLoopEventSource {
    /// The traces read.
    public let traceSet: CTFTraceSet
    /// The trace directories.
    public let paths: [String]
    /// Every event read (any provider).
    public private(set) var totalEvents = 0
    /// `runloop` events read.
    public private(set) var runLoopEvents = 0
    /// First and last event timestamps (CLOCK_MONOTONIC ns), over all events.
    public private(set) var firstTs: Int64 = .max
    /// Last event timestamp.
    public private(set) var lastTs: Int64 = .min
    /// Reader timestamps (ns since the epoch) minus CLOCK_MONOTONIC ns: converts the reader's times.
    public private(set) var clockOffset: Int64 = 0
    /// Providers seen (the part of event names before `:`).
    public private(set) var providers: Set<String> = []

    private struct ClassInfo {
        var kind: RunLoopEvent.Kind?
        var callout: CalloutKind = .observer
    }
    private var classes: [ObjectIdentifier: ClassInfo] = [:]
    private var namedItems: Set<ItemKey> = []
    private var procnamed: Set<ProcKey> = []
    private struct ProcKey: Hashable { var pid: Int64; var loop: UInt64 }
    private struct ItemKey: Hashable { var pid: Int64; var item: UInt64; var kind: UInt8 }

    /// Opens every CTF trace below `paths`.
    public init(paths: [String]) throws {
        do {
            // Follow symbolic links (a `latest` link to a session, say), as babeltrace2 does.
            let resolved = paths.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
            let found = try discoverCTFTraces(in: resolved)
            guard !found.isEmpty else { throw AnalysisError.noTrace(paths) }
            self.paths = found
            traceSet = try CTFTraceSet(paths: found)
        } catch let e as AnalysisError {
            throw e
        } catch {
            throw AnalysisError.reader("\(error)")
        }
    }

    /// Losses the reader found (discarded events, lost packets), with their time ranges.
    public var losses: [CTFLoss] { traceSet.losses }
    /// Reader warnings (e.g. a truncated final packet).
    public var warnings: [CTFWarning] { traceSet.warnings }

    private func info(for cls: CTFEventClass) -> ClassInfo {
        let key = ObjectIdentifier(cls)
        if let i = classes[key] { return i }
        var i = ClassInfo()
        let name = cls.name
        if let colon = name.firstIndex(of: ":") { providers.insert(String(name[..<colon])) }
        if name.hasPrefix("runloop:") {
            let ev = name.dropFirst(8)
            switch ev {
            case "loop_created": i.kind = .loopCreated
            case "loop_destroyed": i.kind = .loopDestroyed
            case "run_enter": i.kind = .runEnter
            case "run_exit": i.kind = .runExit
            case "iteration_begin": i.kind = .iterationBegin
            case "iteration_end": i.kind = .iterationEnd
            case "sleep_begin": i.kind = .sleepBegin
            case "wake": i.kind = .wake
            case "wakeup_requested": i.kind = .wakeUpRequested
            case "source0_signalled": i.kind = .source0Signalled
            case "timer_armed": i.kind = .timerArmed
            case "item_added": i.kind = .itemAdded
            case "item_removed": i.kind = .itemRemoved
            default:
                for k in CalloutKind.allCases {
                    if ev == "\(k.label)_entry" { i.kind = .calloutEntry; i.callout = k }
                    if ev == "\(k.label)_exit" { i.kind = .calloutExit; i.callout = k }
                }
            }
        }
        classes[key] = i
        return i
    }

    /// Calls `body` with every `runloop` event in time order. Throws ``AnalysisError`` for a trace
    /// with no `runloop` events or an unknown layout; a reader error mid-way ends the stream with
    /// the events read so far delivered and the error thrown.
    public func forEach(_ body: (RunLoopEvent) throws -> Void) throws {
        var it = traceSet.makeMergedIterator()
        do {
            while try it.next() {
                let s = it.current
                totalEvents += 1
                let ts = Int64(bitPattern: s.cycles)
                if totalEvents == 1 { clockOffset = s.timestamp - ts }
                if ts < firstTs { firstTs = ts }
                if ts > lastTs { lastTs = ts }
                let ci = info(for: s.eventClass)
                guard let kind = ci.kind else { continue }
                runLoopEvents += 1
                var e = RunLoopEvent(kind: kind, ts: ts)
                try decode(s, kind: kind, callout: ci.callout, into: &e)
                try body(e)
            }
        } catch let e as AnalysisError {
            throw e
        } catch let e as CTFReaderError {
            throw AnalysisError.reader("\(e)")
        }
        if runLoopEvents == 0 {
            throw AnalysisError.noRunLoopEvents(providers: providers.sorted())
        }
    }

    @inline(__always)
    private func u(_ s: CTFStream, _ f: String) throws -> UInt64 {
        guard let v = s.payloadField(f)?.int64 else { throw AnalysisError.schemaMismatch("\(s.eventClass.name) has no integer field `\(f)`") }
        return UInt64(bitPattern: v)
    }
    @inline(__always)
    private func i(_ s: CTFStream, _ f: String) throws -> Int64 {
        guard let v = s.payloadField(f)?.int64 else { throw AnalysisError.schemaMismatch("\(s.eventClass.name) has no integer field `\(f)`") }
        return v
    }
    /// An integer field added to the schema later (`iteration` of the lifecycle, cross-thread and
    /// registration events, `loop_id` and `signal_seq` of `source0_signalled`): 0 when the trace
    /// predates it.
    @inline(__always)
    private func opt(_ s: CTFStream, _ f: String) -> UInt64 {
        s.payloadField(f)?.int64.map { UInt64(bitPattern: $0) } ?? 0
    }
    private func str(_ s: CTFStream, _ f: String) -> String {
        if case .string(let v)? = s.payloadField(f) { return v }
        return ""
    }

    private func decode(_ s: CTFStream, kind: RunLoopEvent.Kind, callout: CalloutKind, into e: inout RunLoopEvent) throws {
        if let p = s.contextField("vpid")?.int64 { e.pid = p }
        if let t = s.contextField("vtid")?.int64 { e.vtid = t }
        e.calloutKind = callout
        // Every event names its loop; `source0_signalled` of a source in no loop names loop 0 (and
        // traces of the schema before loop ids on it have none: read as 0 too).
        if kind == .source0Signalled {
            e.loop = opt(s, "loop_id")
        } else {
            e.loop = try u(s, "loop_id")
            // The procname context of each loop's first event that has one (docs/report-json.md).
            let pk = ProcKey(pid: e.pid, loop: e.loop)
            if !procnamed.contains(pk), case .string(let p)? = s.contextField("procname") {
                e.procname = p
                procnamed.insert(pk)
            }
        }
        switch kind {
        case .loopCreated:
            e.iteration = opt(s, "iteration"); e.a = try i(s, "tid"); e.text = str(s, "thread_name")
        case .loopDestroyed:
            e.iteration = opt(s, "iteration"); e.a = try i(s, "tid")
        case .runEnter:
            e.iteration = try u(s, "iteration"); e.text = str(s, "mode")
            e.a = try i(s, "timeout_ns"); e.b = try i(s, "depth"); e.c = try i(s, "return_after_source_handled")
        case .runExit:
            e.iteration = try u(s, "iteration"); e.text = str(s, "mode")
            e.a = try i(s, "result"); e.b = try i(s, "depth")
        case .iterationBegin:
            e.iteration = try u(s, "iteration")
        case .iterationEnd:
            e.iteration = try u(s, "iteration"); e.b = try i(s, "handled_source"); e.c = try i(s, "callouts")
        case .calloutEntry, .calloutExit:
            e.iteration = try u(s, "iteration")
            if callout != .mainQueue { e.item = try u(s, "item_id") }
            switch callout {
            case .observer: e.a = try i(s, "activity")
            case .source1: e.a = try i(s, "fd"); e.b = try i(s, "events")
            case .timer: e.a = try i(s, "scheduled_ns")
            default: break
            }
            if kind == .calloutEntry && callout == .block {
                // Every perform-block is its own item, seen once: its name is read every time (and
                // no per-block entry is kept, which would grow with the trace).
                e.text = str(s, "name")
            } else if kind == .calloutEntry && callout != .mainQueue {
                let key = ItemKey(pid: e.pid, item: e.item, kind: callout.rawValue)
                if !namedItems.contains(key) { namedItems.insert(key); e.text = str(s, "name") }
            }
        case .sleepBegin:
            e.iteration = try u(s, "iteration"); e.a = try i(s, "timeout_ns"); e.b = try i(s, "deadline_ns")
        case .wake:
            e.iteration = try u(s, "iteration"); e.b = try i(s, "reason"); e.a = try i(s, "fd"); e.c = try i(s, "slept_ns")
        case .wakeUpRequested:
            e.iteration = opt(s, "iteration"); e.b = try i(s, "accepted"); e.a = try i(s, "caller_tid")
        case .source0Signalled:
            e.iteration = opt(s, "iteration"); e.item = try u(s, "item_id"); e.a = try i(s, "caller_tid")
            e.c = Int64(bitPattern: opt(s, "signal_seq"))
            let key = ItemKey(pid: e.pid, item: e.item, kind: CalloutKind.source0.rawValue)
            if !namedItems.contains(key) { namedItems.insert(key); e.text = str(s, "name") }
        case .timerArmed:
            e.iteration = opt(s, "iteration"); e.item = try u(s, "item_id"); e.a = try i(s, "fire_ns"); e.c = try i(s, "interval_ns"); e.b = try i(s, "missed_fires")
        case .itemAdded, .itemRemoved:
            e.iteration = opt(s, "iteration"); e.item = try u(s, "item_id"); e.text = str(s, "name")
            if let k = s.payloadField("kind")?.int64, let ck = CalloutKind(rawValue: UInt8(truncatingIfNeeded: k)) { e.calloutKind = ck }
        }
    }
}
