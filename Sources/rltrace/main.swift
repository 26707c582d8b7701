import ArgumentParser

struct RLTrace: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rltrace", abstract: "Record and analyse run-loop traces.")
}
RLTrace.main()
