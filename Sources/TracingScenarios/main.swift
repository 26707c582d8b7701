// tracing-scenarios: programs the TracingTests run under a real LTTng session daemon.
//
//   tracing-scenarios direct     fire every `runloop` tracepoint with known values; print them
//
// Each scenario prints what it did (lines `EXPECT {json}` / `LOG ...`) so the tests can compare
// the recorded trace with the program's own account of what happened.
import Foundation

let args = CommandLine.arguments.dropFirst()
switch args.first {
case "direct":
    DirectScenario.run()
default:
    FileHandle.standardError.write(Data("usage: tracing-scenarios direct\n".utf8))
    exit(2)
}
