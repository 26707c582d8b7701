import Foundation
import Testing
import RunLoopSchema
import RunLoopTracing
import RunLoopCore

/// The provider header's declarations, read from its LTTng-UST macros (docs/tracepoints.md): what
/// ``RunLoopSchema`` must state exactly.
struct ProviderHeaderDeclarations {
    /// A standalone event or an instance of a class, with its class's fields.
    struct Event { var name: String; var eventClass: String?; var fields: [RLSchemaField] }

    var provider = Set<String>()
    var enumerations: [RLSchemaEnumeration] = []
    var classes: [(name: String, fields: [RLSchemaField])] = []
    var events: [Event] = []
    var logLevels: [String: String] = [:]
    /// What the reader did not understand (a macro or field kind it does not know).
    var problems: [String] = []

    init(_ text: String) {
        let src = Self.stripCommentsAndDirectives(text)
        for call in Self.calls(in: src, prefix: "LTTNG_UST_TRACEPOINT_") {
            let a = Self.splitArguments(call.arguments)
            switch call.name {
            case "LTTNG_UST_TRACEPOINT_ENUM" where a.count == 3:
                provider.insert(a[0])
                enumerations.append(RLSchemaEnumeration(name: a[1], enumerators: enumerators(a[2])))
            case "LTTNG_UST_TRACEPOINT_EVENT_CLASS" where a.count == 4:
                provider.insert(a[0])
                classes.append((a[1], fields(a[3], in: a[1])))
            case "LTTNG_UST_TRACEPOINT_EVENT" where a.count == 4:
                provider.insert(a[0])
                events.append(Event(name: a[1], eventClass: nil, fields: fields(a[3], in: a[1])))
            case "LTTNG_UST_TRACEPOINT_EVENT_INSTANCE" where a.count == 5:
                provider.formUnion([a[0], a[2]])
                guard let cls = classes.first(where: { $0.name == a[1] }) else { problems.append("\(a[3]): unknown class \(a[1])"); continue }
                events.append(Event(name: a[3], eventClass: a[1], fields: cls.fields))
            case "LTTNG_UST_TRACEPOINT_LOGLEVEL" where a.count == 3:
                provider.insert(a[0])
                logLevels[a[1]] = a[2]
            default:
                problems.append("unparsed \(call.name)(\(call.arguments.prefix(60))…)")
            }
        }
    }

    private mutating func enumerators(_ text: String) -> [RLSchemaEnumerator] {
        guard let values = Self.calls(in: text, prefix: "LTTNG_UST_TP_ENUM_VALUES").first else {
            problems.append("enumeration without LTTNG_UST_TP_ENUM_VALUES"); return []
        }
        return Self.calls(in: values.arguments, prefix: "lttng_ust_field_enum_").compactMap { c in
            let a = Self.splitArguments(c.arguments)
            guard c.name == "lttng_ust_field_enum_value", a.count == 2, a[0].hasPrefix("\""), let v = Int64(a[1]) else {
                problems.append("unsupported \(c.name)(\(c.arguments))"); return nil
            }
            return RLSchemaEnumerator(String(a[0].dropFirst().dropLast()), v)
        }
    }

