/// Reads `size` (1…64) bits at absolute bit offset `pos` from `base` (the caller checked the bounds).
@inline(__always)
func readBits(_ base: UnsafeRawPointer, _ pos: Int, _ size: Int, bigEndian: Bool) -> UInt64 {
    let byte = pos >> 3
    let shift = pos & 7
    if shift == 0 && !bigEndian {
        switch size {
        case 8: return UInt64(base.load(fromByteOffset: byte, as: UInt8.self))
        case 16: return UInt64(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: byte, as: UInt16.self)))
        case 32: return UInt64(UInt32(littleEndian: base.loadUnaligned(fromByteOffset: byte, as: UInt32.self)))
        case 64: return UInt64(littleEndian: base.loadUnaligned(fromByteOffset: byte, as: UInt64.self))
        default: break
        }
    }
    if shift == 0 && bigEndian {
        switch size {
        case 8: return UInt64(base.load(fromByteOffset: byte, as: UInt8.self))
        case 16: return UInt64(UInt16(bigEndian: base.loadUnaligned(fromByteOffset: byte, as: UInt16.self)))
        case 32: return UInt64(UInt32(bigEndian: base.loadUnaligned(fromByteOffset: byte, as: UInt32.self)))
        case 64: return UInt64(bigEndian: base.loadUnaligned(fromByteOffset: byte, as: UInt64.self))
        default: break
        }
    }
    let nbytes = (shift + size + 7) >> 3
    let p = base.advanced(by: byte).assumingMemoryBound(to: UInt8.self)
    let mask: UInt128 = (UInt128(1) << size) - 1
    var acc: UInt128 = 0
    if bigEndian {
        for i in 0..<nbytes { acc = (acc << 8) | UInt128(p[i]) }
        return UInt64(truncatingIfNeeded: (acc >> (nbytes * 8 - shift - size)) & mask)
    } else {
        for i in 0..<nbytes { acc |= UInt128(p[i]) << (8 * i) }
        return UInt64(truncatingIfNeeded: (acc >> shift) & mask)
    }
}

/// Sign-extends the low `size` bits of `v`.
@inline(__always)
func signExtend(_ v: UInt64, _ size: Int) -> Int64 {
    if size >= 64 { return Int64(bitPattern: v) }
    let s = 64 - size
    return Int64(bitPattern: v << UInt64(s)) >> Int64(s)
}

@inline(__always)
func alignUp(_ pos: Int, _ a: Int) -> Int {
    a <= 1 ? pos : (pos + a - 1) & ~(a - 1)
}

/// `pos` rounded up to a multiple of `a` bits counted from `origin` (the packet's first bit): CTF alignments are
/// relative to the packet, which need not start at an aligned file offset (babeltrace2 aligns the same way;
/// `CompoundTypeTests.alignmentFromThePacketStart`).
@inline(__always)
func alignUp(_ pos: Int, _ a: Int, from origin: Int) -> Int {
    a <= 1 ? pos : ((pos &- origin &+ a &- 1) & ~(a &- 1)) &+ origin
}
