import Foundation

/// Writes a ``ByteSink``'s full buffers to its descriptor on a thread of its own, so that a
/// command whose output is large (a Chrome export writes about 70 bytes per event) formats the
/// next buffer while the kernel copies the last one: the `write` calls — a quarter of an export's
/// consuming thread — run beside the analysis instead of inside it.
///
/// Buffers go round: the sink hands a full one over (``handOver(_:count:capacity:whole:minCapacity:)``) and gets an
/// empty one back, waiting only when ``depth`` buffers are already queued. Buffers are written in
/// the order handed over. ``drain()`` returns once everything handed over is written.
final class BufferWriter: @unchecked Sendable {
    /// A buffer and how many of its bytes are to be written.
    struct Buffer {
        var p: UnsafeMutablePointer<UInt8>; var capacity: Int; var count: Int
        /// Whether it holds whole writes (``ByteSinkEncoder/encode(_:whole:emit:)``).
        var whole = false
    }
    /// Buffers queued or being written at most (the sink's memory stays bounded).
    static let depth = 3

    private let fd: Int32
    /// Encodes each buffer before it is written (``ByteSink/encoder``), on this thread.
    private let encoder: ByteSinkEncoder?
    private let cond = NSCondition()
    private var queued: [Buffer] = []
    private var spare: [Buffer] = []
    private var writing = false
    private var stopping = false
    private var finished = false
    /// The first write error (errno), 0 if none: later buffers are dropped.
    private var failure: Int32 = 0

    init(fd: Int32, encoder: ByteSinkEncoder? = nil) {
        self.fd = fd
        self.encoder = encoder
        let t = Thread { [self] in run() }
        t.name = "rltrace-writer"
        t.start()
    }

    deinit {
        for b in spare { b.p.deallocate() }
    }

    /// The first write error (errno), or 0.
    var error: Int32 { cond.lock(); defer { cond.unlock() }; return failure }

    /// Queues `count` bytes of `p` (`capacity` bytes allocated; `whole`: whole writes) for
    /// writing and returns an empty buffer of at least `minCapacity` bytes, the caller's from now on.
    func handOver(_ p: UnsafeMutablePointer<UInt8>, count: Int, capacity: Int, whole: Bool, minCapacity: Int) -> Buffer {
        cond.lock()
        queued.append(Buffer(p: p, capacity: capacity, count: count, whole: whole))
        cond.broadcast()
        // Wait for a written buffer when the queue is full; otherwise take one or allocate one.
        while spare.isEmpty && queued.count + (writing ? 1 : 0) >= BufferWriter.depth { cond.wait() }
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

    /// Returns once every buffer handed over is written (or dropped after an error).
    func drain() {
        cond.lock()
        while !queued.isEmpty || writing { cond.wait() }
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

    private func run() {
        cond.lock()
        while true {
            while queued.isEmpty && !stopping { cond.wait() }
            if queued.isEmpty { break }
            let b = queued.removeFirst()
            writing = true
            let failed = failure != 0
            cond.unlock()
            var error: Int32 = 0
            if !failed { error = ByteSink.write(UnsafeBufferPointer(start: b.p, count: b.count), to: fd, through: encoder, whole: b.whole) }
            cond.lock()
            if error != 0 && failure == 0 { failure = error }
            writing = false
            spare.append(b)
            cond.broadcast()
        }
        finished = true
        cond.broadcast()
        cond.unlock()
    }
}
