import CTFReader
import RunLoopSchema
/// `rltrace histogram`: per group, the distribution of one quantity, accumulated as the trace is
/// read (an HdrHistogram and exact log2 bucket counts per group: memory bounded by the number of
/// groups, not the trace), rendered as terminal bars with bounds, counts and percentiles.
public final class HistogramSink: LoopModelSink, NameResolving {
    /// What is histogrammed.
    public enum Quantity: String, Sendable, CaseIterable {
        /// Sleep durations.
        case sleep
        /// Busy time of top-level iterations.
        case iteration
        /// Callout durations.
        case callout
        /// wakeUp → wake.
        case wakeLatency = "wake-latency"
        /// Timer lateness.
        case timerLateness = "timer-lateness"
        /// source0 signal → perform.
        case signalLatency = "signal-latency"
    }
    /// How values are grouped.
    public enum Grouping: String, Sendable, CaseIterable {
        /// One group.
        case none
        /// By wake reason (sleep).
        case reason
        /// By callout kind (callout).
        case kind
        /// By item name (callout, timer-lateness, signal-latency).
        case item
        /// By loop.
        case loop
    }
    /// Bucket scale.
    public enum Scale: String, Sendable, CaseIterable {
        /// Powers of two.
        case log2
        /// Equal-width buckets between the smallest and largest value.
        case linear
    }

    struct Key: Hashable { var pid: Int64; var a: UInt64; var b: Int32 }
    struct Group {
        var acc = DurationAccumulator()
        var log2 = [Int](repeating: 0, count: 64)
    }

    /// The model, for names.
    public var resolver: LoopModel?
    private let of: Quantity, by: Grouping
    private let lo: Int64, hi: Int64
    /// The groups, in order of first value, and each key's index among them.
    private var groupList: [Group] = []
    private var groupKeys: [Key] = []
    private var groupIndex: [Key: Int] = [:]
    /// A direct-mapped cache in front of `groupIndex`: a histogram has few groups, each taking many
    /// values, so a value usually finds its group with one compare instead of hashing its key
    /// (≈ 500 instructions per callout for `--of callout`, two lookups each).
    private var groupCache = [(key: Key, index: Int)](repeating: (Key(pid: .min, a: 0, b: .min), -1), count: 64)
    /// A histogram of `of` grouped `by`, keeping values in `[lo, hi]` (which callouts, loops and
    /// times count is the pipeline's selection).
    public init(of: Quantity, by: Grouping, lo: Int64, hi: Int64) {
        self.of = of; self.by = by; self.lo = lo; self.hi = hi
    }

    @inline(__always)
    private func add(_ k: Key, _ v: Int64) {
        guard v >= lo && v <= hi else { return }
        let i = group(k)
        groupList[i].acc.add(v)
        groupList[i].log2[log2Bucket(v)] += 1
    }

    /// The index of group `k` in `groupList` (made on first sight).
    @inline(__always)
    private func group(_ k: Key) -> Int {
        let slot = Int(truncatingIfNeeded: ((k.a ^ UInt64(bitPattern: k.pid) ^ (UInt64(UInt32(bitPattern: k.b)) << 40)) &* 0x9E37_79B9_7F4A_7C15) >> 58)
        if groupCache[slot].key == k { return groupCache[slot].index }
        let i: Int
        if let x = groupIndex[k] { i = x } else {
            i = groupList.count
            groupIndex[k] = i
            groupKeys.append(k)
            groupList.append(Group())
        }
        groupCache[slot] = (k, i)
        return i
    }

    private func loopKey(_ key: LoopKey) -> Key { Key(pid: key.pid, a: key.loop, b: -2) }

    /// The key of an item grouped by name (items with one name share a group, as their labels do).
    private func itemKey(_ kind: RLCalloutKind, _ item: UInt64, pid: Int64, blockName: Int32 = -1) -> Key {
        let id = kind == .block && blockName >= 0 ? blockName : (kind == .mainQueue ? -3 : (resolver?.nameID(of: kind, item: item, pid: pid) ?? -1))
        return Key(pid: 0, a: UInt64(kind.rawValue), b: id)
    }

    private func label(itemName k: Key) -> String {
        k.b == -3 ? "main-queue" : (k.b < 0 ? "" : resolver?.names[k.b] ?? "")
    }

