#if canImport(Glibc)
import Glibc
#endif

/// The per-event formatting loops: constant text from the event class's ``ClassPlan``, values read from the
/// decoder's slots and written as bytes (no `String`, no allocation, except for the rare field kinds that go
/// through the decoded fallback).
extension ByteSink {
    @inline(__always)
    func range(_ p: ClassPlan, _ r: TextRange) {
        bytes(p.arena + Int(r.offset), Int(r.count))
    }

    /// One event in babeltrace2's text form (`--clock-seconds`), newline included.
    func textEvent(_ s: CTFStream, _ p: ClassPlan, previous: Int64?) {
        let ts = s.timestamp
        reserving(2 * ByteCursor.secondsRoom + 5) { c in
            c.byte(91)
            c.seconds(ts)
            c.write("] (")
            if let l = previous {
                let d = ts &- l
                if d >= 0 { c.byte(43) }
                c.seconds(d)
            } else {
                c.write("+?.?????????")
            }
        }
        s.materialize()
        if var st = p.textSteps {
            while true {
                range(p, st.pointee.prefix)
                let v = Int(st.pointee.value)
                if v >= 0 { textValue(s, p, p.fields + v) } else if v == Int(Step.cpu) { uint(s.slots[p.cpuSlot]) } else { return }
                st += 1
            }
        }
        range(p, p.textHead)
        var first = true
        if p.packetContext.present { first = false; textGroup(s, p, p.packetContext) }
        if p.streamContext.present { if !first { write(", ") }; first = false; textGroup(s, p, p.streamContext) }
        if p.eventContext.present { if !first { write(", ") }; first = false; textGroup(s, p, p.eventContext) }
        if p.payload.present { if !first { write(", ") }; textGroup(s, p, p.payload) }
        byte(10)
    }

    private func textGroup(_ s: CTFStream, _ p: ClassPlan, _ g: FieldGroup) {
        write("{ ")
        var any = false
        for i in g.start ..< g.start + g.count {
            let f = p.fields + i
            switch f.pointee.kind {
            case .other, .wideInteger:
                guard let v = s.value(p.layouts[f.pointee.layout]) else { continue }
                let t = p.layouts[f.pointee.layout].type
                if any { write(", ") }
                any = true
                range(p, f.pointee.textName)
                write(f.pointee.kind == .wideInteger ? CTFEventFormatter.wideIntegerText(v, t) : CTFEventFormatter.text(v, t))
            default:
                if any { write(", ") }
                any = true
                range(p, f.pointee.textName)
                textValue(s, p, f)
            }
        }
        if any { write(" }") } else { byte(125) }
    }

    @inline(__always)
    private func textValue(_ s: CTFStream, _ p: ClassPlan, _ f: UnsafeMutablePointer<FieldPlan>) {
        let raw = s.slots[f.pointee.slot]
        switch f.pointee.kind {
        case .integer:
            textInteger(raw, f)
        case .enumeration:
            textEnum(raw, labelBits: raw, p, f)
        case .float32:
            general(Double(Float(bitPattern: UInt32(truncatingIfNeeded: raw))))
        case .float64:
            general(Double(bitPattern: raw))
        case .string:
            quotedRaw(UnsafeRawBufferPointer(start: s.base + Int(raw >> 3), count: Int(s.slots[f.pointee.slot + 1])), json: false)
        case .text:
            quotedRaw(textBytes(s, raw, f), json: false)
        case .integerArray:
            let n = Int(s.slots[f.pointee.slot + 1])
            if n == 0 { write("[ ]"); return }
            write("[ ")
            var pos = Int(raw)
            for i in 0..<n {
                if i > 0 { write(", ") }
                byte(91); uint(UInt64(i)); write("] = ")
                let (bits, value) = element(s, &pos, f)
                if f.pointee.elementIsEnum { textEnum(value, labelBits: bits, p, f) } else { textInteger(value, f) }
            }
            write(" ]")
        case .wideInteger, .other:
            break
        }
    }

    /// The bytes of a text array or sequence, up to its first NUL.
    @inline(__always)
    private func textBytes(_ s: CTFStream, _ raw: UInt64, _ f: UnsafeMutablePointer<FieldPlan>) -> UnsafeRawBufferPointer {
        let start = s.base + Int(raw >> 3)
        let n = Int(s.slots[f.pointee.slot + 1])
        let len = n > 0 ? (memchr(start, 0, n).map { UnsafeRawPointer($0) - start } ?? n) : 0
        return UnsafeRawBufferPointer(start: start, count: len)
    }

