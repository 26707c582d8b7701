import ArgumentParser

/// The `rltrace` root command; each subcommand lives in its own file.
struct RLTrace: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rltrace",
        abstract: "Record and analyse run-loop traces.",
        subcommands: [Dump.self, Report.self]
    )
}

RLTrace.main()
