import RunLoopSchema

/// An item as the report counts callouts per item: a block is one item per name (item 0 in the
/// report: docs/report-json.md), whether its name travels with it or is a pooled name's id; any
/// other callout is its item.
struct CalloutItemKey: Hashable {
    var kind: RLCalloutKind; var item: UInt64; var blockName: Int32
    init(kind: RLCalloutKind, item: UInt64, blockName: Int32) { self.kind = kind; self.item = item; self.blockName = blockName }
    /// The item the report gives it: blocks are one item per name, item 0 (docs/report-json.md).
    var reportedItem: UInt64 { kind == .block ? 0 : item }
    init(_ c: CalloutRecord) {
        kind = c.kind
        if !c.namedByItem { item = 0; blockName = c.blockName } else { item = c.item; blockName = -1 }
    }
}

/// What an iteration keeps of its callouts past the first ``LoopModel/calloutLimit``: the model
/// holds an open iteration's callouts until it ends, and one iteration can make millions (a burst
/// of `CFRunLoopPerformBlock`: CF drains the blocks queued when the drain starts in one pass), so
/// past the limit they are summarized — by item, and the few every reader asks for by name (the
/// longest, the candidates for the first after a sleep). What the readers compute from a record (its hang's
/// culprit, its longest callouts, the wake → first callout latencies, a spin's items, whether the
/// timeline's selection keeps it, its late timers) is the same as from the whole list
/// (`CalloutOverflowTests`); only the timeline's line lists the first callouts and counts the rest.
///
/// Filled by the model while the iteration is open, never changed once the iteration is handed
/// to the sinks (a reused record starts without one).
public final class CalloutOverflow: @unchecked Sendable {
    /// How many callouts it summarizes, and how many of them are observers'.
    public private(set) var count = 0, observers = 0
    /// The first of them by whole duration (``CalloutRecord/wholeDurationNs``): the iteration's
    /// culprit when longer than every listed callout.
    public private(set) var longestWhole: CalloutRecord?
    /// The ``keptLongest`` longest of them by duration, longest first (entry order among equals).
    public private(set) var longest: [CalloutRecord] = []
    /// How many of the longest are kept (the report lists an iteration's eight longest callouts).
    public static let keptLongest = 8
    /// Per item (``CalloutItemKey``), in the order first seen.
    private(set) var items: [CalloutItemKey: Int] = [:]
    /// Per item: how many, their total duration, the longest by whole duration (the first among
    /// equals), and for timers the latest against the date it was due (unclipped callouts; -1: none).
    public struct Item: Sendable {
        /// How many callouts of the item, and their total duration (ns).
        public var count: Int, totalNs: Int64
        /// Its longest callout by whole duration.
        public var longest: CalloutRecord
        /// A timer's largest lateness (begin − due date) over its unclipped callouts; -1 if none.
        public var maxLateNs: Int64
    }
    /// The items' figures, in the order first seen.
    public private(set) var byItem: [Item] = []
    /// The begins of the candidates for an iteration's first callout after a sleep: the first
    /// callout other than an observer's here after each sleep (and before the first), in time
    /// order. (The first callout at or after a sleep's end is the first made after its wake: one
    /// made before the wake began before the sleep; a window's clipping moves a sleep's end only
    /// earlier — so no other callout here is ever one.)
    public private(set) var workAfterSleeps: [Int64] = []
    /// How many sleeps the iteration had at the last candidate.
    private var sleepsAtLastCandidate = -1

    init() {}

