// swift-tools-version:6.1
import PackageDescription
import Foundation

// Build with RLTRACE_DISABLED=1 to compile every tracepoint out (used by the benchmarks' baseline).
let tracingDisabled = ProcessInfo.processInfo.environment["RLTRACE_DISABLED"] == "1"
let tracingDefines: [SwiftSetting] = tracingDisabled ? [.define("RLTRACE_DISABLED")] : []

let package = Package(
    name: "RunLoopTrace",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "RunLoopCore", targets: ["RunLoopCore"]),
        .library(name: "RunLoopTracing", targets: ["RunLoopTracing"]),
        .library(name: "RunLoopSchema", targets: ["RunLoopSchema"]),
        .library(name: "CTFReader", targets: ["CTFReader"]),
        .executable(name: "rltrace", targets: ["rltrace"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
    ],
    targets: [
        // --- RunLoopCore: the CFRunLoop engine -------------------------------------------------
        .target(name: "CRunLoopShims", linkerSettings: [.linkedLibrary("dispatch")]),
        .target(
            name: "RunLoopCore",
            dependencies: [
                "CRunLoopShims", "RunLoopTracing", "RunLoopSchema",
                // (Timer heaps and the perform-block queue are RunLoopCore's own, grown with realloc:
                // measured in rl-bench, see docs/benchmarks.md. Deque serves RLMessagePort.)
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: tracingDefines
        ),
        // The differential scenarios, written once: run against CFRunLoop by RunLoopCoreTests and
        // replayed under tracing by tracing-scenarios.
        .target(name: "RunLoopScenarios", dependencies: ["RunLoopCore"], path: "Tests/RunLoopScenarios", swiftSettings: [.swiftLanguageMode(.v5)]),
        // Scenario runner whose *main thread* runs the loop (main queue / @MainActor tests).
        .executableTarget(name: "rlc-scenarios", dependencies: ["RunLoopCore", "CRunLoopShims", "TestSupport"], path: "Tests/Programs/rlc-scenarios"),
        // The example loop service (every callout kind, built-in load, injectable problems).
        .executableTarget(name: "rl-example", dependencies: ["RunLoopCore", "CRunLoopShims"], path: "Examples/rl-example"),
        // What every test target shares: the product locator, one process runner, hand-built CTF traces,
        // the shared private session daemon and ctf-testgen recordings (hence LTTngControl, itself Foundation only).
        .target(name: "TestSupport", dependencies: ["LTTngControl"], path: "Tests/TestSupport", swiftSettings: [.swiftLanguageMode(.v5)]),
        .testTarget(name: "RunLoopCoreTests", dependencies: ["RunLoopCore", "CRunLoopShims", "RunLoopScenarios", "rlc-scenarios", "rl-example", "TestSupport"], swiftSettings: [.swiftLanguageMode(.v5)]),

        // --- Tracing: LTTng-UST provider + Swift face (docs/tracepoints.md) --------------------------------
        .target(
            name: "CRunLoopTracepoints",
            cSettings: [.headerSearchPath(".")] + (tracingDisabled ? [.define("RLTRACE_DISABLED")] : []),
            linkerSettings: tracingDisabled ? [] : [.linkedLibrary("lttng-ust"), .linkedLibrary("dl")]
        ),
        // The hang watchdog's stack sampler (a signal handler emitting runloop:hang_stack); its Swift
        // face is RunLoopTracing's RLHangSampler.
        .target(
            name: "CRunLoopHang", dependencies: ["CRunLoopTracepoints"],
            cSettings: tracingDisabled ? [.define("RLTRACE_DISABLED")] : []
        ),
        // The provider's event schema (events, fields, enumerations, how each is emitted) stated once,
        // as data. rl-tpgen generates the provider's C header, C emitters, enabled checks, Swift
        // emitters and docs/tracepoints.md's events table from it (scripts/gen-provider.sh);
        // RunLoopTracingTests' GeneratedProviderTests fail when the checked-in files differ.
        .target(name: "RunLoopSchema"),
        // (It reads RunLoopCore's RLRunResult and RLActivity for the `run_result` and `activity` tables.)
        .executableTarget(name: "rl-tpgen", dependencies: ["RunLoopSchema", "RunLoopCore"], path: "Tools/rl-tpgen"),
        .target(name: "RunLoopTracing", dependencies: ["CRunLoopTracepoints", "CRunLoopHang", "RunLoopSchema"], swiftSettings: tracingDefines),
        // Programs the RunLoopTracingTests run under a real session daemon (direct tracepoints, loop scenarios).
        .executableTarget(name: "tracing-scenarios", dependencies: ["RunLoopTracing", "RunLoopSchema", "RunLoopCore", "RunLoopScenarios"], path: "Tests/Programs/tracing-scenarios",
                         // Swift 5 mode: the replayed differential scenarios are copied verbatim from RunLoopCoreTests (also v5).
                         swiftSettings: [.swiftLanguageMode(.v5)]),
        .testTarget(name: "RunLoopTracingTests", dependencies: ["RunLoopTracing", "RunLoopSchema", "RunLoopCore", "LTTngControl", "tracing-scenarios", "TestSupport", "rl-tpgen"]),
        // Tracepoint cost: disabled site, enabled entry+exit, run loop vs. a compiled-out build.
        // LTTng's own floor for tracing-bench (a bench-only provider `rlbench_floor`: one
        // integer field, and runloop:block_entry's payload emitted from C), compiled out with RLTRACE_DISABLED=1.
        .target(
            name: "CTracingBenchFloor", path: "Benchmarks/tracing-bench-floor",
            cSettings: [.headerSearchPath(".")] + (tracingDisabled ? [.define("RLTRACE_DISABLED")] : []),
            linkerSettings: tracingDisabled ? [] : [.linkedLibrary("lttng-ust"), .linkedLibrary("dl")]
        ),
        .executableTarget(name: "tracing-bench", dependencies: ["RunLoopTracing", "RunLoopCore", "LTTngControl", "TestSupport", "CTracingBenchFloor"],
                          path: "Benchmarks/tracing-bench", swiftSettings: tracingDefines),

        // --- rl-bench: RunLoopCore vs CFRunLoop vs a bare epoll floor (scripts/bench.sh) ---
        .target(name: "RLBenchMallocCounter", path: "Benchmarks/rl-bench-malloc-counter"),
        .executableTarget(name: "rl-bench", dependencies: ["RunLoopCore", "RunLoopTracing", "CRunLoopShims", "LTTngControl", "RLBenchMallocCounter", "TestSupport",
                                                         .product(name: "ArgumentParser", package: "swift-argument-parser")],
                          path: "Benchmarks/rl-bench", swiftSettings: tracingDefines + [.swiftLanguageMode(.v5)]),

        // --- rltrace: reader, session control, CLI (docs/reader.md) -------------------------------
        .target(name: "LTTngControl"),
        // The real stack pointer for the nesting budget (CTFReader/Nesting.swift).
        .target(name: "CCTFReaderShims"),
        .target(name: "CTFReader", dependencies: ["CCTFReaderShims"]),
        // A client of lttng-relayd's live (viewer) protocol feeding CTFReader's decoder.
        .target(name: "LTTngLive", dependencies: ["CTFReader"]),
        // Records LTTng-UST events of many shapes for CTFReader's tests and benchmark.
        .executableTarget(
            name: "ctf-testgen", path: "Tests/Programs/ctf-testgen",
            cSettings: [.headerSearchPath("include")],
            linkerSettings: [.linkedLibrary("lttng-ust"), .linkedLibrary("dl"), .linkedLibrary("pthread")]
        ),
        .testTarget(name: "CTFReaderTests", dependencies: ["CTFReader", "LTTngControl", "TestSupport", "ctf-testgen"]),
        // Private session daemons, sessions and recording plans against a real lttng-sessiond.
        .testTarget(name: "LTTngControlTests", dependencies: ["LTTngControl", "TestSupport", "ctf-testgen"]),
        // Concurrent stress, faults and hostile traces across modules: RunLoopCore's engine under
        // threads and faults, CTFReader on mutated traces (scripts/sanitizers.sh, fuzz.sh, soak.sh).
        .testTarget(name: "ReliabilityTests", dependencies: ["RunLoopCore", "CTFReader", "TestSupport"], swiftSettings: [.swiftLanguageMode(.v5)]),
        // Side-by-side decoding benchmark against babeltrace2 (not part of the test suite).
        .executableTarget(name: "reader-bench", dependencies: ["CTFReader", "LTTngControl"], path: "Benchmarks/reader-bench"),
        // reader → event stream → loop model → metrics → renderers (one folder each)
        // ISA-L's igzip: the Perfetto export's compressed_packets (Debian libisal-dev; docs/benchmarks.md
        // measures it against libdeflate and zlib).
        .systemLibrary(name: "CISAL", path: "Sources/CISAL", providers: [.apt(["libisal-dev"])]),
        .target(name: "CPacketDeflate", cSettings: [.unsafeFlags(["-O2"])], linkerSettings: [.linkedLibrary("isal")]),
        .target(
            name: "RLAnalysis",
            dependencies: ["CTFReader", "LTTngLive", "RunLoopSchema", "CISAL", "CPacketDeflate", .product(name: "Histogram", package: "hdrhistogram-swift"),
                           .product(name: "HeapModule", package: "swift-collections")],
            // The per-event path touches class-held state millions of times a second: dynamic
            // exclusivity checks were ~10 % of `report`'s time (docs/benchmarks.md). The pipeline is
            // single-threaded per stage, and no stage hands out inout access to its state.
            swiftSettings: [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        ),
        .executableTarget(
            name: "rltrace",
            dependencies: [
                "CTFReader", "LTTngControl", "RLAnalysis", "LTTngLive", "RunLoopSchema",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The live (viewer) protocol's wire structs and URLs.
        .testTarget(name: "LTTngLiveTests", dependencies: ["LTTngLive"], swiftSettings: [.swiftLanguageMode(.v5)]),
        // RLAnalysis through its API (pipeline parts, histograms), without the rltrace executable.
        // zlib, the tests' inflater of the Perfetto export (the one Perfetto's trace processor uses).
        .systemLibrary(name: "CZlib", path: "Tests/CZlib", providers: [.apt(["zlib1g-dev"])]),
        .testTarget(name: "RLAnalysisTests", dependencies: ["RLAnalysis", "CZlib",
                                                        // the oracle of RLAnalysis's own HdrHistogram layout (DurationHistogramTests)
                                                        .product(name: "Histogram", package: "hdrhistogram-swift")],
                    swiftSettings: [.swiftLanguageMode(.v5)]),
        // The rltrace executable end to end (it runs the commands; also RLAnalysis's types it imports).
        .testTarget(name: "rltraceTests", dependencies: ["rltrace", "rlc-scenarios", "rl-example", "ctf-testgen", "trace-workload", "hang-workload", "TestSupport",
                                                     "LTTngControl", "RLAnalysis"],
                    exclude: ["Fixtures"], swiftSettings: [.swiftLanguageMode(.v5)]),

        // --- the analysis pipeline's benchmark and bounded-memory workload ---------------
        // Whole rltrace commands vs babeltrace2 on recorded rl-example traces: time, CPU, peak RSS
        // (scripts/bench-pipeline.sh, docs/benchmarks.md; not part of the test suite).
        .executableTarget(name: "pipeline-bench", dependencies: ["TestSupport"], path: "Benchmarks/pipeline-bench", swiftSettings: [.swiftLanguageMode(.v5)]),
        // A deterministic RunLoopCore workload (a fixed number of steps, every callout kind) for traces
        // of a chosen size; rltraceTests' BoundedMemoryTests records it.
        .executableTarget(name: "trace-workload", dependencies: ["RunLoopCore", "CRunLoopShims"],
                          path: "Tests/Programs/trace-workload", swiftSettings: [.swiftLanguageMode(.v5)]),
        // A RunLoopCore program that hangs in a named function at known times (the
        // watchdog's stacks, the flight recorder); rltraceTests' HangForensicsTests record it.
        .executableTarget(name: "hang-workload", dependencies: ["RunLoopCore"],
                          path: "Tests/Programs/hang-workload", swiftSettings: [.swiftLanguageMode(.v5)]),
    ]
)
