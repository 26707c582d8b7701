import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What went wrong talking to a relay daemon; every case names the relay daemon (host:port) and
/// what was being done.
public enum LiveError: Error, CustomStringConvertible, Sendable {
    /// A URL that is not `net://HOST[:PORT][/host/HOSTNAME[/SESSION]]`.
    case badURL(String, String)
    /// The relay daemon cannot be reached.
    case unreachable(endpoint: String, reason: String)
    /// The connection closed, or a read or write failed or timed out, during `command`.
    case connection(endpoint: String, command: String, reason: String)
    /// The relay daemon answered something this client cannot accept.
    case protocolError(endpoint: String, command: String, message: String)
    /// No such session on the relay daemon.
    case unknownSession(endpoint: String, wanted: String, available: [String])
    /// The relay daemon refused to attach the session.
    case attach(endpoint: String, session: String, reason: String)
    /// The trace received could not be decoded.
    case trace(endpoint: String, message: String)

    /// A sentence for the user.
    public var description: String {
        switch self {
        case .badURL(let u, let why): "bad live URL \(u.debugDescription): \(why) (expected net://HOST[:PORT][/host/HOSTNAME[/SESSION]])"
        case .unreachable(let e, let r): "cannot reach the relay daemon's live port at \(e): \(r)"
        case .connection(let e, let c, let r): "relay daemon at \(e): \(c): \(r)"
        case .protocolError(let e, let c, let m): "relay daemon at \(e): \(c): protocol error: \(m)"
        case .unknownSession(let e, let w, let a):
            "no live session \(w) on the relay daemon at \(e) (sessions there: \(a.isEmpty ? "none" : a.joined(separator: ", ")))"
        case .attach(let e, let s, let r): "relay daemon at \(e): cannot attach to session \(s): \(r)"
        case .trace(let e, let m): "live trace from \(e): \(m)"
        }
    }

    /// rltrace's exit code for it: 64 bad command line, 6 LTTng set-up (no relay daemon, refused
    /// attach), 3 no such session, 1 the connection or the data failed mid-way.
    public var exitCode: Int32 {
        switch self {
        case .badURL: 64
        case .unreachable, .attach: 6
        case .unknownSession: 3
        case .connection, .protocolError, .trace: 1
        }
    }
}

/// One TCP connection to a relay daemon's live port, speaking the viewer protocol
/// (ViewerProtocol.swift). Blocking I/O with a time limit per read and write.
public final class ViewerConnection: @unchecked Sendable {
    /// `host:port`, for messages.
    public let endpoint: String
    private var fd: Int32 = -1
    /// The viewer session id the relay daemon assigned, and the protocol version agreed.
    public private(set) var viewerSessionID: UInt64 = 0
    public private(set) var minor: UInt32 = 0
    private var scratch = [UInt8](repeating: 0, count: 64)

