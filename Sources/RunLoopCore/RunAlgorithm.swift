#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import RunLoopTracing
import RunLoopSchema

/// CF's TIMER_INTERVAL_LIMIT in seconds: a run timeout longer than this means "no timeout".
let runTimeoutLimit = 504_911_232.0

// The run algorithm, readable top to bottom as CF's `CFRunLoopRunSpecific` + `__CFRunLoopRun`
// (the step numbers are those of the reference, docs/runloop-semantics.md), followed by the
// per-kind "do" functions. They call user code only through the trampolines of Callouts.swift
// (one per callout kind, where the tracepoints sit); the block queue's drains are in BlockQueue.swift.
extension RLRunLoop {

    /// CFRunLoopRunSpecific.
    func runSpecific(mode: RLMode, seconds: Double, stopAfterHandle: Bool) -> RLRunResult {
        // Step 1: an invalid mode, or a missing or empty one, finishes at once (no entry/exit). The
        // common pseudo-mode is never a mode of the loop (`modeLocked` does not create it), so it is
        // "missing" here without a string comparison on every run.
        let found: (m: Unmanaged<ModeState>, previous: Unmanaged<ModeState>?, deadline: UInt64)? = locked {
            guard !deallocating else { return nil }
            return withModeLocked(mode, create: false) { m -> (Unmanaged<ModeState>, Unmanaged<ModeState>?, UInt64)? in
                guard !isEmptyLocked(m) else { return nil }
                // Step 2 (same lock section): push per-run flags, a new activation accepting wake-ups;
                // save and set the current mode.
                let deadline: UInt64 = seconds <= 0 ? 0
                    : (seconds <= runTimeoutLimit ? rl_monotonic_ns() &+ UInt64(seconds * 1e9) : .max)
                perRun.append(PerRun(stopped: false, outerIgnoresWakeUps: ignoresWakeUps.load(ordering: .relaxed), deadline: deadline))
                // (Release is enough here: step 1 of every pass stores it again, sequentially
                // consistent, before the pass looks for work; a waker that reads the old value just
                // before this store is one that came before the run.)
                ignoresWakeUps.store(false, ordering: .releasing)
                let p = currentModeState
                currentModeState = .passUnretained(m)
                return (.passUnretained(m), p, deadline)
            } ?? nil
        }
        guard let (mode_, previous, deadline) = found else { return .finished }
        // The mode is used unretained (no retain/release pair per run): `modes` owns every mode and
        // never removes one while the loop lives.
        return mode_._withUnsafeGuaranteedRef { m in
            depth += 1
            let outerWatch = watchRunBegin()   // hang watchdog: "in the loop's own code" (Watchdog.swift)
            let enclosingIteration = iteration
            RLTrace.runEnter(loop: id, iteration: enclosingIteration, mode: mode.rawValue,
                             timeoutNs: seconds <= 0 ? 0 : (seconds <= runTimeoutLimit ? Int64(seconds * 1e9) : -1),
                             returnAfterSourceHandled: stopAfterHandle, depth: depth)
            doObservers(m, .entry)
            let result = runActivation(m, stopAfterHandle: stopAfterHandle, deadline: deadline)
            doObservers(m, .exit)
            RLTrace.runExit(loop: id, iteration: iteration, mode: mode.rawValue, result: UInt8(result.rawValue), depth: depth)
            watchRestore(outerWatch)
            depth -= 1
            // Nested in a callout: the enclosing pass is the loop's iteration again.
            if depth > 0 { iterationCounter.store(enclosingIteration, ordering: .relaxed) }
            locked {
                // Pop the per-run flags: the enclosing activation (or the idle loop) ignores wake-ups
                // again if it did when this one began. Accepting again must be sequentially
                // consistent (the enclosing pass goes on looking for work, as after step 1); ignoring
                // needs only release (a waker that misses it wakes the loop once more, harmlessly).
                if perRun.removeLast().outerIgnoresWakeUps {
                    ignoresWakeUps.store(true, ordering: .releasing)
                } else {
                    ignoresWakeUps.store(false, ordering: .sequentiallyConsistent)
                }
                currentModeState = previous
            }
            return result
        }
    }

