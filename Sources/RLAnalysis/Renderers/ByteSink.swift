#if canImport(Glibc)
import Glibc
#endif
import CTFReader

/// Writes bytes at a position of a ``ByteSink``'s buffer, inside ``ByteSink/reserving(_:_:)``: the
/// caller reserved room for everything it writes, so no write checks for room.
public struct ByteCursor {
    /// The next byte to write.
    public private(set) var p: UnsafeMutablePointer<UInt8>
    @inline(__always) init(_ p: UnsafeMutablePointer<UInt8>) { self.p = p }

    /// Writes one byte.
    @inline(__always)
    public mutating func byte(_ b: UInt8) { p.pointee = b; p += 1 }

    /// Writes text.
    @inline(__always)
    public mutating func write(_ s: StaticString) { bytes(s.utf8Start, s.utf8CodeUnitCount) }

    /// Writes `n` bytes from `b`.
    @inline(__always)
    public mutating func bytes(_ b: UnsafePointer<UInt8>, _ n: Int) {
        UnsafeMutableRawPointer(p).copyBytesInline(from: UnsafeRawPointer(b), count: n)
        p += n
    }

    /// Writes raw bytes.
    @inline(__always)
    public mutating func bytes(_ b: UnsafeRawBufferPointer) {
        if let a = b.baseAddress { bytes(a.assumingMemoryBound(to: UInt8.self), b.count) }
    }

    /// Writes a decimal unsigned integer (at most 20 bytes).
    @inline(__always)
    public mutating func uint(_ v: UInt64) {
        if v < 10 { byte(0x30 &+ UInt8(truncatingIfNeeded: v)); return }
        // The number of digits from the bit length (log10 2 ≈ 1233 / 4096), corrected by one
        // compare with a power of ten: no loop.
        let t = ((64 &- v.leadingZeroBitCount) &* 1233) >> 12
        let n = t &+ (v >= ByteCursor.powerOfTen(t) ? 1 : 0)
        // Two digits per division by 100, each pair copied from a table of "00"…"99".
        let pairs = UnsafeRawPointer(ByteCursor.digitPairs.utf8Start)
        let out = UnsafeMutableRawPointer(p)
        var x = v
        var i = n
        while x >= 100 {
            let r = Int(truncatingIfNeeded: x % 100)
            x /= 100
            i &-= 2
            out.storeBytes(of: pairs.loadUnaligned(fromByteOffset: r &* 2, as: UInt16.self), toByteOffset: i, as: UInt16.self)
        }
        if x >= 10 {
            out.storeBytes(of: pairs.loadUnaligned(fromByteOffset: Int(truncatingIfNeeded: x) &* 2, as: UInt16.self), as: UInt16.self)
        } else {
            p[0] = 0x30 &+ UInt8(truncatingIfNeeded: x)
        }
        p += n
    }

    /// 10^`t` (0 ≤ `t` ≤ 19). A switch, which the compiler turns into a constant table: a `static let`
    /// array is reached through a lazy-initialization check (`swift_once`) at every use.
    @inline(__always)
    private static func powerOfTen(_ t: Int) -> UInt64 {
        switch t {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1_000
        case 4: 10_000
        case 5: 100_000
        case 6: 1_000_000
        case 7: 10_000_000
        case 8: 100_000_000
        case 9: 1_000_000_000
        case 10: 10_000_000_000
        case 11: 100_000_000_000
        case 12: 1_000_000_000_000
        case 13: 10_000_000_000_000
        case 14: 100_000_000_000_000
        case 15: 1_000_000_000_000_000
        case 16: 10_000_000_000_000_000
        case 17: 100_000_000_000_000_000
        case 18: 1_000_000_000_000_000_000
        case 19: 10_000_000_000_000_000_000
        default: .max
        }
    }
    /// "00", "01", … "99".
    private static let digitPairs: StaticString = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

    /// Writes a decimal integer (at most 20 bytes).
    @inline(__always)
    public mutating func int(_ v: Int64) {
        if v < 0 { byte(0x2D); uint(v.magnitude) } else { uint(UInt64(v)) }
    }
}

/// Where a renderer writes: bytes gathered in a buffer and written to a file descriptor in chunks
/// as the output grows (1 MiB to a regular file, 64 KiB to a pipe, terminal or device; or kept in
/// memory when there is no descriptor), with the number formatting renderers need done by hand —
/// no `String` per field, nothing per event but bytes.
public final class ByteSink {
    /// Chunk sizes: to a regular file, and to anything else. (A 228 MB Chrome export written in
    /// 64 KiB chunks spent a third more wall time than in 1 MiB ones: each chunk is a hand-over to
    /// the writer thread, a wake-up of it and a `write` through the file system's per-call work.
    /// A pipe holds 64 KiB: larger chunks there would only delay what a reader sees.)
    private static let fileChunk = 1 << 20, streamChunk = 1 << 16
    /// Pending bytes are written once they pass this (the chunk size); any one write of up to this
    /// many bytes fits the buffer.
    private let flushAt: Int
    /// Pending bytes (`count` of them): twice the chunk size allocated.
    private var raw: UnsafeMutablePointer<UInt8>
    /// Bytes `raw` holds (grown, once, for a record larger than a buffer: ``reserving(_:_:)``).
    private var rawCapacity: Int
    private var count = 0
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
    /// Buffers flushed on the caller's thread so far (the writer starts after ``syncFlushes``).
    private var flushes = 0
    private static let syncFlushes = 4
    private var scratch: [UInt8] = []

