// rl-tpgen: writes the `runloop` provider's generated files from RunLoopSchema.
//
//   rl-tpgen --root PACKAGE --output DIR
//
// reads PACKAGE/docs/tracepoints.md (the text around the generated events table) and writes, under
// DIR, the files of ``generatedFiles`` (relative to the package root). scripts/gen-provider.sh runs
// it with DIR = the package root; Tests/RunLoopTracingTests/GeneratedProviderTests.swift runs it into a
// temporary directory and compares.
import Foundation
import RunLoopSchema

struct GeneratorError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

/// Every generated file, by its path in the package.
let generatedFiles: [(path: String, text: (String) throws -> String)] = [
    ("Sources/CRunLoopTracepoints/runloop_tp.h", { _ in providerHeader() }),
    ("Sources/CRunLoopTracepoints/include/CRunLoopTracepoints.h", { _ in umbrellaHeader() }),
    ("Sources/CRunLoopTracepoints/runloop_emit.c", { _ in emitterSource() }),
    ("Sources/RunLoopTracing/RLTrace+Generated.swift", { _ in swiftEmitters() }),
    ("Sources/RunLoopTracing/RLTrace+Events.swift", { _ in swiftFunctions() }),
    ("Sources/RunLoopSchema/RunLoopSchema+RunLoopCore.swift", { _ in runLoopCoreTables() }),
    ("docs/tracepoints.md", { root in
        try docsWithTable(String(contentsOfFile: root + "/docs/tracepoints.md", encoding: .utf8)) }),
]

@MainActor func run(_ args: [String]) throws {
    var root: String?, output: String?, i = 0
    while i < args.count {
        switch args[i] {
        case "--root" where i + 1 < args.count: root = args[i + 1]; i += 2
        case "--output" where i + 1 < args.count: output = args[i + 1]; i += 2
        case "--list": for f in generatedFiles { print(f.path) }; return
        default: throw GeneratorError("unknown argument \(args[i]); usage: rl-tpgen --root PACKAGE --output DIR | --list")
        }
    }
    guard let root, let output else { throw GeneratorError("usage: rl-tpgen --root PACKAGE --output DIR | --list") }
    // Every text first: a refused input leaves every file as it was.
    let texts = try generatedFiles.map { ($0.path, try $0.text(root)) }
    for (path, text) in texts {
        let url = URL(fileURLWithPath: output).appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }
}

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("rl-tpgen: \(error)\n".utf8))
    exit(1)
}
