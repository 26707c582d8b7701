import CTFReader
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// CLOCK_MONOTONIC in ns.
@inline(__always)
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// One live session of a relay daemon, attached, delivering the events of all its streams in
/// time order, as they arrive.
///
/// How events reach the decoder: GET_NEXT_INDEX names a stream's next packet (offset, size, time
/// range); GET_PACKET receives it straight into the stream's ``CTFLiveStream`` buffer, which
/// CTFReader's stream decoder reads in place, one event per ``next()``. New metadata (the index's
/// NEW_METADATA flag) is fetched and committed before the packet is decoded; new streams (the
/// NEW_STREAM flag, and a poll every second) join the merge.
///
/// The merge: an event is handed out only when no stream can still deliver an earlier one. Each
/// stream is either on an event (its time bounds the stream), or between packets with a time up to
/// which it is known to be quiet: the end of its last packet, or an INACTIVE beacon's time (the
/// live timer sends one per period for a stream with no new data). A stream behind the earliest
/// pending event is asked for its next index; RETRY (nothing yet) is asked again after
/// ``retryDelayNs``. A stream that makes no progress for ``staleAfterNs`` (a stopped session sends
/// no beacon) stops holding the others back; its late events, if any, come out of order and the
/// consumer clamps them. HUP ends a stream; the session ends when every stream hung up and the
/// relay daemon reports the session closed.
public final class LiveSession: @unchecked Sendable {
    /// What ``next()`` found.
    public enum Step: Equatable {
        /// The stream at this index (``stream(_:)``) is on the next event.
        case event(Int)
        /// Nothing can be delivered yet: call again later.
        case idle
        /// The session is over and every event was delivered.
        case ended
    }

    final class DataStream {
        let viewer: ViewerStream
        let decoder: CTFLiveStream
        var hasEvent = false
        var eventCycles: UInt64 = 0
        /// No event of this stream before this time (cycles), once `known`.
        var quietUntil: UInt64 = 0
        var known = false
        var hup = false
        var nextAsk: UInt64 = 0
        var lastProgress: UInt64
        var streamClassID: UInt64 = 0
        var indexDiscarded: UInt64 = 0
        init(_ v: ViewerStream, decoder: CTFLiveStream, now: UInt64) { viewer = v; self.decoder = decoder; lastProgress = now }
    }

    /// The relay daemon's description of the session.
    public let info: ViewerSession
    /// The URL of the session.
    public let url: LiveURL
    let connection: ViewerConnection
    private var traces: [UInt64: CTFLiveTrace] = [:]
    private var metadataStreams: [UInt64: UInt64] = [:]
    private var streams: [DataStream] = []
    private var current = -1
    private var needNewStreams = false
    private var nextNewStreamsPoll: UInt64 = 0
    private var closed = false
    private var detached = false
    /// How long after RETRY (or a beacon that did not reach far enough) a stream is asked again.
    public var retryDelayNs: UInt64
    /// How long a stream may make no progress before it stops holding the others back.
    public var staleAfterNs: UInt64
    /// Packets received, bytes received, beacons received.
    public private(set) var packets = 0, bytes = 0, beacons = 0
    /// Events delivered.
    public private(set) var events = 0

    /// Connects to the relay daemon of `url`, creates a viewer session and attaches to `session`.
    /// - Parameters:
    ///   - fromBeginning: deliver the streams from their first packet (else from the relay's newest).
    /// - Throws: ``LiveError``.
    public init(url: LiveURL, session: ViewerSession, fromBeginning: Bool, timeout: Double = 10) throws {
        self.url = url
        info = session
        connection = try ViewerConnection(host: url.host, port: url.port, timeout: timeout)
        let period = UInt64(max(1000, session.liveTimer)) * 1000
        retryDelayNs = min(100_000_000, max(5_000_000, period / 4))
        staleAfterNs = max(3_000_000_000, period * 5)
        try connection.createViewerSession()
        let (st, list) = try connection.attach(sessionID: session.id, seek: fromBeginning ? ViewerABI.seekBeginning : ViewerABI.seekLast)
        guard st == AttachStatus.ok.rawValue else {
            let why = AttachStatus(rawValue: st)?.meaning ?? "status \(st)"
            connection.close()
            throw LiveError.attach(endpoint: connection.endpoint, session: "\(session.hostname)/\(session.name)", reason: why)
        }
        try add(list)
        nextNewStreamsPoll = monotonicNanoseconds() + 1_000_000_000
    }

    /// Lists the sessions of the relay daemon at `host:port`.
    public static func list(host: String, port: Int, timeout: Double = 10) throws -> [ViewerSession] {
        let c = try ViewerConnection(host: host, port: port, timeout: timeout)
        defer { c.close() }
        return try c.listSessions()
    }

    /// Detaches (best effort) and closes the connection.
    public func close() {
        if !detached { detached = true; connection.detach(sessionID: info.id) }
        connection.close()
    }

