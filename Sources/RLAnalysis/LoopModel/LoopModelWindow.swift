/// The loop model's time window (the rule: docs/report-json.md, "Selection and time window"): past
/// the window's end, the loops with an iteration open at it are followed until it ends, and the
/// descriptions of what the window saw undescribed are awaited (docs/tracepoints.md, "Constant
/// pools"); then nothing more can count and the reader may stop.
extension LoopModel {
    /// The first event after the window's end: the loops with an iteration open are followed until
    /// it ends; nothing else after the window counts.
    func reachWindowEnd() {
        reachedWindowEnd = true
        for s in states where s.open > 0 { s.followsPastWindow = true; followed += 1 }
        if followed == 0 { endWindow() }
    }

    func endWindow() {
        // A loop or item the window saw but no description named yet (a snapshot, or a session
        // that joined late): the constant pools are described again within a period, so the
        // descriptions are read on (nothing else counts) for up to `describedWithinNs` of trace.
        if awaitingDescriptionsUntil == 0, lacksDescriptions {
            awaitingDescriptionsUntil = saturatingSum(window.hi, Self.describedWithinNs)
            return
        }
        pastWindow = true
        pastWindowFlag?.set()
    }

    /// How far past the window descriptions are awaited: the watchdog describes the pools every
    /// second (docs/tracepoints.md, "Constant pools"), so two periods and a half.
    static let describedWithinNs: Int64 = 2_500_000_000

    /// Past the window, with every iteration open at its end followed to its end: only
    /// descriptions count, until none is missing or `awaitingDescriptionsUntil`.
    func awaitDescription(_ e: UnsafePointer<RunLoopEvent>) {
        let ev = e.pointee
        if ev.ts > awaitingDescriptionsUntil { pastWindow = true; pastWindowFlag?.set(); return }
        switch ev.kind {
        case .loopCreated, .loopInfo:
            state(LoopKey(pid: ev.pid, loop: ev.loop))._withUnsafeGuaranteedRef { applyPool(ev, to: $0) }
        case .itemAdded, .itemRemoved, .itemInfo:
            if ev.name > 0 && ev.calloutKind != .block { setName(ev.name, pid: ev.pid, item: ev.item, kind: ev.calloutKind) }
        default:
            return
        }
        if !lacksDescriptions { pastWindow = true; pastWindowFlag?.set() }
    }

    /// Whether an item or a loop the window saw has no description yet (a loop whose thread an
    /// LTTng context named needs none).
    var lacksDescriptions: Bool {
        !undescribedItems.isEmpty || states.contains { !$0.described && $0.info.tid < 0 && $0.info.first <= window.hi }
    }

    /// A followed loop's outermost iteration ended.
    func stopFollowing(_ s: State) {
        s.followsPastWindow = false
        followed -= 1
        if followed == 0 { endWindow() }
    }

    /// Hands the iteration at `idx` (closed) to the sink, cut by the window, and folds it into its
    /// parent.
    func finishIteration(_ s: State, _ idx: Int, _ sink: LoopModelSink) {
        s.open = idx
        // The whole iteration first: what a window leaves of it is cut from this.
        var ownWhole: Int64 = 0
        for sl in s.stack[idx].sleeps { ownWhole &+= sl.duration }
        let wholeBusy = s.stack[idx].duration &- ownWhole &- s.stack[idx].nestedSleepWholeNs
        s.stack[idx].wholeBegin = s.stack[idx].begin
        s.stack[idx].wholeEnd = s.stack[idx].end
        s.stack[idx].wholeBusyNs = wholeBusy
        if s.stack[idx].cpuNs >= 0 {
            // The CPU clock ran across its sleeps too (the wait's system call, the tracer's own
            // work at sleep_begin and wake): that part is not busy time.
            s.stack[idx].cpuNs = min(max(0, s.stack[idx].cpuNs &- s.stack[idx].sleepCpuNs), max(0, wholeBusy))
        }
        if window.cuts { window.clipSleeps(&s.stack[idx].sleeps) }
        if idx > 0 {
            let it = s.stack[idx]
            s.stack[idx - 1].nestedSleepNs &+= it.ownSleepNs &+ it.nestedSleepNs
            s.stack[idx - 1].nestedSleepWholeNs &+= ownWhole &+ it.nestedSleepWholeNs
            s.stack[idx - 1].nestedSleeps += it.sleeps.count + it.nestedSleeps
            s.stack[idx - 1].nestedPolls += it.polls + it.nestedPolls
            s.stack[idx - 1].sleepCpuNs &+= it.sleepCpuNs
        } else if s.followsPastWindow {
            stopFollowing(s)
        }
        if window.clip(&s.stack[idx]) {
            // An iteration overlapping the window puts its loop in the window (a loop hung across
            // the whole window has no event in it).
            if s.stack[idx].begin < s.info.first { s.info.first = s.stack[idx].begin }
            if s.stack[idx].end > s.info.last { s.info.last = s.stack[idx].end }
            // Handed over moved out of the stack into a local, and moved back after (its arrays'
            // storage is reused): passed from the stack's storage, the record was copied around the
            // call, its arrays retained and released, since the compiler cannot know the sink
            // leaves the stack alone. Meanwhile the stack holds an empty record, at an index past
            // the open ones (`s.open` is `idx`), which nothing reads: sinks only read the model's
            // names and loops, and open iterations.
            var it = IterationRecord(key: s.stack[idx].key, number: 0, begin: 0, depth: 0, mode: 0)
            swap(&it, &s.stack[idx])
            sink.iteration(it, of: s.info)
            swap(&it, &s.stack[idx])
        }
    }
}
