import Foundation
import LTTngControl
import Testing
import TestSupport

/// One event as babeltrace2 prints it: `[cycles] host runloop:name: { ctx }, { payload }`.
struct TraceEvent: CustomStringConvertible, Equatable {
    /// The full event name, e.g. `runloop:wake`.
    var name: String
    /// The event's timestamp in clock cycles (LTTng's monotonic clock: nanoseconds).
    var cycles: UInt64
    /// Every field of every printed scope (packet context, event context, payload), by name.
    /// Integers in decimal, strings unescaped, enumerations as their integer value.
    var fields: [String: String]
    /// The label of each enumeration field.
    var labels: [String: String]

    subscript(_ field: String) -> String? { fields[field] }
    func int(_ field: String) -> Int64? { fields[field].flatMap { Int64($0) } }
    func uint(_ field: String) -> UInt64? { fields[field].flatMap { UInt64($0) } }
    var shortName: String { String(name.dropFirst("runloop:".count)) }
    var description: String { "\(name) \(fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))" }
}

/// Parses babeltrace2's default text output (run with `--clock-cycles --no-delta`).
enum BabeltraceText {
    struct ParseError: Error, CustomStringConvertible {
        var line: String
        var description: String { "cannot parse babeltrace2 line: \(line)" }
    }

    static func parse(_ text: String) throws -> [TraceEvent] {
        try text.split(separator: "\n", omittingEmptySubsequences: true).map { try parseLine(String($0)) }
    }

    static func parseLine(_ line: String) throws -> TraceEvent {
        let chars = Array(line.unicodeScalars)
        var i = 0
        func fail() -> ParseError { ParseError(line: line) }
        guard chars.first == "[", let close = chars.firstIndex(of: "]") else { throw fail() }
        guard let cycles = UInt64(String(String.UnicodeScalarView(chars[1..<close])).trimmingCharacters(in: .whitespaces)) else { throw fail() }
        // Skip the host name (if any), then read the event name up to ": ".
        let rest = String(String.UnicodeScalarView(chars[(close + 1)...]))
        guard let nameRange = rest.range(of: #"[A-Za-z0-9_]+:[A-Za-z0-9_]+: "#, options: .regularExpression) else { throw fail() }
        let name = String(rest[nameRange].dropLast(2))
        let body = Array(rest[nameRange.upperBound...].unicodeScalars)
        var fields: [String: String] = [:], labels: [String: String] = [:]
        i = 0
        func skipSpaces() { while i < body.count, body[i] == " " { i += 1 } }
        func expect(_ c: Unicode.Scalar) throws { skipSpaces(); guard i < body.count, body[i] == c else { throw fail() }; i += 1 }
        func readWord() -> String {
            skipSpaces(); var s = ""
            while i < body.count, body[i] != " ", body[i] != ",", body[i] != "}", body[i] != ")" { s.unicodeScalars.append(body[i]); i += 1 }
            return s
        }
        func readString() throws -> String {
            try expect("\"")
            var s = ""
            while i < body.count, body[i] != "\"" {
                if body[i] == "\\", i + 1 < body.count {
                    i += 1
                    switch body[i] {
                    case "n": s += "\n"
                    case "t": s += "\t"
                    case "r": s += "\r"
                    case "v": s += "\u{0B}"
                    case "f": s += "\u{0C}"
                    case "a": s += "\u{07}"
                    case "b": s += "\u{08}"
                    case "e": s += "\u{1B}"
                    default: s.unicodeScalars.append(body[i])
                    }
                } else {
                    s.unicodeScalars.append(body[i])
                }
                i += 1
            }
            try expect("\"")
            return s
        }
        func readValue(_ key: String) throws {
            skipSpaces()
            guard i < body.count else { throw fail() }
            if body[i] == "\"" {
                fields[key] = try readString()
            } else if body[i] == "[" {
                // An array or sequence: `[ [0] = v, [1] = v ]` (`[ ]` when empty), kept as the
                // values joined by "," (integers in decimal).
                i += 1
                var values: [String] = []
                while true {
                    skipSpaces()
                    guard i < body.count else { throw fail() }
                    if body[i] == "]" { i += 1; break }
                    if body[i] == "," { i += 1; continue }
                    try expect("[")
                    _ = readWord()
                    skipSpaces()
                    if i < body.count, body[i] == "]" { i += 1 }
                    try expect("=")
                    values.append(normalizeInteger(readWord()))
                }
                fields[key] = values.joined(separator: ",")
            } else if body[i] == "(" {
                // ( "label" : container = N )   or   ( <unknown> : container = N )
                i += 1; skipSpaces()
                if body[i] == "\"" { labels[key] = try readString() } else { labels[key] = readWord() }
                try expect(":")
                guard readWord() == "container" else { throw fail() }
                try expect("=")
                fields[key] = normalizeInteger(readWord())
                try expect(")")
            } else {
                fields[key] = normalizeInteger(readWord())
            }
        }
        // Scopes: `{ k = v, ... }` separated by ", ".
        while true {
            skipSpaces()
            if i >= body.count { break }
            try expect("{")
            skipSpaces()
            if i < body.count, body[i] == "}" { i += 1 } else {
                while true {
                    let key = readWord()
                    try expect("=")
                    try readValue(key)
                    skipSpaces()
                    if i < body.count, body[i] == "," { i += 1; continue }
                    try expect("}")
                    break
                }
            }
            skipSpaces()
            if i < body.count, body[i] == "," { i += 1 }
        }
        return TraceEvent(name: name, cycles: cycles, fields: fields, labels: labels)
    }

    static func normalizeInteger(_ word: String) -> String {
        if word.hasPrefix("0x"), let v = UInt64(word.dropFirst(2), radix: 16) { return String(v) }
        return word
    }
}

/// The private session daemon shared by this test process (started on first use, stopped at exit).
nonisolated(unsafe) private var sharedDaemonInstance: PrivateSessionDaemon?
private let sharedDaemonResult: Result<PrivateSessionDaemon, any Error> = {
    do {
        let d = try PrivateSessionDaemon.start()
        sharedDaemonInstance = d
        atexit { sharedDaemonInstance?.stop() }
        return .success(d)
    } catch {
        return .failure(error)
    }
}()

enum Tracing {
    /// The shared private session daemon.
    static func daemon() throws -> PrivateSessionDaemon { try sharedDaemonResult.get() }

