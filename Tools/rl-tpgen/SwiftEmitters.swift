// Sources/RunLoopTracing/RLTrace+Generated.swift: the out-of-line Swift emitters and the enabled checks
// (RLTrace's public functions: SwiftFunctions.swift).
import RunLoopSchema

/// The type of a field's parameter in an out-of-line helper `_NAME` (enumerations as their raw value).
func swiftParameterType(_ f: RLSchemaField) -> String {
    if case .parameter(_, .bool) = f.source { return "Bool" }
    switch f.type {
    case .integer(let i): return swiftType(i)
    case .enumeration(_, let c): return swiftType(c)
    case .string: return "String"
    case .sequence: fatalError("rl-tpgen: a sequence field needs a hand-written Swift emitter")
    }
}

/// One generated `_NAME` helper: its names converted with `withCName`, one nested closure per string.
func swiftHelper(_ id: RLSchemaEventID) -> String {
    let e = id.event
    let params = e.fields.filter { $0.source != .callingThread }
    let head = "    static func _\(id.swiftName)("
    let decl = wrapped(head, params.map { "_ \(swiftName($0.name)): \(swiftParameterType($0))" }, ") {",
                       indent: String(repeating: " ", count: head.count))
    let call = "rl_tp_\(e.name)(" + params.map { swiftName($0.name) }.joined(separator: ", ") + ")"
    let strings = params.filter { $0.type == .string }.map { swiftName($0.name) }
    var body = call
    for s in strings.reversed() { body = "withCName(\(s)) { \(s) in \(body) }" }
    return "    @usableFromInline @inline(never)\n\(decl)\n        \(body)\n    }\n"
}

func swiftEmitters() -> String {
    var o = """
    // \(generatedNotice)
    //
    // The out-of-line emitters behind RLTrace's inlined checks (RLSchemaSwiftEmitter.outOfLine: the
    // events with names, converted here by `withCName`; the hand-written ones are in RLTraceEmit.swift)
    // and RLTrace's enabled checks, one case per event of RunLoopSchema.

    #if !RLTRACE_DISABLED
    import CRunLoopTracepoints
    #endif
    import RunLoopSchema

    #if !RLTRACE_DISABLED
    extension RLTrace {

    """
    o += RLSchemaEventID.allCases.filter { $0.event.swiftEmitter == .outOfLine }.map(swiftHelper).joined()
    o += """
    }
    #endif

    extension RLTrace {
        /// Whether a session records the entry or the exit event of callout `kind` (one load of each
        /// state word, or-ed, and one branch): what a callout trampoline checks before calling out.
        @inlinable @inline(__always) public static func isCalloutTraced(_ kind: RLCalloutKind) -> Bool {
            #if RLTRACE_DISABLED
            return false
            #else
            switch kind {

    """
    for k in RLCalloutKind.allCases { o += "        case .\(k): return rl_tp_\(k.label)_callout_enabled()\n" }
    o += """
            }
            #endif
        }

        /// Whether a session is recording `event` right now (the same inlined check every tracepoint
        /// makes: one load and a branch; a constant `false` when built with RLTRACE_DISABLED=1). Use it
        /// to skip work done only to build a tracepoint's arguments, e.g.
        /// `if RLTrace.isEnabled(.wake) { reason = classifyWake(...) }`.
        @inlinable @inline(__always) public static func isEnabled(_ event: RLSchemaEventID) -> Bool {
            #if RLTRACE_DISABLED
            return false
            #else
            switch event {

    """
    for id in RLSchemaEventID.allCases { o += "        case .\(id.swiftName): return rl_tp_\(id.name)_enabled()\n" }
    o += """
            }
            #endif
        }
    }

    """
    return o
}
