import Foundation
import Testing
import RLAnalysis

/// How the loop model names perform-blocks (docs/tracepoints.md, "Constant pools"), on hand-made
/// events: an entry whose item is a pooled name's id (bit 47) takes that id's description, from any
/// loop of the process, for every block of it; an older trace's description (its block's own
/// number) names the next entry of that id only; a pooled name described while its block runs
/// names it at its exit.
@Suite("loop model: block names from the block-name pool and from older traces")
struct BlockNamePoolTests {
    final class Names: LoopModelSink {
        var model: LoopModel?
        var named: [String] = []
        func callout(_ c: CalloutRecord, of key: LoopKey) { named.append("\(key.loop & 0xFFFF_FFFF) \(model!.name(of: c, pid: key.pid))") }
    }

    static let pid: Int64 = 4242
    static func pooled(_ n: UInt64) -> UInt64 { (1 << 47) | (UInt64(pid) << 24) | n }

    func run(_ build: (NameTable) -> [RunLoopEvent]) -> [String] {
        let names = NameTable()
        let sink = Names()
        let model = LoopModel(sink: sink, names: names)
        sink.model = model
        for e in build(names) { model.consume(e) }
        return sink.named
    }

    static func event(_ kind: RunLoopEvent.Kind, _ ts: Int64, loop: UInt64, item: UInt64 = 0, name: Int32 = -1) -> RunLoopEvent {
        var e = RunLoopEvent(kind: kind, ts: ts)
        e.pid = pid
        e.loop = (UInt64(pid) << 32) | loop
        e.calloutKind = .block
        e.item = item
        e.name = name
        return e
    }
    static func block(_ ts: Int64, loop: UInt64, item: UInt64) -> [RunLoopEvent] {
        [event(.calloutEntry, ts, loop: loop, item: item), event(.calloutExit, ts + 5, loop: loop, item: RunLoopEvent.innermost)]
    }

    @Test func pooledNamesNameEveryBlockOfTheirIdInEveryLoopOfTheProcess() {
        let named = run { names in
            [Self.event(.itemInfo, 10, loop: 1, item: Self.pooled(1), name: names.intern("job"))]
                + Self.block(20, loop: 1, item: Self.pooled(1)) + Self.block(30, loop: 2, item: Self.pooled(1))
                + Self.block(40, loop: 1, item: Self.pooled(1))
                // Never described in this trace: no name, as an item never described.
                + Self.block(50, loop: 2, item: Self.pooled(2))
        }
        #expect(named == ["1 job", "2 job", "1 job", "2 "])
    }

    @Test func anOlderTracesDescriptionNamesTheNextEntryOfItsIdOnly() {
        let named = run { names in
            [Self.event(.itemInfo, 10, loop: 1, item: 500, name: names.intern("old"))]
                + Self.block(20, loop: 1, item: 500) + Self.block(30, loop: 1, item: 500) + Self.block(40, loop: 1, item: 501)
        }
        #expect(named == ["1 old", "1 (unnamed)", "1 (unnamed)"])
    }

    @Test func aPooledNameDescribedAfterItsBlocksNamesThemAll() {
        // The oldest part of a snapshot's ring: blocks of a name, then (after a hang began) the
        // name's description. A block's name is the pool's, read when the figures are written.
        final class Keep: LoopModelSink { var all: [CalloutRecord] = []; func callout(_ c: CalloutRecord, of key: LoopKey) { all.append(c) } }
        let names = NameTable(), keep = Keep()
        let model = LoopModel(sink: keep, names: names)
        for e in Self.block(10, loop: 1, item: Self.pooled(4)) + Self.block(20, loop: 1, item: Self.pooled(4))
                + [Self.event(.itemInfo, 30, loop: 2, item: Self.pooled(4), name: names.intern("early"))] {
            model.consume(e)
        }
        #expect(keep.all.count == 2 && keep.all.allSatisfy { model.name(of: $0, pid: Self.pid) == "early" })
    }

    @Test func aPooledNameDescribedWhileItsBlockRunsNamesItAtItsExit() {
        let named = run { names in
            [Self.event(.calloutEntry, 10, loop: 1, item: Self.pooled(3)),
             Self.event(.itemInfo, 20, loop: 2, item: Self.pooled(3), name: names.intern("late")),
             Self.event(.calloutExit, 30, loop: 1, item: RunLoopEvent.innermost)]
                + Self.block(40, loop: 1, item: Self.pooled(3))
        }
        #expect(named == ["1 late", "1 late"])
    }
}
