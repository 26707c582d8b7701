import Foundation

/// Builds the `rltrace-diff/1` document from two reports (docs/diff-json.md).
public struct DiffBuilder {
    /// The significance level (default 0.01).
    public var alpha: Double
    /// How large a significant slow-down must be to count as a regression (practical significance):
    /// at least this much added time per second of run (ns/s, default 20 ms/s: 2 % of a thread)…
    public var minImpactNsPerSecond: Double
    /// …and at least this relative growth of the item's p50, p99 or time per second (default 0.25:
    /// +25 %). Two recordings of one configuration differ by more than chance allows (the machine's
    /// load moves every callout a little, and thousands of samples make any shift "significant");
    /// these floors keep such drift out of the regressions, while the figures and tests still show it.
    public var minChange: Double
    private let quantizer = DurationQuantizer()

    /// Creates a builder.
    public init(alpha: Double = 0.01, minImpactNsPerSecond: Double = 20_000_000, minChange: Double = 0.25) {
        self.alpha = alpha
        self.minImpactNsPerSecond = minImpactNsPerSecond
        self.minChange = minChange
    }

    /// The builder whose rules made `d` (its significance level and floors).
    public init(rulesOf d: TraceDiff) {
        self.init(alpha: d.alpha, minImpactNsPerSecond: d.minImpactNsPerSecond, minChange: d.minChange)
    }

    /// Whether a loop's busy change is large enough to count: at least the impact floor in busy
    /// share (20 ms/s is 2 points), the same floor an item's added time per second must pass.
    public func busyChangeMatters(_ l: LoopDiff) -> Bool {
        guard let c = l.busyRatio.change else { return false }
        return abs(c) * 1e9 >= minImpactNsPerSecond
    }

    /// Whether an item's change is a regression: significantly slower (or mixed) and large enough.
    public func isRegression(_ i: ItemDiff) -> Bool {
        guard i.test.direction == "slower" || i.test.direction == "mixed" else { return false }
        guard i.impactNsPerSecond >= minImpactNsPerSecond else { return false }
        func grew(_ f: FigureChange) -> Bool {
            guard let b = f.base, let n = f.new else { return false }
            return b > 0 ? (n - b) / b >= minChange : n > 0
        }
        return grew(i.p50Ns) || grew(i.p99Ns) || grew(i.timePerSecondNs)
    }

    /// The run a loop's rates are per second of: its host's span in a report of several hosts
    /// (hosts' runs are not one run), else the trace's.
    func runSpan(of l: LoopReport?, in r: Report) -> Int64 {
        if let l, let h = r.trace.hosts?.first(where: { $0.name == l.host }) { return h.endNs - h.beginNs }
        return r.trace.endNs - r.trace.beginNs
    }

    /// Compares `base` with `new`; `baseInput`/`newInput` describe where they came from.
    public func diff(base: Report, new: Report, baseInput: DiffInput, newInput: DiffInput) -> TraceDiff {
        var loops: [LoopDiff] = []
        for (b, n) in matchLoops(base.loops, new.loops) {
            loops.append(loopDiff(b, n, baseSpan: runSpan(of: b, in: base), newSpan: runSpan(of: n, in: new)))
        }
        let order = ["both": 0, "added": 1, "removed": 2]
        loops.sort { (order[$0.status]!, $0.procname, $0.threadName, $0.newLoop ?? $0.baseLoop ?? 0) < (order[$1.status]!, $1.procname, $1.threadName, $1.newLoop ?? $1.baseLoop ?? 0) }
        var regressions: [RegressionRef] = []
        for l in loops {
            for i in l.items where isRegression(i) {
                regressions.append(RegressionRef(procname: l.procname, threadName: l.threadName, kind: i.kind, name: i.name,
                                                 impactNsPerSecond: i.impactNsPerSecond, direction: i.test.direction, pValue: i.test.pValue ?? 1))
            }
        }
        regressions.sort { $0.impactNsPerSecond > $1.impactNsPerSecond }
        var notes: [String] = []
        for (label, input) in [("BASE", baseInput), ("NEW", newInput)] where !input.distributions {
            notes.append("\(label) (\(input.path)) is a report without distributions: duration changes are shown but their significance is n/a (write it with `rltrace report --format json --distributions`, or give the trace)")
        }
        for (label, input) in [("BASE", baseInput), ("NEW", newInput)] where !input.warnings.isEmpty {
            notes.append("\(label) has warnings: " + input.warnings.joined(separator: "; "))
        }
        return TraceDiff(base: baseInput, new: newInput, alpha: alpha, minImpactNsPerSecond: minImpactNsPerSecond, minChange: minChange,
                         loops: loops, regressions: regressions, failOn: nil, notes: notes)
    }

