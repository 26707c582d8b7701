import LTTngLive

/// One attached live session and its analysis, the live form of the pipeline every command runs
/// (Pipeline.swift): live session → decoder → selection → loop model → ``TopSink``.
///
/// Its snapshots follow the traced host's clock: each covers `intervalNs` of trace time, from the
/// first event on. The pump stops at an interval's end (the event past it waits in `pending`), so
/// a backlog — the relay daemon announces a new session's streams about a second after the program
/// starts — is shown as several snapshots of one interval each, not one long first interval.
public final class LivePipeline {
    /// The relay daemon's session.
    public let live: LiveSession
    /// The decoder (its event counts).
    public let decoder = LiveEventDecoder()
    let model: LoopModel
    let sink: TopSink
    /// The selection stage (nil when it selects everything).
    let selection: SelectionStage?
    let intervalNs: Int64
    /// Whether the session is over and everything was consumed.
    public private(set) var ended = false
    /// The current interval (trace clock ns; 0 before the first event).
    public private(set) var intervalBegin: Int64 = 0
    /// The current interval's end.
    public private(set) var intervalEnd: Int64 = .max
    /// A decoded event at or past `intervalEnd`, consumed once the interval was shown.
    private var pending: RunLoopEvent?
    private var lastDiscarded: UInt64 = 0

    /// The pipeline of `live`, selecting what `filter` selects (its loops and callouts; a live view
    /// has no time window), its snapshots `intervalNs` of trace time each.
    public init(_ live: LiveSession, filter: EventFilter = EventFilter(), options: TopSink.Options, intervalNs: UInt64) {
        self.live = live
        self.intervalNs = Int64(intervalNs)
        sink = TopSink(host: live.info.hostname, session: live.info.name, options: options)
        selection = SelectionStage.needed(for: filter) ? SelectionStage(filter: filter, next: sink) : nil
        model = LoopModel(sink: selection ?? sink, names: decoder.names)
        model.evidence = decoder.evidence
        selection?.resolver = model
        sink.model = model
    }

    /// Whether an event was seen.
    public var hasData: Bool { intervalBegin != 0 }

    /// Consumes what the relay daemon has, up to the current interval's end, until `deadline`
    /// (CLOCK_MONOTONIC ns). Returns whether an event was consumed.
    public func pump(until deadline: UInt64) throws -> Bool {
        guard !ended else { return false }
        if let e = pending {
            guard e.ts < intervalEnd else { return false }
            model.consume(e)
            pending = nil
        }
        var n = 0
        while true {
            switch try live.next() {
            case .event(let i):
                if let e = try decoder.decode(live.stream(i), streamIndex: i) {
                    if intervalBegin == 0 { intervalBegin = max(1, e.ts); intervalEnd = intervalBegin &+ intervalNs }
                    if e.ts >= intervalEnd { pending = e; return true }
                    model.consume(e)
                }
                n &+= 1
                if n & 1023 == 0 && monotonicNanoseconds() >= deadline { return true }
            case .idle:
                return n > 0
            case .ended:
                ended = true
                model.consume(RunLoopEvent(kind: .gap, ts: decoder.lastTs))   // nothing is in progress any more
                return n > 0
            }
        }
    }

    /// Ends the pipeline when every stream of its session hung up and everything was consumed:
    /// nothing more can come. (The live session learns that the session closed from its next
    /// GET_NEW_STREAMS, which it sends only while some stream is still asked for packets; once
    /// all hung up together, it never asks again.)
    public func endIfEveryStreamHungUp() {
        guard !ended, pending == nil, live.streamCount > 0, live.openStreamCount == 0 else { return }
        ended = true
        model.consume(RunLoopEvent(kind: .gap, ts: decoder.lastTs))
    }

    /// The live stream's newest safe time: every event before it was consumed (or is pending).
    public var horizon: Int64 {
        if ended { return max(decoder.lastTs, intervalBegin) }
        let h = Int64(bitPattern: live.horizon)
        return max(h, decoder.lastTs == .min ? 0 : decoder.lastTs, intervalBegin)
    }

    /// Whether the current interval is over: an event past its end came, or the stream is known
    /// to be quiet up to it.
    public var intervalComplete: Bool { hasData && (pending != nil || ended || horizon >= intervalEnd) }

    /// The rows of the current interval, then the next interval. The interval ends at its planned
    /// end, or where the data ends (the session over; a stalled stream shown anyway).
    ///
    /// The last interval ends where the recorded data does: the end of the streams' last packets
    /// (the tracer's flush when the session stopped, a few tens of ms after the last event), so its
    /// rates are over the time it covers, short as it may be — not over the gap between the last
    /// two events, which a loop's last iterations fill quickly.
    public func snapshot() -> (rows: [TopLoopRow], begin: Int64, end: Int64) {
        let begin = hasData ? intervalBegin : horizon
        let dataEnd = ended ? max(decoder.lastTs, Int64(bitPattern: live.latest)) : min(horizon, intervalEnd)
        let end = hasData ? max(begin, dataEnd) : begin
        let d = live.discardedEvents
        let rows = sink.snapshot(begin: begin, end: end, discarded: Int64(clamping: d &- lastDiscarded))
        lastDiscarded = d
        if hasData { intervalBegin = end; intervalEnd = end &+ intervalNs }
        return (rows, begin, end)
    }
}

