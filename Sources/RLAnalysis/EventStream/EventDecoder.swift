import CTFReader

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

    deinit { namedCache.deallocate(); values.deallocate() }

    @inline(__always)
    private func string(_ s: CTFStream, _ index: Int) -> Int32 {
        index < 0 ? NameTable.empty : (s.payloadStringBytes(at: index).map { names.intern($0) } ?? NameTable.empty)
    }

    /// The integers of one event, read in one call (indexed by ``StreamPlan/Read``).
    private let values = UnsafeMutablePointer<Int64>.allocate(capacity: StreamPlan.readCount)

    /// Fills `e` (kind and time set) from the event `s` is on, of class `ci`, by stream plan `sp`.
    @inline(__always)
    func fill(_ s: CTFStream, _ sp: StreamPlan, classIndex ci: Int, into e: inout RunLoopEvent) {
        typealias R = StreamPlan.Read
        // What an absent (or non-integer) field reads as: pid 0, vtid and CPU clock -1, the rest 0.
        let v = values
        v[R.pid.rawValue] = 0; v[R.vtid.rawValue] = -1; v[R.cpu.rawValue] = -1
        v[R.loop.rawValue] = 0; v[R.iteration.rawValue] = 0; v[R.item.rawValue] = 0
        v[R.a.rawValue] = 0; v[R.b.rawValue] = 0; v[R.c.rawValue] = 0; v[R.kind.rawValue] = 0
        s.readIntegers(sp.reads(ci), count: sp.readCounts[ci], into: v)
        e.pid = v[R.pid.rawValue]
        e.vtid = v[R.vtid.rawValue]
        e.cpu = v[R.cpu.rawValue]
        if sp.vtid >= 0 {
            // The procname context, interned once per run of events of one thread in this stream.
            if sp.procname >= 0 {
                if e.vtid != sp.lastVtid || sp.lastProcname < 0 {
                    sp.lastVtid = e.vtid
                    sp.lastProcname = s.streamContextStringBytes(at: sp.procname).map { names.intern($0) } ?? -1
                }
                e.procname = sp.lastProcname
            }
        } else if sp.procname >= 0 {
            e.procname = s.streamContextStringBytes(at: sp.procname).map { names.intern($0) } ?? -1
        }
        let p = sp.plan(ci).pointee
        e.calloutKind = p.callout
        e.loop = UInt64(bitPattern: v[R.loop.rawValue])
        e.iteration = UInt64(bitPattern: v[R.iteration.rawValue])
        e.item = UInt64(bitPattern: v[R.item.rawValue])
        e.a = v[R.a.rawValue]; e.b = v[R.b.rawValue]; e.c = v[R.c.rawValue]
        guard p.name >= 0 else { return }
        switch p.nameRule {
        case .always:
            e.name = string(s, p.name)
        case .firstPerItem:
            let key = ItemKey(pid: e.pid, item: e.item, kind: p.callout.rawValue)
            let slot = Int(truncatingIfNeeded: (e.item &* 0x9E37_79B9_7F4A_7C15) >> 56) ^ Int(p.callout.rawValue)
            if namedCache[slot] == key { break }
            if !namedItems.contains(key) { namedItems.insert(key); e.name = string(s, p.name) }
            namedCache[slot] = key
        case .never:
            break
        case .forensic:
            e.c = evidence.add(s, e)
        }
        if p.kindField >= 0, let ck = CalloutKind(rawValue: UInt8(truncatingIfNeeded: v[R.kind.rawValue])) { e.calloutKind = ck }
    }
}

/// The times the sources give events, and their counts: CLOCK_MONOTONIC ns (the raw LTTng clock
/// value), never decreasing — an event earlier than the one before it (a damaged trace) gets the
/// previous time, and is counted.
struct EventClock {
    /// Events timed (any provider), and those whose time was clamped.
    var totalEvents = 0, backwardsEvents = 0
    /// First and last event time.
    var firstTs: Int64 = .max, lastTs: Int64 = .min
    /// Reader timestamps (ns since the epoch) minus CLOCK_MONOTONIC ns.
    var clockOffset: Int64 = 0

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
}

extension RunLoopFieldDecoder {
    /// The `runloop` event `s` is on, at time `ts`, by stream plan `sp`; nil for an event the loop
    /// model does not take (another provider; the state dump and library events, read into
    /// ``evidence`` here).
    /// - Throws: ``AnalysisError/schemaMismatch(_:)`` for a `runloop` event lacking a field.
    @inline(__always)
    func decode(_ s: CTFStream, _ sp: StreamPlan, ts: Int64) throws -> RunLoopEvent? {
        let ci = s.eventClassIndex
        let kind = sp.kinds[ci]
        guard kind < EventPlan.aux else {
            if kind == EventPlan.aux {
                evidence.addModuleEvent(s, pid: sp.vpid >= 0 ? (s.streamContextInteger(at: sp.vpid) ?? 0) : 0, ts: ts)
            }
            return nil
        }
        if sp.incomplete[ci] != 0 {
            throw AnalysisError.schemaMismatch("\(s.eventClass.name) has no integer field `\(sp.missing[ci] ?? "?")`")
        }
        var e = RunLoopEvent(kind: RunLoopEvent.Kind(rawValue: kind).unsafelyUnwrapped, ts: ts)
        fill(s, sp, classIndex: ci, into: &e)
        return e
    }
}
