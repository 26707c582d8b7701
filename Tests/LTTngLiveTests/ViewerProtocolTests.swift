import Foundation
@testable import LTTngLive
import Testing
#if canImport(Glibc)
import Glibc
#endif

// LTTngLive's client of lttng-relayd's live (viewer) protocol: the wire structs against the byte
// layouts of lttng-viewer-abi.h, the live URLs. `rltrace top` over real daemons is tested in
// rltraceTests' TopTests.

@Suite("rltrace top: the live protocol's structs")
struct Wire {
    func bytes(_ f: (inout WireWriter) -> Void) -> [UInt8] { var w = WireWriter(); f(&w); return w.bytes }

    @Test("a connection reset or a broken pipe reads as the relay daemon closing the connection, as an end of file does")
    func resetReadsAsClosed() {
        // A relay daemon killed under a viewer resets the connection or closes it, depending on what was unread
        // (a CI run read "GET_NEXT_INDEX: receive failed: Connection reset by peer").
        #expect(ViewerConnection.failure("receive", ECONNRESET) == "the relay daemon closed the connection (Connection reset by peer)")
        #expect(ViewerConnection.failure("send", EPIPE) == "the relay daemon closed the connection (Broken pipe)")
        #expect(ViewerConnection.failure("receive", EBADF) == "receive failed: Bad file descriptor")
    }

    @Test("command header and CONNECT: struct lttng_viewer_cmd, struct lttng_viewer_connect")
    func connect() {
        // lttng_viewer_cmd { u64 data_size; u32 cmd; u32 cmd_version; } packed, big-endian.
        #expect(bytes { ViewerCommandHeader(dataSize: 20, command: .connect).encode(into: &$0) }
                == [0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0])
        // lttng_viewer_connect { u64 viewer_session_id; u32 major; u32 minor; u32 type; }
        let c = bytes { ViewerConnect().encode(into: &$0) }
        #expect(c.count == ViewerABI.connectSize)
        #expect(c == [255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 1])
        let reply: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 2, 0, 0, 0, 13, 0, 0, 0, 0]
        let d = reply.withUnsafeBytes { b -> ViewerConnect in var r = WireReader(b); return ViewerConnect.decode(&r) }
        #expect(d == ViewerConnect(viewerSessionID: 7, major: 2, minor: 13, type: 0))
        // The command numbers of enum lttng_viewer_command.
        #expect([ViewerCommand.connect, .listSessions, .attachSession, .getNextIndex, .getPacket, .getMetadata, .getNewStreams,
                 .createSession, .detachSession].map(\.rawValue) == Array(1...9))
    }

    @Test("LIST_SESSIONS entry: struct lttng_viewer_session (2.4), 339 bytes, fixed-size names")
    func session() {
        let s = ViewerSession(id: 0x0102_0304_0506_0708, liveTimer: 100_000, clients: 1, streams: 3, hostname: "host-a", name: "sess")
        let b = bytes { s.encode(into: &$0) }
        #expect(b.count == 8 + 4 + 4 + 4 + 64 + 255)
        #expect(Array(b[0..<8]) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Array(b[8..<12]) == [0, 1, 0x86, 0xA0])            // live_timer 100000 µs
        #expect(Array(b[12..<16]) == [0, 0, 0, 1] && Array(b[16..<20]) == [0, 0, 0, 3])
        #expect(Array(b[20..<26]) == Array("host-a".utf8) && b[26] == 0)   // hostname[64] at 20
        #expect(Array(b[84..<88]) == Array("sess".utf8) && b[88] == 0)     // session_name[255] at 84
        let d = b.withUnsafeBytes { x -> ViewerSession in var r = WireReader(x); return ViewerSession.decode(&r) }
        #expect(d == s)
    }

    @Test("streams, attach, index, packet: struct lttng_viewer_stream / _attach_session_request / _index / _get_packet")
    func streamsAndIndex() {
        let st = ViewerStream(id: 5, ctfTraceID: 2, isMetadata: true, path: "ust/uid/0/64-bit", channel: "metadata")
        let b = bytes { st.encode(into: &$0) }
        #expect(b.count == 8 + 8 + 4 + 4096 + 255)
        #expect(Array(b[16..<20]) == [0, 0, 0, 1])                         // metadata_flag
        #expect(Array(b[20..<36]) == Array("ust/uid/0/64-bit".utf8))       // path_name[4096] at 20
        #expect(Array(b[4116..<4124]) == Array("metadata".utf8))           // channel_name[255] at 4116
        #expect(b.withUnsafeBytes { x -> ViewerStream in var r = WireReader(x); return ViewerStream.decode(&r) } == st)

        #expect(bytes { AttachRequest(sessionID: 9, seek: ViewerABI.seekBeginning).encode(into: &$0) }
                == [0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])

        // lttng_viewer_index: seven u64 (offset, packet_size, content_size, timestamp_begin,
        // timestamp_end, events_discarded, stream_id), then u32 status and u32 flags: 64 bytes.
        var raw = [UInt8](repeating: 0, count: 64)
        for f in 0..<7 { raw[f * 8 + 7] = UInt8(f + 1) }
        raw[59] = 5                      // status INACTIVE
        raw[63] = 3                      // flags NEW_METADATA | NEW_STREAM
        let idx = raw.withUnsafeBytes { x -> ViewerIndex in var r = WireReader(x); return ViewerIndex.decode(&r) }
        #expect(ViewerABI.indexSize == 64)
        #expect(idx == ViewerIndex(offset: 1, packetSize: 2, contentSize: 3, timestampBegin: 4, timestampEnd: 5, eventsDiscarded: 6,
                                   streamID: 7, status: IndexStatus.inactive.rawValue, flags: ViewerABI.flagNewMetadata | ViewerABI.flagNewStream))
        #expect(bytes { idx.encode(into: &$0) } == raw)
        #expect([IndexStatus.ok, .retry, .hup, .error, .inactive, .eof].map(\.rawValue) == Array(1...6))

        #expect(bytes { GetPacketRequest(streamID: 1, offset: 0x1000, length: 4096).encode(into: &$0) }
                == [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x10, 0])
    }

    @Test("live URLs: babeltrace2's net://HOST[:PORT][/host/HOSTNAME[/SESSION]]")
    func urls() throws {
        #expect(try LiveURL("net://localhost") == LiveURL(host: "localhost", port: 5344))
        #expect(try LiveURL("net://127.0.0.1:1234/host/h1/s1") == LiveURL(host: "127.0.0.1", port: 1234, targetHost: "h1", session: "s1"))
        #expect(try LiveURL("net4://[::1]:99/host/h") == LiveURL(host: "::1", port: 99, targetHost: "h"))
        #expect(throws: LiveError.self) { try LiveURL("http://x") }
        #expect(throws: LiveError.self) { try LiveURL("net://x/sessions/s") }
        #expect(throws: LiveError.self) { try LiveURL("net://x:0") }
    }
}
