#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One mode's timers: O(log n) insertion, O(1) removal (lazy), O(log n) earliest deadline.
///
/// Timers without tolerance live in one min-heap keyed by fire time (the order due timers fire in,
/// ties first-in-first-out through the stamp). Timers with a tolerance live in two: by fire time (to
/// collect them when due) and by fire + tolerance (the latest moment the loop may wake and still
/// honour every tolerance). Every (re)insertion gets a new stamp, recorded in the timer's membership
/// for this mode; an entry whose stamp is no longer the timer's is stale and is dropped when it
/// reaches a heap's top. Membership lives in the timer, so no side table is needed; when stale
/// entries outnumber live ones the heaps are rebuilt from the live entries.
///
/// Noncopyable: its heaps own their buffers (see ``EntryHeap``).
struct TimerQueue: ~Copyable {
    struct Entry: Comparable {
        var key: UInt64
        var stamp: UInt64
        /// Strong: a stale entry keeps its timer alive until it is discarded (no dangling pointer,
        /// no address reuse); compaction bounds stale entries to about twice the live ones.
        var timer: RLTimer
        var tolerant: Bool
        static func < (a: Entry, b: Entry) -> Bool { a.key != b.key ? a.key < b.key : a.stamp < b.stamp }
        static func == (a: Entry, b: Entry) -> Bool { a.key == b.key && a.stamp == b.stamp }
    }

    /// The mode this queue belongs to (the key of the timers' memberships).
    let mode: ObjectIdentifier
    private var zero = EntryHeap()
    private var tolFire = EntryHeap()
    private var tolHard = EntryHeap()
    /// Live timers in this mode.
    private(set) var count = 0
    /// Reused by `collectDue` (which never calls out, so it is never re-entered).
    private var dueScratch: [Entry] = []

    init(mode: ObjectIdentifier) { self.mode = mode }

    var isEmpty: Bool { count == 0 }

    /// Inserts `timer` at `fireNs` under `stamp` (already recorded in its membership). `isNew`:
    /// the timer just joined the mode (as opposed to being repositioned).
    mutating func insert(_ timer: RLTimer, fireNs: UInt64, toleranceNs: UInt64, stamp: UInt64, isNew: Bool) {
        if isNew { count += 1 }
        if toleranceNs == 0 {
            zero.insert(Entry(key: fireNs, stamp: stamp, timer: timer, tolerant: false))
        } else {
            tolFire.insert(Entry(key: fireNs, stamp: stamp, timer: timer, tolerant: true))
            let (hard, o) = fireNs.addingReportingOverflow(toleranceNs)
            tolHard.insert(Entry(key: o ? .max : hard, stamp: stamp, timer: timer, tolerant: true))
        }
        compactIfNeeded()
    }

    /// Notes that a timer left the mode (its membership was already removed; entries go stale).
    mutating func removed() { count -= 1 }

    func contains(_ timer: RLTimer) -> Bool { timer.state.withLock { $0.memberships.stamp(in: mode) != nil } }

    private static func isLive(_ e: borrowing Entry, mode: ObjectIdentifier) -> Bool {
        e.timer.state.withLock { $0.memberships.stamp(in: mode) == e.stamp }
    }

    /// The top live entry of `h` (stale ones are dropped on the way), skipping those of timers whose
    /// callout is running (CF's `__CFArmNextTimerInMode` discounts a firing timer: a run nested in
    /// its callout must not wait for its past date). Those stay queued — they are lifted out and put
    /// back, which only happens inside a timer's callout.
    private static func liveTop(_ h: inout EntryHeap, mode: ObjectIdentifier) -> Entry? {
        var held: [Entry] = []
        defer { for e in held { h.insert(e) } }
        while let top = h.min {
            let (live, firing) = top.timer.state.withLock { ($0.memberships.stamp(in: mode) == top.stamp, $0.firing) }
            if !live { _ = h.removeMin(); continue }
            if firing { held.append(h.removeMin()); continue }
            return top
        }
        return nil
    }

    /// The top live entry of `h`, firing timers included (stale ones are dropped on the way).
    private static func liveTopIncludingFiring(_ h: inout EntryHeap, mode: ObjectIdentifier) -> Entry? {
        while let top = h.min {
            if top.timer.state.withLock({ $0.memberships.stamp(in: mode) == top.stamp }) { return top }
            _ = h.removeMin()
        }
        return nil
    }

