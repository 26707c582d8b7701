import CTFReader

/// Turns the events of live streams (LTTng live: `LTTngLive.LiveSession`, one stream decoder per
/// relay stream, replaced when the metadata grows) into ``RunLoopEvent``s by the rules of
/// ``RunLoopEventSource``: the same ``EventPlan``s (resolved once per stream decoder), the same
/// name interning, the same timestamps (CLOCK_MONOTONIC ns, never decreasing). The loop model and
/// its sinks therefore see exactly what they would see reading the recorded trace.
///
/// The per-event path is the file source's: a plan lookup by stream index (an identity compare),
/// a switch, integer reads at fixed positions; no allocation.
public final class LiveEventDecoder {
    /// The strings the delivered events' name ids refer to.
    public let names = NameTable()
    /// The hang watchdog's events whole (``LoopModel/evidence``).
    public let evidence = HangEvidenceStore()
    /// Events decoded (any provider), `runloop` events, events delivered with a clamped time.
    public private(set) var totalEvents = 0, runLoopEvents = 0, backwardsEvents = 0
    /// First and last event time (CLOCK_MONOTONIC ns).
    public private(set) var firstTs: Int64 = .max, lastTs: Int64 = .min
    /// Reader timestamps (ns since the epoch) minus CLOCK_MONOTONIC ns.
    public private(set) var clockOffset: Int64 = 0
    /// Providers seen.
    public private(set) var providers: Set<String> = []

    private var plans: [StreamPlan?] = []
    /// The decoder each plan was resolved for (held, so an identity compare is safe).
    private var planStreams: [CTFStream?] = []
    /// The file source's field decoding (EventDecoder.swift), shared.
    private let fields: RunLoopFieldDecoder

    /// Creates a decoder.
    public init() { fields = RunLoopFieldDecoder(names: names, evidence: evidence) }

    @inline(__always)
    private func plan(_ s: CTFStream, _ index: Int) -> StreamPlan {
        if index < plans.count, let p = plans[index], planStreams[index] === s { return p }
        return makePlan(s, index)
    }

    @inline(never)
    private func makePlan(_ s: CTFStream, _ index: Int) -> StreamPlan {
        while plans.count <= index { plans.append(nil); planStreams.append(nil) }
        let p = StreamPlan(s, providers: &providers)
        plans[index] = p
        planStreams[index] = s
        return p
    }

    /// Decodes the event `s` is on; `streamIndex` identifies the live stream (stable for its life).
    /// Returns nil for an event the loop model does not take (another provider, the state dump,
    /// which is read into ``evidence``).
    /// - Throws: ``AnalysisError/schemaMismatch(_:)`` for a `runloop` event lacking a field.
    @inline(__always)
    public func decode(_ s: CTFStream, streamIndex: Int) throws -> RunLoopEvent? {
        let sp = plan(s, streamIndex)
        totalEvents &+= 1
        var ts = Int64(bitPattern: s.cycles)
        if ts < 0 { ts = lastTs > 0 ? lastTs : 0 }
        if totalEvents == 1 { clockOffset = s.timestamp &- ts; firstTs = ts }
        if ts < lastTs { backwardsEvents &+= 1; ts = lastTs } else { lastTs = ts }
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
        runLoopEvents &+= 1
        var e = RunLoopEvent(kind: RunLoopEvent.Kind(rawValue: kind).unsafelyUnwrapped, ts: ts)
        fields.fill(s, sp, sp.plan(ci), into: &e)
        return e
    }
}
