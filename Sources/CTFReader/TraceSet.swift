import Foundation
/// Several traces opened together, with a time-ordered merge of all their streams.
public final class CTFTraceSet: @unchecked Sendable {
    /// The opened traces.
    public let traces: [CTFTrace]
    /// Every stream of every trace, in the order that breaks ties between equal timestamps in every merge
    /// (``makeMergedIterator()``, ``forEachInTimeOrder(extract:_:)``): babeltrace2 2.0's muxer's
    /// (`common_muxing_compare_messages`) — traces with a UUID before those without, by UUID, then by path;
    /// within a trace by stream class id, then by babeltrace2's stream id (``CTFStream/babeltraceStreamID``),
    /// then by path (the stream's name there). See docs/reader.md, "Equal timestamps".
    public let streams: [CTFStream]

    /// Discovers and opens every trace below `paths`.
    /// - Throws: ``CTFReaderError/noTrace(paths:)`` when none is found, or the first error opening one.
    public init(paths: [String]) throws {
        let dirs = try discoverCTFTraces(in: paths)
        guard !dirs.isEmpty else { throw CTFReaderError.noTrace(paths: paths) }
        traces = try dirs.map { try CTFTrace(directory: $0) }
        streams = CTFTraceSet.mergeOrder(traces)
    }

    /// The streams of `traces` in babeltrace2's order for equal timestamps (``streams``).
    static func mergeOrder(_ traces: [CTFTrace]) -> [CTFStream] {
        func uuidBytes(_ t: CTFTrace) -> [UInt8]? {
            guard let u = t.metadata.uuid, let v = UUID(uuidString: u) else { return nil }
            return withUnsafeBytes(of: v.uuid) { Array($0) }
        }
        let ordered = traces.enumerated().sorted { a, b in
            let ua = uuidBytes(a.element), ub = uuidBytes(b.element)
            switch (ua, ub) {
            case (nil, nil): return a.offset < b.offset
            case (nil, _): return false
            case (_, nil): return true
            case (let x?, let y?): return x == y ? a.offset < b.offset : x.lexicographicallyPrecedes(y)
            }
        }.map(\.element)
        return ordered.flatMap { t in
            t.streams.enumerated().sorted { a, b in
                let x = a.element, y = b.element
                if x.streamClassID != y.streamClassID { return x.streamClassID < y.streamClassID }
                if x.babeltraceStreamID != y.babeltraceStreamID { return x.babeltraceStreamID < y.babeltraceStreamID }
                return a.offset < b.offset
            }.map(\.element)
        }
    }

    /// An iterator over the events of all streams in timestamp order.
    public func makeMergedIterator() -> CTFMergedIterator { CTFMergedIterator(streams: streams) }

    /// An iterator merging only `streams` (e.g. one trace, or a partition of the streams for parallel analysis:
    /// each partition on its own thread with its own iterator). A stream must be consumed by one iterator at a time.
    public func makeMergedIterator(over streams: [CTFStream]) -> CTFMergedIterator { CTFMergedIterator(streams: streams) }

    /// An iterator over the events at or after `nanoseconds` (since the epoch) of all streams in timestamp order;
    /// each stream seeks with LTTng's packet index files where present.
    public func makeMergedIterator(fromNanoseconds start: Int64) throws -> CTFMergedIterator {
        for s in streams { try s.seek(toNanoseconds: start) }
        return CTFMergedIterator(streams: streams)
    }

    /// Losses reported by all streams so far.
    public var losses: [CTFLoss] { streams.flatMap(\.losses) }
    /// Warnings about the traces' metadata, then those reported by all streams so far.
    public var warnings: [CTFWarning] { traces.flatMap(\.warnings) + streams.flatMap(\.warnings) }
}

