import Foundation
import Testing
import CTFReader
import RLAnalysis
import RunLoopSchema

/// An open iteration lists at most ``LoopModel/calloutLimit`` callouts and summarizes the rest
/// (``CalloutOverflow``): the figures every reader takes from an iteration are the same as from the
/// whole list. A differential property test: random iterations (callouts of every kind, a few items,
/// random durations, sleeps between them, nested runs, time windows cutting them) through two
/// models, one listing everything and one listing 0, 1, 3 or 7 callouts, compared iteration by
/// iteration.
@Suite("loop model: an iteration's callouts past the limit are summarized, with the same figures")
struct CalloutOverflowTests {
    static let pid: Int64 = 91

    static func event(_ kind: RunLoopEvent.Kind, _ ts: Int64, iteration: UInt64 = 0, calloutKind: RLCalloutKind = .block,
                      item: UInt64 = 0, a: Int64 = 0, b: Int64 = 0) -> RunLoopEvent {
        loopEvent(kind, ts, pid: pid, iteration: iteration, calloutKind: calloutKind, item: item, a: a, b: b)
    }

    /// What the readers take from one iteration.
    struct Figures: Equatable, CustomStringConvertible {
        var number: UInt64
        var count: Int
        var culprit: [Int64]                // kind, item, begin, whole duration
        var longest: [[Int64]]              // kind, item, begin, duration
        var firstWork: [Int64?]
        var items: [[Int64]]                // kind, item (a block: its name), count, total (non-observers), sorted
        var selected: [Bool]
        var lateTimers: [[Int64]]           // item, largest lateness, sorted
        var description: String { "#\(number) count \(count) culprit \(culprit) longest \(longest) first \(firstWork) items \(items) selected \(selected) late \(lateTimers)" }
    }

    final class Recorder: LoopModelSink {
        var figures: [Figures] = []
        var maxListed = 0
        func iteration(_ it: IterationRecord, of loop: LoopInfo) {
            maxListed = max(maxListed, it.callouts.count)
            func row(_ c: CalloutRecord, _ d: Int64) -> [Int64] { [Int64(c.kind.rawValue), Int64(bitPattern: c.item), c.begin, d] }
            // Items as the report counts them: a block is one item per name.
            func key(_ c: CalloutRecord) -> [Int64] { [Int64(c.kind.rawValue), c.namedByItem ? Int64(bitPattern: c.item) : -1 - Int64(c.blockName)] }
            var tallies: [[Int64]: (Int64, Int64)] = [:]
            var late: [Int64: Int64] = [:]
            for c in it.callouts {
                if c.kind != .observer { let k = key(c); let t = tallies[k] ?? (0, 0); tallies[k] = (t.0 + 1, t.1 + c.duration) }
                if c.kind == .timer && !c.clipped { late[Int64(bitPattern: c.item)] = max(late[Int64(bitPattern: c.item)] ?? -1, max(0, c.begin - c.detail)) }
            }
            for x in it.overflow?.byItem ?? [] {
                let c = x.longest
                if c.kind != .observer { let k = key(c); let t = tallies[k] ?? (0, 0); tallies[k] = (t.0 + Int64(x.count), t.1 + x.totalNs) }
                if c.kind == .timer && x.maxLateNs >= 0 { late[Int64(bitPattern: c.item)] = max(late[Int64(bitPattern: c.item)] ?? -1, x.maxLateNs) }
            }
            // Selections of the timeline's shape: a kind, an item, a minimum whole duration.
            let selections: [(CalloutRecord) -> Bool] = [
                { $0.kind == .timer }, { $0.kind == .timer && $0.item == 3 }, { $0.kind == .source0 && $0.item != 1 }, { $0.wholeDurationNs >= 40_000 },
                { $0.kind == .block && $0.wholeDurationNs >= 25_000 }, { $0.kind == .source1 && $0.item == 2 },
            ]
            figures.append(Figures(
                number: it.number, count: it.calloutCount,
                culprit: it.longestCallout.map { row($0, $0.wholeDurationNs) } ?? [],
                longest: it.longestCallouts(8).map { row($0, $0.duration) },
                firstWork: it.sleeps.indices.map { it.firstWorkBegin(afterSleep: $0) },
                items: tallies.map { $0.key + [$0.value.0, $0.value.1] }.sorted { $0.lexicographicallyPrecedes($1) },
                selected: selections.map { s in it.hasCallout(where: s) },
                lateTimers: late.filter { $0.value >= 0 }.map { [$0.key, $0.value] }.sorted { $0.lexicographicallyPrecedes($1) }))
        }
    }