    /// A sink writing to an open descriptor (standard output is 1).
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

    /// The chunk size for `fd` (a regular file's, or a stream's for anything else, memory
    /// included), the buffer's capacity and the buffer.
    private static func buffer(for fd: Int32) -> (Int, Int, UnsafeMutablePointer<UInt8>) {
        var st = stat()
        let chunk = fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG ? fileChunk : streamChunk
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
            memory.append(contentsOf: UnsafeBufferPointer(start: raw, count: count))
        } else if writeError == 0 && !closed {
            var off = 0
            while off < count {
                let n = Glibc.write(fd, raw + off, count - off)
                if n < 0 { if errno == EINTR { continue }; ownError = errno; break }
                off += n
            }
            flushes &+= 1
        }
        count = 0
    }

    /// A full buffer: handed to the writer thread (started once the output is large), which
    /// writes it while the caller fills another; written here for a small output or in memory.
    @inline(never)
    private func flushFull() {
        guard fd >= 0, !closed, ownError == 0, flushes >= ByteSink.syncFlushes else { return flush() }
        if writer == nil { writer = BufferWriter(fd: fd) }
        let next = writer!.handOver(raw, count: count, capacity: rawCapacity, minCapacity: 2 * flushAt)
        raw = next.p
        rawCapacity = next.capacity
        count = 0
    }

    /// Flushes and closes an owned file; throws if any write failed. The file is not synced to disk
    /// (as `cp` and babeltrace2 do not): `fsync` of a large export made the command wait for the
    /// disk — 0.4 s of a 0.8 s export of 228 MB; a deferred write error is reported by `close`.
    public func finish() throws {
        flush()
        if writeError != 0 { throw ByteSinkError(path: path, message: String(cString: strerror(writeError))) }
        if ownsFD {
            ownsFD = false
            closed = true
            if close(fd) != 0 && errno != EINTR { throw ByteSinkError(path: path, message: String(cString: strerror(errno))) }
        }
    }

    @inline(__always)
    private func room(_ n: Int) {
        if count &+ n > flushAt { flushFull() }
    }

    /// Appends raw bytes.
    @inline(__always)
    public func bytes(_ p: UnsafeRawBufferPointer) {
        let n = p.count
        guard n <= flushAt else { return hugeBytes(p) }
        room(n)
        if let b = p.baseAddress { copy(b.assumingMemoryBound(to: UInt8.self), n) }
    }

    /// Copies `n` bytes (at most a chunk, room made) to the buffer (CTFReader's short copy: JSON's
    /// keys and punctuation without a call to memcpy).
    @inline(__always)
    private func copy(_ b: UnsafePointer<UInt8>, _ n: Int) {
        UnsafeMutableRawPointer(raw + count).copyBytesInline(from: UnsafeRawPointer(b), count: n)
        count &+= n
    }

    @inline(never)
    private func grow(to n: Int) {
        let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: n)
        bigger.update(from: raw, count: count)
        raw.deallocate()
        raw = bigger
        rawCapacity = n
    }

    /// A write of more than a chunk: in pieces.
    @inline(never)
    private func hugeBytes(_ p: UnsafeRawBufferPointer) {
        var p = p
        while !p.isEmpty {
            let piece = UnsafeRawBufferPointer(rebasing: p[..<min(p.count, flushAt)])
            room(piece.count)
            copy(piece.baseAddress!.assumingMemoryBound(to: UInt8.self), piece.count)
            p = UnsafeRawBufferPointer(rebasing: p[piece.count...])
        }
    }

    /// Appends text.
    @inline(__always)
    public func write(_ s: StaticString) {
        let n = s.utf8CodeUnitCount
        room(n)
        copy(s.utf8Start, n)
    }

    /// Appends text.
    @inline(__always)
    public func write(_ s: String) {
        var s = s
        s.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    /// Appends bytes kept in an array (a cached rendering).
    @inline(__always)
    public func write(_ a: [UInt8]) { a.withUnsafeBytes { bytes($0) } }

    /// Appends one byte.
    @inline(__always)
    public func byte(_ b: UInt8) {
        room(1)
        raw[count] = b
        count += 1
    }

    /// Appends a decimal unsigned integer.
    @inline(__always)
    public func uint(_ v: UInt64) { reserving(20) { $0.uint(v) } }

    /// Appends a decimal integer.
    @inline(__always)
    public func int(_ v: Int64) { reserving(21) { $0.int(v) } }

    /// Calls `body` with a cursor over at least `capacity` free bytes, of which `body` writes at
    /// most `capacity`: a record written with no per-field bookkeeping. (A record larger than the
    /// buffer — a huge name in a damaged trace — grows the buffer to hold it.)
    @inline(__always)
    public func reserving(_ capacity: Int, _ body: (inout ByteCursor) -> Void) {
        room(capacity)
        if count &+ capacity > rawCapacity { grow(to: count + capacity) }
        var c = ByteCursor(raw + count)
        body(&c)
        count = c.p - raw
    }

    /// Appends a duration as ``formatDuration(_:)`` writes it (`812ns`, `3.4µs`, `12.5ms`, `1.25s`).
    public func duration(_ ns: Int64) {
        reserving(ByteCursor.durationRoom) { $0.duration(ns) }
    }

    /// Appends a JSON string literal (quotes and escapes included).
    public func jsonString(_ s: String) {
        var s = s
        s.withUTF8 { u in
            scratch.removeAll(keepingCapacity: true)
            appendJSONString(u, to: &scratch)
            write(scratch)
        }
    }

    /// Ends a line.
    @inline(__always)
    public func newline() { byte(0x0A) }
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

/// `formatDuration(ns)` as bytes: the same rounding (to 3 significant digits below 100 of a unit,
/// whole units above), without going through `String`.
func appendDuration(_ ns: Int64, to out: inout [UInt8]) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ByteCursor.durationRoom) { t in
        var c = ByteCursor(t.baseAddress!)
        c.duration(ns)
        out.append(contentsOf: UnsafeBufferPointer(start: t.baseAddress!, count: c.p - t.baseAddress!))
    }
}

