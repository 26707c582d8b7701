import Foundation
import Testing
import RLAnalysis

// The pipeline parts whose test runs rltrace (a selection decided once per name, loop or mode) or
// reads its binary (the build-id check); the parts checked through RLAnalysis alone are in
// RLAnalysisTests' PipelinePartsTests.

@Suite("Pipeline parts, through rltrace")
struct PipelinePartsCLITests {
    @Test("--item keeps exactly the items whose names match, with their unfiltered figures (the glob decided once per name)",
          arguments: ["*", "c*", "?tats", "main-queue", "*-*", "*er", "", "no-such-item", "re?ly", "*t*t*"])
    func itemGlobPerName(glob: String) throws {
        // The reference: the shell's own glob (fnmatch, no brackets in these patterns) over every
        // item of the unfiltered report.
        struct Item: Hashable { var kind: String, name: String, item: Int }
        func items(_ doc: [String: Any]) -> [Item: [String: Int]] {
            // (Not `try #require` here: in a local function the macro's expansion draws a
            // "no calls to throwing functions" warning.)
            guard let l = loop17(doc) else { Issue.record("no loop 17 in the report"); return [:] }
            var out: [Item: [String: Int]] = [:]
            for i in l["items"] as! [[String: Any]] {
                out[Item(kind: i["kind"] as! String, name: i["name"] as! String, item: i["item"] as! Int)] =
                    ["count": i["count"] as! Int, "totalNs": i["totalNs"] as! Int, "maxNs": i["maxNs"] as! Int, "p50Ns": i["p50Ns"] as! Int]
            }
            return out
        }
        let all = items(try reportJSON([]))
        let expected = all.filter { fnmatch(glob, $0.key.name, 0) == 0 }
        #expect(glob == "no-such-item" || glob == "" ? expected.isEmpty : !expected.isEmpty)
        if expected.isEmpty {
            // A glob that matches no item is an error that lists the items (exit 4), in every command.
            for cmd in [["report"], ["timeline"], ["histogram", "--of", "callout"], ["hangs"]] {
                let r = try run("rltrace", cmd + [demoTrace, "--item", glob])
                #expect(r.status == 4 && r.err.contains("nothing matches the selection") && r.err.contains("source0 \"compute-results\""), "\(cmd): \(r.err)")
            }
            return
        }
        let filtered = items(try reportJSON(["--item", glob]))
        #expect(filtered == expected, "--item \(glob): \(filtered.keys.map(\.name).sorted()) against \(expected.keys.map(\.name).sorted())")
    }

    @Test("a loop-filtered Chrome export keeps exactly the selected loops' slices (the filter decided once per loop and its facts)",
          arguments: [(["--tid", "5117"], [5117]), (["--tid", "5121"], [5121]), (["--procname", "rl-example"], [5117, 5121]),
                      (["--loop", "17"], [5117]), (["--procname", "no-such-process"], [])])
    func loopFilteredExport(filter: [String], tids: [Int]) throws {
        // A directory of its own per case: the cases run in parallel, and each removes its directory.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-loopfilter-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        func slices(_ args: [String]) throws -> [String: Int] {
            let out = dir.appendingPathComponent("x.json").path
            let r = try run("rltrace", ["export", "--format", "chrome", "-o", out, "--force", demoTrace] + args)
            if tids.isEmpty && !args.isEmpty {
                // A filter that keeps no loop is an error naming the trace's loops (exit 4).
                #expect(r.status == 4 && r.err.contains("loop 17 (rl-example pid 5117 tid 5117)"), "\(r.err)")
                return [:]
            }
            #expect(r.status == 0, "\(r.err)")
            let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as! [String: Any]
            var c: [String: Int] = [:]
            for e in doc["traceEvents"] as! [[String: Any]] where e["ph"] as? String == "X" && e["cat"] as? String != "flow" {
                c["\(e["tid"]!) \(e["cat"]!)", default: 0] += 1
            }
            return c
        }
        let all = try slices([])
        let expected = all.filter { k, _ in tids.contains(Int(k.split(separator: " ")[0])!) }
        #expect(tids.isEmpty ? expected.isEmpty : expected.count >= 3, "the demo's loop threads are 5117 (loop 17) and 5121")
        #expect(try slices(filter) == expected)
    }

    @Test("a binary path a trace names is read only if it is a regular file: a FIFO there does not block the build-id check")
    func buildIDOfAFIFO() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-fifo-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("libfake.so").path
        #expect(mkfifo(fifo, 0o644) == 0)
        let start = Date()
        #expect(elfBuildID(path: fifo) == nil)
        #expect(!isRegularFile(fifo) && !isRegularFile("/dev/zero"))
        #expect(Date().timeIntervalSince(start) < 2, "the check returned at once")
        // A real binary still has its build id.
        #expect(elfBuildID(path: binDir.appendingPathComponent("rltrace").path)?.isEmpty == false)
    }

    @Test("timeline --mode keeps the iterations of runs in that mode, `default` naming kCFRunLoopDefaultMode (decided once per mode)")
    func timelineMode() throws {
        let all = try run("rltrace", ["timeline", demoTrace])
        #expect(all.status == 0)
        // Every run of the demo is in the default mode: both spellings keep every row.
        for mode in ["default", "kCFRunLoopDefaultMode"] {
            let t = try run("rltrace", ["timeline", demoTrace, "--mode", mode])
            #expect(t.out == all.out, "--mode \(mode)")
        }
        // A mode no run was in selects nothing: exit 4, naming the modes the trace's runs were in.
        let none = try run("rltrace", ["timeline", demoTrace, "--mode", "no-such-mode"])
        #expect(none.status == 4 && none.err.contains("\"kCFRunLoopDefaultMode\""), "\(none.err)")
    }
}

