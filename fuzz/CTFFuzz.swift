// libFuzzer target over CTFReader's metadata parser and stream decoder (docs/reliability.md).
// Built only by scripts/fuzz.sh (swiftc -sanitize=fuzzer,address against the CTFReader objects);
// it is not a package target, so the normal `swift build` never sees it.
//
// Input: METADATA [ "\n@@CTF-STREAM@@\n" STREAM ] — the metadata file (TSDL text or packetized) and,
// after the marker, one data stream file. Without a marker the stream is empty (parser only).
//
// Structure-aware mutation (docs/divergences.md): LLVMFuzzerCustomMutator finds the packets of the stream part (the
// CTF packet magic 0xC1FC1FC1) and, most of the time, overwrites one 1/2/4/8-byte word of a packet header or
// context (the first 128 bytes of a packet) with an extreme value (0, all ones, only the top bit, top bit - 1,
// ±1, a bit flip, a power of two); otherwise it defers to libFuzzer's byte-level mutations.
import CTFReader
import Foundation
#if canImport(Glibc)
import Glibc
#endif

private let marker: [UInt8] = Array("\n@@CTF-STREAM@@\n".utf8)
private let dir: String = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    let d = "\(base)/ctf-fuzz-\(getpid())"
    try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    atexit { try? FileManager.default.removeItem(atPath: "/dev/shm/ctf-fuzz-\(getpid())") }
    return d
}()

private func split(_ b: UnsafeBufferPointer<UInt8>) -> (ArraySlice<UInt8>, ArraySlice<UInt8>) {
    let a = Array(b)
    if a.count >= marker.count {
        var i = 0
        while i + marker.count <= a.count {
            if a[i] == marker[0] && a[i..<(i + marker.count)].elementsEqual(marker) {
                return (a[..<i], a[(i + marker.count)...])
            }
            i += 1
        }
    }
    return (a[...], [])
}

private func writeFile(_ path: String, _ bytes: ArraySlice<UInt8>) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return }
    bytes.withUnsafeBytes { p in var off = 0; while off < p.count { let n = write(fd, p.baseAddress! + off, p.count - off); if n <= 0 { break }; off += n } }
    close(fd)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func ctfFuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let (meta, stream) = split(UnsafeBufferPointer(start: data, count: size))
    writeFile(dir + "/metadata", meta)
    writeFile(dir + "/stream_0", stream)
    do {
        let trace = try CTFTrace(directory: dir)
        for s in trace.streams {
            var n = 0
            while n < 100_000, try s.next() {
                _ = s.payload(); _ = s.eventContext(); _ = s.packetContext()
                n += 1
            }
        }
    } catch {
        _ = "\(error)"   // every error must describe itself without trapping
    }
    return 0
}

@_silgen_name("LLVMFuzzerMutate")
private func LLVMFuzzerMutate(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int) -> Int

@_cdecl("LLVMFuzzerCustomMutator")
public func ctfFuzzMutate(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int, _ seed: CUnsignedInt) -> Int {
    var rng = UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 | 1
    func next() -> UInt64 { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng }
    let buf = UnsafeMutableBufferPointer(start: data, count: size)
    // The stream part starts after the marker.
    var streamStart = -1
    if size >= marker.count {
        var i = 0
        while i + marker.count <= size {
            if buf[i] == marker[0] && buf[i..<(i + marker.count)].elementsEqual(marker) { streamStart = i + marker.count; break }
            i += 1
        }
    }
    if streamStart < 0 || next() % 4 == 0 { return LLVMFuzzerMutate(data, size, maxSize) }
    // Packet starts: the magic in either byte order, 4-byte aligned from the stream start.
    var packets: [Int] = []
    var o = streamStart
    while o + 4 <= size {
        let w = (UInt32(buf[o]) | UInt32(buf[o + 1]) << 8 | UInt32(buf[o + 2]) << 16 | UInt32(buf[o + 3]) << 24)
        if w == 0xC1FC_1FC1 || w == 0xC11F_FCC1 { packets.append(o) }
        o += 4
    }
    let base = packets.isEmpty ? streamStart : packets[Int(next() % UInt64(packets.count))]
    let widths = [8, 8, 8, 4, 4, 2, 1]
    let width = widths[Int(next() % UInt64(widths.count))]
    let span = min(128, size - base) - width
    guard span >= 0 else { return LLVMFuzzerMutate(data, size, maxSize) }
    let at = base + Int(next() % UInt64(span / width + 1)) * width
    var old: UInt64 = 0
    for k in 0..<width { old |= UInt64(buf[at + k]) << (8 * UInt64(k)) }
    let bits = UInt64(width * 8)
    let all: UInt64 = bits == 64 ? .max : (1 << bits) - 1
    let top: UInt64 = 1 << (bits - 1)
    let choices: [UInt64] = [0, all, top, top - 1, old &+ 1, old &- 1, old ^ (1 << (next() % bits)),
                             1 << (next() % bits), all - 7, old &* 8, old / 8]
    let v = choices[Int(next() % UInt64(choices.count))] & all
    let bigEndian = next() % 4 == 0
    for k in 0..<width {
        let shift = 8 * UInt64(bigEndian ? width - 1 - k : k)
        buf[at + k] = UInt8(truncatingIfNeeded: v >> shift)
    }
    return size
}
