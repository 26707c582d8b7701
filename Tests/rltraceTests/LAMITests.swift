import Foundation
import Testing

// `rltrace lami` and `rltrace report --format lami` as Trace Compass and lttng-analyses expect them
// (docs/report-json.md): every phase of LAMI 1.0, fed to the strict validator of LAMIValidator.swift, on the
// demo trace (Fixtures/demo-trace: rl-example with its injected problems; the 300 ms hang in timer
// "hang-timer" begins 301 ms after the first event).

@Suite("LAMI 1.0: rltrace lami and report --format lami pass a strict validator")
struct LAMITests {
    /// The demo trace's first and last event in ns since the epoch, from the JSON report.
    func traceBounds() throws -> (begin: Int64, end: Int64) {
        let j = try run("rltrace", ["report", "--format", "json", demoTrace])
        #expect(j.status == 0, "\(j.err)")
        let doc = try JSONSerialization.jsonObject(with: Data(j.out.utf8)) as! [String: Any]
        let t = doc["trace"] as! [String: Any]
        func i(_ k: String) -> Int64 { (t[k] as! NSNumber).int64Value }
        return (i("beginNs") + i("clockOffsetNs"), i("endNs") + i("clockOffsetNs"))
    }

    func metadata() throws -> LAMIValidator.Metadata {
        let m = try run("rltrace", ["lami", "--metadata"])
        #expect(m.status == 0)
        let (meta, violations) = LAMIValidator.validateMetadata(m.out)
        #expect(violations.isEmpty, "\(violations)")
        return try #require(meta)
    }

    /// Runs `rltrace lami ARGS TRACE`, checks it exits 0 and validates, and returns the parsed results.
    func results(_ args: [String], expect: LAMIValidator.Expectations = .init()) throws -> LJSON {
        let r = try run("rltrace", ["lami"] + args + [demoTrace])
        #expect(r.status == 0, "\(args): \(r.err)")
        let violations = LAMIValidator.validateResults(r.out, metadata: try metadata(), expect: expect)
        #expect(violations.isEmpty, "\(args): \(violations.prefix(10))")
        let json = r.out.split(separator: "\n", omittingEmptySubsequences: false).drop { !$0.hasPrefix("{") }.joined(separator: "\n")
        return try LJSONParser.parse(json)
    }

    /// The rows of table `name`.
    func rows(_ doc: LJSON, _ name: String) throws -> [[LJSON]] {
        let t = try #require(doc["results"]?.array?.first { $0["class"] == .string(name) }, "no table \(name)")
        return (t["data"]?.array ?? []).map { $0.array ?? [] }
    }

    @Test func versionPhasePrintsOnePointZero() throws {
        let r = try run("rltrace", ["lami", "--mi-version"])
        #expect(r.status == 0)
        #expect(r.out == "1.0\n")
        #expect(LAMIValidator.validateVersionOutput(r.out).isEmpty, "\(LAMIValidator.validateVersionOutput(r.out))")
    }

    @Test func metadataDeclaresTheFourTablesWithLAMI10ColumnClasses() throws {
        let meta = try metadata()
        #expect(Set(meta.tableColumns.keys) == ["loops", "items", "hangs", "sleeps"])
        let classes = Set(meta.tableColumns.values.flatMap { $0 })
        #expect(classes.isSubset(of: LAMIValidator.columnClasses))
        #expect(!classes.contains("thread") && !classes.contains("int"))
        #expect(meta.tableColumns["hangs"]! == ["process", "number", "timestamp", "duration", "string", "string", "duration"])
    }

    @Test func resultsOfTheWholeTraceCoverTheTraceAndNameTheHang() throws {
        let b = try traceBounds()
        let doc = try results([], expect: .init(timeRange: b))
        #expect(doc["results"]?.array?.map { $0["class"]?.string ?? "" } == ["loops", "items", "hangs", "sleeps"])
        let loops = try rows(doc, "loops")
        #expect(loops.count == 2)
        // The main thread as a LAMI process object: pid, tid and its name.
        let thread = loops[0][1]
        #expect(thread["class"] == .string("process") && thread["pid"]?.int != nil && thread["tid"]?.int != nil)
        #expect(thread["name"] == .string("rl-example"))
        let hangs = try rows(doc, "hangs")
        #expect(hangs.count == 1)
        #expect(hangs.first?[5] == .object([("class", .string("string")), ("value", .string("hang-timer"))]))
        let at = try #require(hangs.first?[2]["value"]?.int)
        #expect(at - b.begin > 290_000_000 && at - b.begin < 320_000_000, "the hang begins at +\(at - b.begin) ns")
        let items = try rows(doc, "items")
        #expect(items.contains { $0[4]["value"] == .string("late-timer") })
    }

    @Test func reportFormatLamiIsTheSameValidDocument() throws {
        let b = try traceBounds()
        let r = try run("rltrace", ["report", "--format", "lami", demoTrace])
        #expect(r.status == 0, "\(r.err)")
        let violations = LAMIValidator.validateResults(r.out, metadata: try metadata(), expect: .init(timeRange: b))
        #expect(violations.isEmpty, "\(violations.prefix(10))")
        #expect(try LJSONParser.parse(r.out) == (try results([])))
    }

