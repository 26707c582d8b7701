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

/// The Perfetto export decoded and replayed as Perfetto's trace processor reads it: per packet
/// sequence its interned names, its `TracePacketDefaults` (clock, track) and its clocks (an
/// incremental clock's timestamps are deltas from the sequence's packet before on that clock,
/// from the `ClockSnapshot`'s value), then each track's events sorted by time, equal times kept in
/// file order.
struct DecodedPerfetto {
    static let calloutCategories: Set<String> = ["observer", "source0", "source1", "timer", "main_queue", "block"]
    var slices: [ExportedSlice] = []
    var sliceCountByTrack: [UInt64: Int] = [:]
    /// Loop thread tracks by loop id, and their thread ids.
    var loopTracks: [UInt64: UInt64] = [:], trackTid: [UInt64: Int64] = [:]
    var flowStarts: [UInt64] = [], flowEnds: [UInt64] = []
    /// Instants per name (`hang`, `slow callout`, `late timer`, `spin`) per track, with their
    /// arguments by name, and their times.
    var instants: [String: [UInt64: [(ts: Int64, args: [String: String])]]] = [:]
    /// Counter values by counter track name.
    var counters: [String: [(ts: Int64, value: Double)]] = [:]
    var unbalanced: [String] = []
    /// Each slice's category and its enclosing slice's ("" at the top of its track).
    var nesting: [(category: String, parent: String)] = []
    /// ``nesting`` as `category in parent` labels.
    var nestingLabels: [String] { nesting.map { "\($0.category) in \($0.parent)" } }
    /// Packet sequences, packets timestamped on each clock (absolute: the trace's), packets.
    var sequences = 0, incrementalPackets = 0, absolutePackets = 0, packets = 0

    /// One sequence's state.
    private struct Sequence {
        var names: [UInt64: String] = [:], categories: [UInt64: String] = [:], annotations: [UInt64: String] = [:]
        var clockID: UInt64 = 6, track: UInt64?
        /// Sequence-scoped clocks: their value, whether incremental, and trace time − clock value.
        var clocks: [UInt64: (value: Int64, incremental: Bool, offset: Int64)] = [:]
    }

