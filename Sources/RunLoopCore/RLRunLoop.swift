#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization
import Tracing

/// One mode of one loop (CF's `__CFRunLoopMode`). Guarded by the loop's lock.
///
/// Every stored `var` is `@exclusivity(unchecked)`: the loop's lock (or, for `epfd`'s unlocked
/// read while waiting, the loop's thread, its only writer) already serialises them, and the dynamic
/// checks (`swift_beginAccess`) were about 30% of a loop pass's instructions.
final class ModeState: @unchecked Sendable {
    let name: RLMode
    /// The mode's epoll set (wake-up fd, timer fd, source1 fds, maybe the main queue's fd). Replaced
    /// by ``RLRunLoop/rebuildModeSetLocked(_:)`` when it holds a registration that cannot be removed.
    @exclusivity(unchecked) var epfd: Int32
    @exclusivity(unchecked) var sources0: [RLSource0] = []
    /// Keyed by the source's id (the epoll token): O(1) membership for every wake.
    @exclusivity(unchecked) var sources1: [UInt64: RLSource1] = [:]
    /// Sorted by order; ties in insertion order.
    @exclusivity(unchecked) var observers: [RLObserver] = []
    /// The union of the observers' activities. Atomic: written under the lock, read without it by
    /// every ``RLRunLoop/doObservers(_:_:)`` (most activities of most modes have no observer).
    let observerMask = Atomic<UInt32>(0)
    /// Whether `sources0` is non-empty. Atomic for the same reason: step 3 of a pass skips the lock
    /// when the mode has no source0. Sequentially consistent on both sides, like the loop's
    /// `ignoresWakeUps`, so a source added, signalled and woken for from another thread is seen.
    let hasSources0 = Atomic<Bool>(false)
    @exclusivity(unchecked) var timers: TimerQueue
    @exclusivity(unchecked) var stopped = false
    @exclusivity(unchecked) var mainQueueRegistered = false
    /// Whether the mode is one of the loop's common modes (cached: checked every pass).
    @exclusivity(unchecked) var isCommon = false

    init(name: RLMode, epfd: Int32) {
        self.name = name
        self.epfd = epfd
        self.timers = TimerQueue(mode: ObjectIdentifier(RLMode.self))
        self.timers = TimerQueue(mode: ObjectIdentifier(self))
    }
    deinit { close(epfd) }
}

/// A queued perform-block.
struct BlockItem {
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

/// The loop's FIFO of perform-blocks: a ring buffer (power-of-two capacity) in a class. Blocks are
/// moved in and out (the queue owns the one reference to each closure: no retain/release pair per
/// block), a queue is handed over by swapping contents (the loop's queue is a `let`, so using it
/// costs no retain of the queue object), and a drained queue keeps its buffer for the next pass.
/// Guarded by the loop's lock, or owned by the loop's thread while it drains it.
final class BlockQueue {
    @exclusivity(unchecked) private var buffer: UnsafeMutablePointer<BlockItem>
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var head = 0
    @exclusivity(unchecked) private(set) var count = 0

    /// The capacity a queue starts with and shrinks back to once drained.
    static let initialCapacity = 16

    init() {
        capacity = BlockQueue.initialCapacity
        buffer = BlockQueue.allocate(capacity)
    }

    deinit {
        removeAll()
        free(buffer)
    }

    /// The buffer lives in `malloc` memory, so growing it is a `realloc`: a large buffer grows in
    /// place or by remapping its pages (no copy, no fault on the pages already touched). BlockItem
    /// holds only strong references and plain values, so it may be moved bitwise.
    private static func allocate(_ capacity: Int) -> UnsafeMutablePointer<BlockItem> {
        guard let p = malloc(capacity * MemoryLayout<BlockItem>.stride) else { fatalError("RunLoopCore: out of memory") }
        return p.bindMemory(to: BlockItem.self, capacity: capacity)
    }

    var isEmpty: Bool { count == 0 }

    func append(_ item: consuming BlockItem) {
        if count == capacity { grow() }
        (buffer + ((head + count) & (capacity - 1))).initialize(to: item)
        count += 1
    }

    func popFirst() -> BlockItem? {
        guard count > 0 else { return nil }
        let item = (buffer + head).move()
        head = (head + 1) & (capacity - 1)
        count -= 1
        return item
    }

    func contains(where predicate: (BlockItem) -> Bool) -> Bool {
        for i in 0..<count where predicate(buffer[(head + i) & (capacity - 1)]) { return true }
        return false
    }

    /// Exchanges the blocks (and buffers) of two queues: O(1).
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
    func shrinkIfDrained() {
        guard count == 0 && capacity > 4096 else { return }
        free(buffer)
        capacity = BlockQueue.initialCapacity
        buffer = BlockQueue.allocate(capacity)
        head = 0
    }

    /// Doubles the capacity of a full queue. The blocks before the wrap point, `[head, capacity)`,
    /// stay where they are; those after it, `[0, head)`, move to just after them.
    private func grow() {
        let newCapacity = capacity * 2
        guard let p = realloc(buffer, newCapacity * MemoryLayout<BlockItem>.stride) else {
            fatalError("RunLoopCore: out of memory")
        }
        buffer = p.bindMemory(to: BlockItem.self, capacity: newCapacity)
        (buffer + capacity).moveInitialize(from: buffer, count: head)   // the wrapped part (full: count == capacity)
        capacity = newCapacity
    }
}

/// The modes an item joined or left in one call, iterated after the lock (for the trace): the first
/// is inline, so the usual single mode costs no allocation, and modes are held unretained (they live
/// as long as their loop, which is running the call), their names read only when iterated.
struct ModeNames: Sequence {
    private var first: Unmanaged<ModeState>?
    private var rest: [Unmanaged<ModeState>] = []

    mutating func append(_ m: ModeState) {
        if first == nil { first = .passUnretained(m) } else { rest.append(.passUnretained(m)) }
    }