    /// Reads the array element at `pos` (advancing it): its raw bits and its value (sign-extended when signed).
    /// Like the decoder's walker, enumeration labels of elements are matched against the raw bits.
    @inline(__always)
    private func element(_ s: CTFStream, _ pos: inout Int, _ f: UnsafeMutablePointer<FieldPlan>) -> (UInt64, UInt64) {
        let size = f.pointee.size
        pos = alignUp(pos, f.pointee.elementAlignment, from: s.packetOffset &<< 3)
        let bits = readBits(s.base, pos, size, bigEndian: f.pointee.bigEndian)
        pos += size
        return (bits, f.pointee.signed ? UInt64(bitPattern: signExtend(bits, size)) : bits)
    }

    /// An integer in its display base: decimal (signed or not), `0x` + uppercase hex, `0` + octal, or `0b` + every
    /// bit of the field; the non-decimal forms show the value's bits within the field's size.
    @inline(__always)
    private func textInteger(_ bits: UInt64, _ f: UnsafeMutablePointer<FieldPlan>) {
        let b = f.pointee.base
        if b == 10 {
            if f.pointee.signed { int(Int64(bitPattern: bits)) } else { uint(bits) }
            return
        }
        let size = f.pointee.size
        let masked = displayedBits(bits, size: size, base: Int(b), signed: f.pointee.signed)
        switch b {
        case 16: reserving(18) { $0.write("0x"); $0.hex(masked) }
        case 8: reserving(23) { $0.byte(48); $0.octal(masked) }
        default: reserving(66) { $0.write("0b"); $0.binary(masked, width: size) }
        }
    }

    /// Whether enumeration mapping `m` contains the value with bits `raw`.
    @inline(__always)
    private func contains(_ m: UnsafeMutablePointer<EnumMapPlan>, _ raw: UInt64, signed: Bool) -> Bool {
        if signed {
            let v = Int64(bitPattern: raw)
            return v >= m.pointee.lower && v <= m.pointee.upper
        }
        return raw >= UInt64(bitPattern: m.pointee.lower) && raw <= UInt64(bitPattern: m.pointee.upper)
    }

    /// `( "label" : container = N )`, `( { "a", "b" } : container = N )` or `( <unknown> : container = N )`.
    private func textEnum(_ value: UInt64, labelBits: UInt64, _ p: ClassPlan, _ f: UnsafeMutablePointer<FieldPlan>) {
        write("( ")
        let m0 = p.maps + f.pointee.mapStart, n = f.pointee.mapCount, signed = f.pointee.signed
        var matches = 0, firstMatch = -1
        for i in 0..<n where contains(m0 + i, labelBits, signed: signed) {
            matches += 1
            if firstMatch < 0 { firstMatch = i }
        }
        switch matches {
        case 0: write("<unknown>")
        case 1: range(p, m0[firstMatch].text)
        default:
            write("{ ")
            var any = false
            for i in firstMatch..<n where contains(m0 + i, labelBits, signed: signed) {
                if any { write(", ") }
                any = true
                range(p, m0[i].text)
            }
            write(" }")
        }
        write(" : container = ")
        textInteger(value, f)
        write(" )")
    }

    /// One event as a JSON object on one line.
    func jsonEvent(_ s: CTFStream, _ p: ClassPlan) {
        write("{\"timestamp_ns\":")
        int(s.timestamp)
        s.materialize()
        if var st = p.jsonSteps {
            while true {
                range(p, st.pointee.prefix)
                let v = Int(st.pointee.value)
                if v >= 0 { jsonValue(s, p, p.fields + v) } else if v == Int(Step.cpu) { uint(s.slots[p.cpuSlot]) } else { return }
                st += 1
            }
        }
        range(p, p.jsonName)
        if p.cpuSlot >= 0 {
            write(",\"cpu_id\":")
            uint(s.slots[p.cpuSlot])
        }
        range(p, p.jsonHost)
        // `"context":{…}` only when a context field is printed: opened before the first one.
        var any = false
        jsonFields(s, p, p.streamContext, &any, opening: ",\"context\":{")
        jsonFields(s, p, p.eventContext, &any, opening: ",\"context\":{")
        if any { byte(125) }
        write(",\"fields\":{")
        any = false
        jsonFields(s, p, p.payload, &any, opening: "")
        write("}}\n")
    }

