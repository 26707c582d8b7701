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

    deinit { namedCache.deallocate() }

    @inline(__always)
    private func int(_ s: CTFStream, _ index: Int) -> Int64 {
        index < 0 ? 0 : (s.payloadInteger(at: index) ?? 0)
    }

    @inline(__always)
    private func string(_ s: CTFStream, _ index: Int) -> Int32 {
        index < 0 ? NameTable.empty : (s.payloadStringBytes(at: index).map { names.intern($0) } ?? NameTable.empty)
    }

    /// Fills `e` (kind and time already set) from the event `s` is on, by plan `p` of stream plan `sp`.
    @inline(__always)
    func fill(_ s: CTFStream, _ sp: StreamPlan, _ p: UnsafePointer<EventPlan>, into e: inout RunLoopEvent) {
        if sp.vpid >= 0 { e.pid = s.streamContextInteger(at: sp.vpid) ?? 0 }
        if sp.vtid >= 0 {
            e.vtid = s.streamContextInteger(at: sp.vtid) ?? -1
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
        if sp.taskClock >= 0 { e.cpu = s.streamContextInteger(at: sp.taskClock) ?? -1 }
        let p = p.pointee
        e.calloutKind = p.callout
        e.loop = UInt64(bitPattern: int(s, p.loop))
        e.iteration = UInt64(bitPattern: int(s, p.iteration))
        e.item = UInt64(bitPattern: int(s, p.item))
        e.a = int(s, p.a); e.b = int(s, p.b); e.c = int(s, p.c)
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
        if p.kindField >= 0, let ck = CalloutKind(rawValue: UInt8(truncatingIfNeeded: int(s, p.kindField))) { e.calloutKind = ck }
    }
}
