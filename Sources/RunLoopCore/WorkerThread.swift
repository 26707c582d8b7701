#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import DequeModule
import Synchronization

/// A thread that owns a running loop — the "keep a thread alive" pattern: a message port keeps its
/// default mode non-empty, so the loop sleeps until work arrives through ``perform(_:)`` (any
/// thread), then runs it on this thread. ``cancel()`` stops it; ``join()`` waits for it to end.
public final class RLWorkerThread: @unchecked Sendable {
    /// The worker's loop: written once by the worker thread before it posts `startSignal`, read
    /// only after `init`'s `sem_wait` on it returned (POSIX semaphores synchronise memory, and
    /// ThreadSanitizer sees the pair), so every later read is a plain load with no lock. A
    /// `Mutex` here made every ``perform(_:)`` take a priority-inheritance futex: 8 threads
    /// posting to one worker formed a convoy (docs/benchmarks.md, "Items' state locks").
    nonisolated(unsafe) private var loop: RLRunLoop?
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
        self.loop = loop
        sem_post(startSignal)
        while !cancelled.load(ordering: .acquiring) {
            let r = loop.run(mode: .default, seconds: 1e10, returnAfterSourceHandled: false)
            if r == .finished { break }
        }
        keepAlive?.invalidate()
    }

    /// The worker's run loop.
    public var runLoop: RLRunLoop { loop! }

    /// Runs `block` on the worker thread (in its default mode) and wakes it.
    public func perform(name: String? = nil, _ block: @escaping () -> Void) {
        let l = runLoop
        l.performBlock(forMode: .default, name: name, block)
        l.wakeUp()
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
