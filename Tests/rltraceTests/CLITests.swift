import Foundation
import Testing

// rltrace's command line as its users expect it (docs/report-json.md): thresholds with units shared by the
// commands, exit codes and messages, --version, help with examples and enumerated values.

@Suite("rltrace's command line: thresholds, exit codes, messages, help")
struct CLITests {
    @Test func versionIsPrinted() throws {
        let r = try run("rltrace", ["--version"])
        #expect(r.status == 0 && r.out.hasPrefix("rltrace 0."))
    }

    @Test func aMissingPathExits3AndNamesIt() throws {
        let r = try run("rltrace", ["report", "/nonexistent/trace"])
        #expect(r.status == 3)
        #expect(r.err.contains("/nonexistent/trace") && r.err.contains("no such file"))
    }

    @Test func dumpSaysNoTraceAsTheOtherCommandsDo() throws {
        let empty = NSTemporaryDirectory() + "rltrace-empty-\(getpid())"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        for path in [empty, "/nonexistent/trace"] {
            let d = try run("rltrace", ["dump", path]), r = try run("rltrace", ["report", path])
            #expect(d.status == 3 && r.status == 3, "\(path)")
            #expect(d.err.hasPrefix("rltrace: no CTF trace") && r.err.hasPrefix("rltrace: no CTF trace"), "\(d.err) / \(r.err)")
        }
    }

    @Test func durationsNeedAUnitAndSpinsTwoIterations() throws {
        for args in [["--hang-threshold", "10"], ["--slow-callout", "5"], ["--spin-iterations", "0"], ["--late-timer", "-1ms"]] {
            let r = try run("rltrace", ["report", demoTrace] + args)
            #expect(r.status == 64, "\(args)")
            #expect(r.err.contains(args[0]) && r.err.contains("rltrace report"), "\(args): \(r.err)")
        }
        let h = try run("rltrace", ["hangs", demoTrace, "--threshold", "10"])
        #expect(h.status == 64 && h.err.contains("no unit"))
    }

    @Test func timeErrorsNameTheOptionAndTheSubcommand() throws {
        let bad = try run("rltrace", ["timeline", demoTrace, "--begin", "abc"])
        #expect(bad.status == 64 && bad.err.contains("--begin") && bad.err.contains("rltrace timeline"), "\(bad.err)")
        let neg = try run("rltrace", ["report", demoTrace, "--begin", "-1s"])
        #expect(neg.status == 64 && neg.err.contains("before the trace start") && !neg.err.contains("Missing value"), "\(neg.err)")
    }

    @Test func thresholdsAreSharedByReportTimelineAndHangs() throws {
        // compute-results peaks at 50.2 ms, late-timer is 18.3 ms late, the hang is 300 ms.
        let base = try run("rltrace", ["report", demoTrace])
        #expect(base.out.contains("SLOW CALLOUT") && base.out.contains("source0 \"compute-results\""))
        let r = try run("rltrace", ["report", demoTrace, "--slow-callout", "60ms", "--late-timer", "20ms"])
        #expect(!r.out.contains("source0 \"compute-results\" max") && !r.out.contains("\"late-timer\" up to"), "\(r.out)")
        #expect(r.out.contains("\"heartbeat\" up to 201ms late"))
        let t1 = try run("rltrace", ["timeline", demoTrace, "--flagged"]), t2 = try run("rltrace", ["timeline", demoTrace, "--flagged", "--late-timer", "20ms"])
        #expect(t1.out.contains("LATE late-timer +18.3ms") && !t2.out.contains("LATE late-timer"))
        let h = try run("rltrace", ["hangs", demoTrace, "--hang-threshold", "299ms"])
        #expect(h.out.contains("iteration 446"))
        let h2 = try run("rltrace", ["hangs", demoTrace, "--hang-threshold", "301ms"])
        #expect(h2.out.contains("none"))
    }

    @Test func histogramRefusesOptionsItWouldIgnore() throws {
        for args in [["--of", "sleep", "--min-duration", "1ms"], ["--of", "iteration", "--by", "item"], ["--of", "wake-latency", "--kind", "timer"]] {
            let r = try run("rltrace", ["histogram", demoTrace] + args)
            #expect(r.status == 64, "\(args): \(r.err)")
        }
        // For callouts --min-duration applies, as --min does.
        let ok = try run("rltrace", ["histogram", demoTrace, "--of", "callout", "--min-duration", "1ms"])
        let same = try run("rltrace", ["histogram", demoTrace, "--of", "callout", "--min", "1ms"])
        let all = try run("rltrace", ["histogram", demoTrace, "--of", "callout"])
        #expect(ok.status == 0 && ok.out == same.out && ok.out != all.out && ok.out.hasPrefix("callout: 11 values"), "\(ok.out)")
    }

    @Test func everySubcommandsHelpHasAnExampleAndItsValues() throws {
        for sub in ["record", "report", "timeline", "histogram", "hangs", "export", "lami", "dump", "demo", "diff"] {
            let r = try run("rltrace", [sub, "--help"])
            #expect(r.status == 0, "\(sub)")
            #expect(r.out.contains("Example"), "\(sub) --help has no example")
        }
        // (Help text is wrapped: compare with the white space folded.)
        func folded(_ s: String) -> String { s.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        let report = folded(try run("rltrace", ["report", "--help"]).out)
        #expect(report.contains("values: text, json, csv, lami, html") && report.contains("64 bad command line")
                && report.contains("6 LTTng session"), "\(report)")
        let hist = folded(try run("rltrace", ["histogram", "--help"]).out)
        #expect(hist.contains("values: sleep, iteration, callout, wake-latency, timer-lateness, signal-latency"), "\(hist)")
    }

