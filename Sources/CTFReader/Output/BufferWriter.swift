import Foundation

/// Writes a ``ByteSink``'s full buffers to its descriptor on a thread of its own, so that a
/// command whose output is large (a Chrome export writes about 70 bytes per event) formats the
/// next buffer while the kernel copies the last one: the `write` calls — a quarter of an export's
/// consuming thread — run beside the analysis instead of inside it.
///
/// Buffers go round: the sink hands a full one over (``handOver(_:count:capacity:whole:minCapacity:)``) and gets an
/// empty one back, waiting only when ``depth`` buffers are already queued. Buffers are written in
/// the order handed over. ``drain()`` returns once everything handed over is written.
///
/// With an encoder that can encode a buffer of whole writes alone
/// (``ByteSinkEncoder/makeWholeBufferEncoder()``: the Perfetto export's deflate), the encoding is
/// also ``SpareWork``: threads that would otherwise wait — the pipeline's reading thread when its
/// ring is full, its consuming thread when the ring is empty, the sink's own caller when the queue
/// is full or draining — encode queued buffers, and while such a thread is running (a
/// ``SpareWork/helperStarts()``) the writer thread leaves whole buffers to them and only writes. A
/// third thread deflating beside two busy ones shared a core with one of them on two cores; the
/// busy threads filling their waits with it keep two threads on two cores (docs/benchmarks.md,
/// "The Perfetto export: deflating in spare time"). The bytes written are the same whichever
/// thread encoded a buffer.
final class BufferWriter: SpareWork, @unchecked Sendable {
    /// A buffer and how many of its bytes are to be written.
    struct Buffer {
        var p: UnsafeMutablePointer<UInt8>; var capacity: Int; var count: Int
        /// Whether it holds whole writes (``ByteSinkEncoder/encode(_:whole:emit:)``).
        var whole = false
    }
    /// A buffer handed over and not written yet: taken by the thread that encodes it (the writer
    /// in order, or a helper alone), then written by the writer.
    private final class Entry {
        let buffer: Buffer
        /// Some thread encodes (or encoded) it.
        var taken = false
        /// Its encoding by a helper, once done.
        var encoded: [UInt8]?
        init(_ b: Buffer) { buffer = b }
    }
    /// Buffers queued or being written at most (the sink's memory stays bounded).
    static let depth = 3

    private let fd: Int32
    /// Encodes each buffer before it is written (``ByteSink/encoder``), on this thread — whole
    /// buffers also on helping threads, each through an encoder of its own (``helperEncoders``).
    private let encoder: ByteSinkEncoder?
    /// Whether whole buffers may be encoded by helpers (the encoder makes whole-buffer encoders).
    let helpable: Bool
    private let cond = NSCondition()
    private var queued: [Entry] = []
    private var spare: [Buffer] = []
    /// Encoders for helping threads (one per thread helping at a time) and encodings' storage.
    private var helperEncoders: [ByteSinkEncoder] = []
    private var spareEncodings: [[UInt8]] = []
    /// Threads that help when they would wait, running now (``helperStarts()``).
    private var helpers = 0
    /// Someone waits for everything to be written (``drain()``, ``stop()``): the writer encodes too.
    private var draining = 0
    private var writing = false
    private var stopping = false
    private var finished = false
    /// The first write error (errno), 0 if none: later buffers are dropped.
    private var failure: Int32 = 0
    /// Buffers encoded by helpers and by the writer thread, and helpers started (for tests and
    /// benchmarks).
    private(set) var helped = 0, encodedByWriter = 0, helpersStarted = 0

    init(fd: Int32, encoder: ByteSinkEncoder? = nil) {
        self.fd = fd
        self.encoder = encoder
        if let e = encoder?.makeWholeBufferEncoder() { helperEncoders = [e]; helpable = true } else { helpable = false }
        let t = Thread { [self] in run() }
        t.name = "rltrace-writer"
        t.start()
    }

    deinit {
        for b in spare { b.p.deallocate() }
    }

    /// The first write error (errno), or 0.
    var error: Int32 { cond.lock(); defer { cond.unlock() }; return failure }

    /// How many buffers helpers encoded, and the writer thread, and how many helpers started (read
    /// once drained).
    var encodings: (helped: Int, byWriter: Int, helpers: Int) {
        cond.lock(); defer { cond.unlock() }
        return (helped, encodedByWriter, helpersStarted)
    }

