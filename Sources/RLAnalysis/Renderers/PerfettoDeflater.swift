import Foundation
import CTFReader
import CISAL
import CPacketDeflate

/// How `rltrace export --format perfetto` writes its packets.
public enum PerfettoCompression: String, Sendable, CaseIterable {
    /// Each packet as it is (`Trace.packet`): what tools reading the protos without Perfetto's
    /// reader expect (`protoc --decode=perfetto.protos.Trace`).
    case none
    /// Runs of packets deflated into `TracePacket.compressed_packets`, as Perfetto's `traced`
    /// writes with `compression_type: COMPRESSION_TYPE_DEFLATE`; Perfetto's trace processor and
    /// ui.perfetto.dev inflate them (docs/benchmarks.md, "The Perfetto export").
    case deflate
}

/// The Perfetto export's ``ByteSinkEncoder`` for ``PerfettoCompression/deflate``: the `Trace.packet`
/// fields the export writes, in runs, each run deflated (zlib format) into one
/// `TracePacket { compressed_packets = 50 }` — a serialized `Trace` of those packets, as Perfetto's
/// reader inflates and reads them in place. trace_packet.proto bounds each such packet (its two
/// field ids and sizes included) below 512 KB.
///
/// A buffer of whole writes (``ByteSinkEncoder/encode(_:whole:emit:)``) — the export writes each
/// packet in one write, so a buffer of whole packets — goes to the deflate that knows the export's
/// packets (`rl_packet_deflate`, Sources/CPacketDeflate: each packet as matches against an earlier
/// one that begins like it), which cuts it in runs below the bound (a megabyte of the export's
/// packets deflates to about 270 KB, one run). Anything else — a buffer cut inside a packet, a
/// packet over 64 KB, a field that is no packet — is read packet by packet and deflated by ISA-L's
/// igzip at its level 0 in runs of at most ``groupLimit`` bytes, which fit the bound even stored.
/// The packets' order, sequences and interned state are unchanged: inflating every run and
/// concatenating gives the uncompressed export byte for byte (`PerfettoExportTests`,
/// `PerfettoDeflaterTests`). A packet larger than ``rawLimit`` (none the export writes) goes
/// through as it is. docs/benchmarks.md, "The Perfetto export: a deflate that knows the packets",
/// measures the two deflates on the export.
///
/// It runs where the sink writes: on the sink's writer thread once the output is large, so the
/// deflate of one megabyte overlaps the analysis filling the next — and whole buffers on the
/// threads that read the trace while they would wait (``makeWholeBufferEncoder()``,
/// ``ByteSink/spareWork``).
public final class PerfettoDeflater: ByteSinkEncoder {
    /// Uncompressed bytes a run holds at most when its packets are read one by one.
    static let groupLimit = 256 << 10
    /// A packet larger than this is written uncompressed (its run could pass Perfetto's 512 KB).
    static let rawLimit = 384 << 10
    /// trace_packet.proto's bound on a `compressed_packets` packet, headers included (less than).
    static let packetBound = 512 << 10
    /// Room before the deflated bytes for the run's `Trace.packet` and `compressed_packets` headers.
    static let headerRoom = 16

    private let out: UnsafeMutablePointer<UInt8>
    private let outCapacity: Int
    /// The start of a packet that did not fit in the last buffer (a write larger than a buffer).
    private var pending: [UInt8] = []
    /// Runs written (for tests and benchmarks), by this deflater and those it made for other
    /// threads (``makeWholeBufferEncoder()``), as are the figures below.
    public var runs: Int { stats.read().runs }
    /// Runs written from whole buffers, each one run.
    public var wholeRuns: Int { stats.read().wholeRuns }
    /// Bytes deflated.
    public var bytesIn: Int { stats.read().bytesIn }
    /// Bytes written for them, headers included.
    public var bytesOut: Int { stats.read().bytesOut }
    private let stats: Stats

    /// The figures, shared with the deflaters made for other threads (a lock: counted once per run).
    private final class Stats: @unchecked Sendable {
        struct Figures { var runs = 0, wholeRuns = 0, bytesIn = 0, bytesOut = 0 }
        private let lock = NSLock()
        private var figures = Figures()
        func read() -> Figures { lock.lock(); defer { lock.unlock() }; return figures }
        func add(run bytesIn: Int, out bytesOut: Int, whole: Bool) {
            lock.lock()
            figures.runs &+= 1; figures.wholeRuns &+= whole ? 1 : 0
            figures.bytesIn &+= bytesIn; figures.bytesOut &+= bytesOut
            lock.unlock()
        }
    }

    /// A deflater (docs/benchmarks.md measures igzip's level 0 against its level 1 and libdeflate's
    /// and zlib's fastest levels on the export, and the deflate that knows the packets against it).
    public convenience init() { self.init(counting: Stats()) }

    private init(counting stats: Stats) {
        self.stats = stats
        // Room for a run that does not compress at all (stored blocks: 5 bytes per 64 KiB, the
        // zlib header and checksum), with a wide margin.
        outCapacity = Self.headerRoom + 2 * Self.rawLimit + 4096
        out = .allocate(capacity: outCapacity)
    }

    deinit {
        out.deallocate()
    }