    struct Iterator: IteratorProtocol {
        fileprivate var names: ModeNames
        fileprivate var index = -1
        mutating func next() -> RLMode? {
            defer { index += 1 }
            let m = index < 0 ? names.first : (index < names.rest.count ? names.rest[index] : nil)
            return m?._withUnsafeGuaranteedRef { $0.name }
        }
    }
    func makeIterator() -> Iterator { Iterator(names: self) }
}

/// Flags of one run activation (CF's `_per_run_data`), pushed per run so nested runs have their own.
/// The innermost activation's `ignoreWakeUps` is the loop's atomic ``RLRunLoop/ignoresWakeUps``;
/// each activation keeps the value it replaced, restored when it ends.
struct PerRun {
    var stopped = false
    var outerIgnoresWakeUps = false
    /// The activation's absolute deadline (0 = poll, `.max` = none).
    var deadline: UInt64 = .max
}

/// A run loop: CFRunLoop re-implemented in Swift for Linux, with CF's semantics (see
/// `docs/divergences.md` for the few places it deliberately differs).
///
/// There is one loop per thread, created on first request (``current``); the main thread's loop
/// (``main``) exists as soon as any loop is requested and services `DispatchQueue.main` (and so
/// `@MainActor`) while it runs in a common mode. A loop is destroyed when its thread exits.
/// Registration, ``wakeUp()``, ``stop()`` and the perform functions may be called from any thread;
/// ``run(mode:seconds:returnAfterSourceHandled:)`` only on the loop's own thread.
public final class RLRunLoop: @unchecked Sendable, CustomStringConvertible {
    /// Process-unique id (the trace's `loop` field).
    public let id: UInt64
    /// The kernel thread id of the loop's thread.
    public let threadID: Int32
    /// Whether this is the main thread's loop.
    public let isMainLoop: Bool

    let waiter: Waiter
    let mainQueueFD: Int32
    /// The loop's lock: a plain pthread mutex (see ``RLLock`` for why not `Mutex`).
    let lock = RLLock()
    /// What items bound to this loop hold (see ``LoopHandle``).
    let handle = LoopHandle()
    /// CF's per-run `ignoreWakeUps` of the innermost activation (true while the loop is not running,
    /// and from a wake to the next pass). Written only on the loop's thread; read by ``wakeUp()`` on
    /// any thread without taking the lock.
    let ignoresWakeUps = Atomic<Bool>(true)

    // MARK: Guarded by `lock`
    // (`@exclusivity(unchecked)` here and below: the lock, or the loop's thread, already serialises
    // every access, so the dynamic exclusivity checks were pure cost on the hot path.)
    @exclusivity(unchecked) var modes: [RLMode: ModeState] = [:]
    @exclusivity(unchecked) var commonModeNames: Set<RLMode> = [.default]
    @exclusivity(unchecked) var commonSources0: [RLSource0] = []
    @exclusivity(unchecked) var commonSources1: [RLSource1] = []
    @exclusivity(unchecked) var commonObservers: [RLObserver] = []
    /// Common timers by identity (O(1) add/remove even with many).
    @exclusivity(unchecked) var commonTimers: [ObjectIdentifier: RLTimer] = [:]
    /// Held unretained (`modes` owns every mode): setting and restoring it costs no refcounting.
    @exclusivity(unchecked) var currentModeState: Unmanaged<ModeState>?
    @exclusivity(unchecked) var perRun: [PerRun]
    let blocks = BlockQueue()
    @exclusivity(unchecked) var sleeping = false
    @exclusivity(unchecked) var deallocating = false
    @exclusivity(unchecked) var nextStamp: UInt64 = 0
    @exclusivity(unchecked) var source1ByID: [UInt64: RLSource1] = [:]
    /// Epoll sets the main queue's fd was taken out of while its drain was running (re-added after).
    @exclusivity(unchecked) var mainQueueSuspended: [ModeState] = []
    /// The mode ``modeLocked(_:create:)`` found last: almost every lookup (a run, a perform-block,
    /// a timer added) names the same mode as the one before, and a name equal to it in storage is
    /// recognised without hashing. Modes are never removed, so it never goes stale; it is held
    /// unretained (`modes` owns it), so using it costs no retain/release either.
    @exclusivity(unchecked) var lastMode: Unmanaged<ModeState>?

    // MARK: Written only on the loop's thread
    /// The iteration counter (per loop, across runs). Only the loop's thread writes it; other
    /// threads read it (relaxed) to stamp their cross-thread events: signal, wakeUp, registration.
    let iterationCounter = Atomic<UInt64>(0)
    /// The current value of ``iterationCounter``.
    var iteration: UInt64 { iterationCounter.load(ordering: .relaxed) }

    // MARK: Touched only on the loop's thread
    @exclusivity(unchecked) var calloutCount: UInt32 = 0
    @exclusivity(unchecked) var depth: UInt32 = 0
    @exclusivity(unchecked) var inMainQueueCallout = false
    @exclusivity(unchecked) var observerScratch: [[RLObserver]] = []
    @exclusivity(unchecked) var source0Scratch: [[RLSource0]] = []
    @exclusivity(unchecked) var timerScratch: [[RLTimer]] = []
    /// An empty block queue that kept its buffer: ``doBlocks(_:)`` swaps it in for the queue it
    /// takes (nil while a drain has it: a nested activation's drain then makes its own).
    @exclusivity(unchecked) var blockSpare: BlockQueue? = BlockQueue()

    init(threadID: Int32, isMain: Bool) throws(RLError) {
        self.id = RLIDs.make()
        self.threadID = threadID
        self.isMainLoop = isMain
        self.waiter = try Waiter()
        self.mainQueueFD = isMain ? _dispatch_get_main_queue_handle_4CF() : -1
        // The base per-run data ignores wake-ups: a loop that is not running drops them (CF).
        self.perRun = [PerRun(stopped: false, outerIgnoresWakeUps: true, deadline: .max)]
        self.perRun.reserveCapacity(8)
        handle.loop = self
        // Like CF, every loop has its default mode from birth (so the main loop can run it empty);
        // made here with the error thrown (out of descriptors), not trapped.
        let ep = try waiter.makeModeSet()
        let m = ModeState(name: .default, epfd: ep)
        m.isCommon = true
        if isMain { registerMainQueueLocked(m) }
        modes[.default] = m
        RLTrace.loopCreated(loop: id, iteration: iteration, tid: threadID, threadName: RLRunLoop.threadName())
    }

