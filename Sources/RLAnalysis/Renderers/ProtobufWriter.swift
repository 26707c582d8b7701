import CTFReader

/// A small protocol-buffers encoder (the wire format of protobuf.dev's "Encoding" page: varints,
/// 64-bit fixed, length-delimited fields) writing one message at a time into a reusable buffer, for
/// the Perfetto export (``PerfettoTraceSink``). A nested message's length comes before its bytes:
/// ``open(_:)`` writes its tag and keeps one byte for the length, ``close(_:)`` writes the length
/// there (a body of 128 bytes or more — a hang's stack text — moves right to make room for a longer
/// one: the output has minimal lengths, no padded ones). The buffer is allocated once and grown
/// when a message outgrows it: nothing is allocated per message.
final class ProtobufWriter {
    /// The message so far: `count` bytes of `capacity` at `base`.
    private(set) var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Bytes written.
    private(set) var count = 0

    init(capacity: Int = 1024) {
        self.capacity = max(64, capacity)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// Starts a new message (the buffer is kept).
    @inline(__always) func reset() { count = 0 }

    /// The bytes written.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    @inline(__always) private func room(_ n: Int) {
        if count &+ n > capacity { grow(count + n) }
    }

    @inline(never) private func grow(_ n: Int) {
        let c = max(n, capacity * 2)
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: c)
        p.update(from: base, count: count)
        base.deallocate()
        base = p
        capacity = c
    }

    /// The number of bytes of `v` as a varint (1…10).
    @inline(__always) static func varintSize(_ v: UInt64) -> Int {
        // 7 bits a byte: (bit length + 6) / 7, at least one.
        let bits = 64 &- (v | 1).leadingZeroBitCount
        return (bits &+ 6) / 7
    }

    /// Writes `v` as a varint at `p` (room checked by the caller); returns the bytes written.
    @inline(__always) @discardableResult
    static func putVarint(_ v: UInt64, at p: UnsafeMutablePointer<UInt8>) -> Int {
        var v = v, i = 0
        while v >= 0x80 { p[i] = UInt8(truncatingIfNeeded: v) | 0x80; v >>= 7; i &+= 1 }
        p[i] = UInt8(truncatingIfNeeded: v)
        return i &+ 1
    }

    /// Appends `v` as a varint to `a`.
    @inline(__always) static func appendVarint(_ v: UInt64, to a: inout [UInt8]) {
        var v = v
        while v >= 0x80 { a.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
        a.append(UInt8(truncatingIfNeeded: v))
    }

    /// A raw varint.
    @inline(__always) func varint(_ v: UInt64) {
        room(10)
        count &+= ProtobufWriter.putVarint(v, at: base + count)
    }

    /// A field's tag: field number and wire type (0 varint, 1 fixed64, 2 length-delimited).
    @inline(__always) func tag(_ field: UInt32, _ wire: UInt32) { varint(UInt64(field << 3 | wire)) }

    /// A `uint64`/`uint32`/`bool`/enum field.
    @inline(__always) func uint(_ field: UInt32, _ v: UInt64) { tag(field, 0); varint(v) }

    /// An `int64`/`int32` field (two's complement: a negative value takes ten bytes, as protobuf's).
    @inline(__always) func int(_ field: UInt32, _ v: Int64) { tag(field, 0); varint(UInt64(bitPattern: v)) }

    /// A `fixed64` field.
    @inline(__always) func fixed64(_ field: UInt32, _ v: UInt64) {
        tag(field, 1)
        room(8)
        UnsafeMutableRawPointer(base + count).storeBytes(of: v.littleEndian, as: UInt64.self)
        count &+= 8
    }

    /// A `double` field.
    @inline(__always) func double(_ field: UInt32, _ v: Double) { fixed64(field, v.bitPattern) }

    /// A `bytes`/`string` field.
    @inline(__always) func bytes(_ field: UInt32, _ b: UnsafeRawBufferPointer) {
        tag(field, 2)
        varint(UInt64(b.count))
        room(b.count)
        if let a = b.baseAddress, b.count > 0 { UnsafeMutableRawPointer(base + count).copyMemory(from: a, byteCount: b.count) }
        count &+= b.count
    }

    /// A `string` field.
    func string(_ field: UInt32, _ s: String) {
        var s = s
        s.withUTF8 { bytes(field, UnsafeRawBufferPointer($0)) }
    }

    /// Opens a nested message (field `field`): writes its tag and one byte for its length, and
    /// returns where its body starts, for ``close(_:)``.
    @inline(__always) func open(_ field: UInt32) -> Int {
        tag(field, 2)
        room(1)
        count &+= 1
        return count
    }

    /// Closes the nested message whose body started at `start`: its length goes in front of it —
    /// in the byte kept for it when shorter than 128 bytes (the usual case), else the body moves
    /// right to make room.
    @inline(__always) func close(_ start: Int) {
        let n = count &- start
        if n < 0x80 { base[start &- 1] = UInt8(truncatingIfNeeded: n); return }
        let k = ProtobufWriter.varintSize(UInt64(n))
        room(k &- 1)
        UnsafeMutableRawPointer(base + start + k - 1).copyMemory(from: base + start, byteCount: n)   // memmove
        ProtobufWriter.putVarint(UInt64(n), at: base + start - 1)
        count &+= k &- 1
    }
}

/// Protocol-buffers fields written straight into a ``ByteSink``'s buffer (the hot packets of the
/// Perfetto export: a slice's begin and end, written once each per slice, with no copy through a
/// ``ProtobufWriter``). The caller reserved the room (``ByteSink/reserving(_:_:)``).
extension ByteCursor {
    /// A raw varint (at most 10 bytes).
    @inline(__always) mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 { byte(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
        byte(UInt8(truncatingIfNeeded: v))
    }

    /// A varint field whose tag fits one byte (field numbers 1…15).
    @inline(__always) mutating func field(_ tag: UInt8, _ v: UInt64) { byte(tag); varint(v) }

    /// Opens a nested message (or the packet) whose body will be shorter than 128 bytes: its tag
    /// and one byte for its length; returns where the body starts, for ``close(_:)``.
    @inline(__always) mutating func open(_ tag: UInt8) -> UnsafeMutablePointer<UInt8> {
        byte(tag); byte(0)
        return p
    }

    /// Writes the length of the body begun at `start` (shorter than 128 bytes) in front of it.
    @inline(__always) mutating func close(_ start: UnsafeMutablePointer<UInt8>) {
        (start - 1).pointee = UInt8(truncatingIfNeeded: p - start)
    }
}
