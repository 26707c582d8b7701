import Foundation
import Testing
import LTTngControl
#if canImport(Glibc)
import Glibc
#endif

// The command line as a new user tries it: outputs never half-written nor silently replaced, and
// standard output by default for every format; -o destinations that record cannot use refused by
// name; `--on-hang=THRESHOLD` parsed; errors that name the unknown option and the right command;
// help laid out for ArgumentParser's wrapping at 80 columns.

/// A fresh empty directory, removed by the caller.
func scratchDirectory(_ label: String) throws -> String {
    let dir = NSTemporaryDirectory() + "rltrace-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// Runs rltrace in `directory` (through sh: `cd DIR && rltrace ARGS`).
func rltraceIn(_ directory: String, _ args: [String]) throws -> Run {
    func q(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
    let cmd = "cd \(q(directory)) && exec \(q(binDir.appendingPathComponent("rltrace").path)) " + args.map(q).joined(separator: " ")
    return try run("/bin/sh", ["-c", cmd])
}

func contents(_ dir: String) -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted() }

@Suite("rltrace's outputs: standard output by default, files written whole, existing files kept")
struct CLIOutputTests {
    @Test("no -o and -o - write every format to standard output, HTML included; nothing is written in the current directory")
    func everyFormatToStandardOutput() throws {
        let dir = try scratchDirectory("stdout")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cases: [([String], String)] = [
            (["report", demoTrace], "rltrace report — "), (["report", demoTrace, "--format", "json"], "{"),
            (["report", demoTrace, "--format", "csv"], "pid,loop,"), (["report", demoTrace, "--format", "lami"], "{"),
            (["report", demoTrace, "--format", "html"], "<!DOCTYPE html>"),
            (["diff", demoTrace, demoTrace, "--format", "html"], "<!DOCTYPE html>"), (["diff", demoTrace, demoTrace, "--format", "json"], "{"),
            (["diff", demoTrace, demoTrace], ""), (["export", demoTrace], "{\"traceEvents\":["),
        ]
        for (args, start) in cases {
            let plain = try rltraceIn(dir, args), dash = try rltraceIn(dir, args + ["-o", "-"])
            #expect(plain.status == 0 && dash.status == 0, "\(args): \(plain.err) \(dash.err)")
            #expect(!plain.out.isEmpty && plain.out.hasPrefix(start), "\(args): \(plain.out.prefix(200))")
            #expect(dash.out == plain.out, "\(args): -o - differs from no -o")
            #expect(contents(dir).isEmpty, "\(args) wrote \(contents(dir)) in the current directory")
        }
    }

    @Test("an existing file is refused without --force (exit 2, unchanged) and replaced with it, for report, export and diff")
    func existingFilesAreKept() throws {
        let dir = try scratchDirectory("force")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let commands: [[String]] = [["report", demoTrace, "--format", "json"], ["report", demoTrace, "--format", "html"],
                                    ["export", demoTrace], ["diff", demoTrace, demoTrace, "--format", "json"]]
        for args in commands {
            let path = dir + "/out"
            try Data("precious".utf8).write(to: URL(fileURLWithPath: path))
            let refused = try run("rltrace", args + ["-o", path])
            #expect(refused.status == 2, "\(args): \(refused.err)")
            #expect(refused.err.contains(path) && refused.err.contains("--force"), "\(args): \(refused.err)")
            #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious", "\(args) changed the file")
            let expected = try run("rltrace", args)
            let forced = try run("rltrace", args + ["-o", path, "--force"])
            #expect(forced.status == 0, "\(args): \(forced.err)")
            #expect(try String(contentsOfFile: path, encoding: .utf8) == expected.out, "\(args)")
            #expect(contents(dir) == ["out"], "\(args) left \(contents(dir))")
            try FileManager.default.removeItem(atPath: path)
        }
    }

    @Test("a failed export leaves no file behind (not `{\"traceEvents\":[`), nor a temporary one")
    func failedExportLeavesNothing() throws {
        let dir = try scratchDirectory("failed-export")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The demo trace with its second packet's content size past the file (HostileReportTests'
        // mutation): the export fails after it began writing.
        let bad = try mutatedDemo("failed-export-\(UInt32.random(in: 0...UInt32.max))") { d in
            poke(&d, packetOffsets(d)[1] + 48, 8, .max)
        }
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let out = dir + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        for (trace, code) in [(bad, Int32(1)), ("/nonexistent/trace", Int32(3))] {
            let r = try run("rltrace", ["export", trace, "-o", out + "/t.json"])
            #expect(r.status == code, "\(trace): \(r.err)")
            #expect(contents(out).isEmpty, "\(trace): left \(contents(out))")
        }
    }

    @Test("a write that fails (the file size limit) removes the temporary file: nothing is left, exit 1")
    func failedWriteLeavesNothing() throws {
        let dir = try scratchDirectory("efbig")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // sh: SIGXFSZ ignored (inherited through exec) and files limited to 8 × 512 bytes, so a
        // write past 4 KiB fails with EFBIG.
        for args in [["export", demoTrace], ["report", demoTrace, "--format", "html"]] {
            let out = dir + "/out"
            let cmd = "trap '' XFSZ; ulimit -f 8; exec \(binDir.appendingPathComponent("rltrace").path) \(args.joined(separator: " ")) -o \(out)"
            let r = try run("/bin/sh", ["-c", cmd])
            #expect(r.status == 1, "\(args): \(r.err)")
            #expect(r.err.contains("cannot write \(out): File too large"), "\(args): \(r.err)")
            #expect(contents(dir).isEmpty, "\(args): left \(contents(dir))")
        }
    }

    @Test("-o into a directory that does not exist names the directory (exit 1)")
    func missingDirectoryIsNamed() throws {
        let dir = try scratchDirectory("missing-dir")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for args in [["report", demoTrace], ["export", demoTrace], ["diff", demoTrace, demoTrace]] {
            let r = try run("rltrace", args + ["-o", dir + "/no-such-dir/out.json"])
            #expect(r.status == 1, "\(args): \(r.err)")
            #expect(r.err.contains("\(dir)/no-such-dir does not exist"), "\(args): \(r.err)")
            #expect(contents(dir).isEmpty)
        }
    }

    @Test("top -o DIR keeps a directory that already holds a trace without --force (exit 2), as record does")
    func topKeepsAnEarlierTrace() throws {
        let dir = try scratchDirectory("top-force")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/ust", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dir + "/ust/metadata", contents: Data("/* CTF 1.8 */".utf8))
        let r = try run("rltrace", ["top", "--batch", "-o", dir, "--", "/bin/true"])
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains("already holds a trace") && r.err.contains("--force"), "\(r.err)")
        #expect(contents(dir) == ["ust"])
    }

    @Test("demo -o DIR keeps an earlier demo's report.html without --force (exit 2)")
    func demoKeepsAnEarlierReport() throws {
        let dir = try scratchDirectory("demo-force")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("precious".utf8).write(to: URL(fileURLWithPath: dir + "/report.html"))
        let r = try run("rltrace", ["demo", "-o", dir])
        #expect(r.status == 2, "\(r.err)")
        #expect(r.err.contains(dir + "/report.html") && r.err.contains("--force"), "\(r.err)")
        #expect(contents(dir) == ["report.html"])
    }
}

