import Foundation
import Testing
import RunLoopSchema
import TestSupport

/// The `runloop` provider's C header, C emitters, enabled checks, RLTrace's public functions, Swift
/// out-of-line emitters and docs/tracepoints.md's events table are generated from RunLoopSchema by Tools/rl-tpgen
/// (scripts/gen-provider.sh): the checked-in files must be exactly the generator's output.
@Suite("the runloop provider's files are generated from RunLoopSchema")
struct GeneratedProviderTests {
    static let root = RunloopProvider.packageRoot

    /// The first line where `generated` and `checkedIn` differ (1-based) and both lines, or nil
    /// when the texts are equal.
    static func firstDifference(_ generated: String, _ checkedIn: String) -> (line: Int, generated: String, checkedIn: String)? {
        if generated == checkedIn { return nil }
        let g = generated.split(separator: "\n", omittingEmptySubsequences: false)
        let c = checkedIn.split(separator: "\n", omittingEmptySubsequences: false)
        for i in 0..<max(g.count, c.count) {
            let a = i < g.count ? String(g[i]) : "<end of file>", b = i < c.count ? String(c[i]) : "<end of file>"
            if a != b { return (i + 1, a, b) }
        }
        return (g.count, "<same lines, different bytes>", "")
    }

    static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rl-tpgen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func checkedInFilesAreTheGeneratorsOutput() throws {
        let gen = try productPath("rl-tpgen")
        let list = try runProgram(gen, ["--list"])
        #expect(list.status == 0, "\(list.stderr)")
        let files = list.stdout.split(separator: "\n").map(String.init)
        #expect(files == ["Sources/CRunLoopTracepoints/runloop_tp.h", "Sources/CRunLoopTracepoints/include/CRunLoopTracepoints.h",
                          "Sources/CRunLoopTracepoints/runloop_emit.c", "Sources/RunLoopTracing/RLTrace+Generated.swift",
                          "Sources/RunLoopTracing/RLTrace+Events.swift",
                          "Sources/RunLoopSchema/RunLoopSchema+RunLoopCore.swift", "docs/tracepoints.md"])
        let out = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let run = try runProgram(gen, ["--root", Self.root.path, "--output", out.path])
        #expect(run.status == 0, "\(run.stderr)")
        for f in files {
            let generated = try String(contentsOf: out.appendingPathComponent(f), encoding: .utf8)
            let checkedIn = (try? String(contentsOf: Self.root.appendingPathComponent(f), encoding: .utf8)) ?? "<missing>"
            if let d = Self.firstDifference(generated, checkedIn) {
                Issue.record("\(f) is not rl-tpgen's output (run scripts/gen-provider.sh): line \(d.line): generated \(d.generated.debugDescription), checked in \(d.checkedIn.debugDescription)")
            }
        }
    }

    /// The comparison names the first differing line, wherever it is (a changed, an added and a
    /// removed line of the checked-in header).
    @Test func aDifferenceNamesItsLine() throws {
        let header = try String(contentsOf: Self.root.appendingPathComponent("Sources/CRunLoopTracepoints/runloop_tp.h"), encoding: .utf8)
        #expect(Self.firstDifference(header, header) == nil)
        var lines = header.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let at = try #require(lines.firstIndex(of: "        lttng_ust_field_integer(uint64_t, slept_ns, slept_ns)"))
        lines[at] = "        lttng_ust_field_integer(uint32_t, slept_ns, slept_ns)"
        let changed = Self.firstDifference(header, lines.joined(separator: "\n"))
        #expect(changed?.line == at + 1 && changed?.checkedIn == lines[at])
        lines.remove(at: at)
        #expect(Self.firstDifference(header, lines.joined(separator: "\n"))?.line == at + 1)
        #expect(Self.firstDifference(header, header + "\n")?.line == header.split(separator: "\n", omittingEmptySubsequences: false).count + 1)
    }

    /// A docs/tracepoints.md without the table's markers is refused with a message naming the file
    /// and the marker, and nothing is written over it.
    @Test func docsWithoutMarkersAreRefused() throws {
        let root = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root.appendingPathComponent("docs"), withIntermediateDirectories: true)
        let text = "# The `runloop` LTTng-UST provider\n\nno table here\n"
        try Data(text.utf8).write(to: root.appendingPathComponent("docs/tracepoints.md"))
        let run = try runProgram(try productPath("rl-tpgen"), ["--root", root.path, "--output", root.path])
        #expect(run.status == 1)
        #expect(run.stderr.contains("docs/tracepoints.md: no \"<!-- BEGIN GENERATED: rl-tpgen events table"), "\(run.stderr)")
        #expect(try String(contentsOf: root.appendingPathComponent("docs/tracepoints.md"), encoding: .utf8) == text)
    }

    /// The generated events table lists every event of the schema, in order, with every field.
    @Test func docsTableListsTheSchema() throws {
        let docs = try String(contentsOf: Self.root.appendingPathComponent("docs/tracepoints.md"), encoding: .utf8)
        let rows = docs.split(separator: "\n").filter { $0.hasPrefix("| `runloop:") }
        #expect(rows.count == RunLoopSchema.events.count)
        for (row, e) in zip(rows, RunLoopSchema.events) {
            #expect(row.hasPrefix("| `\(e.fullName)` | "), "\(row)")
            for f in e.fields { #expect(row.contains("`\(f.name)` "), "\(e.name): \(f.name)") }
        }
    }

    /// RLTrace's public functions are RunLoopSchema's Swift faces: each event but the hand-written
    /// `block_entry` has its function in RLTrace+Events.swift, named and labelled as its fields'
    /// Swift parameters say (the calling thread's tid is no parameter), in the schema's order.
    @Test func publicFunctionsFollowTheSchema() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("Sources/RunLoopTracing/RLTrace+Events.swift"), encoding: .utf8)
        // `public static func NAME(` up to `) {`, the declaration joined onto one line.
        var declared: [(name: String, labels: [String])] = []
        var rest = Substring(text)
        while let r = rest.range(of: "public static func ") {
            let tail = rest[r.upperBound...]
            let open = try #require(tail.firstIndex(of: "("))
            let close = try #require(tail.range(of: ") {\n"))
            let params = tail[tail.index(after: open)..<close.lowerBound]
            let labels = params.split(separator: ",").compactMap { p -> String? in
                let l = p.split(separator: ":").first?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
                return l.isEmpty || l.hasPrefix("@") || l.contains(" ") ? nil : l
            }
            declared.append((String(tail[..<open]), labels))
            rest = tail[close.upperBound...]
        }
        let expected = RunLoopSchema.events.filter { $0.swiftEmitter != .handWritten }.map { e in
            (e.swift.name, e.fields.compactMap { f -> String? in
                if case .parameter(let l, _) = f.source { return l }
                return nil
            })
        }
        #expect(declared.map(\.name) == expected.map(\.0))
        for (d, e) in zip(declared, expected) { #expect(d.labels == e.1, "\(d.name)") }
        #expect(RunLoopSchema.events.filter { $0.swiftEmitter == .handWritten }.map(\.name) == ["block_entry"])
        #expect(text.contains("kind: RLCalloutKind?") && text.contains("reason: RLWakeReason"))
    }
}