    /// `host:port` of the relay daemon.
    public var endpoint: String { connection.endpoint }
    /// Whether the relay daemon reported the session closed (destroyed) and every stream hung up.
    public var isOver: Bool { closed && streams.allSatisfy(\.hup) }
    /// Data streams known (hung up or not), and those still open.
    public var streamCount: Int { streams.count }
    public var openStreamCount: Int { streams.reduce(0) { $0 + ($1.hup ? 0 : 1) } }
    /// Events the tracer discarded (from the packets' counters), summed over the streams.
    public var discardedEvents: UInt64 { streams.reduce(0) { $0 &+ $1.decoder.discardedEvents } }
    /// Packets lost (sequence number gaps).
    public var lostPackets: UInt64 { streams.reduce(0) { $0 &+ $1.decoder.lostPackets } }
    /// The decoder of stream `index`, positioned on the event ``next()`` returned.
    @inline(__always)
    public func stream(_ index: Int) -> CTFStream { streams[index].decoder.stream.unsafelyUnwrapped }
    /// Reader warnings of every stream.
    public var warnings: [CTFWarning] { streams.flatMap(\.decoder.warnings) }

    /// The time (clock cycles) up to which every event was delivered or is pending: no stream can
    /// still deliver an earlier event (streams gone stale excepted). 0 before anything is known.
    public var horizon: UInt64 {
        let now = monotonicNanoseconds()
        var h = UInt64.max, any = false
        for s in streams where !s.hup && !(now &- s.lastProgress > staleAfterNs && !s.hasEvent) {
            any = true
            let t = s.hasEvent ? s.eventCycles : (s.known ? s.quietUntil : 0)
            if t < h { h = t }
        }
        return any ? h : 0
    }

    /// The newest time any stream is known up to (its current event or quiet time): what the
    /// live stream has shown of the traced host's clock so far.
    public var latest: UInt64 {
        var m: UInt64 = 0
        for s in streams where s.known || s.hasEvent { m = max(m, s.hasEvent ? s.eventCycles : s.quietUntil) }
        return m
    }

    // MARK: streams and metadata

    private func add(_ list: [ViewerStream]) throws {
        let now = monotonicNanoseconds()
        // Metadata streams first: data streams name their trace.
        for v in list where v.isMetadata {
            metadataStreams[v.ctfTraceID] = v.id
            if traces[v.ctfTraceID] == nil { traces[v.ctfTraceID] = CTFLiveTrace(name: "\(url)/\(v.path)") }
            try fetchMetadata(v.ctfTraceID)
        }
        for v in list where !v.isMetadata {
            guard !streams.contains(where: { $0.viewer.id == v.id }) else { continue }
            let t = traces[v.ctfTraceID] ?? {
                let t = CTFLiveTrace(name: "\(url)/\(v.path)")
                traces[v.ctfTraceID] = t
                return t
            }()
            let d: CTFLiveStream
            do { d = try CTFLiveStream(trace: t, path: "\(url)/\(v.path)/\(v.channel)") } catch {
                throw LiveError.trace(endpoint: endpoint, message: "\(error)")
            }
            streams.append(DataStream(v, decoder: d, now: now))
        }
    }

    private func fetchMetadata(_ traceID: UInt64) throws {
        guard let sid = metadataStreams[traceID], let t = traces[traceID] else { return }
        while true {
            let (st, data) = try connection.metadata(streamID: sid)
            if st == MetadataStatus.ok.rawValue {
                if data.isEmpty { break }
                data.withUnsafeBytes { t.appendMetadata($0) }
                continue
            }
            break   // NO_NEW, or ERR: the metadata stream is gone (a per-pid trace whose program exited)
        }
        do { try t.commitMetadata() } catch {
            throw LiveError.trace(endpoint: endpoint, message: "\(error)")
        }
    }

    private func pollNewStreams() throws {
        needNewStreams = false
        let (st, list) = try connection.newStreams(sessionID: info.id)
        switch NewStreamsStatus(rawValue: st) {
        case .ok: try add(list)
        case .noNew: break
        case .hup: closed = true
        case .error:
            // Also what a relay daemon answers for a session destroyed meanwhile.
            closed = true
        case nil:
            throw LiveError.protocolError(endpoint: endpoint, command: "GET_NEW_STREAMS", message: "unknown status \(st)")
        }
    }

    // MARK: the merge

    /// Advances the stream that held the last event.
    @inline(__always)
    private func advance(_ s: DataStream) throws {
        do {
            if try s.decoder.next() {
                s.hasEvent = true
                s.eventCycles = s.decoder.stream.unsafelyUnwrapped.cycles
                return
            }
        } catch {
            throw LiveError.trace(endpoint: endpoint, message: "\(error)")
        }
        s.hasEvent = false
    }

