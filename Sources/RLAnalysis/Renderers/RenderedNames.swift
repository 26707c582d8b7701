import RunLoopSchema

/// Callout names rendered once per item for a renderer that writes them millions of times (the
/// timeline's rows, the Chrome export's slices): the rendered bytes one after another, found by
/// item through a direct-mapped cache (a trace has few items, each seen many times: the usual
/// lookup is one compare, no hash) in front of a dictionary.
final class RenderedNames {
    /// An item: blocks by name (every perform-block is its own item), the others by id; `context`
    /// is the renderer's (the Chrome export's thread id, whose record tail follows the name).
    struct Key: Hashable { var pid: Int64; var item: UInt64; var kind: RLCalloutKind; var block: Int32; var context: Int64 = 0 }
    private var ranges: [Key: (start: Int, count: Int)] = [:]
    /// The rendered names, one after another: `count` bytes of `capacity` at `storage`, held
    /// outside any Swift array so that reading a range retains nothing (an array property of a
    /// class is retained around each access).
    private var storage = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 8)
    private var capacity = 4096, count = 0
    private typealias Entry = (key: Key, start: Int, count: Int)
    private let cache: UnsafeMutablePointer<Entry> = {
        let p = UnsafeMutablePointer<Entry>.allocate(capacity: 256)
        p.initialize(repeating: (Key(pid: .min, item: 0, kind: .observer, block: -2), 0, 0), count: 256)
        return p
    }()

    deinit { cache.deinitialize(count: 256); cache.deallocate(); storage.deallocate() }

    /// Where the rendering of `cl`'s name lies in ``bytes``, rendering it with `render` the first
    /// time; nil when `render` gives nil (an item not named yet: tried again next time, so a name
    /// learned later shows).
    @inline(__always)
    func range(of cl: CalloutRecord, pid: Int64, context: Int64 = 0, render: (CalloutRecord) -> [UInt8]?) -> (start: Int, count: Int)? {
        let (k, slot) = Self.key(cl, pid: pid, context: context)
        let e = cache[slot]
        if e.key == k { return (e.start, e.count) }
        guard let r = lookUp(k, cl, render) else { return nil }
        cache[slot] = (k, r.start, r.count)
        return r
    }

    /// ``range(of:pid:context:render:)`` when the cache holds it (the usual case), else nil — for a
    /// caller that renders through a function of its own, with no closure built per call.
    @inline(__always)
    func cachedRange(of cl: CalloutRecord, pid: Int64, context: Int64 = 0) -> (start: Int, count: Int)? {
        let (k, slot) = Self.key(cl, pid: pid, context: context)
        let e = cache[slot]
        return e.key == k ? (e.start, e.count) : nil
    }

    /// An item's key and its slot in the cache.
    @inline(__always)
    private static func key(_ cl: CalloutRecord, pid: Int64, context: Int64) -> (Key, Int) {
        let block = !cl.namedByItem
        let k = Key(pid: pid, item: block ? 0 : cl.item, kind: cl.kind, block: block ? cl.blockName : -1, context: context)
        // Every field of the key in the slot: the same block name on many loops' threads (the
        // Chrome export's context) would otherwise share one slot and go to the dictionary each time.
        let mixed = (k.item ^ UInt64(UInt32(bitPattern: k.block)) ^ (UInt64(bitPattern: k.context) &* 0xC2B2_AE3D_27D4_EB4F)
            ^ (UInt64(bitPattern: k.pid) << 17)) &* 0x9E37_79B9_7F4A_7C15
        return (k, Int(truncatingIfNeeded: mixed >> 56) ^ Int(k.kind.rawValue))
    }

    @inline(never)
    private func lookUp(_ k: Key, _ cl: CalloutRecord, _ render: (CalloutRecord) -> [UInt8]?) -> (start: Int, count: Int)? {
        if let r = ranges[k] { return r }
        guard let b = render(cl) else { return nil }
        let r = (start: count, count: b.count)
        if count + b.count > capacity {
            capacity = max(capacity * 2, count + b.count)
            let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            grown.copyMemory(from: storage, byteCount: count)
            storage.deallocate()
            storage = grown
        }
        b.withUnsafeBytes { if let p = $0.baseAddress { (storage + count).copyMemory(from: p, byteCount: $0.count) } }
        count += b.count
        ranges[k] = r
        return r
    }

    /// Calls `body` with the bytes of `r` (a range this table gave).
    @inline(__always)
    func withBytes<R>(_ r: (start: Int, count: Int), _ body: (UnsafeRawBufferPointer) -> R) -> R {
        // A range this table gave lies inside the `count` bytes written: in bounds.
        body(UnsafeRawBufferPointer(start: storage + r.start, count: r.count))
    }
}