/// Owns the merge heap's raw storage.
@usableFromInline
final class MergeStorage {
    @usableFromInline let heap: UnsafeMutablePointer<Int>
    /// [0] = heap count, [1] = last (index of the stream holding the current event), [2] = started flag,
    /// [3] = the earliest of the other streams in the heap (-1: none), [4] = its timestamp (see `noteOther()`).
    @usableFromInline let scalars: UnsafeMutablePointer<Int>
    @usableFromInline let states: UnsafeMutablePointer<UnsafeMutablePointer<CTFStream.HotState>>
    @usableFromInline let fast: UnsafeMutablePointer<Unmanaged<CTFStream>>
    init(_ streams: [CTFStream]) {
        let n = max(1, streams.count)
        heap = .allocate(capacity: n)
        scalars = .allocate(capacity: 5)
        scalars.initialize(repeating: 0, count: 5)
        scalars[1] = -1
        scalars[3] = -1
        states = .allocate(capacity: n)
        fast = .allocate(capacity: n)
        for (i, s) in streams.enumerated() {
            (states + i).initialize(to: s.hot)
            (fast + i).initialize(to: Unmanaged.passUnretained(s))
        }
    }
    deinit {
        heap.deallocate(); scalars.deallocate(); states.deallocate(); fast.deallocate()
    }
}

/// Merges streams into one time-ordered event sequence with a binary heap keyed by (timestamp, stream order).
///
/// After ``next()`` returns true, ``current`` is the stream positioned on the event; read it before the next call.
public struct CTFMergedIterator {
    @usableFromInline let streams: [CTFStream]
    @usableFromInline let st: MergeStorage

    /// The stream holding the current event.
    public var current: CTFStream { streams[st.scalars[1]] }
    /// The current event's timestamp in nanoseconds since the epoch (cheaper than `current.timestamp`).
    public var currentTimestamp: Int64 { st.states[st.scalars[1]].pointee.timestamp }
    /// Index (into the trace set's `streams`) of the stream holding the current event.
    public var currentStreamIndex: Int { st.scalars[1] }
    /// Calls `body` with the stream holding the current event without retaining it.
    @inline(__always)
    public func withCurrent<R>(_ body: (CTFStream) throws -> R) rethrows -> R {
        try st.fast[st.scalars[1]]._withUnsafeGuaranteedRef(body)
    }

    init(streams: [CTFStream]) {
        self.streams = streams
        self.st = MergeStorage(streams)
    }

    @inlinable @inline(__always)
    func less(_ a: Int, _ b: Int) -> Bool {
        let ta = st.states[a].pointee.timestamp, tb = st.states[b].pointee.timestamp
        return ta < tb || (ta == tb && a < b)
    }

    @inlinable @inline(__always)
    func siftDown(_ start: Int) {
        let heap = st.heap
        let n = st.scalars[0]
        var i = start
        while true {
            let l = 2 * i + 1
            if l >= n { return }
            var m = l
            if l + 1 < n && less(heap[l + 1], heap[l]) { m = l + 1 }
            if less(heap[m], heap[i]) { let t = heap[m]; heap[m] = heap[i]; heap[i] = t; i = m } else { return }
        }
    }

    /// Records the earliest stream in the heap after its top (the smaller child of the root) and its
    /// timestamp: while the top stream's next event comes before it, ``next()`` leaves the heap alone.
    /// Valid until the heap changes: every path that changes it, or that returns with the top changed,
    /// calls this.
    @inlinable @inline(__always)
    func noteOther() {
        let sc = st.scalars, heap = st.heap
        let n = sc[0]
        var o = -1
        if n > 1 {
            o = heap[1]
            if n > 2 && less(heap[2], o) { o = heap[2] }
        }
        sc[3] = o
        sc[4] = o >= 0 ? Int(truncatingIfNeeded: st.states[o].pointee.timestamp) : 0
    }

    /// The stream at the top of the heap has ended: off the heap.
    @inlinable @inline(__always)
    func dropTop() {
        let sc = st.scalars, heap = st.heap
        sc[0] -= 1
        heap[0] = heap[sc[0]]
        if sc[0] > 1 { siftDown(0) }
    }

