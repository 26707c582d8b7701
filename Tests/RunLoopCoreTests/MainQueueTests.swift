import Foundation
import Testing
import TestSupport

/// Runs a package executable and returns its standard output lines and exit status.
func runProduct(_ name: String, _ args: [String], timeout: TimeInterval = 60) throws -> (lines: [String], status: Int32) {
    let r = try runProgram(try productPath(name), args, timeout: timeout) { Issue.record("\(name) \(args) timed out after \(timeout) s") }
    return (r.stdout.split(separator: "\n").map(String.init), r.status)
}

@Suite("Main queue and @MainActor, in a process whose main thread runs the loop")
struct MainQueueTests {
    @Test func mainQueueIsServicedByTheMainLoopInCommonModesOnly() throws {
        let (lines, status) = try runProduct("rlc-scenarios", ["mainqueue"])
        #expect(status == 0)
        #expect(lines == [
            "tracking: timedOut",            // not a common mode: the main queue waits
            "dispatch-1 on main",
            "default: handledSource",         // draining the main queue is a handled source
            "main-actor on main",
            "default: handledSource",
            "dispatch-2 on main",
            "tracking-common: handledSource", // marked common: now it services the queue
            "poll-empty-default: timedOut",   // the main loop's common mode is never empty
            "nested: finished",               // inside the drain the queue is not re-entered
            "inner-source0",
            "nested-tracking: handledSource",
            "outer: handledSource",
            "queued-inside-drain",            // work queued during the drain runs afterwards
            "after: handledSource",
            "dispatch-3 on main",
            "default: handledSource",
            "worker woke: 0",                 // main-queue work wakes the main loop only
        ])
    }

    @Test func stallMonitorSeesAHeldIteration() throws {
        let (lines, status) = try runProduct("rlc-scenarios", ["stall"])
        #expect(status == 0)
        #expect(lines == ["stalls: 1"])
    }
}

@Suite("The example loop service")
struct ExampleServiceTests {
    @Test func servesEveryRequestUnderItsBuiltInLoad() throws {
        let (lines, status) = try runProduct("rl-example", ["--duration", "1.5", "--clients", "4", "--requests", "100"])
        #expect(status == 0)
        #expect(lines.contains("connections 4, requests 400, replies 400"), "\(lines)")
        #expect(lines.contains("load: ok 400, wrong 0, broken 0, clients done 4/4"), "\(lines)")
        // The run ends when its load is done (--duration is a maximum): over the S seconds it says it
        // ran, a 100 ms heartbeat fires about S/0.1 times, and the 50 ms main-queue and @MainActor
        // posts about S/0.05 times each (at least 60 % of that on a loaded machine).
        let ranLine = lines.first { $0.hasPrefix("ran ") } ?? ""
        let ran = Double(ranLine.split(separator: " ").dropFirst().first ?? "") ?? -1
        #expect(ran > 0 && ran <= 1.6, "\(ranLine)")
        let hb = lines.first { $0.hasPrefix("heartbeats ") } ?? ""
        let numbers = hb.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        #expect(numbers.count == 4)
        if numbers.count == 4 {
            let expected = ran / 0.1
            #expect(Double(numbers[0]) >= expected - 2 && Double(numbers[0]) <= expected + 1, "heartbeats \(numbers[0]) in \(ran) s")
            #expect(Double(numbers[1]) >= 0.6 * ran / 0.05 && Double(numbers[2]) >= 0.6 * ran / 0.05,
                    "main queue \(numbers[1]), main actor \(numbers[2]) in \(ran) s")
        }
    }

    @Test func rejectsUnknownOptionsClearly() throws {
        let (lines, status) = try runProduct("rl-example", ["--inject", "bogus"])
        #expect(status == 2)
        #expect(lines.isEmpty)
    }
}