    /// Random iterations: callouts of every kind on items 1–4 (durations 1–50 µs, a few equal),
    /// sleeps between them, now and then a nested run of two iterations inside a block.
    static func randomEvents(seed: UInt64, iterations: Int) -> [RunLoopEvent] {
        var rng = SplitMix(state: seed)
        var e: [RunLoopEvent] = []
        var t: Int64 = 1_000_000
        var number: UInt64 = 0
        func callouts(_ n: Int, iteration: UInt64) {
            for _ in 0..<n {
                let kind = RLCalloutKind(rawValue: UInt8(rng.below(6)))!
                let item = UInt64(rng.below(4) + 1)
                let d = Int64(rng.below(5) == 0 ? 20_000 : 1_000 + rng.below(49_000))
                let due = t - Int64(rng.below(3_000_000))
                e.append(event(.calloutEntry, t, calloutKind: kind, item: item, a: kind == .timer ? due : 0))
                e.append(event(.calloutExit, t + d, calloutKind: kind, item: RunLoopEvent.innermost))
                t += d + Int64(rng.below(2_000))
            }
        }
        for _ in 0..<iterations {
            number += 1
            let outer = number
            e.append(event(.iterationBegin, t, iteration: outer))
            t += 500
            for part in 0..<(1 + rng.below(3)) {
                if part > 0 {
                    e.append(event(.sleepBegin, t, iteration: outer))
                    t += Int64(1_000 + rng.below(100_000))
                    e.append(event(.wake, t, iteration: outer, b: Int64(1 + rng.below(5))))
                    t += 300
                }
                callouts(rng.below(12), iteration: outer)
                if rng.below(6) == 0 {
                    // A block running a nested run of two iterations.
                    e.append(event(.calloutEntry, t, calloutKind: .block, item: 4))
                    e.append(event(.runEnter, t + 100, b: 1))
                    t += 200
                    for _ in 0..<2 {
                        number += 1
                        e.append(event(.iterationBegin, t, iteration: number))
                        t += 100
                        callouts(rng.below(6), iteration: number)
                        e.append(event(.iterationEnd, t, iteration: number))
                        t += 100
                    }
                    e.append(event(.runExit, t, b: 1))
                    e.append(event(.calloutExit, t + 100, calloutKind: .block, item: RunLoopEvent.innermost))
                    t += 200
                }
            }
            e.append(event(.iterationEnd, t, iteration: outer))
            t += 1_000
        }
        return e
    }

    static func run(_ events: [RunLoopEvent], limit: Int, window: (Int64, Int64)? = nil) -> Recorder {
        let r = Recorder()
        let model = LoopModel(sink: r, names: NameTable())
        model.calloutLimit = limit
        if let window { model.setWindow(lo: window.0, hi: window.1) }
        r.traceBegins(at: events[0].ts, epochOffset: 0)
        for x in events { model.consume(x) }
        return r
    }

    @Test("random iterations: the same figures whatever the limit, and never more listed than it", arguments: [0, 1, 3, 7])
    func sameFiguresAnyLimit(limit: Int) {
        for seed in UInt64(1)...40 {
            let events = Self.randomEvents(seed: seed, iterations: 60)
            let lo = events[events.count / 3].ts + 7, hi = events[2 * events.count / 3].ts - 7
            for window in [nil, (lo, hi)] as [(Int64, Int64)?] {
                let whole = Self.run(events, limit: .max, window: window)
                let capped = Self.run(events, limit: limit, window: window)
                #expect(capped.maxListed <= limit)
                #expect(whole.figures.count == capped.figures.count)
                for (a, b) in zip(whole.figures, capped.figures) where a != b {
                    Issue.record("seed \(seed) window \(String(describing: window)) limit \(limit):\n whole  \(a)\n capped \(b)")
                    return
                }
            }
        }
    }

    @Test("an iteration of 200 000 blocks lists 4 096 (the default) and summarizes the rest")
    func burstOfBlocks() {
        var events = [Self.event(.iterationBegin, 1_000, iteration: 1)]
        var t: Int64 = 2_000
        for k in 0..<200_000 {
            events.append(Self.event(.calloutEntry, t, item: UInt64(k % 3 + 1)))
            let d: Int64 = k == 150_000 ? 9_000_000 : 300
            events.append(Self.event(.calloutExit, t + d, item: RunLoopEvent.innermost))
            t += d + 100
        }
        events.append(Self.event(.iterationEnd, t, iteration: 1))
        let r = Self.run(events, limit: LoopModel(sink: Recorder(), names: NameTable()).calloutLimit)
        #expect(r.maxListed == 4_096)
        #expect(r.figures.count == 1)
        let f = r.figures[0]
        #expect(f.count == 200_000)
        // The 9 ms block (the 150 001st callout) is the culprit and the longest.
        #expect(f.culprit == [Int64(RLCalloutKind.block.rawValue), 1, 2_000 + 150_000 * 400, 9_000_000])
        #expect(f.longest.first == f.culprit)
        // Blocks are one item per name (here all unnamed): one item of 200 000.
        #expect(f.items.map { $0[2] } == [200_000])
    }

    @Test("the timeline's line counts the callouts past the limit and flags their late timers")
    func timelineLine() {
        var events = [Self.event(.iterationBegin, 1_000, iteration: 1)]
        var t: Int64 = 2_000
        for k in 0..<10 {
            events.append(Self.event(.calloutEntry, t, item: UInt64(k + 1)))
            events.append(Self.event(.calloutExit, t + 1_000, item: RunLoopEvent.innermost))
            t += 2_000
        }
        // A timer 15 ms late (the LATE threshold: 10 ms), past the limit.
        events.append(Self.event(.calloutEntry, t + 15_000_000, calloutKind: .timer, item: 42, a: t))
        events.append(Self.event(.calloutExit, t + 15_001_000, calloutKind: .timer, item: RunLoopEvent.innermost))
        events.append(Self.event(.iterationEnd, t + 15_002_000, iteration: 1))
        let out = ByteSink()
        let timeline = TimelineSink(out: out)
        let model = LoopModel(sink: timeline, names: NameTable())
        model.calloutLimit = 4
        timeline.resolver = model
        timeline.traceBegins(at: events[0].ts, epochOffset: 0)
        for x in events { model.consume(x) }
        timeline.finish(end: events.last!.ts)
        let line = out.text.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("#1 ") }.map(String.init) ?? ""
        #expect(line.contains("+7 more callouts"), "\(out.text)")
        #expect(line.hasSuffix("+7 more callouts  ◀ LATE  +15ms"), "\(line)")
        #expect(line.components(separatedBy: "block(").count - 1 == 4, "\(line)")
    }
}

