/// Requests the loop model holds until they are answered — a loop's wake-up requests until its
/// next wake, a source's signals until its next perform — each becoming a latency sample and a
/// flow then. A burst holds many (a flood of waking `CFRunLoopPerformBlock`s: one wake-up request
/// per block before the loop wakes once), so each is packed: its time as the difference from the
/// one before (zigzag varint: 2–3 bytes for requests microseconds apart) and its thread as an index
/// into the few threads that asked (one byte), against 16–24 bytes a request as a tuple in an
/// array (docs/benchmarks.md, "The bounded-memory test"). Lossless: ``forEach(_:)`` gives back
/// every request in order (`PendingRequestsTests`).
struct PendingRequests {
    /// Requests held.
    private(set) var count = 0
    /// Per request: zigzag varint of its time minus the one before's, varint index into `threads`.
    private var bytes: [UInt8] = []
    /// The threads that asked, in order of first request: found by a linear search while there
    /// are few, through `threadIndex` beyond (a damaged trace may give every request a thread).
    private var threads: [Int64] = []
    private var threadIndex: [Int64: Int] = [:]
    static let searchedThreads = 16
    private var lastTs: Int64 = 0
    private var lastThread = 0
    /// The `signal_seq` of the last request (0: none), for a signal delivered once per loop of its
    /// source (LoopModel's `source0_signalled`).
    private(set) var lastSeq: Int64 = 0
    /// Above this many bytes the buffer is not kept for the next requests once answered.
    static let keptCapacity = 4096

    /// Whether none is held.
    var isEmpty: Bool { count == 0 }
    /// Bytes the requests held take.
    var byteCount: Int { bytes.count }

    /// The thread of the only request while just one is held: it is then kept here, with its
    /// time in `lastTs`, and nothing is allocated — a source signalled once per perform, the usual
    /// case, costs no buffer (two arrays allocated per signal and freed at the perform: 74 000
    /// frees of about 250 instructions each on the pipeline benchmark's trace; docs/benchmarks.md,
    /// "The Perfetto export: field order").
    private var onlyThread: Int64 = 0

    /// Holds a request made at `ts` by thread `tid` (`seq`: its `signal_seq`, 0 when none).
    mutating func append(ts: Int64, tid: Int64, seq: Int64 = 0) {
        if count == 0 && bytes.isEmpty {
            lastTs = ts; onlyThread = tid; lastSeq = seq; count = 1
            return
        }
        if count == 1 && bytes.isEmpty {
            // The second request: the first goes into the buffer (its time from 0).
            let first = lastTs
            lastTs = 0
            count = 0
            packed(ts: first, tid: onlyThread)
        }
        packed(ts: ts, tid: tid)
        lastSeq = seq
    }

    /// Appends a request to the buffer.
    private mutating func packed(ts: Int64, tid: Int64) {
        let d = ts &- lastTs
        ProtobufWriter.appendVarint(UInt64(bitPattern: (d << 1) ^ (d >> 63)), to: &bytes)
        if lastThread >= threads.count || threads[lastThread] != tid { lastThread = index(of: tid) }
        ProtobufWriter.appendVarint(UInt64(lastThread), to: &bytes)
        lastTs = ts
        count &+= 1
    }

    /// The index of thread `tid` in `threads` (added the first time).
    private mutating func index(of tid: Int64) -> Int {
        if threads.count <= Self.searchedThreads, let i = threads.firstIndex(of: tid) { return i }
        if threads.count > Self.searchedThreads, let i = threadIndex[tid] { return i }
        threads.append(tid)
        if threads.count > Self.searchedThreads {
            if threadIndex.isEmpty { for (i, t) in threads.enumerated() { threadIndex[t] = i } } else { threadIndex[tid] = threads.count - 1 }
        }
        return threads.count - 1
    }

    /// Every request held, in the order made: its time and thread.
    func forEach(_ body: (_ ts: Int64, _ tid: Int64) -> Void) {
        if count == 1 && bytes.isEmpty { return body(lastTs, onlyThread) }
        bytes.withUnsafeBufferPointer { b in
            var at = 0, ts: Int64 = 0
            for _ in 0..<count {
                let z = Self.readVarint(b, &at)
                ts &+= Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
                let thread = Int(truncatingIfNeeded: Self.readVarint(b, &at))
                body(ts, threads[thread])
            }
        }
    }

    /// Forgets every request (a large buffer's memory too).
    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: bytes.capacity <= Self.keptCapacity)
        threads.removeAll(keepingCapacity: threads.count <= Self.searchedThreads)
        threadIndex.removeAll()
        count = 0; lastTs = 0; lastThread = 0; lastSeq = 0; onlyThread = 0
    }

    @inline(__always)
    private static func readVarint(_ b: UnsafeBufferPointer<UInt8>, _ at: inout Int) -> UInt64 {
        var v: UInt64 = 0, shift: UInt64 = 0
        while true {
            let x = b[at]
            at &+= 1
            v |= UInt64(x & 0x7F) << shift
            if x < 0x80 { return v }
            shift &+= 7
        }
    }
}