    /// Pairs loops by (procname, threadName) — and host, when both sides span several hosts (a fleet
    /// against a fleet; one host's trace against another host's pairs by process and thread);
    /// within a group, equal loop ids first, then in loop-id order.
    func matchLoops(_ base: [LoopReport], _ new: [LoopReport]) -> [(LoopReport?, LoopReport?)] {
        struct Key: Hashable { var h: String?, p: String, t: String }
        let byHost = Set(base.map(\.host)).count > 1 && Set(new.map(\.host)).count > 1
        var groups: [Key: ([LoopReport], [LoopReport])] = [:]
        for l in base { groups[Key(h: byHost ? l.host : nil, p: l.procname, t: l.threadName), default: ([], [])].0.append(l) }
        for l in new { groups[Key(h: byHost ? l.host : nil, p: l.procname, t: l.threadName), default: ([], [])].1.append(l) }
        var out: [(LoopReport?, LoopReport?)] = []
        for (_, g) in groups {
            var b = g.0.sorted { $0.loop < $1.loop }, n = g.1.sorted { $0.loop < $1.loop }
            if b.count > 1 || n.count > 1 {
                for x in b { if let j = n.firstIndex(where: { $0.loop == x.loop }) { out.append((x, n.remove(at: j))); b.removeAll { $0.loop == x.loop && $0.pid == x.pid } } }
            }
            for i in 0..<max(b.count, n.count) { out.append((i < b.count ? b[i] : nil, i < n.count ? n[i] : nil)) }
        }
        return out
    }

    func loopDiff(_ b: LoopReport?, _ n: LoopReport?, baseSpan: Int64, newSpan: Int64) -> LoopDiff {
        // Rates and impact are per second of the run (the trace's span): a loop's own span ends at
        // its last event, which says when it went idle, not how long the service ran.
        let bs = seconds(baseSpan, fallback: b?.spanNs ?? 0), ns = seconds(newSpan, fallback: n?.spanNs ?? 0)
        func f(_ x: (LoopReport) -> Double, nb: Int = 1, nn: Int = 1) -> FigureChange {
            FigureChange(base: b.map(x), new: n.map(x), nBase: b == nil ? 0 : nb, nNew: n == nil ? 0 : nn)
        }
        let itB = b?.topLevelIterations ?? 0, itN = n?.topLevelIterations ?? 0
        var wakes: [String: FigureChange] = [:]
        for reason in Set(b?.wakeReasons.keys.map { $0 } ?? []).union(n?.wakeReasons.keys.map { $0 } ?? []) {
            let cb = b?.wakeReasons[reason] ?? 0, cn = n?.wakeReasons[reason] ?? 0
            wakes[reason] = FigureChange(base: b.map { _ in Double(cb) / bs }, new: n.map { _ in Double(cn) / ns }, nBase: cb, nNew: cn)
        }
        func iterations(_ l: LoopReport?) -> [(value: Int64, count: Int)]?? { l.map { .some(histogramSample($0.iterationHistogram)) } }
        let busyTest = test(iterations(b), iterations(n), tail: true,
                            missing: "the loop is on one side only")
        return LoopDiff(
            procname: n?.procname ?? b?.procname ?? "", threadName: n?.threadName ?? b?.threadName ?? "",
            status: b == nil ? "added" : (n == nil ? "removed" : "both"),
            baseLoop: b?.loop, newLoop: n?.loop, basePid: b?.pid, newPid: n?.pid, baseTid: b?.tid, newTid: n?.tid,
            spanNs: f { Double($0.spanNs) }, iterations: f({ Double($0.iterations) }, nb: itB, nn: itN),
            iterationsPerSecond: FigureChange(base: b.map { Double($0.iterations) / bs }, new: n.map { Double($0.iterations) / ns }, nBase: b?.iterations ?? 0, nNew: n?.iterations ?? 0),
            busyRatio: f({ $0.busyRatio }, nb: itB, nn: itN), busyTest: busyTest,
            callouts: f({ Double($0.callouts) }, nb: b?.callouts ?? 0, nn: n?.callouts ?? 0),
            wakeReasonsPerSecond: wakes, timerLateness: latencyDiffs(b?.timerLateness, n?.timerLateness),
            hangs: f({ Double($0.hangs.count) }, nb: itB, nn: itN), spins: f({ Double($0.spins.count) }, nb: itB, nn: itN),
            items: itemDiffs(b, n, baseSeconds: bs, newSeconds: ns))
    }

