/// A loop's open callouts, innermost last, each with the index of the open iteration it belongs
/// to (-1 outside any): a stack of trivial records in storage the loop model's state owns, grown by
/// doubling and never shrunk.
///
/// It replaces an array of tuples held by a class, whose every push and pop checked the buffer's
/// uniqueness and capacity through the runtime (a pop cost ≈ 40 instructions); the model pushes
/// and pops once per callout.
struct OpenCallouts {
    typealias Element = (record: CalloutRecord, iterationIndex: Int)
    private var base: UnsafeMutablePointer<Element>
    private var capacity: Int
    /// How many callouts are open.
    private(set) var count = 0

    init() {
        capacity = 8
        base = .allocate(capacity: 8)
    }

    /// Frees the storage (the owner's `deinit`). `CalloutRecord` is trivial: nothing to deinitialize.
    func deallocate() { base.deallocate() }

    var isEmpty: Bool { count == 0 }
    var first: Element? { count > 0 ? base[0] : nil }

    /// The entry at `i` (0 ≤ `i` < `count`: the model only reads entries it pushed).
    @inline(__always)
    subscript(i: Int) -> Element {
        get { precondition(i >= 0 && i < count); return base[i] }
        nonmutating set { precondition(i >= 0 && i < count); base[i] = newValue }
    }

    @inline(__always)
    mutating func append(_ e: Element) {
        if count == capacity { grow() }
        (base + count).initialize(to: e)
        count &+= 1
    }

    @inline(__always)
    mutating func popLast() -> Element? {
        guard count > 0 else { return nil }
        count &-= 1
        return base[count]
    }

    @inline(__always)
    mutating func removeLast() { precondition(count > 0); count &-= 1 }

    mutating func removeAll() { count = 0 }

    /// Removes the entries `shouldRemove` selects, keeping the others' order.
    mutating func removeAll(where shouldRemove: (Element) -> Bool) {
        var kept = 0
        for i in 0..<count where !shouldRemove(base[i]) {
            base[kept] = base[i]
            kept += 1
        }
        count = kept
    }

    @inline(never)
    private mutating func grow() {
        let bigger = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
        bigger.moveInitialize(from: base, count: count)
        base.deallocate()
        base = bigger
        capacity *= 2
    }
}
