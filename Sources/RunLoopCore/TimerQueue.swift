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
/// Firing does not put due entries back: ``collectDue(now:into:)`` moves them from the heaps to
/// `taken` (a sorted list, still part of the queue), and ``finishDue(round:allFired:)`` drops them
/// once every one of them fired (firing leaves an entry stale: a one-shot timer is invalidated, a
/// repeating one restamped). Popping and re-pushing every due entry was most of the cost of firing
/// an already-due timer: a due entry is among the smallest, so its re-push sifted it back to the top.
///
/// Noncopyable: its heaps own their buffers (see ``EntryHeap``).
struct TimerQueue: ~Copyable {
    struct Entry: Comparable {
        var key: UInt64
        var stamp: UInt64
        /// Strong: a stale entry keeps its timer alive until it is discarded (no dangling pointer,
        /// no address reuse); compaction bounds stale entries to about twice the live ones.
        var timer: RLTimer
        // (No flag for the heap it belongs to: 24 bytes instead of 32. A live entry's heap follows
        // from its timer's tolerance — see `restoreTakenSlow`.)
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
    /// The entries the last ``collectDue(now:into:)`` took out of `zero` and `tolFire`, in fire
    /// order: the timers of the firing round `round`. They still belong to the queue — every query
    /// first puts the live ones back (``restoreTaken()``), so a run nested in a timer's callout, or
    /// `nextTimerFireDate` from a callout, sees exactly what re-pushing them at once would show.
    private var taken: [Entry] = []
    /// Counts firing rounds; a restore starts a new one, so a ``finishDue(round:allFired:)`` for a
    /// round whose entries were already put back does nothing.
    private var round: UInt64 = 0

    init(mode: ObjectIdentifier) { self.mode = mode }

    var isEmpty: Bool { count == 0 }

    /// Inserts `timer` at `fireNs` under `stamp` (already recorded in its membership). `isNew`:
    /// the timer just joined the mode (as opposed to being repositioned).
    mutating func insert(_ timer: RLTimer, fireNs: UInt64, toleranceNs: UInt64, stamp: UInt64, isNew: Bool) {
        if isNew { count += 1 }
        if toleranceNs == 0 {
            zero.insert(Entry(key: fireNs, stamp: stamp, timer: timer))
        } else {
            tolFire.insert(Entry(key: fireNs, stamp: stamp, timer: timer))
            let (hard, o) = fireNs.addingReportingOverflow(toleranceNs)
            tolHard.insert(Entry(key: o ? .max : hard, stamp: stamp, timer: timer))
        }
        compactIfNeeded()
    }

    /// Notes that a timer left the mode (its membership was already removed; entries go stale).
    mutating func removed() { count -= 1 }

    func contains(_ timer: RLTimer) -> Bool { timer.withState { $0.memberships.stamp(in: mode) != nil } }

    private static func isLive(_ e: borrowing Entry, mode: ObjectIdentifier) -> Bool {
        let stamp = e.stamp
        return e.timer.withState { $0.memberships.stamp(in: mode) == stamp }
    }

    /// The top live entry of `h` (stale ones are dropped on the way), skipping those of timers whose
    /// callout is running (CF's `__CFArmNextTimerInMode` discounts a firing timer: a run nested in
    /// its callout must not wait for its past date). Those stay queued — they are lifted out and put
    /// back, which only happens inside a timer's callout.
    private static func liveTop(_ h: inout EntryHeap, mode: ObjectIdentifier) -> Entry? {
        var held: [Entry] = []
        defer { for e in held { h.insert(e) } }
        while let top = h.min {
            let (live, firing) = top.timer.withState { ($0.memberships.stamp(in: mode) == top.stamp, $0.firing) }
            if !live { _ = h.removeMin(); continue }
            if firing { held.append(h.removeMin()); continue }
            return top
        }
        return nil
    }

    /// The top live entry of `h`, firing timers included (stale ones are dropped on the way).
    private static func liveTopIncludingFiring(_ h: inout EntryHeap, mode: ObjectIdentifier) -> Entry? {
        while let top = h.min {
            if top.timer.withState({ $0.memberships.stamp(in: mode) == top.stamp }) { return top }
            _ = h.removeMin()
        }
        return nil
    }

    /// The wake-up deadline for this mode: the earliest fire + tolerance of a timer not firing
    /// (`.max` when none).
    @inline(__always)
    mutating func hardDeadline() -> UInt64 {
        count == 0 ? .max : hardDeadlineSlow()   // none: only stale entries, if any (dropped later)
    }