    /// CF's `__CFRunLoopModeIsEmpty`: no source0, source1, timer or block for it; observers do not
    /// count; the main loop in a common mode stands for the main queue (outside its drain).
    func isEmptyLocked(_ m: ModeState) -> Bool {
        if isMainLoop && !inMainQueueCallout && m.isCommon { return false }
        if !m.sources0.isEmpty || !m.sources1.isEmpty || !m.timers.isEmpty { return false }
        // The loop thread's own blocks are all for one mode (see ``ownBlocks``).
        if ownBlocksMode.load(ordering: .acquiring) == UInt(bitPattern: ObjectIdentifier(m)) { return false }
        if blocks.isEmpty { return true }
        return !blocks.containsBlock(for: m, isCommon: m.isCommon)
    }

    /// CF's `__CFRunLoopRun`: the iterations of one activation.
    /// `deadline`: the activation's absolute deadline (its per-run data's; 0 = poll, `.max` = none).
    func runActivation(_ m: ModeState, stopAfterHandle: Bool, deadline: UInt64) -> RLRunResult {
        // Step 0: stopped before it began? (Only when a stop was requested since the last look:
        // `stopRequested` is set with every stop flag, so most runs check it without the lock.)
        if stopRequested.load(ordering: .acquiring), let early = locked({ () -> RLRunResult? in
            let top = perRun.count - 1
            defer { stopRequested.store(perRun.dropFirst().contains { $0.stopped }, ordering: .releasing) }
            if perRun[top].stopped { perRun[top].stopped = false; return .stopped }
            if m.stopped { m.stopped = false; return .stopped }
            return nil
        }) { return early }
        let servesMainQueue = isMainLoop && !inMainQueueCallout && locked { m.isCommon }
        var didDispatchLastTime = true
        var result: RLRunResult?

        repeat {
            let it = lastIteration &+ 1
            lastIteration = it
            iterationCounter.store(it, ordering: .relaxed)
            let calloutsAtStart = calloutCount
            RLTrace.iterationBegin(loop: id, iteration: it)

            // Step 1: accept wake-ups again (an atomic flag: ``wakeUp()`` reads it without the lock;
            // sequentially consistent, so a waker that still saw "ignoring" queued its work before
            // the checks below, which then see it); beforeTimers, beforeSources.
            ignoresWakeUps.store(false, ordering: .sequentiallyConsistent)
            doObservers(m, .beforeTimers)
            doObservers(m, .beforeSources)
            // Step 2: blocks for this mode.
            doBlocks(m)
            // Step 3: signalled source0s; blocks again if any was handled.
            var handled = doSources0(m, stopAfterHandle: stopAfterHandle)
            if handled { doBlocks(m) }
            // Step 4: poll when a source was handled or the timeout is zero.
            let poll = handled || deadline == 0

            var wake: Waiter.Wake?
            // Step 5: main loop, common mode: peek at the main queue if not serviced last time.
            var peeked = false
            if servesMainQueue && !didDispatchLastTime && Waiter.isReadable(mainQueueFD) {
                wake = .mainQueue
                peeked = true
            }
            didDispatchLastTime = false

            if !peeked {
                // Step 6: beforeWaiting (no user callout from here to the wake).
                if !poll { doObservers(m, .beforeWaiting) }
                // Steps 7–8: sleep on the mode's wait set (wake-up, timer, source1s, main queue), or
                // only look when polling; from the wake on, ignore wake-ups until the next iteration.
                wake = serviceWaitSet(m, iteration: it, poll: poll, deadline: deadline)
                // Step 8: afterWaiting.
                if !poll { doObservers(m, .afterWaiting) }
            } else {
                // Step 8 for the peek path.
                ignoresWakeUps.store(true, ordering: .releasing)
                RLTrace.wake(loop: id, reason: .mainQueue, fd: mainQueueFD, sleptNs: 0)
            }

            // Step 9: handle what woke it — one thing per iteration.
            switch wake {
            case .wakeUp?:
                waiter.drainWake()
            case .timer?:
                locked { waiter.timerFired() }
                doTimers(m, now: rl_monotonic_ns())
            case .mainQueue?:
                if servesMainQueue && !inMainQueueCallout {
                    serviceMainQueue()
                    handled = true
                    didDispatchLastTime = true
                } else {
                    suspendMainQueueLocked(m)
                }
            case .source1(let sid, let readiness)?:
                if let s = locked({ m.sources1[sid] }) {
                    handled = doSource1(s, events: readiness.rawValue) || handled
                } else {
                    // A registration the mode no longer has (its fd was closed behind the
                    // source's back while a dup keeps the file open): drop it with the set.
                    locked { rebuildModeSetLocked(m) }
                }
            case nil:
                break
            }
            // Step 10: blocks again.
            doBlocks(m)

            // Step 11: decide. (The first two checks need no lock, and a poll's deadline, 0, is
            // always past: a poll pass decides without the lock or the clock.)
            result = handled && stopAfterHandle ? .handledSource
                : deadline == 0 ? .timedOut
                : locked { () -> RLRunResult? in
                let top = perRun.count - 1
                if deadline != .max && deadline < rl_monotonic_ns() { return .timedOut }
                if perRun[top].stopped { perRun[top].stopped = false; return .stopped }
                if m.stopped { m.stopped = false; return .stopped }
                if isEmptyLocked(m) { return .finished }
                return nil
            }
            RLTrace.iterationEnd(loop: id, handledSource: handled, callouts: calloutCount &- calloutsAtStart)
        } while result == nil
        return result!
    }

