/// Byte order of a CTF field.
public enum CTFByteOrder: Sendable, Equatable {
    /// Little endian.
    case little
    /// Big endian (also "network").
    case big
    /// The trace's byte order (resolved when the trace block is known).
    case native
}

/// Preferred display base of a CTF integer.
public enum CTFDisplayBase: Int, Sendable {
    /// Binary.
    case binary = 2
    /// Octal.
    case octal = 8
    /// Decimal.
    case decimal = 10
    /// Hexadecimal.
    case hexadecimal = 16
}

/// A CTF integer type.
public struct CTFIntegerType: Sendable, Equatable {
    /// Size in bits (1…65536; integers wider than 64 bits decode to their hexadecimal text, see ``wideIntegerDisplayText(_:_:)``).
    public var size: Int
    /// Alignment in bits.
    public var alignment: Int
    /// Whether the integer is two's complement signed.
    public var isSigned: Bool
    /// Byte order.
    public var byteOrder: CTFByteOrder
    /// Preferred display base.
    public var base: CTFDisplayBase
    /// Whether the integer encodes a character (UTF-8/ASCII).
    public var isText: Bool
    /// Name of the clock this integer maps to, if any.
    public var mappedClock: String?
}

/// A CTF floating point type (only IEEE 754 binary32 and binary64 are supported).
public struct CTFFloatType: Sendable, Equatable {
    /// Exponent digits.
    public var exponentDigits: Int
    /// Mantissa digits (including the implicit bit).
    public var mantissaDigits: Int
    /// Alignment in bits.
    public var alignment: Int
    /// Byte order.
    public var byteOrder: CTFByteOrder
    /// Total size in bits.
    public var size: Int { exponentDigits + mantissaDigits }
}

/// One label of a CTF enumeration: a name and an inclusive value range.
public struct CTFEnumMapping: Sendable, Equatable {
    /// The label.
    public var label: String
    /// Lowest value (inclusive), as the container's signedness dictates (bit pattern for unsigned).
    public var lower: Int64
    /// Highest value (inclusive).
    public var upper: Int64
}

/// A named field of a structure or variant.
public struct CTFField: Sendable {
    /// The field name (with CTF's leading underscore removed).
    public var name: String
    /// The field type.
    public var type: CTFType
    /// The name as the metadata writes it (`_x` for a field named `x`): a variant option is chosen by the tag label
    /// equal to it (as babeltrace2 matches), or, when no label is, by the label equal to ``name``.
    public var writtenName: String

    /// The tag label that selects this variant option, given which strings are labels of the tag: its written
    /// name, else its name, else none.
    @inline(__always)
    func selectingLabel(_ isLabel: (String) -> Bool) -> String? {
        isLabel(writtenName) ? writtenName : isLabel(name) ? name : nil
    }

    init(name: String, type: CTFType, writtenName: String? = nil) {
        self.name = name
        self.type = type
        self.writtenName = writtenName ?? name
    }
}

