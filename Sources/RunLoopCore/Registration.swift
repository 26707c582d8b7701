#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization
import RunLoopTracing

// Adding and removing sources, observers and timers (CFRunLoopAdd…/Remove…/Contains…).

extension RLRunLoop {
    // MARK: - Source0 registration

    /// Adds a source0 to `mode` (or to every common mode). Calls its `schedule` callback for each
    /// mode it newly joins. Adding an invalidated source, or one already there, does nothing (CF).
    public func add(_ source: RLSource0, forMode mode: RLMode) {
        guard source.isValid else { return }
        var joined: [RLMode] = []
        locked {
            if mode.isCommonModes {
                if commonSources0.contains(where: { $0 === source }) { return }
                commonSources0.append(source)
            }
            for m in targetModesLocked(mode) where addSource0Locked(source, m) { joined.append(m.name) }
            // The source's loop list is kept exact under this loop's lock (order: loop, then source).
            if !joined.isEmpty {
                source.withState { s in
                    if !s.loops.contains(where: { $0.loop === self }) { s.loops.append(WeakLoop(loop: self)) }
                }
            }
        }
        for m in joined {
            RLTrace.itemAdded(loop: id, iteration: iteration, kind: .source0, item: source.id, name: source.name ?? "", mode: m.rawValue)
            source.schedule?(self, m)
        }
    }

    @discardableResult
    func addSource0Locked(_ s: RLSource0, _ m: ModeState) -> Bool {
        if m.sources0.contains(where: { $0 === s }) { return false }
        m.sources0.append(s)
        m.hasSources0.store(true, ordering: .sequentiallyConsistent)
        return true
    }

