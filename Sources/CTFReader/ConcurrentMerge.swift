import Foundation

// Decoding the streams of a trace set on several threads, delivered in time order on the caller's.
//
// LTTng writes one stream per CPU (or per thread), each already in time order: the streams can be
// decoded side by side, and only the merge — comparing the next timestamps of the streams — needs
// one thread. A stream's thread decodes its events and keeps, per event, the timestamp and what
// the caller's `extract` takes from it, in chunks; the caller's thread merges the chunks in the
// order of ``CTFMergedIterator`` (timestamp, then stream index). With a core to spare for the
// merge (more cores than streams) every stream has a thread; otherwise the caller's thread also
// decodes one stream itself, a chunk when it needs one — the one with the fewest bytes left, as
// it already does the merge (and another stream's thread releases that stream's consumed pages
// for it, and decodes its next chunks when its own ring is full: the merge is then the one behind).
// Memory stays bounded: each stream has a ring of a few chunks of at
// most 64 KiB, and its thread waits when they are all full.
//
// Handing a chunk over costs a wake-up when the other side sleeps (microseconds, and a context
// switch): a sleeping decoder is woken once half its ring is free, a sleeping merge once half of
// it is full (or the stream ended), so that each wake-up moves several chunks.

extension CTFTraceSet {
    /// Chunks per stream (decoded ahead of the merge at most).
    @usableFromInline static let concurrentRing = 8
    /// Bytes of a chunk's storage (timestamps and values): chunks of `T`s of any size stay small.
    @usableFromInline static let concurrentChunkBytes = 64 << 10

    /// Events per chunk for values of type `T`: 64 KiB of storage, between 256 and 4096 events.
    @inlinable
    static func concurrentChunk<T>(for: T.Type) -> Int {
        min(4096, max(256, concurrentChunkBytes / (8 + MemoryLayout<T>.stride)))
    }

    /// Whether the calling thread decodes a stream itself: when there is no core to spare for the
    /// merge (no more cores than streams).
    @usableFromInline static func concurrentInline(streams: Int) -> Bool {
        ProcessInfo.processInfo.activeProcessorCount <= streams
    }

    /// The stream the calling thread decodes itself: the one with the fewest bytes left (it also
    /// merges every stream's events, so it takes the smallest share of the decoding).
    @usableFromInline static func inlineStream(_ streams: [CTFStream]) -> Int {
        var best = 0, bestLeft = Int.max
        for (i, s) in streams.enumerated() {
            let left = s.fileSize - min(s.fileSize, s.hot.pointee.pos >> 3)
            if left < bestLeft { best = i; bestLeft = left }
        }
        return best
    }

    /// Calls `body` with `extract`'s value of every event of every stream, in time order — the
    /// order of ``makeMergedIterator()`` — on the calling thread, while the streams are decoded on
    /// threads of their own (one per stream; with no more cores than streams, one per stream but
    /// one, which the calling thread decodes; with one stream, or more than 64, everything runs on
    /// the calling thread). `extract` runs on a
    /// stream's thread with that stream positioned on the event: it must touch only the stream it
    /// is given.
    ///
    /// Events read before a reader error are delivered, then the error is thrown (when the merge
    /// needs the failing stream's next event, as with the merged iterator); an error `body` throws
    /// stops the decoding threads and is rethrown.
    ///
    /// Inlinable, so that the per-event work is specialized for the caller's `T`.
    @inlinable @inline(__always)
    public func forEachInTimeOrder<T>(extract: @escaping @Sendable (CTFStream) throws -> T, _ body: (T) throws -> Void) throws {
        try forEachInTimeOrder(chunk: CTFTraceSet.concurrentChunk(for: T.self), extract: extract, body)
    }