    /// This process's environment with no session daemon reachable: `LTTNG_HOME` and `HOME` at a new
    /// empty folder (returned, for the caller to remove).
    static func environmentWithoutSessionDaemon() throws -> (home: URL, environment: [String: String]) {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("no-sessiond-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        var env = ProcessInfo.processInfo.environment
        env["LTTNG_HOME"] = home.path
        env["HOME"] = home.path
        return (home, env)
    }

    /// The `tracing-scenarios` program (built next to the test bundle).
    static var scenarios: URL { URL(fileURLWithPath: (try? productPath("tracing-scenarios")) ?? "tracing-scenarios") }

    struct ProgramRun {
        var status: Int32
        var stdout: String
        var stderr: String
        var seconds: Double
        /// The program's process id.
        var pid: Int32
        /// Lines `LOG ...` of the program (its own account of what it did), without the prefix.
        var log: [String] { stdout.split(separator: "\n").filter { $0.hasPrefix("LOG ") }.map { String($0.dropFirst(4)) } }
    }

    /// Runs `executable arguments` with `environment`, returning its output (fails the test on timeout).
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String], timeout: Double = 60) throws -> ProgramRun {
        let r = try runProgram(executable.path, arguments, environment: environment, timeout: timeout) {
            Issue.record("\(executable.lastPathComponent) \(arguments) timed out")
        }
        return ProgramRun(status: r.status, stdout: r.stdout, stderr: r.stderr, seconds: r.seconds, pid: r.pid)
    }

    struct Recording {
        var run: ProgramRun
        var events: [TraceEvent]
        var babeltraceText: String
    }

    /// Records `tracing-scenarios arguments` in a fresh session (`runloop:*` enabled, `vpid` context)
    /// of the shared daemon and reads the trace back with babeltrace2. Only the program's own events
    /// are returned (a session records every registered process's events).
    /// - Parameter enableOptions: extra `lttng enable-event` options (e.g. `--loglevel=TRACE_INFO`).
    /// - Parameter events: the events to enable (`lttng enable-event -u` syntax; default `runloop:*`).
    /// - Parameter privateDaemon: a daemon of the test's own instead of the shared one (which other
    ///   suites' sessions use at the same time: what they enable is enabled in every program that
    ///   registers with it, so a test about events being *disabled* needs its own daemon).
    /// - Parameter resolve: give each event the fields a reader derives from the constant pools
    ///   and the nesting (``ConstantPools/resolve(_:)``); false: the events as recorded.
    /// - Parameter environment: added to the program's environment (e.g. `RLTRACE_POOL_PERIOD`).
    static func record(_ arguments: [String], contexts: [String] = [], enableOptions: [String] = [],
                       events: String = "runloop:*", privateDaemon: PrivateSessionDaemon? = nil,
                       environment: [String: String] = [:],
                       timeout: Double = 60, resolve: Bool = true) throws -> Recording {
        let daemon = try privateDaemon ?? daemon()
        let name = "tt-\(getpid())-\(UUID().uuidString.prefix(8))"
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("tracing-tests-\(name)")
        defer { try? FileManager.default.removeItem(at: output) }
        let session = try LTTngSession.create(name: name, outputDirectory: output, cli: daemon.cli)
        var destroyed = false
        defer { if !destroyed { try? session.destroy() } }
        if enableOptions.isEmpty {
            try session.enableUserspaceEvents(events)
        } else {
            try daemon.cli.run(["enable-event", "--userspace", "--session=\(name)"] + enableOptions + [events])
        }
        try session.addContexts(["vpid"] + contexts)
        try session.start()
        let run = try run(scenarios, arguments, environment: daemon.applicationEnvironment.merging(environment) { $1 }, timeout: timeout)
        try session.stop()
        try session.destroy()
        destroyed = true
        let bt = try Tracing.run(URL(fileURLWithPath: "/usr/bin/babeltrace2"),
                                 ["--clock-cycles", "--no-delta", output.path], environment: ProcessInfo.processInfo.environment)
        #expect(bt.status == 0, "babeltrace2 failed: \(bt.stderr)")
        let events = try BabeltraceText.parse(bt.stdout).filter { $0["vpid"] == String(run.pid) }
        return Recording(run: run, events: resolve ? ConstantPools.resolve(events) : events, babeltraceText: bt.stdout)
    }
}

