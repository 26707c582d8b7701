#if canImport(Glibc)
import Glibc
#endif

/// Where every writer writes — `rltrace dump`'s event formatter (``CTFEventFormatter``) and the
/// renderers of the other commands: bytes gathered in a buffer and written to a file descriptor in
/// chunks as the output grows (1 MiB to a regular file or a device that is no terminal, 64 KiB to
/// a pipe or terminal; or kept in memory when there is no descriptor), with the number formatting
/// done by hand (``ByteCursor``) and text from a trace escaped by ``UntrustedText`` — no `String`
/// per field, nothing per event but bytes.
///
/// The buffer's position and bounds are read and written with no exclusivity check
/// (`@exclusivity(unchecked)`): a sink is used by one thread, and a check per write was a tenth of
/// a formatting loop's time (docs/benchmarks.md).
public final class ByteSink {
    /// Chunk sizes: to a regular file (or a device that is no terminal), and to a pipe or a
    /// terminal. (A 228 MB Chrome export written in 64 KiB chunks spent a third more wall time than
    /// in 1 MiB ones: each chunk is a hand-over to the writer thread, a wake-up of it and a `write`
    /// through the file system's per-call work. A pipe holds 64 KiB: larger chunks there would only
    /// delay what a reader sees.)
    private static let fileChunk = 1 << 20, streamChunk = 1 << 16
    /// Pending bytes are written once they pass this (the chunk size); any one write of up to this
    /// many bytes fits the buffer.
    @usableFromInline let flushAt: Int
    /// Pending bytes (`count` of them): twice the chunk size allocated.
    @exclusivity(unchecked) @usableFromInline var raw: UnsafeMutablePointer<UInt8>
    /// Bytes `raw` holds (grown, once, for a record larger than a buffer: ``reserving(_:_:)``).
    @exclusivity(unchecked) @usableFromInline var rawCapacity: Int
    @exclusivity(unchecked) @usableFromInline var count = 0
    /// Everything written, for an in-memory sink.
    private var memory: [UInt8] = []
    private let fd: Int32
    /// Whether the sink opened `fd` and still has to close it.
    private var ownsFD: Bool
    /// Set once ``finish()`` closed the file: anything written later is dropped (the descriptor
    /// number may already name another file).
    private var closed = false
    /// Where the output goes (for messages).
    public let path: String
    /// The first write error (errno), if any: later writes are dropped.
    public var writeError: Int32 { ownError != 0 ? ownError : (writer?.error ?? 0) }
    private var ownError: Int32 = 0
    /// Writes full buffers on another thread, once the output has grown past a few buffers (a
    /// small output is written on the caller's thread).
    private var writer: BufferWriter?
    /// Buffers flushed on the caller's thread so far (the writer starts after ``syncFlushes``, or
    /// at the first full buffer when there is an ``encoder``).
    private var flushes = 0
    private static let syncFlushes = 4

    /// Encodes the bytes on their way out, chunk by chunk, on the thread that writes them (the
    /// caller's or the writer thread, never both at once) — whole buffers also on threads doing
    /// ``spareWork``, through encoders it makes for them: e.g. the Perfetto export's deflate into
    /// `compressed_packets`. Set before anything is written; nil (the default): written as they are.
    public var encoder: ByteSinkEncoder? {
        didSet {
            precondition(count == 0 && flushes == 0 && writer == nil && memory.isEmpty, "a ByteSink's encoder is set before it writes")
            // The writer from now on (an encoder's work goes to it from the first full buffer anyway),
            // so that ``spareWork`` can be handed to other threads before anything is written.
            if fd >= 0, !closed, let e = encoder { writer = BufferWriter(fd: fd, encoder: e) }
        }
    }

    /// The encoding of full buffers, for threads that would otherwise wait to do
    /// (``SpareWork``): non-nil for a file's sink whose ``encoder`` makes whole-buffer encoders
    /// (``ByteSinkEncoder/makeWholeBufferEncoder()``), set before. The output is the same bytes
    /// whoever encodes.
    public var spareWork: SpareWork? {
        guard let w = writer, w.helpable else { return nil }
        return w
    }

    /// How many full buffers threads doing ``spareWork`` encoded, and the writer thread, and how
    /// many threads registered to help (``SpareWork/helperStarts()``; once flushed; for tests and
    /// benchmarks).
    public var encodings: (helped: Int, byWriter: Int, helpers: Int) { writer?.encodings ?? (0, 0, 0) }
    /// Whether the pending bytes hold part of a write larger than a buffer (``hugeBytes(_:)``):
    /// the encoder is then told they are not whole writes.
    @usableFromInline var splitWrite = false

    /// A sink writing to an open descriptor (standard output is 1), named `path` in messages.
    public init(fd: Int32, path: String = "<stdout>") {
        self.fd = fd; self.ownsFD = false; self.path = path
        (flushAt, rawCapacity, raw) = ByteSink.buffer(for: fd)
    }