    /// ``forEachInTimeOrder(extract:_:)`` for the timestamps alone: `body` gets every event's
    /// ``CTFStream/timestamp`` (ns since the epoch), in time order, with no per-event call on the
    /// decoding threads (the merge key is all that is kept) — for counts, rates and histograms of
    /// event times.
    @inlinable @inline(__always)
    public func forEachTimestampInTimeOrder(_ body: (Int64) throws -> Void) throws {
        try forEachTimestampInTimeOrder(chunk: CTFTraceSet.concurrentChunk(for: Void.self), body)
    }

    /// ``forEachTimestampInTimeOrder(_:)`` with chunks of `chunk` events.
    @inlinable @inline(__always)
    func forEachTimestampInTimeOrder(chunk: Int, inline: Bool? = nil, _ body: (Int64) throws -> Void) throws {
        try mergeInTimeOrder(chunk: chunk, inline: inline, extract: nil) { (ts: Int64, _: Void) in try body(ts) }
    }

    /// ``forEachInTimeOrder(extract:_:)`` with chunks of `chunk` events (small ones in tests, to
    /// cross many chunk boundaries); `inline`: whether the calling thread decodes a stream itself
    /// (nil: ``concurrentInline(streams:)`` decides).
    @inlinable @inline(__always)
    func forEachInTimeOrder<T>(chunk: Int, inline: Bool? = nil,
                               extract: @escaping @Sendable (CTFStream) throws -> T, _ body: (T) throws -> Void) throws {
        try mergeInTimeOrder(chunk: chunk, inline: inline, extract: extract) { _, v in try body(v) }
    }