    /// Adds callout `c` of an iteration that has slept `sleeps` times so far.
    func add(_ c: CalloutRecord, sleeps: Int) {
        count &+= 1
        if c.kind == .observer { observers &+= 1 }
        if let l = longestWhole { if c.wholeDurationNs > l.wholeDurationNs { longestWhole = c } } else { longestWhole = c }
        if longest.count < Self.keptLongest || c.duration > longest[longest.count - 1].duration {
            var at = longest.count
            while at > 0 && longest[at - 1].duration < c.duration { at -= 1 }
            longest.insert(c, at: at)
            if longest.count > Self.keptLongest { longest.removeLast() }
        }
        let k = CalloutItemKey(c)
        let late = c.kind == .timer && !c.clipped ? max(0, saturatingDifference(c.begin, c.detail)) : -1
        if let i = items[k] {
            byItem[i].count &+= 1
            byItem[i].totalNs &+= c.duration
            if c.wholeDurationNs > byItem[i].longest.wholeDurationNs { byItem[i].longest = c }
            byItem[i].maxLateNs = max(byItem[i].maxLateNs, late)
        } else {
            items[k] = byItem.count
            byItem.append(Item(count: 1, totalNs: c.duration, longest: c, maxLateNs: late))
        }
        if c.kind != .observer && sleeps != sleepsAtLastCandidate {
            workAfterSleeps.append(c.begin)
            sleepsAtLastCandidate = sleeps
        }
    }

    /// The key of item `i` of ``byItem``.
    func key(ofItem i: Int) -> CalloutItemKey {
        let c = byItem[i].longest
        return CalloutItemKey(c)
    }
}

extension IterationRecord {
    /// Adds callout `c` to the iteration: listed while it has fewer than `limit`, summarized in
    /// ``overflow`` past them.
    @inline(__always)
    mutating func add(_ c: CalloutRecord, limit: Int) {
        if callouts.count < limit { callouts.append(c) } else { addToOverflow(c) }
    }

    @inline(never)
    private mutating func addToOverflow(_ c: CalloutRecord) {
        let o: CalloutOverflow
        if let x = overflow { o = x } else { o = CalloutOverflow(); overflow = o }
        o.add(c, sleeps: sleeps.count)
    }

    /// Every callout of the iteration: the listed ones and those ``overflow`` summarizes.
    public var calloutCount: Int { callouts.count + (overflow?.count ?? 0) }

    /// The callout that held the iteration longest, by whole duration (the first among equals): a
    /// hang's culprit — also when a time window left it out (``longestOutsideWindow``).
    public var longestCallout: CalloutRecord? {
        var c = callouts.max { $0.wholeDurationNs < $1.wholeDurationNs }
        if let o = overflow?.longestWhole, o.wholeDurationNs > (c?.wholeDurationNs ?? -1) { c = o }
        if let o = longestOutsideWindow, o.wholeDurationNs > (c?.wholeDurationNs ?? -1) || (o.wholeDurationNs == c?.wholeDurationNs && o.begin < c!.begin) { c = o }
        return c
    }

    /// Its `n` (at most ``CalloutOverflow/keptLongest``) longest callouts by duration, longest first,
    /// in entry order among equals.
    public func longestCallouts(_ n: Int) -> [CalloutRecord] {
        let all = overflow.map { callouts + $0.longest } ?? callouts
        return Array(all.sorted { $0.duration > $1.duration }.prefix(min(n, CalloutOverflow.keptLongest)))
    }

    /// The begin of the first callout other than an observer's at or after the end of sleep
    /// `index` of ``sleeps`` (nil: none).
    public func firstWorkBegin(afterSleep index: Int) -> Int64? {
        let end = sleeps[index].end
        if let c = callouts.first(where: { $0.kind != .observer && $0.begin >= end }) { return c.begin }
        return overflow?.workAfterSleeps.first { $0 >= end }
    }

    /// Whether a callout of the iteration satisfies `selects`, a test on a callout's kind, item and
    /// whole duration that a longer callout of the same item passes whenever a shorter one does (as
    /// the selection's `--kind`, `--item` and `--min-duration`).
    public func hasCallout(where selects: (CalloutRecord) -> Bool) -> Bool {
        if callouts.contains(where: selects) { return true }
        return overflow?.byItem.contains { selects($0.longest) } ?? false
    }
}
