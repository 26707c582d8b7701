import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Traces that arrive piece by piece (the LTTng live protocol, module LTTngLive): metadata that
// grows, and data streams fed one packet at a time. The packets are decoded by the same
// `CTFStream` as files (same programs, same fast paths): a live stream's `CTFStream` reads from a
// buffer this file owns instead of a mapped file, and is handed each packet as it arrives.

/// A CTF trace whose metadata is received incrementally.
///
/// Append metadata bytes as they come (``appendMetadata(_:)``), then ``commitMetadata()`` once
/// every available byte was received: the whole text is parsed again and compiled, and streams
/// decode their next packet with the new event classes. LTTng's metadata only grows (new event
/// classes as programs register), so what was decoded before stays valid.
public final class CTFLiveTrace: @unchecked Sendable {
    /// Where the trace comes from (for messages), e.g. `net://127.0.0.1:5344/host/h/s/trace 1`.
    public let name: String
    private var raw: [UInt8] = []
    private var committedBytes = 0
    /// The trace of the current metadata (nil until metadata was committed).
    public private(set) var current: CTFTrace?
    /// How many times the metadata changed.
    public private(set) var generation = 0

    /// Creates a trace with no metadata yet.
    public init(name: String) { self.name = name }

    /// The parsed metadata (nil before the first commit).
    public var metadata: CTFMetadata? { current?.metadata }

    /// Bytes of metadata received so far.
    public var metadataByteCount: Int { raw.count }

    /// Appends received metadata bytes (packetized or plain text).
    public func appendMetadata(_ bytes: UnsafeRawBufferPointer) {
        raw.append(contentsOf: bytes)
    }

    /// Parses the metadata received so far, if it grew. Returns whether it changed.
    /// - Throws: the reader's metadata errors, naming ``name``.
    @discardableResult
    public func commitMetadata() throws -> Bool {
        guard raw.count > committedBytes else { return false }
        let (text, order, used) = try CTFLiveTrace.unpack(raw, path: name + "/metadata")
        guard used > committedBytes else { return false }
        current = try CTFTrace(path: name, metadataText: text, packetByteOrder: order)
        committedBytes = used
        generation += 1
        return true
    }

    /// The metadata received so far (CTFTrace.unpackMetadata with `partial`: a packet not yet
    /// complete is left for later). Returns the text, the packets' byte order and the bytes used.
    static func unpack(_ bytes: [UInt8], path: String) throws -> (String, CTFByteOrder?, Int) {
        let r = try CTFTrace.unpackMetadata(bytes, path: path, partial: true)
        return (r.text, r.packetByteOrder, r.used)
    }
}

/// One data stream of a ``CTFLiveTrace``, decoded one packet at a time.
///
/// Receive a packet straight into ``packetBuffer`` (at most ``capacity`` bytes), then
/// ``load(packetBytes:streamClassID:)`` it and call ``next()`` until it returns false; then the
/// next packet. The buffer is reserved address space (pages are committed as packets touch them),
/// so its address, which the decoder keeps, never changes and no packet is copied twice.
public final class CTFLiveStream: @unchecked Sendable {
    /// The trace the stream belongs to.
    public let trace: CTFLiveTrace
    /// Where the stream comes from (for messages).
    public let path: String
    /// The decoder positioned on the current event (after ``next()`` returned true); nil before
    /// the first packet. Replaced when the metadata changed.
    public private(set) var stream: CTFStream?
    /// Where to receive the next packet.
    public let packetBuffer: UnsafeMutableRawPointer
    /// The largest packet the buffer holds.
    public let capacity: Int
    /// Events the tracer discarded and packets lost, summed over the packets loaded.
    public private(set) var discardedEvents: UInt64 = 0, lostPackets: UInt64 = 0
    /// Reader warnings (the last 100).
    public private(set) var warnings: [CTFWarning] = []
    /// Packets loaded.
    public private(set) var packets = 0

    /// Reserves the stream's buffer (`capacity` bytes of address space).
    public init(trace: CTFLiveTrace, path: String, capacity: Int = 256 << 20) throws {
        self.trace = trace
        self.path = path
        self.capacity = capacity
        guard let m = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0), m != MAP_FAILED else {
            throw CTFReaderError.io(path: path, message: "cannot reserve \(capacity) bytes for the stream's packets: \(String(cString: strerror(errno)))")
        }
        packetBuffer = m
    }

    deinit {
        stream = nil
        munmap(packetBuffer, capacity)
    }

    /// Decodes the `bytes` bytes received into ``packetBuffer``: one packet of stream class
    /// `streamClassID`. Call it when the previous packet is consumed (``next()`` returned false).
    /// - Throws: ``CTFReaderError`` when the trace has no metadata yet or does not declare the class.
    public func load(packetBytes bytes: Int, streamClassID: UInt64) throws {
        guard bytes >= 0, bytes <= capacity else {
            throw CTFReaderError.malformed(path: path, offset: 0, field: "packet_size", message: "packet of \(bytes) bytes exceeds the live stream's buffer of \(capacity) bytes")
        }
        guard let t = trace.current else {
            throw CTFReaderError.metadataSemantic(path: trace.name + "/metadata", message: "a data packet arrived before any metadata")
        }
        if stream == nil || stream!.trace !== t || stream!.streamClassID != streamClassID {
            let s = try CTFStream(path: path, trace: t, firstStreamID: streamClassID, memory: UnsafeRawPointer(packetBuffer))
            if let old = stream {
                // Loss accounting continues across decoders.
                s.packets.lastDiscarded = old.packets.lastDiscarded
                s.packets.lastSeq = old.packets.lastSeq
                s.packets.lastPacketEndNS = old.packets.lastPacketEndNS
            }
            stream = s
        }
        let s = stream!
        s.fileSize = bytes
        s.hot.pointee.finished = bytes == 0
        s.hot.pointee.started = false
        s.hot.pointee.pending = false
        packets += 1
    }

    /// Advances to the next event of the current packet; false when the packet is consumed.
    /// - Throws: ``CTFReaderError/malformed(path:offset:field:message:)``.
    @inline(__always)
    public func next() throws -> Bool {
        guard let s = stream else { return false }
        if try s.next() { return true }
        collect(s)
        return false
    }

    /// Moves the losses and warnings the decoder found in the packet into the stream's totals.
    private func collect(_ s: CTFStream) {
        if !s.losses.isEmpty {
            for l in s.losses {
                switch l.kind {
                case .discardedEvents(let n): discardedEvents &+= n
                case .lostPackets(let n): lostPackets &+= n
                }
            }
            s.losses.removeAll(keepingCapacity: true)
        }
        if !s.warnings.isEmpty {
            warnings.append(contentsOf: s.warnings)
            if warnings.count > 100 { warnings.removeFirst(warnings.count - 100) }
            s.warnings.removeAll(keepingCapacity: true)
        }
    }
}