    /// Steps 7 and 8 of a pass (CF's `__CFRunLoopServiceMachPort` on the mode's port set, and the
    /// lock section after it): arms the timer for the earliest of the mode's timers and the run's
    /// deadline, waits on the mode's wait set (not at all when `poll`), then, from the wake on,
    /// ignores wake-ups until the next iteration. Returns what ended the wait; nil for a timeout or
    /// a poll that found nothing. The `sleep_begin`/`wake` events are written here, and the clock is
    /// read for them only when a session records them.
    @inline(__always)
    private func serviceWaitSet(_ m: ModeState, iteration it: UInt64, poll: Bool, deadline: UInt64) -> Waiter.Wake? {
        if poll, let polled = pollOwnFDs(m, iteration: it, deadline: deadline) { return polled }
        return waitOnSet(m, iteration: it, poll: poll, deadline: deadline)
    }

    /// ``serviceWaitSet(_:iteration:poll:deadline:)`` when it waits (or polls a set holding other fds).
    @inline(never)
    private func waitOnSet(_ m: ModeState, iteration it: UInt64, poll: Bool, deadline: UInt64) -> Waiter.Wake? {
        var ownFDsOnly = false
        let armed: UInt64 = locked {
            sleeping = true
            // Armed even for a poll: it also resets a timerfd left expired by an earlier run,
            // which would otherwise end this wait as a stale "timer" wake (a no-op when unchanged).
            // Due already: the doorbell, not a timerfd set to the past (`Waiter.arm`).
            if armTimerLocked(m, deadline: deadline) { waiter.ring() }
            ownFDsOnly = m.sources1.isEmpty && !m.mainQueueRegistered
            return waiter.armedDeadline
        }
        let sleepStart = poll ? 0 : traceSleepBegin(iteration: it, deadline: deadline, armed: armed)
        // A poll of a set holding only the loop's own fds makes no system call: the waiter knows
        // whether a wake-up is pending, and whether the deadline the timer was just armed for has
        // passed (see `Waiter.pollOwnFDs`).
        if !poll { watchAsleep(true) }   // asleep is not hung (hang watchdog)
        var wake = poll && ownFDsOnly ? waiter.pollOwnFDs(armed: armed)
            : waiter.wait(on: m.waitSet, poll: poll) { locked { waiter.armedDeadlinePassed() } }
        if !poll { watchAsleep(false) }
        let traceWake = RLTrace.isEnabled(.wake)
        let now = traceWake ? rl_monotonic_ns() : 0
        let reason = locked { () -> RLWakeReason in
            sleeping = false
            // (Release is enough for "ignoring": a waker that misses it only wakes once more.)
            ignoresWakeUps.store(true, ordering: .releasing)
            if wake == nil && poll { wake = dueTimerWakeLocked(m, now: now) }
            return traceWake ? wakeReasonLocked(wake, m, now: now, deadline: deadline) : .none
        }
        // A poll that found nothing writes no `wake`: the iteration's end says it (docs/tracepoints.md,
        // "wake").
        if traceWake && (!poll || wake != nil) {
            RLTrace.wake(loop: id, reason: reason, fd: wakeFD(wake), sleptNs: poll ? 0 : now &- sleepStart)
        }
        return wake
    }

