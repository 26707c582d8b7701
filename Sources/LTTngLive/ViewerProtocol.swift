// The LTTng live viewer protocol (lttng-relayd's `--live-port`), as lttng-tools'
// src/bin/lttng-relayd/lttng-viewer-abi.h lays it out: packed structs, every integer big-endian.
// Each request is a 16-byte command header (data_size, cmd, cmd_version) followed by the command's
// payload; each reply is the command's response struct, possibly followed by data. This file only
// encodes and decodes those structs (tested byte for byte in LTTngLiveTests); the
// conversation is in ViewerConnection.swift.

/// Commands (`enum lttng_viewer_command`).
public enum ViewerCommand: UInt32, Sendable {
    case connect = 1, listSessions = 2, attachSession = 3, getNextIndex = 4, getPacket = 5
    case getMetadata = 6, getNewStreams = 7, createSession = 8, detachSession = 9

    /// The constant's name, for messages.
    public var name: String {
        switch self {
        case .connect: "CONNECT"
        case .listSessions: "LIST_SESSIONS"
        case .attachSession: "ATTACH_SESSION"
        case .getNextIndex: "GET_NEXT_INDEX"
        case .getPacket: "GET_PACKET"
        case .getMetadata: "GET_METADATA"
        case .getNewStreams: "GET_NEW_STREAMS"
        case .createSession: "CREATE_SESSION"
        case .detachSession: "DETACH_SESSION"
        }
    }
}

/// Sizes of the fixed arrays and structs of the ABI.
public enum ViewerABI {
    /// `LTTNG_VIEWER_PATH_MAX`, `LTTNG_VIEWER_NAME_MAX`, `LTTNG_VIEWER_HOST_NAME_MAX`.
    public static let pathMax = 4096, nameMax = 255, hostNameMax = 64
    /// The protocol version this client speaks (2.4: fixed-size session names).
    public static let major: UInt32 = 2, minor: UInt32 = 4
    /// `struct lttng_viewer_cmd`.
    public static let commandHeaderSize = 16
    /// `struct lttng_viewer_connect`.
    public static let connectSize = 20
    /// `struct lttng_viewer_session` (2.4).
    public static let sessionSize = 8 + 4 + 4 + 4 + hostNameMax + nameMax
    /// `struct lttng_viewer_stream`.
    public static let streamSize = 8 + 8 + 4 + pathMax + nameMax
    /// `struct lttng_viewer_attach_session_request`.
    public static let attachRequestSize = 20
    /// `struct lttng_viewer_index`.
    public static let indexSize = 7 * 8 + 4 + 4
    /// `struct lttng_viewer_get_packet`.
    public static let getPacketSize = 20
    /// `struct lttng_viewer_trace_packet` (without its data).
    public static let tracePacketHeaderSize = 12
    /// `struct lttng_viewer_metadata_packet` (without its data).
    public static let metadataPacketHeaderSize = 12
    /// `LTTNG_VIEWER_CLIENT_COMMAND`.
    public static let clientCommand: UInt32 = 1
    /// `LTTNG_VIEWER_SEEK_BEGINNING`, `LTTNG_VIEWER_SEEK_LAST`.
    public static let seekBeginning: UInt32 = 1, seekLast: UInt32 = 2
    /// `LTTNG_VIEWER_FLAG_NEW_METADATA`, `LTTNG_VIEWER_FLAG_NEW_STREAM`.
    public static let flagNewMetadata: UInt32 = 1, flagNewStream: UInt32 = 2
}

/// `enum lttng_viewer_next_index_return_code`.
public enum IndexStatus: UInt32, Sendable {
    case ok = 1, retry = 2, hup = 3, error = 4, inactive = 5, eof = 6
}

/// `enum lttng_viewer_attach_return_code`.
public enum AttachStatus: UInt32, Sendable {
    case ok = 1, already = 2, unknown = 3, notLive = 4, seekError = 5, noSession = 6

    /// What it means, for messages.
    public var meaning: String {
        switch self {
        case .ok: "attached"
        case .already: "another viewer is already attached to this session"
        case .unknown: "the session is unknown (or was destroyed)"
        case .notLive: "the session is not a live session (create it with `lttng create --live`)"
        case .seekError: "the relay daemon refused the seek position"
        case .noSession: "no viewer session was created first"
        }
    }
}

/// `enum lttng_viewer_get_packet_return_code`.
public enum PacketStatus: UInt32, Sendable { case ok = 1, retry = 2, error = 3, eof = 4 }
/// `enum lttng_viewer_get_metadata_return_code`.
public enum MetadataStatus: UInt32, Sendable { case ok = 1, noNew = 2, error = 3 }
/// `enum lttng_viewer_new_streams_return_code`.
public enum NewStreamsStatus: UInt32, Sendable { case ok = 1, noNew = 2, error = 3, hup = 4 }

