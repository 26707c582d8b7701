import Foundation
import Testing
import RLAnalysis

// Time windows and the clock (docs/report-json.md), on the committed demo trace: its main loop (loop 17)
// holds a 300 ms hang in timer "hang-timer" from +301 ms (iteration 446); the source0
// "compute-results" and the loop's names are first seen well before +1 s.

func reportJSON(_ args: [String]) throws -> [String: Any] {
    let r = try run("rltrace", ["report", "--format", "json", demoTrace] + args)
    #expect(r.status == 0, "\(args): \(r.err)")
    return try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as! [String: Any]
}

func loop17(_ doc: [String: Any]) -> [String: Any]? {
    (doc["loops"] as! [[String: Any]]).first { ($0["loop"] as! Int) == 17 }
}

@Suite("time windows keep names, count what overlaps them, and take one clock")
struct TimeWindowTests {
    @Test func namesLearnedBeforeTheWindowAreKept() throws {
        let doc = try reportJSON(["--begin", "1s", "--end", "2s"])
        let l = try #require(loop17(doc))
        #expect(l["threadName"] as? String == "rl-example")
        #expect(l["procname"] as? String == "rl-example")
        let names = Set((l["items"] as! [[String: Any]]).map { $0["name"] as! String })
        #expect(names.contains("compute-results") && names.contains("stats") && !names.contains(""), "\(names)")
        // --item with a window finds the item by the name learned before it.
        let t = try run("rltrace", ["timeline", demoTrace, "--begin", "1s", "--end", "2s", "--item", "compute*"])
        #expect(t.status == 0 && t.out.contains("source0(compute-results)") && !t.out.contains("no iteration matches"))
        let text = try run("rltrace", ["report", demoTrace, "--begin", "1s", "--end", "2s"])
        #expect(!text.out.contains("\"\" #") && text.out.contains("loop 17 — pid 5117 rl-example thread 5117 \"rl-example\""))
    }

    @Test func aWindowInsideTheHangShowsTheHangClipped() throws {
        // The row is cut to the window (its callout 100 ms of it), and flagged as the hang it is:
        // findings are decided on the whole iteration.
        let t = try run("rltrace", ["timeline", demoTrace, "--begin", "400ms", "--end", "500ms"])
        #expect(t.status == 0)
        let row = try #require(t.out.split(separator: "\n").first { $0.contains("#446") })
        #expect(row.contains("timer(hang-timer) 100ms") && row.contains("CLIPPED") && row.contains("HANG"), "\(row)")
        // `hangs` with its default threshold (250 ms) lists the 300 ms hang whole: busy and culprit.
        for extra in [[], ["--threshold", "50ms"]] {
            let h = try run("rltrace", ["hangs", demoTrace, "--begin", "400ms", "--end", "500ms"] + extra)
            #expect(h.status == 0)
            #expect(h.out.contains("iteration 446") && h.out.contains("busy 300ms of 300ms") && h.out.contains("timer \"hang-timer\" #25 ran 300ms"), "\(h.out)")
        }
        // The report's hang is the same, and the loop's own figures are the window's part.
        let hangs = try #require(loop17(try reportJSON(["--begin", "400ms", "--end", "500ms"]))?["hangs"] as? [[String: Any]])
        #expect(hangs.count == 1 && hangs.first?["iteration"] as? Int == 446 && (hangs.first?["busyNs"] as? Int ?? 0) >= 300_000_000, "\(hangs)")
        let doc = try reportJSON(["--begin", "400ms", "--end", "500ms"])
        let l = try #require(loop17(doc))
        #expect(l["iterations"] as? Int == 1)
        #expect(l["busyNs"] as? Int == 100_000_000)
    }

    @Test func twoAdjacentWindowsCountEveryCalloutAndTheStraddlersTwice() throws {
        // A callout overlapping a window counts in it (clipped): two adjacent windows count every
        // callout of the trace, and those straddling the boundary in both.
        func callouts(_ args: [String]) throws -> Int { (loop17(try reportJSON(args)))?["callouts"] as? Int ?? -1 }
        let whole = try callouts([])
        let a = try callouts(["--end", "1500ms"]), b = try callouts(["--begin", "1500000001ns"])
        let out = NSTemporaryDirectory() + "rltrace-window-\(getpid()).json"
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try run("rltrace", ["export", "-o", out, "--loop", "17", demoTrace])
        let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as! [String: Any]
        let kinds: Set<String> = ["observer", "source0", "source1", "timer", "main_queue", "block"]
        var straddlers = 0
        for case let e as [String: Any] in doc["traceEvents"] as! [Any] where kinds.contains(e["cat"] as? String ?? "") {
            let b = Int64(((e["ts"] as! NSNumber).doubleValue * 1000).rounded()), d = Int64(((e["dur"] as! NSNumber).doubleValue * 1000).rounded())
            if b <= 1_500_000_000 && b + d >= 1_500_000_001 { straddlers += 1 }
        }
        #expect(whole == 8138)
        #expect(a + b == whole + straddlers, "\(a) + \(b) vs \(whole) + \(straddlers)")
    }