    /// Asks the relay daemon for stream `s`'s next packet and loads it. Returns whether the
    /// stream's state moved (a packet, a beacon further on, a hang-up).
    private func fetch(_ s: DataStream, now: UInt64) throws -> Bool {
        let idx = try connection.nextIndex(streamID: s.viewer.id)
        if idx.flags & ViewerABI.flagNewStream != 0 { needNewStreams = true }
        switch IndexStatus(rawValue: idx.status) {
        case .ok:
            if idx.flags & ViewerABI.flagNewMetadata != 0 || s.decoder.trace.current == nil { try fetchMetadata(s.viewer.ctfTraceID) }
            guard idx.packetSize % 8 == 0, idx.packetSize / 8 <= UInt64(s.decoder.capacity) else {
                throw LiveError.protocolError(endpoint: endpoint, command: "GET_NEXT_INDEX", message: "stream \(s.viewer.id): packet of \(idx.packetSize) bits")
            }
            var got = try connection.packet(streamID: s.viewer.id, offset: idx.offset, length: UInt32(idx.packetSize / 8), into: s.decoder.packetBuffer)
            if got.status != PacketStatus.ok.rawValue, got.flags & (ViewerABI.flagNewMetadata | ViewerABI.flagNewStream) != 0 {
                // The relay wants the new metadata (or streams) read first: then the packet again.
                if got.flags & ViewerABI.flagNewMetadata != 0 { try fetchMetadata(s.viewer.ctfTraceID) }
                if got.flags & ViewerABI.flagNewStream != 0 { needNewStreams = true }
                got = try connection.packet(streamID: s.viewer.id, offset: idx.offset, length: UInt32(idx.packetSize / 8), into: s.decoder.packetBuffer)
            }
            guard got.status == PacketStatus.ok.rawValue else {
                throw LiveError.protocolError(endpoint: endpoint, command: "GET_PACKET",
                                              message: "stream \(s.viewer.id) (\(s.viewer.path)/\(s.viewer.channel)): status \(got.status) for the packet at offset \(idx.offset)")
            }
            packets += 1
            bytes += got.length
            do { try s.decoder.load(packetBytes: got.length, streamClassID: idx.streamID) } catch {
                throw LiveError.trace(endpoint: endpoint, message: "\(error)")
            }
            s.streamClassID = idx.streamID
            s.indexDiscarded = idx.eventsDiscarded
            s.known = true
            s.quietUntil = max(s.quietUntil, idx.timestampEnd)
            s.lastProgress = now
            try advance(s)
            return true
        case .inactive:
            beacons += 1
            s.known = true
            s.nextAsk = now &+ retryDelayNs
            if idx.timestampEnd > s.quietUntil { s.quietUntil = idx.timestampEnd; s.lastProgress = now; return true }
            return false
        case .retry:
            s.nextAsk = now &+ retryDelayNs
            return false
        case .hup, .eof:
            s.hup = true
            return true
        case .error:
            throw LiveError.protocolError(endpoint: endpoint, command: "GET_NEXT_INDEX", message: "the relay daemon reported an error for stream \(s.viewer.id) (\(s.viewer.path)/\(s.viewer.channel))")
        case nil:
            throw LiveError.protocolError(endpoint: endpoint, command: "GET_NEXT_INDEX", message: "unknown status \(idx.status)")
        }
    }

    /// Positions a stream on the next event in time order, or says why not.
    /// - Throws: ``LiveError``.
    public func next() throws -> Step {
        if current >= 0 {
            let s = streams[current]
            current = -1
            try advance(s)
        }
        var now: UInt64 = 0
        while true {
            var cand = -1
            var candTs = UInt64.max
            for i in streams.indices {
                let s = streams[i]
                if s.hasEvent && s.eventCycles < candTs { cand = i; candTs = s.eventCycles }
            }
            var blocked = false, moved = false
            for s in streams where !s.hup && !s.hasEvent && (!s.known || s.quietUntil < candTs) {
                if now == 0 { now = monotonicNanoseconds() }
                // A stream quiet for long stops holding the others back — until the session is
                // closed: then every stream is asked again, so its hang-up is seen and the view ends.
                if now &- s.lastProgress > staleAfterNs && !closed { continue }
                if now < s.nextAsk { blocked = true; continue }
                if try fetch(s, now: now) { moved = true } else { blocked = true }
            }
            if needNewStreams || (now != 0 && now >= nextNewStreamsPoll) || (cand < 0 && streams.isEmpty) {
                if now == 0 { now = monotonicNanoseconds() }
                if needNewStreams || now >= nextNewStreamsPoll {
                    let before = streams.count
                    try pollNewStreams()
                    // Until the first program registers there is no stream: ask often.
                    nextNewStreamsPoll = now + (streams.isEmpty ? retryDelayNs : 1_000_000_000)
                    if streams.count != before { moved = true }
                }
            }
            if moved { continue }
            if !blocked && cand >= 0 {
                current = cand
                events &+= 1
                return .event(cand)
            }
            if cand < 0 && closed && streams.allSatisfy(\.hup) { return .ended }
            return .idle
        }
    }
}
