#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import DequeModule
import Synchronization

// MARK: - Description dump

extension RLRunLoop {
    /// A dump of the loop like `CFCopyDescription` of a CFRunLoop: its state, common modes, common
    /// items, and every mode with its sources (order, fd), observers (activities, order) and
    /// timers (fire date, interval, tolerance).
    public var description: String {
        locked {
            var out = "<RLRunLoop #\(id) tid \(threadID)\(isMainLoop ? " main" : "")> {wakeup fd = \(waiter.wakeFD), timer fd = \(waiter.timerFD), "
            out += "stopped = \(perRun[perRun.count - 1].stopped), ignoreWakeUps = \(ignoresWakeUps.load(ordering: .relaxed)), "
            out += "sleeping = \(sleeping), current mode = \(currentModeState?.takeUnretainedValue().name.rawValue ?? "(none)"),\n"
            out += "common modes = {\(commonModeNames.map(\.rawValue).sorted().joined(separator: ", "))},\n"
            out += "common mode items = {\n"
            for s in commonSources0 { out += "\t\(s)\n" }
            for s in commonSources1 { out += "\t\(s)\n" }
            for o in commonObservers { out += "\t\(o)\n" }
            for t in commonTimers.values.sorted(by: { $0.id < $1.id }) { out += "\t\(t)\n" }
            out += "},\nmodes = {\n"
            for name in modes.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
                let m = modes[name]!
                out += "\t<mode \(name.rawValue)> {epoll fd = \(m.epfd), stopped = \(m.stopped)\(m.mainQueueRegistered ? ", main queue fd = \(mainQueueFD)" : "")\n"
                out += "\t\tsources0 = {\(m.sources0.isEmpty ? "" : "\n" + m.sources0.map { "\t\t\t\($0)" }.joined(separator: "\n") + "\n\t\t")}\n"
                out += "\t\tsources1 = {\(m.sources1.isEmpty ? "" : "\n" + m.sources1.values.sorted { $0.id < $1.id }.map { "\t\t\t\($0)" }.joined(separator: "\n") + "\n\t\t")}\n"
                out += "\t\tobservers = {\(m.observers.isEmpty ? "" : "\n" + m.observers.map { "\t\t\t\($0)" }.joined(separator: "\n") + "\n\t\t")}\n"
                let timers = m.timers.liveTimers().sorted { $0.nextFireDate < $1.nextFireDate }
                out += "\t\ttimers = {\(timers.isEmpty ? "" : "\n" + timers.map { "\t\t\t\($0)" }.joined(separator: "\n") + "\n\t\t")}\n"
                out += "\t}\n"
            }
            out += "}}"
            return out
        }
    }
}

// MARK: - Message port

/// A cross-thread message port (the NSMachPort / CFMessagePort role): any thread ``send(_:)``s,
/// the owning loop's thread receives each message in order in the handler. Built on a source1
/// over an eventfd, so a send wakes the loop by itself. Add ``source`` to the modes to listen in.
public final class RLMessagePort<Message: Sendable>: @unchecked Sendable {
    private let fd: Int32
    private final class Queue: @unchecked Sendable { let items = Mutex(Deque<Message>()) }
    private let queue = Queue()
    /// The source1 to add to a loop's modes.
    public private(set) var source: RLSource1!

    /// Creates a port; `handler` runs on the loop's thread, once per message.
    public init(name: String? = nil, handler: @escaping (Message) -> Void) throws(RLError) {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw RLError.systemCall("eventfd", errno) }
        self.fd = fd
        let q = queue
        self.source = try RLSource1(fd: fd, interest: .read, name: name) { _, fd, _ in
            var v: UInt64 = 0
            _ = read(fd, &v, 8)
            while let msg = q.items.withLock({ $0.popFirst() }) { handler(msg) }
        }
    }

    deinit {
        source.invalidate()
        close(fd)
    }

    /// Queues `message` and wakes the receiving loop (any thread).
    public func send(_ message: Message) {
        queue.items.withLock { $0.append(message) }
        var one: UInt64 = 1
        while write(fd, &one, 8) < 0 && errno == EINTR {}
    }

    /// Stops receiving: the source is invalidated (queued messages are dropped).
    public func invalidate() { source.invalidate() }
}

// MARK: - Resident worker thread

/// A thread that owns a running loop — the "keep a thread alive" pattern: a message port keeps its
/// default mode non-empty, so the loop sleeps until work arrives through ``perform(_:)`` (any
/// thread), then runs it on this thread. ``cancel()`` stops it; ``join()`` waits for it to end.
public final class RLWorkerThread: @unchecked Sendable {
    private let ready = Mutex<RLRunLoop?>(nil)
    private let cancelled = Atomic<Bool>(false)
    private var thread = pthread_t()
    private let startSignal: UnsafeMutablePointer<sem_t>
    /// The thread's name (as the kernel and traces show it; 15 bytes kept).
    public let name: String

    /// Starts the thread and waits until its loop is running.
    public init(name: String = "rl-worker") {
        self.name = name
        startSignal = .allocate(capacity: 1)
        sem_init(startSignal, 0, 0)
        let box = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { p in
            let me = Unmanaged<RLWorkerThread>.fromOpaque(p!).takeRetainedValue()
            me.main()
            return nil
        }, box)
        precondition(rc == 0, "RunLoopCore: pthread_create failed (\(rc))")
        while sem_wait(startSignal) != 0 && errno == EINTR {}
    }

    deinit {
        sem_destroy(startSignal)
        startSignal.deallocate()
    }

    private func main() {
        rl_set_thread_name(name)
        let loop = RLRunLoop.current
        // The dummy port that keeps the loop from finishing (it is never sent to).
        let keepAlive = try? RLMessagePort<Int>(name: "\(name).keepalive") { _ in }
        if let keepAlive { try? loop.add(keepAlive.source, forMode: .default) }
        ready.withLock { $0 = loop }
        sem_post(startSignal)
        while !cancelled.load(ordering: .acquiring) {
            let r = loop.run(mode: .default, seconds: 1e10, returnAfterSourceHandled: false)
            if r == .finished { break }
        }
        keepAlive?.invalidate()
    }

    /// The worker's run loop.
    public var runLoop: RLRunLoop { ready.withLock { $0! } }

    /// Runs `block` on the worker thread (in its default mode) and wakes it.
    public func perform(name: String? = nil, _ block: @escaping () -> Void) {
        runLoop.perform(inModes: [.default], name: name, block)
    }

    /// Asks the worker to finish after the current callout.
    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        let loop = runLoop
        loop.perform { loop.stop() }
    }

    /// Waits for the thread to end (after ``cancel()``).
    public func join() {
        pthread_join(thread, nil)
    }
}

// MARK: - Serial executor

/// A `SerialExecutor` that runs Swift concurrency jobs on a run loop's thread, in its common modes:
/// give an actor `nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }`
/// and its methods run as perform-blocks of that loop (visible in traces as blocks named "job").
public final class RLSerialExecutor: SerialExecutor, @unchecked Sendable {
    /// The loop jobs run on.
    public let runLoop: RLRunLoop

    /// Creates an executor for `runLoop`.
    public init(runLoop: RLRunLoop) { self.runLoop = runLoop }

    /// Queues the job as a perform-block in the common modes and wakes the loop.
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        runLoop.perform(name: "job") { unowned.runSynchronously(on: executor) }
    }

    /// This executor as an unowned reference.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    /// Whether the calling thread is the loop's thread.
    public func checkIsolated() {
        precondition(runLoop.isOnLoopThread, "RunLoopCore: not on the run loop's thread")
    }
}
