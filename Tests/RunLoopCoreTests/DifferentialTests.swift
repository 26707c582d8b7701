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

    /// Issue 19's scenarios: both engines produce exactly the sequence CF's rules give.
    @Test(arguments: [
        ("a repeating timer moved into the past in its own callout fires again at once",
         ["obs:entry"] + ["fire1", "fire2", "fire3"].flatMap { ["obs:beforeTimers", "obs:beforeSources", "obs:beforeWaiting", "obs:afterWaiting", $0] }
            + ["obs:exit", "r:1"]),
        ("a one-shot timer rescheduled in its own callout is still invalidated after it",
         ["once", "valid-in-callout:true", "r:1", "valid-after:false date:none"]),
        ("past fire dates mean the time they were given: timers fire in that order",
         ["b-reports-its-past-date:true", "c-reports-its-past-date:true",
          "a-due-now", "b-made-1s-ago", "d-made-3s-ago", "c-moved-to-the-past", "r:1"]),
        ("a timer moved into the past by another timer's callout fires on the next pass",
         ["obs:entry", "obs:beforeTimers", "obs:beforeSources", "obs:beforeWaiting", "obs:afterWaiting", "first",
          "obs:beforeTimers", "obs:beforeSources", "obs:beforeWaiting", "obs:afterWaiting", "late", "obs:exit", "r:1"]),
        ("missed fires are skipped and the phase is kept",
         ["fire1", "on-grid:true skipped:true", "fire2", "r:1"]),
        ("a timer in two modes: not fired by a run nested in its callout; its new date holds",
         ["fire1 in a", "nested-b:3", "a:2", "fire2 in a", "a-again:1", "b:1"]),
        ("a run nested in a common timer's callout waits, it does not spin",
         ["nested:3", "passes-bounded:true cpu-bounded:true", "r:1"]),
        ("a due timer taken out of its only mode by an earlier callout of the pass does not fire",
         ["t1", "t2-in-default:false t3-in-other:true", "t3 in default", "r:1", "t2-valid:true", "t2", "r-readded:1", "other:3"]),
        ("a timer or observer out of all its modes may join another loop",
         ["o-still-in-side:true", "loop1 contains t:false o:false", "loop2 contains t:true kept:false o:true ko:false",
          "back on loop 1 t:true o:true", "kept observer on loop 1", "observer called", "timer fired", "kept fired on loop 1", "loop1:1"]),
        ("invalidated items: a timer has no date and ignores new ones; a source0 is not signalled",
         ["date-set:date", "invalidated:none", "after-set:none valid:false", "loose:none",
          "signalled:true", "after-invalidate:false", "after-signal:false", "r:1"]),
        ("addCommonMode records the name; the mode is made when a common item is copied in",
         ["modes:[\"default\"]", "after-mark:[\"default\"]", "run-unmade:1", "after-common-item:[\"default\", \"marked-empty\"]",
          "after-second-mark:[\"default\", \"marked-empty\", \"marked-with-items\"]", "common source0", "run:3"]),
        ("next timer fire date of a mode: none, the first timer's date, a firing timer's own",
         ["no-mode:0.0 empty-default:0.0 common:0.0", "first-is-near:true", "first-is-past-as-given:true", "common-still:0.0",
          "in-callout-first-is-the-firing-timer:true", "r:3", "after:true", "moved:0.0 other:true"]),
        ("an invalidated timer has no next fire date, in its callout or from another thread, and a new date gives it none",
         ["in-callout:date", "invalidated-in-callout:none", "set-in-callout:none valid:false", "once", "r:1",
          "after-run:none fired-once:none mode:0.0", "other-before:date", "other-after:none mode:0.0"]),
        ("limit date: nil when finished, distant future without timers, else the next timer's date",
         ["missing:nil empty:nil", "no-timer:distantFuture", "timer:true", "source0", "due timer fired by the poll",
          "after-poll:true", "emptied:nil"]),
    ])
    func issue19Sequences(_ name: String, _ expected: [String]) {
        let scenario = try! #require(scenarios.first { $0.0 == name }).1
        let (ours, cf) = runBoth(name, scenario)
        #expect(cf == expected, "CF: \(cf)")
        #expect(ours == expected, "RunLoopCore: \(ours)")
    }

    /// Changes made from another thread while the loop sleeps: both engines wake for exactly what
    /// moves the sleeping mode's next deadline, when it is due (CrossThreadScenarios.swift).
    @Test(arguments: [
        ("addCommonMode from another thread: a due common timer copied into the sleeping mode fires at once",
         ["timer in tracking prompt:true", "r:2"]),
        ("addCommonMode from another thread: a common timer copied into the sleeping mode fires on its date",
         ["timer on time:true prompt:true", "r:2"]),
        ("addCommonMode from another thread while a run nested in a callout sleeps in that mode: a due common timer fires there at once",
         ["timer in modal prompt:true", "nested:2", "r:3"]),
        ("a due timer added from another thread to the mode the loop sleeps in fires at once",
         ["timer prompt:true", "r:2"]),
        ("a due timer added from another thread to the common modes fires at once in the common mode the loop sleeps in",
         ["timer in tracking prompt:true", "r:2"]),
        ("timers of the sleeping mode moved earlier from another thread fire on their new dates",
         ["past prompt:true", "soon prompt:true", "r:2"]),
        ("the next timers of the sleeping mode invalidated, removed or moved later from another thread: it waits for the one left",
         ["d on time:true prompt:true", "r:2", "b-valid:true c:date x-valid:true"]),
        ("an observer and a signalled source0 added from another thread wake nothing; the wake-up that follows finds them",
         ["obs:afterWaiting", "source0", "obs:exit", "r:2"]),
        ("addCommonMode from another thread copies a common observer and a signalled common source0; the wake-up that follows finds them",
         ["obs:afterWaiting", "source0 in tracking", "obs:exit", "r:2"]),
    ])
    func crossThreadSequences(_ name: String, _ expected: [String]) {
        let scenario = try! #require(scenarios.first { $0.0 == name }).1
        let (ours, cf) = runBoth(name, scenario)
        #expect(cf == expected, "CF: \(cf)")
        #expect(ours == expected, "RunLoopCore: \(ours)")
    }
}