    /// Items of one side merged by (kind, name).
    struct Merged {
        var ids: [UInt64] = [], count = 0, total: Int64 = 0, max: Int64 = 0
        var p50: Int64?, p99: Int64?
        var sample: [(value: Int64, count: Int)]? = []
        init() {}
        init(_ items: [ItemReport], quantizer: DurationQuantizer) {
            for i in items {
                ids.append(i.item); count += i.count; total += i.totalNs; max = Swift.max(max, i.maxNs)
                if let d = i.distribution { sample? += d.compactMap { $0.count == 2 ? (value: $0[0], count: Int($0[1])) : nil } } else { sample = nil }
            }
            ids.sort()
            if items.count == 1 { p50 = items[0].p50Ns; p99 = items[0].p99Ns }
            if let s = sample { sample = quantizer.quantize(s); if items.count > 1 { p50 = nearestRank(sample!, 50); p99 = nearestRank(sample!, 99) } }
        }
    }

    func itemDiffs(_ b: LoopReport?, _ n: LoopReport?, baseSeconds bs: Double, newSeconds ns: Double) -> [ItemDiff] {
        struct Key: Hashable { var kind: String, name: String }
        let gb = Dictionary(grouping: b?.items ?? [], by: { Key(kind: $0.kind, name: $0.name) })
        let gn = Dictionary(grouping: n?.items ?? [], by: { Key(kind: $0.kind, name: $0.name) })
        var out: [ItemDiff] = []
        for k in Set(gb.keys).union(gn.keys) {
            let mb = gb[k].map { Merged($0, quantizer: quantizer) }, mn = gn[k].map { Merged($0, quantizer: quantizer) }
            let cb = mb?.count ?? 0, cn = mn?.count ?? 0
            func f(_ x: (Merged) -> Double?) -> FigureChange {
                FigureChange(base: mb.flatMap(x), new: mn.flatMap(x), nBase: cb, nNew: cn)
            }
            let t = test(mb.map { $0.sample }, mn.map { $0.sample }, tail: true, missing: "the item is on one side only")
            let impact = (mn.map { Double($0.total) / ns } ?? 0) - (mb.map { Double($0.total) / bs } ?? 0)
            out.append(ItemDiff(
                kind: k.kind, name: k.name, status: mb == nil ? "added" : (mn == nil ? "removed" : "both"),
                baseItems: mb?.ids ?? [], newItems: mn?.ids ?? [],
                count: f { Double($0.count) }, ratePerSecond: FigureChange(base: mb.map { Double($0.count) / bs }, new: mn.map { Double($0.count) / ns }, nBase: cb, nNew: cn),
                p50Ns: f { $0.p50.map(Double.init) }, p90Ns: f { $0.sample.map { Double(nearestRank($0, 90)) } },
                p99Ns: f { $0.p99.map(Double.init) }, maxNs: f { Double($0.max) },
                totalNs: f { Double($0.total) },
                timePerSecondNs: FigureChange(base: mb.map { Double($0.total) / bs }, new: mn.map { Double($0.total) / ns }, nBase: cb, nNew: cn),
                impactNsPerSecond: impact, test: t,
                baseHistogram: mb?.sample.map(log2Histogram), newHistogram: mn?.sample.map(log2Histogram)))
        }
        return out.sorted { ($0.impactNsPerSecond, $1.kind, $1.name) > ($1.impactNsPerSecond, $0.kind, $0.name) }
    }

