import Foundation

/// The layout every hand-built test trace shares (CTFReaderTests' tiny and accessor traces,
/// ReliabilityTests' hostile ones): an 8-byte packet header (magic, stream id), a 48-byte packet
/// context (timestamps begin/end, content and packet sizes in bits, sequence number, discarded
/// events), a 1 GHz clock `c` 1000 s after the epoch, and an event header `{ uint8 id; ts_t ts; }`.
public enum HandBuiltTrace {
    /// The metadata text: the shared declarations, then `typealiases`, the trace and its clock, then
    /// `afterClock` (declarations that map to the clock), the stream (with `eventHeader` as its event
    /// header — the shared `{ uint8 id; ts_t ts; }` unless given — and `eventContext` as its event
    /// context when given), then `events` (TSDL `event { … };` blocks).
    public static func metadata(hostname: String, typealiases: String = "", afterClock: String = "",
                                eventHeader: String = "struct { uint8_t id; ts_t timestamp; }",
                                eventContext: String? = nil, events: String) -> String {
        var m = """
        /* CTF 1.8 */
        typealias integer { size = 8; align = 8; signed = false; } := uint8_t;
        typealias integer { size = 32; align = 8; signed = false; } := uint32_t;
        typealias integer { size = 64; align = 8; signed = false; } := uint64_t;

        """
        m += typealiases
        m += """
        trace {
            major = 1; minor = 8; byte_order = le;
            packet.header := struct { uint32_t magic; uint32_t stream_id; };
        };
        env { hostname = "\(hostname)"; };
        clock { name = "c"; freq = 1000000000; offset_s = 1000; };
        typealias integer { size = 64; align = 8; signed = false; map = clock.c.value; } := ts_t;

        """
        m += afterClock
        m += """
        stream {
            id = 0;
            packet.context := struct {
                ts_t timestamp_begin; ts_t timestamp_end;
                uint64_t content_size; uint64_t packet_size;
                uint64_t packet_seq_num; uint64_t events_discarded;
            };
            event.header := \(eventHeader);

        """
        if let eventContext { m += "    event.context := \(eventContext);\n" }
        m += "};\n" + events + "\n"
        return m
    }

    /// Bytes of the packet header and context (56 bytes), little-endian; sizes in bits.
    public static func packetPrefix(magic: UInt32 = 0xC1FC_1FC1, streamID: UInt32 = 0, begin: UInt64, end: UInt64,
                                    contentBits: UInt64, packetBits: UInt64, seq: UInt64, discarded: UInt64 = 0) -> [UInt8] {
        le(magic) + le(streamID) + le(begin) + le(end) + le(contentBits) + le(packetBits) + le(seq) + le(discarded)
    }

    /// The size of ``packetPrefix(magic:streamID:begin:end:contentBits:packetBits:seq:discarded:)`` in bytes.
    public static let packetPrefixSize = 8 + 48

    /// The little-endian bytes of an integer.
    public static func le<T: FixedWidthInteger>(_ v: T) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }

    /// Writes `metadata` and one stream file `stream_0` into `dir` (made anew).
    public static func write(to dir: String, metadata: [UInt8], stream: [UInt8]) throws {
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(metadata).write(to: URL(fileURLWithPath: dir + "/metadata"))
        try Data(stream).write(to: URL(fileURLWithPath: dir + "/stream_0"))
    }
}