    static func threadName() -> String {
        var buf = [CChar](repeating: 0, count: 64)
        rl_thread_name(&buf, 64)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    @inline(__always) func locked<R>(_ body: () throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    // MARK: - Getting loops

    /// The calling thread's loop, created if needed. Traps with a clear message if the process is
    /// out of file descriptors; use ``currentLoop()`` to handle that.
    public static var current: RLRunLoop {
        do { return try currentLoop() } catch { fatalError("RunLoopCore: cannot create the current thread's run loop: \(error)") }
    }

    /// The calling thread's loop, created if needed; throws ``RLError/systemCall(_:_:)`` (e.g.
    /// `EMFILE`) when its descriptors cannot be created.
    public static func currentLoop() throws(RLError) -> RLRunLoop {
        if let p = pthread_getspecific(LoopRegistry.key) {
            return Unmanaged<RLRunLoop>.fromOpaque(p).takeUnretainedValue()
        }
        let mainLoop = try mainLoop()
        let loop = rl_is_main_thread() != 0 ? mainLoop : try RLRunLoop(threadID: rl_gettid(), isMain: false)
        pthread_setspecific(LoopRegistry.key, Unmanaged.passRetained(loop).toOpaque())
        return loop
    }

    /// The main thread's loop (created on first request, from any thread).
    public static var main: RLRunLoop {
        do { return try mainLoop() } catch { fatalError("RunLoopCore: cannot create the main run loop: \(error)") }
    }

    static func mainLoop() throws(RLError) -> RLRunLoop {
        LoopRegistry.mainLock.lock()
        defer { LoopRegistry.mainLock.unlock() }
        if let m = LoopRegistry.mainLoop { return m }
        let m = try RLRunLoop(threadID: getpid(), isMain: true)
        LoopRegistry.mainLoop = m
        return m
    }

    /// Whether the calling thread is this loop's thread.
    var isOnLoopThread: Bool {
        if let p = pthread_getspecific(LoopRegistry.key) { return p == Unmanaged.passUnretained(self).toOpaque() }
        if isMainLoop && rl_is_main_thread() != 0 {
            pthread_setspecific(LoopRegistry.key, Unmanaged.passRetained(self).toOpaque())
            return true
        }
        return false
    }

    /// Called by the thread-exit destructor: empties every mode (calling source0 cancel callbacks)
    /// and drops queued blocks; the loop then only returns `finished`.
    func threadExited() {
        var cancels: [(RLSource0, RLMode)] = []
        locked {
            deallocating = true
            for m in modes.values {
                for s in m.sources0 { cancels.append((s, m.name)) }
                for s in m.sources1.values where FileIdentity.of(s.fd) == s.fileIdentity { Waiter.remove(m.epfd, s.fd) }
                // Observers and timers leave every mode and so belong to no loop (CF's
                // `__CFRunLoopDeallocateObservers` / `__CFRunLoopKillOneTimer`).
                for o in m.observers { o.state.withLock { s in s.modeCount = 0; s.loop = WeakLoop() } }
                m.sources0.removeAll(); m.sources1.removeAll(); m.observers.removeAll()
                m.hasSources0.store(false, ordering: .sequentiallyConsistent)
                m.observerMask.store(0, ordering: .sequentiallyConsistent)
                for t in m.timers.liveTimers() { t.state.withLock { s in s.memberships.removeAll(); s.loop = WeakLoop() } }
                m.timers = TimerQueue(mode: ObjectIdentifier(m))
            }
            for (s, _) in cancels { s.state.withLock { $0.loops.removeAll { $0.loop === self || $0.loop == nil } } }
            commonSources0.removeAll(); commonSources1.removeAll(); commonObservers.removeAll(); commonTimers.removeAll()
            source1ByID.removeAll()
            blocks.removeAll()
        }
        for (s, m) in cancels { s.cancel?(self, m) }
        RLTrace.loopDestroyed(loop: id, iteration: iteration, tid: threadID)
    }

    deinit {
        if !deallocating { RLTrace.loopDestroyed(loop: id, iteration: iteration, tid: threadID) }
    }

    // MARK: - Modes

    /// Finds (or creates) a mode. Called with the lock held.
    func modeLocked(_ name: RLMode, create: Bool) -> ModeState? {
        if name.isCommonModes { return nil }   // never a mode of the loop (no lookup, no string compare)
        if let u = lastMode, u._withUnsafeGuaranteedRef({ $0.name == name }) { return u.takeUnretainedValue() }
        if let m = modes[name] { lastMode = .passUnretained(m); return m }
        guard create else { return nil }
        let ep: Int32
        do { ep = try waiter.makeModeSet() } catch { fatalError("RunLoopCore: cannot create mode \(name): \(error)") }
        let m = ModeState(name: name, epfd: ep)
        m.isCommon = commonModeNames.contains(name)
        modes[name] = m
        lastMode = .passUnretained(m)
        if isMainLoop && commonModeNames.contains(name) { registerMainQueueLocked(m) }
        return m
    }

    /// Calls `body` with the mode named `name` (found or created as ``modeLocked(_:create:)`` does);
    /// nil when there is none. The hot paths use it: when the name is the last one looked up, the
    /// mode is lent to `body` without a retain/release pair. Called with the lock held.
    @inline(__always)
    func withModeLocked<R>(_ name: RLMode, create: Bool, _ body: (ModeState) -> R) -> R? {
        if name.isCommonModes { return nil }
        if let u = lastMode, u._withUnsafeGuaranteedRef({ $0.name == name }) { return u._withUnsafeGuaranteedRef(body) }
        return modeLocked(name, create: create).map(body)
    }

    /// Replaces a mode's epoll set by a fresh one holding exactly what the mode has: the only way to
    /// drop a registration whose fd was closed while another descriptor keeps its file open (epoll
    /// keeps it, and EPOLL_CTL_DEL can no longer name it). Rare: only after such a stale event.
    func rebuildModeSetLocked(_ m: ModeState) {
        guard let ep = try? waiter.makeModeSet() else { return }
        for s in m.sources1.values where FileIdentity.of(s.fd) == s.fileIdentity {
            try? Waiter.control(ep, EPOLL_CTL_ADD, s.fd, events: s.interest.rawValue, token: s.id)
        }
        let old = m.epfd
        m.epfd = ep
        if m.mainQueueRegistered {
            m.mainQueueRegistered = false
            registerMainQueueLocked(m)
        }
        close(old)
    }

    func registerMainQueueLocked(_ m: ModeState) {
        guard mainQueueFD >= 0, !m.mainQueueRegistered else { return }
        try? Waiter.control(m.epfd, EPOLL_CTL_ADD, mainQueueFD, events: UInt32(EPOLLIN.rawValue), token: Waiter.mainQueueToken)
        m.mainQueueRegistered = true
    }

    /// The mode the loop is running in, or nil when it is not running.
    public var currentMode: RLMode? { locked { currentModeState?.takeUnretainedValue().name } }

    /// Every mode the loop has (created by adding items or blocks to them).
    public var allModes: [RLMode] { locked { Array(modes.keys) } }

    /// The modes marked common (initially just ``RLMode/default``).
    public var commonModes: Set<RLMode> { locked { commonModeNames } }

    /// Marks `mode` common: every item added to ``RLMode/commonModes`` — now and later — is in it.
    /// Existing common items are copied into it. Like CF's `CFRunLoopAddCommonMode`, this records the
    /// name; the mode itself is created when a common item is copied into it (so marking a mode common
    /// while there is no common item creates no mode: see ``allModes``). Marking the pseudo-mode
    /// itself is ignored.
    public func addCommonMode(_ mode: RLMode) {
        guard !mode.isCommonModes else { return }
        var scheduled: [RLSource0] = []
        locked {
            guard !commonModeNames.contains(mode) else { return }
            commonModeNames.insert(mode)
            let hasItems = !commonSources0.isEmpty || !commonSources1.isEmpty || !commonObservers.isEmpty || !commonTimers.isEmpty
            // An existing mode becomes common at once; a missing one is created (common, with the
            // main queue's fd on the main loop: see `modeLocked`) only to receive common items.
            guard let m = modeLocked(mode, create: hasItems) else { return }
            m.isCommon = true
            if isMainLoop { registerMainQueueLocked(m) }
            for s in commonSources0 where addSource0Locked(s, m) { scheduled.append(s) }
            for s in commonSources1 { try? addSource1Locked(s, m) }
            for o in commonObservers { addObserverLocked(o, m) }
            for t in commonTimers.values { addTimerLocked(t, m) }
        }
        for s in scheduled { s.schedule?(self, mode) }
    }

    /// Every mode an addition to `mode` lands in (the common modes for the pseudo-mode).
    private func targetModesLocked(_ mode: RLMode) -> [ModeState] {
        if mode.isCommonModes { return commonModeNames.map { modeLocked($0, create: true)! } }
        return [modeLocked(mode, create: true)!]
    }

    // MARK: - Source0 registration

    /// Adds a source0 to `mode` (or to every common mode). Calls its `schedule` callback for each
    /// mode it newly joins. Adding an invalidated source, or one already there, does nothing (CF).
    public func add(_ source: RLSource0, forMode mode: RLMode) {
        guard source.isValid else { return }
        var joined: [RLMode] = []
        locked {
            if mode.isCommonModes {
                if commonSources0.contains(where: { $0 === source }) { return }
                commonSources0.append(source)
            }
            for m in targetModesLocked(mode) where addSource0Locked(source, m) { joined.append(m.name) }
            // The source's loop list is kept exact under this loop's lock (order: loop, then source).
            if !joined.isEmpty {
                source.state.withLock { s in
                    if !s.loops.contains(where: { $0.loop === self }) { s.loops.append(WeakLoop(loop: self)) }
                }
            }
        }
        for m in joined {
            RLTrace.itemAdded(loop: id, iteration: iteration, kind: .source0, item: source.id, name: source.name ?? "", mode: m.rawValue)
            source.schedule?(self, m)
        }
    }

    @discardableResult
    func addSource0Locked(_ s: RLSource0, _ m: ModeState) -> Bool {
        if m.sources0.contains(where: { $0 === s }) { return false }
        m.sources0.append(s)
        m.hasSources0.store(true, ordering: .sequentiallyConsistent)
        return true
    }

    /// Removes a source0 from `mode` (or from every common mode), calling `cancel` for each mode it
    /// leaves. Removing what was never added does nothing (CF).
    public func remove(_ source: RLSource0, forMode mode: RLMode) {
        var left: [RLMode] = []
        locked {
            var targets: [ModeState] = []
            if mode.isCommonModes {
                guard let i = commonSources0.firstIndex(where: { $0 === source }) else { return }
                commonSources0.remove(at: i)
                targets = commonModeNames.compactMap { modes[$0] }
            } else if let m = modeLocked(mode, create: false) {
                targets = [m]
            }
            for m in targets {
                if let i = m.sources0.firstIndex(where: { $0 === source }) {
                    m.sources0.remove(at: i)
                    m.hasSources0.store(!m.sources0.isEmpty, ordering: .sequentiallyConsistent)
                    left.append(m.name)
                }
            }
            if !left.isEmpty && !commonSources0.contains(where: { $0 === source })
                && !modes.values.contains(where: { $0.sources0.contains { $0 === source } }) {
                source.state.withLock { s in s.loops.removeAll { $0.loop === self || $0.loop == nil } }
            }
        }
        for m in left {
            RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .source0, item: source.id, name: source.name ?? "", mode: m.rawValue)
            source.cancel?(self, m)
        }
    }

    /// Whether `mode` holds `source`.
    public func contains(_ source: RLSource0, inMode mode: RLMode) -> Bool {
        locked {
            if mode.isCommonModes { return commonSources0.contains { $0 === source } }
            return modes[mode]?.sources0.contains { $0 === source } ?? false
        }
    }

    func removeEverywhere(_ source: RLSource0) {
        remove(source, forMode: .commonModes)
        let names = locked { modes.values.filter { $0.sources0.contains { $0 === source } }.map(\.name) }
        for n in names { remove(source, forMode: n) }
    }

    // MARK: - Source1 registration

    /// Adds a source1 to `mode` (or every common mode): its fd joins the mode's epoll set.
    /// Throws ``RLError/notPollable(_:)`` for a regular file, ``RLError/badFileDescriptor(_:)`` for a
    /// closed fd, ``RLError/belongsToAnotherLoop(_:)`` if another loop has it. An invalidated
    /// source is ignored (CF).
    public func add(_ source: RLSource1, forMode mode: RLMode) throws(RLError) {
        guard source.isValid else { return }
        let owner: RLRunLoop?? = source.state.withLock { s in
            if s.loop.bound { return .some(s.loop.loop) }
            s.loop = WeakLoop(loop: self)
            return .none
        }
        if case .some(let o) = owner, o !== self { throw RLError.belongsToAnotherLoop("source1 #\(source.id)") }
        var joined: [RLMode] = []
        var failure: RLError?
        locked {
            if mode.isCommonModes {
                if commonSources1.contains(where: { $0 === source }) { return }
            }
            for m in targetModesLocked(mode) {
                if m.sources1[source.id] != nil { continue }
                do { try addSource1Locked(source, m); joined.append(m.name) } catch let e as RLError {
                    failure = e
                    break
                } catch {
                    break
                }
            }
            if failure == nil && mode.isCommonModes { commonSources1.append(source) }
            if let _ = failure {
                for n in joined { if let m = modes[n] { removeSource1Locked(source, m) } }
                joined.removeAll()
            }
        }
        if let failure { throw failure }
        for m in joined {
            RLTrace.itemAdded(loop: id, iteration: iteration, kind: .source1, item: source.id, name: source.name ?? "", mode: m.rawValue)
        }
    }

    func addSource1Locked(_ s: RLSource1, _ m: ModeState) throws(RLError) {
        if m.sources1[s.id] != nil { return }
        try Waiter.control(m.epfd, EPOLL_CTL_ADD, s.fd, events: s.interest.rawValue, token: s.id)
        m.sources1[s.id] = s
        source1ByID[s.id] = s
    }

    func removeSource1Locked(_ s: RLSource1, _ m: ModeState) {
        guard m.sources1.removeValue(forKey: s.id) != nil else { return }
        // Only while the fd still refers to the source's file: a closed-and-reused number belongs to
        // someone else now (the kernel dropped the old registration if the file was closed for good;
        // if a dup keeps it open, the stale registration is cleared when it next fires).
        if FileIdentity.of(s.fd) == s.fileIdentity { Waiter.remove(m.epfd, s.fd) }
        if !modes.values.contains(where: { $0.sources1[s.id] != nil }) { source1ByID.removeValue(forKey: s.id) }
    }

    /// Removes a source1 from `mode` (or every common mode). Never closes the fd.
    public func remove(_ source: RLSource1, forMode mode: RLMode) {
        var left: [RLMode] = []
        locked {
            var targets: [ModeState] = []
            if mode.isCommonModes {
                guard let i = commonSources1.firstIndex(where: { $0 === source }) else { return }
                commonSources1.remove(at: i)
                targets = commonModeNames.compactMap { modes[$0] }
            } else if let m = modeLocked(mode, create: false) { targets = [m] }
            for m in targets where m.sources1[source.id] != nil {
                removeSource1Locked(source, m)
                left.append(m.name)
            }
        }
        for m in left { RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .source1, item: source.id, name: source.name ?? "", mode: m.rawValue) }
    }

