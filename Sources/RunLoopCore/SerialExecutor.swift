#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import DequeModule
import Synchronization

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