    /// The merge of both: `body` gets each event's timestamp and `extract`'s value (nil `extract`:
    /// `T` is `Void`, and nothing is called on the decoding threads).
    @inlinable @inline(__always)
    func mergeInTimeOrder<T>(chunk: Int, inline: Bool?, extract: (@Sendable (CTFStream) throws -> T)?,
                             _ body: (Int64, T) throws -> Void) throws {
        let streams = self.streams
        if streams.count <= 1 || streams.count > 64 {
            var it = makeMergedIterator()
            while try it.next() {
                if let extract { try body(it.currentTimestamp, try it.withCurrent(extract)) }
                else { try body(it.currentTimestamp, () as! T) }
            }
            return
        }
        let queues = streams.map { StreamQueue<T>(stream: $0, chunk: chunk, extract: extract) }
        let inlined = inline ?? CTFTraceSet.concurrentInline(streams: streams.count) ? CTFTraceSet.inlineStream(streams) : -1
        // The calling thread merges every event and decodes a stream: another stream's thread
        // releases that stream's consumed pages for it (`madvise` and the TLB flushes it makes the
        // kernel do), which moves work to the lighter thread (the longer thread's share of a run's
        // samples: 54 → 52 %; docs/benchmarks.md).
        let releaser = inlined >= 0 ? queues.indices.first { $0 != inlined } : nil
        if let r = releaser {
            streams[inlined].handOffReleases()
            queues[r].releases = streams[inlined]
            queues[r].stealsFrom = queues[inlined]
        }
        for (i, q) in queues.enumerated() { q.start(inline: i == inlined) }
        defer {
            for q in queues { q.cancel() }
            // (The threads have stopped: the calling thread releases the rest itself again.)
            if releaser != nil { streams[inlined].takeBackReleases() }
        }
        // A head per stream: the chunk being merged (kept in `chunks`, touched only to change
        // chunks) and, in raw memory, its storage and the position in it, so that the per-event
        // loop retains nothing and checks no exclusivity. A stream that has ended has no chunk.
        // (A chunk is handed over full, or as the stream's last: an empty one is last.)
        typealias Head = MergeHead<T>
        let k = queues.count
        var chunks: [StreamQueue<T>.Chunk?] = Array(repeating: nil, count: k)
        let heads = UnsafeMutablePointer<Head>.allocate(capacity: k)
        heads.initialize(repeating: Head(times: nil, values: nil, pos: 0, count: 0), count: k)
        defer { heads.deallocate() }
        /// Streams with a head.
        var live = 0
        /// Makes the stream's next chunk its head (no head at its end); throws its error once its
        /// events are all delivered.
        func advance(_ i: Int) throws {
            if let old = chunks[i] {
                let last = old.last, error = old.error
                chunks[i] = nil
                heads[i].times = nil
                live -= 1
                queues[i].giveBack(old)
                if last { if let error { throw error }; return }
            }
            guard let c = queues[i].take() else { return }
            if c.count == 0 {
                let error = c.error
                queues[i].giveBack(c)
                if let error { throw error }
                return
            }
            chunks[i] = c
            live += 1
            heads[i] = Head(times: c.timestamps, values: c.values, pos: 0, count: c.count)
        }
        for i in 0..<k { try advance(i) }
        // `best`: the earliest head (ties: the lower stream index, as the merged iterator);
        // `limit`, `limitIndex`: the earliest of the others. With more than two streams, the run
        // of `best`'s events that come before `limit` goes at once, then the heads are scanned.
        var best = -1, bestTs = Int64.max
        var limit = Int64.max, limitIndex = Int.max
        @inline(__always) func scan() {
            best = -1; bestTs = .max; limit = .max; limitIndex = .max
            for i in 0..<k {
                guard let times = heads[i].times else { continue }
                let t = times[heads[i].pos]
                if best < 0 || t < bestTs {
                    if best >= 0 { limit = bestTs; limitIndex = best }
                    best = i; bestTs = t
                } else if t < limit {
                    limit = t; limitIndex = i
                }
            }
        }
        scan()
        while best >= 0 {
            if live == 2 {
                // Two streams: one comparison per event, which picks the value and advances one
                // position. When their events interleave finely (runs of one or two events per
                // stream, as LTTng's per-CPU streams of a busy process), finding each run's end and
                // the next earliest head cost ~40 instructions per event; this loop ~20 (with the
                // caller's body). `steps` events fit both chunks, so the loop checks no bounds; the
                // chunk that ran out ends on its last step.
                let a = min(best, limitIndex), b = max(best, limitIndex)
                let ha = heads[a], hb = heads[b]
                let ta = ha.times!, va = ha.values!, tb = hb.times!, vb = hb.values!
                let na = ha.count, nb = hb.count
                var i = ha.pos, j = hb.pos
                while true {
                    var steps = min(na &- i, nb &- j)
                    if steps == 0 { break }
                    while steps > 0 {
                        // Ties go to `a`, the lower stream index. `i < na` and `j < nb` hold
                        // (steps ≤ both remainders): both loads are inside the chunks.
                        let x = ta[i], y = tb[j]
                        let takeA = x <= y
                        let v = takeA ? va + i : vb + j
                        i &+= takeA ? 1 : 0
                        j &+= takeA ? 0 : 1
                        steps &-= 1
                        try body(takeA ? x : y, v.pointee)
                    }
                }
                heads[a].pos = i; heads[b].pos = j
                if i == na { try advance(a) } else { try advance(b) }
                scan()
                continue
            }
            let h = heads[best]
            let times = h.times!, values = h.values!
            var p = h.pos
            let n = h.count
            // A tie with `limit` goes to the lower stream index.
            let stop = limitIndex < best ? limit : limit &+ 1
            if stop == .min {
                // (limit == Int64.max with limitIndex > best: every remaining event of `best` goes.)
                while p < n { try body(times[p], values[p]); p &+= 1 }
            } else {
                while p < n {
                    let t = times[p]
                    if t >= stop { break }
                    try body(t, values[p])
                    p &+= 1
                }
            }
            heads[best].pos = p
            if p == n { try advance(best) }
            scan()
        }
    }
}

/// A stream's head in ``CTFTraceSet/forEachInTimeOrder(extract:_:)``'s merge: its chunk's storage
/// (nil once the stream ended) and the position in it.
@usableFromInline
struct MergeHead<T> {
    @usableFromInline var times: UnsafeMutablePointer<Int64>?
    @usableFromInline var values: UnsafeMutablePointer<T>?
    @usableFromInline var pos: Int
    @usableFromInline var count: Int
    @inlinable init(times: UnsafeMutablePointer<Int64>?, values: UnsafeMutablePointer<T>?, pos: Int, count: Int) {
        self.times = times; self.values = values; self.pos = pos; self.count = count
    }
}

