// The block-name pool (docs/tracepoints.md, "Constant pools"): a named perform-block's entry
// carries, as its `item`, the id of its name in a process-wide pool, and the name is described by
// one `item_info` (kind `block`) the first time it is used while a session records `item_info` —
// not before every block. RunLoopCore's hang watchdog describes the whole pool again with the
// other pools (a session's start, every RLTRACE_POOL_PERIOD, after a hang began) and, once it sees
// no session recording them, lets the next session's first use describe each name again
// (``RLBlockNames/forgetDescriptions()``).
//
// Hot path: a loop keeps an ``RLBlockNameCache`` (used by its own thread only: blocks run there),
// a few names compared with `==` (a name passed as the same literal compares equal on the
// string's identical bits, before any byte is read). Only a name the cache has not seen takes the
// pool's lock.

import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if !RLTRACE_DISABLED
import CRunLoopTracepoints
import RunLoopSchema
#endif

/// The process-wide pool of perform-block names (docs/tracepoints.md, "Constant pools").
public enum RLBlockNames {
    /// The bit that marks a block entry's `item` as a name's id: bit 47, inside the 48 bits the
    /// hang watchdog keeps of an item id. Every other item id (observers, sources, timers and each
    /// unnamed block's own number) comes from a process-wide counter starting at 17, which would
    /// have to hand out 2^47 − 17 ids (about 1.4 × 10^14) before reaching it.
    public static let tag: UInt64 = 1 << 47
    /// At most this many names are pooled; a block with a name beyond them is described before its
    /// entry, with its own number, as an unnamed pool would do it (a process that makes names up
    /// per block, e.g. with a counter in them, keeps bounded memory).
    public static let capacity = 4096

    /// Bits 24–46 of a pooled name's id: the process id (Linux's `pid_max` is at most 2^22), so
    /// the ids of two processes of one trace differ as their `loop_id`s do; bits 0–23: the name's
    /// number in the pool, from 1.
    static let processBits: UInt64 = UInt64(UInt32(bitPattern: getpid()) & 0x7F_FFFF) << 24

    /// Whether `item` (a `block_entry`'s) is a pooled name's id.
    @inlinable public static func isNameID(_ item: UInt64) -> Bool { item & tag != 0 && item >> 48 == 0 }

    /// The id of the pool's `n`th name (from 1).
    static func id(_ n: Int) -> UInt64 { tag | processBits | UInt64(n) }

    struct Table {
        var ids: [String: UInt64] = [:]
        var names: [String] = []
        /// Per name, the ``generation`` it was last described in (0: never).
        var described: [UInt64] = []
    }
    static let table = Mutex<Table>(Table())
    /// Increased each time the pool's descriptions are forgotten (no session records them).
    static let generation = Atomic<UInt64>(1)
    /// Whether some name was described since the descriptions were last forgotten.
    static let dirty = Atomic<Bool>(false)

    /// The id of `name` in the pool (added if new), nil when the pool is full. Takes the lock.
    static func intern(_ name: String) -> UInt64? {
        table.withLock { t in
            if let id = t.ids[name] { return id }
            guard t.names.count < capacity else { return nil }
            t.names.append(name)
            t.described.append(0)
            let id = id(t.names.count)
            t.ids[name] = id
            return id
        }
    }

    /// The name of pooled id `id` (nil if it is not one).
    public static func name(of id: UInt64) -> String? {
        guard isNameID(id), id & ~0xFF_FFFF == tag | processBits else { return nil }
        let i = Int(id & 0xFF_FFFF) - 1
        return table.withLock { i >= 0 && i < $0.names.count ? $0.names[i] : nil }
    }

    /// How many names the pool holds.
    public static var count: Int { table.withLock { $0.names.count } }

    /// Lets the next use of each name describe it again: called by the hang watchdog when it sees
    /// no session recording `item_info` (a session that starts later gets every name at its first
    /// use). Cheap when nothing was described since the last call.
    public static func forgetDescriptions() {
        if dirty.exchange(false, ordering: .relaxed) { generation.add(1, ordering: .relaxed) }
    }