    /// Whether `mode` holds `source`.
    public func contains(_ source: RLSource1, inMode mode: RLMode) -> Bool {
        locked {
            if mode.isCommonModes { return commonSources1.contains { $0 === source } }
            return modes[mode]?.sources1[source.id] != nil
        }
    }

    func removeEverywhere(_ source: RLSource1) {
        remove(source, forMode: .commonModes)
        let names = locked { modes.values.filter { $0.sources1[source.id] != nil }.map(\.name) }
        for n in names { remove(source, forMode: n) }
    }

    // MARK: - Observer registration

    /// Adds an observer to `mode` (or every common mode). An observer belongs to one loop: adding it
    /// to another, or adding an invalidated one, does nothing (CF).
    public func add(_ observer: RLObserver, forMode mode: RLMode) {
        guard mayJoin(observer) else { return }
        // (One mode, the usual case, is found once and recorded inline: no array per call.)
        var joined = ModeNames()
        locked {
            if mode.isCommonModes {
                if commonObservers.contains(where: { $0 === observer }) { return }
                commonObservers.append(observer)
                for m in targetModesLocked(mode) where addObserverLocked(observer, m) { joined.append(m) }
            } else if let m = modeLocked(mode, create: true), addObserverLocked(observer, m) {
                joined.append(m)
            }
        }
        for m in joined { RLTrace.itemAdded(loop: id, iteration: iteration, kind: .observer, item: observer.id, name: observer.name ?? "", mode: m.rawValue) }
    }