/// A CTF 1.8 field type.
public indirect enum CTFType: Sendable {
    /// An integer.
    case integer(CTFIntegerType)
    /// A floating point number.
    case floatingPoint(CTFFloatType)
    /// An enumeration over an integer container.
    case enumeration(CTFIntegerType, [CTFEnumMapping])
    /// A NUL-terminated string.
    case string
    /// A structure, with its alignment in bits: the largest of its declared one (`align(N)`) and its
    /// fields' (the parser stores it so; ``alignment`` takes a nested structure's at its word).
    case structure([CTFField], alignment: Int)
    /// A variant selected by the enumeration field at `tag`.
    case variant(tag: String, options: [CTFField])
    /// A fixed-length array.
    case array(CTFType, length: Int)
    /// A sequence whose length is the integer field at `lengthField`.
    case sequence(CTFType, lengthField: String)

    /// The alignment of the type in bits: for a structure, the largest of its own and its fields'.
    public var alignment: Int {
        // A structure's own alignment and its direct fields', a nested structure's taken as it is stored
        // (it holds its fields'): computed at every level of a value walk, it once visited the whole
        // type below, a value nested d deep costing d² (800 levels of 50 fields: 30 s to dump one event).
        switch self {
        case .structure(let fields, let a):
            var m = a
            for f in fields { m = max(m, f.type.storedAlignment) }
            return m
        default:
            return storedAlignment
        }
    }

    /// The alignment without looking into a structure (its stored alignment), through arrays and
    /// sequences to their elements (a loop: arrays nest as deep as structures).
    var storedAlignment: Int {
        var t = self
        while true {
            switch t {
            case .integer(let i): return i.alignment
            case .floatingPoint(let f): return f.alignment
            case .enumeration(let i, _): return i.alignment
            case .string: return 8
            case .variant: return 1
            case .structure(_, let a): return a
            case .array(let e, _), .sequence(let e, _): t = e
            }
        }
    }

    /// Whether the type's values are text (arrays/sequences of character integers print as strings).
    var isTextElement: Bool {
        if case .integer(let i) = self { return i.isText && i.size == 8 }
        return false
    }

    /// The size in bits if it is the same for every value and the type keeps alignment internally consistent,
    /// or nil when it varies (strings, sequences, variants).
    var fixedBitSize: Int? { layout.bits }

    /// The alignment (bits) and, when it is the same for every value, the size (bits), in one pass over the
    /// type. (Each is recursive: computed apart at every level of a structure, as the size once needed its
    /// fields' alignments, a type nested d deep cost d³ — 1024 levels took 8.7 s to compile.)
    var layout: (alignment: Int, bits: Int?) {
        switch self {
        case .integer(let i): return (i.alignment, i.size)
        case .floatingPoint(let f): return (f.alignment, f.size)
        case .enumeration(let i, _): return (i.alignment, i.size)
        case .string: return (8, nil)
        case .variant: return (1, nil)
        case .sequence(let e, _): return (e.alignment, nil)
        case .array(let e, let n):
            let (a, s) = e.layout
            // Element stride must keep every element aligned.
            guard let s, s % a == 0 else { return (a, nil) }
            let (r, o) = s.multipliedReportingOverflow(by: n)
            return (a, o || r > sizeCap ? nil : r)
        case .structure(let fields, let declared):
            var align = declared
            var size = FixedStructureSize()
            for f in fields {
                let (fa, fs) = f.type.layout
                align = max(align, fa)
                size.add(alignment: fa, bits: fs)
            }
            return (align, size.total(alignment: align))
        }
    }

    /// How many compound types (structures, variants, arrays, sequences) nest in the type's deepest path,
    /// itself included: 0 for a scalar, 1 for a structure of scalars.
    var nestingDepth: Int {
        switch self {
        case .integer, .floatingPoint, .enumeration, .string: return 0
        case .array(let e, _), .sequence(let e, _): return 1 + e.nestingDepth
        case .structure(let fields, _), .variant(_, let fields):
            var m = 0
            for f in fields { m = max(m, f.type.nestingDepth) }
            return 1 + m
        }
    }

    /// The minimal size in bits of any value (used to bound untrusted sequence lengths), at most
    /// `sizeCap`: the sum over the scalars of their size times the lengths of the arrays around them
    /// (a variant or a sequence may be empty), visiting a list of types instead of recursing, as
    /// ``alignment``.
    var minimumBitSize: Int {
        var total = 0
        var (t, k) = (self, 1)
        var pending: [(CTFType, Int)] = []
        while true {
            switch t {
            case .integer(let i): total = min(sizeCap, total + i.size * k)
            case .floatingPoint(let f): total = min(sizeCap, total + f.size * k)
            case .enumeration(let i, _): total = min(sizeCap, total + i.size * k)
            case .string: total = min(sizeCap, total + 8 * k)
            case .variant, .sequence: break
            case .array(let e, let n):
                let (r, o) = k.multipliedReportingOverflow(by: n)
                (t, k) = (e, o ? sizeCap : min(r, sizeCap))
                continue
            case .structure(let fields, _):
                for f in fields { pending.append((f.type, k)) }
            }
            // (A size ≤ 65536 times k ≤ sizeCap = 2^40 fits.)
            guard let next = pending.popLast() else { return total }
            (t, k) = next
        }
    }
}