    @Test func oneClockFromTimelineToEveryFilter() throws {
        // The timeline's start column is the trace clock's absolute time; `--begin @…` takes it.
        let t = try run("rltrace", ["timeline", demoTrace])
        let row = try #require(t.out.split(separator: "\n").first { $0.contains("#446") && $0.contains("HANG") })
        let abs = String(row.split(separator: " ")[1])
        #expect(abs.hasPrefix("17") && abs.count == 20, "\(abs)")
        let h = try run("rltrace", ["hangs", demoTrace, "--begin", "@" + abs, "--end", "+900ms"])
        #expect(h.status == 0 && h.out.contains("iteration 446"), "\(h.out)\(h.err)")
        // …and `dump` prints the same clock: the iteration_begin of 446 on loop 17 at that time.
        let d = try run("rltrace", ["dump", demoTrace])
        #expect(d.out.contains("[\(abs)]"), "dump has no event at \(abs)")
    }

    @Test func dateAndTimeOfDayFormsNameTheSameInstantAsEpochSeconds() throws {
        // babeltrace2 prints `[HH:MM:SS.nnnnnnnnn]` (with --clock-gmt) or a date: each form copied
        // from it selects exactly what the epoch-seconds form does.
        let t = try run("rltrace", ["timeline", demoTrace])
        let row = try #require(t.out.split(separator: "\n").first { $0.contains("#446") && $0.contains("HANG") })
        let abs = String(row.split(separator: " ")[1])
        let parts = abs.split(separator: ".")
        let secs = Int(parts[0])!, frac = String(parts[1])
        let tod = secs % 86_400
        let clock = String(format: "%02d:%02d:%02d.%@", tod / 3600, tod / 60 % 60, tod % 60, frac)
        let f = DateFormatter()
        f.timeZone = TimeZone(identifier: "UTC"); f.locale = Locale(identifier: "en_US_POSIX"); f.dateFormat = "yyyy-MM-dd"
        let date = f.string(from: Date(timeIntervalSince1970: TimeInterval(secs)))
        let reference = try run("rltrace", ["hangs", demoTrace, "--begin", "@" + abs, "--end", "+900ms"])
        #expect(reference.status == 0 && reference.out.contains("iteration 446"))
        for form in ["@\(date)T\(clock)", "@\(date) \(clock)", "@\(clock)", "@[\(clock)]"] {
            let h = try run("rltrace", ["hangs", demoTrace, "--begin", form, "--end", "+900ms"])
            #expect(h.status == 0 && h.out == reference.out, "\(form): \(h.out)\(h.err)")
        }
        for bad in ["@25:00:00", "@2026-13-01T00:00:00", "@12:60", "@2026-11-23T", "@1:2:3"] {
            let r = try run("rltrace", ["report", demoTrace, "--begin", bad])
            #expect(r.status == 64 && r.err.contains("cannot read the time"), "\(bad): \(r.status) \(r.err)")
        }
    }

