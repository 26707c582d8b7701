/// Callout names rendered once per item for a renderer that writes them millions of times (the
/// timeline's rows, the Chrome export's slices): the rendered bytes one after another, found by
/// item through a direct-mapped cache (a trace has few items, each seen many times: the usual
/// lookup is one compare, no hash) in front of a dictionary.
final class RenderedNames {
    /// An item: blocks by name (every perform-block is its own item), the others by id; `context`
    /// is the renderer's (the Chrome export's thread id, whose record tail follows the name).
    struct Key: Hashable { var pid: Int64; var item: UInt64; var kind: CalloutKind; var block: Int32; var context: Int64 = 0 }
    private var ranges: [Key: (start: Int, count: Int)] = [:]
    /// The rendered names, one after another.
    private(set) var bytes: [UInt8] = []
    private typealias Entry = (key: Key, start: Int, count: Int)
    private let cache: UnsafeMutablePointer<Entry> = {
        let p = UnsafeMutablePointer<Entry>.allocate(capacity: 256)
        p.initialize(repeating: (Key(pid: .min, item: 0, kind: .observer, block: -2), 0, 0), count: 256)
        return p
    }()

    deinit { cache.deinitialize(count: 256); cache.deallocate() }

    /// Where the rendering of `cl`'s name lies in ``bytes``, rendering it with `render` the first
    /// time; nil when `render` gives nil (an item not named yet: tried again next time, so a name
    /// learned later shows).
    @inline(__always)
    func range(of cl: CalloutRecord, pid: Int64, context: Int64 = 0, render: (CalloutRecord) -> [UInt8]?) -> (start: Int, count: Int)? {
        let block = cl.kind == .block
        let k = Key(pid: pid, item: block ? 0 : cl.item, kind: cl.kind, block: block ? cl.blockName : -1, context: context)
        let slot = Int(truncatingIfNeeded: ((k.item ^ UInt64(UInt32(bitPattern: k.block))) &* 0x9E37_79B9_7F4A_7C15) >> 56) ^ Int(k.kind.rawValue)
        let e = cache[slot]
        if e.key == k { return (e.start, e.count) }
        guard let r = lookUp(k, cl, render) else { return nil }
        cache[slot] = (k, r.start, r.count)
        return r
    }

    @inline(never)
    private func lookUp(_ k: Key, _ cl: CalloutRecord, _ render: (CalloutRecord) -> [UInt8]?) -> (start: Int, count: Int)? {
        if let r = ranges[k] { return r }
        guard let b = render(cl) else { return nil }
        let r = (start: bytes.count, count: b.count)
        bytes.append(contentsOf: b)
        ranges[k] = r
        return r
    }

    /// Calls `body` with the bytes of `r` (a range this table gave).
    @inline(__always)
    func withBytes<R>(_ r: (start: Int, count: Int), _ body: (UnsafeRawBufferPointer) -> R) -> R {
        bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[r.start..<(r.start + r.count)])) }
    }
}
