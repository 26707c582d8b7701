import Foundation
import Testing

// rl-example's length: it runs until its work is done (the built-in load served, each injected
// problem made) or until --duration passes, whichever comes first — as its banner says.

/// Runs rl-example with `args`, terminated after `timeout` seconds.
func runExample(_ args: [String], timeout: Double) throws -> ProgramRun {
    try runProgram(binDir.appendingPathComponent("rl-example").path, args, timeout: timeout)
}

/// The seconds in `ended: the work was done (the load after S s)`.
func loadSeconds(_ out: String) -> Double? {
    guard let line = out.split(separator: "\n").first(where: { $0.hasPrefix("ended: the work was done (the load after ") }) else { return nil }
    return Double(line.dropFirst("ended: the work was done (the load after ".count).prefix { $0 != " " })
}

@Suite("rl-example ends when its work is done, --duration at most")
struct ExampleDurationTests {
    @Test("a small load and a long --duration: it exits soon after the load is done, every request served")
    func endsWhenTheLoadIsDone() throws {
        let r = try runExample(["--duration", "60", "--clients", "4", "--requests", "300"], timeout: 30)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("until the load is done (4 clients × 300 requests) or 60.0 s have passed, whichever comes first"), "\(r.stdout)")
        #expect(r.stdout.contains("connections 4, requests 1200, replies 1200"), "\(r.stdout)")
        #expect(r.stdout.contains("load: ok 1200, wrong 0, broken 0, clients done 4/4"), "\(r.stdout)")
        let load = try #require(loadSeconds(r.stdout), "\(r.stdout)")
        // Each client pauses 2 ms after each of its 300 replies: the load takes at least 0.6 s.
        #expect(load >= 0.6, "\(r.stdout)")
        // From start to exit: the load, the program's start-up and exit, and 1.5 s to spare.
        #expect(r.seconds < load + 1.5, "ran \(r.seconds) s for a load of \(load) s:\n\(r.stdout)")
    }

    @Test("a load longer than --duration is cut there, and the program says so")
    func durationIsAMaximum() throws {
        let r = try runExample(["--duration", "1", "--clients", "4", "--requests", "100000"], timeout: 40)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.seconds >= 1 && r.seconds < 2.5, "ran \(r.seconds) s with --duration 1:\n\(r.stdout)")
        #expect(r.stdout.contains("ended: --duration 1.0 s passed before the work was done: "), "\(r.stdout)")
        #expect(r.stdout.contains(" of 400000 requests answered"), "\(r.stdout)")
    }

    @Test("with injected problems it runs until each was made, then ends")
    func waitsForTheInjectedProblems() throws {
        // The load (4 × 20 requests) is done in a tenth of a second; the late timer comes at +1.3 s.
        let r = try runExample(["--duration", "30", "--clients", "4", "--requests", "20", "--inject", "hang,spin,late-timer"], timeout: 40)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        for p in ["hang", "spin", "late-timer"] { #expect(r.stdout.contains("injected \(p): "), "\(p):\n\(r.stdout)") }
        #expect(r.stdout.contains("load: ok 80, wrong 0, broken 0, clients done 4/4"), "\(r.stdout)")
        #expect(r.seconds >= 1.3 && r.seconds < 1.4 + 1.5, "ran \(r.seconds) s:\n\(r.stdout)")
    }
}