    /// A sink keeping everything in memory (``text``).
    public init() {
        fd = -1; ownsFD = false; path = "<memory>"
        (flushAt, rawCapacity, raw) = ByteSink.buffer(for: -1)
    }

    /// A sink writing a new file (truncated if it exists). Throws the `errno` message on failure.
    public init(creating path: String) throws {
        let f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard f >= 0 else { throw ByteSinkError(path: path, message: String(cString: strerror(errno))) }
        fd = f; ownsFD = true; self.path = path
        (flushAt, rawCapacity, raw) = ByteSink.buffer(for: f)
    }

    /// The chunk size for `fd` (a file's for a regular file or a device that is no terminal, a
    /// stream's for anything else, memory included), the buffer's capacity and the buffer.
    private static func buffer(for fd: Int32) -> (Int, Int, UnsafeMutablePointer<UInt8>) {
        var st = stat()
        // A regular file, or a device that is no terminal (/dev/null: nobody waits for its bytes),
        // takes the large chunks; a pipe or a terminal the small ones.
        let kind = fd >= 0 && fstat(fd, &st) == 0 ? st.st_mode & S_IFMT : 0
        let chunk = kind == S_IFREG || (kind == S_IFCHR && isatty(fd) == 0) ? fileChunk : streamChunk
        return (chunk, 2 * chunk, .allocate(capacity: 2 * chunk))
    }

    deinit {
        flush()
        writer?.stop()
        if ownsFD { close(fd) }
        raw.deallocate()
    }

    /// Everything written, as text (in-memory sinks).
    public var text: String {
        flush()
        return String(decoding: memory, as: UTF8.self)
    }

    /// For an in-memory sink (a renderer's staging area): moves everything written so far to the
    /// end of `a`, leaving the sink empty.
    public func moveWritten(appendingTo a: inout [UInt8]) {
        precondition(fd < 0, "moveWritten is for an in-memory sink")
        if !memory.isEmpty { a.append(contentsOf: memory); memory.removeAll(keepingCapacity: true) }
        a.append(contentsOf: UnsafeBufferPointer(start: raw, count: count))
        count = 0
    }

    /// Writes the pending bytes out (to memory for an in-memory sink), and returns once everything
    /// written to the sink so far is written.
    public func flush() {
        writer?.drain()
        guard count > 0 else { return }
        if fd < 0 {
            if let e = encoder {
                e.encode(UnsafeBufferPointer(start: raw, count: count), whole: !splitWrite) { memory.append(contentsOf: $0) }
            } else {
                memory.append(contentsOf: UnsafeBufferPointer(start: raw, count: count))
            }
        } else if writeError == 0 && !closed {
            let e = ByteSink.write(UnsafeBufferPointer(start: raw, count: count), to: fd, through: encoder, whole: !splitWrite)
            if e != 0 { ownError = e }
            flushes &+= 1
        }
        count = 0
        splitWrite = false
    }

    /// Writes `bytes` to `fd` — through `encoder` when there is one (`whole`: they are whole
    /// writes) —, retrying short writes; returns the first error (errno), or 0.
    static func write(_ bytes: UnsafeBufferPointer<UInt8>, to fd: Int32, through encoder: ByteSinkEncoder?, whole: Bool = false) -> Int32 {
        func all(_ b: UnsafeBufferPointer<UInt8>) -> Int32 {
            guard let p = b.baseAddress else { return 0 }
            var off = 0
            while off < b.count {
                let n = Glibc.write(fd, p + off, b.count - off)
                if n < 0 { if errno == EINTR { continue }; return errno }
                off += n
            }
            return 0
        }
        guard let encoder else { return all(bytes) }
        var error: Int32 = 0
        encoder.encode(bytes, whole: whole) { if error == 0 { error = all($0) } }
        return error
    }

    /// A full buffer: handed to the writer thread (started once the output is large), which
    /// writes it while the caller fills another; written here for a small output or in memory.
    @usableFromInline @inline(never)
    func flushFull() {
        // An encoder's work (a deflate) goes to the writer thread from the first full buffer.
        guard fd >= 0, !closed, ownError == 0, flushes >= ByteSink.syncFlushes || encoder != nil else { return flush() }
        if writer == nil { writer = BufferWriter(fd: fd, encoder: encoder) }
        let next = writer!.handOver(raw, count: count, capacity: rawCapacity, whole: !splitWrite, minCapacity: 2 * flushAt)
        raw = next.p
        rawCapacity = next.capacity
        count = 0
        splitWrite = false
    }

    /// Flushes and closes an owned file; throws if any write failed. The file is not synced to disk
    /// (as `cp` and babeltrace2 do not): `fsync` of a large export made the command wait for the
    /// disk — 0.4 s of a 0.8 s export of 228 MB; a deferred write error is reported by `close`.
    public func finish() throws {
        flush()
        if let e = encoder, !closed {
            // What the encoder still holds (the end of its last unit).
            if fd < 0 {
                e.finish { memory.append(contentsOf: $0) }
            } else if writeError == 0 {
                var error: Int32 = 0
                e.finish { b in if error == 0 { error = ByteSink.write(b, to: fd, through: nil) } }
                if error != 0 { ownError = error }
            }
        }
        if writeError != 0 { throw ByteSinkError(path: path, message: String(cString: strerror(writeError))) }
        if ownsFD {
            ownsFD = false
            closed = true
            if close(fd) != 0 && errno != EINTR { throw ByteSinkError(path: path, message: String(cString: strerror(errno))) }
        }
    }

