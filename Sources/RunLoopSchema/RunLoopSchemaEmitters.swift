// How the `runloop` provider's events are emitted: what Tools/rl-tpgen needs beyond the trace
// layout to generate the C emitters (runloop_emit.c), their prototypes and enabled checks
// (include/CRunLoopTracepoints.h) and RunLoopTracing's Swift face: `RLTrace`'s public inlined
// functions (RLTrace+Events.swift) and their out-of-line emitters (RLTrace+Generated.swift).
// None of it changes what a trace records.

/// Where an event's emitters take a field's value from.
public enum RLSchemaFieldSource: Hashable, Sendable {
    /// A parameter: `label` in RLTrace's public function (`loop`, `name`), of Swift type `type`.
    case parameter(String, RLSchemaSwiftType)
    /// Derived, not a parameter: the emitting thread's kernel thread id (`rl_tp_current_tid()`).
    case callingThread
}

/// The Swift type of a field's parameter in RLTrace's public function, and how it reaches the C
/// emitter.
public enum RLSchemaSwiftType: Hashable, Sendable {
    /// The field's integer type (an enumeration's container): `UInt64`, `Int32`, `UInt8` …
    case integer
    /// `Bool`, recorded as the field's `uint8` (0 or 1); the C emitter takes a `bool`.
    case bool
    /// `@autoclosure () -> String`, evaluated in the enabled branch only and converted to a C string
    /// out of line (`withCName`); the C emitter takes a `const char *`.
    case name
    /// ``RLCalloutKind``, recorded as its raw value.
    case calloutKind
    /// `RLCalloutKind?`: a kind, or nil recorded as `loop` (``RunLoopSchema/calloutKindLoop``).
    case calloutKindOrLoop
    /// ``RLWakeReason``, recorded as its raw value.
    case wakeReason
    /// `[UInt64]`: a sequence's elements; the C emitter takes the element pointer and a length.
    case frames
}

/// How RunLoopTracing's inlined check (`if rl_tp_NAME_enabled() { ... }`) reaches the C emitter.
public enum RLSchemaSwiftEmitter: Hashable, Sendable {
    /// The inlined check calls the C emitter `rl_tp_NAME` itself: the hot, id-only callout events,
    /// whose arguments are integers already in registers.
    case inlineCall
    /// The inlined check calls a generated `@inline(never)` Swift helper `_NAME`, which converts the
    /// names (`withCName`) and calls the C emitter: keeps string handling out of the caller.
    case outOfLine
    /// The inlined check (generated) calls a hand-written `_NAME` helper (RLTraceEmit.swift):
    /// `hang_stack` (an array's buffer).
    case handWrittenHelper
    /// The public function and its helper are both hand-written (RLTraceEmit.swift): `block_entry`,
    /// whose function takes a name that is not a field of the event (it describes a named block
    /// with `item_info` first).
    case handWritten
}

/// The Swift face of an event: RLTrace's public function for it (generated: RLTrace+Events.swift).
public struct RLSchemaSwiftFunction: Hashable, Sendable {
    /// The function's name (`wakeUpRequested`).
    public var name: String
    /// Its doc comment, lines without the `///`.
    public var doc: [String]
    /// A comment opening a group of functions before this one (`// MARK: …` and its lines), or empty.
    public var section: [String]
    /// Creates a function description.
    public init(name: String, doc: [String], section: [String] = []) {
        self.name = name
        self.doc = doc
        self.section = section
    }
}

extension RLSchemaEventID {
    /// The Swift name of the event (the case's name: `wakeUpRequested`).
    public var swiftName: String { "\(self)" }
}
