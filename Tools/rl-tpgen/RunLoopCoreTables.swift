// Sources/RunLoopSchema/RunLoopSchema+RunLoopCore.swift: the `run_result` and `activity`
// enumerations, read from RunLoopCore's RLRunResult and RLActivity (RunLoopSchema cannot import
// RunLoopCore, which depends on it through RunLoopTracing).
import RunLoopCore
import RunLoopSchema

/// `timedOut` → `timed_out`: a RunLoopCore case name as the trace spells labels.
func snakeCase(_ s: String) -> String {
    s.reduce(into: "") { out, c in out += c.isUppercase ? "_" + c.lowercased() : String(c) }
}

/// Every RLRunResult (raw values 0 … 255 tried), as labels and values.
func runResultEnumerators() -> [RLSchemaEnumerator] {
    (Int32(0)...255).compactMap { v in RLRunResult(rawValue: v).map { RLSchemaEnumerator(snakeCase($0.description), Int64(v)) } }
}

/// Every single bit RLActivity names (its description is one name, not `0x…` nor `a|b`).
func activityEnumerators() -> [RLSchemaEnumerator] {
    (0..<32).compactMap { bit -> RLSchemaEnumerator? in
        let a = RLActivity(rawValue: 1 << UInt32(bit)), d = a.description
        return d.hasPrefix("0x") || d.contains("|") || a == .allActivities ? nil : RLSchemaEnumerator(snakeCase(d), Int64(a.rawValue))
    }
}

func runLoopCoreTables() -> String {
    func list(_ e: [RLSchemaEnumerator]) -> String {
        wrapped("        ", e.map { ".init(\"\($0.label)\", \($0.value))" }, ",", indent: "        ")
    }
    return """
    // \(generatedNotice)
    //
    // The provider's enumerations of RunLoopCore's CF-compatible values, read from RunLoopCore's types
    // by Tools/rl-tpgen (RunLoopSchema cannot import RunLoopCore, which depends on it).

    extension RunLoopSchema {
        /// The `run_result` enumeration: RunLoopCore's `RLRunResult` (CFRunLoopRunResult raw values).
        public static let runResult = RLSchemaEnumeration(name: "run_result", enumerators: [
    \(list(runResultEnumerators()))
        ])
        /// The `activity` enumeration: RunLoopCore's `RLActivity` bits (CFRunLoopActivity), one per
        /// observer callout.
        public static let activity = RLSchemaEnumeration(name: "activity", enumerators: [
    \(list(activityEnumerators()))
        ])
    }

    """
}