    /// Whether `o` may join this loop's modes: valid, and bound to this loop or to none (CF's
    /// `CFRunLoopAddObserver` check; the binding itself is made by ``addObserverLocked(_:_:)``).
    private func mayJoin(_ o: RLObserver) -> Bool {
        o.state.withLock { s in s.valid && (!s.loop.bound || s.loop.isBound(to: self)) }
    }

    /// Adds an observer to one mode: binds it to this loop when it joins its first mode (CF's
    /// `__CFRunLoopObserverSchedule`); refused when invalid or bound to another loop.
    @discardableResult
    func addObserverLocked(_ o: RLObserver, _ m: ModeState) -> Bool {
        if m.observers.contains(where: { $0 === o }) { return false }
        let joined = o.state.withLock { s -> Bool in
            guard s.valid, s.loop.claim(self) else { return false }
            s.modeCount += 1
            return true
        }
        guard joined else { return false }
        // After every observer of lower or equal order: ties keep insertion order.
        let i = m.observers.firstIndex(where: { $0.order > o.order }) ?? m.observers.count
        m.observers.insert(o, at: i)
        m.observerMask.bitwiseOr(o.activities.rawValue, ordering: .sequentiallyConsistent)
        return true
    }

    /// Removes an observer from `mode` (or every common mode). Out of all of this loop's modes, it
    /// belongs to no loop any more and may be added to another (CF).
    public func remove(_ observer: RLObserver, forMode mode: RLMode) {
        var left = ModeNames()
        locked {
            if mode.isCommonModes {
                guard let i = commonObservers.firstIndex(where: { $0 === observer }) else { return }
                commonObservers.remove(at: i)
                for m in commonModeNames.compactMap({ modes[$0] }) where removeObserverLocked(observer, m) { left.append(m) }
            } else if let m = modeLocked(mode, create: false), removeObserverLocked(observer, m) {
                left.append(m)
            }
        }
        for m in left { RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .observer, item: observer.id, name: observer.name ?? "", mode: m.rawValue) }
    }

