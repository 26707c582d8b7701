import Foundation

// The packet reader (babeltrace2's msg-iter at packet boundaries): reads a packet's header and
// context, works out where its content and the packet end, checks its timestamps and counts the
// losses its counters reveal. The events inside are EventDecoder.swift's.

/// A loss the tracer reported or that the packet sequence reveals.
public struct CTFLoss: Sendable, CustomStringConvertible {
    /// What was lost.
    public enum Kind: Sendable, Equatable {
        /// The tracer discarded this many events (ring buffer full), from the packet context counter.
        case discardedEvents(UInt64)
        /// This many packets are missing (a gap in the packet sequence numbers).
        case lostPackets(UInt64)
    }
    /// What was lost.
    public var kind: Kind
    /// The data stream file concerned.
    public var streamPath: String
    /// Start of the time range in which the loss happened (ns since the epoch).
    public var beginNanoseconds: Int64
    /// End of that time range (ns since the epoch).
    public var endNanoseconds: Int64

    /// A human-readable description.
    public var description: String {
        switch kind {
        case .discardedEvents(let n):
            return "\(streamPath): tracer discarded \(n) event(s) between \(beginNanoseconds) and \(endNanoseconds) ns"
        case .lostPackets(let n):
            return "\(streamPath): \(n) packet(s) lost between \(beginNanoseconds) and \(endNanoseconds) ns"
        }
    }
}

/// The packet-level state of a stream: the loss counters of the packets read so far.
struct PacketReader {
    /// The highest `events_discarded` counter seen (cumulative per ring buffer).
    var lastDiscarded: UInt64?
    /// The last `packet_seq_num` seen.
    var lastSeq: UInt64?
    /// The end (ns) of the last packet read, where a loss found at the next packet begins.
    var lastPacketEndNS: Int64?
    var lastPacketBeginNS: Int64 = 0

