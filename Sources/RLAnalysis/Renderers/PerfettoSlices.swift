import CTFReader

/// What the Perfetto export holds of one loop until its slices can be written in order
/// (``PerfettoTraceSink``): the loop model hands over a callout when it ends and an iteration when
/// it ends, after everything inside it, but Perfetto's trace processor sorts a track's
/// `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` events by time and keeps the file's order among equal
/// times — so an outer slice's begin written after an inner one's at the same instant (a window's
/// edge clips both to it) would be nested inside it. Completed slices wait here until no slice that
/// may begin with them is still open — the iteration holding them ends, or, in a nested run, any of
/// its iterations (what began after the run's entry) — and are then written outer first. The
/// loop's instants (a flow's end, a slow callout, a late timer) wait with them: the loop's packet
/// sequence is then written in time order, each timestamp a small delta.
///
/// A track's slices wait in the order they completed (appended only): among slices with the same
/// begin and end, the later one in that order encloses. (48 bytes: the ordering moves them.)
struct PendingSlice {
    /// Begin and end (ns, the trace's clock; equal for an instant).
    var begin: Int64, end: Int64
    /// Which arguments `a`, `b` and `c` are (``Shape``); a sleep's `c`, once in the nesting stack
    /// of ``PerfettoTraceSink/flush(_:where:)``, the flow that ends at its end.
    var a: Int64, b: Int64, c: Int64
    /// The interned event name (an iid: ``PerfettoTraceSink/intern(_:)`` keeps them below 2³²).
    private var nameIID: UInt32
    var shape: Shape

    init(begin: Int64, end: Int64, name: UInt64, shape: Shape, a: Int64, b: Int64, c: Int64 = 0) {
        self.begin = begin; self.end = end; self.a = a; self.b = b; self.c = c
        nameIID = UInt32(truncatingIfNeeded: name); self.shape = shape
    }

    /// The interned event name.
    var name: UInt64 { UInt64(nameIID) }

    /// What a slice is, for its arguments: a callout (item, detail), an iteration (number, busy
    /// ns), a sleep (fd), a run (depth, result) — of which only a run's are written
    /// (``PerfettoTraceSink/writeSliceBegin(_:flowEnd:on:)``); or an instant: a flow's end (flow id), a slow
    /// callout or a late timer (the callout's name iid, its duration or lateness, its item); a
    /// flow's end written with the callout beginning at its time (`flowMerged`).
    enum Shape: UInt8 { case callout, iteration, sleep, run, flowEnd, slowCallout, lateTimer, flowMerged }

    /// Whether it is an instant (never encloses anything).
    var isInstant: Bool { shape.rawValue >= Shape.flowEnd.rawValue }

    /// The order slices are written in: begin first; at equal begins a slice before an instant,
    /// and the longer (then the later completed: `i` after `j` in the group) slice encloses.
    @inline(__always) static func before(_ g: UnsafeMutableBufferPointer<PendingSlice>, _ i: Int32, _ j: Int32) -> Bool {
        let x = g[Int(i)], y = g[Int(j)]
        if x.begin != y.begin { return x.begin < y.begin }
        let xi = x.isInstant, yi = y.isInstant
        if xi != yi { return yi }
        return x.end != y.end ? x.end > y.end : i > j
    }
}

/// ``PerfettoTraceSink/flush(_:where:)``'s index buffers, reused by every flush: the order of a
/// group's slices, and the stack of those open. Outside any Swift array: no uniqueness check, no
/// reset of a count per flush.
final class PendingIndices {
    private(set) var order: UnsafeMutablePointer<Int32>, open: UnsafeMutablePointer<Int32>
    private var capacity = 256
    init() { order = .allocate(capacity: 256); open = .allocate(capacity: 256) }
    deinit { order.deallocate(); open.deallocate() }
    /// Room for a group of `n` slices.
    @inline(__always) func reserve(_ n: Int) {
        guard n > capacity else { return }
        capacity = max(n, 2 * capacity)
        order.deallocate(); open.deallocate()
        order = .allocate(capacity: capacity); open = .allocate(capacity: capacity)
    }
}

