import ArgumentParser
import CTFReader
import Dispatch
import Foundation
import LTTngControl
import RLAnalysis
#if canImport(Glibc)
import Glibc
#endif

/// `rltrace demo`: records the bundled example service under load and reports on it.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Record the bundled example service (rl-example) with injected problems, print the report, write the HTML.",
        usage: "rltrace demo [-o DIR] [--force] [--duration S] [--inject PROBLEMS]",
        discussion: """
        rl-example serves TCP on loopback with source1s, timers, the main queue, perform-blocks, a source0 signalled from a worker and observers; the demo injects a slow callout, a hang, a late timer and a busy spin, which the report names. The service runs until its load is done and each problem was made, or until --duration passes, whichever comes first.

        Example:
          rltrace demo -o /tmp/demo
        """
    )
    @Option(name: .shortAndLong, help: "Keep the trace and the HTML report in this directory (default: a temporary one).")
    var output: String?
    @Flag(help: "Record into the directory even if it already holds a demo's trace or report.html.")
    var force = false
    @Option(help: "How long the service runs, in seconds.") var duration = 3.0
    @Option(help: "Problems to inject (comma-separated: slow-callout,hang,late-timer,spin; `none` for none).")
    var inject = "slow-callout,hang,late-timer,spin"

    func run() throws {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let example = bin.appendingPathComponent("rl-example").path
        guard FileManager.default.isExecutableFile(atPath: example) else {
            warn("rltrace: rl-example not found next to rltrace (\(example)); build it with `swift build --product rl-example`")
            throw ExitCode(1)
        }
        let dir = URL(fileURLWithPath: try output.map { try localTraceDirectory($0) } ?? NSTemporaryDirectory() + "rltrace-demo-\(getpid())")
        let trace = dir.appendingPathComponent("trace")
        let html = dir.appendingPathComponent("report.html")
        try refuseExistingDemo(trace: trace.path, html: html.path, force: force)
        var args = [example, "--duration", String(duration), "--clients", "4", "--requests", "300"]
        if inject != "none" { args += ["--inject", inject] }
        let status = try recordProgram(args, output: .directory(trace), snapshot: false, contexts: defaultContexts(),
                                       events: .standard, announce: true)
        if status != 0 { warn("rltrace: rl-example exited with status \(status)") }
        let strips = BusyStripCollector()
        let report = try runAnalysis { try analyze(paths: [trace.path], also: strips) }
        writeStdout(TextReportRenderer().render(report))
        try writeOutput(to: html.path, force: true) { $0.write(HTMLReportRenderer.render(report, strips: strips)) }
        writeStdout("\ntrace: \(trace.path)\nHTML report: \(html.path)\n")
    }
}