    /// ``serviceWaitSet(_:iteration:poll:deadline:)`` for a poll of a set holding only the loop's own
    /// fds (no source1, not the main queue): the same steps in one section of the lock and without a
    /// system call (the waiter knows whether a wake-up is pending, and whether the deadline the timer
    /// was just armed for has passed: see `Waiter.pollOwnFDs`). A poll never sleeps, so `sleeping`
    /// stays false. Returns nil (`.none`) when the set holds other fds: the caller then polls it.
    private func pollOwnFDs(_ m: ModeState, iteration it: UInt64, deadline: UInt64) -> Waiter.Wake?? {
        let traceWake = RLTrace.isEnabled(.wake)
        var reason = RLWakeReason.none
        let polled: Waiter.Wake?? = locked {
            guard m.sources1.isEmpty && !m.mainQueueRegistered else { return .none }
            // Armed even for a poll (see `waitOnSet`). A deadline already due needs no doorbell
            // here: the poll below sees it, and until a timer wake is handled every later arm of
            // it asks for the doorbell again (`Waiter.arm`), so no wait sleeps through it.
            armTimerLocked(m, deadline: deadline)
            var wake = waiter.pollOwnFDs(armed: waiter.armedDeadline)
            let now = traceWake ? rl_monotonic_ns() : 0
            ignoresWakeUps.store(true, ordering: .releasing)
            if wake == nil { wake = dueTimerWakeLocked(m, now: now) }
            if traceWake { reason = wakeReasonLocked(wake, m, now: now, deadline: deadline) }
            return .some(wake)
        }
        guard let polled else { return nil }
        if traceWake && polled != nil { RLTrace.wake(loop: id, reason: reason, fd: wakeFD(polled), sleptNs: 0) }
        return .some(polled)
    }

    /// Arms the loop's timer for the wait of a pass over `m`: the earliest fire + tolerance of its
    /// timers not firing, or the run's deadline if earlier (`deadline`: the activation's; 0, a
    /// poll's, does not count). Returns whether the deadline is due already, so that a waiter must
    /// be woken by the doorbell (`Waiter.arm`). Called for the pass's own wait and, while the loop
    /// sleeps, by every change that can move the deadline (``RLRunLoop/lockedRearming(_:)``).
    @inline(__always) @discardableResult
    func armTimerLocked(_ m: ModeState, deadline: UInt64) -> Bool {
        waiter.arm(deadline == 0 ? m.timers.hardDeadline() : min(m.timers.hardDeadline(), deadline))
    }

    /// A poll's "timer" wake when one of `m`'s timers is due (`now`, or the clock when 0): CF arms a
    /// mode's timer when a timer is added, so even a poll sees an already-due timer as a timer
    /// wake; our timerfd is armed lazily, so a poll checks the queue. Nil when none is due.
    @inline(__always)
    private func dueTimerWakeLocked(_ m: ModeState, now: UInt64) -> Waiter.Wake? {
        let fire = m.timers.earliestFire()
        return fire != .max && fire <= (now != 0 ? now : rl_monotonic_ns()) ? .timer : nil
    }

    /// Writes `sleep_begin` when a session records it; returns the sleep's start time (0 if not read).
    private func traceSleepBegin(iteration it: UInt64, deadline: UInt64, armed: UInt64) -> UInt64 {
        guard RLTrace.isEnabled(.sleepBegin) || RLTrace.isEnabled(.wake) else { return 0 }
        let start = rl_monotonic_ns()
        RLTrace.sleepBegin(loop: id, timeoutNs: deadline == .max ? -1 : Int64(clamping: deadline &- start),
                           deadlineNs: armed == .max ? 0 : armed)
        return start
    }

