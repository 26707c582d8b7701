// Reading a fixed list of integer fields of the current event in one call: the positions resolved
// once per event class, the per-event work a few loads (for analyses that decode millions of events
// of a known schema, such as rltrace's `runloop` decoder).

/// Where one integer field of an event class lies, resolved once from the metadata
/// (``CTFStream/integerRef(contextField:ofClass:)``, ``CTFStream/integerRef(payloadField:ofClass:)``);
/// read per event with ``CTFStream/readIntegers(_:count:into:)``.
public struct CTFIntegerRef: @unchecked Sendable {
    @usableFromInline var ref: FieldRef
    /// For a field read in place with one 8-byte load: `64 - 8 × size`, the shift that keeps the
    /// field's bytes (shifted left, then back right).
    @usableFromInline var shift: UInt64 = 0
    /// The bits of the value after the arithmetic right shift: all ones for a signed field (its
    /// sign extension kept) and for a 64-bit one, else the field's own bits (`2^(8 × size) − 1`).
    @usableFromInline var mask: Int64 = -1
    /// Where ``CTFStream/readIntegers(_:count:into:)`` stores the value: `out[destination]`.
    public var destination: Int {
        get { Int(ref.count) }
        set { ref.count = Int32(truncatingIfNeeded: newValue) }
    }
    @usableFromInline init(_ ref: FieldRef) {
        self.ref = ref
        self.ref.count = 0    // (the element count of a text array: unused for integers)
        let size = UInt64(abs(Int(ref.width)))
        if size > 0 { shift = 64 - 8 * size }
        mask = ref.width < 0 || size == 0 || size >= 8 ? -1 : Int64((UInt64(1) << (8 * size)) &- 1)
    }
    /// A field the class does not have (or that is not an integer): its value is left as it was.
    public static let absent = CTFIntegerRef(FieldRef())
    /// Whether the class has the field as an integer.
    public var isPresent: Bool { ref.width != 0 || ref.slot >= 0 }
    /// Whether the field is read where it lies, with one load, when the body is read in place (an
    /// integer of a fixed size and byte-aligned): a list of such references can be read with
    /// ``CTFStream/readIntegers(_:count:allInPlace:into:)``'s `allInPlace`.
    public var readsInPlace: Bool { ref.width != 0 }
}

extension CTFStream {
    /// The stream event context field at `index` (of ``streamContextFieldNames``) of event class
    /// `classIndex`, or ``CTFIntegerRef/absent``.
    public func integerRef(contextField index: Int, ofClass classIndex: Int) -> CTFIntegerRef {
        guard index >= 0, index < contextFieldCount, classIndex >= 0, classIndex < eventClasses.count else { return .absent }
        return CTFIntegerRef(contextRefs[classIndex &* contextFieldCount &+ index])
    }

    /// The payload field at `index` (of ``payloadFieldNames(ofClass:)``) of event class
    /// `classIndex`, or ``CTFIntegerRef/absent``.
    public func integerRef(payloadField index: Int, ofClass classIndex: Int) -> CTFIntegerRef {
        guard classIndex >= 0, classIndex < eventClasses.count, index >= 0, index < payloadFieldCounts[classIndex] else { return .absent }
        return CTFIntegerRef(payloadRefs[payloadFieldStart[classIndex] &+ index])
    }

    /// Reads `count` integer fields of the current event, each into `out[ref.destination]` (signed
    /// values sign-extended, unsigned ones as their bit pattern); an absent field leaves its entry
    /// as it was (leave absent fields out of the list). `refs` must have been resolved for the current event's class. In place for a lazily
    /// skipped body (every reference's bytes were bounds-checked when the body was skipped), else
    /// from the decoded slots — the same values as ``payloadInteger(at:)`` and
    /// ``streamContextInteger(at:)``, without their per-field checks.
    @inlinable @inline(__always)
    public func readIntegers(_ refs: UnsafePointer<CTFIntegerRef>, count: Int, into out: UnsafeMutablePointer<Int64>) {
        readIntegers(refs, count: count, into: UnsafeMutableRawPointer(out))
    }

    /// ``readIntegers(_:count:into:)`` into raw memory: each value stored as an `Int64` at byte
    /// offset `8 × ref.destination` of `out` (8-byte aligned) — straight into the 8-byte integer
    /// fields of a caller's record, whatever type that memory is bound to.
    @inlinable @inline(__always)
    public func readIntegers(_ refs: UnsafePointer<CTFIntegerRef>, count: Int, into out: UnsafeMutableRawPointer) {
        readIntegers(refs, count: count, allInPlace: false, into: out)
    }

