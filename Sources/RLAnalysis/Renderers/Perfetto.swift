import CTFReader

/// `rltrace export --format perfetto`: Perfetto's own trace format — a `Trace` of `TracePacket`s
/// holding `TrackEvent`s (the messages of Perfetto's protos/perfetto/trace/, the subset used
/// declared in Tests/rltraceTests/Fixtures/perfetto/perfetto_subset.proto) — written to the file as
/// the trace is read, by a hand-written encoder (``ProtobufWriter``, and ``ByteCursor``'s fields for
/// the packets written per slice).
///
/// - a process track per process, a thread track per loop (named as the Chrome export names it:
///   `thread — loop N`);
/// - iterations, sleeps (`sleep → reason`), runs (their depth and result as arguments) and callouts
///   (`kind item-name`, as the Chrome export names them, the item's id as the argument `item`) as
///   slices on the loop's track, strictly nested (``PendingSlice`` tells why they wait for their
///   top-level iteration);
/// - the Chrome export's flows (signal → perform, wakeUp → wake), each an instant with `flow_ids`
///   on the asking thread (a sequence per thread) and `terminating_flow_ids` on the perform's slice
///   or on an instant at the wake on the loop's thread;
/// - counter tracks per loop (busy %, iterations/s; the Chrome export's 200 bins);
/// - the report's findings as instants on the loop's track: `hang` (an iteration busy past the
///   threshold, and the watchdog's, with the culprit and the stack samples as text arguments),
///   `slow callout`, `late timer` and `spin` (category `finding`; the report's thresholds).
///
/// Size (docs/benchmarks.md, the export_perfetto row): one packet sequence per loop
/// (``PerfettoSequence``) whose `TracePacketDefaults` name the loop's track (its events carry no
/// `track_uuid`) and a sequence-scoped incremental clock (each packet's timestamp is the time since
/// the sequence's packet before; one that would go back in time is written absolute, on the trace
/// clock); event names, categories and argument names interned per sequence, each written once; a
/// slice carries no category (its name begins with it: `iteration`, `sleep → …`, `run …`,
/// `timer …`) and no argument but a run's (depth, result) and a callout's item id (the Chrome
/// export's other per-slice arguments would double the file), a flow's instants neither (named
/// `signal`, `wakeUp`); the findings' instants have both (categories `hang`, `finding`). With
/// ``PerfettoCompression/deflate`` (rltrace's default) the packets are then deflated in runs
/// (``PerfettoDeflater``), as Perfetto's own service writes them.
///
/// Times are ns after the trace's first event (the Chrome export's origin).
public final class PerfettoTraceSink: LoopModelSink, NameResolving, SpareWorkSink {
    /// The model, for names and loops.
    public var resolver: LoopModel? { didSet { unsafeResolver = resolver.map { Unmanaged.passUnretained($0) } } }
    /// ``resolver`` without a retain and release per use (flows ask it for every flow; the sink's
    /// owner keeps the model alive while records come).
    private(set) var unsafeResolver: Unmanaged<LoopModel>?
    /// How many completed slices a loop holds before it writes what it can of an iteration still
    /// open (``flushEarly(_:)``): 48 bytes each, 0.8 MB at the default (the scratch of a flush
    /// as much again).
    public var pendingLimit = 16_384
    let out: ByteSink
    /// The report's thresholds (hangs, slow callouts, late timers, spins).
    let options: ReportOptions
    /// The packet being written (packets other than a slice's begin and end).
    let w = ProtobufWriter()
    /// The timestamp of the packet in ``w`` (its value, and whether absolute), written by ``endPacket()``.
    private var stampLast: (UInt64, Bool)?
    /// Scratch for ``flush(_:where:)`` (kept between calls: no allocation per flush): the slices
    /// being written, their order and the indices of those open among them.
    var group = TrivialList<PendingSlice>(capacity: 64)
    let indices = PendingIndices()
    private(set) var origin: Int64 = 0
    private var nextUUID: UInt64 = 1
    private var flowID: UInt64 = 0
    /// The sequence of what is not a loop's: track descriptors, flows' starts, counters.
    let global: PerfettoSequence
    private var nextSequenceID: UInt32 = 2