    /// The descriptor behind a wake, for the trace (-1 for none).
    private func wakeFD(_ wake: Waiter.Wake?) -> Int32 {
        switch wake {
        case nil: return -1
        case .wakeUp?: return waiter.wakeFD
        case .timer?: return waiter.timerFD
        case .mainQueue?: return mainQueueFD
        case .source1(let sid, _)?: return source1ByID[sid]?.fd ?? -1
        }
    }

    /// Names the wake for the trace. A timer expiry with no timer due is the run's timeout.
    private func wakeReasonLocked(_ wake: Waiter.Wake?, _ m: ModeState, now: UInt64, deadline: UInt64) -> RLWakeReason {
        switch wake {
        case nil: return .none
        case .wakeUp?: return deadline != 0 && deadline <= now ? .timeout : .wakeUp
        case .timer?: return m.timers.earliestFire() <= now ? .timer : (deadline != 0 && deadline <= now ? .timeout : .timer)
        case .mainQueue?: return .mainQueue
        case .source1?: return .source1
        }
    }

    /// The main queue's fd woke a run that may not drain it (inside the drain): take the fd out of
    /// this mode's set until the drain ends, so the nested run does not spin on it.
    private func suspendMainQueueLocked(_ m: ModeState) {
        locked {
            guard m.mainQueueRegistered else { return }
            waiter.deregister(mainQueueFD, from: m.waitSet)
            m.mainQueueRegistered = false
            mainQueueSuspended.append(m)
        }
    }

    // MARK: - Doing each kind

    /// CF's `__CFRunLoopDoObservers`: snapshot the matching observers, then call each still valid.
    @inline(__always)
    func doObservers(_ m: ModeState, _ activity: RLActivity) {
        // The mask is atomic: a mode nobody observes for `activity` costs one load, no lock (and,
        // inlined, no call).
        if m.observerMask.load(ordering: .sequentiallyConsistent) & activity.rawValue != 0 { callObservers(m, activity) }
    }

    @inline(never)
    private func callObservers(_ m: ModeState, _ activity: RLActivity) {
        var list = observerScratch.popLast() ?? []
        locked {
            for o in m.observers where o.activities.rawValue & activity.rawValue != 0 {
                if o.withState({ $0.valid && !$0.firing }) { list.append(o) }
            }
        }
        for o in list {
            let fire = o.withState { s -> Bool in
                guard s.valid else { return false }
                s.firing = true
                return true
            }
            guard fire else { continue }
            calloutToObserver(o, activity)
            if !o.repeats { o.invalidate() }
            o.withState { $0.firing = false }
        }
        list.removeAll(keepingCapacity: true)
        observerScratch.append(list)
    }

    /// CF's `__CFRunLoopDoBlocks`: run the queued blocks for this mode in FIFO order; others keep
    /// their order, ahead of blocks queued meanwhile.
    @discardableResult
    func doBlocks(_ m: ModeState) -> Bool {
        // The blocks queued are the loop thread's own (``ownBlocks``: unnamed, all for one mode)
        // followed by those of `blocks`. While `blocks` is empty, the own blocks are all there is:
        // drained without the lock (only this thread touches them), and not looked at when they
        // are for another mode.
        if !hasSharedBlocks.load(ordering: .acquiring) {
            guard !ownBlocks.isEmpty, ownBlocksMode.load(ordering: .relaxed) == UInt(bitPattern: ObjectIdentifier(m)) else { return false }
            return ownDrainQueues.withEmptyQueue { drainOwnBlocks(into: $0) }
        }
        // The queue is swapped for the loop's drain queue, an empty one that kept its buffer from an
        // earlier pass (no allocation for the blocks queued meanwhile), which is then drained: each
        // block is moved out. A run nested in a block, while the drain queue is in use, uses a spare.
        return drainQueues.withEmptyQueue { drainBlocks(m, into: $0) }
    }