/// One packet sequence of the Perfetto export (`trusted_packet_sequence_id`): its interned state
/// (which event names its packets carried) and its incremental clock (the time of its last packet
/// timestamped on it, ns after the trace's origin).
final class PerfettoSequence {
    let id: UInt32
    /// The default track of its events (`TrackEventDefaults.track_uuid`; 0: none).
    let track: UInt64
    var clock: Int64 = 0
    /// Event names interned on it: by iid below ``flagged``, and the others.
    var written: [Bool] = []
    var writtenBeyond: Set<UInt64> = []
    static let flagged = 4096
    /// A slice end's packet before its timestamp, as one little-endian word (for an id below 128):
    /// `trusted_packet_sequence_id`, `sequence_flags` = SEQ_NEEDS_INCREMENTAL_STATE, and a
    /// `track_event` of `type` = TYPE_SLICE_END.
    let endTail: UInt64
    /// A slice begin's packet up to its track event's body, as one little-endian word (for an id
    /// below 128; the two lengths 0, filled in per packet): the packet's tag and length,
    /// `trusted_packet_sequence_id`, `sequence_flags` = SEQ_NEEDS_INCREMENTAL_STATE, the
    /// `track_event`'s tag and length.
    let beginHead: UInt64
    init(id: UInt32, track: UInt64) {
        self.id = id; self.track = track
        let head: [UInt8] = [0x0A, 0, 0x50, UInt8(truncatingIfNeeded: id), 0x68, 0x02, 0x5A, 0]
        beginHead = head.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        let bytes: [UInt8] = [0x50, UInt8(truncatingIfNeeded: id), 0x68, 0x02, 0x5A, 0x02, 0x48, 0x02]
        endTail = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }
}

/// The report's spin rule on one loop (``Aggregator``'s): runs of consecutive top-level iterations
/// that never slept, at least `minIterations` long.
struct SpinFinder {
    var current: (first: UInt64, count: Int, begin: Int64, end: Int64)?
    var found: [(first: UInt64, count: Int, begin: Int64, end: Int64)] = []

    mutating func iteration(_ it: IterationRecord, minIterations: Int) {
        if it.slept || it.nestedSleeps > 0 { close(minIterations: minIterations); return }
        if var s = current { s.count += 1; s.end = it.end; current = s } else { current = (it.number, 1, it.begin, it.end) }
    }

    mutating func close(minIterations: Int) {
        if let s = current, s.count >= minIterations { found.append(s) }
        current = nil
    }
}

/// One loop's track and what waits on it.
final class PerfettoLoopTrack {
    let key: LoopKey
    /// The thread track's uuid (and its process's).
    let uuid: UInt64, processUUID: UInt64
    /// The loop's packet sequence (its default track is this one).
    let sequence: PerfettoSequence
    /// Counter tracks (busy %, iterations/s), made at the end.
    var busyUUID: UInt64 = 0, rateUUID: UInt64 = 0
    /// Completed slices not written yet, in completion order.
    var pending = TrivialList<PendingSlice>(capacity: 64)
    /// When ``pending`` holds this many, what it can write before its iteration ends is written
    /// (``PerfettoTraceSink/flushEarly(_:)``).
    var earlyFlushAt = 0
    /// Runs entered and not exited: when, and the mode.
    var openRuns: [(begin: Int64, mode: String, depth: Int)] = []
    /// Iterations busy past the hang threshold (the report's rule).
    var hangs: [HangReport] = []
    /// Spins (the report's rule).
    var spins = SpinFinder()

    init(key: LoopKey, uuid: UInt64, processUUID: UInt64, sequence: PerfettoSequence, earlyFlushAt: Int) {
        self.key = key; self.uuid = uuid; self.processUUID = processUUID; self.sequence = sequence
        self.earlyFlushAt = earlyFlushAt
    }

    deinit { pending.deallocate() }
}

