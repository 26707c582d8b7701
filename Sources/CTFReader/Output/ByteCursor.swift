#if canImport(Glibc)
import Glibc
#endif

extension UnsafeMutableRawPointer {
    /// Copies `n` bytes from `source` (the two must not overlap): up to 32 with two overlapping moves
    /// of 4, 8 or 16 bytes, no call (the writers' names, separators and JSON keys are short; a call
    /// to memmove cost more than the copy, and with a literal's constant length the branches fold
    /// away), longer runs with `copyMemory`. Reads only the `n` source bytes.
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

/// Writes bytes at a position of a ``ByteSink``'s buffer, inside ``ByteSink/reserving(_:_:)``: the
/// caller reserved room for everything it writes, so no write checks for room. The number forms
/// every writer uses (decimal, fixed-point seconds, hexadecimal, octal, binary) are written here,
/// once.
public struct ByteCursor {
    /// The next byte to write.
    public var p: UnsafeMutablePointer<UInt8>

    /// A cursor writing at `p` (room for what is written there is the caller's to provide).
    @inlinable @inline(__always)
    public init(_ p: UnsafeMutablePointer<UInt8>) { self.p = p }

    /// Writes one byte.
    @inlinable @inline(__always)
    public mutating func byte(_ b: UInt8) { p.pointee = b; p += 1 }

    /// Writes text.
    @inlinable @inline(__always)
    public mutating func write(_ s: StaticString) { bytes(s.utf8Start, s.utf8CodeUnitCount) }

    /// Writes `n` bytes from `b`.
    @inlinable @inline(__always)
    public mutating func bytes(_ b: UnsafePointer<UInt8>, _ n: Int) {
        UnsafeMutableRawPointer(p).copyBytesInline(from: UnsafeRawPointer(b), count: n)
        p += n
    }

    /// Writes raw bytes.
    @inlinable @inline(__always)
    public mutating func bytes(_ b: UnsafeRawBufferPointer) {
        if let a = b.baseAddress { bytes(a.assumingMemoryBound(to: UInt8.self), b.count) }
    }

    /// Writes a decimal unsigned integer (at most 20 bytes).
    @inlinable @inline(__always)
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

    /// Writes a decimal integer (at most 20 bytes; 21 with the sign).
    @inlinable @inline(__always)
    public mutating func int(_ v: Int64) {
        if v < 0 { byte(0x2D); uint(v.magnitude) } else { uint(UInt64(v)) }
    }

    /// Writes `v` (< 10⁹) as exactly nine digits, zeros first.
    @inlinable @inline(__always)
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

    /// Writes nanoseconds as `[-]seconds.nnnnnnnnn` (at most ``secondsRoom`` bytes).
    @inlinable @inline(__always)
    public mutating func seconds(_ ns: Int64) {
        if ns < 0 { byte(0x2D) }
        let a = ns.magnitude
        uint(a / 1_000_000_000)
        byte(0x2E)
        nineDigits(a % 1_000_000_000)
    }

    /// Room enough for ``seconds(_:)``: a sign, at most 10 digits of seconds, the point and 9 digits.
    public static var secondsRoom: Int { 22 }

    /// Writes `v` in uppercase hexadecimal digits, no prefix (at most 16 bytes).
    @inlinable
    public mutating func hex(_ v: UInt64) {
        let n = v == 0 ? 1 : (67 &- v.leadingZeroBitCount) >> 2
        let digits = ByteCursor.upperHex.utf8Start
        for i in 0..<n { p[n &- 1 &- i] = digits[Int(truncatingIfNeeded: (v >> UInt64(4 &* i)) & 15)] }
        p += n
    }

    /// Writes `v` in octal digits, no prefix (at most 22 bytes).
    @inlinable
    public mutating func octal(_ v: UInt64) {
        let n = v == 0 ? 1 : (66 &- v.leadingZeroBitCount) / 3
        for i in 0..<n { p[n &- 1 &- i] = 0x30 &+ UInt8(truncatingIfNeeded: (v >> UInt64(3 &* i)) & 7) }
        p += n
    }

    /// Writes the lowest `width` bits of `v` in binary, most significant first, zero-padded to
    /// `width` (at most 64) and at least the significant digits of `v` (at most 64 bytes).
    @inlinable
    public mutating func binary(_ v: UInt64, width: Int) {
        let n = max(v == 0 ? 1 : 64 &- v.leadingZeroBitCount, min(width, 64))
        for i in 0..<n { p[n &- 1 &- i] = 0x30 &+ UInt8(truncatingIfNeeded: (v >> UInt64(i)) & 1) }
        p += n
    }

    /// 10^`t` (0 ≤ `t` ≤ 19). A switch, which the compiler turns into a constant table: a `static let`
    /// array is reached through a lazy-initialization check (`swift_once`) at every use.
    @usableFromInline @inline(__always)
    static func powerOfTen(_ t: Int) -> UInt64 {
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

    /// "00", "01", … "99" (a literal: no lazy global).
    @usableFromInline static var digitPairs: StaticString {
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
    }

    /// Uppercase hexadecimal digits (babeltrace2's `0x…` integers).
    @usableFromInline static var upperHex: StaticString { "0123456789ABCDEF" }
}
