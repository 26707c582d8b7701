// How the `runloop` provider's events are emitted: what Tools/rl-tpgen needs beyond the trace
// layout to generate the C emitters (runloop_emit.c), their prototypes and enabled checks
// (include/CRunLoopTracepoints.h) and RunLoopTracing's out-of-line Swift emitters
// (RLTrace+Generated.swift). None of it changes what a trace records.

/// Where an event's emitters take a field's value from.
public enum RLSchemaFieldSource: Hashable, Sendable {
    /// A parameter of the field's own type (a C `const char *` for a string, the element pointer
    /// and a length for a sequence).
    case parameter
    /// A `bool` parameter (Swift `Bool`), recorded as the field's `uint8` (0 or 1).
    case boolean
    /// The emitting thread's kernel thread id (`rl_tp_current_tid()`), not a parameter.
    case callingThread
}

/// How RunLoopTracing's inlined check (`if rl_tp_NAME_enabled() { ... }`) reaches the C emitter.
public enum RLSchemaSwiftEmitter: Hashable, Sendable {
    /// The inlined check calls the C emitter `rl_tp_NAME` itself: the hot, id-only callout events,
    /// whose arguments are integers already in registers.
    case inlineCall
    /// The inlined check calls a generated `@inline(never)` Swift helper `_NAME`, which converts the
    /// names (`withCName`) and calls the C emitter: keeps string handling out of the caller.
    case outOfLine
    /// The inlined check calls a hand-written `_NAME` helper (RLTraceEmit.swift): `block_entry`
    /// (describes a named block first) and `hang_stack` (an array's buffer).
    case handWritten
}

extension RLSchemaEventID {
    /// The Swift name of the event (the case's name: `wakeUpRequested`).
    public var swiftName: String { "\(self)" }
}