extension PerfettoTraceSink {
    /// Writes the slices of `track` that `take` selects, nested (outer first at equal begins), and
    /// keeps the others waiting.
    func flush(_ track: PerfettoLoopTrack, where take: (PendingSlice) -> Bool) {
        // The usual case — inside the run `CFRunLoopRun` entered, nothing pending begins with it —
        // takes every slice: the buffers swap, nothing is copied.
        let pending = track.pending.buffer
        if pending.allSatisfy(take) { return flushAll(track) }
        group.removeAll()
        var kept = 0
        for s in pending {
            if take(s) { group.append(s) } else { pending[kept] = s; kept &+= 1 }
        }
        track.pending.truncate(to: kept)
        writeGroup(track)
    }

    /// Writes what `track` holds of an iteration still open once it holds
    /// ``PerfettoTraceSink/pendingLimit`` slices (an iteration of millions of callouts: a flood of perform-blocks): the
    /// slices that begin after everything open on the loop (``LoopModel/latestOpenBegin(of:)``, and
    /// its open runs) — so no slice written later encloses one of them at an equal begin, the only
    /// order Perfetto's reader takes from the file (it sorts a track's events by time); the open
    /// iteration's own slice and its sleeps follow when it ends, timestamped absolutely where they
    /// go back in time. Those that begin with an open slice keep waiting; the next try is when the
    /// list has grown by the limit again, so a list that cannot shrink costs no work per callout.
    /// (`PerfettoExportTests`: written early at every callout, the export reads the same, also for
    /// windows whose edge clips a nested run's slices to equal begins.)
    func flushEarly(_ track: PerfettoLoopTrack) {
        track.earlyFlushAt = track.pending.count &+ pendingLimit
        guard let open = unsafeResolver?._withUnsafeGuaranteedRef({ $0.latestOpenBegin(of: track.key) }) else { return }
        let after = max(open, track.openRuns.last?.begin ?? .min)
        flush(track) { $0.begin > after }
        track.earlyFlushAt = track.pending.count &+ pendingLimit
    }

    /// Writes every slice of `track` (the usual case: a top-level iteration ended outside any
    /// run): the pending slices become the group by a swap of the two buffers, no copy.
    func flushAll(_ track: PerfettoLoopTrack) {
        group.removeAll()
        swap(&group, &track.pending)
        writeGroup(track)
    }

