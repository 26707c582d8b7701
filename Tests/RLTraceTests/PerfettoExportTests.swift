import Foundation
import Testing

// `rltrace export --format perfetto` decoded by protoc (apt protobuf-compiler) against
// Fixtures/perfetto/perfetto_subset.proto (Perfetto's messages and field numbers, the subset the
// export writes), then checked against the Chrome export and the report of the same trace and
// selection: the same slices (track, category, name, begin, duration, to the ns), nested, the same
// flows, counters and hangs; interned names written once; the sequence's flags as Perfetto's
// trace processor requires them.

/// A message in protoc's text form, as a tree.
final class ProtoText {
    private(set) var fields: [(name: String, value: String?, message: ProtoText?)] = []
    /// The sub-messages named `name`.
    subscript(_ name: String) -> [ProtoText] { fields.filter { $0.name == name }.compactMap(\.message) }
    /// The values of the scalar fields named `name`.
    func values(_ name: String) -> [String] { fields.filter { $0.name == name }.compactMap(\.value) }
    func value(_ name: String) -> String? { values(name).first }
    func int(_ name: String) -> Int64? { value(name).flatMap { Int64($0) } }
    func uint(_ name: String) -> UInt64? { value(name).flatMap { UInt64($0) } }
    /// Every field's name, at every depth (to find one the subset does not know: protoc shows it as a number).
    var allNames: [String] { fields.flatMap { [$0.name] + ($0.message?.allNames ?? []) } }