    /// Categories (interned on each sequence's first packet).
    enum Category: UInt8, CaseIterable {
        case iteration = 1, sleep, run, observer, source0, source1, timer, mainQueue, block, hang, finding
        var label: String {
            switch self {
            case .mainQueue: "main_queue"
            default: "\(self)"
            }
        }
    }
    /// Debug annotation names (interned on each sequence's first packet).
    enum Annotation: UInt8, CaseIterable {
        case item = 1, detail, iteration, busyNs, fd, depth, result, culprit, stacks, hangID, thresholdNs, stuckNs
        case callout, durationNs, lateNs, iterations
        var label: String {
            switch self {
            case .busyNs: "busy_ns"
            case .hangID: "hang_id"
            case .thresholdNs: "threshold_ns"
            case .stuckNs: "stuck_ns"
            case .durationNs: "duration_ns"
            case .lateNs: "late_ns"
            default: "\(self)"
            }
        }
    }
    /// Field numbers (Perfetto's protos).
    enum Field {
        static let packet: UInt8 = 0x0A                      // Trace.packet = 1, length-delimited
        static let timestamp: UInt32 = 8, trustedSequenceID: UInt32 = 10, trackEvent: UInt32 = 11
        static let internedData: UInt32 = 12, sequenceFlags: UInt32 = 13, trackDescriptor: UInt32 = 60
        static let clockSnapshot: UInt32 = 6, timestampClockID: UInt32 = 58, packetDefaults: UInt32 = 59
        static let categoryIIDs: UInt32 = 3, debugAnnotations: UInt32 = 4, eventType: UInt32 = 9, nameIID: UInt32 = 10
        static let trackUUID: UInt32 = 11, doubleCounterValue: UInt32 = 44, flowIDs: UInt32 = 47, terminatingFlowIDs: UInt32 = 48
    }
    /// Clocks: the trace's (BOOTTIME, Perfetto's default), and each sequence's incremental one (a
    /// user-defined id, sequence-scoped: 64…127).
    enum Clock {
        static let trace: UInt64 = 6, incremental: UInt64 = 64
    }

    /// An export written to `out`; `hangThresholdNs` is the report's hang threshold (the other
    /// thresholds the report's defaults).
    public convenience init(out: ByteSink, hangThresholdNs: Int64 = ReportOptions().hangThresholdNs) {
        var o = ReportOptions()
        o.hangThresholdNs = hangThresholdNs
        self.init(out: out, options: o)
    }

    /// An export written to `out`, its findings by the report's thresholds `options`, its packets
    /// deflated into `compressed_packets` with ``PerfettoCompression/deflate`` (`out` must not
    /// have been written to: it takes a ``PerfettoDeflater`` as its encoder).
    public init(out: ByteSink, options: ReportOptions, compression: PerfettoCompression = .none) {
        if compression == .deflate { out.encoder = PerfettoDeflater() }
        self.out = out
        self.options = options
        global = PerfettoSequence(id: 1, track: 0)
        threadCacheKeys.initialize(repeating: ThreadKey(pid: .min, tid: .min), count: 64)
        threadCacheRefs.initialize(repeating: .passUnretained(PerfettoTraceSink.noSequence), count: 64)
        open(global)
    }

    /// The deflate of full buffers (``PerfettoCompression/deflate`` to a file), for the threads
    /// reading the trace while they would wait.
    public var spareWork: SpareWork? { out.spareWork }

    public func traceBegins(at ts: Int64, epochOffset: Int64) {
        origin = ts
        counters.traceBegins(at: ts)
    }

    // MARK: packets

    /// Opens sequence `s`: its state cleared, its categories and argument names interned, its
    /// defaults (the incremental clock, the loop's track), then the clock defined — at 0 on the
    /// trace's clock, as the export's times.
    func open(_ s: PerfettoSequence) {
        w.reset()
        w.uint(Field.trustedSequenceID, UInt64(s.id))
        w.uint(Field.sequenceFlags, 1)                        // SEQ_INCREMENTAL_STATE_CLEARED
        let d = w.open(Field.internedData)
        for c in Category.allCases { let m = w.open(1); w.uint(1, UInt64(c.rawValue)); w.string(2, c.label); w.close(m) }
        for a in Annotation.allCases { let m = w.open(3); w.uint(1, UInt64(a.rawValue)); w.string(2, a.label); w.close(m) }
        w.close(d)
        let p = w.open(Field.packetDefaults)
        w.uint(Field.timestampClockID, Clock.incremental)
        if s.track != 0 { let e = w.open(Field.trackEvent); w.uint(Field.trackUUID, s.track); w.close(e) }
        w.close(p)
        endPacket()
        startPacket(s, ts: nil)
        let c = w.open(Field.clockSnapshot)
        for (id, incremental) in [(Clock.trace, false), (Clock.incremental, true)] {
            let m = w.open(1)
            w.uint(1, id); w.uint(2, 0)
            if incremental { w.uint(3, 1) }
            w.close(m)
        }
        w.close(c)
        endPacket()
    }

