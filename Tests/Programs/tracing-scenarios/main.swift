// tracing-scenarios: programs the RunLoopTracingTests run under a real LTTng session daemon.
//
//   tracing-scenarios direct     fire every `runloop` tracepoint with known values; print them
//   tracing-scenarios names      string fields of every length class the provider writes differently
//   tracing-scenarios sequence   a loop with observers, source0s, timers, a pipe source1 and blocks
//   tracing-scenarios nested     a run inside a callout (depth 2) and a timer missing fires
//   tracing-scenarios iterations runs nested in callouts of every kind, then what their pass emits
//   tracing-scenarios differential  RunLoopCoreTests' differential scenarios, items named
//   tracing-scenarios wakes      one run per way of waking the main loop (timer, fd, wakeUp, stop,
//                                main queue, timeout, poll)
//   tracing-scenarios hang [--hang-ms N] [--threshold-ms N]   a timer callout stuck N ms in a named
//                                function, for the hang watchdog
//   tracing-scenarios blocknames N K [...]  N perform-blocks over K names (the block-name pool)
//
// Each scenario prints what it did (lines `EXPECT {json}` / `LOG ...`) so the tests can compare
// the recorded trace with the program's own account of what happened.
import Foundation

let args = CommandLine.arguments.dropFirst()
switch args.first {
case "direct":
    DirectScenario.run()
case "names":
    NamesScenario.run()
case "sequence":
    SequenceScenario.run()
case "wakes":
    WakeScenario.run()
case "nested":
    NestedScenario.run()
case "iterations":
    IterationsScenario.run()
case "differential":
    DifferentialReplay.run()
case "hang":
    HangScenario.run(Array(args.dropFirst()))
case "blocknames":
    BlockNamesScenario.run(Array(args.dropFirst()))
default:
    FileHandle.standardError.write(Data("usage: tracing-scenarios direct|names|sequence|nested|iterations|wakes|differential|hang|blocknames\n".utf8))
    exit(2)
}