/// Appends big-endian integers and fixed-size strings.
public struct WireWriter {
    /// The bytes written.
    public private(set) var bytes: [UInt8] = []
    /// Creates an empty writer.
    public init() {}
    /// A big-endian u32.
    public mutating func u32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(s))) } }
    /// A big-endian u64.
    public mutating func u64(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(s))) } }
    /// A `char[size]`: the UTF-8 bytes, NUL-padded (truncated to leave one NUL).
    public mutating func chars(_ s: String, size: Int) {
        let u = Array(s.utf8.prefix(size - 1))
        bytes += u
        bytes += [UInt8](repeating: 0, count: size - u.count)
    }
}

/// Reads big-endian integers and NUL-terminated fixed-size strings from bytes.
public struct WireReader {
    let bytes: UnsafeRawBufferPointer
    /// The read position.
    public var offset = 0
    /// Reads from `bytes` (which must outlive the reader).
    public init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
    /// A big-endian u32.
    public mutating func u32() -> UInt32 {
        var v: UInt32 = 0
        for i in 0..<4 { v = v << 8 | UInt32(bytes[offset + i]) }
        offset += 4
        return v
    }
    /// A big-endian u64.
    public mutating func u64() -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(bytes[offset + i]) }
        offset += 8
        return v
    }
    /// A `char[size]` up to its first NUL.
    public mutating func chars(_ size: Int) -> String {
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)])
        offset += size
        let n = slice.firstIndex(of: 0) ?? size
        return String(decoding: UnsafeRawBufferPointer(rebasing: slice[0..<n]), as: UTF8.self)
    }
}

/// `struct lttng_viewer_cmd`: the header of every request.
public struct ViewerCommandHeader: Equatable, Sendable {
    /// Bytes of payload after the header.
    public var dataSize: UInt64
    /// The command.
    public var command: UInt32
    /// Always 0.
    public var commandVersion: UInt32 = 0
    /// Creates a header.
    public init(dataSize: UInt64, command: ViewerCommand) { self.dataSize = dataSize; self.command = command.rawValue }
    /// Appends it.
    public func encode(into w: inout WireWriter) { w.u64(dataSize); w.u32(command); w.u32(commandVersion) }
}

/// `struct lttng_viewer_connect`: request and reply of CONNECT.
public struct ViewerConnect: Equatable, Sendable {
    /// Assigned by the relay daemon in its reply (the request sends all ones).
    public var viewerSessionID: UInt64
    /// Protocol version.
    public var major: UInt32, minor: UInt32
    /// `LTTNG_VIEWER_CLIENT_COMMAND`.
    public var type: UInt32
    /// Creates one.
    public init(viewerSessionID: UInt64 = .max, major: UInt32 = ViewerABI.major, minor: UInt32 = ViewerABI.minor, type: UInt32 = ViewerABI.clientCommand) {
        self.viewerSessionID = viewerSessionID; self.major = major; self.minor = minor; self.type = type
    }
    /// Appends it.
    public func encode(into w: inout WireWriter) { w.u64(viewerSessionID); w.u32(major); w.u32(minor); w.u32(type) }
    /// Reads one.
    public static func decode(_ r: inout WireReader) -> ViewerConnect {
        ViewerConnect(viewerSessionID: r.u64(), major: r.u32(), minor: r.u32(), type: r.u32())
    }
}

/// `struct lttng_viewer_session` (protocol 2.4): one entry of LIST_SESSIONS.
public struct ViewerSession: Equatable, Sendable {
    /// The relay daemon's session id.
    public var id: UInt64
    /// The live timer period (µs).
    public var liveTimer: UInt32
    /// Viewers attached (0 or 1).
    public var clients: UInt32
    /// Streams.
    public var streams: UInt32
    /// The traced host's name and the session's name.
    public var hostname: String, name: String
    /// Creates one.
    public init(id: UInt64, liveTimer: UInt32, clients: UInt32, streams: UInt32, hostname: String, name: String) {
        self.id = id; self.liveTimer = liveTimer; self.clients = clients; self.streams = streams; self.hostname = hostname; self.name = name
    }
    /// Appends it (as the relay daemon does).
    public func encode(into w: inout WireWriter) {
        w.u64(id); w.u32(liveTimer); w.u32(clients); w.u32(streams)
        w.chars(hostname, size: ViewerABI.hostNameMax); w.chars(name, size: ViewerABI.nameMax)
    }
    /// Reads one.
    public static func decode(_ r: inout WireReader) -> ViewerSession {
        let id = r.u64(), t = r.u32(), c = r.u32(), s = r.u32()
        return ViewerSession(id: id, liveTimer: t, clients: c, streams: s, hostname: r.chars(ViewerABI.hostNameMax), name: r.chars(ViewerABI.nameMax))
    }
}