    /// The timestamp of a packet at `ts` on `s`: the time since the sequence's packet before, or,
    /// when earlier than it, absolute (on the trace's clock). Advances the sequence's clock.
    @inline(__always) func stamp(_ s: PerfettoSequence, _ ts: Int64) -> (value: UInt64, absolute: Bool) {
        let t = max(0, ts &- origin)
        if t >= s.clock {
            defer { s.clock = t }
            return (UInt64(t &- s.clock), false)
        }
        return (UInt64(t), true)
    }

    /// Starts a packet on sequence `s` (needing its incremental state), at `ts` if given (its
    /// timestamp is written last, by ``endPacket()``, as in every packet: ``hotPacket(_:ts:_:)``).
    func startPacket(_ s: PerfettoSequence, ts: Int64?) {
        w.reset()
        if let ts { let (v, absolute) = stamp(s, ts); stampLast = (v, absolute) }
        w.uint(Field.trustedSequenceID, UInt64(s.id))
        w.uint(Field.sequenceFlags, 2)                        // SEQ_NEEDS_INCREMENTAL_STATE
    }

    /// Writes the packet as one `Trace.packet` field (its timestamp last, if it has one).
    @inline(__always) func endPacket() {
        if let (v, absolute) = stampLast {
            w.uint(Field.timestamp, v)
            if absolute { w.uint(Field.timestampClockID, Clock.trace) }
            stampLast = nil
        }
        let n = w.count
        out.reserving(n + 11) { c in
            c.byte(Field.packet)
            c.varint(UInt64(n))
            c.bytes(w.bytes)
        }
    }

    /// A packet on `s` at `ts` written straight to the output: the sequence and its flags, then
    /// `body`'s fields (at most 100 bytes: the packet's length takes one byte), then the timestamp.
    /// (The timestamp last: what every packet of a sequence shares then comes first, in one piece,
    /// which igzip deflated 17 % faster and 11 % smaller than with the timestamp in between —
    /// docs/benchmarks.md, "The Perfetto export: field order" — and which the deflate that knows
    /// the packets writes as one match and the timestamp's literals.)
    @inline(__always) func hotPacket(_ s: PerfettoSequence, ts: Int64, _ body: (inout ByteCursor) -> Void) {
        let (v, absolute) = stamp(s, ts)
        let id = UInt64(s.id)
        out.reserving(PerfettoTraceSink.hotRoom) { c in
            let p = c.open(Field.packet)
            c.field(0x50, id)                                       // trusted_packet_sequence_id (10)
            c.byte(0x68); c.byte(2)                                 // sequence_flags (13): SEQ_NEEDS_INCREMENTAL_STATE
            body(&c)
            c.field(0x40, v)                                        // timestamp (8)
            if absolute { c.byte(0xD0); c.byte(0x03); c.byte(UInt8(Clock.trace)) }   // timestamp_clock_id (58)
            c.close(p)
        }
    }
    /// Room for a hot packet: its header (at most 22 bytes) and a body of at most 100.
    static let hotRoom = 128

    // MARK: interned names

    private var nameIIDs: [String: UInt64] = [:]
    private(set) var nameStrings: [String] = [""]
    /// Callout names by item (the iid in 8 bytes), found without hashing a string.
    private let calloutNames = RenderedNames()
    /// Sleep names by wake reason (0: not interned yet).
    private var sleepNames = [UInt64](repeating: 0, count: 256)
    private lazy var iterationName = intern("iteration")
    lazy var slowCalloutName = intern("slow callout")
    lazy var lateTimerName = intern("late timer")

    /// The iid of an event name (a new one the first time).
    func intern(_ name: String) -> UInt64 {
        if let id = nameIIDs[name] { return id }
        precondition(nameStrings.count < Int(UInt32.max), "more event names than a PendingSlice holds")
        let id = UInt64(nameStrings.count)
        nameIIDs[name] = id
        nameStrings.append(name)
        return id
    }