    /// Takes an observer out of one mode; returns whether it was there.
    private func removeObserverLocked(_ observer: RLObserver, _ m: ModeState) -> Bool {
        guard let i = m.observers.firstIndex(where: { $0 === observer }) else { return false }
        m.observers.remove(at: i)
        m.observerMask.store(m.observers.reduce(0) { $0 | $1.activities.rawValue }, ordering: .sequentiallyConsistent)
        // Out of its last mode: no longer bound to this loop (CF's `__CFRunLoopObserverCancel`).
        observer.state.withLock { s in
            s.modeCount -= 1
            if s.modeCount == 0 { s.loop = WeakLoop() }
        }
        return true
    }

    /// Whether `mode` holds `observer`.
    public func contains(_ observer: RLObserver, inMode mode: RLMode) -> Bool {
        locked {
            if mode.isCommonModes { return commonObservers.contains { $0 === observer } }
            return modes[mode]?.observers.contains { $0 === observer } ?? false
        }
    }

    func removeEverywhere(_ observer: RLObserver) {
        remove(observer, forMode: .commonModes)
        let names = locked { modes.values.filter { $0.observers.contains { $0 === observer } }.map(\.name) }
        for n in names { remove(observer, forMode: n) }
    }

    // MARK: - Timer registration

    /// Adds a timer to `mode` (or every common mode). A timer belongs to one loop while it is in any
    /// of its modes: adding it to another, or adding an invalidated one, does nothing (CF). O(log n).
    public func add(_ timer: RLTimer, forMode mode: RLMode) {
        var joined = ModeNames()
        locked {
            // The usual case, a mode the loop has: the timer is claimed for this loop and joins the
            // mode in one section of its lock (`addTimerLocked`).
            let added = withModeLocked(mode, create: false) { m in
                if addTimerLocked(timer, m) { joined.append(m) }
            }
            if added != nil {
                rearmIfSleepingLocked()
                return
            }
            // Otherwise check it first: an invalidated timer, or another loop's, creates no mode
            // (`addTimerLocked` binds it when it joins a mode).
            guard timer.state.withLock({ $0.valid && (!$0.loop.bound || $0.loop.isBound(to: self)) }) else { return }
            if let m = modeLocked(mode, create: true) {
                if addTimerLocked(timer, m) { joined.append(m) }
            } else {
                // The common pseudo-mode (the one name `modeLocked` never creates): every common mode.
                if commonTimers[ObjectIdentifier(timer)] != nil { return }
                commonTimers[ObjectIdentifier(timer)] = timer
                for m in targetModesLocked(.commonModes) where addTimerLocked(timer, m) { joined.append(m) }
            }
            rearmIfSleepingLocked()
        }
        for m in joined { RLTrace.itemAdded(loop: id, iteration: iteration, kind: .timer, item: timer.id, name: timer.name ?? "", mode: m.rawValue) }
    }

    /// Adds a timer to one mode: claims it for this loop (a timer belongs to one loop; invalidated
    /// ones are refused) and records the membership in one section of its lock, then queues it.
    @discardableResult
    func addTimerLocked(_ t: RLTimer, _ m: ModeState) -> Bool {
        nextStamp &+= 1
        let stamp = nextStamp
        let mid = ObjectIdentifier(m)
        let joined: (UInt64, UInt64)? = t.state.withLock { s in
            guard s.valid, s.loop.claim(self) else { return nil }
            if s.memberships.stamp(in: mid) != nil { return nil }
            s.memberships.append(TimerMemberships.Membership(mode: m, stamp: stamp))
            return (s.fireNs, s.toleranceNs)
        }
        guard let (fire, tol) = joined else { return false }
        m.timers.insert(t, fireNs: fire, toleranceNs: tol, stamp: stamp, isNew: true)
        return true
    }

    /// Removes a timer from one mode; out of its last mode it is no longer bound to this loop (CF's
    /// `CFRunLoopRemoveTimer`): a due timer removed so by an earlier callout of the pass does not fire.
    func removeTimerLocked(_ t: RLTimer, _ m: ModeState) -> Bool {
        let removed = t.state.withLock { s -> Bool in
            guard s.memberships.remove(m) else { return false }
            if s.memberships.isEmpty { s.loop = WeakLoop() }
            return true
        }
        guard removed else { return false }
        m.timers.removed()
        return true
    }

