// The events table of docs/tracepoints.md, between its marker comments.
import RunLoopSchema

let docsBegin = "<!-- BEGIN GENERATED: rl-tpgen events table (scripts/gen-provider.sh) -->"
let docsEnd = "<!-- END GENERATED: rl-tpgen events table -->"

func docsType(_ t: RLSchemaFieldType) -> String {
    func int(_ i: RLSchemaInteger) -> String { (i.signed ? "int" : "uint") + "\(i.bits)" + (i.hex ? " hex" : "") }
    switch t {
    case .integer(let i): return int(i)
    case .string: return "string"
    case .enumeration(let n, let c): return "`\(n)` (\(int(c)))"
    case .sequence(let el, let len): return "\(int(el))[\(int(len))]"
    }
}

func eventsTable() -> String {
    var o = docsBegin + "\n| event | class | level | fields |\n| --- | --- | --- | --- |\n"
    for e in RunLoopSchema.events {
        let fields = e.fields.map { "`\($0.name)` \(docsType($0.type))" }.joined(separator: ", ")
        o += "| `\(e.fullName)` | \(e.eventClass.map { "`\($0)`" } ?? "—") | \(e.logLevel.macroName) | \(fields) |\n"
    }
    return o + docsEnd
}

/// `docs` with the text between the markers (markers included) replaced by the table.
func docsWithTable(_ docs: String) throws -> String {
    guard let b = docs.range(of: docsBegin), let e = docs.range(of: docsEnd, range: b.upperBound..<docs.endIndex) else {
        throw GeneratorError("docs/tracepoints.md: no \"\(docsBegin)\" … \"\(docsEnd)\" markers")
    }
    return docs.replacingCharacters(in: b.lowerBound..<e.upperBound, with: eventsTable())
}
