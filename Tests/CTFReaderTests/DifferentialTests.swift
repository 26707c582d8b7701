import Foundation
import Testing
@testable import CTFReader
import LTTngControl
#if canImport(Glibc)
import Glibc
#endif

/// Decodes every trace below `paths` with CTFReader and formats each event like `babeltrace2 --clock-seconds`.
func readerLines(_ paths: [String]) throws -> (lines: [String], set: CTFTraceSet) {
    let set = try CTFTraceSet(paths: paths)
    var it = set.makeMergedIterator()
    var f = CTFEventFormatter(style: .text)
    var lines: [String] = []
    var out = ""
    while try it.next() {
        out.removeAll(keepingCapacity: true)
        f.format(it.current, into: &out)
        lines.append(String(out.dropLast()))
    }
    return (lines, set)
}

/// Sorts lines within runs of equal timestamps (the two tools may order simultaneous events differently).
func canonical(_ lines: [String]) -> [String] {
    var out: [String] = []
    var group: [String] = []
    var key = ""
    for l in lines {
        let k = String(l.prefix(while: { $0 != "]" }))
        if k != key { out += group.sorted(); group = []; key = k }
        group.append(l)
    }
    return out + group.sorted()
}

/// Compares CTFReader against babeltrace2 event for event; returns the number of events.
@discardableResult
func expectAgreesWithBabeltrace(_ paths: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
    let bt = try babeltrace(["--clock-seconds"] + paths).map(String.init)
    let (mine, set) = try readerLines(paths)
    #expect(mine.count == bt.count, "event count: CTFReader \(mine.count), babeltrace2 \(bt.count)", sourceLocation: sourceLocation)
    let a = canonical(mine), b = canonical(bt)
    if let i = zip(a, b).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
        Issue.record("first difference at event \(i):\n CTFReader:   \(a[i])\n babeltrace2: \(b[i])", sourceLocation: sourceLocation)
    }
    // Timestamps are non-decreasing in the merged order.
    var last = Int64.min
    var it = set.makeMergedIterator()
    var ordered = true
    let set2 = try CTFTraceSet(paths: paths)
    it = set2.makeMergedIterator()
    while try it.next() { if it.current.timestamp < last { ordered = false }; last = it.current.timestamp }
    #expect(ordered, sourceLocation: sourceLocation)
    #expect(set.warnings.isEmpty, "unexpected warnings: \(set.warnings)", sourceLocation: sourceLocation)
    return mine.count
}

@Suite("CTFReader against babeltrace2 on recorded LTTng-UST traces", .serialized)
struct DifferentialTests {
    @Test("per-uid buffers, 4 threads, vtid/procname context: every event agrees")
    func mixedWithContext() throws {
        let out = try recordTestgen(["mixed", "60", "4"], contexts: ["vtid", "procname"])
        let n = try expectAgreesWithBabeltrace([out.path])
        #expect(n == 60 * 4 * 6)
    }

    @Test("per-pid buffers, small sub-buffers (many packets), 6 threads, no context")
    func perPIDManyPackets() throws {
        let out = try recordTestgen(["mixed", "300", "6"], buffers: .perPID, subbufferSize: 4096)
        let n = try expectAgreesWithBabeltrace([out.path])
        let set = try CTFTraceSet(paths: [out.path])
        // Every event is either decoded or accounted for as discarded by the tracer (the losses
        // named by kind when it fails).
        var lost: UInt64 = 0
        var it = set.makeMergedIterator()
        var count = 0
        while try it.next() { count += 1 }
        for l in set.losses { if case .discardedEvents(let d) = l.kind { lost += d } }
        #expect(count == n)
        #expect(UInt64(count) + lost == 300 * 6 * 6, "decoded \(count), discarded \(lost), losses \(set.losses.map { "\($0.kind)" })")
    }

    @Test("several traces at once are merged in time order like babeltrace2 does; partitions decode in parallel")
    func severalTraces() throws {
        let a = try recordTestgen(["mixed", "20", "2"], contexts: ["vtid"])
        let b = try recordTestgen(["mixed", "15", "3"], contexts: ["procname"])
        let n = try expectAgreesWithBabeltrace([a.path, b.path])
        #expect(n == (20 * 2 + 15 * 3) * 6)
        #expect(try discoverCTFTraces(in: [a.path, b.path]).count == 2)
        // One partition per stream, each decoded on its own thread: together they hold every event once.
        let set = try CTFTraceSet(paths: [a.path, b.path])
        let streams = set.streams
        final class Counts: @unchecked Sendable {
            let lock = NSLock()
            var total = 0
            func add(_ c: Int) { lock.lock(); total += c; lock.unlock() }
        }
        let counts = Counts()
        DispatchQueue.concurrentPerform(iterations: streams.count) { i in
            var it = set.makeMergedIterator(over: [streams[i]])
            var c = 0
            while (try? it.next()) == true { c += 1 }
            counts.add(c)
        }
        #expect(streams.count >= 2)
        #expect(counts.total == n)
    }

