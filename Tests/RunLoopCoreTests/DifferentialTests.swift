import Foundation
import Synchronization
import RunLoopScenarios
import Testing

/// The same scenario runs on RunLoopCore and on the real CFRunLoop (each on a fresh thread) and the
/// logs must be identical. The scenarios live in the RunLoopScenarios target (shared with tracing-scenarios).
let scenarios = differentialScenarios

func runBoth(_ name: String, _ scenario: @escaping Scenario) -> (ours: [String], cf: [String]) {
    let ours = onFreshThread("rl-\(name)") { () -> [String] in
        let log = EventLog()
        scenario(RLEngine(), log)
        return log.all
    }
    let cf = onFreshThread("cf-\(name)") { () -> [String] in
        let log = EventLog()
        scenario(CFEngine(), log)
        return log.all
    }
    return (ours, cf)
}


@Suite("Differential: RunLoopCore vs CoreFoundation's CFRunLoop", .serialized)
struct DifferentialTests {
    @Test(arguments: scenarios.map(\.0))
    func sameSequence(_ name: String) {
        let scenario = scenarios.first { $0.0 == name }!.1
        let (ours, cf) = runBoth(name, scenario)
        #expect(!cf.isEmpty)
        #expect(ours == cf, "\(name)\n ours: \(ours)\n   cf: \(cf)")
    }

    /// The logs are equal; they must also be what CF documents (so equality is not vacuous).
    @Test func knownSequences() {
        let basic = runBoth("basic", scenarios[1].1)
        #expect(basic.cf == ["obs:entry", "obs:beforeTimers", "obs:beforeSources", "block", "source0",
                             "obs:beforeTimers", "obs:beforeSources", "obs:beforeWaiting", "obs:afterWaiting", "timer",
                             "obs:beforeTimers", "obs:beforeSources", "obs:beforeWaiting", "obs:afterWaiting", "obs:exit",
                             "result:3"])
        let empty = runBoth("empty", scenarios[0].1)
        #expect(empty.ours == ["result:1", "result-unknown-mode:1", "result-common:1"])
        let oneShot = runBoth("oneshot", scenarios[2].1)
        #expect(oneShot.ours.last == "result:1")
        #expect(oneShot.ours.contains("timer"))
    }
}