    /// The wake-up deadline for this mode: the earliest fire + tolerance of a timer not firing
    /// (`.max` when none).
    mutating func hardDeadline() -> UInt64 {
        if count == 0 { return .max }   // only stale entries, if any (dropped on a later call)
        return min(TimerQueue.liveTop(&zero, mode: mode)?.key ?? .max, TimerQueue.liveTop(&tolHard, mode: mode)?.key ?? .max)
    }

    /// The earliest fire date of a timer not firing (`.max` when none).
    mutating func earliestFire() -> UInt64 {
        if count == 0 { return .max }
        return min(TimerQueue.liveTop(&zero, mode: mode)?.key ?? .max, TimerQueue.liveTop(&tolFire, mode: mode)?.key ?? .max)
    }

    /// The first timer in fire order, a firing one included (CF's first timer of the mode's sorted
    /// array, which `CFRunLoopGetNextTimerFireDate` reports); nil when the mode has none.
    mutating func first() -> RLTimer? {
        if count == 0 { return nil }
        let a = TimerQueue.liveTopIncludingFiring(&zero, mode: mode)
        let b = TimerQueue.liveTopIncludingFiring(&tolFire, mode: mode)
        guard let a else { return b?.timer }
        guard let b else { return a.timer }
        return b < a ? b.timer : a.timer
    }

    /// Appends to `out`, in fire order, every live timer whose fire time is ≤ `now` and whose callout
    /// is not running (CF's `__CFRunLoopDoTimers`). The timers stay queued (a nested run in the same
    /// mode sees them too, as in CF); firing repositions them.
    mutating func collectDue(now: UInt64, into out: inout [RLTimer]) {
        let fromZero = TimerQueue.drainDue(&zero, now: now, mode: mode, into: &dueScratch)
        let fromTolerant = TimerQueue.drainDue(&tolFire, now: now, mode: mode, into: &dueScratch)
        guard fromZero || fromTolerant else { return }
        if fromZero && fromTolerant { dueScratch.sort() }
        for e in dueScratch {
            out.append(e.timer)
            if e.tolerant { tolFire.insert(e) } else { zero.insert(e) }
        }
        dueScratch.removeAll(keepingCapacity: true)
    }

    private static func drainDue(_ h: inout EntryHeap, now: UInt64, mode: ObjectIdentifier, into due: inout [Entry]) -> Bool {
        var took = false
        var held: [Entry] = []
        while let key = h.minKey, key <= now {
            let top = h.removeMin()
            let (live, firing) = top.timer.state.withLock { ($0.memberships.stamp(in: mode) == top.stamp, $0.firing) }
            if live && firing {
                held.append(top)   // its callout is running (a nested run): stays queued, not due
            } else if live {
                due.append(top)
                took = true
            }
        }
        for e in held { h.insert(e) }
        return took
    }

    /// The live timers (for descriptions and tear-down; O(entries)).
    func liveTimers() -> [RLTimer] {
        var out: [RLTimer] = []
        let mode = self.mode
        zero.forEach { if TimerQueue.isLive($0, mode: mode) { out.append($0.timer) } }
        tolFire.forEach { if TimerQueue.isLive($0, mode: mode) { out.append($0.timer) } }
        return out
    }

    /// Rebuilds the heaps when stale entries dominate, keeping memory proportional to live timers.
    private mutating func compactIfNeeded() {
        let entries = zero.count + tolFire.count + tolHard.count
        guard entries > 3 * count + 64 else { return }
        let mode = self.mode
        zero.compact { TimerQueue.isLive($0, mode: mode) }
        tolFire.compact { TimerQueue.isLive($0, mode: mode) }
        tolHard.compact { TimerQueue.isLive($0, mode: mode) }
    }
}

/// A binary min-heap of timer entries in `malloc` memory, grown with `realloc`: a large heap is
/// remapped by the kernel, not copied into fresh pages (adding 50k timers spent about a third of its
/// time growing a collections `Heap`'s array). Entries hold a strong reference and plain values,
/// so they move bitwise; elements are moved in and out (no retain/release while sifting).
struct EntryHeap: ~Copyable {
    typealias Entry = TimerQueue.Entry
    private var buffer: UnsafeMutablePointer<Entry>?
    private var capacity = 0
    private(set) var count = 0

    init() {}