extension ByteCursor {
    /// `x.rounded()` (to nearest, halves away from zero) for 0 ≤ `x` < 2⁵³, without the libm call
    /// `rounded()` makes on x86-64's baseline: `x + 0.5` truncated, less one when that sum rounded
    /// up past `x + 0.5` (possible only just below a power of two, where the sum's spacing doubles;
    /// `Double(k) − x` is exact there).
    @inline(__always)
    static func roundedHalfAway(_ x: Double) -> UInt64 {
        var k = UInt64(x + 0.5)
        if Double(k) - x > 0.5 { k &-= 1 }
        return k
    }

    /// Writes `v` (< 10⁹) as exactly nine digits, zeros first.
    @inline(__always)
    public mutating func nineDigits(_ v: UInt64) {
        let pairs = UnsafeRawPointer(ByteCursor.digitPairs.utf8Start)
        let out = UnsafeMutableRawPointer(p)
        var x = v
        var i = 9
        while i > 1 {
            let r = Int(truncatingIfNeeded: x % 100)
            x /= 100
            i &-= 2
            out.storeBytes(of: pairs.loadUnaligned(fromByteOffset: r &* 2, as: UInt16.self), toByteOffset: i, as: UInt16.self)
        }
        p[0] = 0x30 &+ UInt8(truncatingIfNeeded: x % 10)
        p += 9
    }

    /// The most bytes ``duration(_:)`` writes.
    static let durationRoom = 32

    /// Writes a duration as ``formatDuration(_:)`` does (`812ns`, `3.4µs`, `12.5ms`, `1.25s`): 3
    /// significant digits below 100 of a unit, whole units above (at most ``durationRoom`` bytes).
    @inline(__always)
    public mutating func duration(_ ns: Int64) {
        let a = abs(Double(ns))
        if ns < 0 { byte(0x2D) }
        if a < 1_000 { uint(UInt64(a)); byte(0x6E); byte(0x73); return }
        let v: Double
        if a < 1_000_000 { v = a / 1e3 } else if a < 1_000_000_000 { v = a / 1e6 } else { v = a / 1e9 }
        if v >= 100 {
            uint(ByteCursor.roundedHalfAway(v))
        } else {
            let decimals = v >= 10 ? 1 : 2
            let k = ByteCursor.roundedHalfAway(v * (decimals == 1 ? 10 : 100))
            let scale: UInt64 = decimals == 1 ? 10 : 100
            uint(k / scale)
            var frac = k % scale
            if frac != 0 {
                byte(0x2E)
                if decimals == 2 {
                    if frac % 10 == 0 { frac /= 10; byte(0x30 &+ UInt8(frac)) } else {
                        byte(0x30 &+ UInt8(frac / 10)); byte(0x30 &+ UInt8(frac % 10))
                    }
                } else {
                    byte(0x30 &+ UInt8(frac))
                }
            }
        }
        if a < 1_000_000 { byte(0xC2); byte(0xB5); byte(0x73) }        // µs
        else if a < 1_000_000_000 { byte(0x6D); byte(0x73) }           // ms
        else { byte(0x73) }                                            // s
    }
}

/// A JSON string literal of UTF-8 `bytes`, escaped as ``UntrustedText/json(_:)`` says.
@inline(__always)
func appendJSONString(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
    UntrustedText.appendJSON(bytes, to: &out)
}
