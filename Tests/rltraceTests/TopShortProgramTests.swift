import Foundation
import Testing

// `rltrace top -- COMMAND` on a program over before the relay daemon announced its session's
// streams (about a second after the program registers, docs/live.md): the session is stopped at
// the program's exit but destroyed only once the viewer has the streams (TopChild, Top.swift), so
// what it recorded is still shown.

@Suite("rltrace top: a program shorter than the relay daemon's stream announcement", .serialized)
struct TopShortProgramTests {
    @Test("top -- rl-example done in about 0.5 s: the final snapshot shows its loops, with the totals of report on the relay daemon's copy")
    func shortProgramIsShown() throws {
        let dir = NSTemporaryDirectory() + "rltrace-top-short-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 4 clients × 200 requests: answered in well under a second (rl-example ends when done).
        let started = Date()
        let r = try rltraceTop(["top", "--batch", "--interval", "1s", "--format", "json", "-o", dir, "--",
                                binDir.appendingPathComponent("rl-example").path, "--duration", "5", "--requests", "200"])
        let took = Date().timeIntervalSince(started)
        #expect(r.status == 0, "\(r.err)")
        let final = try #require(try topSnapshots(r.out).last)
        #expect(final["final"] as? Bool == true)
        let report = try rltraceTop(["report", dir, "--format", "json"])
        #expect(report.status == 0, "\(report.err)")
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(report.out.utf8)) as? [String: Any])
        let reported = (doc["loops"] as? [[String: Any]] ?? []).map { "\($0["pid"]!)/\($0["loop"]!): \($0["iterations"]!) iterations, \($0["callouts"]!) callouts" }
        let live = loops(final).map { "\($0["pid"]!)/\($0["loop"]!): \($0["totalIterations"]!) iterations, \($0["totalCallouts"]!) callouts" }
        #expect(reported.count == 2 && live.sorted() == reported.sorted(), "top \(live) against report \(reported)")
        let events = (final["sessions"] as? [[String: Any]])?.first?["runloopEvents"] as? Int
        #expect(events != nil && events == (doc["trace"] as? [String: Any])?["runloopEvents"] as? Int)
        // Waiting for the streams costs at most its 3 s grace (it does not wait for nothing).
        #expect(took < 15, "\(took) s")
    }
}