    @inline(never)
    private mutating func hardDeadlineSlow() -> UInt64 {
        restoreTaken()
        return min(TimerQueue.liveTop(&zero, mode: mode)?.key ?? .max, TimerQueue.liveTop(&tolHard, mode: mode)?.key ?? .max)
    }

    /// The earliest fire date of a timer not firing (`.max` when none).
    @inline(__always)
    mutating func earliestFire() -> UInt64 {
        count == 0 ? .max : earliestFireSlow()
    }

    @inline(never)
    private mutating func earliestFireSlow() -> UInt64 {
        restoreTaken()
        return min(TimerQueue.liveTop(&zero, mode: mode)?.key ?? .max, TimerQueue.liveTop(&tolFire, mode: mode)?.key ?? .max)
    }

    /// The first timer in fire order, a firing one included (CF's first timer of the mode's sorted
    /// array, which `CFRunLoopGetNextTimerFireDate` reports); nil when the mode has none.
    mutating func first() -> RLTimer? {
        if count == 0 { return nil }
        restoreTaken()
        let a = TimerQueue.liveTopIncludingFiring(&zero, mode: mode)
        let b = TimerQueue.liveTopIncludingFiring(&tolFire, mode: mode)
        guard let a else { return b?.timer }
        guard let b else { return a.timer }
        return b < a ? b.timer : a.timer
    }

    /// Appends to `out`, in fire order, every live timer whose fire time is ≤ `now` and whose callout
    /// is not running (CF's `__CFRunLoopDoTimers`), and returns the firing round, for
    /// ``finishDue(round:allFired:)``. The timers stay queued (in `taken`: a nested run in the same
    /// mode sees them too, as in CF); firing repositions them.
    mutating func collectDue(now: UInt64, into out: inout [RLTimer]) -> UInt64 {
        restoreTaken()   // a run nested in a timer's callout: the outer round's entries go back first
        let fromZero = TimerQueue.drainDue(&zero, now: now, mode: mode, into: &taken)
        let fromTolerant = TimerQueue.drainDue(&tolFire, now: now, mode: mode, into: &taken)
        guard fromZero || fromTolerant else { return round }
        if fromZero && fromTolerant { taken.sort() }
        out.reserveCapacity(out.count + taken.count)
        // (Through the buffer: `for e in taken` copied each entry, a retain and a release of its
        // timer more than the one reference `out` takes.)
        taken.withUnsafeBufferPointer { entries in
            for i in entries.indices { out.append(entries[i].timer) }
        }
        return round
    }

    /// Ends firing round `round`. When `allFired` (every timer ``collectDue(now:into:)`` returned
    /// fired, so every taken entry is stale: a fired one-shot timer was invalidated, a fired
    /// repeating one restamped), the entries are dropped without looking at them; otherwise the
    /// live ones go back into the heaps. Nothing to do when a query or a nested run already put
    /// them back (a later round).
    mutating func finishDue(round r: UInt64, allFired: Bool) {
        guard r == round, !taken.isEmpty else { return }
        if allFired {
            taken.removeAll(keepingCapacity: true)
            round &+= 1
        } else {
            restoreTaken()
        }
    }

    /// Puts the live entries of `taken` back into their heaps (stale ones are dropped) and starts a
    /// new round. O(1) when nothing is taken.
    @inline(__always)
    private mutating func restoreTaken() {
        if !taken.isEmpty { restoreTakenSlow() }
    }

    @inline(never)
    private mutating func restoreTakenSlow() {
        let mode = self.mode
        for e in taken {
            // An entry is live while its stamp is the timer's in this mode, and every change of a
            // valid timer's tolerance restamps it (`update` → `reschedule`), so a live entry's heap
            // is the one its timer's tolerance names (zero: `zero`, else `tolFire`). (An
            // invalidated timer not yet removed keeps its stamps; placed by a tolerance changed
            // meanwhile, its entry goes stale when `removeEverywhere` follows, as any of its entries.)
            let stamp = e.stamp
            let (live, tolerant) = e.timer.withState { ($0.memberships.stamp(in: mode) == stamp, $0.toleranceNs != 0) }
            guard live else { continue }
            if tolerant { tolFire.insert(e) } else { zero.insert(e) }
        }
        taken.removeAll(keepingCapacity: true)
        round &+= 1
    }

