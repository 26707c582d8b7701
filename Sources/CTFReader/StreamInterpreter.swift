import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The field interpreter: runs the compiled programs of a stream class over a packet.

extension CTFStream {
    func fail(_ pos: Int, _ field: Int32, _ msg: String) -> CTFReaderError {
        .malformed(path: path, offset: pos >> 3, field: names[Int(field)], message: msg)
    }

    /// Thrown internally when a read would pass the end of the content.
    struct OutOfBounds: Error { var pos: Int; var field: Int32; var message: String }

    /// Runs a compiled program from `pos`.
    func run(_ program: Int) throws {
        let l = linked
        let opsBuf = l.opsBuf
        let start = l.progStart[program], count = l.progCount[program]
        var i = start
        let stop = start + count
        var p = pos
        let e = end
        let b = base
        let s = slots
        let origin = packetOffset &<< 3
        while i < stop {
            let op = opsBuf[i]
            i += 1
            switch op.kind {
            case .align:
                let q = alignUp(p, Int(op.align), from: origin)
                guard q <= e else {
                    pos = p
                    throw OutOfBounds(pos: p, field: op.field, message: "alignment to \(op.align) bits moves to byte \(q >> 3), past the end of the packet content (byte \(e >> 3))")
                }
                p = q
            case .int8:
                guard p + 8 <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "8-bit integer runs past the end of the packet content") }
                let v = UInt64(b.load(fromByteOffset: p >> 3, as: UInt8.self))
                s[Int(op.slot)] = op.flags & 1 != 0 ? UInt64(bitPattern: Int64(Int8(truncatingIfNeeded: v))) : v
                if op.flags & 8 != 0 { eventID = v }
                p += 8
            case .int16:
                guard p + 16 <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "16-bit integer runs past the end of the packet content") }
                let v = UInt64(UInt16(littleEndian: b.loadUnaligned(fromByteOffset: p >> 3, as: UInt16.self)))
                s[Int(op.slot)] = op.flags & 1 != 0 ? UInt64(bitPattern: Int64(Int16(truncatingIfNeeded: v))) : v
                if op.flags & 8 != 0 { eventID = v }
                p += 16
            case .int32:
                guard p + 32 <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "32-bit integer runs past the end of the packet content") }
                let v = UInt64(UInt32(littleEndian: b.loadUnaligned(fromByteOffset: p >> 3, as: UInt32.self)))
                s[Int(op.slot)] = op.flags & 1 != 0 ? UInt64(bitPattern: Int64(Int32(truncatingIfNeeded: v))) : v
                if op.flags & 8 != 0 { eventID = v }
                p += 32
            case .int64:
                guard p + 64 <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "64-bit integer runs past the end of the packet content") }
                let v = UInt64(littleEndian: b.loadUnaligned(fromByteOffset: p >> 3, as: UInt64.self))
                s[Int(op.slot)] = v
                if op.flags & 8 != 0 { eventID = v }
                p += 64
            case .intBits:
                let size = Int(op.size)
                guard p + size <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "\(size)-bit field runs past the end of the packet content") }
                var v = readBits(b, p, size, bigEndian: op.flags & 2 != 0)
                p += size
                if op.flags & 4 != 0 {
                    if size >= 64 {
                        clockValue = v
                    } else {
                        clockValue = EventDecoder.extendClock(clockValue, low: v, bits: UInt64(size))
                    }
                }
                if op.flags & 8 != 0 { eventID = v }
                if op.flags & 1 != 0 { v = UInt64(bitPattern: signExtend(v, size)) }
                s[Int(op.slot)] = v
            case .string:
                guard p & 7 == 0, p < e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "string starts past the end of the packet content") }
                let start = p >> 3
                guard let n = memchrRaw(b.advanced(by: start), (e >> 3) - start) else {
                    pos = p; throw OutOfBounds(pos: p, field: op.field, message: "unterminated string (no NUL before the end of the packet content)")
                }
                s[Int(op.slot)] = UInt64(p)
                s[Int(op.slot) + 1] = UInt64(n)
                p += (n + 1) << 3
            case .mark:
                s[Int(op.slot)] = UInt64(p)
            case .arrayFixed:
                let total = Int(op.aux) * Int(op.aux2)
                guard p + total <= e else { pos = p; throw OutOfBounds(pos: p, field: op.field, message: "array of \(op.aux) elements runs past the end of the packet content") }
                s[Int(op.slot)] = UInt64(p)
                s[Int(op.slot) + 1] = UInt64(op.aux)
                p += total
            case .seqFixed:
                let n = s[Int(op.aux)]
                let elemBits = Int(op.aux2)
                let remaining = max(0, e - p)
                if elemBits > 0 {
                    guard n <= UInt64(remaining / elemBits) else {
                        pos = p
                        throw fail(p, op.field, "sequence length \(n) exceeds what the remaining \(max(0, remaining) / 8) bytes of the packet can hold")
                    }
                } else if n > UInt64(Int32.max) {
                    throw fail(p, op.field, "sequence length \(n) is not plausible")
                }
                s[Int(op.slot)] = UInt64(p)
                s[Int(op.slot) + 1] = n
                p += Int(n) * elemBits
            case .generic, .seqGeneric:
                s[Int(op.slot)] = UInt64(p)
                var count: Int? = nil
                if op.kind == .seqGeneric {
                    let n = s[Int(op.aux)]
                    let t = types[Int(op.aux2)]
                    guard n <= UInt64(max(0, e - p)) || (t.minimumBitSize == 0 && n <= UInt64(Nesting.maxEmptyElements)) else {
                        throw fail(p, op.field, "sequence length \(n) exceeds what the remaining \(max(0, e - p) / 8) bytes of the packet can hold")
                    }
                    count = Int(n)
                    s[Int(op.slot) + 1] = n
                }
                let w = walker()
                var scope: [String: ScopeValue] = [:]
                let t = types[Int(op.aux2)]
                do {
                    if let c = count {
                        let minBits = max(1, t.minimumBitSize)
                        guard c <= (e - p) / minBits + 1 || (t.minimumBitSize == 0 && c <= Nesting.maxEmptyElements) else {
                            throw fail(p, op.field, "sequence length \(c) exceeds the packet")
                        }
                        for _ in 0..<c { _ = try w.walk(t, &p, field: names[Int(op.field)], decode: false, scope: &scope) }
                    } else {
                        _ = try w.walk(t, &p, field: names[Int(op.field)], decode: false, scope: &scope)
                    }
                } catch let err as CTFReaderError {
                    if case .malformed(_, let o, _, let m) = err, m.contains("past the end") || m.contains("unterminated") {
                        pos = p; throw OutOfBounds(pos: o * 8, field: op.field, message: m)
                    }
                    throw err
                }
            case .variant:
                s[Int(op.slot)] = UInt64(p)
                let vi = Int(op.aux)
                let raw = s[l.varTagSlot[vi]]
                var chosen = -1
                let rs = l.varRangeStart[vi], re = rs + l.varRangeCount[vi]
                var r = rs
                if l.varSigned[vi] {
                    let v = Int64(bitPattern: raw)
                    while r < re { if v >= l.rangeLo[r] && v <= l.rangeHi[r] { chosen = l.rangeProg[r]; break }; r += 1 }
                } else {
                    while r < re { if raw >= UInt64(bitPattern: l.rangeLo[r]) && raw <= UInt64(bitPattern: l.rangeHi[r]) { chosen = l.rangeProg[r]; break }; r += 1 }
                }
                guard chosen >= 0 else { pos = p; throw fail(p, op.field, "variant tag value \(Int64(bitPattern: raw)) selects no option") }
                pos = p
                try run(chosen)
                p = pos
            }
        }
        pos = p
    }
}
