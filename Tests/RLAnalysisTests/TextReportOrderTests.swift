import Foundation
import Testing
import RLAnalysis

/// The text report's lines do not depend on a dictionary's order: wake reasons with equal counts
/// are listed by name (the report of `--begin 1.2s --end 1.6s` on a benchmark trace printed
/// `source1 389 · main_queue 389` in some runs and `main_queue 389 · source1 389` in others).
@Suite("text report: the same report prints the same text")
struct TextReportOrderTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../rltraceTests/Fixtures/demo-before/report.json")

    @Test("wake reasons with equal counts are listed by name, whatever the dictionary's order")
    func wakeReasonTies() throws {
        var report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: Self.fixture))
        let pairs = [("source1", 389), ("main_queue", 389), ("timer", 779), ("wake_up", 24512), ("none", 389)]
        var lines = Set<String>()
        // The same contents in dictionaries of other capacities and insertion orders (their
        // iteration orders differ).
        for capacity in [0, 8, 64, 1024] {
            for order in [pairs, pairs.reversed()] {
                var d: [String: Int] = [:]
                d.reserveCapacity(capacity)
                for (k, v) in order { d[k] = v }
                report.loops[0].wakeReasons = d
                let text = TextReportRenderer().render(report)
                lines.insert(text.split(separator: "\n").first { $0.hasPrefix("  wakes: ") }.map(String.init) ?? "")
            }
        }
        #expect(lines == ["  wakes: wake_up 24512 · timer 779 · main_queue 389 · none 389 · source1 389 · sleeps 1263, polls 446, spurious 67"])
    }
}
