#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization
import RunLoopTracing

/// A run loop: CFRunLoop re-implemented in Swift for Linux, with CF's semantics (see
/// `docs/divergences.md` for the few places it deliberately differs).
///
/// There is one loop per thread, created on first request (``current``); the main thread's loop
/// (``main``) exists as soon as any loop is requested and services `DispatchQueue.main` (and so
/// `@MainActor`) while it runs in a common mode. A loop is destroyed when its thread exits.
/// Registration, ``wakeUp()``, ``stop()`` and the perform functions may be called from any thread;
/// ``run(mode:seconds:returnAfterSourceHandled:)`` only on the loop's own thread.
public final class RLRunLoop: @unchecked Sendable, CustomStringConvertible {
    /// The trace's `loop_id`: the process id in the high 32 bits and the loop's number in its
    /// process (1, 2, …) in the low ones, so unique across the processes of a trace.
    public let id: UInt64
    /// The kernel thread id of the loop's thread.
    public let threadID: Int32
    /// Whether this is the main thread's loop.
    public let isMainLoop: Bool

    let waiter: Waiter
    let mainQueueFD: Int32
    /// The loop's lock (see ``RLLock``: an atomic word, waiters parked on a semaphore; why not `Mutex`).
    let lock = RLLock()
    /// What items bound to this loop hold (see ``LoopHandle``; timers hold it unretained, see
    /// ``TimerBinding``).
    let handle: LoopHandle
    /// The handle's address: a timer bound to this loop holds exactly these bits.
    let handleBits: UInt
    /// CF's per-run `ignoreWakeUps` of the innermost activation (true while the loop is not running,
    /// and from a wake to the next pass). Written only on the loop's thread; read by ``wakeUp()`` on
    /// any thread without taking the lock.
    let ignoresWakeUps = Atomic<Bool>(true)
    /// Whether a stop flag may be set: set (under the lock) with every stop flag — a per-run
    /// `stopped` or a mode's `stopped` — and recomputed under the lock when step 0 consumes one, so
    /// step 0 of a run nobody stopped reads it alone, without the lock. Never false while a flag of a
    /// running activation is set: a stop made before step 0 (on the loop's thread, or on another one
    /// synchronised with it) is seen by its load; one racing with it is one that came just after.
    let stopRequested = Atomic<Bool>(false)

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
    /// The perform-blocks queued by other threads, and by the loop's own thread when it cannot use
    /// ``ownBlocks``. Every block of ``ownBlocks`` was queued before every block of this queue.
    let blocks = BlockQueue<BlockItem>()
    /// Whether ``blocks`` holds a block. Written under the lock whenever `blocks` changes; read by
    /// the loop's thread without it (a perform-block there, and a drain that finds nothing shared).
    /// Any load sees a store that happened before it (coherence), so a block another thread queued
    /// before the loop's thread posts (or drains) is always seen.
    let hasSharedBlocks = Atomic<Bool>(false)
    @exclusivity(unchecked) var sleeping = false
    @exclusivity(unchecked) var deallocating = false
    @exclusivity(unchecked) var nextStamp: UInt64 = 0
    /// The ids of the blocks of ``blocks`` (taken with the lock held).
    @exclusivity(unchecked) var blockIDs = RLIDRange()
    @exclusivity(unchecked) var source1ByID: [UInt64: RLSource1] = [:]
    /// Epoll sets the main queue's fd was taken out of while its drain was running (re-added after).
    @exclusivity(unchecked) var mainQueueSuspended: [ModeState] = []
    /// The mode ``modeLocked(_:create:)`` found last: almost every lookup (a run, a perform-block,
    /// a timer added) names the same mode as the one before, and a name equal to it in storage is
    /// recognised without hashing. Modes are never removed, so it never goes stale; it is held
    /// unretained (`modes` owns it), so using it costs no retain/release either.
    @exclusivity(unchecked) var lastMode: Unmanaged<ModeState>?