    @Test func aWindowIsEveryTablesTimeRange() throws {
        let b = try traceBounds()
        // 100…250 ms: before the hang, whose table empties.
        let w = (begin: b.begin + 100_000_000, end: b.begin + 250_000_000)
        let early = try results(["--begin", String(w.begin), "--end", String(w.end)], expect: .init(timeRange: w))
        #expect(try rows(early, "hangs").isEmpty)
        #expect(try rows(early, "loops").count >= 1)
        // 250 ms…1 s: the hang, inside the window.
        let w2 = (begin: b.begin + 250_000_000, end: b.begin + 1_000_000_000)
        let mid = try results(["--begin", String(w2.begin), "--end", String(w2.end)], expect: .init(timeRange: w2))
        let hang = try #require(try rows(mid, "hangs").first)
        let at = try #require(hang[2]["value"]?.int)
        #expect(at >= w2.begin && at <= w2.end)
        // One bound: the other is the trace's.
        _ = try results(["--begin", String(w2.begin)], expect: .init(timeRange: (w2.begin, b.end)))
        _ = try results(["--end", String(w2.end)], expect: .init(timeRange: (b.begin, w2.end)))
    }

    @Test func reversedOrOutOfTraceWindowsAreErrors() throws {
        let b = try traceBounds()
        let reversed = try run("rltrace", ["lami", "--begin", String(b.begin + 2_000_000_000), "--end", String(b.begin + 1_000_000_000), demoTrace])
        #expect(reversed.status == 2)
        #expect(reversed.err.contains("--begin") && reversed.err.contains("after"), "\(reversed.err)")
        #expect(!reversed.out.isEmpty && LAMIValidator.validateErrorOutput(reversed.out).isEmpty, "\(reversed.out)")
        let before = try run("rltrace", ["lami", "--begin", String(b.begin - 10_000_000_000), "--end", String(b.begin - 5_000_000_000), demoTrace])
        #expect(before.status == 2)
        #expect(before.err.contains("outside the trace"), "\(before.err)")
        #expect(!before.out.isEmpty && LAMIValidator.validateErrorOutput(before.out).isEmpty, "\(before.out)")
        let after = try run("rltrace", ["lami", "--begin", String(b.end + 1_000_000_000), demoTrace])
        #expect(after.status == 2, "\(after.out)")
    }

    @Test func compatibilityPhase() throws {
        let ok = try run("rltrace", ["lami", "--test-compatibility", demoTrace])
        #expect(ok.status == 0, "\(ok.err)")
        #expect(LAMIValidator.validateCompatibility(out: ok.out, status: ok.status).isEmpty && ok.out.isEmpty)
        let dir = NSTemporaryDirectory() + "rltrace-lami-empty-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let none = try run("rltrace", ["lami", "--test-compatibility", dir])
        #expect(none.status == 3)
        #expect(!none.out.isEmpty && LAMIValidator.validateCompatibility(out: none.out, status: none.status).isEmpty, "\(none.out)")
        let missing = try run("rltrace", ["lami", "--test-compatibility"])
        #expect(missing.status == 64)
    }

    @Test func limitCapsTheRowsOfEachTable() throws {
        let one = try results(["--limit", "1"], expect: .init(limit: 1))
        #expect(try rows(one, "items").count == 1 && rows(one, "sleeps").count == 1)
        let all = try results(["--limit", "unlimited"])
        #expect(try rows(all, "items").count > 1)
        #expect(all == (try results([])))
        for bad in ["-1", "lots"] {
            let r = try run("rltrace", ["lami", "--limit", bad, demoTrace])
            #expect(r.status == 64 && r.err.contains("--limit"), "\(bad): \(r.err)")
        }
    }

    @Test func progressLinesPrecedeTheObjectOnlyWhenAskedFor() throws {
        let r = try run("rltrace", ["lami", "--output-progress", demoTrace])
        #expect(r.status == 0)
        let lines = r.out.split(separator: "\n")
        #expect(lines.count > 2 && !lines[0].hasPrefix("{") && lines.contains { $0.hasPrefix("{") })
        let v = LAMIValidator.validateResults(r.out, metadata: try metadata(), expect: .init(progressAllowed: true))
        #expect(v.isEmpty, "\(v)")
        // Without the flag, a progress line is a violation (checked by results([]) above): here, the
        // validator must see it.
        #expect(!LAMIValidator.validateResults(r.out, metadata: try metadata()).isEmpty)
    }

