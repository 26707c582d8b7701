import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Packet index and seeking by time.

extension CTFStream {
    // MARK: seeking

    /// One packet of the stream: byte offset, time range in clock cycles and the loss counters before it.
    struct PacketEntry {
        var offset: Int
        var tsBegin: UInt64
        var tsEnd: UInt64
        var discarded: UInt64?
        var seq: UInt64?
    }

    /// Reads LTTng's packet index for this stream, if present and consistent with the file.
    func readIndexFile() -> [PacketEntry]? {
        let dir = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let idx = dir + "/index/" + name + ".idx"
        // (Not a regular file, e.g. a FIFO: no index; packet headers are scanned instead.)
        guard let b = try? RegularFile.read(idx), b.count >= 16 else { return nil }
        func be64(_ o: Int) -> UInt64 { var v: UInt64 = 0; for i in 0..<8 { v = v << 8 | UInt64(b[o + i]) }; return v }
        func be32(_ o: Int) -> UInt32 { var v: UInt32 = 0; for i in 0..<4 { v = v << 8 | UInt32(b[o + i]) }; return v }
        guard be32(0) == 0xC1F1_DCC1 else { return nil }
        let entryLen = Int(be32(12))
        guard entryLen >= 56, entryLen <= 4096 else { return nil }
        var out: [PacketEntry] = []
        var o = 16
        var prevDiscarded: UInt64? = nil, prevSeq: UInt64? = nil
        while o + entryLen <= b.count {
            let off = be64(o)
            guard off < UInt64(fileSize), out.last.map({ UInt64($0.offset) < off }) ?? true else { return nil }
            out.append(PacketEntry(offset: Int(off), tsBegin: be64(o + 24), tsEnd: be64(o + 32), discarded: prevDiscarded, seq: prevSeq))
            prevDiscarded = be64(o + 40)
            prevSeq = entryLen >= 72 ? be64(o + 64) : nil
            o += entryLen
        }
        return out.isEmpty ? nil : out
    }

    /// Builds the packet list by reading every packet's header and context (when there is no index file).
    func scanPackets() throws -> [PacketEntry] {
        let savedLosses = losses, savedWarnings = warnings
        let savedPackets = packets
        let savedHot = hot.pointee
        defer {
            losses = savedLosses; warnings = savedWarnings
            packets = savedPackets
            hot.pointee = savedHot
        }
        var out: [PacketEntry] = []
        var off = 0
        var prevDiscarded: UInt64? = nil, prevSeq: UInt64? = nil
        while try loadPacket(at: off) {
            let b = cls.tsBeginSlot >= 0 ? slots[cls.tsBeginSlot] : 0
            let e = cls.tsEndSlot >= 0 ? slots[cls.tsEndSlot] : UInt64.max
            out.append(PacketEntry(offset: off, tsBegin: b, tsEnd: e, discarded: prevDiscarded, seq: prevSeq))
            prevDiscarded = cls.discardedSlot >= 0 ? slots[cls.discardedSlot] : nil
            prevSeq = cls.seqNumSlot >= 0 ? slots[cls.seqNumSlot] : nil
            guard nextPacketOffset > off else { break }
            off = nextPacketOffset
        }
        return out
    }

    /// Positions the stream on its first event at or after `nanoseconds` (since the epoch), using LTTng's
    /// `index/*.idx` file when present (else a scan of the packet headers) to skip whole packets.
    /// The next call to ``next()`` returns that event.
    /// - Returns: false when no event of the stream is at or after that time.
    @discardableResult
    public func seek(toNanoseconds target: Int64) throws -> Bool {
        if packetIndex == nil {
            if let idx = readIndexFile() { packetIndex = idx; seekUsedIndexFile = true }
            else { packetIndex = try scanPackets(); seekUsedIndexFile = false }
        }
        let entries = packetIndex!
        // The first packet that may hold an event at or after the target.
        var start = entries.count
        // An end time that does not convert (corrupt index or packet) is treated as unknown: the packet is kept.
        for (i, e) in entries.enumerated() where e.tsEnd &- minCycles > cycleSpan || nanoseconds(e.tsEnd) >= target {
            start = i
            break
        }
        hot.pointee = HotState()
        hot.pointee.started = true
        if start >= entries.count {
            hot.pointee.finished = true
            return false
        }
        let e = entries[start]
        nextPacketOffset = e.offset
        // Index values at or above 2^63 are corrupt, as in the packet contexts (see `loadPacket`).
        packets.lastDiscarded = e.discarded.flatMap { $0 < 1 << 63 ? $0 : nil }
        packets.lastSeq = e.seq.flatMap { $0 < 1 << 63 ? $0 : nil }
        let prevEnd = start > 0 ? entries[start - 1].tsEnd : 0
        packets.lastPacketEndNS = start > 0 && prevEnd &- minCycles <= cycleSpan ? nanoseconds(prevEnd) : nil
        // The packet's timestamp_begin sets the clock when it is loaded.
        while try next() {
            if timestamp >= target {
                hot.pointee.pending = true
                return true
            }
        }
        return false
    }
}