    /// Writes `group`, the slices of `track` taken by a flush. (Worked on in place through an
    /// unsafe buffer and ordered through a permutation of indices, the open slices kept as
    /// indices too, both in ``indices``' reused buffers: the sort and a stack of copies moved the
    /// 48-byte slices around, and Swift arrays checked their uniqueness at every append —
    /// docs/benchmarks.md, "Speed, second pass" and "third pass".)
    private func writeGroup(_ track: PerfettoLoopTrack) {
        guard group.count > 0 else { return }
        let sequence = track.sequence
        let scratch = indices
        do {
            let b = group.buffer
            let n = b.count
            scratch.reserve(n)
            let o = scratch.order, open = scratch.open
            var top = 0                                             // open[0..<top]: the open slices
            for i in 0..<n { o[i] = Int32(truncatingIfNeeded: i) }
            if n <= 32 {
                // Nearly in order already (completion order): an insertion sort allocates nothing.
                var i = 1
                while i < n {
                    let x = o[i]
                    var j = i
                    while j > 0 && PendingSlice.before(b, x, o[j &- 1]) { o[j] = o[j &- 1]; j &-= 1 }
                    o[j] = x
                    i &+= 1
                }
            } else {
                var ob = UnsafeMutableBufferPointer(start: o, count: n)
                ob.sort { PendingSlice.before(b, $0, $1) }
            }
            var k = 0
            while k < n {
                defer { k &+= 1 }
                let i = Int(o[k])
                var poppedEnd = Int64.min
                while top > 0, case let t = Int(open[top &- 1]), !(b[t].begin <= b[i].begin && b[i].end <= b[t].end) {
                    writeSliceEnd(b[t].end, flowEnd: b[t].shape == .sleep ? UInt64(bitPattern: b[t].c) : 0, on: sequence)
                    poppedEnd = b[t].end
                    top &-= 1
                }
                // A slice that overlaps the one before it without nesting (a damaged trace) starts
                // where that one ended, so the track stays strictly nested.
                if b[i].begin < poppedEnd { b[i].begin = poppedEnd; if b[i].end < b[i].begin { b[i].end = b[i].begin } }
                if b[i].isInstant {
                    // A flow ending where a sleep ends (a wakeUp's wake) ends on the sleep's slice.
                    if b[i].shape == .flowEnd, top > 0, case let t = Int(open[top &- 1]), b[t].shape == .sleep, b[t].end == b[i].begin, b[t].c == 0 {
                        b[t].c = b[i].a
                    } else if b[i].shape != .flowMerged {
                        writeInstant(b[i], on: sequence)
                    }
                    continue
                }
                // A flow ending where a callout begins (a signal's perform) ends on the callout's slice.
                var flowEnd: UInt64 = 0
                if b[i].shape == .callout {
                    var m = k &+ 1
                    while m < n, case let j = Int(o[m]), b[j].begin == b[i].begin {
                        if b[j].shape == .flowEnd { flowEnd = UInt64(bitPattern: b[j].a); b[j].shape = .flowMerged; break }
                        m &+= 1
                    }
                }
                writeSliceBegin(b[i], flowEnd: flowEnd, on: sequence)
                open[top] = Int32(truncatingIfNeeded: i)
                top &+= 1
            }
            while top > 0 {
                top &-= 1
                let t = Int(open[top])
                writeSliceEnd(b[t].end, flowEnd: b[t].shape == .sleep ? UInt64(bitPattern: b[t].c) : 0, on: sequence)
            }
        }
    }

    /// A slice's begin on its loop's sequence (whose default track is the loop's):
    /// `TYPE_SLICE_BEGIN` with its name — and a flow that ends where it begins (a signalled
    /// source's perform), `flowEnd` when not 0. A run carries its depth and result, a callout its
    /// item's id (`item`, as in the Chrome export); the Chrome export's other arguments (a
    /// callout's detail, an iteration's number and busy time, a sleep's fd) would be most of the
    /// file (docs/benchmarks.md, the Perfetto export), and the report and the timeline have them.
    @inline(__always) func writeSliceBegin(_ s: PendingSlice, flowEnd: UInt64, on sequence: PerfettoSequence) {
        internName(s.name, on: sequence)
        if flowEnd == 0 && sequence.id < 0x80 && s.shape.rawValue <= PendingSlice.Shape.sleep.rawValue && s.name < 0x4000,
           case let (v, absolute) = stamp(sequence, s.begin), !absolute {
            return writePlainBegin(s, ts: v, on: sequence)
        }
        writeSliceBeginSlow(s, flowEnd: flowEnd, on: sequence)
    }