    init(_ trace: ProtoText) throws {
        let packets = trace["packet"]
        self.packets = packets.count
        #expect(packets.count > 1)
        // Each sequence: its state cleared on its first packet, needed by every later one.
        var seen = Set<UInt64>()
        for p in packets {
            let id = p.uint("trusted_packet_sequence_id") ?? 0
            #expect(id != 0, "a packet without a sequence")
            #expect(p.value("sequence_flags") == (seen.insert(id).inserted ? "1" : "2"), "sequence \(id) flags")
        }
        sequences = seen.count
        // No field the subset does not declare (protoc shows those as numbers).
        #expect(!trace.allNames.contains { $0.first?.isNumber == true })
        var seqs: [UInt64: Sequence] = [:]
        var counterNames: [UInt64: String] = [:]
        var events: [UInt64: [(ts: Int64, event: ProtoText, name: String, category: String, args: [String: String])]] = [:]
        for p in packets {
            let sid = p.uint("trusted_packet_sequence_id") ?? 0
            var st = p.value("sequence_flags") == "1" ? Sequence() : seqs[sid] ?? Sequence()
            for d in p["interned_data"] {
                for n in d["event_names"] {
                    let iid = n.uint("iid")!, name = n.value("name")!
                    #expect(st.names[iid] == nil, "event name iid \(iid) interned twice on sequence \(sid)")
                    #expect(!st.names.values.contains(name), "event name \(name) interned twice on sequence \(sid)")
                    st.names[iid] = name
                }
                for c in d["event_categories"] { st.categories[c.uint("iid")!] = c.value("name")! }
                for a in d["debug_annotation_names"] { st.annotations[a.uint("iid")!] = a.value("name")! }
            }
            for d in p["trace_packet_defaults"] {
                st.clockID = d.uint("timestamp_clock_id") ?? 6
                st.track = d["track_event_defaults"].first?.uint("track_uuid")
            }
            for cs in p["clock_snapshot"] {
                let clocks = cs["clocks"]
                let boot = clocks.first { $0.uint("clock_id") == 6 }?.int("timestamp")
                #expect(boot != nil, "a clock snapshot without the trace's clock")
                for c in clocks where c.uint("clock_id")! >= 64 {
                    let v = c.int("timestamp")!
                    st.clocks[c.uint("clock_id")!] = (v, c.value("is_incremental") == "true", (boot ?? 0) - v)
                }
            }
            var ts: Int64?
            if let raw = p.int("timestamp") {
                let clock = p.uint("timestamp_clock_id") ?? st.clockID
                if clock == 6 {
                    ts = raw; absolutePackets += 1
                } else if var c = st.clocks[clock] {
                    c.value = c.incremental ? c.value + raw : raw
                    st.clocks[clock] = c
                    ts = c.value + c.offset
                    incrementalPackets += 1
                } else {
                    Issue.record("clock \(clock) used on sequence \(sid) before its snapshot")
                }
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
                // Every name used is interned on this packet's sequence, on it or an earlier packet.
                var name = ""
                if let iid = e.uint("name_iid") {
                    #expect(st.names[iid] != nil, "name iid \(iid) used before it is interned on sequence \(sid)")
                    name = st.names[iid] ?? ""
                }
                let category = e.uint("category_iids").flatMap { st.categories[$0] } ?? ""
                var args: [String: String] = [:]
                for a in e["debug_annotations"] {
                    let key = a.uint("name_iid").flatMap { st.annotations[$0] } ?? "?"
                    args[key] = a.value("uint_value") ?? a.value("int_value") ?? a.value("string_value")
                }
                guard let track = e.uint("track_uuid") ?? st.track, let ts else { Issue.record("an event without a track or a time"); continue }
                events[track, default: []].append((ts, e, name, category, args))
            }
            seqs[sid] = st
        }
        for (track, list) in events {
            var open: [(ts: Int64, name: String, category: String)] = []
            for ev in list.enumerated().sorted(by: { ($0.element.ts, $0.offset) < ($1.element.ts, $1.offset) }).map(\.element) {
                let (ts, e) = (ev.ts, ev.event)
                switch e.value("type") {
                case "TYPE_SLICE_BEGIN":
                    // A slice carries no category: its name begins with it.
                    #expect(ev.category.isEmpty, "slice \(ev.name) has a category")
                    let category = String(ev.name.prefix { $0 != " " })
                    var name = ev.name
                    if DecodedPerfetto.calloutCategories.contains(category) {
                        // A callout's item id is its one argument; named here as the Chrome
                        // export's slices are compared (`kind name #item`).
                        #expect(Set(ev.args.keys) == ["item"], "callout \(ev.name): arguments \(ev.args)")
                        name += " #\(ev.args["item"] ?? "?")"
                    } else if category != "run" {
                        #expect(ev.args.isEmpty, "slice \(ev.name): arguments \(ev.args)")
                    }
                    open.append((ts, name, category))
                    // A signal's flow ends on its perform's slice.
                    flowEnds += e.values("terminating_flow_ids").map { UInt64($0)! }
                    #expect(e.values("flow_ids").isEmpty)
                case "TYPE_SLICE_END":
                    guard let b = open.popLast() else { unbalanced.append("end without begin at \(ts) on track \(track)"); continue }
                    // A wakeUp's flow ends on the sleep its wake ended.
                    let ends = e.values("terminating_flow_ids").map { UInt64($0)! }
                    #expect(ends.isEmpty || b.category == "sleep", "a flow ends on \(b.name)")
                    flowEnds += ends
                    slices.append(ExportedSlice(tid: trackTid[track] ?? -1, category: b.category, name: b.name, begin: b.ts, duration: ts - b.ts))
                    nesting.append((b.category, open.last?.category ?? ""))
                    sliceCountByTrack[track, default: 0] += 1
                case "TYPE_INSTANT":
                    let starts = e.values("flow_ids").map { UInt64($0)! }, ends = e.values("terminating_flow_ids").map { UInt64($0)! }
                    flowStarts += starts
                    flowEnds += ends
                    if starts.isEmpty && ends.isEmpty {
                        instants[ev.name, default: [:]][track, default: []].append((ts, ev.args))
                    } else {
                        #expect(["signal", "wakeUp"].contains(ev.name) && ev.category.isEmpty && ev.args.isEmpty, "flow \(ev.name) \(ev.category)")
                    }
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
            // Both exports name a callout `kind name` and give its item's id as the argument
            // `item`: compared as `kind name #item` (``DecodedPerfetto`` does the same).
            let cat = e["cat"] as! String, item = (e["args"] as? [String: Any])?["item"] as? NSNumber
            var name = e["name"] as! String
            if DecodedPerfetto.calloutCategories.contains(cat), let item { name += " #\(item)" }
            slices.append(ExportedSlice(tid: (e["tid"] as! NSNumber).int64Value, category: cat, name: name,
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

/// How many times each value occurs.
func counted<T: Hashable>(_ xs: [T]) -> [T: Int] { Dictionary(xs.map { ($0, 1) }, uniquingKeysWith: +) }

@Suite struct PerfettoExportTests {
    static let protoDir = fixtures.appendingPathComponent("perfetto").path

    /// The export with every `compressed_packets` inflated in place (Perfetto's reader does the
    /// same), by /usr/bin/python3's zlib (Fixtures/perfetto/inflate.py): the packets as they are,
    /// and how many compressed runs there were and the largest run's size.
    func inflate(_ file: String) throws -> (path: String, runs: Int, largest: Int) {
        let out = file + ".inflated"
        let r = try runProgram("/bin/sh", ["-c", "exec /usr/bin/python3 \"$0\" \"$1\" > \"$2\"", Self.protoDir + "/inflate.py", file, out])
        #expect(r.status == 0, "inflate.py: \(r.stderr)")
        // `runs=N largest=M`
        let nums = r.stderr.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        return (out, nums.first ?? -1, nums.dropFirst().first ?? -1)
    }

    func decode(_ file: String) throws -> ProtoText {
        let plain = try inflate(file).path
        let r = try runProgram("/usr/bin/protoc", ["--proto_path=\(Self.protoDir)", "--decode=perfetto.protos.Trace", "perfetto_subset.proto"],
                               stdin: FileHandle(forReadingAtPath: plain))
        #expect(r.status == 0, "protoc (apt protobuf-compiler): \(r.stderr)")
        return try ProtoText.parse(r.stdout)
    }

    @Test(arguments: [[], ["--loop", "17"], ["--begin", "400ms", "--end", "500ms"], ["--slow-callout", "45ms", "--late-timer", "30ms"]])
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
        let options = report["options"] as! [String: Any], trace = report["trace"] as! [String: Any]
        let slowCalloutNs = (options["slowCalloutNs"] as! NSNumber).int64Value, lateTimerNs = (options["lateTimerNs"] as! NSNumber).int64Value
        let origin = (trace["beginNs"] as! NSNumber).int64Value

        let p = try DecodedPerfetto(try decode(pf))
        let ch = try chromeExport(chrome)
        #expect(p.unbalanced.isEmpty, "\(p.unbalanced.prefix(5))")
        // The same slices, to the ns, nested on every track.
        #expect(p.slices.count == ch.slices.count)
        let mine = counted(p.slices), theirs = counted(ch.slices)
        #expect(mine == theirs, "only in perfetto: \(mine.filter { theirs[$0.key] != $0.value }.prefix(3)); only in chrome: \(theirs.filter { mine[$0.key] != $0.value }.prefix(3))")
        // How a loop nests: a sleep in an iteration, an iteration in a run (or at the top), a callout
        // in an iteration or a run (a run's entry and exit observers) or at the top, a run at the top
        // or in a callout (a nested run) — never an iteration inside a callout or a sleep elsewhere.
        let calloutCategories = DecodedPerfetto.calloutCategories
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
            let hangs = l["hangs"] as! [[String: Any]], pHangs = p.instants["hang"]?[track] ?? []
            #expect(pHangs.count == hangs.count, "loop \(id) hangs")
            // Hang arguments: iteration and busy_ns, as the report has them.
            #expect(pHangs.map { [$0.args["iteration"] ?? "", $0.args["busy_ns"] ?? ""] }
                    == hangs.map { ["\($0["iteration"] as! NSNumber)", "\($0["busyNs"] as! NSNumber)"] })
            #expect(pHangs.map(\.ts) == hangs.map { ($0["beginNs"] as! NSNumber).int64Value - origin })
            // Slow callouts: one instant per callout (not an observer) of at least the report's
            // threshold, where it begins — as many as the Chrome export's; the report's items with
            // such a maximum.
            let slow = p.instants["slow callout"]?[track] ?? []
            let chromeSlow = ch.slices.filter { $0.tid == tid && calloutCategories.subtracting(["observer"]).contains($0.category) && $0.duration >= slowCalloutNs }
            #expect(slow.count == chromeSlow.count, "loop \(id) slow callouts")
            #expect(Set(slow.map { ExportedSlice(tid: tid, category: "", name: "\($0.args["callout"] ?? "") #\($0.args["item"] ?? "")", begin: $0.ts,
                                                 duration: Int64($0.args["duration_ns"] ?? "") ?? -1) })
                    == Set(chromeSlow.map { ExportedSlice(tid: tid, category: "", name: $0.name, begin: $0.begin, duration: $0.duration) }))
            let items = l["items"] as! [[String: Any]]
            #expect(Set(slow.filter { !($0.args["callout"] ?? "").hasPrefix("block ") }.map { "\($0.args["callout"]!.prefix { $0 != " " }) \($0.args["item"]!)" })
                    == Set(items.filter { ($0["maxNs"] as! NSNumber).int64Value >= slowCalloutNs && !["observer", "block"].contains($0["kind"] as! String) }
                        .map { "\($0["kind"] as! String) \($0["item"] as! NSNumber)" }), "loop \(id) slow items")
            // Late timers: per timer, the latest as the report's lateness has it.
            if selection.count != 4 {
                let late = p.instants["late timer"]?[track] ?? []
                let latest = Dictionary(late.map { ($0.args["item"]!, Int64($0.args["late_ns"]!)!) }, uniquingKeysWith: max)
                let reportLate = (l["timerLateness"] as! [[String: Any]]).filter { ($0["maxNs"] as! NSNumber).int64Value >= lateTimerNs }
                #expect(latest == Dictionary(uniqueKeysWithValues: reportLate.map { ("\($0["item"] as! NSNumber)", ($0["maxNs"] as! NSNumber).int64Value) }),
                        "loop \(id) late timers")
            }
            // Spins: the report's, where each began.
            let spins = l["spins"] as! [[String: Any]], pSpins = p.instants["spin"]?[track] ?? []
            #expect(pSpins.map { [$0.ts, Int64($0.args["iteration"] ?? "") ?? -1, Int64($0.args["iterations"] ?? "") ?? -1] }
                    == spins.map { [($0["beginNs"] as! NSNumber).int64Value - origin, ($0["firstIteration"] as! NSNumber).int64Value,
                                     ($0["iterations"] as! NSNumber).int64Value] }, "loop \(id) spins")
            // Counters: the Chrome export's busy ratio (as %) at the same times; iterations/s as many.
            let busy = p.counters["busy % (loop \(id))"] ?? [], chromeBusy = ch.busy["busy % (loop \(id))"] ?? []
            #expect(busy.count == 200 && busy.count == chromeBusy.count)
            #expect(zip(busy, chromeBusy).allSatisfy { $0.ts == $1.ts && abs($0.value - $1.value) < 1e-6 })
            #expect((p.counters["iterations/s (loop \(id))"] ?? []).count == 200)
        }
        if selection.isEmpty {
            // The demo trace's hang: iteration 446 of loop 17, busy 300 ms, held by the timer "hang-timer".
            let hangs = p.instants["hang"]?[p.loopTracks[17] ?? 0] ?? []
            #expect(hangs.count == 1)
            #expect(hangs.first?.args["culprit"]?.hasPrefix("timer hang-timer #25") == true)
            // Its other findings (the report's): slow callouts (compute-results, blocking-block, and
            // the hang's timer, which the text report names as the hang only), late timers
            // (heartbeat, late-timer), a spin of 201 iterations.
            let loop17 = p.loopTracks[17] ?? 0
            // (named as the callout slices are: `kind name`)
            func named(_ i: [(ts: Int64, args: [String: String])]) -> Set<String> {
                Set(i.map { ($0.args["callout"] ?? "").replacingOccurrences(of: #" #[0-9]+$"#, with: "", options: .regularExpression) })
            }
            #expect(named(p.instants["slow callout"]?[loop17] ?? []) == ["source0 compute-results", "block blocking-block", "timer hang-timer"])
            #expect(named(p.instants["late timer"]?[loop17] ?? []) == ["timer heartbeat", "timer late-timer"])
            #expect((p.instants["late timer"]?[loop17] ?? []).allSatisfy { UInt64($0.args["item"] ?? "") != nil }, "the item's id")
            #expect((p.instants["spin"]?[loop17] ?? []).map { $0.args["iterations"] } == ["201"])
            // Every loop its own sequence, every thread a flow starts on too (here: the loops' own
            // or others), besides the global one and the counters'; nearly every packet timestamped
            // on its sequence's incremental clock.
            #expect(p.sequences >= loops.count + 3)
            #expect(p.absolutePackets * 100 < p.incrementalPackets, "\(p.absolutePackets) absolute, \(p.incrementalPackets) incremental")
        }
    }

    @Test("the default export deflates its packets into compressed_packets: inflated, byte for byte the --compression none export; each run under Perfetto's 512 KB")
    func compressedIsTheUncompressedDeflated() throws {
        let dir = NSTemporaryDirectory() + "rltrace-perfetto-z-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for selection in [[], ["--loop", "17", "--begin", "400ms"]] {
            let z = dir + "/z.pftrace", n = dir + "/n.pftrace", c = dir + "/c.json"
            for (path, extra) in [(z, [String]()), (n, ["--compression", "none"])] {
                let r = try run("rltrace", ["export", demoTrace, "--format", "perfetto", "-o", path, "--force"] + extra + selection)
                #expect(r.status == 0, "\(r.err)")
            }
            #expect(try run("rltrace", ["export", demoTrace, "-o", c, "--force"] + selection).status == 0)
            let inflated = try inflate(z)
            #expect(inflated.runs >= 1 && inflated.largest < 512 * 1024, "\(inflated)")
            let same = FileManager.default.contents(atPath: inflated.path) == FileManager.default.contents(atPath: n)
            #expect(same, "\(selection): the inflated export differs from the --compression none one")
            // The uncompressed export holds no compressed run.
            #expect(try inflate(n).runs == 0)
            let size = { (p: String) in ((try? FileManager.default.attributesOfItem(atPath: p)[.size]) as? Int) ?? 0 }
            #expect(size(z) * 10 < size(c), "deflated \(size(z)) bytes against the Chrome export's \(size(c))")
            #expect(size(z) * 2 < size(n))
        }
    }

    /// `trace` exported to Perfetto under `selection` into `dir`, decoded as Perfetto reads it;
    /// `pending` sets `RLTRACE_PERFETTO_PENDING` (how many slices a loop holds before it writes those
    /// of an iteration still open), nil the default.
    func decodedExport(_ trace: String, _ selection: [String], pending: Int?, in dir: String) throws -> DecodedPerfetto {
        let path = dir + "/p\(pending ?? 0).pftrace"
        var env = ProcessInfo.processInfo.environment
        if let pending { env["RLTRACE_PERFETTO_PENDING"] = String(pending) }
        let r = try runProgram(binDir.appendingPathComponent("rltrace").path,
                               ["export", trace, "--format", "perfetto", "-o", path, "--force"] + selection, environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        return try DecodedPerfetto(try decode(path))
    }

    @Test("slices of an iteration still open written early (RLTRACE_PERFETTO_PENDING=1, 4): read as Perfetto reads them, the same slices, nesting, flows and findings",
          arguments: [[], ["--begin", "250ms", "--end", "1.2s"], ["--loop", "17", "--kind", "block"]])
    func earlyWritesReadTheSame(selection: [String]) throws {
        let dir = NSTemporaryDirectory() + "rltrace-perfetto-early-\(getpid())-\(selection.joined())"
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let normal = try decodedExport(demoTrace, selection, pending: nil, in: dir)
        #expect(normal.slices.count > 500, "\(normal.slices.count) slices")
        for pending in [1, 4] {
            let early = try decodedExport(demoTrace, selection, pending: pending, in: dir)
            #expect(early.unbalanced.isEmpty, "\(pending): \(early.unbalanced.prefix(5))")
            #expect(counted(early.slices) == counted(normal.slices), "\(pending): the slices differ")
            #expect(counted(early.nestingLabels) == counted(normal.nestingLabels), "\(pending): the nesting differs")
            #expect(Set(early.flowStarts) == Set(normal.flowStarts) && Set(early.flowEnds) == Set(normal.flowEnds))
            #expect(early.flowStarts.count == normal.flowStarts.count && early.flowEnds.count == normal.flowEnds.count)
            for (name, tracks) in normal.instants {
                let a = tracks.values.flatMap { $0.map(\.ts) }.sorted(), b = (early.instants[name] ?? [:]).values.flatMap { $0.map(\.ts) }.sorted()
                #expect(a == b, "\(pending): instants \(name)")
            }
            // The early path was taken (at 1, on every callout): iterations' own slices written after
            // their callouts go back in time, stamped on the trace's clock.
            if pending == 1 { #expect(early.absolutePackets > normal.absolutePackets, "\(early.absolutePackets) absolute packets against \(normal.absolutePackets)") }
        }
    }

    @Test("slices written early around nested runs, for windows beginning just before a nested iteration (equal begins at the window's edge): the same slices and nesting")
    func earlyWritesAroundNestedRuns() throws {
        let dir = NSTemporaryDirectory() + "rltrace-perfetto-early-nested-\(getpid())", trace = dir + "-trace"
        try? FileManager.default.removeItem(atPath: dir)
        try? FileManager.default.removeItem(atPath: trace)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir); try? FileManager.default.removeItem(atPath: trace) }
        let rec = try run("rltrace", ["record", "-o", trace, "--quiet", "--", binDir.appendingPathComponent("rlc-scenarios").path, "mainqueue"])
        try #require(rec.status == 0, "\(rec.err)")
        // Nested iterations' starts (epoch seconds): timeline rows indented past the top level's 9 spaces.
        let timeline = try run("rltrace", ["timeline", trace])
        let starts = timeline.out.split(separator: "\n").filter { $0.hasPrefix("             #") }
            .compactMap { $0.split(separator: " ").dropFirst().first.flatMap { Double($0) } }
        try #require(!starts.isEmpty, "no nested iteration in the recording:\n\(timeline.out)")
        var windows: [[String]] = [[]]
        for s in starts.prefix(2) {
            for d in [0.0, 1e-6, 5e-6, 2e-5, 1e-4, 3e-4] { windows.append(["--begin", String(format: "@%.9f", s - d)]) }
        }
        for w in windows {
            let normal = try decodedExport(trace, w, pending: nil, in: dir), early = try decodedExport(trace, w, pending: 1, in: dir)
            #expect(early.unbalanced.isEmpty, "\(w): \(early.unbalanced.prefix(3))")
            #expect(counted(early.slices) == counted(normal.slices), "\(w): the slices differ")
            #expect(counted(early.nestingLabels) == counted(normal.nestingLabels), "\(w): \(counted(early.nestingLabels)) against \(counted(normal.nestingLabels))")
            #expect(Set(early.flowEnds) == Set(normal.flowEnds) && early.flowEnds.count == normal.flowEnds.count, "\(w): flows")
        }
    }

    @Test("--compression: refused with --format chrome and for an unknown value (exit 64, naming the option)")
    func compressionOptionCombinations() throws {
        let chrome = try run("rltrace", ["export", demoTrace, "--format", "chrome", "--compression", "none"])
        #expect(chrome.status == 64 && chrome.err.contains("--compression applies to --format perfetto"), "\(chrome.status) \(chrome.err)")
        let unknown = try run("rltrace", ["export", demoTrace, "--format", "perfetto", "--compression", "gzip"])
        #expect(unknown.status == 64 && unknown.err.contains("unknown --compression \"gzip\""), "\(unknown.status) \(unknown.err)")
        // The default format (chrome) with the option: refused too.
        #expect(try run("rltrace", ["export", demoTrace, "--compression", "deflate"]).status == 64)
    }

    @Test("a deflated export that cannot be written (standard output on a full device) is named, exit 1", arguments: [[], ["--compression", "none"]])
    func writeErrorIsReported(extra: [String]) throws {
        guard let r = try rltraceToFullDevice(["export", demoTrace, "--format", "perfetto"] + extra) else { return }
        #expect(r.status == 1 && r.stderr.contains("No space left on device"), "\(r.status) \(r.stderr)")
    }
}