    // MARK: Written only on the loop's thread
    /// The iteration the loop is in (per loop, numbered across runs): set by each pass, and given
    /// back to the enclosing pass when a run nested in one of its callouts returns, so what that
    /// pass emits after the nested run (a callout's exit, a timer re-armed after its fire, an item
    /// removed) carries its own number. Between top-level runs, the last pass's. Only the loop's
    /// thread writes it; other threads read it (relaxed) to stamp their cross-thread events:
    /// signal, wakeUp, registration.
    let iterationCounter = Atomic<UInt64>(0)
    /// The current value of ``iterationCounter``.
    var iteration: UInt64 { iterationCounter.load(ordering: .relaxed) }
    /// The last iteration number given to a pass (numbers are never reused: a pass after a nested
    /// run continues from the nested run's last). Loop's thread only.
    @exclusivity(unchecked) var lastIteration: UInt64 = 0
    /// What the loop's thread is doing, for the hang watchdog (see `Watch` in Watchdog.swift): relaxed
    /// stores on the loop's thread only, read by the watchdog's thread.
    let watchWord = Atomic<UInt64>(0)

    // MARK: Touched only on the loop's thread
    @exclusivity(unchecked) var calloutCount: UInt32 = 0
    @exclusivity(unchecked) var depth: UInt32 = 0
    @exclusivity(unchecked) var inMainQueueCallout = false
    @exclusivity(unchecked) var observerScratch: [[RLObserver]] = []
    @exclusivity(unchecked) var source0Scratch: [[RLSource0]] = []
    @exclusivity(unchecked) var timerScratch: [[RLTimer]] = []
    /// The empty queues ``doBlocks(_:)`` swaps in for the queue it takes, and drains (`let`s: using
    /// them costs no retain): for `blocks`, and for ``ownBlocks`` drained alone.
    let drainQueues = DrainQueues<BlockItem>()
    let ownDrainQueues = DrainQueues<OwnBlockItem>()
    /// Unnamed perform-blocks the loop's own thread queued for one mode while ``blocks`` was empty:
    /// appended and drained by that thread alone, without the lock (a block queued by a block, a
    /// timer or a source of the loop is the usual case). Two rules keep CF's one FIFO across
    /// threads: a block goes here only while `blocks` is empty and every block here is for the same
    /// mode (otherwise it goes to `blocks`, after these), and a drain takes these before those of
    /// `blocks`. So the blocks here always precede those of `blocks`, and the two queues read in
    /// that order are the one queue CF has (`EngineFastPathTests.ownThreadBlocksKeepOneFIFOWithOtherThreads`,
    /// `ownAndOtherThreadBlocksRaceWithoutLoss`).
    ///
    /// Safety (no lock): only the thread whose `pthread_self()` (`rl_thread_self()`) is ``ownerThread`` appends to,
    /// drains or empties this queue, and `ownerThread` names only the loop's thread (set where the
    /// loop is bound to it as its thread's loop, cleared when that thread exits).
    let ownBlocks = BlockQueue<OwnBlockItem>()
    /// The mode (its `ObjectIdentifier`'s bits) every block of ``ownBlocks`` is for; 0 when it is
    /// empty. Written on the loop's thread; read on any thread by ``isEmptyLocked(_:)`` (which, for
    /// `ownBlocks`, needs only this: its blocks are all for this one mode).
    let ownBlocksMode = Atomic<UInt>(0)
    /// The same mode, as a reference (held unretained: `modes` owns it). Loop's thread only.
    @exclusivity(unchecked) var ownBlocksTarget: Unmanaged<ModeState>?
    /// The loop's thread (its `pthread_t`), once the loop is bound to it; 0 before, and after it
    /// exited. Lets a perform-block tell its own thread's loop with one load and `rl_thread_self()`.
    let ownerThread = Atomic<UInt>(0)
    /// The mode the loop's thread last queued a block for (held unretained: `modes` owns every mode
    /// and never removes one).
    @exclusivity(unchecked) var ownBlockModeCache: Unmanaged<ModeState>?
    /// The ids of the blocks of ``ownBlocks`` (taken on the loop's thread).
    @exclusivity(unchecked) var ownBlockIDs = RLIDRange()
    /// The block names this loop's thread last traced, in front of the process's pool
    /// (``RLBlockNames``; touched only on the loop's thread, while a session records blocks).
    @exclusivity(unchecked) var blockNameCache = RLBlockNameCache()

