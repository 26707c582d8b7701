/// `rltrace export --format perfetto`: Perfetto's own trace format — a `Trace` of `TracePacket`s
/// holding `TrackEvent`s (the messages of Perfetto's protos/perfetto/trace/, the subset used
/// declared in Tests/RLTraceTests/Fixtures/perfetto/perfetto_subset.proto) — written to the file as
/// the trace is read, by a hand-written encoder (``ProtobufWriter``).
///
/// - a process track per process, a thread track per loop (named as the Chrome export names it:
///   `thread — loop N`);
/// - iterations, sleeps (`sleep → reason`), runs and callouts (`kind item-name`, the item id and the
///   callout's detail as arguments) as slices on the loop's track, strictly nested
///   (``PendingSlice`` tells why they wait for their top-level iteration);
/// - event names, categories and argument names interned (`InternedData`) on one packet sequence,
///   each written once, on the first packet that uses it;
/// - the Chrome export's flows (signal → perform, wakeUp → wake), each an instant on the asking
///   thread with `flow_ids` and one on the loop's thread with `terminating_flow_ids`;
/// - counter tracks per loop (busy %, iterations/s; the Chrome export's 200 bins);
/// - the report's hangs (an iteration busy past the threshold, and the watchdog's) as instants
///   named `hang` on the loop's track, with the culprit and the stack samples as text arguments.
///
/// Times are ns after the trace's first event (the Chrome export's origin).
public final class PerfettoTraceSink: LoopModelSink, NameResolving {
    /// The model, for names and loops.
    public var resolver: LoopModel?
    let out: ByteSink
    private let hangThresholdNs: Int64
    /// The packet being written.
    let w = ProtobufWriter()
    /// Scratch for ``flush(_:where:)`` (kept between calls: no allocation per flush).
    var group: [PendingSlice] = [], stack: [PendingSlice] = []
    private(set) var origin: Int64 = 0
    private var seq: UInt64 = 0
    private var nextUUID: UInt64 = 1
    private var flowID: UInt64 = 0

    /// Categories (interned on the first packet).
    enum Category: UInt8, CaseIterable {
        case iteration = 1, sleep, run, observer, source0, source1, timer, mainQueue, block, flow, hang
        var label: String {
            switch self {
            case .mainQueue: "main_queue"
            default: "\(self)"
            }
        }
    }
    /// Debug annotation names (interned on the first packet).
    enum Annotation: UInt8, CaseIterable {
        case item = 1, detail, iteration, busyNs, fd, depth, result, culprit, stacks, hangID, thresholdNs, stuckNs
        var label: String {
            switch self {
            case .busyNs: "busy_ns"
            case .hangID: "hang_id"
            case .thresholdNs: "threshold_ns"
            case .stuckNs: "stuck_ns"
            default: "\(self)"
            }
        }
    }
    /// Field numbers (Perfetto's protos).
    enum Field {
        static let packet: UInt8 = 0x0A                      // Trace.packet = 1, length-delimited
        static let timestamp: UInt32 = 8, trustedSequenceID: UInt32 = 10, trackEvent: UInt32 = 11
        static let internedData: UInt32 = 12, sequenceFlags: UInt32 = 13, trackDescriptor: UInt32 = 60
        static let categoryIIDs: UInt32 = 3, debugAnnotations: UInt32 = 4, eventType: UInt32 = 9, nameIID: UInt32 = 10
        static let trackUUID: UInt32 = 11, doubleCounterValue: UInt32 = 44, flowIDs: UInt32 = 47, terminatingFlowIDs: UInt32 = 48
    }
    /// The packet sequence every packet belongs to.
    static let sequenceID: UInt64 = 1

    /// An export written to `out`; `hangThresholdNs` is the report's hang threshold.
    public init(out: ByteSink, hangThresholdNs: Int64 = ReportOptions().hangThresholdNs) {
        self.out = out
        self.hangThresholdNs = hangThresholdNs
        // The first packet: the sequence's state cleared, its categories and argument names.
        w.reset()
        w.uint(Field.trustedSequenceID, PerfettoTraceSink.sequenceID)
        w.uint(Field.sequenceFlags, 1)                        // SEQ_INCREMENTAL_STATE_CLEARED
        let d = w.open(Field.internedData)
        for c in Category.allCases { let m = w.open(1); w.uint(1, UInt64(c.rawValue)); w.string(2, c.label); w.close(m) }
        for a in Annotation.allCases { let m = w.open(3); w.uint(1, UInt64(a.rawValue)); w.string(2, a.label); w.close(m) }
        w.close(d)
        endPacket()
    }

