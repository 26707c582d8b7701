import CRunLoopShims
import RunLoopTracing

// One trampoline per callout kind: the only places user code is called, and where the callout
// tracepoints sit (the run algorithm, RunAlgorithm.swift, calls them).
extension RLRunLoop {

    // MARK: - Trampolines: every callout goes through exactly one of these
    // Each is one check ("does a session record this kind's entry or exit?") and the callout; the
    // traced path, out of line, emits the entry with the loop's and the item's ids only (the
    // iteration is the one `iteration_begin` opened; names are in the constant pools:
    // docs/tracepoints.md) and the exit with the loop's alone. A session that starts during a callout sees the next one whole; one
    // that stops during it gets no exit (each emitter re-checks).
    // Around the callout, two relaxed stores tell the hang watchdog which callout the thread is in
    // (`watchCalloutBegin` / `watchRestore`, Watchdog.swift): no lock, no system call, no clock.

    @inline(never)
    func calloutToObserver(_ o: RLObserver, _ activity: RLActivity) {
        calloutCount &+= 1
        let outer = watchCalloutBegin(.observer, o.id)
        if RLTrace.isCalloutTraced(.observer) { tracedObserver(o, activity) } else { o.callout(o, activity) }
        watchRestore(outer)
    }

    @inline(never)
    private func tracedObserver(_ o: RLObserver, _ activity: RLActivity) {
        RLTrace.observerEntry(loop: id, item: o.id, activity: UInt8(truncatingIfNeeded: activity.rawValue))
        o.callout(o, activity)
        RLTrace.observerExit(loop: id)
    }

    @inline(never)
    func calloutToSource0(_ s: RLSource0) {
        calloutCount &+= 1
        let outer = watchCalloutBegin(.source0, s.id)
        if RLTrace.isCalloutTraced(.source0) { tracedSource0(s) } else { s.perform() }
        watchRestore(outer)
    }

    @inline(never)
    private func tracedSource0(_ s: RLSource0) {
        RLTrace.source0Entry(loop: id, item: s.id)
        s.perform()
        RLTrace.source0Exit(loop: id)
    }

    @inline(never)
    func calloutToSource1(_ s: RLSource1, events: UInt32) {
        calloutCount &+= 1
        let outer = watchCalloutBegin(.source1, s.id)
        if RLTrace.isCalloutTraced(.source1) { tracedSource1(s, events: events) } else { s.handler(s, s.fd, RLSource1.Readiness(rawValue: events)) }
        watchRestore(outer)
    }

    @inline(never)
    private func tracedSource1(_ s: RLSource1, events: UInt32) {
        RLTrace.source1Entry(loop: id, item: s.id, fd: s.fd, events: events)
        s.handler(s, s.fd, RLSource1.Readiness(rawValue: events))
        RLTrace.source1Exit(loop: id)
    }

    @inline(never)
    func calloutToTimer(_ t: RLTimer, scheduled: UInt64) {
        calloutCount &+= 1
        let outer = watchCalloutBegin(.timer, t.id)
        if RLTrace.isCalloutTraced(.timer) { tracedTimer(t, scheduled: scheduled) } else { t.callout(t) }
        watchRestore(outer)
    }

    @inline(never)
    private func tracedTimer(_ t: RLTimer, scheduled: UInt64) {
        RLTrace.timerEntry(loop: id, item: t.id, scheduledNs: scheduled)
        t.callout(t)
        RLTrace.timerExit(loop: id)
    }

    @inline(never)
    func calloutToMainQueue() {
        calloutCount &+= 1
        let outer = watchCalloutBegin(.mainQueue, 0)
        if RLTrace.isCalloutTraced(.mainQueue) { tracedMainQueue() } else { _dispatch_main_queue_callback_4CF(nil) }
        watchRestore(outer)
    }

    @inline(never)
    private func tracedMainQueue() {
        RLTrace.mainQueueEntry(loop: id)
        _dispatch_main_queue_callback_4CF(nil)
        RLTrace.mainQueueExit(loop: id)
    }

    /// Takes the queued block whole, borrowed (either item type, specialised for each): passing its
    /// fields instead made the drain copy the closure out of the item — a retain/release pair per block.
    @inline(__always)
    func calloutToBlock<B: QueuedBlock>(_ b: borrowing B, id: UInt64) {
        calloutCount &+= 1
        if RLTrace.isCalloutTraced(.block) { return tracedBlock(id: id, name: b.name, body: b.body) }
        let outer = watchCalloutBegin(.block, id)
        b.body()
        watchRestore(outer)
    }

    @inline(never)
    private func tracedBlock(id item: UInt64, name: String?, body: () -> Void) {
        // A named block's entry names it by its pooled name's id (docs/tracepoints.md, "Constant
        // pools"), and so does the watch word: the watchdog's readings name what the entry did.
        var entryItem = item
        if let name, !name.isEmpty {
            entryItem = RLTrace.namedBlockEntry(loop: id, item: item, name: name, cache: &blockNameCache)
        } else {
            RLTrace.blockEntry(loop: id, item: item, name: "")
        }
        let outer = watchCalloutBegin(.block, entryItem)
        body()
        watchRestore(outer)
        RLTrace.blockExit(loop: id)
    }
}