    private mutating func fields(_ text: String, in owner: String) -> [RLSchemaField] {
        guard let list = Self.calls(in: text, prefix: "LTTNG_UST_TP_FIELDS").first else {
            problems.append("\(owner): no LTTNG_UST_TP_FIELDS"); return []
        }
        return Self.calls(in: list.arguments, prefix: "lttng_ust_field_").compactMap { c in
            let a = Self.splitArguments(c.arguments)
            func int(_ s: String) -> RLSchemaInteger? {
                let t = s.replacingOccurrences(of: "const ", with: "")
                let signed = !t.hasPrefix("u")
                guard t.hasSuffix("_t"), let bits = Int(t.dropFirst(signed ? 3 : 4).dropLast(2)) else { return nil }
                return RLSchemaInteger(bits: bits, signed: signed)
            }
            // The header says nothing of a field's Swift parameter (not compared: equal names and kinds).
            func F(_ n: RLSchemaFieldName, _ t: RLSchemaFieldType) -> RLSchemaField { RLSchemaField(n, t, source: .callingThread) }
            var field: RLSchemaField?
            switch (c.name, a.count) {
            case ("lttng_ust_field_integer", 3): field = int(a[0]).map { F(RLSchemaFieldName(rawValue: a[1]), .integer($0)) }
            case ("lttng_ust_field_integer_hex", 3): field = int(a[0]).map { F(RLSchemaFieldName(rawValue: a[1]), .integer($0.inHex)) }
            case ("lttng_ust_field_string", 2): field = F(RLSchemaFieldName(rawValue: a[0]), .string)
            case ("lttng_ust_field_enum", 5):
                provider.insert(a[0])
                field = int(a[2]).map { F(RLSchemaFieldName(rawValue: a[3]), .enumeration(a[1], container: $0)) }
            case ("lttng_ust_field_sequence", 5), ("lttng_ust_field_sequence_hex", 5):
                if let e = int(a[0]), let l = int(a[3]) {
                    field = F(RLSchemaFieldName(rawValue: a[1]),
                              .sequence(element: c.name.hasSuffix("_hex") ? e.inHex : e, length: l))
                }
            default: break
            }
            if field == nil { problems.append("\(owner): unsupported field \(c.name)(\(c.arguments))") }
            return field
        }
    }

    /// The text without comments and preprocessor lines (with their continuations).
    static func stripCommentsAndDirectives(_ text: String) -> String {
        var s = text
        while let a = s.range(of: "/*") {
            guard let b = s.range(of: "*/", range: a.upperBound..<s.endIndex) else { s.removeSubrange(a.lowerBound...); break }
            s.replaceSubrange(a.lowerBound..<b.upperBound, with: " ")
        }
        var out: [Substring] = [], continued = false
        for line in s.split(separator: "\n", omittingEmptySubsequences: false) {
            let t = line.drop { $0 == " " || $0 == "\t" }
            let directive = continued || t.hasPrefix("#")
            continued = directive && line.hasSuffix("\\")
            if !directive { out.append(line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "") }
        }
        return out.joined(separator: "\n")
    }

    /// The calls `NAME(arguments)` whose NAME starts with `prefix`, at the outermost level.
    static func calls(in text: String, prefix: String) -> [(name: String, arguments: String)] {
        let chars = Array(text)
        var out: [(String, String)] = [], i = 0
        func isIdent(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }
        while i < chars.count {
            guard isIdent(chars[i]), i == 0 || !isIdent(chars[i - 1]) else { i += 1; continue }
            var j = i
            while j < chars.count, isIdent(chars[j]) { j += 1 }
            let name = String(chars[i..<j])
            var k = j
            while k < chars.count, chars[k].isWhitespace { k += 1 }
            guard name.hasPrefix(prefix), k < chars.count, chars[k] == "(" else { i = j; continue }
            var depth = 0, end = k, inString = false
            while end < chars.count {
                let c = chars[end]
                if c == "\"" && chars[end - 1] != "\\" { inString.toggle() }
                if !inString { if c == "(" { depth += 1 } else if c == ")" { depth -= 1; if depth == 0 { break } } }
                end += 1
            }
            out.append((name, String(chars[(k + 1)..<min(end, chars.count)])))
            i = end + 1
        }
        return out
    }

    /// Top-level comma-separated arguments, trimmed.
    static func splitArguments(_ text: String) -> [String] {
        var out: [String] = [], cur = "", depth = 0, inString = false
        for c in text {
            if c == "\"" { inString.toggle() }
            if !inString { if c == "(" { depth += 1 } else if c == ")" { depth -= 1 } }
            if c == ",", depth == 0, !inString { out.append(cur); cur = "" } else { cur.append(c) }
        }
        out.append(cur)
        return out.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }
}

