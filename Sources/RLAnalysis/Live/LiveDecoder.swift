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
    public var totalEvents: Int { clock.totalEvents }
    /// `runloop` events decoded.
    public private(set) var runLoopEvents = 0
    /// Events delivered with a clamped time.
    public var backwardsEvents: Int { clock.backwardsEvents }
    /// First and last event time (CLOCK_MONOTONIC ns).
    public var firstTs: Int64 { clock.firstTs }
    /// Last event time.
    public var lastTs: Int64 { clock.lastTs }
    /// Reader timestamps (ns since the epoch) minus CLOCK_MONOTONIC ns.
    public var clockOffset: Int64 { clock.clockOffset }
    private var clock = EventClock()
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
        let ts = clock.time(of: s)
        guard let e = try fields.decode(s, sp, ts: ts) else { return nil }
        runLoopEvents &+= 1
        return e
    }
}
