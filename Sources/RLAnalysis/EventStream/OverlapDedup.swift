import CTFReader

/// Reads traces that overlap — the snapshots of one flight-recorder session — without counting
/// twice what two of them share.
///
/// Two snapshots of a session hold copies of the same ring buffers: a stream file of one
/// (`runloop_0`, CPU 0's buffer) and the same-named file of the other, under the same trace UUID,
/// are one *logical stream*, and the packets the snapshots share are byte-identical copies (a
/// snapshot closes the packet being written, so a packet never grows between two snapshots). A
/// packet is identified by its logical stream and its `packet_seq_num` and `timestamp_begin`; the
/// first copy the merged reader meets claims it, and events of every other copy are skipped. Only
/// streams that have a namesake in another trace are checked, once per packet (one compare per
/// event otherwise).
///
/// When the packets claimed for a logical stream skip sequence numbers, the snapshots do not meet:
/// events between them are missing, and the reader reports a ``Verdict/gap``.
final class OverlapDedup {
    enum Verdict { case fresh, duplicate, gap }

    private struct PacketKey: Hashable { var logical: Int; var seq: Int64; var begin: Int64 }
    /// Per stream (by index): its logical stream (-1: not shared), the packet it is in, and the
    /// verdict for that packet's events.
    private var logical: [Int]
    private var packetOffset: [Int]
    private var verdict: [Verdict]
    private var claimed: [PacketKey: Int] = [:]
    /// Per logical stream: the sequence number of the last packet claimed (-1: none).
    private var lastSeq: [Int64]
    /// Whether any stream is shared at all.
    let active: Bool

    init(streams: [CTFStream]) {
        var groups: [String: [Int]] = [:]
        for (i, s) in streams.enumerated() {
            let file = s.path.split(separator: "/").last.map(String.init) ?? s.path
            groups["\(s.trace?.metadata.uuid ?? "")/\(file)", default: []].append(i)
        }
        logical = [Int](repeating: -1, count: streams.count)
        var n = 0
        for (_, members) in groups.sorted(by: { $0.key < $1.key }) where members.count > 1 {
            for i in members { logical[i] = n }
            n += 1
        }
        packetOffset = [Int](repeating: -1, count: streams.count)
        verdict = [Verdict](repeating: .fresh, count: streams.count)
        lastSeq = [Int64](repeating: -1, count: n)
        active = n > 0
    }

    /// Whether stream `index` has a namesake in another trace.
    func isShared(_ index: Int) -> Bool { logical[index] >= 0 }

    /// The verdict for the current event of shared stream `s` (index `index`): `gap` is given for
    /// the first event of a packet that follows a gap (the event itself is fresh).
    func check(_ s: CTFStream, index: Int) -> Verdict {
        let offset = s.currentPacketOffset
        if offset == packetOffset[index] { return verdict[index] == .duplicate ? .duplicate : .fresh }
        packetOffset[index] = offset
        var seq: Int64 = -1, begin: Int64 = -1
        for f in s.packetContext() {
            if f.name == "packet_seq_num" { seq = f.value.int64 ?? -1 }
            if f.name == "timestamp_begin" { begin = f.value.int64 ?? -1 }
        }
        let l = logical[index]
        let key = PacketKey(logical: l, seq: seq, begin: begin)
        if let owner = claimed[key], owner != index {
            verdict[index] = .duplicate
            return .duplicate
        }
        claimed[key] = index
        verdict[index] = .fresh
        defer { if seq >= 0 && seq > lastSeq[l] { lastSeq[l] = seq } }
        return seq >= 0 && lastSeq[l] >= 0 && seq > lastSeq[l] + 1 ? .gap : .fresh
    }
}