    @Test func recordRefusesAMissingProgramAndAnExistingTrace() throws {
        let dir = NSTemporaryDirectory() + "rltrace-cli-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let missing = try run("rltrace", ["record", "-o", dir, "--", "/no/such/program"])
        #expect(missing.status == 127 && missing.err.contains("no such program") && !missing.err.contains("trace written"))
        // An existing trace is not overwritten without --force.
        try FileManager.default.createDirectory(atPath: dir + "/ust", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dir + "/ust/metadata", contents: Data("/* CTF 1.8 */".utf8))
        let again = try run("rltrace", ["record", "-o", dir, "--", "/bin/true"])
        #expect(again.status == 2 && again.err.contains("already holds a trace") && again.err.contains("--force"))
    }

    @Test("-o onto a symbolic link or a FIFO writes through it: the link and the FIFO stay what they were")
    func outputThroughLinksAndFIFOs() throws {
        let dir = NSTemporaryDirectory() + "rltrace-out-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let expected = try run("rltrace", ["report", demoTrace, "--format", "json"])
        #expect(expected.status == 0)
        // A link to a regular file: that file exists, so it is kept without --force; with it, the
        // file gets the report and the link stays a link.
        let target = dir + "/target.json", link = dir + "/link.json"
        _ = FileManager.default.createFile(atPath: target, contents: Data("old".utf8))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let kept = try run("rltrace", ["report", demoTrace, "--format", "json", "-o", link])
        #expect(kept.status == 2, "\(kept.err)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "old")
        let r = try run("rltrace", ["report", demoTrace, "--format", "json", "-o", link, "--force"])
        #expect(r.status == 0, "\(r.err)")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == target)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == expected.out)
        // A FIFO (as /dev/stdout is when piped): read from the other end, still a FIFO afterwards.
        let fifo = dir + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/cat")
        reader.arguments = [fifo]
        let pipe = Pipe()
        reader.standardOutput = pipe
        try reader.run()
        let f = try run("rltrace", ["report", demoTrace, "--format", "json", "-o", fifo])
        let got = pipe.fileHandleForReading.readDataToEndOfFile()
        reader.waitUntilExit()
        #expect(f.status == 0, "\(f.err)")
        #expect(String(decoding: got, as: UTF8.self) == expected.out)
        var st = stat()
        #expect(lstat(fifo, &st) == 0 && (st.st_mode & S_IFMT) == S_IFIFO)
        // A new path and a regular file are still written (atomically).
        let plain = dir + "/plain.json"
        #expect(try run("rltrace", ["report", demoTrace, "--format", "json", "-o", plain]).status == 0)
        #expect(try String(contentsOfFile: plain, encoding: .utf8) == expected.out)
    }
}

/// The contexts of an event as babeltrace2's text output prints them: the field names of the
/// brace group between the stream's `{ cpu_id = N }` and the payload (none when only those two).
func contextFieldNames(ofBabeltraceLine line: Substring) -> [String] {
    var groups: [String] = [], depth = 0, current = "", quoted = false, escaped = false
    for ch in line {
        if quoted {
            if escaped { escaped = false } else if ch == "\\" { escaped = true } else if ch == "\"" { quoted = false }
            if depth > 0 { current.append(ch) }
            continue
        }
        if ch == "\"" { quoted = true }
        if ch == "{" { depth += 1; if depth == 1 { current = ""; continue } }
        if ch == "}" { depth -= 1; if depth == 0 { groups.append(current); continue } }
        if depth > 0 { current.append(ch) }
    }
    guard groups.count == 3 else { return [] }
    return groups[1].split(separator: ",").compactMap { $0.split(separator: "=").first?.trimmingCharacters(in: .whitespaces) }
}

@Suite("rltrace record --print-default-contexts (what scripts/bench-tracing.sh --json records with)")
struct DefaultContextsTests {
    /// The hidden flag names exactly the contexts a recording with default options carries: the
    /// shared `rlc-scenarios truth` recording (no --context), read back by babeltrace2.
    @Test func printsTheContextsADefaultRecordingCarries() throws {
        let printed = try run("rltrace", ["record", "--print-default-contexts"])
        #expect(printed.status == 0, "\(printed.err)")
        let line = printed.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!line.isEmpty && !line.contains("\n"), "\(printed.out)")
        // LTTng names a context's field after it: perf:thread:task-clock → perf_thread_task_clock.
        let expected = line == "none" ? [] : line.split(separator: ",").map {
            $0.replacingOccurrences(of: ":", with: "_").replacingOccurrences(of: "-", with: "_")
        }
        let rec = try truthRecording.get()
        let bt = try run(try #require(which("babeltrace2")), [rec.dir])
        let events = bt.out.split(separator: "\n").filter { $0.contains(" runloop:") }
        #expect(events.count > 100)
        let first = try #require(events.first)
        #expect(Set(contextFieldNames(ofBabeltraceLine: first)) == Set(expected), "\(line) vs \(first)")
        // Every runloop event carries the same ones.
        #expect(events.allSatisfy { Set(contextFieldNames(ofBabeltraceLine: $0)) == Set(expected) })
    }
}
