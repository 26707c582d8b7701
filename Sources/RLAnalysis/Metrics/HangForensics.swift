/// A hang as the program's watchdog reported it (`runloop:hang_begin`, `runloop:hang_end`).
public struct WatchdogHang: Codable, Sendable {
    /// The hang's id (process-unique).
    public var hangId: UInt64
    /// The watchdog's threshold (ns).
    public var thresholdNs: Int64
    /// When the watchdog noticed (`hang_begin`), and since when the loop had been stuck then.
    public var detectedNs: Int64, stuckSinceNs: Int64
    /// What the loop was in: callout kind label (`loop`: between callouts), item, name.
    public var kind: String, item: UInt64, name: String
    /// The hung loop's thread.
    public var tid: Int64
    /// How long the loop was stuck and when it got going (`hang_end`; absent when the trace ends
    /// first, e.g. a snapshot taken while it hung).
    public var durationNs: Int64? = nil, endNs: Int64? = nil
    /// Stack samples in the trace, and how many the watchdog says it took (`hang_end.samples`).
    public var samples: Int, samplesTaken: Int64? = nil
}

/// Consecutive stack samples of a hang with the same frames, counted once.
public struct StackSampleGroup: Codable, Sendable {
    /// First and last sample numbers of the run, and how many samples it holds.
    public var firstSample: Int64, lastSample: Int64, count: Int
    /// How long the loop had been stuck at the first and the last of them (ns).
    public var firstElapsedNs: Int64, lastElapsedNs: Int64
    /// Time of the first sample (CLOCK_MONOTONIC ns).
    public var firstNs: Int64
    /// The frames, innermost first (inlined code as frames of their own).
    public var frames: [StackFrame]
}

/// Gathers the watchdog's events per hang and joins them to the hangs found from iteration
/// durations: a watchdog hang detected inside an iteration that is itself a hang is that hang
/// (one entry, with the watchdog's view and stacks added); otherwise it is a hang of its own
/// (whatever `--hang-threshold`: the program's threshold decided). Keyed by (pid, loop, hang id),
/// so a hang whose events two overlapping traces both hold is still one hang.
final class WatchdogCollector {
    private struct Key: Hashable { var pid: Int64; var loop: UInt64; var hang: UInt64 }
    private struct Hang {
        var begin: HangBeginRecord?
        var stacks: [Int64: HangStackRecord] = [:]
        var end: HangEndRecord?
        var order: Int
        var lastTs: Int64 = .min
    }
    private var hangs: [Key: Hang] = [:]

    /// Whether any watchdog event was seen.
    var isEmpty: Bool { hangs.isEmpty }

    func add(_ r: HangEventRecord, of loop: LoopKey) {
        let id: UInt64, ts: Int64
        switch r {
        case .begin(let b): id = b.hangID; ts = b.ts
        case .stack(let s): id = s.hangID; ts = s.ts
        case .end(let e): id = e.hangID; ts = e.ts
        }
        let k = Key(pid: loop.pid, loop: loop.loop, hang: id)
        var h = hangs[k] ?? Hang(order: hangs.count)
        switch r {
        case .begin(let b): if h.begin == nil { h.begin = b }
        case .stack(let s): if h.stacks[s.sample] == nil { h.stacks[s.sample] = s }
        case .end(let e): if h.end == nil { h.end = e }
        }
        h.lastTs = max(h.lastTs, ts)
        hangs[k] = h
    }

    /// `found` (hangs of loop `key` from iteration durations) with the loop's watchdog hangs joined in.
    func merge(_ found: [HangReport], key: LoopKey, symbolizer: StackSymbolizer?) -> [HangReport] {
        let mine = hangs.filter { $0.key.pid == key.pid && $0.key.loop == key.loop }.sorted { $0.value.order < $1.value.order }
        guard !mine.isEmpty else { return found }
        var out = found
        var added = false
        // Stacks: consecutive identical samples grouped, then every group of the loop resolved in one batch.
        var groups: [[StackSampleGroup]] = []
        var raw: [(pid: Int64, ts: Int64, addresses: [UInt64])] = []
        for (_, h) in mine {
            var g: [StackSampleGroup] = []
            for s in h.stacks.values.sorted(by: { $0.sample < $1.sample }) {
                if let last = g.last, last.lastSample + 1 == s.sample, raw[raw.count - 1].addresses == s.frames {
                    g[g.count - 1].lastSample = s.sample
                    g[g.count - 1].count += 1
                    g[g.count - 1].lastElapsedNs = s.elapsedNs
                    continue
                }
                g.append(StackSampleGroup(firstSample: s.sample, lastSample: s.sample, count: 1, firstElapsedNs: s.elapsedNs,
                                          lastElapsedNs: s.elapsedNs, firstNs: s.ts, frames: []))
                raw.append((key.pid, s.ts, s.frames))
            }
            groups.append(g)
        }
        let resolved = symbolizer?.frames(raw) ?? raw.map { $0.addresses.map { StackFrame(address: hex($0), unresolved: "not symbolized") } }
        var next = 0
        for (i, (k, h)) in mine.enumerated() {
            for j in groups[i].indices { groups[i][j].frames = resolved[next]; next += 1 }
            let b = h.begin
            let detected = b?.ts ?? h.stacks.values.map(\.ts).min() ?? h.end?.ts ?? 0
            let since = b.map { $0.ts &- $0.elapsedNs } ?? h.end.map { $0.ts &- $0.durationNs } ?? detected
            var w = WatchdogHang(hangId: k.hang, thresholdNs: b?.thresholdNs ?? 0, detectedNs: detected, stuckSinceNs: since,
                                 kind: b?.kind ?? "", item: b?.item ?? 0, name: b?.name ?? "", tid: b?.loopTid ?? -1,
                                 samples: h.stacks.count)
            if let e = h.end { w.durationNs = e.durationNs; w.endNs = e.ts; w.samplesTaken = e.samples }
            let stacks = groups[i].isEmpty ? nil : groups[i]
            if let at = out.firstIndex(where: { $0.watchdog == nil && $0.beginNs <= detected && detected <= $0.beginNs &+ $0.durationNs }) {
                out[at].watchdog = w
                out[at].stacks = stacks
                continue
            }
            let duration = w.durationNs ?? max(0, h.lastTs &- since)
            let culprit = w.kind.isEmpty || w.kind == "loop" ? nil : CalloutRef(kind: w.kind, item: w.item, name: w.name, durationNs: duration)
            var r = HangReport(iteration: b?.iteration ?? h.end?.iteration ?? 0, beginNs: since, durationNs: duration, busyNs: duration, culprit: culprit)
            r.watchdog = w
            r.stacks = stacks
            out.append(r)
            added = true
        }
        if added { out.sort { $0.beginNs < $1.beginNs } }
        return out
    }
}