    /// Describes every pooled name (`item_info`, kind `block`, one per name) as events of `loop`
    /// (any loop of the process: the pool is the process's). Called by the hang watchdog with the
    /// other pools, while a session records `item_info`.
    public static func describeAll(loop: UInt64) {
        #if !RLTRACE_DISABLED
        guard rl_tp_item_info_enabled() else { return }
        let g = generation.load(ordering: .relaxed)
        let names = table.withLock { t -> [String] in
            for i in t.described.indices { t.described[i] = g }
            return t.names
        }
        if !names.isEmpty { dirty.store(true, ordering: .relaxed) }
        for (i, n) in names.enumerated() {
            n.withCString { rl_tp_item_info(loop, RLCalloutKind.block.rawValue, id(i + 1), 0, $0, nil) }
        }
        #endif
    }

    /// Describes pooled `id` (named `name`) unless it was in generation `g`; returns `g`.
    static func describe(loop: UInt64, id: UInt64, name: String, generation g: UInt64) -> UInt64 {
        #if !RLTRACE_DISABLED
        let i = Int(id & 0xFF_FFFF) - 1
        let first = table.withLock { t -> Bool in
            guard i < t.described.count, t.described[i] != g else { return false }
            t.described[i] = g
            return true
        }
        if first {
            dirty.store(true, ordering: .relaxed)
            name.withCString { rl_tp_item_info(loop, RLCalloutKind.block.rawValue, id, 0, $0, nil) }
        }
        #endif
        return g
    }
}

/// A loop's cache of block names in front of ``RLBlockNames`` (used by one thread: the loop's).
public struct RLBlockNameCache {
    @usableFromInline var names: [String] = []
    @usableFromInline var ids: [UInt64] = []
    /// Per entry, the pool generation in which its name is known described (0: not yet).
    @usableFromInline var described: [UInt64] = []
    @usableFromInline var next = 0
    static let size = 8

    /// An empty cache.
    public init() {}

    /// The pooled id of `name` (from the cache, else from the pool), and its entry's index; nil
    /// when the pool is full.
    mutating func lookup(_ name: String) -> (id: UInt64, slot: Int)? {
        for i in names.indices where names[i] == name { return (ids[i], i) }
        guard let id = RLBlockNames.intern(name) else { return nil }
        if names.count < Self.size {
            names.append(name); ids.append(id); described.append(0)
            return (id, names.count - 1)
        }
        let s = next
        next = (next + 1) % Self.size
        names[s] = name; ids[s] = id; described[s] = 0
        return (id, s)
    }
}

#if !RLTRACE_DISABLED
extension RLTrace {
    /// A named block's entry: its name's pooled id as `item`, the name described first if this is
    /// its first use in the pool's generation while `item_info` is recorded. A full pool: the old
    /// way (`_blockEntry`: described with the block's own number `item`).
    @usableFromInline @inline(never)
    static func _namedBlockEntry(_ loop: UInt64, _ item: UInt64, _ name: String, _ cache: inout RLBlockNameCache) -> UInt64 {
        guard let (id, slot) = cache.lookup(name) else { _blockEntry(loop, item, name); return item }
        let g = RLBlockNames.generation.load(ordering: .relaxed)
        if cache.described[slot] != g && rl_tp_item_info_enabled() {
            cache.described[slot] = RLBlockNames.describe(loop: loop, id: id, name: name, generation: g)
        }
        rl_tp_block_entry(loop, id)
        return id
    }
}
#endif

extension RLTrace {
    /// Entry into a perform-block named `name` (not empty): the entry's `item` is the name's id in
    /// the process's block-name pool (``RLBlockNames``), described once per session rather than
    /// before every block; `cache` is the calling loop's. Without a session recording
    /// `block_entry`, one load and a branch. Returns the `item` the entry carried (`item` itself
    /// when none was recorded, or the pool is full): what the loop's watch word names the callout by,
    /// so the watchdog's `callout_cpu` and `hang_begin` name the same item.
    @inlinable @inline(__always)
    public static func namedBlockEntry(loop: UInt64, item: UInt64, name: String, cache: inout RLBlockNameCache) -> UInt64 {
        #if !RLTRACE_DISABLED
        if rl_tp_block_entry_enabled() { return _namedBlockEntry(loop, item, name, &cache) }
        #endif
        return item
    }
}