/// What a reader of the `runloop` schema derives for each event (docs/tracepoints.md, "Constant
/// pools"), written here independently of rltrace's reader so that the engine's tests can keep
/// asserting per-event names and iterations: a callout entry's `name` from its item's description
/// (`item_added`, `item_info`), `iteration` for the per-iteration events from the innermost open
/// iteration of their loop, and an exit's fields from the entry of the innermost open callout of
/// its kind (as is `iteration_end`'s iteration from the innermost open iteration). A field the
/// event records itself is left as recorded.
enum ConstantPools {
    static func resolve(_ events: [TraceEvent]) -> [TraceEvent] {
        struct Key: Hashable { var item: String; var kind: String }
        var names: [Key: String] = [:]
        var blockNames: [String: String] = [:]
        var iterations: [String: [String]] = [:]
        var callouts: [String: [(kind: String, entry: TraceEvent)]] = [:]
        let kinds = ["observer", "source0", "source1", "timer", "main_queue", "block"]
        // An item's description may be recorded after its first callout (registered from another
        // thread, whose event lands later than the loop's): names are taken from the whole trace,
        // as a report names items at the end. So are the names of the block-name pool (an id with
        // bit 47 set, docs/tracepoints.md "Constant pools"); a block described with its own
        // number (a trace from before the pool, or RLTrace.blockEntry) is so just before its entry.
        func pooled(_ item: String) -> Bool { (UInt64(item) ?? 0) & (1 << 47) != 0 }
        for e in events where e.shortName == "item_added" || e.shortName == "item_info" {
            if let item = e["item_id"], let kind = e.labels["kind"], kind != "block" || pooled(item), let n = e["name"],
               names[Key(item: item, kind: kind)] == nil {
                names[Key(item: item, kind: kind)] = n
            }
        }
        return events.map { e in
            var e = e
            guard e.name.hasPrefix("runloop:"), let loop = e["loop_id"] else { return e }
            func set(_ k: String, _ v: String?) { if e.fields[k] == nil, let v { e.fields[k] = v } }
            let short = e.shortName
            let current = iterations[loop]?.last
            switch short {
            case "item_added", "item_info":
                guard let item = e["item_id"], let kind = e.labels["kind"], let n = e["name"] else { break }
                if kind == "block" && !pooled(item) { blockNames[item] = n }
            case "iteration_begin":
                if let it = e["iteration"] { iterations[loop, default: []].append(it) }
            case "iteration_end":
                set("iteration", current)
                if let it = e["iteration"], var stack = iterations[loop], let i = stack.lastIndex(of: it) {
                    stack.removeSubrange(i...); iterations[loop] = stack
                }
            case "sleep_begin", "wake", "wakeup_requested", "source0_signalled", "timer_armed":
                set("iteration", current)
                if short == "source0_signalled" || short == "timer_armed", let item = e["item_id"] {
                    set("name", names[Key(item: item, kind: short == "timer_armed" ? "timer" : "source0")])
                }
            default:
                let isEntry = short.hasSuffix("_entry"), isExit = short.hasSuffix("_exit")
                guard isEntry || isExit else { break }
                let kind = String(short.dropLast(isEntry ? 6 : 5))
                guard kinds.contains(kind) else { break }
                if isEntry {
                    let item = e["item_id"] ?? "0"
                    let n = kind != "block" ? names[Key(item: item, kind: kind)]
                        : pooled(item) ? (names[Key(item: item, kind: kind)] ?? "(unnamed)") : (blockNames.removeValue(forKey: item) ?? "(unnamed)")
                    if kind != "main_queue" { set("name", n) }
                    set("iteration", current)
                    callouts[loop, default: []].append((kind, e))
                } else if var stack = callouts[loop], let i = stack.lastIndex(where: { $0.kind == kind }) {
                    // The exit of the innermost open callout of its kind: what its entry said.
                    let entry = stack[i].entry
                    stack.removeSubrange(i...); callouts[loop] = stack
                    for (k, v) in entry.fields { set(k, v) }
                    for (k, v) in entry.labels where e.labels[k] == nil { e.labels[k] = v }
                }
            }
            return e
        }
    }
}
