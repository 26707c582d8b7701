/// A list of trivial values (no references: nothing to retain or deinitialize) in storage its
/// owner holds and frees (``deallocate()`` in the owner's `deinit`), grown by doubling and never
/// shrunk: an append, a pop or emptying it is a count and a store.
///
/// It replaces Swift arrays on the per-record paths, whose every append and removal checked the
/// buffer's uniqueness and capacity through the runtime (a pop cost ≈ 40 instructions, and
/// `removeAll(keepingCapacity:)` went through the generic `replaceSubrange`): the loop model's open
/// callouts (``OpenCallouts``, a push and a pop per callout) and the Perfetto export's waiting
/// slices (docs/benchmarks.md, "Speed, third pass"). A copy shares the storage: its owner keeps one.
struct TrivialList<Element> {
    private var base: UnsafeMutablePointer<Element>
    private var capacity: Int
    /// How many values it holds.
    private(set) var count = 0

    init(capacity: Int = 8) {
        precondition(_isPOD(Element.self), "TrivialList holds trivial values only")
        self.capacity = max(1, capacity)
        base = .allocate(capacity: self.capacity)
    }

    /// Frees the storage (the owner's `deinit`).
    func deallocate() { base.deallocate() }

    var isEmpty: Bool { count == 0 }
    var first: Element? { count > 0 ? base[0] : nil }
    /// The values, in place (valid until the next append).
    var buffer: UnsafeMutableBufferPointer<Element> { UnsafeMutableBufferPointer(start: base, count: count) }

    /// The value at `i` (0 ≤ `i` < `count`).
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

    /// Keeps the first `n` values (`n` ≤ `count`).
    mutating func truncate(to n: Int) { precondition(n >= 0 && n <= count); count = n }

    /// Removes the values `shouldRemove` selects, keeping the others' order.
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

/// A loop's open callouts, innermost last, each with the index of the open iteration it belongs
/// to (-1 outside any), in storage the loop model's state owns.
typealias OpenCallouts = TrivialList<(record: CalloutRecord, iterationIndex: Int)>
