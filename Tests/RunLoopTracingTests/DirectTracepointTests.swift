import Foundation
import Testing
import RunLoopSchema

/// What `tracing-scenarios direct` says each call recorded.
private struct ExpectedEvent: Decodable {
    var event: String
    var fields: [String: String]
    var labels: [String: String]
}

@Suite("runloop tracepoints under a real session daemon", .serialized)
struct DirectTracepointTests {
    /// Every tracepoint fired directly with random values: each recorded event, field by field,
    /// equals what the program passed (read back through babeltrace2).
    @Test func everyTracepointRecordsEveryField() throws {
        let rec = try Tracing.record(["direct"], resolve: false)
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let expected = try rec.run.stdout.split(separator: "\n").filter { $0.hasPrefix("EXPECT ") }.map {
            try JSONDecoder().decode(ExpectedEvent.self, from: Data($0.dropFirst(7).utf8))
        }
        #expect(expected.count > 40)
        #expect(rec.run.stdout.contains("ENABLED \(RunLoopSchema.events.count)\n"), "RLTrace.isEnabled under runloop:*")
        #expect(rec.run.stdout.contains("CALLOUTS_TRACED \(RLCalloutKind.allCases.count)\n"), "RLTrace.isCalloutTraced under runloop:*")
        #expect(rec.events.count == expected.count, "trace has \(rec.events.count) events, program fired \(expected.count)")
        // Every event of the provider appears.
        let names = Set(rec.events.map(\.shortName))
        let schema = Set(RunLoopSchema.events.map(\.name))
        #expect(names == schema, "missing: \(schema.subtracting(names))")
        for (e, got) in zip(expected, rec.events) {
            #expect(got.name == e.event)
            guard got.name == e.event else { continue }
            for (k, v) in e.fields {
                #expect(got[k] == v, "\(e.event).\(k): expected \(v.debugDescription), recorded \(got[k].debugDescription)")
            }
            for (k, v) in e.labels {
                #expect(got.labels[k] == v, "\(e.event).\(k) label: expected \(v), recorded \(got.labels[k] ?? "nil")")
            }
            // No payload field that the contract does not know about.
            let payloadKeys = Set(got.fields.keys).subtracting(["cpu_id", "vpid"])
            #expect(payloadKeys == Set(e.fields.keys), "\(e.event): fields \(payloadKeys.sorted()) vs \(e.fields.keys.sorted())")
        }
    }

    /// Payloads as the provider's probe writes them (runloop_tp_writers.h: fields staged in a
    /// 512-byte local buffer and written with one ring-buffer write; a string or number that does
    /// not fit in the room left goes out after what is staged, a string staged again if it fits
    /// then, else through lttng-ust's strcpy) decode exactly as passed, field by field, labels
    /// included: every event class with a string (integers before and after it, enumerations,
    /// hex, two strings) with names of every length class — "", short, Swift small/large, UTF-8,
    /// and lengths at both sides of each place the buffer runs out — and extreme integers.
    /// A write of the wrong bytes or length would show in this event's fields or the next one's.
    @Test func stringFieldsDecodeExactly() throws {
        let rec = try Tracing.record(["names"], resolve: false)
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let expected = try rec.run.stdout.split(separator: "\n").filter { $0.hasPrefix("EXPECT ") }.map {
            try JSONDecoder().decode(ExpectedEvent.self, from: Data($0.dropFirst(7).utf8))
        }
        #expect(expected.count == 22 * 9 + 21)   // NamesScenario: 22 names, 9 events each, and a named block's item_info for the 21 not empty
        #expect(rec.events.count == expected.count, "trace has \(rec.events.count) events, program fired \(expected.count)")
        for (e, got) in zip(expected, rec.events) {
            #expect(got.name == e.event)
            guard got.name == e.event else { continue }
            for (k, v) in e.fields {
                #expect(got[k] == v, "\(e.event).\(k): expected \(v.debugDescription), recorded \(got[k].debugDescription)")
            }
            for (k, v) in e.labels {
                #expect(got.labels[k] == v, "\(e.event).\(k) label: expected \(v), recorded \(got.labels[k] ?? "nil")")
            }
            let payloadKeys = Set(got.fields.keys).subtracting(["cpu_id", "vpid"])
            #expect(payloadKeys == Set(e.fields.keys), "\(e.event): fields \(payloadKeys.sorted()) vs \(e.fields.keys.sorted())")
        }
    }

    /// Without any session daemon, a traced program runs normally and quickly (registration fails fast).
    @Test func noSessionDaemonIsHarmless() throws {
        let (home, noDaemon) = try Tracing.environmentWithoutSessionDaemon()
        defer { try? FileManager.default.removeItem(at: home) }
        let env = noDaemon
        let run = try Tracing.run(Tracing.scenarios, ["direct"], environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.split(separator: "\n").filter { $0.hasPrefix("EXPECT ") }.count > 40)
        #expect(run.seconds < 2.0, "a traced program without a daemon took \(run.seconds) s")
        #expect(run.stdout.contains("ENABLED 0\n"), "RLTrace.isEnabled without a daemon")
        #expect(run.stdout.contains("CALLOUTS_TRACED 0\n"), "RLTrace.isCalloutTraced without a daemon")
    }
}
