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
        let (lines, status) = try runProduct("rl-example", ["--duration", "20", "--clients", "4", "--requests", "100"])
        #expect(status == 0)
        #expect(lines.contains("connections 4, requests 400, replies 400"), "\(lines)")
        #expect(lines.contains("load: ok 400, wrong 0, broken 0, clients done 4/4"), "\(lines)")
        // The run ends when its load is done (--duration is a maximum): over the S seconds it says it
        // ran, a 100 ms heartbeat fires about S/0.1 times, and the 50 ms main-queue and @MainActor
        // posts about S/0.05 times each (at least 60 % of that on a loaded machine).
        let ranLine = lines.first { $0.hasPrefix("ran ") } ?? ""
        let ran = Double(ranLine.split(separator: " ").dropFirst().first ?? "") ?? -1
        #expect(ran > 0 && ran < 20, "\(ranLine)")
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

    /// `--max-load`'s last line as key → value.
    func maxLoadLine(_ lines: [String]) -> [String: Double] {
        guard let line = lines.last(where: { $0.hasPrefix("max-load ") }) else { return [:] }
        var kv: [String: Double] = [:]
        for part in line.split(separator: " ").dropFirst() {
            let p = part.split(separator: "=")
            if p.count == 2, let v = Double(p[1]) { kv[String(p[0])] = v }
        }
        return kv
    }

    @Test func maxLoadSendsBackToBackAndReportsThroughputAndCPU() throws {
        // 2 clients × 2000 requests: paced (2 ms after each reply) that is at least 4 s; back to back
        // it is a fraction of it.
        let (lines, status) = try runProduct("rl-example", ["--max-load", "--clients", "2", "--requests", "2000", "--duration", "60"], timeout: 90)
        #expect(status == 0, "\(lines)")
        #expect(lines.contains("connections 2, requests 4000, replies 4000"), "\(lines)")
        #expect(lines.contains("load: ok 4000, wrong 0, broken 0, clients done 2/2"), "\(lines)")
        let m = maxLoadLine(lines)
        #expect(Set(m.keys) == ["requests", "wall_s", "rps", "cpu_us_per_request", "cpu_user_s", "cpu_sys_s"], "\(lines)")
        guard let req = m["requests"], let wall = m["wall_s"], let rps = m["rps"], let cpu = m["cpu_us_per_request"],
              let user = m["cpu_user_s"], let sys = m["cpu_sys_s"] else { return }
        #expect(req == 4000)
        #expect(wall > 0 && wall < 2, "wall \(wall) s: not back to back (paced would take ≥ 4 s)")
        // requests/s is requests ÷ wall: rps printed to 0.1 (±0.05), and wall_s printed to 1 µs
        // moves requests ÷ wall by up to requests ÷ wall² × 0.5 µs (0.03 at 0.25 s for 4 000).
        let bound = 0.05 + req / (wall * wall) * 5e-7 + 1e-9
        #expect(abs(rps - req / wall) <= bound, "rps \(rps), requests/wall \(req / wall), bound \(bound)")
        // CPU per request is the process's user + system time over the window ÷ requests (printed to
        // 0.001 µs, the times to 1 µs), and no process uses more CPU than its cores × the wall time.
        #expect(cpu > 0 && abs(cpu - (user + sys) * 1e6 / req) <= 0.01, "cpu \(cpu) µs/request, user \(user) s, sys \(sys) s")
        #expect(user + sys <= wall * Double(ProcessInfo.processInfo.activeProcessorCount) + 0.01, "CPU \(user + sys) s in \(wall) s")
    }

    @Test func maxLoadWithoutARequestCountRunsForTheDuration() throws {
        let (lines, status) = try runProduct("rl-example", ["--max-load", "--clients", "2", "--duration", "1"], timeout: 60)
        #expect(status == 0, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("ended: the work was done") }, "\(lines)")
        let m = maxLoadLine(lines)
        guard let req = m["requests"], let wall = m["wall_s"] else { Issue.record("no max-load line: \(lines)"); return }
        // The clients stop sending at 1 s and finish with their last answer.
        #expect(wall >= 1 && wall < 1.5, "wall \(wall) s")
        // Paced, 2 clients answer at most 2 × 1 s / 2 ms = 1000 requests in a second.
        #expect(req > 1000, "\(req) requests in \(wall) s")
        #expect(lines.contains("load: ok \(Int(req)), wrong 0, broken 0, clients done 2/2"), "\(lines)")
    }

    @Test func rejectsUnknownOptionsClearly() throws {
        let (lines, status) = try runProduct("rl-example", ["--inject", "bogus"])
        #expect(status == 2)
        #expect(lines.isEmpty)
    }
}