    /// Queues `count` bytes of `p` (`capacity` bytes allocated; `whole`: whole writes) for
    /// writing and returns an empty buffer of at least `minCapacity` bytes, the caller's from now on.
    func handOver(_ p: UnsafeMutablePointer<UInt8>, count: Int, capacity: Int, whole: Bool, minCapacity: Int) -> Buffer {
        cond.lock()
        queued.append(Entry(Buffer(p: p, capacity: capacity, count: count, whole: whole)))
        cond.broadcast()
        // When the queue is full: encode a queued buffer rather than wait, else wait for a written
        // buffer; otherwise take a spare one or allocate one.
        while spare.isEmpty && queued.count + (writing ? 1 : 0) >= BufferWriter.depth {
            if !helpLocked() { cond.wait() }
        }
        let next = spare.popLast()
        cond.unlock()
        if var b = next {
            if b.capacity < minCapacity {
                b.p.deallocate()
                b = Buffer(p: .allocate(capacity: minCapacity), capacity: minCapacity, count: 0)
            }
            b.count = 0
            return b
        }
        return Buffer(p: .allocate(capacity: minCapacity), capacity: minCapacity, count: 0)
    }

    /// Returns once every buffer handed over is written (or dropped after an error), encoding
    /// queued buffers meanwhile.
    func drain() {
        cond.lock()
        draining += 1
        cond.broadcast()
        while !queued.isEmpty || writing {
            if !helpLocked() { cond.wait() }
        }
        draining -= 1
        cond.unlock()
    }

    /// Writes what is queued, then ends the thread; returns once it has ended.
    func stop() {
        cond.lock()
        stopping = true
        cond.broadcast()
        while !finished { cond.wait() }
        cond.unlock()
    }

    // MARK: spare work

    func doSpareWork() -> Bool {
        guard helpable else { return false }
        cond.lock()
        defer { cond.unlock() }
        return helpLocked()
    }

    func helperStarts() {
        cond.lock(); helpers += 1; helpersStarted += 1; cond.unlock()
    }

    func helperEnds() {
        cond.lock(); helpers -= 1; cond.broadcast(); cond.unlock()
    }

    /// Encodes the oldest whole buffer no thread has taken, on the calling thread, through an
    /// encoder of its own; false when there is none. Called and returns with the lock held.
    private func helpLocked() -> Bool {
        guard helpable, failure == 0, let e = queued.first(where: { !$0.taken && $0.buffer.whole }) else { return false }
        e.taken = true
        let enc = helperEncoders.popLast() ?? encoder!.makeWholeBufferEncoder()!
        var out = spareEncodings.popLast() ?? []
        cond.unlock()
        out.removeAll(keepingCapacity: true)
        enc.encode(UnsafeBufferPointer(start: e.buffer.p, count: e.buffer.count), whole: true) { out.append(contentsOf: $0) }
        cond.lock()
        e.encoded = out
        helperEncoders.append(enc)
        helped &+= 1
        cond.broadcast()
        return true
    }

    /// Whether the writer thread encodes the queue's head itself: a buffer helpers may not take
    /// (not whole writes: the encoder's state runs across it), or none will (no helper running,
    /// someone waits for the end, or a write failed: the rest is dropped).
    private func writerEncodes(_ e: Entry) -> Bool {
        !e.taken && (!helpable || !e.buffer.whole || helpers == 0 || draining > 0 || stopping || failure != 0)
    }

    private func run() {
        cond.lock()
        while true {
            // The head, once encoded (by a helper, or here when no helper will), is written.
            while !(queued.first.map { $0.encoded != nil || writerEncodes($0) } ?? stopping) { cond.wait() }
            guard !queued.isEmpty else { break }
            let e = queued.removeFirst()
            writing = true
            let failed = failure != 0
            cond.unlock()
            var error: Int32 = 0
            if !failed {
                if let bytes = e.encoded {
                    error = bytes.withUnsafeBufferPointer { ByteSink.write($0, to: fd, through: nil) }
                } else {
                    error = ByteSink.write(UnsafeBufferPointer(start: e.buffer.p, count: e.buffer.count), to: fd, through: encoder, whole: e.buffer.whole)
                }
            }
            cond.lock()
            if error != 0 && failure == 0 { failure = error }
            if let bytes = e.encoded { spareEncodings.append(bytes) } else if encoder != nil && !failed { encodedByWriter &+= 1 }
            writing = false
            spare.append(e.buffer)
            cond.broadcast()
        }
        finished = true
        cond.broadcast()
        cond.unlock()
    }
}