    init(threadID: Int32, isMain: Bool) throws(RLError) {
        self.id = RLIDs.makeLoop()
        self.threadID = threadID
        self.isMainLoop = isMain
        let h = LoopHandle()
        self.handle = h
        self.handleBits = UInt(bitPattern: Unmanaged.passUnretained(h).toOpaque())
        self.waiter = try Waiter()
        self.mainQueueFD = isMain ? _dispatch_get_main_queue_handle_4CF() : -1
        // The base per-run data ignores wake-ups: a loop that is not running drops them (CF).
        self.perRun = [PerRun(stopped: false, outerIgnoresWakeUps: true, deadline: .max)]
        self.perRun.reserveCapacity(8)
        handle.loop = self
        handle.liveID.store(id, ordering: .relaxed)
        // Like CF, every loop has its default mode from birth (so the main loop can run it empty);
        // made here with the error thrown (out of descriptors), not trapped.
        let ep = try waiter.makeWaitSet()
        let m = ModeState(name: .default, waitSet: ep)
        m.isCommon = true
        if isMain { registerMainQueueLocked(m) }
        modes[.default] = m
        RLTrace.loopCreated(loop: id, iteration: iteration, tid: threadID, threadName: RLRunLoop.threadName())
        RLTrace.loopInfo(loop: id, pid: getpid(), tid: threadID, procname: RLRunLoop.processName(), threadName: RLRunLoop.threadName())
    }

    /// The process's name as LTTng's `procname` context has it: its main thread's name (`comm`,
    /// at most 15 bytes), read from /proc once.
    static let processNameOnce: String = readComm("/proc/self/comm")
    static func processName() -> String { processNameOnce }

    /// The loop's thread's name now, read from /proc (from any thread).
    var watchedThreadName: String { RLRunLoop.readComm("/proc/self/task/\(threadID)/comm") }

