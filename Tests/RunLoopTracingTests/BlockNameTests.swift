import Foundation
import LTTngControl
import Testing

/// The block-name pool (docs/tracepoints.md, "Constant pools"): a named perform-block's entry
/// carries its name's pooled id, and the name is described once per session, not before every
/// block. `tracing-scenarios blocknames N K` performs N blocks over K names, logging each name.
@Suite("Block names described once per name", .serialized)
struct BlockNameTests {
    static let pooledBit: UInt64 = 1 << 47

    /// The `block` lines the scenario logged, in order (after `phase 2` only, if `secondPhase`).
    static func loggedBlocks(_ run: Tracing.ProgramRun, secondPhase: Bool = false) -> [String] {
        var lines = run.log
        if secondPhase, let i = lines.firstIndex(of: "phase 2") { lines = Array(lines[(i + 1)...]) }
        return lines.filter { $0.hasPrefix("block ") }.map { String($0.dropFirst("block ".count)) }
    }

    static func isBlockInfo(_ e: TraceEvent) -> Bool { e.shortName == "item_info" && e.labels["kind"] == "block" }

    /// Without the watchdog (its thread is not started), the loop's thread alone describes the
    /// names: exactly K `item_info` of kind block for N blocks, each a distinct pooled id, each
    /// before the first entry with that id; every entry names its block right.
    @Test func nBlocksOverKNamesAreDescribedKTimes() throws {
        let n = 300, k = 7
        let rec = try Tracing.record(["blocknames", "\(n)", "\(k)"], environment: ["RLTRACE_HANG_THRESHOLD": "off"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let logged = Self.loggedBlocks(rec.run)
        #expect(logged.count == n)
        let infos = rec.events.filter(Self.isBlockInfo)
        #expect(infos.count == k, "\(infos.count) item_info of kind block for \(k) names")
        let ids = infos.compactMap { $0["item_id"].flatMap { UInt64($0) } }
        #expect(Set(ids).count == k && ids.allSatisfy { $0 & Self.pooledBit != 0 }, "\(ids)")
        #expect(Set(infos.compactMap { $0["name"] }) == Set((0..<k).map { "bn-\($0)" }))
        let entries = rec.events.filter { $0.shortName == "block_entry" }
        #expect(entries.count == n)
        #expect(Set(entries.compactMap { $0["item_id"].flatMap { UInt64($0) } }) == Set(ids))
        // Named as the independent resolver reads the pools, in the order the blocks ran.
        #expect(entries.map { $0["name"] ?? "?" } == logged)
        // Each description precedes the first entry of its id.
        var described = Set<String>()
        for e in rec.events {
            if Self.isBlockInfo(e), let id = e["item_id"] { described.insert(id) }
            if e.shortName == "block_entry", let id = e["item_id"] { #expect(described.contains(id), "entry \(id) before its description") }
        }
    }

    /// The pool holds at most 4096 names (bounded memory for a program that makes names up per
    /// block): a name beyond them is described before each entry, with the block's own number, as
    /// before the pool, and still named right.
    @Test func namesBeyondThePoolAreDescribedPerBlock() throws {
        let n = 4300
        let rec = try Tracing.record(["blocknames", "\(n)", "\(n)"], environment: ["RLTRACE_HANG_THRESHOLD": "off"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let infos = rec.events.filter(Self.isBlockInfo).compactMap { $0["item_id"].flatMap { UInt64($0) } }
        #expect(infos.count == n)
        #expect(Set(infos.filter { $0 & Self.pooledBit != 0 }).count == 4096)
        let entries = rec.events.filter { $0.shortName == "block_entry" }
        #expect(entries.filter { ($0["item_id"].flatMap { UInt64($0) } ?? 0) & Self.pooledBit == 0 }.count == n - 4096)
        #expect(entries.map { $0["name"] ?? "?" } == Self.loggedBlocks(rec.run))
    }

    /// With the watchdog, every description of the pools after the names were used (a
    /// `loop_info` of the watchdog's thread, then its items) describes the K names exactly once each.
    @Test func eachPoolDescriptionDescribesEachNameOnce() throws {
        let n = 100, k = 5
        let rec = try Tracing.record(["blocknames", "\(n)", "\(k)", "--linger-ms", "600"], contexts: ["vtid"],
                                     environment: ["RLTRACE_POOL_PERIOD": "100ms"])
        #expect(rec.run.status == 0, "\(rec.run.stderr)")
        let loopTid = try #require(rec.run.log.first { $0.hasPrefix("loop ") }?.split(separator: " ").last.map(String.init))
        let lastEntry = try #require(rec.events.lastIndex { $0.shortName == "block_entry" })
        #expect(rec.events.filter { $0.shortName == "block_entry" }.map { $0["name"] ?? "?" } == Self.loggedBlocks(rec.run))
        // The loop's thread describes each name at most once (the watchdog may have been first).
        #expect(rec.events.filter { Self.isBlockInfo($0) && $0["vtid"] == loopTid }.count <= k)
        // The watchdog's rounds after the last entry: each a loop_info, then the block names.
        var rounds: [[String]] = []
        for e in rec.events[(lastEntry + 1)...] where e["vtid"] != loopTid {
            if e.shortName == "loop_info" { rounds.append([]) } else if Self.isBlockInfo(e), !rounds.isEmpty { rounds[rounds.count - 1].append(e["item_id"] ?? "?") }
        }
        #expect(rounds.count >= 2, "\(rounds.count) pool descriptions in 600 ms at a 100 ms period")
        for r in rounds { #expect(r.count == k && Set(r).count == k, "a description of the pool: \(r)") }
    }

    /// A session started after an earlier one described the names (and stopped) gets every name
    /// again, before the first entry that uses it: the watchdog lets the first use describe it anew
    /// once it saw no session recording the pools.
    @Test func aLaterSessionStillGetsTheNames() throws {
        // A session daemon of its own: a session another test starts in the shared one while this
        // test's first session is gone would enable `item_info` in the program too, and its
        // watchdog would never see the gap this test is about.
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("bn-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let ready = tmp.appendingPathComponent("ready").path, go = tmp.appendingPathComponent("go").path
        func session(_ tag: String) throws -> (LTTngSession, URL) {
            let name = "bn-\(tag)-\(getpid())-\(UUID().uuidString.prefix(6))"
            let out = tmp.appendingPathComponent(tag)
            let s = try LTTngSession.create(name: name, outputDirectory: out, cli: daemon.cli)
            try s.enableUserspaceEvents("runloop:*")
            try s.addContexts(["vpid"])
            try s.start()
            return (s, out)
        }
        let (first, _) = try session("first")
        var firstDestroyed = false
        defer { if !firstDestroyed { try? first.destroy() } }
        // The program in the background: phase 1 under the first session, phase 2 under the second.
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<Tracing.ProgramRun, Error>?
        DispatchQueue.global().async {
            result = Result { try Tracing.run(Tracing.scenarios, ["blocknames", "60", "3", "--ready", ready, "--go", go],
                                              environment: daemon.applicationEnvironment) }
            done.signal()
        }
        var waited = 0
        while !FileManager.default.fileExists(atPath: ready) && waited < 30_000 { usleep(1000); waited += 1 }
        #expect(FileManager.default.fileExists(atPath: ready))
        try first.stop()
        try first.destroy()
        firstDestroyed = true
        // The watchdog checks for sessions every 200 ms while none records the pools: it must see
        // this gap (three ticks' time).
        usleep(600_000)
        let (second, out) = try session("second")
        var secondDestroyed = false
        defer { if !secondDestroyed { try? second.destroy() } }
        _ = FileManager.default.createFile(atPath: go, contents: Data())
        done.wait()
        let run = try #require(try result?.get())
        #expect(run.status == 0, "\(run.stderr)")
        try second.stop()
        try second.destroy()
        secondDestroyed = true
        let bt = try Tracing.run(URL(fileURLWithPath: "/usr/bin/babeltrace2"), ["--clock-cycles", "--no-delta", out.path],
                                 environment: ProcessInfo.processInfo.environment)
        #expect(bt.status == 0, "\(bt.stderr)")
        let events = try BabeltraceText.parse(bt.stdout).filter { $0["vpid"] == String(run.pid) }
        let entries = events.filter { $0.shortName == "block_entry" }
        #expect(entries.count == 60)
        var described = Set<String>()
        for e in events {
            if Self.isBlockInfo(e), let id = e["item_id"] { described.insert(id) }
            if e.shortName == "block_entry", let id = e["item_id"] { #expect(described.contains(id), "entry \(id) before any description of it") }
        }
        #expect(ConstantPools.resolve(events).filter { $0.shortName == "block_entry" }.map { $0["name"] ?? "?" }
                == Self.loggedBlocks(run, secondPhase: true))
    }
}