    /// CF's `__CFRunLoopDoSources0`: the signalled sources, by order then signal time, each
    /// unsignalled before its perform. Like CF, the result is that of the last source tried.
    func doSources0(_ m: ModeState, stopAfterHandle: Bool) -> Bool {
        // A mode without source0s costs one atomic load, no lock (see ``ModeState/hasSources0``).
        guard m.hasSources0.load(ordering: .sequentiallyConsistent) else { return false }
        // Snapshot the signalled sources. A single one (the usual case) needs no list; several go
        // into a reused scratch list.
        var one: RLSource0?
        var list: [RLSource0] = []
        locked {
            for s in m.sources0 where s.withState({ $0.valid && $0.signalled }) {
                if let first = one {
                    list = source0Scratch.popLast() ?? []
                    list.append(first)
                    one = nil
                }
                if list.isEmpty { one = s } else { list.append(s) }
            }
        }
        if let one { return doSource0(one) }
        if list.isEmpty { return false }
        var handled = false
        if list.count > 1 {
            let keyed = list.map { s in (s, s.withState { $0.signalSeq }) }
            list = keyed.sorted { $0.0.order != $1.0.order ? $0.0.order < $1.0.order : $0.1 < $1.1 }.map(\.0)
        }
        for s in list {
            handled = doSource0(s)
            if stopAfterHandle && handled { break }
        }
        list.removeAll(keepingCapacity: true)
        source0Scratch.append(list)
        return handled
    }

    private func doSource0(_ s: RLSource0) -> Bool {
        let go = s.withState { st -> Bool in
            guard st.signalled else { return false }
            st.signalled = false
            return st.valid
        }
        if go { calloutToSource0(s) }
        return go
    }

