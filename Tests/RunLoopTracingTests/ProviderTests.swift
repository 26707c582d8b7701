import Foundation
import Testing
import RunLoopTracing
import RunLoopSchema

/// The `runloop` provider as declared in its header (the source of truth for names and fields).
enum RunloopProvider {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let header = (try? String(contentsOf: packageRoot.appendingPathComponent("Sources/CRunLoopTracepoints/runloop_tp.h"),
                                     encoding: .utf8)) ?? ""

    /// Every event name of the provider, in header order.
    static var eventNames: [String] {
        let re = try! NSRegularExpression(pattern: #"LTTNG_UST_TRACEPOINT_EVENT(?:_INSTANCE)?\(\s*runloop\s*,\s*(?:\w+\s*,\s*runloop\s*,\s*)?(\w+)"#)
        let ns = header as NSString
        return re.matches(in: header, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range(at: 1)) }
    }

    /// Every payload field name of the provider.
    static var fieldNames: Set<String> {
        let re = try! NSRegularExpression(pattern: #"lttng_ust_field_(?:integer|integer_hex|string|sequence|sequence_hex)\(\s*(?:\w+\s*,\s*)?(\w+)\s*,|lttng_ust_field_enum\(\s*runloop\s*,\s*\w+\s*,\s*\w+\s*,\s*(\w+)"#)
        let ns = header as NSString
        var out = Set<String>()
        for m in re.matches(in: header, range: NSRange(location: 0, length: ns.length)) {
            for g in 1...2 where m.range(at: g).location != NSNotFound {
                out.insert(ns.substring(with: m.range(at: g)))
            }
        }
        return out
    }
}

@Suite("runloop provider contract")
struct ProviderTests {
    @Test func headerDeclaresTheExpectedEvents() {
        let names = RunloopProvider.eventNames
        #expect(names == RunLoopSchema.events.map(\.name), "the header declares RunLoopSchema's events, in order")
        #expect(Set(names).count == names.count)
        for kind in RLCalloutKind.allCases {
            #expect(names.contains(kind.entryEvent.name) && names.contains(kind.exitEvent.name), "\(kind.label) entry/exit")
        }
        let hang = names.firstIndex(of: "hang_begin") ?? names.count
        #expect(Array(names[hang...].prefix(3)) == ["hang_begin", "hang_stack", "hang_end"], "the hang watchdog's events")
        #expect(names.suffix(3) == ["loop_info", "item_info", "callout_cpu"], "the constant pools and the CPU readings")
    }

    /// docs/tracepoints.md documents every event and every field.
    @Test func docsDocumentEveryEventAndField() throws {
        let docs = try String(contentsOf: RunloopProvider.packageRoot.appendingPathComponent("docs/tracepoints.md"), encoding: .utf8)
        for name in RunloopProvider.eventNames {
            #expect(docs.contains("`runloop:\(name)`"), "docs/tracepoints.md lacks runloop:\(name)")
        }
        #expect(RunloopProvider.fieldNames.count > 15)
        for field in RunloopProvider.fieldNames {
            #expect(docs.contains("`\(field)`"), "docs/tracepoints.md lacks field \(field)")
        }
    }

    /// The Swift enumerations match the provider's enumeration mappings value for value.
    @Test func swiftEnumerationsMatchTheProvider() {
        let header = RunloopProvider.header
        for k in RLCalloutKind.allCases {
            #expect(header.contains("lttng_ust_field_enum_value(\"\(k.label)\", \(k.rawValue))"))
        }
        for r in RLWakeReason.allCases {
            #expect(header.contains("lttng_ust_field_enum_value(\"\(r.label)\", \(r.rawValue))"))
        }
    }

    /// `RLSchemaEventID` names exactly the provider's events; none is enabled in this (unregistered) process.
    @Test func traceEventsMatchTheProvider() {
        #expect(RLSchemaEventID.allCases.map(\.name) == RunloopProvider.eventNames)
        #expect(RLSchemaEventID.wake.lttngName == "runloop:wake")
        #expect(RLSchemaEventID.allCases.allSatisfy { !RLTrace.isEnabled($0) })
        #expect(RLCalloutKind.allCases.allSatisfy { !RLTrace.isCalloutTraced($0) })
    }

    /// With no session, every tracepoint is a no-op: names are never built.
    @Test func disabledSitesDoNotEvaluateArguments() {
        nonisolated(unsafe) var evaluated = 0
        func name() -> String { evaluated += 1; return "n" }
        for _ in 0..<1000 {
            RLTrace.blockEntry(loop: 1, item: 3, name: name())
            RLTrace.itemInfo(loop: 1, kind: .timer, item: 3, order: 0, name: name(), mode: name())
            RLTrace.loopInfo(loop: 1, pid: 1, tid: 1, procname: name(), threadName: name())
            RLTrace.itemAdded(loop: 1, iteration: 2, kind: .timer, item: 3, name: name(), mode: name())
            RLTrace.loopCreated(loop: 1, iteration: 0, tid: 1, threadName: name())
        }
        #expect(evaluated == 0)
    }
}