    /// The validator refuses the defects LAMITests pins, and accepts the specification's own example.
    @Test func theValidatorRefusesWhatTraceCompassRefuses() throws {
        #expect(!LAMIValidator.validateVersionOutput("{\"major\": 1, \"minor\": 0}\n").isEmpty)
        #expect(!LAMIValidator.validateVersionOutput("1.0\n2.0\n").isEmpty)
        #expect(LAMIValidator.validateVersionOutput("1.0").isEmpty)

        let good = """
        {"mi-version": {"major": 1, "minor": 0}, "title": "I/O", "table-classes": {"syscall-latency": {"title": "Syscalls",
         "column-descriptions": [{"title": "System call", "class": "syscall"}, {"title": "Count", "class": "number", "unit": "operations"},
                                 {"title": "Max", "class": "duration"}]}}}
        """
        let (meta, mv) = LAMIValidator.validateMetadata(good)
        #expect(mv.isEmpty, "\(mv)")
        let m = try #require(meta)
        #expect(!LAMIValidator.validateMetadata(good.replacingOccurrences(of: "\"syscall\"}", with: "\"thread\"}")).1.isEmpty)
        #expect(!LAMIValidator.validateMetadata(good.replacingOccurrences(of: "\"number\", \"unit\"", with: "\"duration\", \"unit\"")).1.isEmpty)
        #expect(!LAMIValidator.validateMetadata(good.replacingOccurrences(of: "\"minor\": 0", with: "\"minor\": 1")).1.isEmpty)
        #expect(!LAMIValidator.validateMetadata(good.replacingOccurrences(of: "\"title\": \"I/O\", ", with: "")).1.isEmpty)

        let range = #"{"class": "time-range", "begin": {"class": "timestamp", "value": 1444334398154194201}, "end": {"class": "timestamp", "value": 1444334425194487548}}"#
        let row = #"[{"class": "syscall", "name": "open"}, {"class": "number", "value": 45}, {"class": "duration", "value": 5562}]"#
        func doc(_ range: String, _ row: String, cls: String = "\"syscall-latency\"") -> String {
            "{\"results\": [{\"time-range\": \(range), \"class\": \(cls), \"data\": [\(row)]}]}"
        }
        #expect(LAMIValidator.validateResults(doc(range, row), metadata: m).isEmpty, "\(LAMIValidator.validateResults(doc(range, row), metadata: m))")
        #expect(LAMIValidator.validateResults(doc(range, row), metadata: m, expect: .init(timeRange: (1444334398154194201, 1444334425194487548))).isEmpty)
        #expect(!LAMIValidator.validateResults(doc(range, row), metadata: m, expect: .init(timeRange: (1444334398154194201, 1444334425194487549))).isEmpty)
        let bad: [(String, String)] = [
            ("0.1 time range", doc(#"{"class": "time-range", "begin": 1, "end": 2}"#, row)),
            ("reversed range", doc(range.replacingOccurrences(of: "1444334425194487548", with: "1"), row)),
            ("thread cell", doc(range, row.replacingOccurrences(of: #"{"class": "syscall", "name": "open"}"#, with: #"{"class": "thread", "tid": 3}"#))),
            ("bare number", doc(range, row.replacingOccurrences(of: #"{"class": "number", "value": 45}"#, with: "45"))),
            ("wrong class in column", doc(range, row.replacingOccurrences(of: #""class": "number""#, with: #""class": "ratio""#))),
            ("float duration", doc(range, row.replacingOccurrences(of: "5562", with: "5562.5"))),
            ("missing cell", doc(range, #"[{"class": "syscall", "name": "open"}]"#)),
            ("undeclared table class", doc(range, row, cls: "\"thread-stats\"")),
            ("unknown key", doc(range, row.replacingOccurrences(of: #""name": "open""#, with: #""name": "open", "type": "syscall""#))),
            ("low above value", doc(range, row.replacingOccurrences(of: #""value": 5562"#, with: #""value": 5562, "low": 6000, "high": 7000"#))),
            ("duplicate key", doc(range, row.replacingOccurrences(of: #""value": 45"#, with: #""value": 45, "value": 46"#))),
            ("progress without the flag", "0.5 half\n" + doc(range, row)),
            ("an error object", #"{"error-message": "no"}"#),
        ]
        for (what, text) in bad { #expect(!LAMIValidator.validateResults(text, metadata: m).isEmpty, "\(what) passed") }
        #expect(!LAMIValidator.validateResults("2 twice\n" + doc(range, row), metadata: m, expect: .init(progressAllowed: true)).isEmpty)
        #expect(LAMIValidator.validateResults("* start\n* done\n" + doc(range, row), metadata: m, expect: .init(progressAllowed: true)).isEmpty)
        #expect(!LAMIValidator.validateResults("* start\n0.5 half\n" + doc(range, row), metadata: m, expect: .init(progressAllowed: true)).isEmpty)
        #expect(!LAMIValidator.validateResults(doc(range, "[1, 2, 3]"), metadata: m, expect: .init(limit: 0)).isEmpty)
        #expect(!LAMIValidator.validateCompatibility(out: "{}", status: 0).isEmpty)
        #expect(!LAMIValidator.validateErrorOutput(#"{"error-code": 3}"#).isEmpty)
    }
}
