/// Dense numbers for loops: each `(pid, loop)` key gets 0, 1, 2… in the order it is first seen.
///
/// The loop model and the sinks find a loop's state for every event or record they get; events
/// of several loops interleave, so a one-entry cache misses often, and a `Dictionary<LoopKey, _>`
/// then hashes two words through SipHash (≈ 270 instructions a lookup in `report`). This table is
/// open addressing over a power-of-two array with a multiplicative hash of the two words and
/// linear probing: a lookup is a multiply, a shift and a compare or two. A trace has few loops,
/// so the table stays small; it never shrinks.
public struct LoopNumbering: Sendable {
    /// The keys, by number.
    public private(set) var keys: [LoopKey] = []
    /// Per slot, the number of the key there plus one (0: empty).
    private var slots: [Int32] = Array(repeating: 0, count: 16)
    private var mask = 15
    private var lastKey = LoopKey(pid: .min, loop: .max), lastNumber = -1

    /// An empty table.
    public init() {}

    /// How many loops are numbered.
    public var count: Int { keys.count }

    @inline(__always)
    private func slot(_ k: LoopKey) -> Int {
        let h = (UInt64(bitPattern: k.pid) &* 0x9E37_79B9_7F4A_7C15) ^ (k.loop &* 0xC2B2_AE3D_27D4_EB4F)
        return Int(truncatingIfNeeded: h >> 32) & mask
    }

    /// The number of `key`, nil if it was never numbered.
    @inline(__always)
    public func existing(_ key: LoopKey) -> Int? {
        if key == lastKey { return lastNumber }
        var i = slot(key)
        while true {
            let v = Int(slots[i])
            if v == 0 { return nil }
            if keys[v - 1] == key { return v - 1 }
            i = (i + 1) & mask
        }
    }

    /// The number of `key`, given the next free number on first sight.
    @inline(__always)
    public mutating func number(_ key: LoopKey) -> Int {
        if key == lastKey { return lastNumber }
        let n = existing(key) ?? insert(key)
        lastKey = key
        lastNumber = n
        return n
    }

    private mutating func insert(_ key: LoopKey) -> Int {
        let n = keys.count
        keys.append(key)
        if keys.count * 2 > slots.count {
            // Half full at most: probes stay short.
            slots = Array(repeating: 0, count: slots.count * 2)
            mask = slots.count - 1
            for (j, k) in keys.enumerated() { place(k, j) }
        } else {
            place(key, n)
        }
        return n
    }

    private mutating func place(_ key: LoopKey, _ n: Int) {
        var i = slot(key)
        while slots[i] != 0 { i = (i + 1) & mask }
        slots[i] = Int32(n + 1)
    }
}