    @Test(arguments: [[String](), ["--begin", "400ms", "--end", "500ms"], ["--begin", "650ms", "--end", "1.2s"], ["--begin", "1s", "--end", "2s"]])
    func reportTimelineAndExportAgreeOnEveryCount(window: [String]) throws {
        // Per loop: iterations (report) = timeline rows = iteration slices (export); callouts (report)
        // = callout slices; spinning iterations (report) = SPIN rows.
        let doc = try reportJSON(window)
        let t = try run("rltrace", ["timeline", demoTrace] + window)
        let out = NSTemporaryDirectory() + "rltrace-agree-\(getpid())-\(window.joined()).json"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let x = try run("rltrace", ["export", "-o", out, demoTrace] + window)
        #expect(t.status == 0 && x.status == 0)
        let events = (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as! [String: Any])["traceEvents"] as! [[String: Any]]
        let kinds: Set<String> = ["observer", "source0", "source1", "timer", "main_queue", "block"]
        var rows: [Int: Int] = [:], spinRows: [Int: Int] = [:]
        var current = -1
        for line in t.out.split(separator: "\n") {
            if line.hasPrefix("loop ") { current = Int(line.split(separator: " ")[1])!; continue }
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("#") {
                rows[current, default: 0] += 1
                if line.contains("SPIN") { spinRows[current, default: 0] += 1 }
            }
        }
        for l in doc["loops"] as! [[String: Any]] {
            let loop = l["loop"] as! Int, tid = l["tid"] as! Int
            let slices = events.filter { $0["ph"] as? String == "X" && $0["tid"] as? Int == tid }
            #expect(rows[loop] == l["iterations"] as? Int, "loop \(loop) \(window): timeline rows")
            #expect(slices.filter { $0["cat"] as? String == "iteration" }.count == l["iterations"] as? Int, "loop \(loop) \(window): iteration slices")
            #expect(slices.filter { kinds.contains($0["cat"] as? String ?? "") }.count == l["callouts"] as? Int, "loop \(loop) \(window): callout slices")
            let spinning = (l["spins"] as! [[String: Any]]).map { $0["iterations"] as! Int }.reduce(0, +)
            #expect(spinRows[loop, default: 0] == spinning, "loop \(loop) \(window): SPIN rows")
        }
    }

    @Test("once the model follows nothing past the window's end, later events are counted, not decoded: the same trace figures, one thread or two")
    func eventsPastTheWindowAreOnlyCounted() throws {
        final class Nothing: LoopModelSink {}
        let whole = try RunLoopEventSource(paths: [demoTrace])
        var all: [(ts: Int64, kind: UInt8, loop: UInt64, item: UInt64)] = []
        try whole.forEachBatch(threads: 1) { for e in $0 { all.append((e.ts, e.kind.rawValue, e.loop, e.item)) } }
        #expect(whole.eventsCountedOnly == 0)
        for threads in [1, 2] {
            let source = try RunLoopEventSource(paths: [demoTrace])
            var filter = EventFilter()
            filter.begin = .relative(400_000_000)
            filter.end = .relative(1_000_000_000)
            let sink = Nothing()
            let model = LoopModel(sink: sink, names: source.names)
            model.pastWindowFlag = source.windowDone
            var delivered: [RunLoopEvent] = []
            var windowSet = false
            try source.forEachBatch(threads: threads, filter: filter) { batch in
                if !windowSet, let w = source.window { model.setWindow(lo: w.lo, hi: w.hi); windowSet = true }
                delivered += batch
                model.consume(batch)
            }
            // What the report's trace section says is the whole trace's.
            #expect(source.totalEvents == whole.totalEvents && source.runLoopEvents == whole.runLoopEvents, "\(threads) thread(s)")
            #expect(source.firstTs == whole.firstTs && source.lastTs == whole.lastTs && source.backwardsEvents == whole.backwardsEvents)
            // The model followed what was open at the window's end, then stopped: the source delivered
            // events past the window (at least the one that ended the last open iteration) and then
            // only counted the rest (about 3 s of the trace).
            let hi = try #require(source.window).hi
            #expect(model.pastWindow)
            #expect(delivered.contains { $0.ts > hi })
            // The same events as the whole run's first ones (no pid or loop filter: the gate passes all).
            #expect(delivered.count <= all.count && zip(delivered, all).allSatisfy { d, w in
                d.ts == w.ts && d.kind.rawValue == w.kind && d.loop == w.loop && d.item == w.item })
            // The reader hears the model's word at its next chunk (8192 events; with two threads it may
            // run up to its ring of chunks ahead): here the compute worker sleeps across the window's
            // end until +2.9 s, so most of this small trace is delivered; what is left is only counted.
            let later = all.count - delivered.count
            #expect((threads == 2 || later > 0) && source.eventsCountedOnly >= later && source.eventsCountedOnly <= later + (whole.totalEvents - whole.runLoopEvents),
                    "\(threads) thread(s): \(delivered.count) delivered, \(source.eventsCountedOnly) counted of \(source.totalEvents)")
        }
    }

    @Test func aWindowOutsideTheTraceIsAnError() throws {
        let r = try run("rltrace", ["report", demoTrace, "--begin", "10s"])
        #expect(r.status == 2)
        #expect(r.err.contains("outside the trace"), "\(r.err)")
        let e = try run("rltrace", ["timeline", demoTrace, "--begin", "@1000", "--end", "@1001"])
        #expect(e.status == 2)
    }
}
