import Foundation
import CTFReader
import RunLoopSchema

/// A `runloop:hang_begin` event: the watchdog saw a loop stuck past its threshold.
public struct HangBeginRecord: Sendable {
    /// Event time, process (`vpid`, 0 when not recorded) and emitting thread (`vtid`, -1).
    public var ts: Int64, pid: Int64, vtid: Int64
    /// The loop, its iteration counter then, the hang's process-unique id.
    public var loop: UInt64, iteration: UInt64, hangID: UInt64
    /// What the loop was doing: a `callout_kind` label (`timer`, …, or `loop` when between callouts).
    public var kind: String
    /// The item (its id and name) the loop was in.
    public var item: UInt64, name: String
    /// The watchdog's threshold and how long the loop had been stuck when it noticed (ns).
    public var thresholdNs: Int64, elapsedNs: Int64
    /// The hung loop's thread (kernel tid; -1 when absent).
    public var loopTid: Int64
}

/// A `runloop:hang_stack` event: one stack sample of the hung thread.
public struct HangStackRecord: Sendable {
    /// Event time, process and emitting thread.
    public var ts: Int64, pid: Int64, vtid: Int64
    /// The loop and the hang.
    public var loop: UInt64, hangID: UInt64
    /// The sample's number (0 first) and how long the loop had been stuck then (ns).
    public var sample: Int64, elapsedNs: Int64
    /// Return addresses, innermost first.
    public var frames: [UInt64]
}

/// A `runloop:hang_end` event: the loop got going again.
public struct HangEndRecord: Sendable {
    /// Event time and process.
    public var ts: Int64, pid: Int64
    /// The loop, its iteration, the hang.
    public var loop: UInt64, iteration: UInt64, hangID: UInt64
    /// How long the loop was stuck (ns) and how many stack samples were taken.
    public var durationNs: Int64, samples: Int64
}

/// One hang watchdog event, whole.
public enum HangEventRecord: Sendable {
    case begin(HangBeginRecord)
    case stack(HangStackRecord)
    case end(HangEndRecord)
}

/// A binary mapped into a traced process, from `lttng_ust_statedump:bin_info` (or
/// `lttng_ust_lib:load`) with its `build_id` and `debug_link` events.
public struct ModuleRecord: Sendable, Equatable {
    /// The process (`vpid`).
    public var pid: Int64
    /// Load address and size of the mapping.
    public var baddr: UInt64, memsz: UInt64
    /// The file as the process saw it (`[linux-vdso.so.1]` for the vDSO).
    public var path: String
    /// Whether it is position-independent (addresses in the file are then relative to `baddr`).
    public var isPIC: Bool
    /// The GNU build id (nil when the event did not carry one).
    public var buildID: [UInt8]?
    /// The `.gnu_debuglink` file name, if any.
    public var debugLink: String?
    /// When it was reported loaded (the statedump's time for those mapped before tracing) and
    /// unloaded (`lttng_ust_lib:unload`; `Int64.max` while mapped).
    public var loadedAt: Int64, unloadedAt: Int64 = .max
}

/// What the reading thread finds besides the events it hands on: the hang watchdog's events
/// whole (frames, names), and which binary each process had mapped where. Rare events (a few per
/// hang, a few per binary), so kept as values behind a lock: the reader appends, the consumer reads.
public final class HangEvidenceStore: @unchecked Sendable {
    private let lock = NSLock()
    private var records: [HangEventRecord] = []
    private var moduleList: [ModuleRecord] = []

    /// Creates an empty store.
    public init() {}

    /// The record of a delivered hang event (`RunLoopEvent.c`), nil for a bad index.
    public func record(at index: Int64) -> HangEventRecord? {
        lock.lock(); defer { lock.unlock() }
        return index >= 0 && index < records.count ? records[Int(index)] : nil
    }

    /// Every hang event recorded, in reading order.
    public var allRecords: [HangEventRecord] { lock.lock(); defer { lock.unlock() }; return records }

    /// Every binary mapping reported.
    public var modules: [ModuleRecord] { lock.lock(); defer { lock.unlock() }; return moduleList }