    /// Moves the live due entries of `h` whose timer is not firing to `due`, in order (stale ones
    /// are dropped; those of a firing timer stay). Returns whether it moved any.
    ///
    /// Entries are popped one by one; once a good part of the heap turned out to be due (at least
    /// 64 entries and a sixteenth of it), or at once when the heap's last leaf is due (a large heap
    /// whose every timer may well be due), the rest of the due ones are taken in one sweep instead
    /// (``EntryHeap/removeAll(keyAtMost:into:)``, then sorted): popping costs a walk down the heap per
    /// entry, the sweep one look at each entry, which the pops so far already outweigh.
    private static func drainDue(_ h: inout EntryHeap, now: UInt64, mode: ObjectIdentifier, into due: inout [Entry]) -> Bool {
        var took = false
        var held: [Entry] = []
        func sort(_ e: consuming Entry) {
            // (The entry holds its timer for the call: no retain/release pair of the timer — two
            // atomic operations per due timer — around the look at its state.)
            let (live, firing) = Unmanaged.passUnretained(e.timer)._withUnsafeGuaranteedRef { $0.queueState(mode: mode, stamp: e.stamp) }
            if live && firing {
                held.append(e)   // its callout is running (a nested run): stays queued, not due
            } else if live {
                due.append(e)
                took = true
            }
        }
        var popped = 0
        while let key = h.minKey, key <= now {
            if (popped >= 64 && h.count <= 16 * popped) || (popped == 0 && h.count >= 64 && h.lastKey <= now) {
                due.reserveCapacity(due.count + h.count)
                h.removeAll(keyAtMost: now) { sort($0) }
                break
            }
            sort(h.removeMin())
            popped += 1
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
        for e in taken where TimerQueue.isLive(e, mode: mode) { out.append(e.timer) }
        return out
    }

    /// Rebuilds the heaps when stale entries dominate, keeping memory proportional to live timers.
    @inline(__always)
    private mutating func compactIfNeeded() {
        if zero.count + tolFire.count + tolHard.count > 3 * count + 64 { compact() }
    }

    @inline(never)
    private mutating func compact() {
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

    /// The key of the last entry in the buffer (a leaf); the heap must not be empty.
    var lastKey: UInt64 { buffer![count - 1].key }

    /// A copy of the smallest entry.
    var min: Entry? { count > 0 ? buffer![0] : nil }

    /// Whether the entry at `i` orders before the one at `j` (reads the two plain fields only: no
    /// copy of an entry, so no retain/release of its timer).
    @inline(__always) private func less(_ i: Int, _ j: Int) -> Bool {
        let b = buffer!
        let ki = b[i].key, kj = b[j].key
        return ki != kj ? ki < kj : b[i].stamp < b[j].stamp
    }

    /// Whether (`key`, `stamp`) orders before the entry at `j`.
    @inline(__always) private func less(_ key: UInt64, _ stamp: UInt64, than j: Int) -> Bool {
        let kj = buffer![j].key
        return key != kj ? key < kj : stamp < buffer![j].stamp
    }

    /// Moves the entry at `from` into the uninitialized slot `to`.
    @inline(__always) private func move(_ from: Int, to: Int) {
        let b = buffer!
        (b + to).initialize(to: (b + from).move())
    }

    mutating func insert(_ e: consuming Entry) {
        if count == capacity { grow() }
        let b = buffer!   // (once: the loop below neither grows nor frees it)
        let key = e.key, stamp = e.stamp
        // Sift the hole at the end up, then place `e` in it.
        var i = count
        while i > 0 {
            let parent = (i - 1) / 2
            let pk = b[parent].key
            guard key != pk ? key < pk : stamp < b[parent].stamp else { break }
            (b + i).initialize(to: (b + parent).move())
            i = parent
        }
        (b + i).initialize(to: e)
        count &+= 1
    }

    /// Removes and returns the smallest entry. The heap must not be empty.
    ///
    /// Floyd's bottom-up variant: the last entry, which replaces the top, is usually among the
    /// largest, so the hole first goes down to a leaf along the smaller children (one comparison a
    /// level instead of two) and the entry is then sifted up from there (rarely more than a level).
    @discardableResult
    mutating func removeMin() -> Entry {
        let b = buffer!
        let top = b.move()
        count -= 1
        guard count > 0 else { return top }
        let last = (b + count).move()
        let key = last.key, stamp = last.stamp
        var i = 0
        while true {
            var child = 2 * i + 1
            if child >= count { break }
            if child + 1 < count && less(child + 1, child) { child += 1 }
            move(child, to: i)
            i = child
        }
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(key, stamp, than: parent) else { break }
            move(parent, to: i)
            i = parent
        }
        (b + i).initialize(to: last)
        return top
    }
    /// Calls `body` with every entry, in no particular order.
    func forEach(_ body: (borrowing Entry) -> Void) {
        for i in 0..<count { body(buffer![i]) }
    }

    /// Removes every entry whose key is ≤ `key` and passes them to `body` in order, then restores
    /// the heap order of the rest (Floyd): O(count), plus a sort of the entries removed unless they
    /// already are in order (as when the timers were added in fire order).
    mutating func removeAll(keyAtMost key: UInt64, _ body: (consuming Entry) -> Void) {
        guard let b = buffer, count > 0 else { return }
        // The removed entries are moved to a buffer of their own (moved out again, one by one, to
        // `body`; the buffer is freed empty), the others to the front of this one.
        let out = UnsafeMutablePointer<Entry>.allocate(capacity: count)
        var n = 0
        var sorted = true
        var kept = 0
        for i in 0..<count {
            if b[i].key <= key {
                (out + n).initialize(to: (b + i).move())
                if n > 0 && sorted && (out + n).pointee < (out + n - 1).pointee { sorted = false }
                n += 1
            } else {
                if i != kept { move(i, to: kept) }
                kept += 1
            }
        }
        count = kept
        heapify()
        if !sorted {
            var all = UnsafeMutableBufferPointer(start: out, count: n)
            all.sort()
        }
        for i in 0..<n { body((out + i).move()) }
        out.deallocate()
    }

    /// Restores the heap order of the whole buffer (Floyd: sift down every parent, last first).
    private mutating func heapify() {
        guard let b = buffer else { return }
        var i = count / 2 - 1
        while i >= 0 {
            siftDown((b + i).move(), from: i)
            i -= 1
        }
    }

    /// Keeps only the entries for which `keep` is true, then restores the heap order (Floyd).
    mutating func compact(keeping keep: (borrowing Entry) -> Bool) {
        guard let b = buffer else { return }
        var kept = 0
        for i in 0..<count {
            if keep(b[i]) {
                if i != kept { move(i, to: kept) }
                kept += 1
            } else {
                (b + i).deinitialize(count: 1)
            }
        }
        count = kept
        heapify()
    }

    /// Places `e` in the hole at `start`, sifting the hole down past smaller children.
    private mutating func siftDown(_ e: consuming Entry, from start: Int) {
        let key = e.key, stamp = e.stamp
        var i = start
        while true {
            var child = 2 * i + 1
            if child >= count { break }
            if child + 1 < count && less(child + 1, child) { child += 1 }
            guard less(child, key, stamp) else { break }
            move(child, to: i)
            i = child
        }
        (buffer! + i).initialize(to: e)
    }

    /// Whether the entry at `i` orders before (`key`, `stamp`).
    @inline(__always) private func less(_ i: Int, _ key: UInt64, _ stamp: UInt64) -> Bool {
        let ki = buffer![i].key
        return ki != key ? ki < key : buffer![i].stamp < stamp
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
        /// `body` with the mode's timer queue, the mode not retained for it (a retain and a release
        /// per fired one-shot timer otherwise: the loop's lock is held, and modes live as long as
        /// their loop).
        @inline(__always)
        func withTimers<R>(_ body: (inout TimerQueue) -> R) -> R {
            Unmanaged.passUnretained(mode)._withUnsafeGuaranteedRef { body(&$0.timers) }
        }
    }
    private var first: Membership?
    private var rest: [Membership] = []

    var isEmpty: Bool { first == nil }

    @inline(__always)
    func stamp(in mode: ObjectIdentifier) -> UInt64? {
        // (`rest` is empty while `first` is nil — `append` fills `first` first, `remove` refills it
        // from `rest` — so a timer in no mode is answered without loading `rest`.)
        guard let f = first else { return nil }
        if ObjectIdentifier(f.mode) == mode { return f.stamp }
        return rest.isEmpty ? nil : stampInRest(mode)
    }

    @inline(never)
    private func stampInRest(_ mode: ObjectIdentifier) -> UInt64? {
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

    /// Removes every membership and returns them (moved out: no copy).
    mutating func takeAll() -> TimerMemberships {
        var out = TimerMemberships()
        swap(&out, &self)
        return out
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