    /// The usual slice begin — a callout, an iteration or a sleep, with no flow ending there, on
    /// a sequence of id below 128, its name's iid below 2¹⁴, timestamped relative to the packet
    /// before — as ``writeSliceBeginSlow(_:flowEnd:on:)`` writes it, stored a word at a time: its
    /// packet is the sequence's constant head (``PerfettoSequence/beginHead``), `type` and
    /// `name_iid`, a callout's `item`, and the timestamp (docs/benchmarks.md, "The Perfetto
    /// export: deflating in spare time": 137 instructions per begin through the cursor's fields).
    @inline(__always) private func writePlainBegin(_ s: PendingSlice, ts v: UInt64, on sequence: PerfettoSequence) {
        let head = sequence.beginHead
        out.reserving(PerfettoTraceSink.hotRoom) { c in
            let q = UnsafeMutableRawPointer(c.p)
            q.storeBytes(of: head, as: UInt64.self)                 // 0A _ 50 id 68 02 5A _
            let name = UInt32(truncatingIfNeeded: s.name)
            var n: Int
            if name < 0x80 {
                q.storeBytes(of: (0x50_01_48 as UInt32) | name << 24, toByteOffset: 8, as: UInt32.self)   // type BEGIN, name_iid
                n = 12
            } else {
                q.storeBytes(of: (0x50_01_48 as UInt32) | (name & 0x7F | 0x80) << 24, toByteOffset: 8, as: UInt32.self)
                q.storeBytes(of: UInt8(truncatingIfNeeded: name >> 7), toByteOffset: 12, as: UInt8.self)
                n = 13
            }
            if s.shape == .callout {
                let item = UInt64(bitPattern: s.a)
                if item < 0x80 {
                    // debug_annotations (4) { name_iid (1) = item, uint_value (3) = item }: 6 bytes.
                    q.storeBytes(of: (0x18_01_08_04_22 as UInt64) | item << 40, toByteOffset: n, as: UInt64.self)
                    n &+= 6
                } else {
                    var a = ByteCursor((c.p + n))
                    PerfettoTraceSink.annotation(&a, .item, uint: item)
                    n = a.p - c.p
                }
            }
            q.storeBytes(of: UInt8(truncatingIfNeeded: n &- 8), toByteOffset: 7, as: UInt8.self)       // the track_event's length
            var t = ByteCursor(c.p + n)
            t.field(0x40, v)                                        // timestamp (8), last
            let total = t.p - c.p
            q.storeBytes(of: UInt8(truncatingIfNeeded: total &- 2), toByteOffset: 1, as: UInt8.self)   // the packet's length
            c.p = t.p
        }
    }

    /// A slice's begin (any): ``writeSliceBegin(_:flowEnd:on:)``'s general case.
    @inline(never) func writeSliceBeginSlow(_ s: PendingSlice, flowEnd: UInt64, on sequence: PerfettoSequence) {
        hotPacket(sequence, ts: s.begin) { c in
            let e = c.open(0x5A)                                    // track_event (11)
            c.byte(0x48); c.byte(1)                                 // type (9): TYPE_SLICE_BEGIN
            c.field(0x50, s.name)                                   // name_iid (10)
            if s.shape == .callout {
                PerfettoTraceSink.annotation(&c, .item, uint: UInt64(bitPattern: s.a))
            } else if s.shape == .run {
                PerfettoTraceSink.annotation(&c, .depth, int: s.a)
                PerfettoTraceSink.annotation(&c, .result, int: s.b)
            }
            if flowEnd != 0 {
                c.byte(0x81); c.byte(0x03)                          // terminating_flow_ids (48), fixed64
                withUnsafeBytes(of: flowEnd.littleEndian) { c.bytes($0) }
            }
            c.close(e)
        }
    }

    /// A slice's end: `TYPE_SLICE_END` on the sequence's track — and a flow that ends there (a
    /// wakeUp's, at the wake that ends a sleep), `flowEnd` when not 0.
    @inline(__always) func writeSliceEnd(_ ts: Int64, flowEnd: UInt64, on sequence: PerfettoSequence) {
        if flowEnd == 0 && sequence.id < 0x80 {
            // The usual end: its packet is the timestamp and eight constant bytes.
            let (v, absolute) = stamp(sequence, ts)
            if !absolute {
                let tail = sequence.endTail
                out.reserving(24) { c in
                    let p = c.open(Field.packet)
                    UnsafeMutableRawPointer(c.p).storeBytes(of: tail, as: UInt64.self)
                    c.p += 8
                    c.field(0x40, v)                                // timestamp (8), last
                    c.close(p)
                }
                return
            }
            // (An absolute stamp leaves the clock as it was: the packet below stamps it again.)
        }
        hotPacket(sequence, ts: ts) { c in
            if flowEnd == 0 {
                c.byte(0x5A); c.byte(2)                             // track_event (11), 2 bytes
                c.byte(0x48); c.byte(2)                             // type (9): TYPE_SLICE_END
                return
            }
            c.byte(0x5A); c.byte(12)
            c.byte(0x48); c.byte(2)
            c.byte(0x81); c.byte(0x03)                              // terminating_flow_ids (48), fixed64
            withUnsafeBytes(of: flowEnd.littleEndian) { c.bytes($0) }
        }
    }