    static func readComm(_ path: String) -> String {
        guard let f = fopen(path, "r") else { return "" }
        defer { fclose(f) }
        var buf = [CChar](repeating: 0, count: 64)
        guard fgets(&buf, 64, f) != nil else { return "" }
        var bytes = buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        if bytes.last == 10 { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
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
        loop.ownerThread.store(rl_thread_self(), ordering: .relaxed)
        return loop
    }

    /// The main thread's loop (created on first request, from any thread).
    public static var main: RLRunLoop {
        do { return try mainLoop() } catch { fatalError("RunLoopCore: cannot create the main run loop: \(error)") }
    }

    static func mainLoop() throws(RLError) -> RLRunLoop {
        // Made once and never freed (`LoopRegistry.mainLoop` keeps it): read without the lock
        // once it exists (see `LoopRegistry.mainLoopAddress`).
        let made = LoopRegistry.mainLoopAddress.load(ordering: .acquiring)
        if made != 0 { return Unmanaged<RLRunLoop>.fromOpaque(UnsafeRawPointer(bitPattern: made)!).takeUnretainedValue() }
        LoopRegistry.mainLock.lock()
        defer { LoopRegistry.mainLock.unlock() }
        if let m = LoopRegistry.mainLoop { return m }
        let m = try RLRunLoop(threadID: getpid(), isMain: true)
        LoopRegistry.mainLoop = m
        LoopRegistry.mainLoopAddress.store(UInt(bitPattern: Unmanaged.passUnretained(m).toOpaque()), ordering: .releasing)
        return m
    }

    /// Whether the calling thread is this loop's thread.
    var isOnLoopThread: Bool {
        if let p = pthread_getspecific(LoopRegistry.key) { return p == Unmanaged.passUnretained(self).toOpaque() }
        if isMainLoop && rl_is_main_thread() != 0 {
            pthread_setspecific(LoopRegistry.key, Unmanaged.passRetained(self).toOpaque())
            ownerThread.store(rl_thread_self(), ordering: .relaxed)
            return true
        }
        return false
    }

    /// Called by the thread-exit destructor: empties every mode (calling source0 cancel callbacks)
    /// and drops queued blocks; the loop then only returns `finished`.
    func threadExited() {
        var cancels: [(RLSource0, RLMode)] = []
        // From here on no thread is the loop's (its blocks go to `blocks`, which nobody drains).
        ownerThread.store(0, ordering: .relaxed)
        locked {
            deallocating = true
            for m in modes.values {
                for s in m.sources0 { cancels.append((s, m.name)) }
                for s in m.sources1.values where FileIdentity.of(s.fd) == s.fileIdentity { waiter.deregister(s.fd, from: m.waitSet) }
                // Observers and timers leave every mode and so belong to no loop (CF's
                // `__CFRunLoopDeallocateObservers` / `__CFRunLoopKillOneTimer`).
                for o in m.observers { o.withState { s in s.modeCount = 0; s.loop = WeakLoop() } }
                m.sources0.removeAll(); m.sources1.removeAll(); m.observers.removeAll()
                m.hasSources0.store(false, ordering: .sequentiallyConsistent)
                m.observerMask.store(0, ordering: .sequentiallyConsistent)
                for t in m.timers.liveTimers() { t.withState { s in s.memberships.removeAll(); s.loop.unbind() } }
                m.timers = TimerQueue(mode: ObjectIdentifier(m))
            }
            for (s, _) in cancels { s.withState { $0.loops.removeAll { $0.loop === self || $0.loop == nil } } }
            commonSources0.removeAll(); commonSources1.removeAll(); commonObservers.removeAll(); commonTimers.removeAll()
            source1ByID.removeAll()
            blocks.removeAll()
            hasSharedBlocks.store(false, ordering: .relaxed)
            // (The thread-exit destructor runs on the loop's thread: `ownBlocks` is its own.)
            ownBlocks.removeAll()
            ownBlocksMode.store(0, ordering: .releasing)
        }
        for (s, m) in cancels { s.cancel?(self, m) }
        RLTrace.loopDestroyed(loop: id, iteration: lastIteration, tid: threadID)
    }

    deinit {
        handle.liveID.store(0, ordering: .relaxed)
        // Timers still in a mode (added after the thread exited, or a loop that never had one) are
        // bound to a loop that is gone from here on, before `handle` is released: a timer's binding
        // holds the handle unretained (see ``TimerBinding``).
        for m in modes.values {
            for t in m.timers.liveTimers() {
                t.withState { s in
                    if s.loop.isBound(to: self) { s.memberships.removeAll(); s.loop.loopGone() }
                }
            }
        }
        if !deallocating { RLTrace.loopDestroyed(loop: id, iteration: lastIteration, tid: threadID) }
    }

    // MARK: - Modes

    /// Finds (or creates) a mode. Called with the lock held.
    func modeLocked(_ name: RLMode, create: Bool) -> ModeState? {
        if name.isCommonModes { return nil }   // never a mode of the loop (no lookup, no string compare)
        if let u = lastMode, u._withUnsafeGuaranteedRef({ $0.name == name }) { return u.takeUnretainedValue() }
        if let m = modes[name] { lastMode = .passUnretained(m); return m }
        guard create else { return nil }
        let ep: Waiter.WaitSet
        do { ep = try waiter.makeWaitSet() } catch { fatalError("RunLoopCore: cannot create mode \(name): \(error)") }
        let m = ModeState(name: name, waitSet: ep)
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

    /// Replaces a mode's wait set by a fresh one holding exactly what the mode has: the only way to
    /// drop a registration whose fd was closed while another descriptor keeps its file open (epoll
    /// keeps it, and can no longer be told to remove it by number). Rare: only after such a stale event.
    func rebuildModeSetLocked(_ m: ModeState) {
        guard let ep = try? waiter.makeWaitSet() else { return }
        for s in m.sources1.values where FileIdentity.of(s.fd) == s.fileIdentity {
            try? waiter.register(s.fd, id: s.id, interest: s.interest, in: ep)
        }
        let old = m.waitSet
        m.waitSet = ep
        if m.mainQueueRegistered {
            m.mainQueueRegistered = false
            registerMainQueueLocked(m)
        }
        old.close()
    }

    func registerMainQueueLocked(_ m: ModeState) {
        guard mainQueueFD >= 0, !m.mainQueueRegistered else { return }
        waiter.registerMainQueue(mainQueueFD, in: m.waitSet)
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
        // Copying the common timers may move the deadline of the mode the loop sleeps in: re-armed
        // (and woken when due) as when a timer is added to it (CF's `CFRunLoopAddTimer` for each).
        lockedRearming {
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
    func targetModesLocked(_ mode: RLMode) -> [ModeState] {
        if mode.isCommonModes { return commonModeNames.map { modeLocked($0, create: true)! } }
        return [modeLocked(mode, create: true)!]
    }

    // MARK: - Blocks

    /// Queues `block` to run when the loop next runs `mode` (CF's `CFRunLoopPerformBlock`). Does
    /// **not** wake the loop. ``RLMode/commonModes`` means any common mode.
    ///
    /// `block` is taken owned (`consuming`): the caller's reference is the one the queue keeps, so
    /// queuing a closure costs no retain/release pair.
    public func performBlock(forMode mode: RLMode, name: String? = nil, _ block: consuming @escaping () -> Void) {
        // On the loop's own thread, a block for one mode goes to `ownBlocks` without the lock when
        // the rules of `ownBlocks` allow it (see there).
        if name == nil && !mode.isCommonModes && ownerThread.load(ordering: .relaxed) == rl_thread_self(),
           let m = ownThreadMode(mode) {
            let target = UInt(bitPattern: m.toOpaque())
            if !hasSharedBlocks.load(ordering: .acquiring) {
                if ownBlocks.isEmpty {
                    ownBlocksMode.store(target, ordering: .releasing)
                    ownBlocksTarget = m
                } else if ownBlocksMode.load(ordering: .relaxed) != target {
                    return performSharedBlock(forMode: mode, name: name, block)
                }
                ownBlocks.append(OwnBlockItem(body: block))
                return
            }
        }
        performSharedBlock(forMode: mode, name: name, block)
    }

    /// The mode named `mode`, found (or created) for a perform-block on the loop's thread: the
    /// mode it queued for last, or a lookup under the lock. Called on the loop's thread only.
    /// (Unretained, as the cache holds it: no retain/release pair per block.)
    @inline(__always)
    private func ownThreadMode(_ mode: RLMode) -> Unmanaged<ModeState>? {
        if let u = ownBlockModeCache, u._withUnsafeGuaranteedRef({ $0.name == mode }) { return u }
        return ownThreadModeSlow(mode)
    }

    @inline(never)
    private func ownThreadModeSlow(_ mode: RLMode) -> Unmanaged<ModeState>? {
        let m: Unmanaged<ModeState>? = locked { withModeLocked(mode, create: true) { .passUnretained($0) } }
        ownBlockModeCache = m
        return m
    }

    /// ``performBlock(forMode:name:_:)`` into ``blocks``, under the lock.
    @inline(never)
    private func performSharedBlock(forMode mode: RLMode, name: String?, _ block: consuming @escaping () -> Void) {
        // (Not `locked { }`: a closure cannot consume `block`. Nothing here throws or traps.)
        lock.lock()
        // `modeLocked` finds or creates any mode but the common pseudo-mode (nil).
        let target: BlockItem.Target = withModeLocked(mode, create: true) { .mode(ObjectIdentifier($0)) } ?? .common
        blocks.append(BlockItem(target: target, id: makeBlockIDLocked(), name: name, body: block))
        hasSharedBlocks.store(true, ordering: .relaxed)
        lock.unlock()
    }

    /// A process-unique id for a block of ``ownBlocks``, from a range the loop's thread reserves
    /// 256 at a time (as ``makeBlockIDLocked()`` does for `blocks`). Called on the loop's thread.
    @inline(__always)
    func makeOwnBlockID() -> UInt64 { ownBlockIDs.take() }

    /// A process-unique id for a block (its trace `item`), from a range of ids the loop reserves
    /// 256 at a time: no atomic operation on the process-wide counter per block. Called with the
    /// lock held.
    @inline(__always)
    func makeBlockIDLocked() -> UInt64 { blockIDs.take() }

    /// Queues `block` for any of `modes` (CF's `CFRunLoopPerformBlock` with a set). Does not wake.
    public func performBlock(forModes modes: Set<RLMode>, name: String? = nil, _ block: @escaping () -> Void) {
        if modes.count == 1 { return performBlock(forMode: modes.first!, name: name, block) }
        locked {
            for m in modes { _ = modeLocked(m, create: true) }
            blocks.append(BlockItem(target: .many(modes), id: makeBlockIDLocked(), name: name, body: block))
            hasSharedBlocks.store(true, ordering: .relaxed)
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
        // One mode (the usual case) needs no set: the same as `performBlock(forModes:)` with one.
        if modes.count == 1 { performBlock(forMode: modes[0], name: name, block) } else { performBlock(forModes: Set(modes), name: name, block) }
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
        RLTrace.wakeUpRequested(loop: id, accepted: accepted)
        if accepted { waiter.wake() }
    }

    /// Stops the innermost running activation (it returns ``RLRunResult/stopped``) and wakes it.
    /// On a loop that is not running it does nothing that a later run sees (CF).
    public func stop() {
        locked {
            perRun[perRun.count - 1].stopped = true
            stopRequested.store(true, ordering: .releasing)
        }
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
