/// The loop model's part of the constant pools and of the watchdog's CPU readings
/// (docs/tracepoints.md, "Constant pools"): since callout events carry ids only, a loop's process
/// and thread come from `loop_created` / `loop_info` and an item's name from `item_added` /
/// `item_info`; a long callout's on-CPU time from the watchdog's `callout_cpu` readings.
extension LoopModel {
    /// A loop's description (`loop_created`, `loop_info`), an `item_info` or a `callout_cpu`
    /// event of loop `s`.
    func applyPool(_ e: RunLoopEvent, to s: State) {
        switch e.kind {
        case .loopCreated:
            s.info.tid = e.a
            s.info.threadName = e.name >= 0 ? names[e.name] : ""
            s.described = true
        case .loopInfo:
            s.described = true
            if e.a >= 0 { s.info.tid = e.a }
            if e.name > 0 { s.info.threadName = names[e.name] }
            // The process's own name (its main thread's), authoritative for every loop of it.
            if e.procname > 0 {
                processNames[e.pid] = e.procname
                for o in states where o.info.key.pid == e.pid {
                    o.procname = e.procname; o.info.procname = names[e.procname]; o.procResolved = true
                }
            }
        case .itemInfo:
            // A pooled block name (its id tagged) names every block entry of that id, as an item's
            // name does; an untagged one (a trace from before the pool, or a full pool) comes just
            // before its block's entry, which takes it.
            if e.calloutKind == .block {
                if e.name > 0 {
                    if e.item & Self.blockNameTag != 0 { setName(e.name, pid: e.pid, item: e.item, kind: .block) }
                    else { pendingBlockNames[BlockKey(pid: e.pid, item: e.item)] = e.name }
                }
            } else if e.name > 0 { setName(e.name, pid: e.pid, item: e.item, kind: e.calloutKind) }
        case .calloutCpu:
            // The innermost open callout of that item: the reading covers its last `a` ns.
            var idx = s.callouts.count - 1
            while idx >= 0 && !(s.callouts[idx].record.kind == e.calloutKind && s.callouts[idx].record.item == e.item) { idx -= 1 }
            guard idx >= 0, e.a > 0, e.b >= 0 else { return }
            s.callouts[idx].record.sampleElapsedNs = e.a
            s.callouts[idx].record.sampledCpuNs = e.b
        default:
            break
        }
    }

    /// The watchdog's latest reading of loop `key`'s innermost open callout that has one: its CPU
    /// time over its elapsed time (for a hang in progress).
    public func openCalloutReading(of key: LoopKey) -> (cpuNs: Int64, elapsedNs: Int64)? {
        guard let s = states.first(where: { $0.info.key == key }) else { return nil }
        var i = s.callouts.count - 1
        while i >= 0 {
            let r = s.callouts[i].record
            if r.sampleElapsedNs > 0 { return (r.sampledCpuNs, r.sampleElapsedNs) }
            i -= 1
        }
        return nil
    }

    /// The bit that marks a `block_entry`'s item as the id of a name in its process's block-name
    /// pool (docs/tracepoints.md, "Constant pools"): bit 47, which no other item id reaches.
    static let blockNameTag: UInt64 = 1 << 47

    /// The name of a block: its pooled name's (an entry whose item is a name's id, described by an
    /// `item_info` of that id), or the one its own `item_info` gave it (taken: each such block is
    /// performed once), else `(unnamed)`, as the provider records an unnamed item's name.
    func takeBlockName(pid: Int64, item: UInt64) -> Int32 {
        if item & Self.blockNameTag != 0 {
            let n = nameID(of: .block, item: item, pid: pid)
            if n >= 0 { return n }
        } else if !pendingBlockNames.isEmpty, let n = pendingBlockNames.removeValue(forKey: BlockKey(pid: pid, item: item)) { return n }
        if unnamedBlock < 0 { unnamedBlock = names.intern("(unnamed)") }
        return unnamedBlock
    }

    /// A closed callout's reading, scaled to its whole duration (the reading covers all of it but
    /// the time before the watchdog first saw it, under one tick, and after the last reading),
    /// never more than its duration.
    @inline(never)
    static func scaleSample(_ rec: inout CalloutRecord) {
        rec.sampledCpuNs = scaledReading(cpuNs: rec.sampledCpuNs, overNs: rec.sampleElapsedNs, to: rec.duration)
        rec.sampleElapsedNs = 0
    }

    /// A watchdog reading (`cpuNs` of CPU over `overNs`) scaled to `durationNs`, never more than it.
    public static func scaledReading(cpuNs: Int64, overNs: Int64, to durationNs: Int64) -> Int64 {
        guard overNs > 0 else { return -1 }
        let whole = Double(max(0, durationNs))
        return Int64(min(whole, Double(max(0, cpuNs)) / Double(overNs) * whole))
    }
}