/// One stream's decoding thread and its ring of chunks.
@usableFromInline
final class StreamQueue<T>: @unchecked Sendable {
    /// A chunk's storage is raw memory read through `let` pointers: class properties read per
    /// event would pay a dynamic exclusivity check each in the (specialized) caller's module.
    @usableFromInline
    final class Chunk {
        @usableFromInline let timestamps: UnsafeMutablePointer<Int64>
        /// `values[0..<count]` are initialized.
        @usableFromInline let values: UnsafeMutablePointer<T>
        @usableFromInline var count = 0
        /// The stream's last chunk (it ended, or failed: `error`).
        @usableFromInline var last = false
        @usableFromInline var error: Error?
        @usableFromInline init(_ size: Int) { timestamps = .allocate(capacity: size); values = .allocate(capacity: size) }
        deinit { values.deinitialize(count: count); values.deallocate(); timestamps.deallocate() }
    }
    @usableFromInline let stream: CTFStream
    /// nil: `T` is `Void` (timestamps only), nothing to call per event.
    @usableFromInline let extract: ((CTFStream) throws -> T)?
    @usableFromInline let lock = NSCondition()
    @usableFromInline var full: [Chunk] = []
    @usableFromInline var free: [Chunk]
    @usableFromInline let size: Int
    @usableFromInline var cancelled = false
    @usableFromInline var finished = false
    /// The merging thread waits in `take()`; the decoding thread waits for a free chunk in `run()`.
    @usableFromInline var takerWaits = false
    @usableFromInline var fillerWaits = false

    @inlinable
    init(stream: CTFStream, chunk: Int, extract: ((CTFStream) throws -> T)?) {
        self.stream = stream
        self.extract = extract
        size = max(1, chunk)
        free = (0..<CTFTraceSet.concurrentRing).map { _ in Chunk(max(1, chunk)) }
    }

    /// Whether the merging thread decodes this stream itself, a chunk at a time when it needs one
    /// (the first stream: with two streams on two cores, two threads do all the work).
    @usableFromInline var inline = false
    /// The stream whose consumed pages this queue's thread releases (the one the calling thread
    /// decodes), set before the thread starts.
    @usableFromInline var releases: CTFStream?
    /// The queue of the stream the calling thread decodes, whose chunks this queue's thread decodes
    /// ahead when its own ring is full (``steal()``); set before the thread starts.
    @usableFromInline var stealsFrom: StreamQueue<T>?
    /// An inline stream's decoding: held by whichever thread decodes its next chunk.
    @usableFromInline let decodeLock = NSLock()
    /// An inline stream's last chunk has been decoded (under `decodeLock`).
    @usableFromInline var decodedLast = false

    @inlinable
    func start(inline: Bool) {
        self.inline = inline
        if inline { stopped = true; return }
        let t = Thread { [self] in run() }
        t.stackSize = 1 << 22
        t.start()
    }

    /// The next chunk, in order (waits for it, or decodes it for an inline stream); nil once the
    /// last one was taken.
    @inlinable
    func take() -> Chunk? {
        if inline {
            if finished { return nil }
            // The chunks another stream's thread decoded ahead (`steal()`) come first; else this
            // thread decodes the next one. (`decodeLock` orders the two: whoever holds it decodes the
            // stream's next events, so chunks are made, and listed, in the stream's order.)
            decodeLock.lock(); defer { decodeLock.unlock() }
            lock.lock()
            if !full.isEmpty {
                let c = full.removeFirst()
                lock.unlock()
                if c.last { finished = true }
                return c
            }
            let c = free.popLast() ?? Chunk(size)
            lock.unlock()
            fill(c)
            if c.last { finished = true; decodedLast = true }
            return c
        }
        lock.lock(); defer { lock.unlock() }
        // (Woken by `run()` once half the ring is full or the stream ended; spurious wake-ups loop.)
        while full.isEmpty && !finished { takerWaits = true; lock.wait() }
        takerWaits = false
        if full.isEmpty { return nil }
        let c = full.removeFirst()
        if c.last { finished = true }
        return c
    }