    /// The streams decoded on threads of their own and merged on the caller's give exactly the
    /// merged iterator's sequence (ties between streams included), across many chunk boundaries.
    @Test("forEachInTimeOrder decodes streams on their own threads and delivers the merged iterator's order")
    func concurrentDecodingKeepsTheOrder() throws {
        let out = try recordTestgen(["mixed", "300", "6"], contexts: ["vtid"], buffers: .perPID, subbufferSize: 4096)
        struct Event: Equatable { var ts: Int64; var path: String; var cls: Int; var vtid: Int64? }
        let reference = try CTFTraceSet(paths: [out.path])
        #expect(reference.streams.count >= 2)
        var expected: [Event] = []
        var it = reference.makeMergedIterator()
        while try it.next() {
            let s = it.current
            expected.append(Event(ts: s.timestamp, path: s.path, cls: s.eventClassIndex, vtid: s.streamContextInteger(at: 0)))
        }
        // The iterator's own loop (a stream's run of events without touching the heap) gives the same.
        var looped: [Event] = []
        var it2 = try CTFTraceSet(paths: [out.path]).makeMergedIterator()
        try it2.forEachEvent { _, s in
            looped.append(Event(ts: s.timestamp, path: s.path, cls: s.eventClassIndex, vtid: s.streamContextInteger(at: 0)))
            return true
        }
        #expect(looped == expected)
        for chunk in [7, 4096] {
            let set = try CTFTraceSet(paths: [out.path])
            var got: [Event] = []
            try set.forEachInTimeOrder(chunk: chunk, extract: { s in
                Event(ts: s.timestamp, path: s.path, cls: s.eventClassIndex, vtid: s.streamContextInteger(at: 0))
            }) { got.append($0) }
            #expect(got.count == expected.count, "chunks of \(chunk)")
            #expect(got == expected, "chunks of \(chunk)")
        }
        // A body that throws stops the decoding threads; its error comes out.
        struct Stop: Error {}
        let set = try CTFTraceSet(paths: [out.path])
        var seen = 0
        #expect(throws: Stop.self) {
            try set.forEachInTimeOrder(chunk: 5, extract: { $0.timestamp }) { _ in seen += 1; if seen == 100 { throw Stop() } }
        }
        #expect(seen == 100)
    }

    @Test("a traced process killed mid-run: its trace still decodes, event for event")
    func killedProcess() throws {
        recordingLock.lock()
        defer { recordingLock.unlock() }
        let daemon = try SharedDaemon.get()
        let name = SharedDaemon.uniqueName("killed")
        let out = SharedDaemon.scratch.appendingPathComponent(name)
        let session = try LTTngSession.create(name: name, outputDirectory: out, cli: daemon.cli)
        try session.enableChannel("chan", buffers: .perPID)
        try session.enableUserspaceEvents("rltest:*", channel: "chan")
        try session.addContexts(["vtid"], channel: "chan")
        try session.start()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try builtProduct("ctf-testgen"))
        p.arguments = ["hang", "150"]
        p.environment = daemon.applicationEnvironment
        let pipe = Pipe()
        p.standardOutput = pipe
        try p.run()
        let ready = pipe.fileHandleForReading.availableData
        #expect(String(decoding: ready, as: UTF8.self).contains("ready"))
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        #expect(p.terminationReason == .uncaughtSignal)
        try session.stop()
        try session.destroy()
        recordingLock.unlock()
        defer { recordingLock.lock() }
        let n = try expectAgreesWithBabeltrace([out.path])
        #expect(n == 150 * 6)
    }

    @Test("seeking by time with LTTng's index files (and without them) yields exactly the events at or after that time")
    func seekByTime() throws {
        let out = try recordTestgen(["mixed", "400", "3"], contexts: ["vtid"], subbufferSize: 4096)
        let (all, _) = try readerLines([out.path])
        let stamps = all.map { l -> Int64 in
            let t = l.dropFirst().prefix(while: { $0 != "]" }).split(separator: ".")
            return Int64(t[0])! * 1_000_000_000 + Int64(t[1])!
        }
        #expect(stamps.count > 300) // 4 KiB sub-buffers: many packets (the tracer discards the rest)
        for fraction in [0.0, 0.37, 0.81] {
            let target = stamps[Int(Double(stamps.count - 1) * fraction)]
            let expected = zip(all, stamps).filter { $0.1 >= target }.map { String($0.0.split(separator: ")", maxSplits: 1)[1]) }
            for useIndex in [true, false] {
                let dir = out.path
                let set = try CTFTraceSet(paths: [dir])
                if !useIndex {
                    // Hide the index files so the reader scans packet headers instead.
                    for t in set.traces { try? FileManager.default.moveItem(atPath: t.path + "/index", toPath: t.path + "/index.hidden") }
                }
                var it = try set.makeMergedIterator(fromNanoseconds: target)
                var f = CTFEventFormatter(style: .text)
                var got: [String] = []
                var line = ""
                while try it.next() {
                    line.removeAll(keepingCapacity: true)
                    f.format(it.current, into: &line)
                    got.append(String(line.dropLast().split(separator: ")", maxSplits: 1)[1]))
                }
                #expect(got.count == expected.count, "fraction \(fraction), index \(useIndex)")
                #expect(got.sorted() == expected.sorted(), "fraction \(fraction), index \(useIndex)")
                #expect(set.streams.allSatisfy { $0.seekUsedIndexFile == useIndex })
                if !useIndex {
                    for t in set.traces { try? FileManager.default.moveItem(atPath: t.path + "/index.hidden", toPath: t.path + "/index") }
                }
            }
        }
    }

    @Test("allocation-free integer access returns the same values as the decoded fields, for every event")
    func integerAccess() throws {
        let out = try recordTestgen(["mixed", "30", "2"], contexts: ["vtid", "procname"])
        let set = try CTFTraceSet(paths: [out.path])
        var it = set.makeMergedIterator()
        var checked = 0
        while try it.next() {
            let s = it.current
            #expect(s.streamContextFieldNames == ["vtid", "procname"])
            #expect(s.streamContextInteger(at: 0) == s.contextField("vtid")?.int64)
            #expect(s.streamContextInteger(at: 1) == nil)
            let names = s.payloadFieldNames
            #expect(names.count == s.payloadFieldCount)
            for (i, n) in names.enumerated() {
                let v = s.payloadField(n)
                if let iv = v?.int64 {
                    #expect(s.payloadInteger(at: i) == iv, "\(s.eventClass.name).\(n)")
                    checked += 1
                } else {
                    #expect(s.payloadInteger(at: i) == nil)
                }
            }
        }
        // ints: 11 integers; strings and seqs: their length fields; enums: color and raw.
        #expect(checked == 30 * 2 * (11 + 1 + 1 + 2))
    }

    @Test("JSON output has one object per event with the same timestamps and names")
    func jsonLines() throws {
        let out = try recordTestgen(["mixed", "10", "2"], contexts: ["vtid"])
        let set = try CTFTraceSet(paths: [out.path])
        var it = set.makeMergedIterator()
        var f = CTFEventFormatter(style: .json)
        var s = ""
        var stamps: [(Int64, String)] = []
        while try it.next() {
            f.format(it.current, into: &s)
            stamps.append((it.current.timestamp, it.current.eventClass.name))
        }
        let objects = s.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == 10 * 2 * 6)
        #expect(objects.allSatisfy { $0 != nil })
        let bt = try babeltrace(["--clock-seconds", out.path])
        let btStamps = bt.map { l -> Int64 in
            let t = l.dropFirst().prefix(while: { $0 != "]" }).split(separator: ".")
            return Int64(t[0])! * 1_000_000_000 + Int64(t[1])!
        }
        #expect(stamps.map(\.0) == btStamps)
        for (o, st) in zip(objects, stamps) {
            #expect((o?["timestamp_ns"] as? NSNumber)?.int64Value == st.0)
            #expect(o?["name"] as? String == st.1)
        }
    }

    @Test("rltrace dump prints what babeltrace2 prints and exits 0")
    func cliDump() throws {
        let out = try recordTestgen(["mixed", "8", "2"], contexts: ["vtid", "procname"])
        let r = try runTool(try builtProduct("rltrace"), ["dump", out.path])
        #expect(r.status == 0)
        let bt = try babeltrace(["--clock-seconds", out.path]).map(String.init)
        let mine = r.out.split(separator: "\n").map(String.init)
        #expect(canonical(mine) == canonical(bt))
        #expect(mine.count == 8 * 2 * 6)
    }
}
