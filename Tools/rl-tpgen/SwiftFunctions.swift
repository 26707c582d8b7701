// Sources/RunLoopTracing/RLTrace+Events.swift: RLTrace's public inlined functions, one per event
// (but those RunLoopSchema marks `.handWritten`), from each event's Swift face and its fields'
// Swift parameters.
import RunLoopSchema

/// The type of a field's parameter in RLTrace's public function.
func publicParameterType(_ f: RLSchemaField, _ t: RLSchemaSwiftType) -> String {
    switch t {
    case .integer:
        switch f.type {
        case .integer(let i): return swiftType(i)
        case .enumeration(_, let c): return swiftType(c)
        default: fatalError("rl-tpgen: \(f.name) is not an integer")
        }
    case .bool: return "Bool"
    case .name: return "@autoclosure () -> String"
    case .calloutKind: return "RLCalloutKind"
    case .calloutKindOrLoop: return "RLCalloutKind?"
    case .wakeReason: return "RLWakeReason"
    case .frames: return "[UInt64]"
    }
}

/// The argument the enabled branch hands the emitter (C or out-of-line) for a parameter `label`.
func publicArgument(_ label: String, _ t: RLSchemaSwiftType) -> String {
    switch t {
    case .integer, .bool, .frames: return label
    case .name: return label + "()"
    case .calloutKind, .wakeReason: return label + ".rawValue"
    // A literal, folded in the inlined caller: RunLoopSchema.calloutKindLoop (SchemaTests checks the
    // generated text against it through GeneratedProviderTests).
    case .calloutKindOrLoop: return "\(label)?.rawValue ?? \(RunLoopSchema.calloutKindLoop)"
    }
}

/// One public function: `if rl_tp_NAME_enabled() { <the C emitter, or the out-of-line helper> }`.
func publicFunction(_ id: RLSchemaEventID) -> String {
    let e = id.event
    let params: [(label: String, type: RLSchemaSwiftType, field: RLSchemaField)] = e.fields.compactMap { f in
        if case .parameter(let l, let t) = f.source { return (l, t, f) }
        return nil
    }
    var o = ""
    if !e.swift.section.isEmpty { o += e.swift.section.map { "    // \($0)\n" }.joined() + "\n" }
    o += e.swift.doc.map { "    /// \($0)\n" }.joined()
    let head = "    @inlinable @inline(__always) public static func \(e.swift.name)("
    o += wrapped(head, params.map { "\($0.label): \(publicParameterType($0.field, $0.type))" }, ") {",
                 indent: String(repeating: " ", count: head.count), width: 130) + "\n"
    let args = params.map { publicArgument($0.label, $0.type) }.joined(separator: ", ")
    let call: String
    switch e.swiftEmitter {
    case .inlineCall:
        if params.contains(where: { $0.type == .name || $0.type == .frames }) {
            fatalError("rl-tpgen: \(e.name) has a name or an array: it cannot call its C emitter inline")
        }
        call = "rl_tp_\(e.name)(\(args))"
    case .outOfLine, .handWrittenHelper: call = "_\(id.swiftName)(\(args))"
    case .handWritten: fatalError("rl-tpgen: \(e.name)'s function is hand-written")
    }
    let check = "        if rl_tp_\(e.name)_enabled() { \(call) }"
    o += "        #if !RLTRACE_DISABLED\n"
    o += check.count <= 130 ? check + "\n" : "        if rl_tp_\(e.name)_enabled() {\n            \(call)\n        }\n"
    o += "        #endif\n    }\n"
    return o
}

func swiftFunctions() -> String {
    let hang = hangEvents.map { "`\($0.name)`" }
    var o = """
    // \(generatedNotice)
    //
    // RLTrace's public functions, one per event of RunLoopSchema (RunLoopSchemaEvents.swift: each
    // event's function name, doc comment and parameters); `blockEntry`, whose name is not a field of
    // its event, is hand-written in RLTraceEmit.swift. The contract they keep: RLTrace.swift.

    #if !RLTRACE_DISABLED
    import CRunLoopTracepoints
    #endif
    import RunLoopSchema

    extension RLTrace {

    """
    var first = true
    for id in RLSchemaEventID.allCases where id.event.swiftEmitter != .handWritten {
        if !first && !id.event.swift.section.isEmpty { o += "\n" }
        first = false
        o += publicFunction(id)
    }
    o += """

        /// Whether a session records any of \(hang.dropLast().joined(separator: ", ")), \(hang.last!) (one branch).
        @inlinable @inline(__always) public static var isHangTraced: Bool {
            #if RLTRACE_DISABLED
            return false
            #else
            return rl_tp_hang_any_enabled()
            #endif
        }
    }

    """
    return o
}