@Suite("rltrace's options: destinations, --on-hang=THRESHOLD, errors that name the option")
struct CLIOptionTests {
    @Test("record -o net://… streams (AttachTests); a malformed URL is exit 64, an absent relay daemon exit 6 naming it; neither makes a directory; a missing parent is named")
    func recordDestinations() throws {
        let dir = try scratchDirectory("record-dest")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for url in ["net://", "net://127.0.0.1:0", "net://127.0.0.1:5342:5343:5344", "net://host/path", "tcp://host:port", "net://[::1"] {
            let r = try rltraceIn(dir, ["record", "-o", url, "--", "/bin/true"])
            #expect(r.status == 64, "\(url): \(r.err)")
            #expect(r.err.contains("-o \(url)"), "\(url): \(r.err)")
            #expect(contents(dir).isEmpty, "\(url): made \(contents(dir))")
        }
        // No relay daemon listens on a port just found free: LTTng refuses the session (exit 6).
        let port = try #require(PrivateRelayDaemon.freePorts(1).first)
        let absent = try rltraceIn(dir, ["record", "-o", "net://127.0.0.1:\(port)", "--", "/bin/true"])
        #expect(absent.status == 6, "\(absent.err)")
        #expect(absent.err.contains("is an lttng-relayd listening at net://127.0.0.1:\(port)?"), "\(absent.err)")
        #expect(contents(dir).isEmpty, "made \(contents(dir))")
        let r = try run("rltrace", ["record", "-o", dir + "/no-such-dir/x", "--", "/bin/true"])
        #expect(r.status == 1, "\(r.err)")
        #expect(r.err.contains("\(dir)/no-such-dir does not exist"), "\(r.err)")
        #expect(contents(dir).isEmpty, "made \(contents(dir))")
    }

    @Test("--on-hang=100ms and --on-hang 100ms both reach the recorder's checks; bare --on-hang keeps 250ms")
    func onHangForms() throws {
        // With --snapshot the command stops at its checks: the threshold was read, whichever form.
        for args in [["--on-hang=100ms"], ["--on-hang", "100ms"], ["--on-hang"]] {
            let r = try run("rltrace", ["record"] + args + ["--snapshot", "--", "/bin/true"])
            #expect(r.status == 64, "\(args): \(r.err)")
            #expect(r.err.contains("--on-hang and --snapshot are two different recorders"), "\(args): \(r.err)")
        }
        let bad = try run("rltrace", ["record", "--on-hang=10", "--", "/bin/true"])
        #expect(bad.status == 64 && bad.err.contains("--on-hang: \"10\" has no unit"), "\(bad.err)")
        // The program's arguments are its own.
        let help = try run("rltrace", ["help", "record"])
        #expect(help.out.contains("--on-hang[=THRESHOLD]"), "\(help.out)")
    }