    /// Removes a timer from `mode` (or every common mode). If it was the next to fire, the wake-up
    /// timer is re-armed at once (no spurious wake, unlike CF on Linux). Out of all of this loop's
    /// modes, it belongs to no loop any more and may be added to another (CF).
    public func remove(_ timer: RLTimer, forMode mode: RLMode) {
        var left = ModeNames()
        locked {
            // A mode the loop has (no array, no name comparison), or else the common pseudo-mode.
            let found = withModeLocked(mode, create: false) { m in
                if removeTimerLocked(timer, m) { left.append(m) }
            }
            if found == nil && mode.isCommonModes {
                guard commonTimers.removeValue(forKey: ObjectIdentifier(timer)) != nil else { return }
                for m in commonModeNames.compactMap({ modes[$0] }) where removeTimerLocked(timer, m) { left.append(m) }
            }
            rearmIfSleepingLocked()
        }
        for m in left { RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .timer, item: timer.id, name: timer.name ?? "", mode: m.rawValue) }
    }

    /// Whether `mode` holds `timer` (false when the timer is not bound to this loop, as in CF's
    /// `CFRunLoopContainsTimer`).
    public func contains(_ timer: RLTimer, inMode mode: RLMode) -> Bool {
        locked {
            guard timer.state.withLock({ $0.loop.isBound(to: self) }) else { return false }
            if mode.isCommonModes { return commonTimers[ObjectIdentifier(timer)] != nil }
            return modes[mode]?.timers.contains(timer) ?? false
        }
    }

    /// Removes a timer from every mode of this loop in one pass (invalidation).
    func removeEverywhere(_ timer: RLTimer) {
        var left = TimerMemberships()
        locked {
            commonTimers.removeValue(forKey: ObjectIdentifier(timer))
            left = timer.state.withLock { s in
                let ms = s.memberships
                s.memberships.removeAll()
                if s.loop.isBound(to: self) { s.loop = WeakLoop() }
                return ms
            }
            left.forEach { $0.mode.timers.removed() }
            rearmIfSleepingLocked()
        }
        left.forEach { m in
            RLTrace.itemRemoved(loop: id, iteration: iteration, kind: .timer, item: timer.id, name: timer.name ?? "", mode: m.mode.name.rawValue)
        }
    }

    /// Applies `change` to a timer of this loop and repositions it in every mode it is in (a firing
    /// timer too: its new place is ignored while its callout runs). Returns false, changing nothing,
    /// when the timer is not (any more) bound to this loop.
    func reschedule(_ t: RLTimer, _ change: (inout RLTimer.State) -> Void) -> Bool {
        var fire: UInt64 = 0, interval: UInt64 = 0
        let bound: Bool = locked {
            var tol: UInt64 = 0
            var bound = true
            let ms: TimerMemberships = t.state.withLock { s in
                guard s.loop.isBound(to: self) else { bound = false; return TimerMemberships() }
                change(&s)
                fire = s.fireNs
                interval = s.intervalNs
                tol = s.toleranceNs
                guard s.valid else { return TimerMemberships() }
                s.memberships.restamp { nextStamp &+= 1; return nextStamp }
                return s.memberships
            }
            guard bound else { return false }
            ms.forEach { $0.mode.timers.insert(t, fireNs: fire, toleranceNs: tol, stamp: $0.stamp, isNew: false) }
            rearmIfSleepingLocked()
            return true
        }
        guard bound else { return false }
        RLTrace.timerArmed(loop: id, iteration: iteration, item: t.id, name: t.name ?? "", fireNs: fire, intervalNs: interval, missedFires: 0)
        return true
    }

    /// The next fire date of `mode`'s first timer (CF's `CFRunLoopGetNextTimerFireDate`): its
    /// ``RLTimer/nextFireDate`` — the date as given, even a past one — where timers are taken in
    /// the order they fire, a timer whose callout is running included. Nil when the mode does not
    /// exist or has no timer (CF returns 0), and for ``RLMode/commonModes`` (not a mode). Any thread.
    public func nextTimerFireDate(forMode mode: RLMode) -> RLInstant? {
        let first: RLTimer? = locked { modes[mode].flatMap { m in m.timers.first() } }
        guard let first else { return nil }
        let date = first.state.withLock { $0.valid ? $0.dateNs : 0 }
        return RLInstant(nanoseconds: date)
    }

    /// Foundation's `RunLoop.limitDate(forMode:)`: polls `mode` once (firing due timers, running
    /// queued blocks and signalled sources, returning after the first source handled), then returns
    /// nil if the mode has nothing to wait for (missing or empty), ``RLInstant/distantFuture`` if it
    /// has no timer, else ``nextTimerFireDate(forMode:)``. Nil when called on another thread than the
    /// loop's (Foundation's rule).
    public func limitDate(forMode mode: RLMode) -> RLInstant? {
        guard isOnLoopThread else { return nil }
        _ = runSpecific(mode: mode, seconds: -10, stopAfterHandle: true)
        if isFinished(mode) { return nil }
        return nextTimerFireDate(forMode: mode) ?? .distantFuture
    }

    /// Whether a run of `mode` would return ``RLRunResult/finished`` at once: the mode does not
    /// exist, is the common pseudo-mode, or has no source, timer or block for it (CF's
    /// `_CFRunLoopFinished`, which Foundation's `run(mode:before:)` and `limitDate(forMode:)` use).
    /// Any thread.
    public func isFinished(_ mode: RLMode) -> Bool {
        locked { deallocating || (modeLocked(mode, create: false).map { isEmptyLocked($0) } ?? true) }
    }

    /// While the loop sleeps, keeps the timerfd armed for the running mode's earliest deadline.
    func rearmIfSleepingLocked() {
        guard sleeping, let m = currentModeState?.takeUnretainedValue() else { return }
        waiter.arm(min(m.timers.hardDeadline(), perRun[perRun.count - 1].deadline))
    }

    // MARK: - Blocks

    /// Queues `block` to run when the loop next runs `mode` (CF's `CFRunLoopPerformBlock`). Does
    /// **not** wake the loop. ``RLMode/commonModes`` means any common mode.
    public func performBlock(forMode mode: RLMode, name: String? = nil, _ block: @escaping () -> Void) {
        let id = RLIDs.make()
        locked {
            // `modeLocked` finds or creates any mode but the common pseudo-mode (nil).
            let target: BlockItem.Target = withModeLocked(mode, create: true) { .mode(ObjectIdentifier($0)) } ?? .common
            blocks.append(BlockItem(target: target, id: id, name: name, body: block))
        }
    }

    /// Queues `block` for any of `modes` (CF's `CFRunLoopPerformBlock` with a set). Does not wake.
    public func performBlock(forModes modes: Set<RLMode>, name: String? = nil, _ block: @escaping () -> Void) {
        if modes.count == 1 { return performBlock(forMode: modes.first!, name: name, block) }
        let id = RLIDs.make()
        locked {
            for m in modes { _ = modeLocked(m, create: true) }
            blocks.append(BlockItem(target: .many(modes), id: id, name: name, body: block))
        }
    }

    /// Runs `block` on the loop's thread in any common mode, and wakes the loop (the
    /// `performSelector:onThread:` pattern).
    public func perform(name: String? = nil, _ block: @escaping () -> Void) {
        performBlock(forMode: .commonModes, name: name, block)
        wakeUp()
    }

    /// Runs `block` when the loop is next in one of `modes`, and wakes the loop.
    public func perform(inModes modes: [RLMode], name: String? = nil, _ block: @escaping () -> Void) {
        performBlock(forModes: Set(modes), name: name, block)
        wakeUp()
    }

    /// Runs `block` after `delay` in `modes`, through a one-shot timer (so it needs a running loop,
    /// as in CF's `performSelector:afterDelay:`). Returns the timer, which can be invalidated.
    @discardableResult
    public func perform(after delay: Duration, inModes modes: [RLMode] = [.default], name: String? = nil,
                        _ block: @escaping () -> Void) -> RLTimer {
        let t = RLTimer(fireAt: .now + delay, name: name) { _ in block() }
        for m in modes { add(t, forMode: m) }
        return t
    }

    // MARK: - Control

    /// Wakes the loop if it is waiting (or makes its next wait return at once). Dropped while the
    /// loop is ignoring wake-ups (between a wake and its next iteration, or when not running).
    public func wakeUp() {
        // The flag is an atomic read without the lock (the waker never holds the lock the woken
        // loop is about to take); sequentially consistent with the loop's store at the top of each
        // pass, so either the loop's checks see the caller's work or this read sees "accepting".
        // A wake-up racing with the loop's own wake stays pending in the eventfd and ends the next
        // wait at once: never lost, at worst one extra pass.
        let accepted = !ignoresWakeUps.load(ordering: .sequentiallyConsistent)
        // Traced before the write, so the request always precedes the loop's `wake` in a trace.
        RLTrace.wakeUpRequested(loop: id, iteration: iteration, accepted: accepted)
        if accepted { waiter.wake() }
    }

    /// Stops the innermost running activation (it returns ``RLRunResult/stopped``) and wakes it.
    /// On a loop that is not running it does nothing that a later run sees (CF).
    public func stop() {
        locked { perRun[perRun.count - 1].stopped = true }
        wakeUp()
    }

    /// Whether the loop is blocked waiting for something to happen.
    public var isWaiting: Bool { locked { sleeping } }

    /// Runs the loop in the default mode until it is stopped or has nothing to wait for
    /// (CF's `CFRunLoopRun`).
    public func run() {
        while true {
            let r = run(mode: .default, seconds: 1e10, returnAfterSourceHandled: false)
            if r == .stopped || r == .finished { return }
        }
    }

    /// Runs the loop once in `mode` (CF's `CFRunLoopRunInMode` / `CFRunLoopRunSpecific`).
    /// - Parameters:
    ///   - seconds: ≤ 0 polls (one pass, no sleep); larger values are a timeout; past ~16 years means
    ///     none. NaN is a programming error (precondition).
    ///   - returnAfterSourceHandled: return after one source (source0, source1 or the main queue)
    ///     was handled; timers never count.
    /// - Returns: why it returned. An invalid mode (the common pseudo-mode) or a missing or empty
    ///   mode returns ``RLRunResult/finished`` at once without calling entry/exit observers.
    /// - Precondition: called on the loop's own thread.
    @discardableResult
    public func run(mode: RLMode, seconds: Double, returnAfterSourceHandled: Bool) -> RLRunResult {
        precondition(!seconds.isNaN, "RunLoopCore: run(mode:seconds:) needs a timeout, not NaN")
        precondition(isOnLoopThread, "RunLoopCore: run() must be called on the loop's own thread (loop of tid \(threadID) called from tid \(rl_gettid()))")
        return runSpecific(mode: mode, seconds: seconds, stopAfterHandle: returnAfterSourceHandled)
    }

    /// Runs `mode` until `date` (`Foundation.RunLoop.run(mode:before:)`'s shape). A date in the past
    /// is a true poll (unlike CF on Linux).
    @discardableResult
    public func run(mode: RLMode, until date: RLInstant) -> RLRunResult {
        let now = RLInstant.now
        let secs = date <= now ? 0 : Double(date.nanoseconds - now.nanoseconds) / 1e9
        return run(mode: mode, seconds: secs, returnAfterSourceHandled: true)
    }
}

/// The per-thread loop registry (thread-specific data with a destructor, as CF uses).
enum LoopRegistry {
    static let key: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k) { p in
            guard let p else { return }
            let loop = Unmanaged<RLRunLoop>.fromOpaque(p).takeRetainedValue()
            if !loop.isMainLoop { loop.threadExited() }
        }
        return k
    }()
    nonisolated(unsafe) static var mainLoop: RLRunLoop?
    static let mainLock = PThreadMutex()
}

/// A plain mutex for the registry (a static `Mutex` cannot return its class value easily).
final class PThreadMutex: @unchecked Sendable {
    private let m: UnsafeMutablePointer<pthread_mutex_t>
    init() {
        m = .allocate(capacity: 1)
        pthread_mutex_init(m, nil)
    }
    func lock() { pthread_mutex_lock(m) }
    func unlock() { pthread_mutex_unlock(m) }
}
