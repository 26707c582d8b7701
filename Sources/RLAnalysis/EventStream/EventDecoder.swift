import CTFReader
import RunLoopSchema

/// How one CTF event of the `runloop` schema becomes a ``RunLoopEvent``'s fields — the one place
/// both sources (the file source, ``RunLoopEventSource``, and the live one, ``LiveEventDecoder``)
/// decode through, so the loop model sees the same events from a recorded trace and from a live
/// session. Per event: integer reads at the positions the ``EventPlan`` resolved once; the process
/// name interned once per run of events of one thread; an item's name decoded the first time the
/// item is seen; no allocation.
final class RunLoopFieldDecoder {
    /// The table names are interned into (the reading thread's own when decoding on another thread).
    var names: NameTable
    /// The hang watchdog's events whole, and the binaries each process mapped.
    let evidence: HangEvidenceStore
    private var namedItems: Set<ItemKey> = []
    private struct ItemKey: Hashable { var pid: Int64; var item: UInt64; var kind: UInt8 }
    /// Items already named: a direct-mapped cache of 256 in front of the set (a trace has few
    /// items, each seen many times), so the usual case is one compare, no hash.
    private let namedCache: UnsafeMutablePointer<ItemKey> = {
        let p = UnsafeMutablePointer<ItemKey>.allocate(capacity: 256)
        p.initialize(repeating: ItemKey(pid: .min, item: 0, kind: 255), count: 256)
        return p
    }()

    init(names: NameTable, evidence: HangEvidenceStore) {
        self.names = names
        self.evidence = evidence
    }

    deinit { namedCache.deallocate() }

    @inline(__always)
    private func string(_ s: CTFStream, _ index: Int) -> Int32 {
        index < 0 ? NameTable.empty : (s.payloadStringBytes(at: index).map { names.intern($0) } ?? NameTable.empty)
    }

    /// Fills `e` (kind and time set, the other fields at their defaults) from the event `s` is on,
    /// of class `ci`, by stream plan `sp`: the integer fields read straight into the event.
    @inline(__always)
    func fill(_ s: CTFStream, _ sp: StreamPlan, classIndex ci: Int, into e: UnsafeMutablePointer<RunLoopEvent>) {
        // An absent field keeps its default: pid 0, vtid and CPU clock -1, the rest 0.
        s.readIntegers(sp.reads(ci), count: sp.readCounts[ci], allInPlace: sp.readsInPlace[ci], into: UnsafeMutableRawPointer(e))
        // A loop id names its process in its high 32 bits (RunLoopCore's ids since the constant
        // pools, docs/tracepoints.md): the pid without the `vpid` context, the loop's number in
        // its process as its id. Older traces' ids are below 2^32: unchanged.
        let hi = e.pointee.loop >> 32
        if hi != 0 {
            if e.pointee.pid == 0 { e.pointee.pid = Int64(hi) }
            e.pointee.loop &= 0xFFFF_FFFF
        }
        if sp.vtid >= 0 {
            // The procname context, interned once per run of events of one thread in this stream.
            if sp.procname >= 0 {
                let vtid = e.pointee.vtid
                if vtid != sp.lastVtid || sp.lastProcname < 0 {
                    sp.lastVtid = vtid
                    sp.lastProcname = s.streamContextStringBytes(at: sp.procname).map { names.intern($0) } ?? -1
                }
                e.pointee.procname = sp.lastProcname
            }
        } else if sp.procname >= 0 {
            e.pointee.procname = s.streamContextStringBytes(at: sp.procname).map { names.intern($0) } ?? -1
        }
        let p = sp.plan(ci)
        e.pointee.calloutKind = p.pointee.callout
        if p.pointee.extras { fillExtras(s, sp, p, classIndex: ci, into: e) }
        let nameIndex = p.pointee.name
        guard nameIndex >= 0 else { return }
        switch p.pointee.nameRule {
        case .always:
            e.pointee.name = string(s, nameIndex)
        case .firstPerItem:
            let item = e.pointee.item
            // (The host's bits too: the reading loop adds them to the event after decoding.)
            let key = ItemKey(pid: e.pointee.pid | sp.hostBits, item: item, kind: p.pointee.callout.rawValue)
            let slot = Int(truncatingIfNeeded: (item &* 0x9E37_79B9_7F4A_7C15) >> 56) ^ Int(p.pointee.callout.rawValue)
            if namedCache[slot] == key { break }
            if !namedItems.contains(key) { namedItems.insert(key); e.pointee.name = string(s, nameIndex) }
            namedCache[slot] = key
        case .never:
            break
        case .forensic:
            e.pointee.pid |= sp.hostBits     // the record keeps the process key the loop has
            e.pointee.c = evidence.add(s, e.pointee)
        }
    }