    deinit {
        guard let buffer else { return }
        buffer.deinitialize(count: count)
        free(buffer)
    }

    /// The smallest entry's key, if any (no copy of the entry).
    var minKey: UInt64? { count > 0 ? buffer![0].key : nil }

    /// A copy of the smallest entry.
    var min: Entry? { count > 0 ? buffer![0] : nil }

    mutating func insert(_ e: consuming Entry) {
        if count == capacity { grow() }
        let b = buffer!
        // Sift the hole at the end up, then place `e` in it.
        var i = count
        while i > 0 {
            let parent = (i - 1) / 2
            guard e < b[parent] else { break }
            (b + i).moveInitialize(from: b + parent, count: 1)
            i = parent
        }
        (b + i).initialize(to: e)
        count += 1
    }

    /// Removes and returns the smallest entry. The heap must not be empty.
    @discardableResult
    mutating func removeMin() -> Entry {
        let b = buffer!
        let top = b.move()
        count -= 1
        if count > 0 { siftDown((b + count).move(), from: 0) }
        return top
    }

    /// Calls `body` with every entry, in no particular order.
    func forEach(_ body: (borrowing Entry) -> Void) {
        for i in 0..<count { body(buffer![i]) }
    }

    /// Keeps only the entries for which `keep` is true, then restores the heap order (Floyd).
    mutating func compact(keeping keep: (borrowing Entry) -> Bool) {
        guard let b = buffer else { return }
        var kept = 0
        for i in 0..<count {
            if keep(b[i]) {
                if i != kept { (b + kept).moveInitialize(from: b + i, count: 1) }
                kept += 1
            } else {
                (b + i).deinitialize(count: 1)
            }
        }
        count = kept
        var i = count / 2 - 1
        while i >= 0 {
            siftDown((b + i).move(), from: i)
            i -= 1
        }
    }

    /// Places `e` in the hole at `start`, sifting the hole down past smaller children.
    private mutating func siftDown(_ e: consuming Entry, from start: Int) {
        let b = buffer!
        var i = start
        while true {
            var child = 2 * i + 1
            if child >= count { break }
            if child + 1 < count && b[child + 1] < b[child] { child += 1 }
            guard b[child] < e else { break }
            (b + i).moveInitialize(from: b + child, count: 1)
            i = child
        }
        (b + i).initialize(to: e)
    }

    private mutating func grow() {
        let newCapacity = Swift.max(16, capacity * 2)
        guard let p = realloc(buffer, newCapacity * MemoryLayout<Entry>.stride) else {
            fatalError("RunLoopCore: out of memory")
        }
        buffer = p.bindMemory(to: Entry.self, capacity: newCapacity)
        capacity = newCapacity
    }
}

/// A timer's memberships in the modes of its loop, one inline (the common case) and the rest in
/// an array, so a timer in one mode never allocates for it.
struct TimerMemberships {
    struct Membership {
        /// The mode (unowned: modes live as long as their loop, and are only reached through it).
        unowned(unsafe) var mode: ModeState
        var stamp: UInt64
    }
    private var first: Membership?
    private var rest: [Membership] = []

    var isEmpty: Bool { first == nil }

    func stamp(in mode: ObjectIdentifier) -> UInt64? {
        if let f = first, ObjectIdentifier(f.mode) == mode { return f.stamp }
        for m in rest where ObjectIdentifier(m.mode) == mode { return m.stamp }
        return nil
    }

    mutating func append(_ m: Membership) {
        if first == nil { first = m } else { rest.append(m) }
    }

    /// Removes the membership for `mode`; returns whether there was one.
    @discardableResult
    mutating func remove(_ mode: ModeState) -> Bool {
        if let f = first, f.mode === mode {
            first = rest.isEmpty ? nil : rest.removeFirst()
            return true
        }
        if let i = rest.firstIndex(where: { $0.mode === mode }) { rest.remove(at: i); return true }
        return false
    }

    mutating func removeAll() {
        first = nil
        rest.removeAll()
    }

    /// Gives every membership a new stamp from `next` (called with the loop's lock held).
    mutating func restamp(_ next: () -> UInt64) {
        if first != nil { first!.stamp = next() }
        for i in rest.indices { rest[i].stamp = next() }
    }

    func forEach(_ body: (Membership) -> Void) {
        if let f = first { body(f) }
        for m in rest { body(m) }
    }
}
