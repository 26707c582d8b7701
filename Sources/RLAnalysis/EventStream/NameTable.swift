#if canImport(Glibc)
import Glibc
#endif

/// Interns the strings of a trace (item names, modes, thread and process names) as small integer
/// ids, so the per-event path compares and stores integers: a name seen before is found from its
/// bytes (a word-at-a-time hash, a direct-mapped cache of recent names, then a byte comparison)
/// without allocating or hashing through `Hasher`; a new one is decoded once.
public final class NameTable: @unchecked Sendable {
    /// The interned strings, by id.
    public private(set) var strings: [String] = [""]
    private var utf8: [[UInt8]] = [[]]
    private var index: [UInt64: Int32] = [NameTable.hash(UnsafeRawBufferPointer(start: nil, count: 0)): 0]
    /// Recently seen names by hash: (hash, id, a stable copy of the bytes, their count). The copies
    /// live as long as the table (`copies`), so a cache hit compares bytes with one `memcmp`.
    private struct CacheEntry { var hash: UInt64; var id: Int32; var bytes: UnsafeRawPointer?; var count: Int }
    private static let cacheSize = 256
    private let cache: UnsafeMutablePointer<CacheEntry> = {
        let p = UnsafeMutablePointer<CacheEntry>.allocate(capacity: NameTable.cacheSize)
        p.initialize(repeating: CacheEntry(hash: 0, id: -1, bytes: nil, count: 0), count: NameTable.cacheSize)
        return p
    }()
    /// Per id, a stable copy of its bytes (freed with the table).
    private var copies: [UnsafeMutableRawPointer] = [UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)]

    /// The empty string's id.
    public static let empty: Int32 = 0

    private let recordsAdditions: Bool
    private var added: [String] = []

    /// Creates a table holding only the empty string (id 0). With `recordingAdditions`, the strings
    /// added are also kept for ``takeAdded()`` (to mirror the table on another thread).
    public init(recordingAdditions: Bool = false) { recordsAdditions = recordingAdditions }

    /// The strings added since the last call, in id order.
    public func takeAdded() -> [String] {
        defer { added = [] }
        return added
    }

    /// Appends strings another table added (``takeAdded()``), giving them the same ids there.
    public func adopt(_ more: [String]) {
        for s in more { _ = intern(s) }
    }

    /// The string of `id` (the empty string for an unknown id).
    @inline(__always)
    public subscript(id: Int32) -> String { id >= 0 && Int(id) < strings.count ? strings[Int(id)] : "" }

    deinit {
        for c in copies { c.deallocate() }
        cache.deallocate()
    }

    /// A hash of `bytes`, eight at a time.
    @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(bytes.count)
        guard var p = bytes.baseAddress else { return h }
        var n = bytes.count
        while n >= 8 {
            h = (h ^ p.loadUnaligned(as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 32
            p += 8; n -= 8
        }
        if n > 0 {
            var v: UInt64 = 0
            for i in 0..<n { v |= UInt64(p.load(fromByteOffset: i, as: UInt8.self)) << (8 * UInt64(i)) }
            h = (h ^ v) &* 0xC4CE_B9FE_1A85_EC53
            h ^= h >> 29
        }
        return h
    }

    /// The id of `bytes` (UTF-8), interning them when new.
    @inline(__always)
    public func intern(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        let h = NameTable.hash(bytes)
        let slot = Int(truncatingIfNeeded: h >> 56)
        let e = cache[slot]
        if e.hash == h, e.count == bytes.count, e.id >= 0, e.count == 0 || memcmp(e.bytes!, bytes.baseAddress!, e.count) == 0 {
            return e.id
        }
        return internSlow(bytes, hash: h, slot: slot)
    }

    @inline(never)
    private func internSlow(_ bytes: UnsafeRawBufferPointer, hash: UInt64, slot: Int) -> Int32 {
        var h = hash
        var id: Int32
        while true {
            guard let found = index[h] else { id = add(bytes, hash: h); break }
            if equal(utf8[Int(found)], bytes) { id = found; break }
            h &+= 0x9e37_79b9_7f4a_7c15    // a collision: probe the next slot of this name's chain
        }
        cache[slot] = CacheEntry(hash: hash, id: id, bytes: UnsafeRawPointer(copies[Int(id)]), count: bytes.count)
        return id
    }

    /// The id of `s`, interning it when new.
    public func intern(_ s: String) -> Int32 {
        var s = s
        return s.withUTF8 { intern(UnsafeRawBufferPointer($0)) }
    }

    private func add(_ bytes: UnsafeRawBufferPointer, hash: UInt64) -> Int32 {
        let id = Int32(strings.count)
        let copy = [UInt8](bytes)
        utf8.append(copy)
        let stable = UnsafeMutableRawPointer.allocate(byteCount: max(1, bytes.count), alignment: 1)
        if let b = bytes.baseAddress, bytes.count > 0 { stable.copyMemory(from: b, byteCount: bytes.count) }
        copies.append(stable)
        let string = String(decoding: copy, as: UTF8.self)
        strings.append(string)
        if recordsAdditions { added.append(string) }
        index[hash] = id
        return id
    }

    @inline(__always)
    private func equal(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { $0.elementsEqual(b) }
    }
}