    /// The fields beyond the integers and the name: loop_info's process name, the `kind` of
    /// registrations, pools and CPU readings, the innermost marker of exits and `iteration_end`.
    @inline(never)
    private func fillExtras(_ s: CTFStream, _ sp: StreamPlan, _ p: UnsafePointer<EventPlan>, classIndex ci: Int,
                            into e: UnsafeMutablePointer<RunLoopEvent>) {
        if p.pointee.procnameField >= 0 { e.pointee.procname = string(s, p.pointee.procnameField) }
        if p.pointee.kindField >= 0 { readItemKind(s, sp, classIndex: ci, into: e) }
        if p.pointee.innermost { e.pointee.item = RunLoopEvent.innermost; e.pointee.iteration = RunLoopEvent.innermost }
    }

    /// An event of a host after the first (several hosts' traces): its process key takes the host,
    /// and the times in its payload (a timer's `scheduled_ns` and `fire_ns`, a sleep's
    /// `deadline_ns`: CLOCK_MONOTONIC of that host) the shift its event times take
    /// (``EventClock``), so lateness and deadlines compare like with like.
    @inline(never)
    func onAnotherHost(_ sp: StreamPlan, _ e: UnsafeMutablePointer<RunLoopEvent>) {
        e.pointee.pid |= sp.hostBits
        switch e.pointee.kind {
        case .calloutEntry where e.pointee.calloutKind == .timer, .timerArmed:
            if e.pointee.a > 0 { e.pointee.a &+= sp.hostShiftNs }
        case .sleepBegin:
            if e.pointee.b > 0 { e.pointee.b &+= sp.hostShiftNs }
        default: break
        }
    }

    /// The `kind` field of `item_added` / `item_removed` into the event's callout kind (out of line:
    /// a local the reader writes through a pointer would put a stack guard on every event's path).
    @inline(never)
    private func readItemKind(_ s: CTFStream, _ sp: StreamPlan, classIndex ci: Int, into e: UnsafeMutablePointer<RunLoopEvent>) {
        var k: Int64 = 0
        withUnsafeMutablePointer(to: &k) { s.readIntegers(sp.kindReads + ci, count: 1, into: UnsafeMutableRawPointer($0)) }
        if let ck = RLCalloutKind(rawValue: UInt8(truncatingIfNeeded: k)) { e.pointee.calloutKind = ck }
    }
}

/// The times the sources give events, and their counts: CLOCK_MONOTONIC ns (the raw LTTng clock
/// value), never decreasing — an event earlier than the one before it (a damaged trace) gets the
/// previous time, and is counted.
///
/// Traces of several hosts (a relay daemon's tree, docs/production.md "Reports across hosts"):
/// each host's monotonic clock is its own, so each host's times are moved onto the first host's by
/// the difference of their clock offsets (wall clock minus monotonic clock, which LTTng records per
/// session) — a constant per host, so no duration changes — and "never decreasing" holds per host:
/// an event of one host is never held back by another host's clock.
struct EventClock {
    /// Events timed (any provider), and those whose time was clamped.
    var totalEvents = 0, backwardsEvents = 0
    /// First and last event time.
    var firstTs: Int64 = .max, lastTs: Int64 = .min
    /// Reader timestamps (ns since the epoch) minus CLOCK_MONOTONIC ns.
    var clockOffset: Int64 = 0
    /// Per host: the shift onto the first host's clock, and the host's first and last time
    /// (several hosts).
    private var shifts: [Int64] = []
    private(set) var hostFirst: [Int64] = [], hostLast: [Int64] = []

    /// A clock for traces of several hosts: `shifts[h]` moves host `h`'s times onto host 0's,
    /// whose clock offset is `offset`.
    mutating func setHosts(shifts: [Int64], offset: Int64) {
        self.shifts = shifts
        hostLast = [Int64](repeating: .min, count: shifts.count)
        hostFirst = [Int64](repeating: .max, count: shifts.count)
        clockOffset = offset
    }