    /// For the stream the calling thread decodes: decodes its next chunk on this (another stream's)
    /// thread, ahead of the merge, when no one else is decoding it and fewer than half a ring of
    /// chunks wait; false when it did not. Called by that thread when its own ring is full — when
    /// the calling thread, which also merges, is the one behind.
    @inlinable
    func steal() -> Bool {
        guard decodeLock.try() else { return false }
        defer { decodeLock.unlock() }
        if decodedLast { return false }
        lock.lock()
        guard full.count < CTFTraceSet.concurrentRing / 2, let c = free.popLast() else { lock.unlock(); return false }
        lock.unlock()
        fill(c)
        stream.chunksDecodedElsewhere &+= 1
        if c.last { decodedLast = true }
        lock.lock()
        full.append(c)
        lock.unlock()
        return true
    }

    /// Returns a merged chunk for reuse.
    @inlinable
    func giveBack(_ c: Chunk) {
        lock.lock()
        c.values.deinitialize(count: c.count)
        c.count = 0; c.last = false; c.error = nil
        free.append(c)
        // The decoding thread waits for a free chunk: woken once half the ring is free, not at
        // every chunk (a wake-up costs microseconds; the ring holds the decoded events meanwhile).
        if fillerWaits && free.count >= max(1, CTFTraceSet.concurrentRing / 2) { lock.broadcast() }
        lock.unlock()
    }

    /// Stops the thread (at its next chunk) and waits until it has stopped.
    @inlinable
    func cancel() {
        lock.lock()
        cancelled = true
        lock.broadcast()
        while !stopped { lock.wait() }
        lock.unlock()
    }
    @usableFromInline var stopped = false

    /// Decodes the stream's next events into `c` (up to a chunk; `last` set at its end or error).
    @inlinable
    func fill(_ c: Chunk) {
        var ended = false
        let times = c.timestamps, values = c.values, size = self.size, stream = self.stream, extract = self.extract
        var n = 0
        do {
            if let extract {
                while n < size {
                    guard try stream.next() else { ended = true; break }
                    times[n] = stream.timestamp
                    (values + n).initialize(to: try extract(stream))
                    n += 1
                }
            } else {
                // (`T` is `Void`: nothing to store but the timestamp.)
                while n < size {
                    guard try stream.next() else { ended = true; break }
                    times[n] = stream.timestamp
                    n += 1
                }
            }
        } catch {
            c.error = error
            ended = true
        }
        c.count = n
        c.last = ended
    }

    @inlinable
    func run() {
        defer {
            // This thread releases another stream's pages no more (nor decodes it ahead).
            releases?.stopReleasingHandedOff()
            lock.lock(); stopped = true; lock.broadcast(); lock.unlock()
        }
        while true {
            releases?.releaseHandedOff()
            lock.lock()
            if free.isEmpty && !cancelled, let other = stealsFrom {
                // The merge is behind: decode a chunk of the calling thread's stream for it.
                lock.unlock()
                if other.steal() { continue }
                lock.lock()
            }
            while free.isEmpty && !cancelled { fillerWaits = true; lock.wait() }
            fillerWaits = false
            if cancelled { lock.unlock(); return }
            let c = free.removeLast()
            lock.unlock()
            fill(c)
            let ended = c.last
            lock.lock()
            full.append(c)
            if takerWaits && (ended || full.count >= max(1, CTFTraceSet.concurrentRing / 2)) { lock.broadcast() }
            lock.unlock()
            if ended { return }
        }
    }
}