    /// CF's `__CFRunLoopDoTimers` / `__CFRunLoopDoTimer`: fire the due timers in fire order; then a
    /// one-shot timer is invalidated and a repeating one moves to the first `fire + k·interval`
    /// after now (missed fires skipped, phase kept) unless its callout set a later date.
    @discardableResult
    func doTimers(_ m: ModeState, now: UInt64) -> Bool {
        var due = timerScratch.popLast() ?? []
        let round = locked { m.timers.collectDue(now: now, into: &due) }
        var fires = 0
        // The timers are lent to `doTimer` from `due`'s storage, unretained (a retain/release pair
        // less per timer): `due` holds a reference to each until after the loop, and nothing else
        // touches this array meanwhile (a nested run's `doTimers` takes another from the scratch).
        due.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: Unmanaged<RLTimer>.self) { timers in
                for t in timers where t._withUnsafeGuaranteedRef({ doTimer(m, $0, collectedAt: now) }) { fires += 1 }
            }
        }
        // Every timer fired (the usual case): their queue entries are all stale, dropped unread.
        if !due.isEmpty { locked { m.timers.finishDue(round: round, allFired: fires == due.count) } }
        due.removeAll(keepingCapacity: true)
        timerScratch.append(due)
        return fires > 0
    }

    /// `collectedAt`: the time the timer was collected as due; the clock is read again only for a
    /// timer whose date was moved past it since (the check is "due now").
    private func doTimer(_ m: ModeState, _ t: RLTimer, collectedAt: UInt64) -> Bool {
        // Fired only if still valid, due, not firing (a nested run inside its own callout), and still
        // bound to this loop (not removed from all its modes by an earlier callout of this pass).
        let go: (old: UInt64, oneShot: Bool)? = t.withState { s in
            guard s.valid, s.fireNs <= collectedAt || s.fireNs <= rl_monotonic_ns(), !s.firing, s.loop.isBound(to: self) else { return nil }
            s.firing = true
            return (s.fireNs, s.intervalNs == 0)
        }
        guard let go else { return false }
        calloutToTimer(t, scheduled: go.old)
        if go.oneShot {
            invalidateFiredOneShot(t)
            return true
        }
        var armed: (fire: UInt64, interval: UInt64, missed: UInt64)?
        var elsewhere: RLRunLoop?
        locked {
            var tol: UInt64 = 0
            let ms: TimerMemberships = t.withState { s in
                s.firing = false
                guard s.valid, s.intervalNs > 0 else { return TimerMemberships() }
                // A date set during the callout later than the one fired is kept (it was placed by
                // `setNextFireDate`). Since a past date means "now", any date set during the callout is.
                if go.old < s.fireNs { return TimerMemberships() }
                let after = rl_monotonic_ns()
                var next = go.old
                var missed: UInt64 = 0
                if after >= go.old {
                    let k = (after - go.old) / s.intervalNs + 1
                    let (prod, o1) = k.multipliedReportingOverflow(by: s.intervalNs)
                    let (sum, o2) = go.old.addingReportingOverflow(prod)
                    next = (o1 || o2) ? UInt64(Int64.max) : min(sum, UInt64(Int64.max))
                    missed = k - 1
                }
                armed = (next, s.intervalNs, missed)
                tol = s.toleranceNs
                guard s.loop.isBound(to: self) else {
                    // Left all of this loop's modes during its callout: placed by the loop it joined
                    // since, if any (below, outside this lock), else only its date changes.
                    elsewhere = s.loop.loop
                    if elsewhere == nil { s.fireNs = next; s.dateNs = next }
                    return TimerMemberships()
                }
                s.fireNs = next
                s.dateNs = next
                return restampLocked(&s)
            }
            if let armed { repositionTimerLocked(t, in: ms, fireNs: armed.fire, toleranceNs: tol) }
        }
        if elsewhere != nil, let next = armed?.fire {
            // Placed in the modes of the loop it now belongs to, under that loop's lock (unless a
            // date was set meanwhile).
            t.update { s in
                guard s.valid, go.old >= s.fireNs else { return }
                s.fireNs = next
                s.dateNs = next
            }
        }
        if let armed {
            RLTrace.timerArmed(loop: id, item: t.id, fireNs: armed.fire,
                               intervalNs: armed.interval, missedFires: UInt32(clamping: armed.missed))
        }
        return true
    }

    /// A one-shot timer after its callout: invalidated, then no longer firing — `t.invalidate()`
    /// followed by the section that clears `firing`, in one section of the loop's lock when the timer
    /// is still bound to this loop (the usual case; `removeEverywhere` does the same removal).
    private func invalidateFiredOneShot(_ t: RLTimer) {
        var left = TimerMemberships()
        let done: Bool = locked {
            let r: TimerMemberships?? = t.withState { s in
                // Moved to another loop, or out of all of this one's modes, by its callout: below.
                guard s.loop.isBound(to: self) else { return nil }
                s.firing = false
                guard s.valid else { return .some(nil) }   // its callout invalidated it
                s.valid = false
                let ms = s.memberships.takeAll()
                s.loop.unbind()
                return .some(ms)
            }
            guard let r else { return false }
            if let ms = r {
                if !commonTimers.isEmpty { commonTimers.removeValue(forKey: ObjectIdentifier(t)) }
                ms.forEach { $0.withTimers { $0.removed() } }   // (the loop is not asleep: no re-arm)
                left = ms
            }
            return true
        }
        guard done else {
            t.invalidate()
            locked { t.withState { $0.firing = false } }
            return
        }
        if RLTrace.isEnabled(.itemRemoved) {
            left.forEach { m in
                RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .timer, item: t.id, name: t.name ?? "", mode: m.mode.name.rawValue)
            }
        }
    }

    /// CF's `__CFRunLoopDoSource1`.
    private func doSource1(_ s: RLSource1, events: UInt32) -> Bool {
        guard s.isValid else { return false }
        calloutToSource1(s, events: events)
        return true
    }

    /// Drains the main dispatch queue (read the eventfd first: libdispatch does not reset it).
    private func serviceMainQueue() {
        var v: UInt64 = 0
        _ = read(mainQueueFD, &v, 8)
        inMainQueueCallout = true
        calloutToMainQueue()
        inMainQueueCallout = false
        locked {
            for sm in mainQueueSuspended { registerMainQueueLocked(sm) }
            mainQueueSuspended.removeAll()
        }
    }
}