    /// The time of the event `s` is on, counted.
    @inline(__always)
    mutating func time(of s: CTFStream) -> Int64 {
        totalEvents &+= 1
        var ts = Int64(bitPattern: s.cycles)
        if ts < 0 { ts = lastTs > 0 ? lastTs : 0 }   // a clock past 2^63: damaged, not a time
        if totalEvents == 1 { clockOffset = s.timestamp &- ts; firstTs = ts }
        if ts < lastTs { backwardsEvents &+= 1; ts = lastTs } else { lastTs = ts }
        return ts
    }

    /// The time of the event `s` of host `host` is on, on host 0's clock, counted (several hosts).
    @inline(__always)
    mutating func time(of s: CTFStream, host: Int) -> Int64 {
        totalEvents &+= 1
        let last = hostLast[host]
        var ts = Int64(bitPattern: s.cycles)
        ts = ts < 0 ? (last > 0 ? last : 0) : ts &+ shifts[host]
        if ts < last { backwardsEvents &+= 1; ts = last } else { hostLast[host] = ts }
        if last == .min { hostFirst[host] = ts }
        if ts < firstTs { firstTs = ts }
        if ts > lastTs { lastTs = ts }
        return ts
    }
}

extension RunLoopFieldDecoder {
    /// The `runloop` event `s` is on, at time `ts`, by stream plan `sp`; nil for an event the loop
    /// model does not take (another provider; the state dump and library events, read into
    /// ``evidence`` here).
    /// - Throws: ``AnalysisError/schemaMismatch(_:)`` for a `runloop` event lacking a field.
    @inline(__always)
    func decode(_ s: CTFStream, _ sp: StreamPlan, ts: Int64) throws -> RunLoopEvent? {
        var e = RunLoopEvent(kind: .gap, ts: ts)
        return try decode(s, sp, ts: ts, into: &e) ? e : nil
    }

    /// ``decode(_:_:ts:)`` into `e` (initialized memory, overwritten): false for an event the loop
    /// model does not take (`e` then holds garbage).
    @inline(__always)
    func decode(_ s: CTFStream, _ sp: StreamPlan, ts: Int64, into e: UnsafeMutablePointer<RunLoopEvent>) throws -> Bool {
        if decodeRunLoop(s, sp, ts: ts, into: e) { return true }
        return try decodeOther(s, sp, ts: ts, classIndex: s.eventClassIndex)
    }

    /// ``decode(_:_:ts:into:)`` of a complete `runloop` event the loop model takes: true; false
    /// (nothing decoded) for any other, which ``decodeOther(_:_:ts:classIndex:)`` takes.
    @inline(__always)
    func decodeRunLoop(_ s: CTFStream, _ sp: StreamPlan, ts: Int64, into e: UnsafeMutablePointer<RunLoopEvent>) -> Bool {
        let ci = s.eventClassIndex
        guard sp.takes(ci) else { return false }
        // A plan's kind below `aux`: a `RunLoopEvent.Kind` raw value (EventPlan.init).
        e.pointee = RunLoopEvent(kind: unsafeBitCast(sp.kinds[ci], to: RunLoopEvent.Kind.self), ts: ts)
        fill(s, sp, classIndex: ci, into: e)
        return true
    }

    /// An event of a class that is not a complete `runloop` event: a module event recorded, a
    /// `runloop` event lacking a field an error; false (out of line: the per-event path neither
    /// throws nor calls anything else).
    @inline(never)
    func decodeOther(_ s: CTFStream, _ sp: StreamPlan, ts: Int64, classIndex ci: Int) throws -> Bool {
        let kind = sp.kinds[ci]
        if kind == EventPlan.aux {
            evidence.addModuleEvent(s, pid: (sp.vpid >= 0 ? (s.streamContextInteger(at: sp.vpid) ?? 0) : 0) | sp.hostBits, ts: ts)
        }
        guard kind < EventPlan.aux else { return false }
        throw AnalysisError.schemaMismatch("\(s.eventClass.name) has no integer field `\(sp.missing[ci] ?? "?")`")
    }
}
