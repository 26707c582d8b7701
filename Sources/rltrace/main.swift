import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import RLAnalysis

/// The `rltrace` root command; each subcommand lives in its own file.
struct RLTraceCommand: ParsableCommand {

    static let configuration = CommandConfiguration(
        commandName: "rltrace",
        abstract: "Record and analyse run-loop traces.",
        version: rltraceVersion,
        subcommands: [RecordCommand.self, ReportCommand.self, TimelineCommand.self, HistogramCommand.self, HangsCommand.self, ExportCommand.self, LAMICommand.self, DumpCommand.self, DemoCommand.self,
                      DiffCommand.self, TopCommand.self]
    )
}

/// The version `rltrace --version` prints.
let rltraceVersion = "rltrace 0.2.0 (RunLoopTrace; rltrace-report/2)"

// Trace Compass asks an external analysis for its LAMI version with only the command's first word
// (`rltrace --mi-version`), then runs the configured command line (`rltrace lami …`).
if CommandLine.arguments.dropFirst() == ["--mi-version"] {
    writeStdout(LAMIReportRenderer.miVersionLine)
    exit(0)
}

RLTraceCommand.main(splittingOnHangValue(Array(CommandLine.arguments.dropFirst())))