    @usableFromInline func siftUp(_ start: Int) {
        let heap = st.heap
        var i = start
        while i > 0 {
            let p = (i - 1) / 2
            if less(heap[i], heap[p]) { let t = heap[p]; heap[p] = heap[i]; heap[i] = t; i = p } else { return }
        }
    }

    /// Calls `body` with each event's stream index and stream, in time order, until the streams are
    /// exhausted or `body` returns false. The same events as ``next()``; the loop runs inside the
    /// iterator, so the per-event path retains neither the iterator's storage nor the stream (`body`
    /// gets it +0: the trace set owns its streams for its whole life).
    ///
    /// The stream that gave an event usually gives the next one too (LTTng's per-CPU streams come in
    /// runs): after advancing it, its next timestamp is compared with the earliest of the others
    /// (kept while the top stream does not change), and the heap is touched only when another
    /// stream comes first.
    ///
    /// Inlinable, so the loop is specialized for the caller's `body` and the per-event work is one
    /// function, not a call through a closure context per event.
    @inlinable @inline(__always)
    public mutating func forEachEvent(_ body: (Int, CTFStream) throws -> Bool) throws {
        let st = self.st
        // The loop below moves the heap without `next()`'s note of the earliest other stream.
        defer { noteOther() }
        try withExtendedLifetime((st, streams)) {
            guard try next() else { return }
            let sc = st.scalars, heap = st.heap, states = st.states, fast = st.fast
            while true {
                let i = sc[1]
                // The earliest of the other streams' events: the smaller child of the root.
                let n = sc[0]
                var other = -1
                if n > 1 {
                    other = heap[1]
                    if n > 2 && less(heap[2], other) { other = heap[2] }
                }
                let otherTs = other >= 0 ? states[other].pointee.timestamp : .max
                // Events of stream i while they come before every other stream's next one.
                while true {
                    if try !fast[i]._withUnsafeGuaranteedRef({ try body(i, $0) }) { return }
                    guard try fast[i]._withUnsafeGuaranteedRef({ try $0.next() }) else {
                        dropTop()
                        guard sc[0] > 0 else { sc[1] = -1; return }
                        sc[1] = heap[0]
                        break
                    }
                    let t = states[i].pointee.timestamp
                    if other >= 0 && (t > otherTs || (t == otherTs && other < i)) {
                        siftDown(0)
                        sc[1] = heap[0]
                        break
                    }
                }
            }
        }
    }

    /// Advances to the next event in time order. Returns false when every stream is exhausted.
    ///
    /// The stream that gave the previous event is advanced; while its next event still comes before
    /// the earliest of the others (noted in `scalars[3...4]` when the top changed), the heap is not
    /// touched: runs of one stream's events cost one comparison each.
    @inlinable @inline(__always)
    public mutating func next() throws -> Bool {
        let sc = st.scalars
        let heap = st.heap
        if sc[2] == 0 {
            sc[2] = 1
            for i in streams.indices where try streams[i].next() {
                heap[sc[0]] = i
                sc[0] += 1
                siftUp(sc[0] - 1)
            }
        } else {
            let i = sc[1]
            guard i >= 0 else { return false }
            // The previous event's stream is at the top of the heap: advance it and restore the heap.
            if try st.fast[i]._withUnsafeGuaranteedRef({ try $0.next() }) {
                let other = sc[3]
                if other < 0 { return true }
                let t = st.states[i].pointee.timestamp, ot = Int64(truncatingIfNeeded: sc[4])
                if t < ot || (t == ot && i < other) { return true }
                if sc[0] == 2 {
                    // Two streams: they swap places, the other's event is next.
                    heap[0] = other; heap[1] = i
                    sc[1] = other; sc[3] = i; sc[4] = Int(truncatingIfNeeded: t)
                    return true
                }
                siftDown(0)
            } else {
                dropTop()
            }
        }
        guard sc[0] > 0 else { sc[1] = -1; return false }
        sc[1] = heap[0]
        noteOther()
        return true
    }
}