    /// Makes room for `n` bytes (at most a chunk): flushes when they would pass the chunk size.
    @inlinable @inline(__always)
    func room(_ n: Int) {
        if count &+ n > flushAt { flushFull() }
    }

    /// Appends raw bytes.
    @inlinable @inline(__always)
    public func bytes(_ p: UnsafeRawBufferPointer) {
        let n = p.count
        guard n <= flushAt else { return hugeBytes(p) }
        room(n)
        if let b = p.baseAddress { copy(b.assumingMemoryBound(to: UInt8.self), n) }
    }

    /// Appends `n` bytes from `p`.
    @inlinable @inline(__always)
    public func bytes(_ p: UnsafePointer<UInt8>, _ n: Int) {
        guard n <= flushAt else { return hugeBytes(UnsafeRawBufferPointer(start: p, count: n)) }
        room(n)
        copy(p, n)
    }

    /// Copies `n` bytes (at most a chunk, room made) to the buffer (short runs — keys, punctuation
    /// — without a call to memcpy).
    @inlinable @inline(__always)
    func copy(_ b: UnsafePointer<UInt8>, _ n: Int) {
        UnsafeMutableRawPointer(raw + count).copyBytesInline(from: UnsafeRawPointer(b), count: n)
        count &+= n
    }

    @usableFromInline @inline(never)
    func grow(to n: Int) {
        let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: n)
        bigger.update(from: raw, count: count)
        raw.deallocate()
        raw = bigger
        rawCapacity = n
    }

    /// A write of more than a chunk: in pieces.
    @usableFromInline @inline(never)
    func hugeBytes(_ p: UnsafeRawBufferPointer) {
        var p = p
        while !p.isEmpty {
            let piece = UnsafeRawBufferPointer(rebasing: p[..<min(p.count, flushAt)])
            room(piece.count)
            splitWrite = true                   // after room(): its flush ended a buffer of whole writes
            copy(piece.baseAddress!.assumingMemoryBound(to: UInt8.self), piece.count)
            p = UnsafeRawBufferPointer(rebasing: p[piece.count...])
        }
    }

    /// Appends text.
    @inlinable @inline(__always)
    public func write(_ s: StaticString) {
        let n = s.utf8CodeUnitCount
        room(n)
        copy(s.utf8Start, n)
    }

    /// Appends text. (Disfavoured: a string literal goes to the `StaticString` form, a copy of
    /// constant bytes, rather than through a `String` — 1 % of `dump`'s instructions.)
    @inlinable @inline(__always) @_disfavoredOverload
    public func write(_ s: String) {
        var s = s
        s.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    /// Appends bytes kept in an array (a cached rendering).
    @inlinable @inline(__always)
    public func write(_ a: [UInt8]) { a.withUnsafeBytes { bytes($0) } }

    /// Appends one byte.
    @inlinable @inline(__always)
    public func byte(_ b: UInt8) {
        room(1)
        raw[count] = b
        count &+= 1
    }

    /// Appends a decimal unsigned integer.
    @inlinable @inline(__always)
    public func uint(_ v: UInt64) { reserving(20) { $0.uint(v) } }

    /// Appends a decimal integer.
    @inlinable @inline(__always)
    public func int(_ v: Int64) { reserving(21) { $0.int(v) } }

    /// Calls `body` with a cursor over at least `capacity` free bytes, of which `body` writes at
    /// most `capacity`: a record written with no per-field bookkeeping. (A record larger than the
    /// buffer — a huge name in a damaged trace — grows the buffer to hold it.)
    @inlinable @inline(__always)
    public func reserving(_ capacity: Int, _ body: (inout ByteCursor) -> Void) {
        room(capacity)
        if count &+ capacity > rawCapacity { grow(to: count + capacity) }
        var c = ByteCursor(raw + count)
        body(&c)
        count = c.p - raw
    }

    /// Appends a JSON string literal (quotes and escapes included, ``UntrustedText/json(_:)``).
    public func jsonString(_ s: String) { quoted(s, json: true) }

    /// Ends a line.
    @inlinable @inline(__always)
    public func newline() { byte(0x0A) }

    /// Forgets everything written to an in-memory sink (keeps the storage).
    func removeAll() {
        precondition(fd < 0, "removeAll is for an in-memory sink")
        memory.removeAll(keepingCapacity: true)
        count = 0
    }
}

/// A write or open error of a ``ByteSink``.
public struct ByteSinkError: Error, CustomStringConvertible {
    /// The file.
    public var path: String
    /// The system's message.
    public var message: String
    /// `cannot write PATH: MESSAGE`.
    public var description: String { "cannot write \(path): \(message)" }
}