    /// Interns name `iid` on sequence `s` (a packet of its own, before the first that uses it).
    @inline(__always) func internName(_ iid: UInt64, on s: PerfettoSequence) {
        let i = Int(iid)
        if i < s.written.count && s.written[i] { return }
        internNameSlow(i, on: s)
    }

    @inline(never) private func internNameSlow(_ i: Int, on s: PerfettoSequence) {
        // A flag per iid up to a bound, a set beyond: a trace with many names and many sequences
        // (threads asking loops) makes no table of names × sequences.
        if i < PerfettoSequence.flagged {
            if i >= s.written.count { s.written += [Bool](repeating: false, count: min(PerfettoSequence.flagged, i + 1 + 16) - s.written.count) }
            s.written[i] = true
        } else if !s.writtenBeyond.insert(UInt64(i)).inserted {
            return
        }
        startPacket(s, ts: nil)
        let d = w.open(Field.internedData)
        let m = w.open(2)
        w.uint(1, UInt64(i)); w.string(2, nameStrings[i])
        w.close(m)
        w.close(d)
        endPacket()
    }

    /// A callout's name, as the Chrome export names it: `kind item-name`, `kind #item` while the
    /// item has no name, `main_queue main-queue` — interned once per name and sequence; the item's
    /// id is the slice's argument `item` (``writeSliceBegin(_:flowEnd:on:)``).
    @inline(__always)
    private func calloutName(_ cl: CalloutRecord, pid: Int64) -> UInt64 {
        if let r = calloutNames.cachedRange(of: cl, pid: pid) { return calloutNames.withBytes(r) { $0.loadUnaligned(as: UInt64.self) } }
        return calloutNameUncached(cl, pid: pid)
    }

