import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The bytes a data stream is decoded from (babeltrace2's data-stream-file): a mapped file, a small
// file read into memory of its own, or a live stream's buffer. The medium owns the mapping and
// gives back the pages of packets already decoded; the decoder (``CTFStream``, EventDecoder.swift,
// PacketReader.swift) only reads `base` below `fileSize`.

/// How far a stream decoded on one thread has consumed its file, for the thread that releases the
/// consumed pages (``StreamMedium/releaseHandedOff()``).
final class ReleaseHandoff: Sendable {
    let upTo = Atomic<Int>(0)
    /// Cleared by the releasing thread when it stops releasing (its own stream ended): the
    /// decoding thread releases its pages itself again from there.
    let active = Atomic<Bool>(true)
}

/// The memory one data stream is read from, and the release of its consumed pages.
final class StreamMedium: @unchecked Sendable {
    /// Where the bytes are.
    enum Storage: Equatable {
        /// The file is mapped (read-only, private): `length` bytes from `base`, released page by
        /// page once consumed.
        case mapped(length: Int)
        /// Memory of the medium's own: a file of one page at most, read whole (zero-filled to whole
        /// 8-byte words), or an 8-byte placeholder for an empty file.
        case owned
        /// A live stream's buffer, owned by its ``CTFLiveStream`` (LiveStream.swift), which writes each
        /// packet into it and sets ``StreamMedium/fileSize``.
        case live
    }

    /// Where the bytes are.
    let storage: Storage
    /// The first byte.
    let base: UnsafeRawPointer
    /// Bytes of data: the file's size, or what a live stream was fed.
    var fileSize: Int
    /// An 8-byte load at any byte offset `o` with `o + 8 <= wideLoadLimit` stays inside the memory:
    /// the file's size rounded up to whole pages for a mapping (a mapping covers the last page whole;
    /// its bytes past the end of the file read as zero), whole 8-byte words for memory of its own,
    /// 0 where no such load is allowed (a live stream's memory, an empty file).
    let wideLoadLimit: Int
    /// The stream file's path (for messages).
    let path: String
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    /// The pages below this offset were released.
    var releasedUpTo = 0
    /// Set while another thread releases this stream's consumed pages: ``releaseConsumed(upTo:)``
    /// only publishes how far (set and cleared while that thread is not running).
    var releaseHandoff: ReleaseHandoff?
    /// Releases ``releaseHandedOff()`` made (read by tests once the releasing thread has stopped).
    var releasesByOtherThread = 0

    /// Opens the data stream file at `path`: mapped when it is larger than a page, else read whole.
    /// - Throws: ``CTFReaderError/io(path:message:)`` naming the file and what failed.
    init(file path: String) throws {
        self.path = path
        let fd = try RegularFile.open(path)
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw CTFReaderError.io(path: path, message: String(cString: strerror(errno))) }
        fileSize = Int(st.st_size)
        let page = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
        if fileSize > 0 && fileSize <= page {
            // A file of one page at most is read into memory of its own: a mapping each would use one of the
            // process's vm.max_map_count (65 530) entries per stream, and a trace of 65 536 small streams (ctf-
            // testsuite's stress/many-streams) failed. Zero-filled to whole 8-byte words (`wideLoadLimit`).
            let size = (fileSize + 7) / 8 * 8
            let b = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
            b.initializeMemory(as: UInt8.self, repeating: 0, count: size)
            var got = 0
            while got < fileSize {
                let n = pread(fd, b + got, fileSize - got, off_t(got))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    b.deallocate()
                    throw CTFReaderError.io(path: path, message: n < 0 ? "read failed: \(String(cString: strerror(errno)))" : "the file shrank to \(got) bytes while read")
                }
                got += n
            }
            base = UnsafeRawPointer(b)
            storage = .owned
            wideLoadLimit = size
        } else if fileSize > 0 {
            guard let m = mmap(nil, fileSize, PROT_READ, MAP_PRIVATE, fd, 0), m != MAP_FAILED else {
                let e = errno
                let limit = (try? String(contentsOfFile: "/proc/sys/vm/max_map_count", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
                throw CTFReaderError.io(path: path, message: "mmap failed: \(String(cString: strerror(e)))" +
                    (e == ENOMEM ? " (every stream file of more than a page is mapped: more such streams than vm.max_map_count = \(limit ?? "?") allows?)" : ""))
            }
            _ = madvise(m, fileSize, MADV_SEQUENTIAL)
            base = UnsafeRawPointer(m)
            storage = .mapped(length: fileSize)
            wideLoadLimit = (fileSize + page - 1) / page * page
        } else {
            base = UnsafeRawPointer(UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8))
            storage = .owned
            wideLoadLimit = 0
        }
    }

    /// A live stream's buffer `memory` (owned by the caller, which outlives the medium), empty until
    /// a packet is written into it and ``fileSize`` set.
    init(live memory: UnsafeRawPointer, path: String) {
        self.path = path
        base = memory
        storage = .live
        fileSize = 0
        wideLoadLimit = 0
    }

    deinit {
        switch storage {
        case .mapped(let length): munmap(UnsafeMutableRawPointer(mutating: base), length)
        case .owned: UnsafeMutableRawPointer(mutating: base).deallocate()
        case .live: break
        }
    }

    /// Releases the pages of packets already consumed so resident memory does not grow with the trace
    /// (or, with a ``releaseHandoff``, publishes how far for another thread to release them).
    func releaseConsumed(upTo offset: Int) {
        if let h = releaseHandoff {
            h.upTo.store(offset, ordering: .releasing)
            // (After the releasing thread has let go, `releasedUpTo` is this thread's again: the
            // acquiring load sees that thread's last write of it.)
            if h.active.load(ordering: .acquiring) { return }
        }
        _ = releasePages(upTo: offset)
    }

    /// Releases the mapped pages from `releasedUpTo` to the page of `offset`; whether there were any.
    private func releasePages(upTo offset: Int) -> Bool {
        guard case .mapped = storage else { return false }
        let start = releasedUpTo & ~(pageSize - 1)
        let stop = offset & ~(pageSize - 1)
        guard stop > start else { return false }
        _ = madvise(UnsafeMutableRawPointer(mutating: base).advanced(by: start), stop - start, MADV_DONTNEED)
        releasedUpTo = stop
        return true
    }

    /// Releases the pages up to where ``releaseHandoff`` says the decoding has gone: called on the
    /// thread that took the releases over (ConcurrentMerge.swift). What keeps it safe while this
    /// stream is decoded on another thread: only pages before the packet being read are released
    /// (the decoding thread publishes an offset once it has moved past it), and the mapping is
    /// private and read-only — a released page read again is read again from the file, the same
    /// bytes — so the two threads never need to agree on more than that offset.
    func releaseHandedOff() {
        guard let h = releaseHandoff, h.active.load(ordering: .relaxed) else { return }
        if releasePages(upTo: h.upTo.load(ordering: .acquiring)) { releasesByOtherThread &+= 1 }
    }

    /// Called by the releasing thread when it stops (its own stream ended, or the merge is over):
    /// releases what was published, then lets the decoding thread release its pages itself.
    func stopReleasingHandedOff() {
        guard let h = releaseHandoff, h.active.load(ordering: .relaxed) else { return }
        releaseHandedOff()
        h.active.store(false, ordering: .releasing)
    }

    /// Hands the releases of consumed pages over to another thread (``releaseHandedOff()``), until
    /// ``takeBackReleases()``; call both while that thread is not running.
    func handOffReleases() {
        releaseHandoff = ReleaseHandoff()
    }

    /// Releases what was consumed and not yet released, and releases on this thread again.
    func takeBackReleases() {
        guard let h = releaseHandoff else { return }
        releaseHandoff = nil
        // (The releasing thread has stopped and been joined: its writes are visible.)
        _ = releasePages(upTo: h.upTo.load(ordering: .relaxed))
    }
}
