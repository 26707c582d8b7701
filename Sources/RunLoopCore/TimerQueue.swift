import HeapModule

/// One mode's timers: O(log n) insertion, O(1) removal (lazy), O(log n) earliest-deadline.
///
/// Two min-heaps hold entries `(key, stamp, timer)`: `byFire` keyed by the fire time (the order
/// due timers fire in, ties first-in-first-out through the stamp) and `byHard` keyed by
/// fire + tolerance (the latest moment the loop may wake and still honour every timer's tolerance).
/// Every (re)insertion gets a new stamp, recorded in the timer's membership for this mode; an entry
/// whose stamp is no longer the timer's is stale and is discarded when it reaches a heap's top.
/// When stale entries outnumber live ones the heaps are rebuilt from `members`.
struct TimerQueue {
    struct Entry: Comparable {
        var key: UInt64
        var stamp: UInt64
        /// Strong: a stale entry keeps its timer alive until it is discarded (no dangling pointer,
        /// no address reuse); compaction bounds stale entries to about twice the live ones.
        var timer: RLTimer
        static func < (a: Entry, b: Entry) -> Bool { a.key != b.key ? a.key < b.key : a.stamp < b.stamp }
        static func == (a: Entry, b: Entry) -> Bool { a.key == b.key && a.stamp == b.stamp }
    }

    /// The mode this queue belongs to (the key of the timers' memberships).
    let mode: ObjectIdentifier
    private(set) var byFire = Heap<Entry>()
    private var byHard = Heap<Entry>()
    /// Reused by `collectDue` (which never calls out, so it is never re-entered).
    private var dueScratch: [Entry] = []
    /// The live timers.
    private(set) var members: [ObjectIdentifier: RLTimer] = [:]

    init(mode: ObjectIdentifier) { self.mode = mode }

    var count: Int { members.count }
    var isEmpty: Bool { members.isEmpty }

    /// Inserts (or repositions) `timer`; `stamp` must already be recorded in its membership.
    mutating func insert(_ timer: RLTimer, fireNs: UInt64, toleranceNs: UInt64, stamp: UInt64) {
        members[ObjectIdentifier(timer)] = timer
        byFire.insert(Entry(key: fireNs, stamp: stamp, timer: timer))
        let (hard, o) = fireNs.addingReportingOverflow(toleranceNs)
        byHard.insert(Entry(key: o ? .max : hard, stamp: stamp, timer: timer))
        compactIfNeeded()
    }

    /// Forgets `timer` (its heap entries become stale).
    mutating func remove(_ timer: RLTimer) {
        members.removeValue(forKey: ObjectIdentifier(timer))
    }

    func contains(_ timer: RLTimer) -> Bool { members[ObjectIdentifier(timer)] != nil }

    private func isLive(_ e: Entry) -> Bool {
        members[ObjectIdentifier(e.timer)] != nil && e.timer.state.withLock { $0.stamp(in: mode) == e.stamp }
    }

    /// The wake-up deadline for this mode: the earliest fire + tolerance (`.max` when none).
    mutating func hardDeadline() -> UInt64 {
        while let top = byHard.min {
            if isLive(top) { return top.key }
            _ = byHard.removeMin()
        }
        return .max
    }

    /// The earliest fire date (`.max` when none).
    mutating func earliestFire() -> UInt64 {
        while let top = byFire.min {
            if isLive(top) { return top.key }
            _ = byFire.removeMin()
        }
        return .max
    }

    /// Appends to `out`, in fire order, every live timer whose fire time is ≤ `now`. The timers stay
    /// queued (a nested run in the same mode sees them too, as in CF); firing repositions them.
    mutating func collectDue(now: UInt64, into out: inout [RLTimer]) {
        while let top = byFire.min, top.key <= now {
            _ = byFire.removeMin()
            if isLive(top) {
                out.append(top.timer)
                dueScratch.append(top)
            }
        }
        if !dueScratch.isEmpty {
            byFire.insert(contentsOf: dueScratch)
            dueScratch.removeAll(keepingCapacity: true)
        }
    }

    /// Rebuilds the heaps when stale entries dominate, keeping memory proportional to live timers.
    mutating func compactIfNeeded() {
        let live = members.count
        guard byFire.count > 2 * live + 64 || byHard.count > 2 * live + 64 else { return }
        var fire: [Entry] = []
        var hard: [Entry] = []
        fire.reserveCapacity(live)
        hard.reserveCapacity(live)
        for t in members.values {
            t.state.withLock { s in
                guard let stamp = s.stamp(in: mode) else { return }
                fire.append(Entry(key: s.fireNs, stamp: stamp, timer: t))
                let (h, o) = s.fireNs.addingReportingOverflow(s.toleranceNs)
                hard.append(Entry(key: o ? .max : h, stamp: stamp, timer: t))
            }
        }
        byFire = Heap(fire)
        byHard = Heap(hard)
    }
}