    /// A buffer of whole writes (whole packets): runs of the deflate that knows the packets, each
    /// below ``packetBound``; what it does not take, and anything else, ``encode(_:emit:)``.
    public func encode(_ bytes: UnsafeBufferPointer<UInt8>, whole: Bool, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        guard whole, pending.isEmpty, let base = bytes.baseAddress, bytes.count > 0 else { return encode(bytes, emit: emit) }
        // Runs of whole packets by the deflate that knows them, each below the bound; what it does
        // not take (a packet that is not one, or larger than 64 KB: none the export writes), as
        // any other bytes.
        var at = 0
        while at < bytes.count {
            var used = 0
            let z = rl_packet_deflate(base + at, bytes.count &- at, out + Self.headerRoom, outCapacity &- Self.headerRoom,
                                      Self.packetBound &- Self.headerRoom, &used)
            guard z > 0, used > 0 else { break }
            emitRun(z, from: used, whole: true, emit: emit)
            at &+= used
        }
        if at < bytes.count { encode(UnsafeBufferPointer(rebasing: bytes[at...]), emit: emit) }
    }

    public func encode(_ bytes: UnsafeBufferPointer<UInt8>, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        if pending.isEmpty {
            let used = deflatePackets(bytes, emit: emit)
            if used < bytes.count { pending.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[used...])) }
            return
        }
        pending.append(contentsOf: bytes)
        let held = pending
        pending.removeAll(keepingCapacity: true)
        held.withUnsafeBufferPointer { all in
            let used = deflatePackets(all, emit: emit)
            if used < all.count { pending.append(contentsOf: UnsafeBufferPointer(rebasing: all[used...])) }
        }
    }

    /// A deflater for another thread: a buffer of whole packets is deflated the same by any
    /// deflater whose `pending` is empty, and this one's is empty at every boundary between packets
    /// (it keeps only an incomplete packet). Its runs count in this one's figures.
    public func makeWholeBufferEncoder() -> ByteSinkEncoder? { PerfettoDeflater(counting: stats) }

    public func finish(_ emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        // An incomplete packet at the very end (the sink never writes one): as it is.
        if !pending.isEmpty { pending.withUnsafeBufferPointer { emit($0) }; pending.removeAll() }
    }

    /// Deflates the complete packets at the start of `b` in runs; returns the bytes consumed
    /// (the rest: the start of a packet that continues in the next buffer).
    private func deflatePackets(_ b: UnsafeBufferPointer<UInt8>, emit: (UnsafeBufferPointer<UInt8>) -> Void) -> Int {
        guard let base = b.baseAddress else { return 0 }
        var runStart = 0, at = 0
        while at < b.count {
            guard base[at] == 0x0A else {
                // Not a `Trace.packet` field (the export writes nothing else): the rest as it is.
                flushRun(base, runStart, at, emit: emit)
                emit(UnsafeBufferPointer(rebasing: b[at...]))
                return b.count
            }
            // The packet's length (a varint after the tag); incomplete: keep it for the next buffer.
            var len = 0, shift = 0, p = at &+ 1
            while true {
                guard p < b.count, shift < 64 else { flushRun(base, runStart, at, emit: emit); return at }
                let byte = base[p]
                len |= Int(byte & 0x7F) << shift
                p &+= 1
                if byte < 0x80 { break }
                shift &+= 7
            }
            let end = p &+ len
            guard len >= 0, end <= b.count, end > at else { flushRun(base, runStart, at, emit: emit); return at }
            if end &- at > Self.rawLimit {
                flushRun(base, runStart, at, emit: emit)
                emit(UnsafeBufferPointer(rebasing: b[at..<end]))
                runStart = end
            } else if end &- runStart > Self.groupLimit {
                flushRun(base, runStart, at, emit: emit)
                runStart = at
            }
            at = end
        }
        flushRun(base, runStart, at, emit: emit)
        return at
    }

    /// Deflates `base[from..<to]` (whole packets, at most ``groupLimit`` bytes but for one packet
    /// of at most ``rawLimit``) into one `compressed_packets` packet, by igzip.
    private func flushRun(_ base: UnsafePointer<UInt8>, _ from: Int, _ to: Int, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        guard to > from else { return }
        let z = Int(rl_isal_zlib_compress(base + from, UInt32(to &- from), out + Self.headerRoom, UInt32(outCapacity &- Self.headerRoom)))
        precondition(z > 0, "igzip: a run of \(to &- from) bytes did not deflate into \(outCapacity) bytes")
        emitRun(z, from: to &- from, whole: false, emit: emit)
    }

    /// Emits the `z` deflated bytes at `out + headerRoom` (a run of `bytesIn` bytes of packets)
    /// as one `compressed_packets` packet: the headers written right before them.
    private func emitRun(_ z: Int, from bytesIn: Int, whole: Bool, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        // Trace.packet (1), its length, compressed_packets (50), its length.
        var header: [UInt8] = [0x0A]
        header.reserveCapacity(Self.headerRoom)
        ProtobufWriter.appendVarint(UInt64(2 &+ ProtobufWriter.varintSize(UInt64(z)) &+ z), to: &header)
        header += [0x92, 0x03]
        ProtobufWriter.appendVarint(UInt64(z), to: &header)
        let start = out + Self.headerRoom - header.count
        header.withUnsafeBufferPointer { start.update(from: $0.baseAddress!, count: header.count) }
        emit(UnsafeBufferPointer(start: start, count: header.count &+ z))
        stats.add(run: bytesIn, out: header.count &+ z, whole: whole)
    }
}