    /// An instant on the loop's track: a flow's end, or a finding about a callout.
    private func writeInstant(_ s: PendingSlice, on sequence: PerfettoSequence) {
        internName(s.name, on: sequence)
        if s.shape == .flowEnd {
            hotPacket(sequence, ts: s.begin) { c in
                let e = c.open(0x5A)
                c.byte(0x48); c.byte(3)                             // TYPE_INSTANT
                c.field(0x50, s.name)
                c.byte(0x81); c.byte(0x03)                          // terminating_flow_ids (48), fixed64
                withUnsafeBytes(of: UInt64(bitPattern: s.a).littleEndian) { c.bytes($0) }
                c.close(e)
            }
            return
        }
        startPacket(sequence, ts: s.begin)
        let e = w.open(Field.trackEvent)
        w.uint(Field.eventType, 3)
        w.uint(Field.categoryIIDs, UInt64(Category.finding.rawValue))
        w.uint(Field.nameIID, s.name)
        annotation(.callout, string: nameStrings[Int(s.a)])
        annotation(.item, uint: UInt64(bitPattern: s.c))
        annotation(s.shape == .slowCallout ? .durationNs : .lateNs, int: s.b)
        w.close(e)
        endPacket()
    }

    /// A debug annotation with an unsigned value, through a cursor.
    @inline(__always) static func annotation(_ c: inout ByteCursor, _ name: Annotation, uint v: UInt64) {
        let d = c.open(0x22)                                        // debug_annotations (4)
        c.byte(0x08); c.byte(name.rawValue)                         // name_iid (1)
        c.field(0x18, v)                                            // uint_value (3)
        c.close(d)
    }

    /// A debug annotation with a signed value, through a cursor.
    @inline(__always) static func annotation(_ c: inout ByteCursor, _ name: Annotation, int v: Int64) {
        let d = c.open(0x22)
        c.byte(0x08); c.byte(name.rawValue)
        c.field(0x20, UInt64(bitPattern: v))                        // int_value (4)
        c.close(d)
    }

    /// A debug annotation with an unsigned value.
    @inline(__always) func annotation(_ name: Annotation, uint v: UInt64) {
        let d = w.open(Field.debugAnnotations)
        w.uint(1, UInt64(name.rawValue)); w.uint(3, v)
        w.close(d)
    }

    /// A debug annotation with a signed value.
    @inline(__always) func annotation(_ name: Annotation, int v: Int64) {
        let d = w.open(Field.debugAnnotations)
        w.uint(1, UInt64(name.rawValue)); w.int(4, v)
        w.close(d)
    }

    /// A debug annotation with a string value.
    func annotation(_ name: Annotation, string v: String) {
        let d = w.open(Field.debugAnnotations)
        w.uint(1, UInt64(name.rawValue)); w.string(6, v)
        w.close(d)
    }
}

/// Busy time and iteration counts per loop over the trace, resampled to the Chrome export's 200
/// bins at the end (``BusyStripCollector``'s bounded bins; an iteration counts as 1 ns of "busy"
/// at its begin in the second collector, so its bins hold iteration counts).
final class PerfettoCounters {
    let busy = BusyStripCollector(), starts = BusyStripCollector()
    func traceBegins(at ts: Int64) {
        busy.traceBegins(at: ts, epochOffset: 0); starts.traceBegins(at: ts, epochOffset: 0)
    }
    func iteration(_ it: IterationRecord, of loop: LoopInfo) {
        busy.iteration(it, of: loop)
        starts.count(loop.key, at: it.begin)
    }
    func sleep(_ s: SleepRecord, of key: LoopKey) { busy.sleep(s, of: key) }
}