/// RunLoopSchema is the single statement of the `runloop` provider's schema: the C header, the
/// Swift emitters and the documentation must all agree with it exactly.
@Suite("RunLoopSchema is the provider's schema")
struct SchemaTests {
    static func source(_ path: String) -> String {
        (try? String(contentsOf: RunloopProvider.packageRoot.appendingPathComponent(path), encoding: .utf8)) ?? ""
    }
    static let header = ProviderHeaderDeclarations(RunloopProvider.header)

    @Test func headerIsReadWhole() {
        let h = Self.header
        #expect(h.problems.isEmpty, "\(h.problems)")
        #expect(h.provider == [RunLoopSchema.provider])
        #expect(h.events.count == RunLoopSchema.events.count && !h.events.isEmpty)
        // The reader saw every event macro the header has.
        let macroCount = RunloopProvider.header.components(separatedBy: "LTTNG_UST_TRACEPOINT_EVENT(").count - 1
            + RunloopProvider.header.components(separatedBy: "LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(").count - 1
        #expect(h.events.count == macroCount)
    }

    @Test func enumerationsMatchTheHeader() {
        #expect(Self.header.enumerations.map(\.name) == RunLoopSchema.enumerations.map(\.name))
        for e in RunLoopSchema.enumerations {
            let h = Self.header.enumerations.first { $0.name == e.name }
            #expect(h?.enumerators == e.enumerators, "enumeration \(e.name): header \(h?.enumerators ?? [])")
        }
        // The Swift enumerations are the schema's enumerations' non-special values.
        #expect(RLCalloutKind.allCases.map { RLSchemaEnumerator($0.label, Int64($0.rawValue)) }
                + [RLSchemaEnumerator("loop", Int64(RunLoopSchema.calloutKindLoop))] == RunLoopSchema.calloutKind.enumerators)
        #expect(RLWakeReason.allCases.map { RLSchemaEnumerator($0.label, Int64($0.rawValue)) } == RunLoopSchema.wakeReason.enumerators)
    }

    /// `timedOut` → `timed_out`: a RunLoopCore case name as the trace spells labels.
    static func snakeCase(_ s: String) -> String {
        s.reduce(into: "") { out, c in out += c.isUppercase ? "_" + c.lowercased() : String(c) }
    }

    /// The values RunLoopCore records for `run_result` and `activity` are its CF-compatible API
    /// types' raw values: each label of the enumerations is the type's case name (snake-cased),
    /// with that case's raw value, in the same order. (RunLoopSchema cannot import RunLoopCore,
    /// which depends on it through RunLoopTracing, so the tables are checked here.)
    @Test func runLoopCoreValuesAreTheEnumerations() {
        let results: [RLRunResult] = [.finished, .stopped, .timedOut, .handledSource]
        #expect(RLRunResult(rawValue: 0) == nil && RLRunResult(rawValue: 5) == nil, "RLRunResult has exactly these cases")
        #expect(results.map { RLSchemaEnumerator(Self.snakeCase($0.description), Int64($0.rawValue)) } == RunLoopSchema.runResult.enumerators)
        let activities: [RLActivity] = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]
        #expect(activities.map { RLSchemaEnumerator(Self.snakeCase($0.description), Int64($0.rawValue)) } == RunLoopSchema.activity.enumerators)
    }

    @Test func eventsMatchTheHeaderExactly() {
        let h = Self.header
        #expect(h.events.map(\.name) == RunLoopSchema.events.map(\.name), "event names and order")
        for e in RunLoopSchema.events {
            guard let he = h.events.first(where: { $0.name == e.name }) else { Issue.record("header lacks \(e.name)"); continue }
            #expect(he.eventClass == e.eventClass, "\(e.name): class")
            #expect(he.fields.map(\.name.rawValue) == e.fields.map(\.name.rawValue), "\(e.name): field names and order")
            #expect(he.fields == e.fields, "\(e.name): field types")
            #expect(h.logLevels[e.name] == "LTTNG_UST_TRACEPOINT_LOGLEVEL_" + e.logLevel.macroName, "\(e.name): log level")
            for f in e.fields {
                if case .enumeration(let name, let container) = f.type {
                    let en = RunLoopSchema.enumeration(named: name)
                    #expect(en != nil, "\(e.name).\(f.name): unknown enumeration \(name)")
                    let limit: Int64 = container.bits >= 63 ? .max : (1 << (container.bits - (container.signed ? 1 : 0))) - 1
                    #expect(en?.enumerators.allSatisfy { $0.value <= limit } ?? false, "\(e.name).\(f.name): values fit")
                }
            }
        }
        // Every event class of the header is one the schema names, and an event's class is used consistently.
        #expect(Set(h.classes.map(\.name)) == Set(RunLoopSchema.events.compactMap(\.eventClass)))
        #expect(Set(h.logLevels.keys) == Set(RunLoopSchema.events.map(\.name)))
        #expect(Set(RunLoopSchema.events.map(\.name)).count == RunLoopSchema.events.count)
    }

    /// Where a header's declarations differ from RunLoopSchema (empty: they agree exactly).
    static func differences(_ h: ProviderHeaderDeclarations) -> [String] {
        var d = h.problems
        if h.provider != [RunLoopSchema.provider] { d.append("providers \(h.provider)") }
        if h.enumerations != RunLoopSchema.enumerations { d.append("enumerations") }
        if h.events.map(\.name) != RunLoopSchema.events.map(\.name) { d.append("event names or order") }
        for (he, e) in zip(h.events, RunLoopSchema.events) where he.name == e.name {
            if he.eventClass != e.eventClass { d.append("\(e.name): class") }
            if he.fields != e.fields { d.append("\(e.name): fields") }
            if h.logLevels[e.name] != "LTTNG_UST_TRACEPOINT_LOGLEVEL_" + e.logLevel.macroName { d.append("\(e.name): log level") }
        }
        if Set(h.logLevels.keys) != Set(h.events.map(\.name)) { d.append("log levels") }
        return d
    }

    /// The comparison sees a change of any kind: a field's type, order or name, an enumeration's
    /// value, a log level, an event the schema lacks.
    @Test func aDivergingHeaderIsCaught() {
        let header = RunloopProvider.header
        #expect(Self.differences(ProviderHeaderDeclarations(header)) == [])
        let mutations: [(String, String)] = [
            ("lttng_ust_field_integer(int32_t, fd, fd)", "lttng_ust_field_integer(int64_t, fd, fd)"),
            ("lttng_ust_field_integer_hex(uint32_t, events, events)", "lttng_ust_field_integer(uint32_t, events, events)"),
            ("lttng_ust_field_integer(uint32_t, depth, depth)", ""),
            ("lttng_ust_field_integer(uint64_t, slept_ns, slept_ns)", "lttng_ust_field_integer(uint64_t, slept, slept_ns)"),
            ("lttng_ust_field_enum_value(\"timer\", 3)", "lttng_ust_field_enum_value(\"timer\", 7)"),
            ("runloop, wake, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)", "runloop, wake, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)"),
            ("runloop, timer_exit,\n", "runloop, timer_exit2,\n"),
            ("#endif /* RUNLOOP_TP_H */", "LTTNG_UST_TRACEPOINT_EVENT(runloop, extra, LTTNG_UST_TP_ARGS(uint64_t, loop_id), "
                + "LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(uint64_t, loop_id, loop_id)))\n#endif"),
        ]
        for (from, to) in mutations {
            #expect(header.contains(from), "mutation target \(from)")
            guard let r = header.range(of: from) else { continue }
            let mutated = header.replacingCharacters(in: r, with: to)
            #expect(!Self.differences(ProviderHeaderDeclarations(mutated)).isEmpty, "not caught: \(from) → \(to)")
        }
    }

    /// Every schema event has its Swift face (an `RLSchemaEventID` whose `isEnabled` checks that very
    /// tracepoint, an out-of-line Swift emitter calling its C emitter) and its C enabled check and emitter.
    @Test func everyEventHasAnEmitter() {
        #expect(RLSchemaEventID.allCases.map(\.lttngName) == RunLoopSchema.events.map(\.fullName))
        let swiftFace = Self.source("Sources/RunLoopTracing/RLTrace+Events.swift") + Self.source("Sources/RunLoopTracing/RLTraceEmit.swift")
        let swiftEmit = Self.source("Sources/RunLoopTracing/RLTraceEmit.swift") + Self.source("Sources/RunLoopTracing/RLTrace+Generated.swift")
        let umbrella = Self.source("Sources/CRunLoopTracepoints/include/CRunLoopTracepoints.h")
        let cEmit = Self.source("Sources/CRunLoopTracepoints/runloop_emit.c")
        for id in RLSchemaEventID.allCases {
            let n = id.name
            #expect(id.event.name == n && RLSchemaEventID(name: n) == id)
            #expect(swiftEmit.contains("case .\(id): return rl_tp_\(n)_enabled()"), "RLTrace.isEnabled(.\(id)) checks \(n)")
            #expect(swiftFace.contains("if rl_tp_\(n)_enabled() {"), "RLTrace has a tracepoint function for \(n)")
            // RLTrace's function takes the path RunLoopSchema states (the generator writes the helpers).
            switch id.event.swiftEmitter {
            case .inlineCall:
                #expect(swiftFace.contains("rl_tp_\(n)("), "RLTrace calls rl_tp_\(n) from its inlined check")
                #expect(!swiftEmit.contains("static func _\(id.swiftName)("), "no out-of-line helper for \(n)")
            case .outOfLine, .handWritten, .handWrittenHelper:
                #expect(swiftFace.contains("_\(id.swiftName)("), "RLTrace calls _\(id.swiftName)")
                #expect(swiftEmit.components(separatedBy: "static func _\(id.swiftName)(").count == 2, "one helper _\(id.swiftName)")
            }
            // The id-only events call their C emitter from the inlined check; the others through an
            // out-of-line helper that converts names (RLTraceEmit.swift).
            #expect(swiftEmit.contains("rl_tp_\(n)(") || swiftFace.contains("rl_tp_\(n)("), "RunLoopTracing calls rl_tp_\(n)")
            #expect(umbrella.contains("RL_TP_DECLARE_ENABLED(\(n))") && umbrella.contains("void rl_tp_\(n)("), "umbrella header declares \(n)")
            #expect(cEmit.contains("RL_EMIT(\(n),"), "runloop_emit.c emits \(n)")
        }
        for k in RLCalloutKind.allCases {
            #expect(k.entryEvent.name == k.label + "_entry" && k.exitEvent.name == k.label + "_exit")
            #expect(k.entryEvent.callout?.kind == k && k.entryEvent.callout?.isEntry == true)
        }
    }

    /// docs/tracepoints.md has a section per event, names every field and states every enumeration
    /// and log level as the schema does.
    @Test func docsDocumentTheSchema() {
        let docs = Self.source("docs/tracepoints.md")
        let headings = docs.split(separator: "\n").filter { $0.hasPrefix("#### ") }
        for e in RunLoopSchema.events {
            #expect(headings.contains { $0.contains("`\(e.fullName)`") }, "docs/tracepoints.md: no section for \(e.fullName)")
            if let c = e.eventClass {
                #expect(headings.contains { $0.contains("`\(e.fullName)`") && $0.contains("class `\(c)`") }, "\(e.fullName): class \(c)")
            }
            for f in e.fields { #expect(docs.contains("`\(f.name)`"), "docs/tracepoints.md lacks field \(f.name) of \(e.name)") }
        }
        let lines = docs.split(separator: "\n")
        for en in RunLoopSchema.enumerations {
            let row = lines.first { $0.hasPrefix("| `\(en.name)` |") }
            #expect(row != nil, "docs/tracepoints.md: no row for enumeration \(en.name)")
            for v in en.enumerators {
                #expect(row?.contains("`\(v.label)` \(v.value)") ?? false, "docs: \(en.name) \(v.label) = \(v.value)")
            }
        }
        for level in Set(RunLoopSchema.events.map(\.logLevel)) {
            #expect(lines.contains { $0.hasPrefix("| `TRACE_\(level.macroName)` (\(level.rawValue)) |") }, "docs: log level \(level.macroName)")
        }
    }
}
