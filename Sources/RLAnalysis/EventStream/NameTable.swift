/// Interns the strings of a trace (item names, modes, thread and process names) as small integer
/// ids, so the per-event path compares and stores integers: a name seen before is found from its
/// bytes (FNV-1a hash, then a byte comparison) without allocating; a new one is decoded once.
public final class NameTable: @unchecked Sendable {
    /// The interned strings, by id.
    public private(set) var strings: [String] = [""]
    private var utf8: [[UInt8]] = [[]]
    private var index: [UInt64: Int32] = [0xcbf2_9ce4_8422_2325: 0]

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

    /// The id of `bytes` (UTF-8), interning them when new.
    @inline(__always)
    public func intern(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        while true {
            guard let id = index[h] else { return add(bytes, hash: h) }
            if equal(utf8[Int(id)], bytes) { return id }
            h &+= 0x9e37_79b9_7f4a_7c15    // a collision: probe the next slot of this name's chain
        }
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