/// Sizes (bits) above this are treated as variable (no flat fast path) and never computed further.
let sizeCap = 1 << 40

/// A structure's size in bits summed field by field (``CTFType/layout``, and the compiler as it
/// compiles the fields): fixed only when every field is and sits at an offset its alignment divides
/// (no padding that depends on where the structure starts), and the total is a multiple of the
/// structure's alignment.
struct FixedStructureSize {
    private var bits: Int? = 0
    private var empty = true

    mutating func add(alignment fa: Int, bits fs: Int?) {
        empty = false
        if let t = bits, let fs, t % fa == 0, t + fs <= sizeCap { bits = t + fs } else { bits = nil }
    }

    /// The size, for a structure of alignment `align`; nil when it varies.
    func total(alignment align: Int) -> Int? {
        guard let t = bits else { return nil }
        return empty || t % max(1, align) == 0 ? t : nil
    }
}

/// A clock declared in the metadata.
public struct CTFClock: Sendable {
    /// Clock name.
    public var name: String
    /// Frequency in Hz.
    public var frequency: UInt64 = 1_000_000_000
    /// Offset from the epoch in seconds.
    public var offsetSeconds: Int64 = 0
    /// Additional offset in cycles.
    public var offsetCycles: Int64 = 0
    /// Clock UUID, if declared.
    public var uuid: String?
    /// Description, if declared.
    public var description: String?

    /// Timestamps the reader hands out stay within ±2^62 ns of the epoch (about 1824–2116), so that the
    /// difference of any two of them fits an `Int64`; a clock value converting outside is treated as corrupt.
    public static let timestampLimitNanoseconds: Int64 = 1 << 62

    /// Converts a cycle count to nanoseconds since the epoch, as babeltrace2 2.0 does (`bt_util_ns_from_value`
    /// and `bt_util_get_base_offset_ns`): the offset in seconds, plus the offset in cycles (below one second)
    /// and the cycle count each converted apart, by `1e9 × cycles / freq` in double precision truncated toward
    /// zero (exact at 1 GHz). So a 2.4–3.3 GHz clock's timestamps print to the nanosecond what babeltrace2
    /// prints (`ClockConversionTests`). Matches ``babeltraceNanoseconds(fromCycles:)`` for every cycle count
    /// in ``validCycleRange``; outside it the result wraps (the reader never converts such values).
    @inline(__always)
    public func nanoseconds(fromCycles cycles: UInt64) -> Int64 {
        let base = offsetSeconds &* 1_000_000_000
        if frequency == 1_000_000_000 {
            return base &+ offsetCycles &+ Int64(bitPattern: cycles)
        }
        return base &+ Int64(bitPattern: CTFClock.cyclesToNanoseconds(UInt64(bitPattern: offsetCycles), frequency))
            &+ Int64(bitPattern: CTFClock.cyclesToNanoseconds(cycles, frequency))
    }

    /// `1e9 × cycles / frequency` in double precision, truncated toward zero; `UInt64.max` when it does not fit
    /// (babeltrace2's `bt_util_ns_from_value`). The frequency is not 1 GHz.
    @inline(__always)
    static func cyclesToNanoseconds(_ cycles: UInt64, _ frequency: UInt64) -> UInt64 {
        let d = (1e9 * Double(cycles)) / Double(frequency)
        return d >= 18_446_744_073_709_551_616.0 ? UInt64.max : UInt64(d)
    }

    /// The conversion in 128-bit arithmetic (never overflows for any 64-bit cycle count and offset), rounded as
    /// ``nanoseconds(fromCycles:)``.
    func babeltraceNanoseconds(fromCycles cycles: UInt64) -> Int128 {
        if frequency == 1_000_000_000 { return Int128(offsetSeconds) * 1_000_000_000 + Int128(offsetCycles) + Int128(cycles) }
        var secs = Int128(offsetSeconds), oc = Int128(offsetCycles)
        let f = Int128(frequency)
        if oc < 0 || oc >= f {
            var s = oc / f, r = oc % f
            if r < 0 { r += f; s -= 1 }
            secs += s; oc = r
        }
        return secs * 1_000_000_000 + Int128(CTFClock.cyclesToNanoseconds(UInt64(oc), frequency))
            + Int128(CTFClock.cyclesToNanoseconds(cycles, frequency))
    }

