#if canImport(Glibc)
import Glibc
#endif

/// A reusable byte buffer that event formatters write into, flushed to a file descriptor with `write(2)`.
///
/// `CTFEventFormatter.format(_:into:)` appends one event's bytes; the caller flushes when ``count`` passes its
/// chunk size (e.g. 1 MiB), so memory stays flat whatever the trace's size.
public final class CTFOutputBuffer {
    /// The bytes live behind a pointer so the formatting loop pays no exclusivity checks.
    let w: UnsafeMutablePointer<ByteWriter>

    /// Creates an empty buffer with room for `capacity` bytes (it grows when one event needs more).
    public init(capacity: Int = 1 << 20) {
        w = .allocate(capacity: 1)
        w.initialize(to: ByteWriter(capacity: max(64, capacity)))
    }

    deinit {
        w.pointee.base.deallocate()
        w.deinitialize(count: 1)
        w.deallocate()
    }

    /// The number of bytes pending.
    public var count: Int { w.pointee.count }

    /// Forgets the pending bytes (keeps the storage).
    public func removeAll() { w.pointee.count = 0 }

    /// Calls `body` with the pending bytes.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: w.pointee.base, count: w.pointee.count))
    }

    /// Writes the pending bytes to `fd` (retrying short writes and `EINTR`) and empties the buffer.
    /// - Returns: 0 on success, else the `errno` of the failed write (the bytes are dropped).
    @discardableResult
    public func flush(to fd: Int32) -> Int32 {
        defer { w.pointee.count = 0 }
        let p = w.pointee.base
        let n = w.pointee.count
        var off = 0
        while off < n {
            let r = write(fd, p + off, n - off)
            if r < 0 {
                if errno == EINTR { continue }
                return errno
            }
            off += r
        }
        return 0
    }
}

/// Two ASCII digits per value 0…99, for writing integers two digits at a time (a literal: no lazy global).
private var digitPairs: StaticString {
    """
    00010203040506070809101112131415161718192021222324252627282930313233343536373839\
    40414243444546474849505152535455565758596061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899
    """
}

/// Lowercase hexadecimal digits (escapes) and uppercase ones (babeltrace2's `0x…` integers).
private var lowerHex: StaticString { "0123456789abcdef" }
private var upperHex: StaticString { "0123456789ABCDEF" }

extension UnsafeMutableRawPointer {
    /// Copies `n` bytes from `source` (the two must not overlap): up to 32 with two overlapping moves
    /// of 4, 8 or 16 bytes, no call (the formatters' names, separators and JSON keys are short; a call
    /// to memmove cost more than the copy, and with a literal's constant length the branches fold
    /// away), longer runs with `copyMemory`. Reads only the `n` source bytes. (Shared with rltrace's
    /// `ByteSink`.)
    @inlinable @inline(__always)
    public func copyBytesInline(from s: UnsafeRawPointer, count n: Int) {
        if n >= 8 && n <= 16 {
            storeBytes(of: s.loadUnaligned(as: UInt64.self), as: UInt64.self)
            storeBytes(of: s.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self), toByteOffset: n &- 8, as: UInt64.self)
        } else if n > 16 && n <= 32 {
            storeBytes(of: s.loadUnaligned(as: SIMD16<UInt8>.self), as: SIMD16<UInt8>.self)
            storeBytes(of: s.loadUnaligned(fromByteOffset: n &- 16, as: SIMD16<UInt8>.self), toByteOffset: n &- 16, as: SIMD16<UInt8>.self)
        } else if n >= 4 && n < 8 {
            storeBytes(of: s.loadUnaligned(as: UInt32.self), as: UInt32.self)
            storeBytes(of: s.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self), toByteOffset: n &- 4, as: UInt32.self)
        } else if n < 4 {
            var i = 0
            while i < n { storeBytes(of: s.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self); i &+= 1 }
        } else {
            copyMemory(from: s, byteCount: n)
        }
    }
}

/// The growable byte storage of ``CTFOutputBuffer`` with the hand-written formatting primitives: integers in
/// every display base, fixed-point seconds, and the text (babeltrace2) and JSON string escapes.
struct ByteWriter {
    var base: UnsafeMutablePointer<UInt8>
    var count = 0
    var capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    /// Makes room for `n` more bytes.
    @inline(__always)
    mutating func reserve(_ n: Int) {
        if count &+ n > capacity { grow(n) }
    }

