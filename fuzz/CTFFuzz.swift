// libFuzzer target over CTFReader's metadata parser and stream decoder (issue 7).
// Built only by scripts/fuzz.sh (swiftc -sanitize=fuzzer,address against the CTFReader objects);
// it is not a package target, so the normal `swift build` never sees it.
//
// Input: METADATA [ "\n@@CTF-STREAM@@\n" STREAM ] — the metadata file (TSDL text or packetized) and,
// after the marker, one data stream file. Without a marker the stream is empty (parser only).
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