    public func traceBegins(at ts: Int64, epochOffset: Int64) {
        origin = ts
        counters.traceBegins(at: ts)
    }

    // MARK: packets

    /// Starts a packet on the sequence (needing its interned state), at `ts` if given.
    @inline(__always) func startPacket(ts: Int64?) {
        w.reset()
        if let ts { w.uint(Field.timestamp, UInt64(max(0, ts &- origin))) }
        w.uint(Field.trustedSequenceID, PerfettoTraceSink.sequenceID)
        w.uint(Field.sequenceFlags, 2)                        // SEQ_NEEDS_INCREMENTAL_STATE
    }

    /// Writes the packet as one `Trace.packet` field.
    @inline(__always) func endPacket() {
        let n = w.count
        out.reserving(n + 11) { c in
            c.byte(Field.packet)
            var v = UInt64(n)
            while v >= 0x80 { c.byte(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
            c.byte(UInt8(truncatingIfNeeded: v))
            c.bytes(w.bytes)
        }
    }

    // MARK: interned names

    private var nameIIDs: [String: UInt64] = [:]
    private var nameStrings: [String] = [""]
    private var nameWritten: [Bool] = [true]
    /// Callout names by item (the iid in 8 bytes), found without hashing a string.
    private let calloutNames = RenderedNames()
    /// Sleep names by wake reason (0: not interned yet).
    private var sleepNames = [UInt64](repeating: 0, count: 256)
    private lazy var iterationName = intern("iteration")

    /// The iid of an event name (a new one the first time).
    func intern(_ name: String) -> UInt64 {
        if let id = nameIIDs[name] { return id }
        let id = UInt64(nameStrings.count)
        nameIIDs[name] = id
        nameStrings.append(name)
        nameWritten.append(false)
        return id
    }

    /// Adds the name `iid` to the packet's interned data if no packet before carried it.
    @inline(__always) func internName(_ iid: UInt64) {
        let i = Int(iid)
        guard !nameWritten[i] else { return }
        nameWritten[i] = true
        let d = w.open(Field.internedData)
        let m = w.open(2)
        w.uint(1, iid); w.string(2, nameStrings[i])
        w.close(m)
        w.close(d)
    }

    /// A callout's name as the Chrome export writes it: `kind item-name` (`kind #item` while the
    /// item has no name; `main_queue main-queue`).
    @inline(__always)
    private func calloutName(_ cl: CalloutRecord, pid: Int64) -> UInt64 {
        if let r = calloutNames.range(of: cl, pid: pid, render: { cl in
            let name = cl.kind == .mainQueue ? "main-queue" : (resolver?.name(of: cl, pid: pid) ?? "")
            guard !name.isEmpty || cl.kind == .block else { return nil }
            return withUnsafeBytes(of: intern("\(cl.kind.label) \(name)")) { Array($0) }
        }) {
            return calloutNames.withBytes(r) { $0.loadUnaligned(as: UInt64.self) }
        }
        return intern("\(cl.kind.label) #\(cl.item)")
    }

    // MARK: tracks

    private var tracks: [LoopKey: PerfettoLoopTrack] = [:]
    private var trackOrder: [PerfettoLoopTrack] = []
    private var trackSlots = [PerfettoLoopTrack?](repeating: nil, count: 16)
    private var processUUIDs: [Int64: UInt64] = [:]
    private struct ThreadKey: Hashable { var pid: Int64, tid: Int64 }
    private var threadUUIDs: [ThreadKey: UInt64] = [:]
    /// The last thread a flow started on (a flow's asking thread is usually the one before's).
    private var lastThread = (key: ThreadKey(pid: .min, tid: .min), uuid: UInt64(0))
    /// The last flow kind and its name's iid (two kinds: no hashing per flow).
    private var lastFlowKind = (kind: "", iid: UInt64(0))

    /// The track of loop `key` (described the first time).
    @inline(__always) private func track(_ key: LoopKey) -> PerfettoLoopTrack {
        // Direct-mapped by loop: a flow's loop alternates with the loop being read, no hashing.
        let slot = Int(truncatingIfNeeded: ((key.loop ^ UInt64(bitPattern: key.pid) << 24) &* 0x9E37_79B9_7F4A_7C15) >> 60)
        if let t = trackSlots[slot], t.key == key { return t }
        let t = tracks[key] ?? makeTrack(key)
        trackSlots[slot] = t
        return t
    }

    @inline(never) private func makeTrack(_ key: LoopKey) -> PerfettoLoopTrack {
        let info = resolver?.info(of: key) ?? LoopInfo(key: key)
        let p = processUUID(key.pid, name: info.procname)
        let uuid: UInt64
        if info.tid >= 0, let u = threadUUIDs[ThreadKey(pid: key.pid, tid: info.tid)] { uuid = u } else { uuid = newUUID() }
        if info.tid >= 0 { threadUUIDs[ThreadKey(pid: key.pid, tid: info.tid)] = uuid }
        let t = PerfettoLoopTrack(key: key, uuid: uuid, processUUID: p)
        tracks[key] = t
        trackOrder.append(t)
        describe(t, info)
        return t
    }

    private func newUUID() -> UInt64 { defer { nextUUID += 1 }; return nextUUID }

    /// The process track of `pid` (described the first time).
    private func processUUID(_ pid: Int64, name: String = "") -> UInt64 {
        if let u = processUUIDs[pid] { return u }
        let u = newUUID()
        processUUIDs[pid] = u
        describeProcess(pid, uuid: u, name: name)
        return u
    }

    private func describeProcess(_ pid: Int64, uuid: UInt64, name: String) {
        startPacket(ts: nil)
        let d = w.open(Field.trackDescriptor)
        w.uint(1, uuid)
        let p = w.open(3)
        w.int(1, pid); w.string(6, name.isEmpty ? "pid \(pid)" : name)
        w.close(p)
        w.close(d)
        endPacket()
    }

    /// Describes a loop's track: a thread track (`thread — loop N`), or, when the loop's thread is
    /// not known, a track named `loop N` in its process.
    private func describe(_ t: PerfettoLoopTrack, _ l: LoopInfo) {
        startPacket(ts: nil)
        let d = w.open(Field.trackDescriptor)
        w.uint(1, t.uuid)
        if l.tid >= 0 {
            let th = w.open(4)
            w.int(1, t.key.pid); w.int(2, l.tid)
            w.string(5, "\(l.threadName.isEmpty ? "thread \(l.tid)" : l.threadName) — loop \(t.key.loop)")
            w.close(th)
        } else {
            w.uint(5, t.processUUID)
            w.string(2, "loop \(t.key.loop)")
        }
        w.close(d)
        endPacket()
    }

    /// The track of thread `tid` of `pid` (a loop's, or one made for it), for a flow's start.
    private func threadUUID(pid: Int64, tid: Int64) -> UInt64 {
        let k = ThreadKey(pid: pid, tid: tid)
        if k == lastThread.key { return lastThread.uuid }
        if let u = threadUUIDs[k] { lastThread = (k, u); return u }
        let u = newUUID()
        threadUUIDs[k] = u
        _ = processUUID(pid)
        startPacket(ts: nil)
        let d = w.open(Field.trackDescriptor)
        w.uint(1, u)
        let th = w.open(4)
        w.int(1, pid); w.int(2, tid)
        w.close(th)
        w.close(d)
        endPacket()
        return u
    }

    // MARK: records

    private let counters = PerfettoCounters()
    @inline(__always) private func nextSeq() -> UInt64 { seq &+= 1; return seq }

    public func callout(_ cl: CalloutRecord, of key: LoopKey) {
        let t = track(key)
        let category: Category
        switch cl.kind {
        case .observer: category = .observer
        case .source0: category = .source0
        case .source1: category = .source1
        case .timer: category = .timer
        case .mainQueue: category = .mainQueue
        case .block: category = .block
        }
        t.pending.append(PendingSlice(begin: cl.begin, end: cl.end, seq: nextSeq(), name: calloutName(cl, pid: key.pid),
                                      category: category.rawValue, shape: .callout, a: Int64(bitPattern: cl.item), b: cl.detail))
    }

    public func iteration(_ it: IterationRecord, of loop: LoopInfo) {
        counters.iteration(it, of: loop)
        let t = track(loop.key)
        for s in it.sleeps {
            let name: UInt64
            let r = Int(s.reason.rawValue)
            if sleepNames[r] != 0 { name = sleepNames[r] } else { name = intern("sleep → \(s.reason.label)"); sleepNames[r] = name }
            t.pending.append(PendingSlice(begin: s.begin, end: s.end, seq: nextSeq(), name: name, category: Category.sleep.rawValue,
                                          shape: .sleep, a: s.fd, b: 0))
        }
        t.pending.append(PendingSlice(begin: it.begin, end: it.end, seq: nextSeq(), name: iterationName,
                                      category: Category.iteration.rawValue, shape: .iteration, a: Int64(bitPattern: it.number), b: it.busyNs))
        if it.depth == 0 {
            // The report's rule: decided on the whole iteration (a window cutting it still shows it).
            if it.wholeBusyNs >= hangThresholdNs {
                let c = it.callouts.max { $0.wholeDurationNs < $1.wholeDurationNs }
                t.hangs.append(HangReport(iteration: it.number, beginNs: it.wholeBegin, durationNs: it.wholeEnd &- it.wholeBegin, busyNs: it.wholeBusyNs,
                                          culprit: c.map { CalloutRef(kind: $0.kind.label, item: $0.item, name: resolver?.name(of: $0, pid: loop.key.pid) ?? "",
                                                                      durationNs: $0.wholeDurationNs) }))
            }
            // Everything that waits has ended, but a slice beginning with a run still open (its
            // begin is not written yet).
            if t.openRuns.isEmpty { flush(t) { _ in true } } else { flush(t) { s in !t.openRuns.contains { $0.begin == s.begin } } }
        } else if let run = t.openRuns.last {
            // In a nested run: what began in it after its entry is written (its entry's begin is
            // not, nor what began before it in the enclosing iteration).
            flush(t) { $0.begin > run.begin }
        } else {
            // A nested run entered before the trace (or the window) began: this iteration and
            // what began in it — but at a begin the window clipped, which open ancestors share.
            flush(t) { it.clipped ? $0.begin > it.begin : $0.begin >= it.begin }
        }
    }

    public func sleep(_ s: SleepRecord, of key: LoopKey) { counters.sleep(s, of: key) }

    public func run(_ enter: Bool, mode: String, depth: Int, result: Int64, at ts: Int64, of key: LoopKey) {
        let t = track(key)
        if enter { t.openRuns.append((ts, mode, depth)); return }
        guard let o = t.openRuns.popLast() else { return }
        let name = intern("run \(o.mode == "kCFRunLoopDefaultMode" ? "default" : o.mode)")
        t.pending.append(PendingSlice(begin: o.begin, end: ts, seq: nextSeq(), name: name, category: Category.run.rawValue,
                                      shape: .run, a: Int64(o.depth), b: result))
        if t.openRuns.isEmpty { flush(t) { _ in true } }
    }

    public func flow(_ f: Flow) {
        guard let model = resolver, model.threadID(of: f.to) != nil else { return }
        flowID += 1
        if f.kind != lastFlowKind.kind { lastFlowKind = (f.kind, intern(f.kind)) }
        let name = lastFlowKind.iid
        let from = threadUUID(pid: f.to.pid, tid: f.fromTid), to = track(f.to).uuid
        for end in 0..<2 {
            startPacket(ts: end == 0 ? f.fromTs : f.toTs)
            internName(name)
            let e = w.open(Field.trackEvent)
            w.uint(Field.eventType, 3)                        // TYPE_INSTANT
            w.uint(Field.trackUUID, end == 0 ? from : to)
            w.uint(Field.categoryIIDs, UInt64(Category.flow.rawValue))
            w.uint(Field.nameIID, name)
            w.fixed64(end == 0 ? Field.flowIDs : Field.terminatingFlowIDs, flowID)
            w.close(e)
            endPacket()
        }
    }

    /// The watchdog's events, joined to the hangs at the end.
    private let watchdog = WatchdogCollector()
    private var hangLoops: [LoopKey] = []
    public func hang(_ record: HangEventRecord, of key: LoopKey) {
        if !hangLoops.contains(key) { hangLoops.append(key) }
        watchdog.add(record, of: key)
    }

    public func finish(end: Int64) {
        for t in trackOrder { flush(t) { _ in true } }
        for k in hangLoops { _ = track(k) }
        writeHangs()
        // Names as known at the end (a thread or process named after its first event).
        var described = Set<Int64>()
        for t in trackOrder {
            guard let info = resolver?.info(of: t.key) else { continue }
            describe(t, info)
            if described.insert(t.key.pid).inserted { describeProcess(t.key.pid, uuid: t.processUUID, name: info.procname) }
        }
        writeCounters(end: end)
        out.flush()
    }

    /// One instant `hang` per hang of the report on its loop's track.
    private func writeHangs() {
        let symbolizer = hangLoops.isEmpty ? nil : StackSymbolizer(modules: resolver?.evidence?.modules ?? [])
        let name = intern("hang")
        for t in trackOrder {
            for h in watchdog.merge(t.hangs, key: t.key, symbolizer: symbolizer) {
                startPacket(ts: h.beginNs)
                internName(name)
                let e = w.open(Field.trackEvent)
                w.uint(Field.eventType, 3)
                w.uint(Field.trackUUID, t.uuid)
                w.uint(Field.categoryIIDs, UInt64(Category.hang.rawValue))
                w.uint(Field.nameIID, name)
                annotation(.iteration, uint: h.iteration)
                annotation(.busyNs, int: h.busyNs)
                if let c = h.culprit { annotation(.culprit, string: "\(c.kind) \(c.name) #\(c.item) (\(formatDuration(c.durationNs)))") }
                if let wd = h.watchdog {
                    annotation(.hangID, uint: wd.hangId)
                    annotation(.thresholdNs, int: wd.thresholdNs)
                    annotation(.stuckNs, int: wd.durationNs ?? -1)
                }
                if let stacks = h.stacks, !stacks.isEmpty {
                    let text = stacks.map { g in
                        "samples \(g.count == 1 ? "\(g.firstSample)" : "\(g.firstSample)-\(g.lastSample)") (×\(g.count)):\n"
                            + g.frames.map { "  \($0.text)" }.joined(separator: "\n")
                    }.joined(separator: "\n")
                    annotation(.stacks, string: text)
                }
                w.close(e)
                endPacket()
            }
        }
    }

    /// Busy % and iterations/s per loop, in the Chrome export's 200 bins.
    private func writeCounters(end: Int64) {
        let bins = 200
        guard end > origin else { return }
        let width = Double(end - origin) / Double(bins)
        for t in trackOrder {
            t.busyUUID = newUUID(); t.rateUUID = newUUID()
            for (uuid, name, unit) in [(t.busyUUID, "busy % (loop \(t.key.loop))", "%"), (t.rateUUID, "iterations/s (loop \(t.key.loop))", "iterations/s")] {
                startPacket(ts: nil)
                let d = w.open(Field.trackDescriptor)
                w.uint(1, uuid); w.uint(5, t.processUUID); w.string(2, name)
                let c = w.open(8); w.string(6, unit); w.close(c)
                w.close(d)
                endPacket()
            }
            let busy = counters.busy.strip(t.key, begin: origin, end: end, bins: bins)
            let starts = counters.starts.strip(t.key, begin: origin, end: end, bins: bins)
            for i in 0..<min(busy.count, starts.count) {
                let ts = origin &+ Int64((Double(i) * width).rounded(.down))
                for (uuid, v) in [(t.busyUUID, (busy[i] * 1000).rounded() / 10), (t.rateUUID, (starts[i] * 1e9 * 10).rounded() / 10)] {
                    startPacket(ts: ts)
                    let e = w.open(Field.trackEvent)
                    w.uint(Field.eventType, 4)                // TYPE_COUNTER
                    w.uint(Field.trackUUID, uuid)
                    w.double(Field.doubleCounterValue, v)
                    w.close(e)
                    endPacket()
                }
            }
        }
    }
}