    /// The cycle counts whose conversion lies within ±``timestampLimitNanoseconds`` (nil when none does).
    public var validCycleRange: ClosedRange<UInt64>? {
        let lim = Int128(CTFClock.timestampLimitNanoseconds)
        // The conversion is non-decreasing in the cycle count: binary search both ends.
        func firstCycle(where ok: (Int128) -> Bool) -> UInt64? {
            var lo: UInt64 = 0, hi = UInt64.max
            if ok(babeltraceNanoseconds(fromCycles: 0)) { return 0 }
            guard ok(babeltraceNanoseconds(fromCycles: hi)) else { return nil }
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2
                if ok(babeltraceNanoseconds(fromCycles: mid)) { hi = mid } else { lo = mid }
            }
            return hi
        }
        guard let minC = firstCycle(where: { $0 >= -lim }) else { return nil }
        let maxC: UInt64
        if let tooBig = firstCycle(where: { $0 >= lim }) {
            guard tooBig > minC else { return nil }
            maxC = tooBig - 1
        } else {
            maxC = UInt64.max
        }
        return minC...maxC
    }
}

/// An event class: its id, name, stream, log level and field types.
public final class CTFEventClass: @unchecked Sendable {
    /// The event id within its stream class.
    public let id: UInt64
    /// The event name, e.g. `provider:event`.
    public let name: String
    /// The stream class id.
    public let streamID: UInt64
    /// The log level, if declared.
    public let logLevel: Int64?
    /// The event-specific context type, if any.
    public let context: CTFType?
    /// The payload type.
    public let payload: CTFType?
    /// Other attributes (e.g. `model.emf.uri`).
    public let attributes: [String: String]

    init(id: UInt64, name: String, streamID: UInt64, logLevel: Int64?, context: CTFType?, payload: CTFType?, attributes: [String: String]) {
        self.id = id; self.name = name; self.streamID = streamID; self.logLevel = logLevel
        self.context = context; self.payload = payload; self.attributes = attributes
    }
}

/// A stream class: its id and the types shared by its packets and events.
public struct CTFStreamClass: Sendable {
    /// The stream class id.
    public var id: UInt64
    /// The packet context type.
    public var packetContext: CTFType?
    /// The event header type.
    public var eventHeader: CTFType?
    /// The stream event context type.
    public var eventContext: CTFType?
}

/// Everything a trace's metadata declares.
public struct CTFMetadata: Sendable {
    /// The trace's byte order.
    public var byteOrder: CTFByteOrder = .little
    /// The trace UUID, if declared.
    public var uuid: String?
    /// The trace packet header type.
    public var packetHeader: CTFType?
    /// The `env` block.
    public var environment: [String: String] = [:]
    /// The declared clocks by name.
    public var clocks: [String: CTFClock] = [:]
    /// Stream classes by id.
    public var streamClasses: [UInt64: CTFStreamClass] = [:]
    /// Event classes in declaration order.
    public var eventClasses: [CTFEventClass] = []
    /// Non-fatal findings of the metadata parser (unknown attributes, ignored declarations).
    public var warnings: [CTFWarning] = []
    /// The metadata text.
    public var text: String = ""

    /// The most compound types a field of the trace sits inside, not counting its scope's own
    /// structure (as ``Nesting/maxDepth`` counts).
    var nestingDepth: Int {
        var types: [CTFType?] = [packetHeader]
        for sc in streamClasses.values { types += [sc.packetContext, sc.eventHeader, sc.eventContext] }
        for e in eventClasses { types += [e.context, e.payload] }
        return types.reduce(0) { max($0, $1.map { $0.nestingDepth - 1 } ?? 0) }
    }
}