    /// Writes the fields of `g`, a comma before each but the first of the object (`opening` before that one).
    private func jsonFields(_ s: CTFStream, _ p: ClassPlan, _ g: FieldGroup, _ any: inout Bool, opening: StaticString) {
        for i in g.start ..< g.start + g.count {
            let f = p.fields + i
            switch f.pointee.kind {
            case .other, .wideInteger:
                guard let v = s.value(p.layouts[f.pointee.layout]) else { continue }
                let t = p.layouts[f.pointee.layout].type
                if any { byte(44) } else { write(opening) }
                any = true
                range(p, f.pointee.jsonName)
                write(f.pointee.kind == .wideInteger ? CTFEventFormatter.wideIntegerJSON(v, t) : CTFEventFormatter.json(v))
            default:
                if any { byte(44) } else { write(opening) }
                any = true
                range(p, f.pointee.jsonName)
                jsonValue(s, p, f)
            }
        }
    }

    @inline(__always)
    private func jsonValue(_ s: CTFStream, _ p: ClassPlan, _ f: UnsafeMutablePointer<FieldPlan>) {
        let raw = s.slots[f.pointee.slot]
        switch f.pointee.kind {
        case .integer:
            jsonInteger(raw, f)
        case .enumeration:
            jsonEnum(raw, labelBits: raw, p, f)
        case .float32:
            jsonDouble(Double(Float(bitPattern: UInt32(truncatingIfNeeded: raw))))
        case .float64:
            jsonDouble(Double(bitPattern: raw))
        case .string:
            quotedRaw(UnsafeRawBufferPointer(start: s.base + Int(raw >> 3), count: Int(s.slots[f.pointee.slot + 1])), json: true)
        case .text:
            quotedRaw(textBytes(s, raw, f), json: true)
        case .integerArray:
            byte(91)
            var pos = Int(raw)
            for i in 0..<Int(s.slots[f.pointee.slot + 1]) {
                if i > 0 { byte(44) }
                let (bits, value) = element(s, &pos, f)
                if f.pointee.elementIsEnum { jsonEnum(value, labelBits: bits, p, f) } else { jsonInteger(value, f) }
            }
            byte(93)
        case .wideInteger, .other:
            break
        }
    }

    @inline(__always)
    private func jsonInteger(_ bits: UInt64, _ f: UnsafeMutablePointer<FieldPlan>) {
        if f.pointee.signed { int(Int64(bitPattern: bits)) } else { uint(bits) }
    }

    /// `{"value":N,"labels":["a","b"]}`.
    private func jsonEnum(_ value: UInt64, labelBits: UInt64, _ p: ClassPlan, _ f: UnsafeMutablePointer<FieldPlan>) {
        write("{\"value\":")
        jsonInteger(value, f)
        write(",\"labels\":[")
        let m0 = p.maps + f.pointee.mapStart, signed = f.pointee.signed
        var any = false
        for i in 0..<f.pointee.mapCount where contains(m0 + i, labelBits, signed: signed) {
            if any { byte(44) }
            any = true
            range(p, m0[i].json)
        }
        write("]}")
    }

    /// A double as Swift prints it (shortest round-trip form); non-finite values as strings.
    private func jsonDouble(_ d: Double) {
        if d.isFinite { write(d.description) } else { quoted(d.description, json: true) }
    }
}

/// The bits babeltrace2 2.0's text sink shows of an integer (`print_integer` in its `pretty` plugin), given its
/// value's bits (sign-extended when signed): binary every bit of the field; hexadecimal the field's bits rounded
/// up to whole nibbles (a signed 9-bit −256 is `0xF00`); octal, for a signed field, its bits rounded up to whole
/// octal digits (a signed 7-bit −64 is `0700`) and, for an unsigned one, the value.
@inline(__always)
func displayedBits(_ bits: UInt64, size: Int, base: Int, signed: Bool) -> UInt64 {
    guard size < 64 else { return bits }
    let shown: Int
    switch base {
    case 16: shown = (size + 3) & ~3
    case 8: shown = signed ? ((size - 1) / 3 + 1) * 3 : 64
    default: shown = size
    }
    return shown >= 64 ? bits : bits & ((UInt64(1) << UInt64(shown)) - 1)
}
