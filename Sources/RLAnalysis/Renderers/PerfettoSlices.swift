/// What the Perfetto export holds of one loop until its slices can be written in order
/// (``PerfettoTraceSink``): the loop model hands over a callout when it ends and an iteration when
/// it ends, after everything inside it, but Perfetto's trace processor sorts a track's
/// `TYPE_SLICE_BEGIN`/`TYPE_SLICE_END` events by time and keeps the file's order among equal
/// times — so an outer slice's begin written after an inner one's at the same instant (a window's
/// edge clips both to it) would be nested inside it. Completed slices wait here until no slice that
/// may begin with them is still open — the iteration holding them ends, or, in a nested run, any of
/// its iterations (what began after the run's entry) — and are then written outer first.
struct PendingSlice {
    /// Begin and end (ns, the trace's clock).
    var begin: Int64, end: Int64
    /// Order of completion: among slices with the same begin and end, the later one encloses.
    var seq: UInt64
    /// The interned event name.
    var name: UInt64
    /// The interned category (``PerfettoTraceSink/Category``).
    var category: UInt8
    /// Which arguments `a` and `b` are (``Shape``).
    var shape: Shape
    var a: Int64, b: Int64

    /// What a slice is, for its arguments: a callout (item, detail), an iteration (number, busy
    /// ns), a sleep (fd), a run (depth, result).
    enum Shape: UInt8 { case callout, iteration, sleep, run }
}

/// One loop's track and what waits on it.
final class PerfettoLoopTrack {
    let key: LoopKey
    /// The thread track's uuid (and its process's).
    let uuid: UInt64, processUUID: UInt64
    /// Counter tracks (busy %, iterations/s), made at the end.
    var busyUUID: UInt64 = 0, rateUUID: UInt64 = 0
    /// Completed slices not written yet.
    var pending: [PendingSlice] = []
    /// Runs entered and not exited: when, and the mode.
    var openRuns: [(begin: Int64, mode: String, depth: Int)] = []
    /// Iterations busy past the hang threshold (the report's rule).
    var hangs: [HangReport] = []

    init(key: LoopKey, uuid: UInt64, processUUID: UInt64) {
        self.key = key; self.uuid = uuid; self.processUUID = processUUID
        pending.reserveCapacity(64)
    }
}

extension PerfettoTraceSink {
    /// Writes the slices of `track` that `take` selects, nested (outer first at equal begins), and
    /// keeps the others waiting.
    func flush(_ track: PerfettoLoopTrack, where take: (PendingSlice) -> Bool) {
        group.removeAll(keepingCapacity: true)
        var kept = 0
        for i in track.pending.indices {
            let s = track.pending[i]
            if take(s) { group.append(s) } else { track.pending[kept] = s; kept += 1 }
        }
        track.pending.removeLast(track.pending.count - kept)
        guard !group.isEmpty else { return }
        // Begin first; at equal begins the longer (then the later completed) encloses.
        let before: (PendingSlice, PendingSlice) -> Bool = { x, y in
            x.begin != y.begin ? x.begin < y.begin : (x.end != y.end ? x.end > y.end : x.seq > y.seq)
        }
        if group.count <= 32 {
            // Nearly in order already (completion order): an insertion sort allocates nothing.
            for i in 1..<max(1, group.count) {
                let s = group[i]
                var j = i
                while j > 0 && before(s, group[j - 1]) { group[j] = group[j - 1]; j -= 1 }
                group[j] = s
            }
        } else {
            group.sort(by: before)
        }
        stack.removeAll(keepingCapacity: true)
        for var s in group {
            var poppedEnd = Int64.min
            while let top = stack.last, !(top.begin <= s.begin && s.end <= top.end) {
                writeSliceEnd(top.end, track: track.uuid)
                poppedEnd = top.end
                stack.removeLast()
            }
            // A slice that overlaps the one before it without nesting (a damaged trace) starts
            // where that one ended, so the track stays strictly nested.
            if s.begin < poppedEnd { s.begin = poppedEnd; if s.end < s.begin { s.end = s.begin } }
            writeSliceBegin(s, track: track.uuid)
            stack.append(s)
        }
        while let top = stack.popLast() { writeSliceEnd(top.end, track: track.uuid) }
    }

    /// A slice's begin: `TYPE_SLICE_BEGIN` with its name, category and arguments.
    func writeSliceBegin(_ s: PendingSlice, track: UInt64) {
        startPacket(ts: s.begin)
        internName(s.name)
        let e = w.open(Field.trackEvent)
        w.uint(Field.eventType, 1)
        w.uint(Field.trackUUID, track)
        w.uint(Field.categoryIIDs, UInt64(s.category))
        w.uint(Field.nameIID, s.name)
        switch s.shape {
        case .callout:
            annotation(.item, uint: UInt64(bitPattern: s.a))
            if s.b != 0 { annotation(.detail, int: s.b) }
        case .iteration:
            annotation(.iteration, uint: UInt64(bitPattern: s.a))
            annotation(.busyNs, int: s.b)
        case .sleep:
            if s.a >= 0 { annotation(.fd, int: s.a) }
        case .run:
            annotation(.depth, int: s.a)
            annotation(.result, int: s.b)
        }
        w.close(e)
        endPacket()
    }

    /// A slice's end: `TYPE_SLICE_END` on its track. (Half the packets: on a track whose uuid
    /// takes one byte, written straight to the output — the same bytes as through the writer.)
    func writeSliceEnd(_ ts: Int64, track: UInt64) {
        if track < 0x80 && PerfettoTraceSink.sequenceID < 0x80 {
            let t = UInt64(max(0, ts &- origin))
            let body = 1 &+ ProtobufWriter.varintSize(t) &+ 2 &+ 2 &+ 2 &+ 4
            out.reserving(body &+ 2) { c in
                c.byte(PerfettoTraceSink.Field.packet); c.byte(UInt8(truncatingIfNeeded: body))
                c.byte(0x40)                                            // timestamp (8), varint
                var v = t
                while v >= 0x80 { c.byte(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
                c.byte(UInt8(truncatingIfNeeded: v))
                c.byte(0x50); c.byte(UInt8(truncatingIfNeeded: PerfettoTraceSink.sequenceID))   // trusted_packet_sequence_id (10)
                c.byte(0x68); c.byte(2)                                 // sequence_flags (13): SEQ_NEEDS_INCREMENTAL_STATE
                c.byte(0x5A); c.byte(4)                                 // track_event (11), 4 bytes
                c.byte(0x48); c.byte(2)                                 // type (9): TYPE_SLICE_END
                c.byte(0x58); c.byte(UInt8(truncatingIfNeeded: track))  // track_uuid (11)
            }
            return
        }
        startPacket(ts: ts)
        let e = w.open(Field.trackEvent)
        w.uint(Field.eventType, 2)
        w.uint(Field.trackUUID, track)
        w.close(e)
        endPacket()
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
        starts.iteration(IterationRecord(key: it.key, number: it.number, begin: it.begin, end: it.begin &+ 1, depth: 0, mode: 0), of: loop)
    }
    func sleep(_ s: SleepRecord, of key: LoopKey) { busy.sleep(s, of: key) }
}