    @Test("a flight recorder that saw no hang: record --on-hang=100ms, then hangs DIR says no hang was recorded, exit 0")
    func flightRecorderWithoutHang() throws {
        let dir = try scratchDirectory("fr-none")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let rec = try run("rltrace", ["record", "--on-hang=100ms", "-o", dir + "/fr", "--", "/bin/true"])
        #expect(rec.status == 0, "\(rec.err)")
        #expect(rec.err.contains("a snapshot per hang of 100ms or more") && rec.err.contains("no snapshot was taken"), "\(rec.err)")
        let h = try run("rltrace", ["hangs", dir + "/fr"])
        #expect(h.status == 0, "\(h.err)")
        #expect(h.out.contains("no hang was recorded") && h.out.contains("--on-hang 100ms"), "\(h.out)")
        let j = try run("rltrace", ["hangs", dir + "/fr", "--format", "json"])
        #expect(j.status == 0 && j.out == "[]\n", "\(j.out) \(j.err)")
        // An empty directory is still no trace at all.
        try FileManager.default.createDirectory(atPath: dir + "/empty", withIntermediateDirectories: true)
        #expect(try run("rltrace", ["hangs", dir + "/empty"]).status == 3)
    }

    @Test("errors name the unknown option and point to the right command")
    func errorsNameTheOption() throws {
        let top = try run("rltrace", ["top", "--bogus"])
        #expect(top.status == 64)
        #expect(top.err.contains("Unknown option '--bogus'") && !top.err.contains("give a program"), "\(top.err)")
        let bare = try run("rltrace", ["top"])
        #expect(bare.status == 64 && bare.err.contains("give a program after `--`"), "\(bare.err)")
        let export = try run("rltrace", ["export", demoTrace, "--format", "json"])
        #expect(export.status == 64)
        #expect(export.err.contains("rltrace report --format json"), "\(export.err)")
    }
}

@Suite("rltrace's help at 80 columns")
struct CLIHelpLayoutTests {
    /// What is wrong with a help text's layout at `width` columns: lines too long, paragraphs
    /// broken by hand and wrapped again (a short line whose sentence goes on on the next line of the
    /// same indentation), and example command lines wrapped.
    static func layoutProblems(_ text: String, width: Int) -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func indent(_ s: String) -> Int { s.prefix { $0 == " " }.count }
        var problems: [String] = []
        for (i, l) in lines.enumerated() {
            if l.count > width { problems.append("longer than \(width): \(l)") }
            guard i + 1 < lines.count else { continue }
            let next = lines[i + 1], t = l.trimmingCharacters(in: .whitespaces), n = next.trimmingCharacters(in: .whitespaces)
            guard !t.isEmpty, !n.isEmpty else { continue }
            // A command line of an example block wrapped onto the next line.
            if t.hasPrefix("rltrace ") && indent(next) < indent(l) && !n.hasPrefix("-") && !n.hasSuffix(":") {
                problems.append("wrapped example: \(l) / \(next)")
            }
            // A sentence cut short and continued: the next line starts inside it.
            let continues = !n.hasPrefix("rltrace ") && !n.hasPrefix("-") && (n.first!.isLowercase || "(@`'\"".contains(n.first!))
            if indent(next) == indent(l) && l.count < width / 2 && !".:".contains(t.last!) && continues {
                problems.append("ragged: \(l) / \(next)")
            }
        }
        return problems
    }

    @Test("the check finds a paragraph broken by hand and wrapped again")
    func theCheckFindsRaggedText() {
        let ragged = "Creates an LTTng session, enables the `runloop` provider, runs COMMAND, then\nstops and destroys\nthe session and prints where the trace is.\n"
        #expect(Self.layoutProblems(ragged, width: 80).count == 1)
        let wrapped = "Examples:\n  rltrace report TRACE --format json > report.json      (schema:\ndocs/report-json.md)\n"
        #expect(Self.layoutProblems(wrapped, width: 80).count == 1)
        #expect(Self.layoutProblems("Examples:\n  rltrace hangs DIR\n  rltrace hangs TRACE\n\nA paragraph that ends.\n", width: 80).isEmpty)
    }

    @Test("every command's help (rltrace help X, COLUMNS=80): no line past 80 columns, no ragged paragraph",
          arguments: ["record", "report", "timeline", "histogram", "hangs", "export", "lami", "dump", "demo", "diff", "top"])
    func helpAt80Columns(_ command: String) throws {
        var env = ProcessInfo.processInfo.environment
        env["COLUMNS"] = "80"
        let r = try runProgram(binDir.appendingPathComponent("rltrace").path, ["help", command], environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("USAGE:"), "\(r.stdout)")
        let problems = Self.layoutProblems(r.stdout, width: 80)
        #expect(problems.isEmpty, "\(command):\n\(problems.joined(separator: "\n"))")
    }
}
