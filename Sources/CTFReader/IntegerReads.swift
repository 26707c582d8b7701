// Reading a fixed list of integer fields of the current event in one call: the positions resolved
// once per event class, the per-event work a few loads (for analyses that decode millions of events
// of a known schema, such as rltrace's `runloop` decoder).

/// Where one integer field of an event class lies, resolved once from the metadata
/// (``CTFStream/integerRef(contextField:ofClass:)``, ``CTFStream/integerRef(payloadField:ofClass:)``);
/// read per event with ``CTFStream/readIntegers(_:count:into:)``.
public struct CTFIntegerRef: @unchecked Sendable {
    @usableFromInline var ref: FieldRef
    /// Where ``CTFStream/readIntegers(_:count:into:)`` stores the value: `out[destination]`.
    public var destination: Int {
        get { Int(ref.count) }
        set { ref.count = Int32(truncatingIfNeeded: newValue) }
    }
    @usableFromInline init(_ ref: FieldRef) {
        self.ref = ref
        self.ref.count = 0    // (the element count of a text array: unused for integers)
    }
    /// A field the class does not have (or that is not an integer): its value is left as it was.
    public static let absent = CTFIntegerRef(FieldRef())
    /// Whether the class has the field as an integer.
    public var isPresent: Bool { ref.width != 0 || ref.slot >= 0 }
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
        let h = hot
        let b = base, seg = segmentBase
        var i = 0
        while i < count {
            let r = refs[i].ref
            let d = Int(r.count)
            if r.width != 0 && h.pointee.lazyBody >= 0 {
                let p = b + (seg[Int(r.segment)] &+ Int(r.offset))
                switch r.width {
                case 1: out[d] = Int64(p.load(as: UInt8.self))
                case -1: out[d] = Int64(p.load(as: Int8.self))
                case 2: out[d] = Int64(UInt16(littleEndian: p.loadUnaligned(as: UInt16.self)))
                case -2: out[d] = Int64(Int16(littleEndian: p.loadUnaligned(as: Int16.self)))
                case 4: out[d] = Int64(UInt32(littleEndian: p.loadUnaligned(as: UInt32.self)))
                case -4: out[d] = Int64(Int32(littleEndian: p.loadUnaligned(as: Int32.self)))
                default: out[d] = Int64(littleEndian: p.loadUnaligned(as: Int64.self))
                }
            } else if r.slot >= 0 {
                if h.pointee.lazyBody >= 0 { materializeSlow() }
                out[d] = Int64(bitPattern: slots[Int(r.slot)])
            }
            i &+= 1
        }
    }

}