    /// The tests of an item's durations, `new` against `base` (docs/diff-json.md, "Significance").
    public func changeTest(base: [(value: Int64, count: Int)], new: [(value: Int64, count: Int)]) -> ChangeTest {
        test(.some(.some(base)), .some(.some(new)), tail: true, missing: "")
    }

    /// Both tests (or Mann–Whitney only), NEW against BASE, with the verdict at `alpha`.
    func test(_ base: [(value: Int64, count: Int)]??, _ new: [(value: Int64, count: Int)]??, tail: Bool, missing: String) -> ChangeTest {
        guard let bo = base, let no = new else { return ChangeTest(available: false, reason: missing, direction: "none") }
        guard let b = bo, let n = no else {
            return ChangeTest(available: false, reason: "no distribution: a report written without --distributions", direction: "none")
        }
        let mw = mannWhitneyU(n, b)
        let tests = tail ? 3.0 : 1.0
        var slower = false, faster = false
        if mw.pValue * tests < alpha { if mw.effect > 0.5 { slower = true } else if mw.effect < 0.5 { faster = true } }
        var tt: TailTestResult?, tm: TailTestResult?
        var p = mw.pValue
        if tail {
            // Above BASE's p99 and above its maximum (docs/diff-json.md, "Significance").
            let r = upperTailTest(n, b)
            tt = r
            p = min(p, r.pValue)
            if r.pValue * tests < alpha { if r.pHeavier < r.pLighter { slower = true } else { faster = true } }
            // Beyond BASE's maximum, one-sided: NEW values above everything BASE had (fewer of them
            // says nothing a test of the bulk does not).
            let m = upperTailTest(n, b, percentile: 100)
            tm = m
            p = min(p, m.pHeavier)
            if m.pHeavier * tests < alpha { slower = true }
        }
        return ChangeTest(available: true, mannWhitney: mw, tail: tt, tailMax: tm, pValue: min(1, p * tests),
                          direction: slower && faster ? "mixed" : slower ? "slower" : faster ? "faster" : "none")
    }

    func latencyDiffs(_ b: [ItemLatency]?, _ n: [ItemLatency]?) -> [LatencyDiff] {
        let gb = Dictionary(grouping: b ?? [], by: \.name), gn = Dictionary(grouping: n ?? [], by: \.name)
        return Set(gb.keys).union(gn.keys).sorted().map { name in
            let xb = gb[name], xn = gn[name]
            let cb = xb?.reduce(0) { $0 + $1.count } ?? 0, cn = xn?.reduce(0) { $0 + $1.count } ?? 0
            // Percentiles of several timers with one name cannot be merged: only a single one's are given.
            func f(_ x: (ItemLatency) -> Int64, merge: Bool = false) -> FigureChange {
                func side(_ l: [ItemLatency]?) -> Double? { l.flatMap { $0.count == 1 || merge ? Double($0.map(x).max()!) : nil } }
                return FigureChange(base: side(xb), new: side(xn), nBase: cb, nNew: cn)
            }
            return LatencyDiff(name: name, status: xb == nil ? "added" : (xn == nil ? "removed" : "both"),
                               count: FigureChange(base: xb.map { _ in Double(cb) }, new: xn.map { _ in Double(cn) }, nBase: cb, nNew: cn),
                               p50Ns: f { $0.p50Ns }, p99Ns: f { $0.p99Ns }, maxNs: f({ $0.maxNs }, merge: true))
        }
    }
}

func seconds(_ ns: Int64, fallback: Int64) -> Double {
    let s = Double(ns > 0 ? ns : fallback) / 1e9
    return s > 0 ? s : 1e-9
}

/// A log2-bucket histogram (`"k": count`) as a sample: each bucket one tied value.
func histogramSample(_ h: [String: Int]) -> [(value: Int64, count: Int)] {
    h.compactMap { k, v in Int64(k).map { (value: $0, count: v) } }.sorted { $0.value < $1.value }
}

/// A sample's log2-bucket histogram (`"k": count`).
func log2Histogram(_ s: [(value: Int64, count: Int)]) -> [String: Int] {
    var d: [String: Int] = [:]
    for (v, c) in s { d[String(log2Bucket(v)), default: 0] += c }
    return d
}