    @inline(never)
    private func calloutNameUncached(_ cl: CalloutRecord, pid: Int64) -> UInt64 {
        if let r = calloutNames.range(of: cl, pid: pid, render: { cl in
            let name = cl.kind == .mainQueue ? "main-queue" : (resolver?.name(of: cl, pid: pid) ?? "")
            guard !name.isEmpty || !cl.namedByItem else { return nil }
            return withUnsafeBytes(of: intern("\(cl.kind.label) \(name.isEmpty ? "#\(cl.item)" : name)")) { Array($0) }
        }) {
            return calloutNames.withBytes(r) { $0.loadUnaligned(as: UInt64.self) }
        }
        return intern("\(cl.kind.label) #\(cl.item)")
    }

    // MARK: tracks

    /// The loops' tracks, in the order first seen (by their number in `trackNumbering`: a loop is
    /// found by a multiply and a compare, however many loops there are).
    private(set) var trackOrder: [PerfettoLoopTrack] = []
    private var trackNumbering = LoopNumbering()
    private var processUUIDs: [Int64: UInt64] = [:]
    private struct ThreadKey: Hashable { var pid: Int64, tid: Int64 }
    private var threadUUIDs: [ThreadKey: UInt64] = [:]
    /// Per asking thread, the sequence its flows start on (its default track is the thread's).
    private var threadSequences: [UInt64: PerfettoSequence] = [:]
    /// Asking threads' sequences found lately, unretained (`threadSequences` holds them), in 64
    /// slots by a hash of the thread: a flow's start finds its sequence with a multiply and a
    /// compare where two dictionary lookups took 380 instructions (flows alternate between a few
    /// asking threads, so a one-entry cache missed on most; docs/benchmarks.md, "The Perfetto
    /// export: field order").
    private let threadCacheKeys = UnsafeMutablePointer<ThreadKey>.allocate(capacity: 64)
    private let threadCacheRefs = UnsafeMutablePointer<Unmanaged<PerfettoSequence>>.allocate(capacity: 64)
    /// What an empty slot points to (never written to: no thread has the empty slots' key).
    nonisolated(unsafe) private static let noSequence = PerfettoSequence(id: 0, track: 0)
    /// The iids of the two flow kinds' names, interned when first met (0: not yet).
    private var wakeUpIID: UInt64 = 0, signalIID: UInt64 = 0

    /// ``trackOrder`` unretained, outside any Swift array: the per-record paths reach a loop's
    /// track with no retain and release (``withTrack(_:_:)``); `trackOrder` keeps them alive.
    private var trackRefs = TrivialList<Unmanaged<PerfettoLoopTrack>>(capacity: 16)

    deinit { trackRefs.deallocate(); group.deallocate(); threadCacheKeys.deallocate(); threadCacheRefs.deallocate() }

    /// The track of loop `key` (described, and its sequence opened, the first time).
    @inline(__always) func track(_ key: LoopKey) -> PerfettoLoopTrack {
        if let n = trackNumbering.existing(key) { return trackOrder[n] }
        return makeTrack(key)
    }

    /// `body` on the track of loop `key` (as ``track(_:)``), without retaining it.
    @inline(__always) func withTrack<R>(_ key: LoopKey, _ body: (PerfettoLoopTrack) -> R) -> R {
        let u = trackNumbering.existing(key).map { trackRefs.buffer[$0] } ?? Unmanaged.passUnretained(makeTrack(key))
        return u._withUnsafeGuaranteedRef(body)
    }

    @inline(never) private func makeTrack(_ key: LoopKey) -> PerfettoLoopTrack {
        let info = resolver?.info(of: key) ?? LoopInfo(key: key)
        let p = processUUID(key.pid, name: info.procname)
        let uuid: UInt64
        if info.tid >= 0, let u = threadUUIDs[ThreadKey(pid: key.pid, tid: info.tid)] { uuid = u } else { uuid = newUUID() }
        if info.tid >= 0 { threadUUIDs[ThreadKey(pid: key.pid, tid: info.tid)] = uuid }
        let s = PerfettoSequence(id: nextSequenceID, track: uuid)
        nextSequenceID &+= 1
        let t = PerfettoLoopTrack(key: key, uuid: uuid, processUUID: p, sequence: s, earlyFlushAt: pendingLimit)
        precondition(trackNumbering.number(key) == trackOrder.count)
        trackOrder.append(t)
        trackRefs.append(.passUnretained(t))
        describe(t, info)
        open(s)
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
        startPacket(global, ts: nil)
        let d = w.open(Field.trackDescriptor)
        w.uint(1, uuid)
        let p = w.open(3)
        // Pids as the exports give them (two hosts' processes apart), the host before the name.
        w.int(1, LoopKey.exportPID(pid)); w.string(6, resolver?.processTitle(pid: pid, procname: name) ?? (name.isEmpty ? "pid \(pid)" : name))
        w.close(p)
        w.close(d)
        endPacket()
    }

    /// Describes a loop's track: a thread track (`thread — loop N`), or, when the loop's thread is
    /// not known, a track named `loop N` in its process.
    private func describe(_ t: PerfettoLoopTrack, _ l: LoopInfo) {
        startPacket(global, ts: nil)
        let d = w.open(Field.trackDescriptor)
        w.uint(1, t.uuid)
        if l.tid >= 0 {
            let th = w.open(4)
            w.int(1, LoopKey.exportPID(t.key.pid)); w.int(2, LoopKey.exportTID(l.tid, of: t.key.pid))
            w.string(5, "\(l.threadName.isEmpty ? "thread \(l.tid)" : l.threadName) — loop \(t.key.loop)")
            w.close(th)
        } else {
            w.uint(5, t.processUUID)
            w.string(2, "loop \(t.key.loop)")
        }
        w.close(d)
        endPacket()
    }

    /// The sequence of the flows starting on thread `tid` of `pid`, whose default track is the
    /// thread's (a loop's, or one made for it).
    @inline(__always) private func threadSequenceRef(pid: Int64, tid: Int64) -> Unmanaged<PerfettoSequence> {
        let k = ThreadKey(pid: pid, tid: tid)
        let h = (UInt64(bitPattern: pid) &* 0x9E37_79B9_7F4A_7C15) ^ (UInt64(bitPattern: tid) &* 0xC2B2_AE3D_27D4_EB4F)
        let slot = Int(truncatingIfNeeded: h >> 58)
        if threadCacheKeys[slot] == k { return threadCacheRefs[slot] }
        let s = Unmanaged.passUnretained(threadSequenceSlow(k))
        threadCacheKeys[slot] = k
        threadCacheRefs[slot] = s
        return s
    }

    @inline(never) private func threadSequenceSlow(_ k: ThreadKey) -> PerfettoSequence {
        let u: UInt64
        if let x = threadUUIDs[k] { u = x } else {
            u = newUUID()
            threadUUIDs[k] = u
            _ = processUUID(k.pid)
            startPacket(global, ts: nil)
            let d = w.open(Field.trackDescriptor)
            w.uint(1, u)
            let th = w.open(4)
            w.int(1, LoopKey.exportPID(k.pid)); w.int(2, LoopKey.exportTID(k.tid, of: k.pid))
            w.close(th)
            w.close(d)
            endPacket()
        }
        let s: PerfettoSequence
        if let x = threadSequences[u] { s = x } else {
            s = PerfettoSequence(id: nextSequenceID, track: u)
            nextSequenceID &+= 1
            threadSequences[u] = s
            open(s)
        }
        return s
    }

    // MARK: records

    private let counters = PerfettoCounters()

    public func callout(_ cl: CalloutRecord, of key: LoopKey) {
        withTrack(key) { callout(cl, pid: key.pid, on: $0) }
    }

    @inline(__always) private func callout(_ cl: CalloutRecord, pid: Int64, on t: PerfettoLoopTrack) {
        let name = calloutName(cl, pid: pid)
        t.pending.append(PendingSlice(begin: cl.begin, end: cl.end, name: name, shape: .callout,
                                      a: Int64(bitPattern: cl.item), b: cl.detail))
        // Findings about the callout itself, marked where it begins (inside its slice).
        if cl.kind != .observer && cl.duration >= options.slowCalloutNs {
            t.pending.append(PendingSlice(begin: cl.begin, end: cl.begin, name: slowCalloutName, shape: .slowCallout,
                                          a: Int64(name), b: cl.duration, c: Int64(bitPattern: cl.item)))
        }
        if cl.kind == .timer && !cl.clipped {
            let late = max(0, saturatingDifference(cl.begin, cl.detail))
            if late >= options.lateTimerNs {
                t.pending.append(PendingSlice(begin: cl.begin, end: cl.begin, name: lateTimerName, shape: .lateTimer,
                                              a: Int64(name), b: late, c: Int64(bitPattern: cl.item)))
            }
        }
        if t.pending.count >= t.earlyFlushAt { flushEarly(t) }
    }

    public func iteration(_ it: IterationRecord, of loop: LoopInfo) {
        counters.iteration(it, of: loop)
        withTrack(loop.key) { iteration(it, of: loop, on: $0) }
    }

    @inline(__always) private func iteration(_ it: IterationRecord, of loop: LoopInfo, on t: PerfettoLoopTrack) {
        for s in it.sleeps {
            let name: UInt64
            let r = Int(s.reason.rawValue)
            if sleepNames[r] != 0 { name = sleepNames[r] } else { name = intern("sleep → \(s.reason.label)"); sleepNames[r] = name }
            t.pending.append(PendingSlice(begin: s.begin, end: s.end, name: name, shape: .sleep, a: s.fd, b: 0))
        }
        t.pending.append(PendingSlice(begin: it.begin, end: it.end, name: iterationName,
                                      shape: .iteration, a: Int64(bitPattern: it.number), b: it.busyNs))
        if it.depth == 0 {
            // The report's rules: decided on the whole iteration (a window cutting it still shows it).
            if it.wholeBusyNs >= options.hangThresholdNs {
                let c = it.longestCallout
                t.hangs.append(HangReport(iteration: it.number, beginNs: it.wholeBegin, durationNs: it.wholeEnd &- it.wholeBegin, busyNs: it.wholeBusyNs,
                                          culprit: c.map { CalloutRef(kind: $0.kind.label, item: $0.item, name: resolver?.name(of: $0, pid: loop.key.pid) ?? "",
                                                                      durationNs: $0.wholeDurationNs) }))
            }
            t.spins.iteration(it, minIterations: options.spinMinIterations)
            // Everything that waits has ended, but a slice beginning with a run still open (its
            // begin is not written yet).
            if t.openRuns.isEmpty { flushAll(t) } else { flush(t) { s in !t.openRuns.contains { $0.begin == s.begin } } }
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
        t.pending.append(PendingSlice(begin: o.begin, end: ts, name: name, shape: .run, a: Int64(o.depth), b: result))
        if t.openRuns.isEmpty { flushAll(t) }
    }

    /// A flow: its start written now, on the asking thread's track (its sequence); its end waits
    /// with the loop's slices, so that the loop's sequence stays in time order.
    public func flow(_ f: Flow) {
        guard let model = unsafeResolver, model._withUnsafeGuaranteedRef({ $0.threadID(of: f.to) }) != nil else { return }
        flowID += 1
        let name = flowKindName(f.kind)
        let id = flowID
        withTrack(f.to) { to in
            threadSequenceRef(pid: f.to.pid, tid: f.fromTid)._withUnsafeGuaranteedRef { from in
                internName(name, on: from)
                hotPacket(from, ts: f.fromTs) { c in
                    let e = c.open(0x5A)                            // track_event (11)
                    c.byte(0x48); c.byte(3)                         // type: TYPE_INSTANT
                    c.field(0x50, name)                             // name_iid
                    c.byte(0xF9); c.byte(0x02)                      // flow_ids (47), fixed64
                    withUnsafeBytes(of: id.littleEndian) { c.bytes($0) }
                    c.close(e)
                }
            }
            to.pending.append(PendingSlice(begin: f.toTs, end: f.toTs, name: name, shape: .flowEnd, a: Int64(bitPattern: id), b: 0))
            if to.pending.count >= to.earlyFlushAt { flushEarly(to) }
        }
    }

    /// The iid of flow kind `kind`'s name.
    @inline(__always) private func flowKindName(_ kind: Flow.Kind) -> UInt64 {
        switch kind {
        case .wakeUp:
            if wakeUpIID == 0 { wakeUpIID = intern(kind.rawValue) }
            return wakeUpIID
        case .signal:
            if signalIID == 0 { signalIID = intern(kind.rawValue) }
            return signalIID
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
        for t in trackOrder { flushAll(t) }
        for k in hangLoops { _ = track(k) }
        writeHangs()
        for t in trackOrder { writeSpins(t) }
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
                let s = t.sequence
                internName(name, on: s)
                startPacket(s, ts: h.beginNs)
                let e = w.open(Field.trackEvent)
                w.uint(Field.eventType, 3)
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

    /// One instant `spin` per spin of the report (a run of top-level iterations that never slept)
    /// on its loop's track, where the run began: its first iteration and how many.
    private func writeSpins(_ t: PerfettoLoopTrack) {
        t.spins.close(minIterations: options.spinMinIterations)
        guard !t.spins.found.isEmpty else { return }
        let name = intern("spin")
        internName(name, on: t.sequence)
        for s in t.spins.found {
            startPacket(t.sequence, ts: s.begin)
            let e = w.open(Field.trackEvent)
            w.uint(Field.eventType, 3)
            w.uint(Field.categoryIIDs, UInt64(Category.finding.rawValue))
            w.uint(Field.nameIID, name)
            annotation(.iteration, uint: s.first)
            annotation(.iterations, int: Int64(s.count))
            annotation(.durationNs, int: s.end &- s.begin)
            w.close(e)
            endPacket()
        }
    }

    /// Busy % and iterations/s per loop, in the Chrome export's 200 bins, on a sequence of their
    /// own (its clock starts again at the trace's origin).
    private func writeCounters(end: Int64) {
        let bins = 200
        guard end > origin, !trackOrder.isEmpty else { return }
        let width = Double(end - origin) / Double(bins)
        let s = PerfettoSequence(id: nextSequenceID, track: 0)
        nextSequenceID &+= 1
        open(s)
        var strips: [(busy: [Double], starts: [Double])] = []
        for t in trackOrder {
            t.busyUUID = newUUID(); t.rateUUID = newUUID()
            for (uuid, name, unit) in [(t.busyUUID, "busy % (loop \(t.key.loop))", "%"), (t.rateUUID, "iterations/s (loop \(t.key.loop))", "iterations/s")] {
                startPacket(s, ts: nil)
                let d = w.open(Field.trackDescriptor)
                w.uint(1, uuid); w.uint(5, t.processUUID); w.string(2, name)
                let c = w.open(8); w.string(6, unit); w.close(c)
                w.close(d)
                endPacket()
            }
            strips.append((counters.busy.strip(t.key, begin: origin, end: end, bins: bins), counters.starts.strip(t.key, begin: origin, end: end, bins: bins)))
        }
        // Bin by bin (the sequence's clock only goes forward).
        for i in 0..<bins {
            let ts = origin &+ Int64((Double(i) * width).rounded(.down))
            for (t, strip) in zip(trackOrder, strips) where i < min(strip.busy.count, strip.starts.count) {
                for (uuid, v) in [(t.busyUUID, (strip.busy[i] * 1000).rounded() / 10), (t.rateUUID, (strip.starts[i] * 1e9 * 10).rounded() / 10)] {
                    startPacket(s, ts: ts)
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