    /// Adds the hang event `s` is on (decoded so far into `e`); returns its index.
    func add(_ s: CTFStream, _ e: RunLoopEvent) -> Int64 {
        let f = Fields(s)
        let r: HangEventRecord
        switch e.kind {
        case .hangBegin:
            let kind = f.label(RLSchemaFieldName.kind.rawValue) ?? (f.int(RLSchemaFieldName.kind.rawValue).map { RLCalloutKind(rawValue: UInt8(truncatingIfNeeded: $0))?.label ?? "kind \($0)" } ?? "")
            r = .begin(HangBeginRecord(ts: e.ts, pid: e.pid, vtid: e.vtid, loop: e.loop, iteration: e.iteration,
                                       hangID: UInt64(bitPattern: f.int(RLSchemaFieldName.hangID.rawValue) ?? 0), kind: kind,
                                       item: UInt64(bitPattern: f.int(RLSchemaFieldName.itemID.rawValue) ?? 0), name: f.string(RLSchemaFieldName.itemName.rawValue) ?? f.string(RLSchemaFieldName.name.rawValue) ?? "",
                                       thresholdNs: f.int(RLSchemaFieldName.thresholdNs.rawValue) ?? 0, elapsedNs: f.int(RLSchemaFieldName.elapsedNs.rawValue) ?? 0,
                                       loopTid: f.int(RLSchemaFieldName.loopTid.rawValue) ?? f.int(RLSchemaFieldName.tid.rawValue) ?? -1))
        case .hangStack:
            r = .stack(HangStackRecord(ts: e.ts, pid: e.pid, vtid: e.vtid, loop: e.loop, hangID: UInt64(bitPattern: f.int(RLSchemaFieldName.hangID.rawValue) ?? 0),
                                       sample: f.int(RLSchemaFieldName.sample.rawValue) ?? 0, elapsedNs: f.int(RLSchemaFieldName.elapsedNs.rawValue) ?? 0,
                                       frames: f.integers(RLSchemaFieldName.frames.rawValue) ?? []))
        default:
            r = .end(HangEndRecord(ts: e.ts, pid: e.pid, loop: e.loop, iteration: e.iteration,
                                   hangID: UInt64(bitPattern: f.int(RLSchemaFieldName.hangID.rawValue) ?? 0),
                                   durationNs: f.int(RLSchemaFieldName.durationNs.rawValue) ?? 0, samples: f.int(RLSchemaFieldName.samples.rawValue) ?? 0))
        }
        lock.lock(); defer { lock.unlock() }
        records.append(r)
        return Int64(records.count - 1)
    }

    /// Reads an `lttng_ust_statedump:*` or `lttng_ust_lib:*` event of process `pid` at `ts`.
    func addModuleEvent(_ s: CTFStream, pid: Int64, ts: Int64) {
        let name = s.eventClass.name
        let event = name[name.index(after: name.firstIndex(of: ":")!)...]
        let f = Fields(s)
        guard let baddr = f.int("baddr").map({ UInt64(bitPattern: $0) }) else { return }
        lock.lock(); defer { lock.unlock() }
        // The latest mapping of `baddr` in `pid` (a dlclose'd address may be reused later).
        func latest() -> Int? { moduleList.lastIndex { $0.pid == pid && $0.baddr == baddr } }
        switch event {
        case "bin_info", "load":
            let m = ModuleRecord(pid: pid, baddr: baddr, memsz: UInt64(bitPattern: f.int("memsz") ?? 0), path: f.string("path") ?? "",
                                 isPIC: (f.int("is_pic") ?? 1) != 0, buildID: nil, debugLink: nil, loadedAt: ts)
            // A state dump taken again (`lttng regenerate statedump`), or the same events in two
            // overlapping traces: one module.
            if let i = latest(), moduleList[i].unloadedAt == .max, moduleList[i].path == m.path { return }
            moduleList.append(m)
        case "build_id":
            if let i = latest(), let id = f.integers("build_id") { moduleList[i].buildID = id.map { UInt8(truncatingIfNeeded: $0) } }
        case "debug_link":
            if let i = latest() { moduleList[i].debugLink = f.string("filename") }
        case "unload":
            if let i = latest(), moduleList[i].unloadedAt == .max { moduleList[i].unloadedAt = ts }
        default:
            break
        }
    }
}

/// Named payload fields of the current event, decoded on demand (the slow path: rare events).
private struct Fields {
    let s: CTFStream
    init(_ s: CTFStream) { self.s = s }
    func int(_ n: String) -> Int64? { s.payloadField(n)?.int64 }
    func string(_ n: String) -> String? {
        if case .string(let v)? = s.payloadField(n) { return v }
        return nil
    }
    func label(_ n: String) -> String? {
        if case .enumeration(let labels, _)? = s.payloadField(n), let l = labels.first { return l }
        return nil
    }
    func integers(_ n: String) -> [UInt64]? {
        guard case .array(let vs)? = s.payloadField(n) else { return nil }
        return vs.map { UInt64(bitPattern: $0.int64 ?? 0) }
    }
}