    /// Parses protoc's `--decode` output.
    static func parse(_ text: String) throws -> ProtoText {
        let root = ProtoText()
        var stack = [root]
        for raw in text.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line == "}" { stack.removeLast(); continue }
            if line.hasSuffix(" {") {
                let m = ProtoText()
                stack[stack.count - 1].fields.append((String(line.dropLast(2)), nil, m))
                stack.append(m)
                continue
            }
            guard let colon = line.range(of: ": ") else { throw DecodeError(line: line) }
            var v = String(line[colon.upperBound...])
            if v.hasPrefix("\"") { v = unescape(v.dropFirst().dropLast()) }
            stack[stack.count - 1].fields.append((String(line[..<colon.lowerBound]), v, nil))
        }
        return root
    }

    struct DecodeError: Error { var line: String }

    /// A C-escaped string (protoc writes bytes past ASCII as octal escapes).
    private static func unescape(_ s: Substring) -> String {
        var out: [UInt8] = []
        var it = Array(s.utf8)[...]
        while let c = it.popFirst() {
            guard c == 0x5C, let n = it.popFirst() else { out.append(c); continue }
            switch n {
            case 0x6E: out.append(0x0A)
            case 0x74: out.append(0x09)
            case 0x72: out.append(0x0D)
            case 0x30...0x37:
                var v = Int(n - 0x30)
                for _ in 0..<2 { if let d = it.first, (0x30...0x37).contains(d) { v = v * 8 + Int(d - 0x30); it.removeFirst() } }
                out.append(UInt8(v))
            default: out.append(n)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A slice as both exports show it.
struct ExportedSlice: Hashable {
    var tid: Int64, category: String, name: String, begin: Int64, duration: Int64
}

/// The Perfetto export decoded and replayed as Perfetto's trace processor reads it: each track's
/// events sorted by time, equal times kept in file order.
struct DecodedPerfetto {
    var slices: [ExportedSlice] = []
    var sliceCountByTrack: [UInt64: Int] = [:]
    /// Loop thread tracks by loop id, and their thread ids.
    var loopTracks: [UInt64: UInt64] = [:], trackTid: [UInt64: Int64] = [:]
    var flowStarts: [UInt64] = [], flowEnds: [UInt64] = []
    /// Hang instants per track, with their arguments.
    var hangs: [UInt64: [[String: String]]] = [:]
    /// Counter values by counter track name.
    var counters: [String: [(ts: Int64, value: Double)]] = [:]
    var unbalanced: [String] = []
    /// Each slice's category and its enclosing slice's ("" at the top of its track).
    var nesting: [(category: String, parent: String)] = []

    init(_ trace: ProtoText) throws {
        let packets = trace["packet"]
        #expect(packets.count > 1)
        // The sequence: one id; its state cleared on the first packet and needed by every other.
        #expect(Set(packets.map { $0.uint("trusted_packet_sequence_id") ?? 0 }) == [1])
        #expect(packets.first?.value("sequence_flags") == "1")
        #expect(packets.dropFirst().allSatisfy { $0.value("sequence_flags") == "2" })
        // No field the subset does not declare (protoc shows those as numbers).
        #expect(!trace.allNames.contains { $0.first?.isNumber == true })
        var names: [UInt64: String] = [:], categories: [UInt64: String] = [:], counterNames: [UInt64: String] = [:]
        var events: [UInt64: [(ts: Int64, event: ProtoText)]] = [:]
        for p in packets {
            for d in p["interned_data"] {
                for n in d["event_names"] {
                    let iid = n.uint("iid")!, name = n.value("name")!
                    #expect(names[iid] == nil, "event name iid \(iid) interned twice")
                    #expect(!names.values.contains(name), "event name \(name) interned twice")
                    names[iid] = name
                }
                for c in d["event_categories"] { categories[c.uint("iid")!] = c.value("name")! }
            }
            for t in p["track_descriptor"] {
                let uuid = t.uint("uuid")!
                if let th = t["thread"].first, let name = th.value("thread_name"), let r = name.range(of: " — loop ") {
                    loopTracks[UInt64(name[r.upperBound...])!] = uuid
                    trackTid[uuid] = th.int("tid")!
                }
                if !t["counter"].isEmpty { counterNames[uuid] = t.value("name")! }
            }
            for e in p["track_event"] {
                // Every name used is interned on this packet or an earlier one.
                if let iid = e.uint("name_iid") { #expect(names[iid] != nil, "name iid \(iid) used before it is interned") }
                events[e.uint("track_uuid")!, default: []].append((p.int("timestamp")!, e))
            }
        }
        for (track, list) in events {
            var open: [(ts: Int64, event: ProtoText)] = []
            for (ts, e) in list.enumerated().sorted(by: { ($0.element.ts, $0.offset) < ($1.element.ts, $1.offset) }).map(\.element) {
                let name = e.uint("name_iid").flatMap { names[$0] } ?? "", category = e.uint("category_iids").flatMap { categories[$0] } ?? ""
                switch e.value("type") {
                case "TYPE_SLICE_BEGIN": open.append((ts, e))
                case "TYPE_SLICE_END":
                    guard let b = open.popLast() else { unbalanced.append("end without begin at \(ts) on track \(track)"); continue }
                    let bName = b.event.uint("name_iid").flatMap { names[$0] } ?? ""
                    let bCat = b.event.uint("category_iids").flatMap { categories[$0] } ?? ""
                    slices.append(ExportedSlice(tid: trackTid[track] ?? -1, category: bCat, name: bName, begin: b.ts, duration: ts - b.ts))
                    nesting.append((bCat, open.last.map { $0.event.uint("category_iids").flatMap { categories[$0] } ?? "" } ?? ""))
                    sliceCountByTrack[track, default: 0] += 1
                case "TYPE_INSTANT":
                    flowStarts += e.values("flow_ids").map { UInt64($0)! }
                    flowEnds += e.values("terminating_flow_ids").map { UInt64($0)! }
                    if category == "hang" {
                        var args: [String: String] = [:]
                        for a in e["debug_annotations"] {
                            args[String(a.uint("name_iid")!)] = a.value("uint_value") ?? a.value("int_value") ?? a.value("string_value")
                        }
                        hangs[track, default: []].append(args)
                    }
                    _ = name
                case "TYPE_COUNTER":
                    counters[counterNames[track] ?? "?", default: []].append((ts, Double(e.value("double_counter_value")!)!))
                default: unbalanced.append("unknown type \(e.value("type") ?? "none")")
                }
            }
            if !open.isEmpty { unbalanced.append("\(open.count) slices never end on track \(track)") }
        }
    }
}

/// The Chrome export's complete slices (not its flow anchors), flows and busy counters.
func chromeExport(_ path: String) throws -> (slices: [ExportedSlice], flowStarts: Int, flowEnds: Int, busy: [String: [(ts: Int64, value: Double)]]) {
    let doc = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
    var slices: [ExportedSlice] = [], s = 0, f = 0, busy: [String: [(ts: Int64, value: Double)]] = [:]
    func ns(_ v: Any?) -> Int64 { Int64(((v as! NSNumber).doubleValue * 1000).rounded()) }
    for e in doc["traceEvents"] as! [[String: Any]] {
        switch e["ph"] as? String {
        case "X" where e["cat"] as? String != "flow":
            slices.append(ExportedSlice(tid: (e["tid"] as! NSNumber).int64Value, category: e["cat"] as! String, name: e["name"] as! String,
                                        begin: ns(e["ts"]), duration: ns(e["dur"])))
        case "s": s += 1
        case "f": f += 1
        case "C":
            let name = (e["name"] as! String).replacingOccurrences(of: "busy ratio", with: "busy %")
            busy[name, default: []].append((ns(e["ts"]), ((e["args"] as! [String: Any])["busy"] as! NSNumber).doubleValue * 100))
        default: break
        }
    }
    return (slices, s, f, busy)
}

@Suite struct PerfettoExportTests {
    static let protoDir = fixtures.appendingPathComponent("perfetto").path

    func decode(_ file: String) throws -> ProtoText {
        let r = try runProgram("/usr/bin/protoc", ["--proto_path=\(Self.protoDir)", "--decode=perfetto.protos.Trace", "perfetto_subset.proto"],
                               stdin: FileHandle(forReadingAtPath: file))
        #expect(r.status == 0, "protoc (apt protobuf-compiler): \(r.stderr)")
        return try ProtoText.parse(r.stdout)
    }

    @Test(arguments: [[], ["--loop", "17"], ["--begin", "400ms", "--end", "500ms"]])
    func perfettoExportAgreesWithChromeAndTheReport(selection: [String]) throws {
        let dir = NSTemporaryDirectory() + "rltrace-perfetto-\(getpid())-\(selection.joined())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pf = dir + "/trace.pftrace", chrome = dir + "/trace.json"
        let e = try run("rltrace", ["export", demoTrace, "--format", "perfetto", "-o", pf] + selection)
        #expect(e.status == 0, "\(e.err)")
        let c = try run("rltrace", ["export", demoTrace, "--format", "chrome", "-o", chrome] + selection)
        #expect(c.status == 0, "\(c.err)")
        let j = try run("rltrace", ["report", "--format", "json", demoTrace] + selection)
        #expect(j.status == 0, "\(j.err)")
        let report = try JSONSerialization.jsonObject(with: Data(j.out.utf8)) as! [String: Any]
        let loops = report["loops"] as! [[String: Any]]

        let p = try DecodedPerfetto(try decode(pf))
        let ch = try chromeExport(chrome)
        #expect(p.unbalanced.isEmpty, "\(p.unbalanced.prefix(5))")
        // The same slices, to the ns, nested on every track.
        #expect(p.slices.count == ch.slices.count)
        let mine = Dictionary(p.slices.map { ($0, 1) }, uniquingKeysWith: +), theirs = Dictionary(ch.slices.map { ($0, 1) }, uniquingKeysWith: +)
        #expect(mine == theirs, "only in perfetto: \(mine.filter { theirs[$0.key] != $0.value }.prefix(3)); only in chrome: \(theirs.filter { mine[$0.key] != $0.value }.prefix(3))")
        // How a loop nests: a sleep in an iteration, an iteration in a run (or at the top), a callout
        // in an iteration or a run (a run's entry and exit observers) or at the top, a run at the top
        // or in a callout (a nested run) — never an iteration inside a callout or a sleep elsewhere.
        let calloutCategories: Set<String> = ["observer", "source0", "source1", "timer", "main_queue", "block"]
        for n in p.nesting {
            switch n.category {
            case "sleep": #expect(n.parent == "iteration", "a sleep in \(n.parent)")
            case "iteration": #expect(n.parent == "" || n.parent == "run", "an iteration in \(n.parent)")
            case "run": #expect(n.parent == "" || calloutCategories.contains(n.parent), "a run in \(n.parent)")
            default: #expect(["", "iteration", "run"].contains(n.parent), "a \(n.category) callout in \(n.parent)")
            }
        }
        // Flows: each id once at each end, as many as the Chrome export's arrows.
        #expect(p.flowStarts.count == ch.flowStarts)
        #expect(p.flowEnds.count == ch.flowEnds)
        if selection.isEmpty { #expect(ch.flowStarts > 0) }
        #expect(Set(p.flowStarts).count == p.flowStarts.count && Set(p.flowStarts) == Set(p.flowEnds))
        // The loops the report has, each with its iterations, callouts and hangs.
        #expect(Set(p.loopTracks.keys) == Set(loops.map { ($0["loop"] as! NSNumber).uint64Value }))
        for l in loops {
            let id = (l["loop"] as! NSNumber).uint64Value
            guard let track = p.loopTracks[id], let tid = p.trackTid[track] else { Issue.record("loop \(id) has no track"); continue }
            let onTrack = p.slices.filter { $0.tid == tid }
            #expect(onTrack.filter { $0.category == "iteration" }.count == (l["iterations"] as! Int), "loop \(id) iterations")
            #expect(onTrack.filter { calloutCategories.contains($0.category) }.count == (l["callouts"] as! Int), "loop \(id) callouts")
            let hangs = l["hangs"] as! [[String: Any]]
            #expect((p.hangs[track] ?? []).count == hangs.count, "loop \(id) hangs")
            // Hang arguments: iteration (iid 3) and busy_ns (4), as the report has them.
            #expect((p.hangs[track] ?? []).map { [$0["3"] ?? "", $0["4"] ?? ""] }
                    == hangs.map { ["\($0["iteration"] as! NSNumber)", "\($0["busyNs"] as! NSNumber)"] })
            // Counters: the Chrome export's busy ratio (as %) at the same times; iterations/s as many.
            let busy = p.counters["busy % (loop \(id))"] ?? [], chromeBusy = ch.busy["busy % (loop \(id))"] ?? []
            #expect(busy.count == 200 && busy.count == chromeBusy.count)
            #expect(zip(busy, chromeBusy).allSatisfy { $0.ts == $1.ts && abs($0.value - $1.value) < 1e-6 })
            #expect((p.counters["iterations/s (loop \(id))"] ?? []).count == 200)
        }
        if selection.isEmpty {
            // The demo trace's hang: iteration 446 of loop 17, busy 300 ms, held by the timer "hang-timer".
            #expect(p.hangs[p.loopTracks[17] ?? 0]?.count == 1)
            #expect(p.hangs[p.loopTracks[17] ?? 0]?.first?["8"]?.hasPrefix("timer hang-timer #25") == true)
        }
    }
}