/// `struct lttng_viewer_stream`: a stream of an attached session.
public struct ViewerStream: Equatable, Sendable {
    /// The viewer stream id (what GET_NEXT_INDEX, GET_PACKET and GET_METADATA name).
    public var id: UInt64
    /// Streams with the same `ctfTraceID` belong to one CTF trace (one metadata).
    public var ctfTraceID: UInt64
    /// Whether it is the trace's metadata stream.
    public var isMetadata: Bool
    /// The trace's path below the session (`ust/uid/0/64-bit`) and the channel (file) name.
    public var path: String, channel: String
    /// Creates one.
    public init(id: UInt64, ctfTraceID: UInt64, isMetadata: Bool, path: String, channel: String) {
        self.id = id; self.ctfTraceID = ctfTraceID; self.isMetadata = isMetadata; self.path = path; self.channel = channel
    }
    /// Appends it (as the relay daemon does).
    public func encode(into w: inout WireWriter) {
        w.u64(id); w.u64(ctfTraceID); w.u32(isMetadata ? 1 : 0)
        w.chars(path, size: ViewerABI.pathMax); w.chars(channel, size: ViewerABI.nameMax)
    }
    /// Reads one.
    public static func decode(_ r: inout WireReader) -> ViewerStream {
        let id = r.u64(), t = r.u64(), m = r.u32()
        return ViewerStream(id: id, ctfTraceID: t, isMetadata: m != 0, path: r.chars(ViewerABI.pathMax), channel: r.chars(ViewerABI.nameMax))
    }
}

/// `struct lttng_viewer_attach_session_request`.
public struct AttachRequest: Equatable, Sendable {
    /// The relay daemon's session id.
    public var sessionID: UInt64
    /// Unused (0).
    public var offset: UInt64 = 0
    /// `LTTNG_VIEWER_SEEK_BEGINNING` or `_LAST`.
    public var seek: UInt32
    /// Creates one.
    public init(sessionID: UInt64, seek: UInt32) { self.sessionID = sessionID; self.seek = seek }
    /// Appends it.
    public func encode(into w: inout WireWriter) { w.u64(sessionID); w.u64(offset); w.u32(seek) }
}

/// `struct lttng_viewer_index`: the reply of GET_NEXT_INDEX.
public struct ViewerIndex: Equatable, Sendable {
    /// The packet's offset in the stream file and its sizes (bits).
    public var offset: UInt64, packetSize: UInt64, contentSize: UInt64
    /// The packet's time range (clock cycles); for an inactive stream, `timestampEnd` is the
    /// beacon: no event of the stream will be earlier.
    public var timestampBegin: UInt64, timestampEnd: UInt64
    /// The tracer's cumulative count of discarded events.
    public var eventsDiscarded: UInt64
    /// The CTF stream class id.
    public var streamID: UInt64
    /// `enum lttng_viewer_next_index_return_code` (raw: the relay may send values this client does not know).
    public var status: UInt32
    /// `LTTNG_VIEWER_FLAG_*`.
    public var flags: UInt32
    /// Creates one.
    public init(offset: UInt64 = 0, packetSize: UInt64 = 0, contentSize: UInt64 = 0, timestampBegin: UInt64 = 0, timestampEnd: UInt64 = 0,
                eventsDiscarded: UInt64 = 0, streamID: UInt64 = 0, status: UInt32, flags: UInt32 = 0) {
        self.offset = offset; self.packetSize = packetSize; self.contentSize = contentSize
        self.timestampBegin = timestampBegin; self.timestampEnd = timestampEnd
        self.eventsDiscarded = eventsDiscarded; self.streamID = streamID; self.status = status; self.flags = flags
    }
    /// Appends it (as the relay daemon does).
    public func encode(into w: inout WireWriter) {
        w.u64(offset); w.u64(packetSize); w.u64(contentSize); w.u64(timestampBegin); w.u64(timestampEnd)
        w.u64(eventsDiscarded); w.u64(streamID); w.u32(status); w.u32(flags)
    }
    /// Reads one.
    public static func decode(_ r: inout WireReader) -> ViewerIndex {
        ViewerIndex(offset: r.u64(), packetSize: r.u64(), contentSize: r.u64(), timestampBegin: r.u64(), timestampEnd: r.u64(),
                    eventsDiscarded: r.u64(), streamID: r.u64(), status: r.u32(), flags: r.u32())
    }
}

/// `struct lttng_viewer_get_packet`.
public struct GetPacketRequest: Equatable, Sendable {
    /// The viewer stream id, the packet's offset and its length in bytes.
    public var streamID: UInt64, offset: UInt64, length: UInt32
    /// Creates one.
    public init(streamID: UInt64, offset: UInt64, length: UInt32) { self.streamID = streamID; self.offset = offset; self.length = length }
    /// Appends it.
    public func encode(into w: inout WireWriter) { w.u64(streamID); w.u64(offset); w.u32(length) }
}
