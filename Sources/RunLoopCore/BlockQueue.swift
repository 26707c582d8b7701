#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization
import RunLoopTracing

/// What the block trampoline (``RLRunLoop/calloutToBlock(_:id:)``) reads of a queued block.
protocol QueuedBlock {
    /// The name given to ``RLRunLoop/performBlock(forMode:name:_:)``, if any.
    var name: String? { get }
    /// The block.
    var body: () -> Void { get }
}

/// A queued perform-block.
struct BlockItem: QueuedBlock {
    /// The modes the block may run in.
    enum Target {
        /// One mode of the loop, by identity (modes are never removed, and a mode's state is unique
        /// to its name, so this is "the mode named so" without comparing names on every pass).
        case mode(ObjectIdentifier)
        /// Any common mode (``RLMode/commonModes``).
        case common
        /// Any of several modes, by name (``RLMode/commonModes`` among them means any common mode).
        case many(Set<RLMode>)
    }
    let target: Target
    let id: UInt64
    let name: String?
    let body: () -> Void

    func matches(_ m: ModeState, isCommon: Bool) -> Bool {
        switch target {
        case .mode(let id): id == ObjectIdentifier(m)
        case .common: isCommon
        case .many(let s): s.contains(m.name) || (isCommon && s.contains(.commonModes))
        }
    }
}

/// A perform-block the loop's own thread queued in ``RLRunLoop/ownBlocks``: unnamed, and for that
/// queue's one mode, so it needs neither a name nor a target, and its id (the trace's `item`) is
/// taken when it runs or moves to ``RLRunLoop/blocks`` — nothing sees a block's id before then.
/// 16 bytes, the closure alone, instead of 56: a burst of blocks touches less than a third of the
/// memory (200k queued blocks: 3.2 MB of fresh pages instead of 11).
struct OwnBlockItem: QueuedBlock {
    let body: () -> Void
    var name: String? { nil }
}

/// The capacity a ``BlockQueue`` starts with and shrinks back to once drained.
let blockQueueInitialCapacity = 16

/// The loop's FIFO of perform-blocks: a ring buffer (power-of-two capacity) in a class. Blocks are
/// moved in and out (the queue owns the one reference to each closure: no retain/release pair per
/// block), a queue is handed over by swapping contents (the loop's queue is a `let`, so using it
/// costs no retain of the queue object), and a drained queue keeps its buffer for the next pass.
/// Guarded by the loop's lock, or owned by the loop's thread while it drains it (``RLRunLoop/ownBlocks``
/// only ever by that thread). `Item` is ``BlockItem`` or ``OwnBlockItem``.
final class BlockQueue<Item> {
    @exclusivity(unchecked) private var buffer: UnsafeMutablePointer<Item>
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var head = 0
    @exclusivity(unchecked) private(set) var count = 0

    init() {
        capacity = blockQueueInitialCapacity
        buffer = BlockQueue.allocate(capacity)
    }

    deinit {
        removeAll()
        free(buffer)
    }

    /// The buffer lives in `malloc` memory, so growing it is a `realloc`: a large buffer grows in
    /// place or by remapping its pages (no copy, no fault on the pages already touched). Both item
    /// types hold only strong references and plain values, so they may be moved bitwise.
    private static func allocate(_ capacity: Int) -> UnsafeMutablePointer<Item> {
        guard let p = malloc(capacity * MemoryLayout<Item>.stride) else { fatalError("RunLoopCore: out of memory") }
        return p.bindMemory(to: Item.self, capacity: capacity)
    }

    var isEmpty: Bool { count == 0 }

    // (Index arithmetic wraps instead of trapping: `head` and `count` never exceed `capacity`, a
    // power of two far below `Int.max`, so no sum here can overflow.)
    @inline(__always)
    func append(_ item: consuming Item) {
        if count == capacity { grow() }
        (buffer + ((head &+ count) & (capacity &- 1))).initialize(to: item)
        count &+= 1
    }

    @inline(__always)
    func popFirst() -> Item? {
        guard count > 0 else { return nil }
        let item = (buffer + head).move()
        head = (head &+ 1) & (capacity &- 1)
        count &-= 1
        return item
    }

    func contains(where predicate: (Item) -> Bool) -> Bool {
        for i in 0..<count where predicate(buffer[(head + i) & (capacity - 1)]) { return true }
        return false
    }

    /// Exchanges the blocks (and buffers) of two queues: O(1).
    @inline(__always)
    func swapContents(with other: BlockQueue) {
        swap(&buffer, &other.buffer)
        swap(&capacity, &other.capacity)
        swap(&head, &other.head)
        swap(&count, &other.count)
    }

    /// Moves every block of `other`, in order, to the end of this queue (`other` ends empty).
    func append(movingFrom other: BlockQueue) {
        while let b = other.popFirst() { append(b) }
    }

    func removeAll() {
        while popFirst() != nil {}
        head = 0
    }