    public func sleep(_ s: SleepRecord, of key: LoopKey) {
        guard of == .sleep else { return }
        add(by == .reason ? Key(pid: 0, a: UInt64(s.reason.rawValue), b: -4) : by == .loop ? loopKey(key) : Key(pid: 0, a: 0, b: -5), s.duration)
    }
    public func iteration(_ it: IterationRecord, of loop: LoopInfo) {
        guard of == .iteration, it.depth == 0 else { return }
        add(by == .loop ? loopKey(loop.key) : Key(pid: 0, a: 0, b: -5), it.busyNs)
    }
    public func callout(_ c: CalloutRecord, of key: LoopKey) {
        guard of == .callout else { return }
        switch by {
        case .kind: add(Key(pid: 0, a: UInt64(c.kind.rawValue), b: -6), c.duration)
        case .item: add(itemKey(c.kind, c.item, pid: key.pid, blockName: c.namedByItem ? -1 : c.blockName), c.duration)
        case .loop: add(loopKey(key), c.duration)
        default: add(Key(pid: 0, a: 0, b: -5), c.duration)
        }
    }
    public func wakeUpLatency(_ ns: Int64, callerTid: Int64, of key: LoopKey) {
        guard of == .wakeLatency else { return }
        add(by == .loop ? loopKey(key) : Key(pid: 0, a: 0, b: -5), ns)
    }
    public func timerLateness(_ ns: Int64, item: UInt64, of key: LoopKey) {
        guard of == .timerLateness else { return }
        add(by == .item ? itemKey(.timer, item, pid: key.pid) : by == .loop ? loopKey(key) : Key(pid: 0, a: 0, b: -5), ns)
    }
    public func signalLatency(_ ns: Int64, item: UInt64, callerTid: Int64, of key: LoopKey) {
        guard of == .signalLatency else { return }
        add(by == .item ? itemKey(.source0, item, pid: key.pid) : by == .loop ? loopKey(key) : Key(pid: 0, a: 0, b: -5), ns)
    }

    private func label(_ k: Key) -> String {
        switch k.b {
        case -2:
            let info = resolver?.info(of: LoopKey(pid: k.pid, loop: k.a))
            let host = resolver?.hostName(of: k.pid).map { " on \(UntrustedText.terminal($0))" } ?? ""
            return "loop \(k.a)\(host)\(info.map { $0.threadName.isEmpty ? "" : " \"\(UntrustedText.terminal($0.threadName))\"" } ?? "")"
        case -4: return (RLWakeReason(rawValue: UInt8(k.a)) ?? .none).label
        case -6: return (RLCalloutKind(rawValue: UInt8(k.a)) ?? .observer).label
        case -5:
            switch of {
            case .sleep: return "sleep"
            case .iteration: return "iteration busy"
            case .callout: return "callout"
            case .wakeLatency: return "wakeUp → wake"
            case .timerLateness: return "timer lateness"
            case .signalLatency: return "signal → perform"
            }
        default:
            return "\((RLCalloutKind(rawValue: UInt8(k.a)) ?? .observer).label) \"\(UntrustedText.terminal(label(itemName: k)))\""
        }
    }

    /// The text: per group (sorted by label) its percentiles, then its bars.
    public func render(scale: Scale, buckets: Int) -> String {
        // Groups whose labels are equal (a loop's items of one name, say) are one group.
        var merged: [String: Group] = [:]
        // (Merged exactly, as recording every value into one group: `DurationAccumulator.merge`.)
        for (k, g) in zip(groupKeys, groupList) {
            let l = label(k)
            if var m = merged[l] {
                m.acc.merge(g.acc)
                for i in 0..<64 { m.log2[i] += g.log2[i] }
                merged[l] = m
            } else {
                merged[l] = g
            }
        }
        if merged.isEmpty { return "no values (nothing of that kind in the selected range)\n" }
        var o = ""
        for (label, g) in merged.sorted(by: { $0.key < $1.key }) {
            let acc = g.acc
            let p = acc.percentiles([50, 90, 99, 99.9])
            o += "\(label): \(acc.count) values · p50 \(formatDuration(p[0])) · p90 \(formatDuration(p[1])) · p99 \(formatDuration(p[2])) · p99.9 \(formatDuration(p[3])) · max \(formatDuration(acc.max))\n"
            if scale == .log2 {
                o += histogramLines(bucketDictionary(g.log2[...]), indent: "  ")
            } else {
                let vmin = acc.min, vmax = acc.max
                let width = Swift.max(1, (vmax - vmin + Int64(buckets)) / Int64(buckets))
                var counts = [Int](repeating: 0, count: buckets)
                acc.forEachValue { v, n in counts[Swift.max(0, Swift.min(buckets - 1, Int((v - vmin) / width)))] += n }
                let top = counts.max() ?? 1
                for (i, n) in counts.enumerated() {
                    let a = vmin + Int64(i) * width
                    let range = "[\(formatDuration(a)), \(formatDuration(a + width)))"
                    // The range column is exactly 24 characters (cut or padded), the count right-aligned in 8.
                    let col = range.count >= 24 ? String(range.prefix(24)) : range + String(repeating: " ", count: 24 - range.count)
                    let num = String(n)
                    o += "  " + col + (num.count >= 8 ? num : String(repeating: " ", count: 8 - num.count) + num) + " "
                        + String(repeating: "█", count: n == 0 ? 0 : Swift.max(1, n * 40 / Swift.max(1, top))) + "\n"
                }
            }
        }
        return o
    }
}
