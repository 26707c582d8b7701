/// Lazily skipped event bodies and the field references that read them in place.
///
/// An event body (stream event context + event context + payload) made only of byte-sized, byte-aligned fields
/// and strings is not decoded when the event is read: `CTFStream.next()` only finds where it ends (the fixed bytes
/// plus one `memchr` per string) and records where each run of fixed bytes between strings starts
/// (`segmentBase`). A field is then read straight from the mapped file at `segmentBase[segment] + offset`, all
/// bytes of which were bounds-checked when the body was skipped. Anything else (bit fields, big-endian or odd-sized
/// integers, floats, nested structures, sequences, variants) decodes the whole body into the slots on first access
/// (`materialize()`), as before.

/// Where one top-level field of an event class's body lives, resolved once per class.
@usableFromInline
struct FieldRef {
    /// Byte offset of the field from `segmentBase[segment]`.
    @usableFromInline var offset: Int32 = 0
    /// The run of fixed bytes holding the field: 0 from the body start, j after the body's j-th string.
    @usableFromInline var segment: Int16 = 0
    /// How to read it in place: 1, 2, 4 or 8 bytes little endian, negative when signed;
    /// 0 when it cannot be read in place (the body is decoded, then `slot` read).
    @usableFromInline var width: Int8 = 0
    /// What the field is, for the byte accessors.
    @usableFromInline var form: Form = .other
    /// Slot of its value in the decoded body; -1 when the field is not an integer (the integer accessors give nil).
    @usableFromInline var slot: Int32 = -1
    /// Element count of a text array.
    @usableFromInline var count: Int32 = 0

    @usableFromInline
    enum Form: Int8 { case other, string, textArray }
}

/// How an event class's combined body program can be skipped: the bytes of each fixed run around its strings, and
/// where each integer, string and array slot lives.
struct LazyBodyLayout {
    /// Bytes of each run of fixed fields; one more than the number of strings.
    var segments: [Int] = [0]
    /// Per slot: location and in-place width (integers), or location (strings, arrays).
    var bySlot: [Int: FieldRef] = [:]

    /// The layout of a program, or nil when it holds anything but byte-aligned fields of whole bytes and strings.
    init?(_ ops: ArraySlice<Op>) {
        var offset = 0
        for op in ops {
            let slot = Int(op.slot)
            var ref = FieldRef()
            ref.segment = Int16(segments.count - 1)
            ref.offset = Int32(clamping: offset)
            ref.slot = op.slot
            switch op.kind {
            case .align:
                // Every field is a whole number of bytes: the position stays byte-aligned, a byte alignment is a no-op.
                guard op.align <= 8 else { return nil }
                continue
            case .int8, .int16, .int32, .int64:
                guard op.flags & 12 == 0 else { return nil }
                let size = op.kind == .int8 ? 1 : op.kind == .int16 ? 2 : op.kind == .int32 ? 4 : 8
                ref.width = Int8(op.flags & 1 != 0 ? -size : size)
                bySlot[slot] = ref
                offset += size
            case .intBits:
                // Floats, big-endian and odd-sized integers: skipped by size, decoded on access.
                guard op.size % 8 == 0, op.flags & 12 == 0 else { return nil }
                bySlot[slot] = ref
                offset += Int(op.size) / 8
            case .arrayFixed:
                guard op.aux2 % 8 == 0 else { return nil }
                ref.count = op.aux
                bySlot[slot] = ref
                offset += Int(op.aux) * Int(op.aux2) / 8
            case .string:
                bySlot[slot] = ref
                segments[segments.count - 1] = offset
                segments.append(0)
                offset = 0
                // segmentBase holds one Int per string, and the segment index must fit a FieldRef.
                guard segments.count <= 64 else { return nil }
            default:
                return nil
            }
            // Each term is below 2^59 bytes; stopping past sizeCap keeps the sums from overflowing and the offsets
            // within Int32 (an offset past it is not representable: decode instead).
            guard offset <= Int(Int32.max) / 2, offset <= sizeCap else { return nil }
        }
        segments[segments.count - 1] = offset
    }

    /// Number of strings in the body.
    var strings: Int { segments.count - 1 }

    /// The reference of a top-level field of the body.
    func ref(for f: FieldLayout) -> FieldRef {
        var r = bySlot[f.slot] ?? FieldRef(slot: Int32(f.slot))
        switch (f.storage, f.type) {
        case (.scalar, .integer), (.scalar, .enumeration):
            r.form = .other
        case (.string, _):
            r.form = .string
            r.width = 0; r.slot = -1
        case (.fixedArray, .array(let e, _)) where e.isTextElement && bySlot[f.slot] != nil:
            r.form = .textArray
            r.width = 0; r.slot = -1
        default:
            r = FieldRef()
        }
        return r
    }

    /// References of fields of a class whose body is not skipped: integers are read from their slot.
    static func slotRef(for f: FieldLayout) -> FieldRef {
        switch (f.storage, f.type) {
        case (.scalar, .integer), (.scalar, .enumeration): return FieldRef(slot: Int32(f.slot))
        default: return FieldRef()
        }
    }
}