    /// Gives a drained queue that grew large (a burst of blocks) its initial buffer back.
    @inline(__always)
    func shrinkIfDrained() {
        if count == 0 && capacity > 4096 { shrink() }
    }

    @inline(never)
    private func shrink() {
        free(buffer)
        capacity = blockQueueInitialCapacity
        buffer = BlockQueue.allocate(capacity)
        head = 0
    }

    /// Doubles the capacity of a full queue. The blocks before the wrap point, `[head, capacity)`,
    /// stay where they are; those after it, `[0, head)`, move to just after them.
    @inline(never)
    private func grow() {
        let newCapacity = capacity * 2
        guard let p = realloc(buffer, newCapacity * MemoryLayout<Item>.stride) else {
            fatalError("RunLoopCore: out of memory")
        }
        buffer = p.bindMemory(to: Item.self, capacity: newCapacity)
        (buffer + capacity).moveInitialize(from: buffer, count: head)   // the wrapped part (full: count == capacity)
        capacity = newCapacity
    }
}

/// The empty queues a drain takes the queued blocks into: one kept for the loop's life (its buffer
/// reused pass after pass: no allocation for the blocks queued meanwhile) and, for a run nested in a
/// block while that one is in use, a spare. Used on the loop's thread only.
final class DrainQueues<Item> {
    private let kept = BlockQueue<Item>()
    @exclusivity(unchecked) private var keptBusy = false
    /// The spare of nested runs (nil while one has it: a deeper one makes its own).
    @exclusivity(unchecked) private var spare: BlockQueue<Item>?

    /// Calls `body` with an empty queue no enclosing drain is using.
    @inline(__always)
    func withEmptyQueue<R>(_ body: (BlockQueue<Item>) -> R) -> R {
        if keptBusy {
            let q = spare.take() ?? BlockQueue()
            defer { spare = q }
            return body(q)
        }
        keptBusy = true
        defer { keptBusy = false }
        return body(kept)
    }
}

extension BlockQueue where Item == BlockItem {
    /// Whether a queued block may run in `m` (reads each block in place: no copy, so no
    /// retain/release of its closure, unlike `contains(where:)`).
    @inline(__always)
    func containsBlock(for m: ModeState, isCommon: Bool) -> Bool {
        for i in 0..<count where buffer[(head + i) & (capacity - 1)].matches(m, isCommon: isCommon) { return true }
        return false
    }
}

// The drains of ``RLRunLoop/doBlocks(_:)`` (step 2 and 10 of a pass, RunAlgorithm.swift).
extension RLRunLoop {
    /// ``doBlocks(_:)`` when only ``ownBlocks`` holds blocks, all for the mode running: each runs.
    func drainOwnBlocks(into taken: BlockQueue<OwnBlockItem>) -> Bool {
        ownBlocks.swapContents(with: taken)
        ownBlocksMode.store(0, ordering: .releasing)
        defer { taken.shrinkIfDrained() }
        while let b = taken.popFirst() {
            calloutToBlock(b, id: makeOwnBlockID())
        }
        return true
    }

    /// Moves the blocks of ``ownBlocks`` to the end of `queue`, as the blocks of `blocks` they
    /// stand for. Called with the lock held, on the loop's thread.
    fileprivate func moveOwnBlocksLocked(to queue: BlockQueue<BlockItem>) {
        guard !ownBlocks.isEmpty, let target = ownBlocksTarget else { return }
        let mode = target._withUnsafeGuaranteedRef { ObjectIdentifier($0) }
        while let b = ownBlocks.popFirst() {
            queue.append(BlockItem(target: .mode(mode), id: makeOwnBlockID(), name: nil, body: b.body))
        }
        ownBlocksMode.store(0, ordering: .releasing)
    }

    func drainBlocks(_ m: ModeState, into taken: BlockQueue<BlockItem>) -> Bool {
        let isCommon: Bool? = locked {
            if blocks.isEmpty && ownBlocks.isEmpty { return nil }
            if ownBlocks.isEmpty {
                blocks.swapContents(with: taken)
            } else {
                // The own blocks first: they were queued before every block of `blocks`.
                moveOwnBlocksLocked(to: taken)
                taken.append(movingFrom: blocks)
            }
            hasSharedBlocks.store(false, ordering: .relaxed)
            return m.isCommon
        }
        guard let isCommon else { return false }
        defer { taken.shrinkIfDrained() }
        var kept: BlockQueue<BlockItem>?
        var did = false
        while let b = taken.popFirst() {
            if b.matches(m, isCommon: isCommon) {
                calloutToBlock(b, id: b.id)
                did = true
            } else {
                if kept == nil { kept = BlockQueue() }
                kept!.append(b)
            }
        }
        if let kept {
            // Ahead of the blocks queued meanwhile: first this thread's own, then the others'.
            locked {
                moveOwnBlocksLocked(to: kept)
                kept.append(movingFrom: blocks)
                blocks.swapContents(with: kept)
                hasSharedBlocks.store(true, ordering: .relaxed)
            }
        }
        return did
    }
}