    /// ``readIntegers(_:count:into:)``, told whether every reference ``CTFIntegerRef/readsInPlace``
    /// (worked out once per list): then a body read in place takes one load per field with no
    /// test of how the field is read (two instructions fewer per field on the per-event path).
    /// `allInPlace` true for a list that has a reference that does not read in place is a
    /// programming error (that field would be read from the wrong place).
    @inlinable @inline(__always)
    public func readIntegers(_ refs: UnsafePointer<CTFIntegerRef>, count: Int, allInPlace: Bool, into out: UnsafeMutableRawPointer) {
        let h = hot
        let lazy = h.pointee.lazyBody >= 0
        // (Its own loop: written as one loop with `allInPlace || r.ref.width != 0`, the compiler
        // kept the test per field: about 16 M more instructions for `report` on a 592k-event trace.)
        if allInPlace && lazy && (h.pointee.pos >> 3) &+ 8 <= wideLoadLimit {
            let b = base, seg = segmentBase
            var i = 0
            while i < count {
                let r = refs[i]
                let raw = UInt64(littleEndian: (b + (seg[Int(r.ref.segment)] &+ Int(r.ref.offset))).loadUnaligned(as: UInt64.self))
                let v = (Int64(bitPattern: raw &<< r.shift) &>> Int64(bitPattern: r.shift)) & r.mask
                out.storeBytes(of: v, toByteOffset: Int(r.ref.count) &<< 3, as: Int64.self)
                i &+= 1
            }
            return
        }
        // The usual case: a body read in place that ends at least 8 bytes before the end of the
        // mapping (every field lies before the event's end, `pos`), so each field is one 8-byte
        // load, its bytes kept by two shifts: no branch on the field's width or sign.
        if lazy && (h.pointee.pos >> 3) &+ 8 <= wideLoadLimit {
            let b = base, seg = segmentBase
            var i = 0
            while i < count {
                let r = refs[i]
                if r.ref.width != 0 {
                    let raw = UInt64(littleEndian: (b + (seg[Int(r.ref.segment)] &+ Int(r.ref.offset))).loadUnaligned(as: UInt64.self))
                    // Shifted up to the top, back down sign-extended, and masked to the field's
                    // bits unless it is signed: three operations, no branch.
                    let v = (Int64(bitPattern: raw &<< r.shift) &>> Int64(bitPattern: r.shift)) & r.mask
                    out.storeBytes(of: v, toByteOffset: Int(r.ref.count) &<< 3, as: Int64.self)
                } else if r.ref.slot >= 0 {
                    // (Not in a body read in place, whose integers all have a width: the rest
                    // the careful way, which decodes the body.)
                    return readIntegersNarrow(refs + i, count: count &- i, into: out)
                }
                i &+= 1
            }
            return
        }
        readIntegersNarrow(refs, count: count, into: out)
    }

    /// ``readIntegers(_:count:into:)`` with each load of the field's own width (near the end of
    /// the mapping, in a live stream's memory) or from the decoded slots.
    @usableFromInline
    func readIntegersNarrow(_ refs: UnsafePointer<CTFIntegerRef>, count: Int, into raw: UnsafeMutableRawPointer) {
        let h = hot
        @inline(__always) func put(_ d: Int, _ v: Int64) { raw.storeBytes(of: v, toByteOffset: d &<< 3, as: Int64.self) }
        let b = base, seg = segmentBase
        var i = 0
        while i < count {
            let r = refs[i].ref
            let d = Int(r.count)
            if r.width != 0 && h.pointee.lazyBody >= 0 {
                let p = b + (seg[Int(r.segment)] &+ Int(r.offset))
                switch r.width {
                case 1: put(d, Int64(p.load(as: UInt8.self)))
                case -1: put(d, Int64(p.load(as: Int8.self)))
                case 2: put(d, Int64(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self))))
                case -2: put(d, Int64(Int16(littleEndian: p.loadUnaligned(as: Int16.self))))
                case 4: put(d, Int64(UInt32(littleEndian: p.loadUnaligned(as: UInt32.self))))
                case -4: put(d, Int64(Int32(littleEndian: p.loadUnaligned(as: Int32.self))))
                default: put(d, Int64(littleEndian: p.loadUnaligned(as: Int64.self)))
                }
            } else if r.slot >= 0 {
                if h.pointee.lazyBody >= 0 { materializeSlow() }
                put(d, Int64(bitPattern: slots[Int(r.slot)]))
            }
            i &+= 1
        }
    }

}