    /// Removes a source0 from `mode` (or from every common mode), calling `cancel` for each mode it
    /// leaves. Removing what was never added does nothing (CF).
    public func remove(_ source: RLSource0, forMode mode: RLMode) {
        var left: [RLMode] = []
        locked {
            var targets: [ModeState] = []
            if mode.isCommonModes {
                guard let i = commonSources0.firstIndex(where: { $0 === source }) else { return }
                commonSources0.remove(at: i)
                targets = commonModeNames.compactMap { modes[$0] }
            } else if let m = modeLocked(mode, create: false) {
                targets = [m]
            }
            for m in targets {
                if let i = m.sources0.firstIndex(where: { $0 === source }) {
                    m.sources0.remove(at: i)
                    m.hasSources0.store(!m.sources0.isEmpty, ordering: .sequentiallyConsistent)
                    left.append(m.name)
                }
            }
            if !left.isEmpty && !commonSources0.contains(where: { $0 === source })
                && !modes.values.contains(where: { $0.sources0.contains { $0 === source } }) {
                source.withState { s in s.loops.removeAll { $0.loop === self || $0.loop == nil } }
            }
        }
        for m in left {
            RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .source0, item: source.id, name: source.name ?? "", mode: m.rawValue)
            source.cancel?(self, m)
        }
    }

    /// Whether `mode` holds `source`.
    public func contains(_ source: RLSource0, inMode mode: RLMode) -> Bool {
        locked {
            if mode.isCommonModes { return commonSources0.contains { $0 === source } }
            return modes[mode]?.sources0.contains { $0 === source } ?? false
        }
    }

    func removeEverywhere(_ source: RLSource0) {
        remove(source, forMode: .commonModes)
        let names = locked { modes.values.filter { $0.sources0.contains { $0 === source } }.map(\.name) }
        for n in names { remove(source, forMode: n) }
    }

    // MARK: - Source1 registration

    /// Adds a source1 to `mode` (or every common mode): its fd joins the mode's wait set.
    /// Throws ``RLError/notPollable(_:)`` for a regular file, ``RLError/badFileDescriptor(_:)`` for a
    /// closed fd, ``RLError/belongsToAnotherLoop(_:)`` if another loop has it. An invalidated
    /// source is ignored (CF).
    public func add(_ source: RLSource1, forMode mode: RLMode) throws(RLError) {
        guard source.isValid else { return }
        let owner: RLRunLoop?? = source.withState { s in
            if s.loop.bound { return .some(s.loop.loop) }
            s.loop = WeakLoop(loop: self)
            return .none
        }
        if case .some(let o) = owner, o !== self { throw RLError.belongsToAnotherLoop("source1 #\(source.id)") }
        var joined: [RLMode] = []
        var failure: RLError?
        locked {
            if mode.isCommonModes {
                if commonSources1.contains(where: { $0 === source }) { return }
            }
            for m in targetModesLocked(mode) {
                if m.sources1[source.id] != nil { continue }
                do { try addSource1Locked(source, m); joined.append(m.name) } catch let e as RLError {
                    failure = e
                    break
                } catch {
                    break
                }
            }
            if failure == nil && mode.isCommonModes { commonSources1.append(source) }
            if let _ = failure {
                for n in joined { if let m = modes[n] { removeSource1Locked(source, m) } }
                joined.removeAll()
            }
        }
        if let failure { throw failure }
        for m in joined {
            RLTrace.itemAdded(loop: id, iteration: iteration, kind: .source1, item: source.id, name: source.name ?? "", mode: m.rawValue)
        }
    }

    func addSource1Locked(_ s: RLSource1, _ m: ModeState) throws(RLError) {
        if m.sources1[s.id] != nil { return }
        try waiter.register(s.fd, id: s.id, interest: s.interest, in: m.waitSet)
        m.sources1[s.id] = s
        source1ByID[s.id] = s
    }

    func removeSource1Locked(_ s: RLSource1, _ m: ModeState) {
        guard m.sources1.removeValue(forKey: s.id) != nil else { return }
        // Only while the fd still refers to the source's file: a closed-and-reused number belongs to
        // someone else now (the kernel dropped the old registration if the file was closed for good;
        // if a dup keeps it open, the stale registration is cleared when it next fires).
        if FileIdentity.of(s.fd) == s.fileIdentity { waiter.deregister(s.fd, from: m.waitSet) }
        if !modes.values.contains(where: { $0.sources1[s.id] != nil }) { source1ByID.removeValue(forKey: s.id) }
    }

    /// Removes a source1 from `mode` (or every common mode). Never closes the fd.
    public func remove(_ source: RLSource1, forMode mode: RLMode) {
        var left: [RLMode] = []
        locked {
            var targets: [ModeState] = []
            if mode.isCommonModes {
                guard let i = commonSources1.firstIndex(where: { $0 === source }) else { return }
                commonSources1.remove(at: i)
                targets = commonModeNames.compactMap { modes[$0] }
            } else if let m = modeLocked(mode, create: false) { targets = [m] }
            for m in targets where m.sources1[source.id] != nil {
                removeSource1Locked(source, m)
                left.append(m.name)
            }
        }
        for m in left { RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .source1, item: source.id, name: source.name ?? "", mode: m.rawValue) }
    }

    /// Whether `mode` holds `source`.
    public func contains(_ source: RLSource1, inMode mode: RLMode) -> Bool {
        locked {
            if mode.isCommonModes { return commonSources1.contains { $0 === source } }
            return modes[mode]?.sources1[source.id] != nil
        }
    }

    func removeEverywhere(_ source: RLSource1) {
        remove(source, forMode: .commonModes)
        let names = locked { modes.values.filter { $0.sources1[source.id] != nil }.map(\.name) }
        for n in names { remove(source, forMode: n) }
    }

    // MARK: - Observer registration

    /// Adds an observer to `mode` (or every common mode). An observer belongs to one loop: adding it
    /// to another, or adding an invalidated one, does nothing (CF).
    public func add(_ observer: RLObserver, forMode mode: RLMode) {
        guard mayJoin(observer) else { return }
        // (One mode, the usual case, is found once and recorded inline: no array per call.)
        var joined = ModeNames()
        locked {
            if mode.isCommonModes {
                if commonObservers.contains(where: { $0 === observer }) { return }
                commonObservers.append(observer)
                for m in targetModesLocked(mode) where addObserverLocked(observer, m) { joined.append(m) }
            } else if let m = modeLocked(mode, create: true), addObserverLocked(observer, m) {
                joined.append(m)
            }
        }
        for m in joined { RLTrace.itemAdded(loop: id, iteration: iteration, kind: .observer, item: observer.id, name: observer.name ?? "", mode: m.rawValue) }
    }

    /// Whether `o` may join this loop's modes: valid, and bound to this loop or to none (CF's
    /// `CFRunLoopAddObserver` check; the binding itself is made by ``addObserverLocked(_:_:)``).
    private func mayJoin(_ o: RLObserver) -> Bool {
        o.withState { s in s.valid && (!s.loop.bound || s.loop.isBound(to: self)) }
    }

    /// Adds an observer to one mode: binds it to this loop when it joins its first mode (CF's
    /// `__CFRunLoopObserverSchedule`); refused when invalid or bound to another loop.
    @discardableResult
    func addObserverLocked(_ o: RLObserver, _ m: ModeState) -> Bool {
        if m.observers.contains(where: { $0 === o }) { return false }
        let joined = o.withState { s -> Bool in
            guard s.valid, s.loop.claim(self) else { return false }
            s.modeCount += 1
            return true
        }
        guard joined else { return false }
        // After every observer of lower or equal order: ties keep insertion order.
        let i = m.observers.firstIndex(where: { $0.order > o.order }) ?? m.observers.count
        m.observers.insert(o, at: i)
        m.observerMask.bitwiseOr(o.activities.rawValue, ordering: .sequentiallyConsistent)
        return true
    }

    /// Removes an observer from `mode` (or every common mode). Out of all of this loop's modes, it
    /// belongs to no loop any more and may be added to another (CF).
    public func remove(_ observer: RLObserver, forMode mode: RLMode) {
        var left = ModeNames()
        locked {
            if mode.isCommonModes {
                guard let i = commonObservers.firstIndex(where: { $0 === observer }) else { return }
                commonObservers.remove(at: i)
                for m in commonModeNames.compactMap({ modes[$0] }) where removeObserverLocked(observer, m) { left.append(m) }
            } else if let m = modeLocked(mode, create: false), removeObserverLocked(observer, m) {
                left.append(m)
            }
        }
        for m in left { RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .observer, item: observer.id, name: observer.name ?? "", mode: m.rawValue) }
    }

    /// Takes an observer out of one mode; returns whether it was there.
    private func removeObserverLocked(_ observer: RLObserver, _ m: ModeState) -> Bool {
        guard let i = m.observers.firstIndex(where: { $0 === observer }) else { return false }
        m.observers.remove(at: i)
        m.observerMask.store(m.observers.reduce(0) { $0 | $1.activities.rawValue }, ordering: .sequentiallyConsistent)
        // Out of its last mode: no longer bound to this loop (CF's `__CFRunLoopObserverCancel`).
        observer.withState { s in
            s.modeCount -= 1
            if s.modeCount == 0 { s.loop = WeakLoop() }
        }
        return true
    }

    /// Whether `mode` holds `observer`.
    public func contains(_ observer: RLObserver, inMode mode: RLMode) -> Bool {
        locked {
            if mode.isCommonModes { return commonObservers.contains { $0 === observer } }
            return modes[mode]?.observers.contains { $0 === observer } ?? false
        }
    }

    func removeEverywhere(_ observer: RLObserver) {
        remove(observer, forMode: .commonModes)
        let names = locked { modes.values.filter { $0.observers.contains { $0 === observer } }.map(\.name) }
        for n in names { remove(observer, forMode: n) }
    }

    // MARK: - Timer registration

    /// Adds a timer to `mode` (or every common mode). A timer belongs to one loop while it is in any
    /// of its modes: adding it to another, or adding an invalidated one, does nothing (CF). O(log n).
    ///
    /// One section of the loop's lock, and inside it one of the timer's (``addTimerLocked(_:_:)``):
    /// no reference-count operation but the queue entry's retain of the timer (the binding holds
    /// the loop's handle unretained, the mode is lent unretained).
    public func add(_ timer: RLTimer, forMode mode: RLMode) {
        lock.lock()
        // The usual case, a mode the loop has (the one looked up last is recognised without
        // hashing and lent unretained: `withModeLocked`).
        if let added = withModeLocked(mode, create: false, { addTimerLocked(timer, $0) }) {
            unlockRearming()
            if added && RLTrace.isEnabled(.itemAdded) { traceTimerAdded(timer, CollectionOfOne(mode)) }
            return
        }
        let joined = addTimerSlowLocked(timer, mode)
        unlockRearming()
        // (Checked first: iterating `joined` copies it, which costs even when nobody records.)
        if RLTrace.isEnabled(.itemAdded) { traceTimerAdded(timer, joined) }
    }

    @inline(never)
    private func traceTimerAdded<S: Sequence>(_ timer: RLTimer, _ joined: S) where S.Element == RLMode {
        for m in joined { RLTrace.itemAdded(loop: id, iteration: iteration, kind: .timer, item: timer.id, name: timer.name ?? "", mode: m.rawValue) }
    }

    /// ``add(_:forMode:)`` for a mode the loop does not have yet, or the common pseudo-mode, with
    /// the lock held.
    @inline(never)
    private func addTimerSlowLocked(_ timer: RLTimer, _ mode: RLMode) -> ModeNames {
        var joined = ModeNames()
        // Checked first: an invalidated timer, or another loop's, creates no mode
        // (`addTimerLocked` binds it when it joins a mode).
        guard timer.withState({ $0.valid && (!$0.loop.bound || $0.loop.isBound(to: self)) }) else { return joined }
        if let m = modeLocked(mode, create: true) {
            if addTimerLocked(timer, m) { joined.append(m) }
        } else {
            // The common pseudo-mode (the one name `modeLocked` never creates): every common mode.
            if commonTimers[ObjectIdentifier(timer)] != nil { return joined }
            commonTimers[ObjectIdentifier(timer)] = timer
            for m in targetModesLocked(.commonModes) where addTimerLocked(timer, m) { joined.append(m) }
        }
        return joined
    }

    /// Adds a timer to one mode: claims it for this loop (a timer belongs to one loop; invalidated
    /// ones are refused) and records the membership in one section of its lock, then queues it.
    /// The claim cannot race with another loop's: both are made under the timer's lock, the first
    /// one wins and the other sees the binding (`EngineFastPathTests.timerAddedToTwoLoopsAtOnceJoinsOne`).
    @discardableResult
    @inline(__always)
    func addTimerLocked(_ t: RLTimer, _ m: ModeState) -> Bool {
        nextStamp &+= 1
        let stamp = nextStamp
        let mid = ObjectIdentifier(m)
        var fire: UInt64 = 0, tol: UInt64 = 0
        let joined: Bool = t.withState { s in
            guard s.valid, s.loop.claim(self), s.memberships.stamp(in: mid) == nil else { return false }
            s.memberships.append(TimerMemberships.Membership(mode: m, stamp: stamp))
            fire = s.fireNs
            tol = s.toleranceNs
            return true
        }
        guard joined else { return false }
        m.timers.insert(t, fireNs: fire, toleranceNs: tol, stamp: stamp, isNew: true)
        return true
    }

    /// Removes a timer from one mode; out of its last mode it is no longer bound to this loop (CF's
    /// `CFRunLoopRemoveTimer`): a due timer removed so by an earlier callout of the pass does not fire.
    func removeTimerLocked(_ t: RLTimer, _ m: ModeState) -> Bool {
        let removed = t.withState { s -> Bool in
            guard s.memberships.remove(m) else { return false }
            if s.memberships.isEmpty { s.loop.unbind() }
            return true
        }
        guard removed else { return false }
        m.timers.removed()
        return true
    }

    /// Removes a timer from `mode` (or every common mode). If it was the next to fire, the wake-up
    /// timer is re-armed at once (no spurious wake, unlike CF on Linux). Out of all of this loop's
    /// modes, it belongs to no loop any more and may be added to another (CF).
    public func remove(_ timer: RLTimer, forMode mode: RLMode) {
        var left = ModeNames()
        lockedRearming {
            // A mode the loop has (no array, no name comparison), or else the common pseudo-mode.
            let found: Void? = withModeLocked(mode, create: false) { m in
                if removeTimerLocked(timer, m) { left.append(m) }
            }
            if found == nil && mode.isCommonModes {
                guard commonTimers.removeValue(forKey: ObjectIdentifier(timer)) != nil else { return }
                for m in commonModeNames.compactMap({ modes[$0] }) where removeTimerLocked(timer, m) { left.append(m) }
            }
        }
        if RLTrace.isEnabled(.itemRemoved) {
            for m in left { RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .timer, item: timer.id, name: timer.name ?? "", mode: m.rawValue) }
        }
    }

    /// Whether `mode` holds `timer` (false when the timer is not bound to this loop, as in CF's
    /// `CFRunLoopContainsTimer`).
    public func contains(_ timer: RLTimer, inMode mode: RLMode) -> Bool {
        locked {
            guard timer.withState({ $0.loop.isBound(to: self) }) else { return false }
            if mode.isCommonModes { return commonTimers[ObjectIdentifier(timer)] != nil }
            return modes[mode]?.timers.contains(timer) ?? false
        }
    }

    /// Removes a timer from every mode of this loop in one pass (invalidation).
    func removeEverywhere(_ timer: RLTimer) {
        var left = TimerMemberships()
        lockedRearming {
            commonTimers.removeValue(forKey: ObjectIdentifier(timer))
            left = timer.withState { s in
                let ms = s.memberships
                s.memberships.removeAll()
                if s.loop.isBound(to: self) { s.loop.unbind() }
                return ms
            }
            left.forEach { $0.withTimers { $0.removed() } }
        }
        left.forEach { m in
            RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .timer, item: timer.id, name: timer.name ?? "", mode: m.mode.name.rawValue)
        }
    }

    /// Applies `change` to a timer of this loop and repositions it in every mode it is in (a firing
    /// timer too: its new place is ignored while its callout runs). Returns false, changing nothing,
    /// when the timer is not (any more) bound to this loop.
    func reschedule(_ t: RLTimer, _ change: (inout RLTimer.State) -> Void) -> Bool {
        var fire: UInt64 = 0, interval: UInt64 = 0
        let bound: Bool = lockedRearming {
            var tol: UInt64 = 0
            var bound = true
            let ms: TimerMemberships = t.withState { s in
                guard s.loop.isBound(to: self) else { bound = false; return TimerMemberships() }
                change(&s)
                fire = s.fireNs
                interval = s.intervalNs
                tol = s.toleranceNs
                guard s.valid else { return TimerMemberships() }
                return restampLocked(&s)
            }
            guard bound else { return false }
            repositionTimerLocked(t, in: ms, fireNs: fire, toleranceNs: tol)
            return true
        }
        guard bound else { return false }
        RLTrace.timerArmed(loop: id, item: t.id, fireNs: fire, intervalNs: interval, missedFires: 0)
        return true
    }

    /// CF's `__CFRepositionTimerInMode`, first half, with the timer's state locked (and the loop's):
    /// a new stamp for each mode the timer is in, so its entries in those queues go stale. Returns
    /// the memberships for ``repositionTimerLocked(_:in:fireNs:toleranceNs:)``.
    func restampLocked(_ s: inout RLTimer.State) -> TimerMemberships {
        s.memberships.restamp { nextStamp &+= 1; return nextStamp }
        return s.memberships
    }

    /// CF's `__CFRepositionTimerInMode`, second half, with the loop's lock held: places the timer at
    /// `fireNs` in the queue of each mode of `ms`. Serves both callers: a date set from outside
    /// (``reschedule(_:_:)``) and a repeating timer's next date after it fired (`doTimer`).
    func repositionTimerLocked(_ t: RLTimer, in ms: TimerMemberships, fireNs: UInt64, toleranceNs: UInt64) {
        ms.forEach { m in m.withTimers { $0.insert(t, fireNs: fireNs, toleranceNs: toleranceNs, stamp: m.stamp, isNew: false) } }
    }

    /// The next fire date of `mode`'s first timer (CF's `CFRunLoopGetNextTimerFireDate`): its
    /// ``RLTimer/nextFireDate`` — the date as given, even a past one — where timers are taken in
    /// the order they fire, a timer whose callout is running included. Nil when the mode does not
    /// exist or has no timer (CF returns 0), when its first timer was just invalidated, and for
    /// ``RLMode/commonModes`` (not a mode). Any thread.
    public func nextTimerFireDate(forMode mode: RLMode) -> RLInstant? {
        let first: RLTimer? = locked { modes[mode].flatMap { m in m.timers.first() } }
        return first?.nextFireDate
    }

    /// Foundation's `RunLoop.limitDate(forMode:)`: polls `mode` once (firing due timers, running
    /// queued blocks and signalled sources, returning after the first source handled), then returns
    /// nil if the mode has nothing to wait for (missing or empty), ``RLInstant/distantFuture`` if it
    /// has no timer, else ``nextTimerFireDate(forMode:)``. Nil when called on another thread than the
    /// loop's (Foundation's rule).
    public func limitDate(forMode mode: RLMode) -> RLInstant? {
        guard isOnLoopThread else { return nil }
        _ = runSpecific(mode: mode, seconds: -10, stopAfterHandle: true)
        if isFinished(mode) { return nil }
        return nextTimerFireDate(forMode: mode) ?? .distantFuture
    }

    /// Whether a run of `mode` would return ``RLRunResult/finished`` at once: the mode does not
    /// exist, is the common pseudo-mode, or has no source, timer or block for it (CF's
    /// `_CFRunLoopFinished`, which Foundation's `run(mode:before:)` and `limitDate(forMode:)` use).
    /// Any thread.
    public func isFinished(_ mode: RLMode) -> Bool {
        locked { deallocating || (modeLocked(mode, create: false).map { isEmptyLocked($0) } ?? true) }
    }

    /// `body` under the loop's lock, for a change that may move a mode's next timer deadline (a
    /// timer added, removed, invalidated or re-dated; a mode made common, which copies the common
    /// timers into it): every such change goes through here (or ``unlockRearming()``), from any
    /// thread, as CF re-arms a mode's timer in each (`__CFRepositionTimerInMode`,
    /// `__CFArmNextTimerInMode`). While the loop sleeps, its timer is re-armed for the running
    /// mode's deadline before the lock is given back, and when that deadline is due already the
    /// loop is woken (see ``unlockRearming()``).
    @inline(__always)
    func lockedRearming<R>(_ body: () -> R) -> R {
        lock.lock()
        let r = body()
        unlockRearming()
        return r
    }

    /// Gives the lock back after a change that may move a mode's next timer deadline: while the
    /// loop sleeps, re-arms its timer for the running mode's earliest deadline and, when that is
    /// due already, rings the loop's doorbell (`Waiter.ring()`) once the lock is given back — the
    /// doorbell ends the wait as a timer wake at once; a timerfd set to a past time is a slow
    /// system call on a VM (`Waiter.arm`; docs/benchmarks.md, "A timer due at once"). Rung after
    /// the unlock: the woken loop takes the lock at once, and finding it still held it would park
    /// and need a second wake-up. Removals ring too: a later deadline may be past already when the
    /// loop has not yet taken the timerfd's expiry for the earlier one, which the re-arm resets.
    @inline(__always)
    func unlockRearming() {
        let ring = sleeping && rearmSleepingLocked()
        lock.unlock()
        if ring { waiter.ring() }
    }

    @inline(never)
    private func rearmSleepingLocked() -> Bool {
        guard let m = currentModeState?.takeUnretainedValue() else { return false }
        return armTimerLocked(m, deadline: perRun[perRun.count - 1].deadline)
    }
}