    /// Connects to `host:port` and does the CONNECT handshake.
    /// - Throws: ``LiveError``.
    public init(host: String, port: Int, timeout: Double = 10) throws {
        endpoint = "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var res: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &res)
        guard rc == 0, let first = res else {
            throw LiveError.unreachable(endpoint: endpoint, reason: "cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(res) }
        var lastError = "no address"
        var ai: UnsafeMutablePointer<addrinfo>? = first
        while let a = ai {
            let s = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            if s >= 0 {
                if connect(s, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 { fd = s; break }
                lastError = String(cString: strerror(errno))
                Glibc.close(s)
            }
            ai = a.pointee.ai_next
        }
        guard fd >= 0 else { throw LiveError.unreachable(endpoint: endpoint, reason: lastError) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int(suseconds_t((timeout - floor(timeout)) * 1e6)))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        // CONNECT: the header and the request in one write (no write-write on the socket).
        var w = WireWriter()
        ViewerCommandHeader(dataSize: UInt64(ViewerABI.connectSize), command: .connect).encode(into: &w)
        ViewerConnect().encode(into: &w)
        try send(w.bytes, .connect)
        let reply = try receive(ViewerABI.connectSize, .connect)
        var r = WireReader(reply)
        let c = ViewerConnect.decode(&r)
        guard c.major == ViewerABI.major else {
            Glibc.close(fd); fd = -1
            throw LiveError.protocolError(endpoint: endpoint, command: "CONNECT", message: "the relay daemon speaks protocol \(c.major).\(c.minor), this client \(ViewerABI.major).\(ViewerABI.minor)")
        }
        viewerSessionID = c.viewerSessionID
        minor = min(c.minor, ViewerABI.minor)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Closes the connection.
    public func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    // MARK: raw I/O

    private func send(_ bytes: [UInt8], _ cmd: ViewerCommand) throws {
        try bytes.withUnsafeBytes { b in
            var off = 0
            while off < b.count {
                let n = Glibc.send(fd, b.baseAddress! + off, b.count - off, Int32(MSG_NOSIGNAL))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw LiveError.connection(endpoint: endpoint, command: cmd.name, reason: errno == EAGAIN ? "timed out sending" : Self.failure("send", errno))
                }
                off += n
            }
        }
    }

    /// Receives exactly `count` bytes into `buffer`.
    public func receive(into buffer: UnsafeMutableRawPointer, count: Int, _ cmd: ViewerCommand) throws {
        var off = 0
        while off < count {
            let n = recv(fd, buffer + off, count - off, 0)
            if n == 0 { throw LiveError.connection(endpoint: endpoint, command: cmd.name, reason: "the relay daemon closed the connection") }
            if n < 0 {
                if errno == EINTR { continue }
                throw LiveError.connection(endpoint: endpoint, command: cmd.name, reason: errno == EAGAIN ? "no answer in time (timed out)" : Self.failure("receive", errno))
            }
            off += n
        }
    }

    /// The reason of a failed `send`/`recv`: a relay daemon that went away resets the connection as often as it
    /// closes it (which of the two depends on what was still unread when it died), and both read the same.
    static func failure(_ what: String, _ e: Int32) -> String {
        if e == ECONNRESET || e == EPIPE { return "the relay daemon closed the connection (\(String(cString: strerror(e))))" }
        return "\(what) failed: \(String(cString: strerror(e)))"
    }

    /// Receives exactly `count` bytes into the scratch buffer (valid until the next call).
    private func receive(_ count: Int, _ cmd: ViewerCommand) throws -> UnsafeRawBufferPointer {
        if scratch.count < count { scratch = [UInt8](repeating: 0, count: count) }
        try scratch.withUnsafeMutableBytes { try receive(into: $0.baseAddress!, count: count, cmd) }
        return scratch.withUnsafeBytes { UnsafeRawBufferPointer(rebasing: $0[0..<count]) }
    }

    private func request(_ cmd: ViewerCommand, _ payload: (inout WireWriter) -> Void, size: Int) throws {
        var w = WireWriter()
        ViewerCommandHeader(dataSize: UInt64(size), command: cmd).encode(into: &w)
        payload(&w)
        try send(w.bytes, cmd)
    }

    // MARK: commands

    /// LIST_SESSIONS.
    public func listSessions() throws -> [ViewerSession] {
        try request(.listSessions, { _ in }, size: 0)
        var r = WireReader(try receive(4, .listSessions))
        let n = Int(r.u32())
        guard n < 100_000 else { throw LiveError.protocolError(endpoint: endpoint, command: "LIST_SESSIONS", message: "\(n) sessions announced") }
        var out: [ViewerSession] = []
        for _ in 0..<n {
            var s = WireReader(try receive(ViewerABI.sessionSize, .listSessions))
            out.append(ViewerSession.decode(&s))
        }
        return out
    }

    /// CREATE_SESSION (a viewer session, needed before ATTACH_SESSION).
    public func createViewerSession() throws {
        try request(.createSession, { _ in }, size: 0)
        var r = WireReader(try receive(4, .createSession))
        let st = r.u32()
        guard st == 1 else { throw LiveError.protocolError(endpoint: endpoint, command: "CREATE_SESSION", message: "status \(st)") }
    }

    private func receiveStreams(_ n: Int, _ cmd: ViewerCommand) throws -> [ViewerStream] {
        guard n < 1_000_000 else { throw LiveError.protocolError(endpoint: endpoint, command: cmd.name, message: "\(n) streams announced") }
        var out: [ViewerStream] = []
        for _ in 0..<n {
            var r = WireReader(try receive(ViewerABI.streamSize, cmd))
            out.append(ViewerStream.decode(&r))
        }
        return out
    }

    /// ATTACH_SESSION: the session's streams, or the refusal.
    public func attach(sessionID: UInt64, seek: UInt32) throws -> (status: UInt32, streams: [ViewerStream]) {
        try request(.attachSession, { AttachRequest(sessionID: sessionID, seek: seek).encode(into: &$0) }, size: ViewerABI.attachRequestSize)
        var r = WireReader(try receive(8, .attachSession))
        let st = r.u32(), n = Int(r.u32())
        guard st == AttachStatus.ok.rawValue else { return (st, []) }
        return (st, try receiveStreams(n, .attachSession))
    }

    /// GET_NEW_STREAMS.
    public func newStreams(sessionID: UInt64) throws -> (status: UInt32, streams: [ViewerStream]) {
        try request(.getNewStreams, { $0.u64(sessionID) }, size: 8)
        var r = WireReader(try receive(8, .getNewStreams))
        let st = r.u32(), n = Int(r.u32())
        guard st == NewStreamsStatus.ok.rawValue else { return (st, []) }
        return (st, try receiveStreams(n, .getNewStreams))
    }

    /// GET_NEXT_INDEX.
    public func nextIndex(streamID: UInt64) throws -> ViewerIndex {
        try request(.getNextIndex, { $0.u64(streamID) }, size: 8)
        var r = WireReader(try receive(ViewerABI.indexSize, .getNextIndex))
        return ViewerIndex.decode(&r)
    }

    /// GET_PACKET into `buffer` (capacity `length`): the status, the flags and the bytes received.
    public func packet(streamID: UInt64, offset: UInt64, length: UInt32, into buffer: UnsafeMutableRawPointer) throws -> (status: UInt32, flags: UInt32, length: Int) {
        try request(.getPacket, { GetPacketRequest(streamID: streamID, offset: offset, length: length).encode(into: &$0) }, size: ViewerABI.getPacketSize)
        var r = WireReader(try receive(ViewerABI.tracePacketHeaderSize, .getPacket))
        let st = r.u32(), len = r.u32(), flags = r.u32()
        guard st == PacketStatus.ok.rawValue else { return (st, flags, 0) }
        guard len <= length else {
            throw LiveError.protocolError(endpoint: endpoint, command: "GET_PACKET", message: "\(len) bytes sent for a request of \(length)")
        }
        try receive(into: buffer, count: Int(len), .getPacket)
        return (st, flags, Int(len))
    }

    /// GET_METADATA: the status and the bytes (empty unless OK).
    public func metadata(streamID: UInt64) throws -> (status: UInt32, bytes: [UInt8]) {
        try request(.getMetadata, { $0.u64(streamID) }, size: 8)
        var r = WireReader(try receive(ViewerABI.metadataPacketHeaderSize, .getMetadata))
        let len = r.u64(), st = r.u32()
        guard st == MetadataStatus.ok.rawValue else { return (st, []) }
        guard len < 1 << 30 else { throw LiveError.protocolError(endpoint: endpoint, command: "GET_METADATA", message: "\(len) bytes announced") }
        var data = [UInt8](repeating: 0, count: Int(len))
        try data.withUnsafeMutableBytes { try receive(into: $0.baseAddress!, count: Int(len), .getMetadata) }
        return (st, data)
    }

    /// DETACH_SESSION (best effort).
    public func detach(sessionID: UInt64) {
        guard fd >= 0 else { return }
        do {
            try request(.detachSession, { $0.u64(sessionID) }, size: 8)
            _ = try receive(4, .detachSession)
        } catch {}
    }
}

/// A parsed `net://HOST[:PORT][/host/HOSTNAME[/SESSION]]` (babeltrace2's lttng-live URL).
public struct LiveURL: Equatable, Sendable, CustomStringConvertible {
    /// The relay daemon and its live port (5344 by default).
    public var host: String, port: Int
    /// The traced host and the session (nil: list, or every session).
    public var targetHost: String?, session: String?

    /// LTTng's default live port.
    public static let defaultPort = 5344

    /// Parses `s`.
    /// - Throws: ``LiveError/badURL(_:_:)``.
    public init(_ s: String) throws {
        var rest = Substring(s)
        var matched = false
        for p in ["net://", "net4://", "tcp://"] where rest.hasPrefix(p) { rest = rest.dropFirst(p.count); matched = true; break }
        guard matched else { throw LiveError.badURL(s, "it must start with net://") }
        let hostPort = rest.prefix { $0 != "/" }
        rest = rest.dropFirst(hostPort.count)
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw LiveError.badURL(s, "unclosed [ in the host") }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), p > 0, p < 65536 else { throw LiveError.badURL(s, "bad port") }
                port = p
            } else { port = LiveURL.defaultPort }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = String(hostPort[..<colon])
            guard let p = Int(hostPort[hostPort.index(after: colon)...]), p > 0, p < 65536 else { throw LiveError.badURL(s, "bad port") }
            port = p
        } else {
            host = String(hostPort)
            port = LiveURL.defaultPort
        }
        guard !host.isEmpty else { throw LiveError.badURL(s, "no host") }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch parts.count {
        case 0: break
        case 2 where parts[0] == "host": targetHost = parts[1]
        case 3 where parts[0] == "host": targetHost = parts[1]; session = parts[2]
        default: throw LiveError.badURL(s, "the path must be /host/HOSTNAME/SESSION")
        }
    }

    /// Creates one.
    public init(host: String, port: Int, targetHost: String? = nil, session: String? = nil) {
        self.host = host; self.port = port; self.targetHost = targetHost; self.session = session
    }

    /// The URL.
    public var description: String {
        var u = "net://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        if let t = targetHost { u += "/host/\(t)"; if let s = session { u += "/\(s)" } }
        return u
    }
}
