/// Several traces opened together, with a time-ordered merge of all their streams.
public final class CTFTraceSet: @unchecked Sendable {
    /// The opened traces.
    public let traces: [CTFTrace]
    /// Every stream of every trace.
    public var streams: [CTFStream] { traces.flatMap(\.streams) }

    /// Discovers and opens every trace below `paths`.
    /// - Throws: ``CTFReaderError/noTrace(paths:)`` when none is found, or the first error opening one.
    public init(paths: [String]) throws {
        let dirs = try discoverCTFTraces(in: paths)
        guard !dirs.isEmpty else { throw CTFReaderError.noTrace(paths: paths) }
        traces = try dirs.map { try CTFTrace(directory: $0) }
    }

    /// An iterator over the events of all streams in timestamp order.
    public func makeMergedIterator() -> CTFMergedIterator { CTFMergedIterator(streams: streams) }

    /// Losses reported by all streams so far.
    public var losses: [CTFLoss] { streams.flatMap(\.losses) }
    /// Warnings reported by all streams so far.
    public var warnings: [CTFWarning] { streams.flatMap(\.warnings) }
}

/// Merges streams into one time-ordered event sequence with a binary heap keyed by (timestamp, stream order).
///
/// After ``next()`` returns true, ``current`` is the stream positioned on the event; read it before the next call.
public struct CTFMergedIterator {
    private let streams: [CTFStream]
    private var heap: [Int] = []
    private var started = false
    private var last = -1
    /// The stream holding the current event.
    public var current: CTFStream { streams[last] }

    init(streams: [CTFStream]) { self.streams = streams }

    @inline(__always)
    private func less(_ a: Int, _ b: Int) -> Bool {
        let ta = streams[a].timestamp, tb = streams[b].timestamp
        return ta < tb || (ta == tb && a < b)
    }

    private mutating func siftDown(_ start: Int) {
        var i = start
        let n = heap.count
        while true {
            let l = 2 * i + 1
            if l >= n { return }
            var m = l
            if l + 1 < n && less(heap[l + 1], heap[l]) { m = l + 1 }
            if less(heap[m], heap[i]) { heap.swapAt(m, i); i = m } else { return }
        }
    }

    private mutating func siftUp(_ start: Int) {
        var i = start
        while i > 0 {
            let p = (i - 1) / 2
            if less(heap[i], heap[p]) { heap.swapAt(i, p); i = p } else { return }
        }
    }

    /// Advances to the next event in time order. Returns false when every stream is exhausted.
    public mutating func next() throws -> Bool {
        if !started {
            started = true
            for i in streams.indices where try streams[i].next() {
                heap.append(i)
                siftUp(heap.count - 1)
            }
        } else if last >= 0 {
            // The previous event's stream is at the top of the heap: advance it and restore the heap.
            if try streams[last].next() {
                siftDown(0)
            } else {
                heap[0] = heap[heap.count - 1]
                heap.removeLast()
                if !heap.isEmpty { siftDown(0) }
            }
        }
        guard let top = heap.first else { last = -1; return false }
        last = top
        return true
    }
}