    @inline(never)
    mutating func grow(_ n: Int) {
        let newCap = max(capacity * 2, count + n)
        let nb = UnsafeMutablePointer<UInt8>.allocate(capacity: newCap)
        nb.update(from: base, count: count)
        base.deallocate()
        base = nb
        capacity = newCap
    }

    @inline(__always)
    mutating func byte(_ b: UInt8) {
        reserve(1)
        base[count] = b
        count &+= 1
    }

    @inline(__always)
    mutating func bytes(_ p: UnsafePointer<UInt8>, _ n: Int) {
        reserve(n)
        UnsafeMutableRawPointer(base + count).copyBytesInline(from: UnsafeRawPointer(p), count: n)
        count &+= n
    }

    /// Appends a short constant (ASCII) text.
    @inline(__always)
    mutating func ascii(_ s: StaticString) {
        bytes(s.utf8Start, s.utf8CodeUnitCount)
    }

    /// Appends the bytes of `s` unchanged.
    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { u in if let b = u.baseAddress { bytes(b, u.count) } }
    }

    /// Appends `v` in decimal.
    @inline(__always)
    mutating func decimal(_ v: UInt64) {
        if v < 10 { byte(UInt8(truncatingIfNeeded: v) &+ 48); return }
        var n = 2
        var t = v / 100
        while t != 0 { n += 1; if t < 10 { break }; n += 1; t /= 100 }
        // n is now the digit count (2…20).
        reserve(n)
        writeDigits(v, end: base + count + n)
        count &+= n
    }

    /// Appends `v` in decimal with a leading `-` when negative.
    @inline(__always)
    mutating func decimal(_ v: Int64) {
        if v < 0 {
            byte(45)
            decimal(UInt64(0) &- UInt64(bitPattern: v))
        } else {
            decimal(UInt64(v))
        }
    }

    /// Writes the decimal digits of `v` backwards, ending just before `end` (the caller reserved them).
    @inline(__always)
    private func writeDigits(_ v: UInt64, end: UnsafeMutablePointer<UInt8>) {
        var v = v
        var p = end
        let d = digitPairs.utf8Start
        while v >= 100 {
            let r = Int(v % 100)
            v /= 100
            p -= 2
            p[0] = d[2 * r]; p[1] = d[2 * r + 1]
        }
        if v >= 10 {
            p -= 2
            p[0] = d[2 * Int(v)]; p[1] = d[2 * Int(v) + 1]
        } else {
            p -= 1
            p[0] = UInt8(truncatingIfNeeded: v) &+ 48
        }
    }

    /// Appends nanoseconds as `[-]seconds.nnnnnnnnn`.
    @inline(__always)
    mutating func seconds(_ ns: Int64) {
        if ns < 0 { byte(45) }
        let a = ns < 0 ? UInt64(0) &- UInt64(bitPattern: ns) : UInt64(ns)
        decimal(a / 1_000_000_000)
        reserve(10)
        base[count] = 46
        var f = a % 1_000_000_000
        let p = base + count + 1
        let d = digitPairs.utf8Start
        var i = 7
        while i >= 1 {
            let r = Int(f % 100)
            f /= 100
            p[i] = d[2 * r]; p[i + 1] = d[2 * r + 1]
            i -= 2
        }
        p[0] = UInt8(truncatingIfNeeded: f) &+ 48
        count &+= 10
    }

    /// Appends `v` in uppercase hexadecimal digits (no prefix).
    mutating func hex(_ v: UInt64) {
        var n = 1
        while n < 16 && v >> UInt64(4 * n) != 0 { n += 1 }
        reserve(n)
        for i in 0..<n { base[count + n - 1 - i] = upperHex.utf8Start[Int((v >> UInt64(4 * i)) & 15)] }
        count += n
    }

    /// Appends `v` in octal digits (no prefix).
    mutating func octal(_ v: UInt64) {
        var n = 1
        while n < 22 && v >> UInt64(3 * n) != 0 { n += 1 }
        reserve(n)
        for i in 0..<n { base[count + n - 1 - i] = UInt8(48 + (v >> UInt64(3 * i)) & 7) }
        count += n
    }

    /// Appends the lowest `width` bits of `v` in binary (most significant first, zero-padded), at least the
    /// significant digits of `v`.
    mutating func binary(_ v: UInt64, width: Int) {
        var n = 1
        while n < 64 && v >> UInt64(n) != 0 { n += 1 }
        n = max(n, width)
        reserve(n)
        for i in 0..<n { base[count + n - 1 - i] = i < 64 ? UInt8(48 + (v >> UInt64(i)) & 1) : 48 }
        count += n
    }

    /// Appends raw string bytes from a trace quoted for text (`json` false: a babeltrace2 string literal) or
    /// JSON, escaped as ``UntrustedText`` says: ASCII is escaped in place; anything else first goes through
    /// `String(decoding:as:)` so that invalid UTF-8 becomes U+FFFD, exactly as the decoded `CTFValue.string`
    /// would print.
    @inline(__always)
    mutating func quotedRaw(_ bytes: UnsafeRawBufferPointer, json: Bool) {
        if let p = bytes.baseAddress, isPlain(p, bytes.count, json: json) {
            let n = bytes.count
            byte(34)
            self.bytes(p.assumingMemoryBound(to: UInt8.self), n)
            byte(34)
        } else if isASCII(bytes) {
            quoted(bytes, json: json)
        } else {
            var s = String(decoding: bytes, as: UTF8.self)
            s.withUTF8 { quoted(UnsafeRawBufferPointer($0), json: json) }
        }
    }

    /// Appends a Swift string quoted for text or JSON.
    mutating func quoted(_ s: String, json: Bool) {
        var s = s
        s.withUTF8 { quoted(UnsafeRawBufferPointer($0), json: json) }
    }

    /// Appends a Swift string for a terminal, unquoted (``UntrustedText/terminal(_:)``): names from the
    /// metadata in a text line.
    mutating func terminalText(_ s: String) {
        var s = s
        s.withUTF8 { u in if let p = u.baseAddress { UntrustedText.escape(p, u.count, .terminal, into: &self) } }
    }

    /// Whether none of the `n` bytes at `p` needs an escape or UTF-8 repair: the ASCII bytes
    /// ``UntrustedText`` escapes and the bytes from 0x80, checked eight bytes at a time.
    @inline(__always)
    private func isPlain(_ p: UnsafeRawPointer, _ n: Int, json: Bool) -> Bool {
        @inline(__always) func special(_ x: UInt64) -> UInt64 {
            let ones: UInt64 = 0x0101_0101_0101_0101
            @inline(__always) func equal(_ c: UInt64) -> UInt64 { let e = x ^ (ones &* c); return (e &- ones) & ~e }
            // Per byte, the high bit flags: below 0x20 (a borrow), equal to `"`, `\` or DEL (zero after the
            // xor), or 0x80 and above; for text also `'` and `?`. Exact as to whether any byte is flagged.
            let common = ((x &- ones &* 0x20) & ~x) | equal(0x22) | equal(0x5C) | equal(0x7F) | x
            return json ? common : common | equal(0x27) | equal(0x3F)
        }
        let high: UInt64 = 0x8080_8080_8080_8080
        if n < 8 {
            var x: UInt64 = 0x6161_6161_6161_6161   // padded with `a`
            for i in 0..<n { x = (x << 8) | UInt64(p.load(fromByteOffset: i, as: UInt8.self)) }
            return special(x) & high == 0
        }
        var acc: UInt64 = 0
        var i = 0
        while i + 8 <= n {
            acc |= special(p.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i += 8
        }
        if i < n { acc |= special(p.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)) }
        return acc & high == 0
    }

    @inline(__always)
    private func isASCII(_ b: UnsafeRawBufferPointer) -> Bool {
        guard let p = b.baseAddress else { return true }
        let n = b.count
        var i = 0
        while i + 8 <= n {
            if p.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            i += 8
        }
        while i < n {
            if p.load(fromByteOffset: i, as: UInt8.self) >= 0x80 { return false }
            i += 1
        }
        return true
    }

    /// Valid UTF-8 in double quotes, escaped by ``UntrustedText``'s loop.
    private mutating func quoted(_ b: UnsafeRawBufferPointer, json: Bool) {
        reserve(b.count + 2)
        byte(34)
        if let p = b.baseAddress?.assumingMemoryBound(to: UInt8.self) {
            UntrustedText.escape(p, b.count, json ? .json : .quoted, into: &self)
        }
        byte(34)
    }
}