    /// Reads the packet of stream `s` at byte `offset`, leaving the stream's position at its first
    /// event and `end` at the end of its content; false at the end of the file (or of what a
    /// truncated header lets be read, with a warning). Releases the pages before `offset`.
    /// - Throws: ``CTFReaderError/malformed(path:offset:field:message:)`` for a bad magic, a packet of
    ///   another stream class, and sizes that cannot be.
    mutating func load(at offset: Int, in s: CTFStream) throws -> Bool {
        let medium = s.medium
        medium.releaseConsumed(upTo: offset)
        let fileSize = medium.fileSize
        guard offset < fileSize else { return false }
        let h = s.dec.hot
        let cls = s.linked.cls
        let slots = s.dec.slots
        let path = s.path
        h.pointee.packetOffset = offset
        h.pointee.pos = offset * 8
        h.pointee.end = fileSize * 8
        h.pointee.packetTruncated = false
        do {
            try s.run(cls.packetHeaderProgram)
            if cls.magicSlot >= 0 && slots[cls.magicSlot] != 0xC1FC_1FC1 {
                throw s.fail(offset * 8, Int32(cls.names.firstIndex(of: "trace.packet.header.magic") ?? 0),
                             "bad packet magic 0x\(String(slots[cls.magicSlot], radix: 16)) (expected 0xc1fc1fc1)")
            }
            if cls.streamIDSlot >= 0 && slots[cls.streamIDSlot] != s.streamClassID {
                throw CTFReaderError.malformed(path: path, offset: offset, field: "trace.packet.header.stream_id",
                                               message: "packet of stream class \(slots[cls.streamIDSlot]) in a stream of class \(s.streamClassID)")
            }
            try s.run(cls.packetContextProgram)
        } catch let oob as CTFStream.OutOfBounds {
            s.warn(offset, "truncated packet header/context (\(oob.message)); stream ends here")
            return false
        }
        let headerBits = h.pointee.pos - offset * 8
        // Sizes: either one stands for the other when only one is declared (as babeltrace2 reads them: a packet
        // with a content size and no packet size ends at the byte where its content does, and the next packet
        // follows — the rest of the file is not padding); with neither, the rest of the file is one packet.
        // (A content size below the header's own bits is refused below, so every packet moves forward.)
        var packetBits = (fileSize - offset) * 8
        if cls.packetSizeSlot >= 0 { packetBits = Int(clamping: slots[cls.packetSizeSlot]) }
        else if cls.contentSizeSlot >= 0 {
            let c = slots[cls.contentSizeSlot]
            packetBits = c > UInt64(Int.max - 7) ? Int.max : Int((c + 7) / 8 * 8)
        }
        var contentBits = packetBits
        if cls.contentSizeSlot >= 0 { contentBits = Int(clamping: slots[cls.contentSizeSlot]) }
        if cls.packetSizeSlot >= 0 {
            guard packetBits > 0, packetBits % 8 == 0, packetBits >= headerBits else {
                throw CTFReaderError.malformed(path: path, offset: offset, field: "stream.packet.context.packet_size",
                                               message: "packet size \(slots[cls.packetSizeSlot]) bits is impossible (a positive multiple of 8 of at least the \(headerBits) bits of header and context)")
            }
        }
        guard contentBits <= packetBits, contentBits >= headerBits else {
            throw CTFReaderError.malformed(path: path, offset: offset, field: "stream.packet.context.content_size",
                                           message: "content size \(cls.contentSizeSlot >= 0 ? slots[cls.contentSizeSlot] : UInt64(contentBits)) bits is outside [\(headerBits), packet size \(packetBits)] bits")
        }
        let available = (fileSize - offset) * 8
        if packetBits > available {
            h.pointee.packetTruncated = true
            s.warn(offset, "packet claims \(packetBits / 8) bytes but the file ends after \(available / 8); decoding the events that fit")
            h.pointee.nextPacketOffset = fileSize
            h.pointee.end = offset * 8 + min(contentBits, available)
        } else {
            h.pointee.nextPacketOffset = offset + packetBits / 8
            h.pointee.end = offset * 8 + contentBits
        }
        // Packet timestamps: a value converting outside ±2^62 ns is corrupt; the packet is skipped with a warning
        // (its events' timestamps derive from it).
        let l = s.linked
        for (slot, name) in [(cls.tsBeginSlot, "timestamp_begin"), (cls.tsEndSlot, "timestamp_end")] where slot >= 0 {
            let v = slots[slot]
            if v &- l.minCycles > l.cycleSpan {
                s.warn(offset, "field `stream.packet.context.\(name)`: clock value \(v) cycles converts outside ±2^62 ns of the epoch (corrupt); packet of \(packetBits / 8) bytes skipped")
                h.pointee.end = h.pointee.pos   // no events: next() moves on to the next packet
                return true
            }
        }
        // Loss accounting. Counters at or above 2^63 are corrupt (no tracer gets there): warned about and not counted,
        // so every reported count, and their sum per stream, fits an Int64.
        let beginNS = cls.tsBeginSlot >= 0 ? l.nanoseconds(slots[cls.tsBeginSlot]) : (lastPacketEndNS ?? 0)
        let endNS = cls.tsEndSlot >= 0 ? l.nanoseconds(slots[cls.tsEndSlot]) : beginNS
        let corrupt: UInt64 = 1 << 63
        if cls.discardedSlot >= 0 {
            // The counter is cumulative per ring buffer; LTTng may write packets whose snapshot is older than a
            // previous one, so only growth beyond the highest value seen counts (never a negative loss).
            let d = slots[cls.discardedSlot]
            let prev = lastDiscarded ?? 0
            if d >= corrupt {
                s.warn(offset, "field `stream.packet.context.events_discarded`: counter value \(d) is implausible (≥ 2^63, corrupt); not counted")
            } else if d > prev {
                s.losses.append(CTFLoss(kind: .discardedEvents(d - prev), streamPath: path,
                                        beginNanoseconds: lastPacketEndNS ?? beginNS, endNanoseconds: endNS))
                lastDiscarded = d
            }
        }
        if cls.seqNumSlot >= 0 {
            let sq = slots[cls.seqNumSlot]
            if sq >= corrupt {
                s.warn(offset, "field `stream.packet.context.packet_seq_num`: sequence number \(sq) is implausible (≥ 2^63, corrupt); ignored")
            } else {
                if let prev = lastSeq, sq > prev, sq - prev > 1 {
                    s.losses.append(CTFLoss(kind: .lostPackets(sq - prev - 1), streamPath: path,
                                            beginNanoseconds: lastPacketEndNS ?? beginNS, endNanoseconds: beginNS))
                }
                lastSeq = sq
            }
        }
        lastPacketBeginNS = beginNS
        lastPacketEndNS = endNS
        return true
    }
}
