#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import DequeModule
import Synchronization

/// A cross-thread message port (the NSMachPort / CFMessagePort role): any thread ``send(_:)``s,
/// the owning loop's thread receives each message in order in the handler. Built on a source1
/// over an eventfd, so a send wakes the loop by itself. Add ``source`` to the modes to listen in.
///
/// Sends coalesce: only the send that finds the port idle writes the eventfd; sends made before
/// the handler takes that write queue their message and make no system call (the loop's own
/// wake-up does the same, `Waiter.wake()`).
public final class RLMessagePort<Message: Sendable>: @unchecked Sendable {
    private let fd: Int32
    /// The messages sent and not yet taken, under the loop's kind of lock (``RLLock``: one
    /// compare-and-swap uncontended, parks when contended). Senders append; the handler swaps the
    /// whole deque out in one section of the lock, then delivers outside it, so it does not compete
    /// with the senders once per message.
    private final class Queue: @unchecked Sendable {
        let lock = RLLock()
        /// Guarded by `lock`.
        var items = Deque<Message>()
        /// Whether the eventfd was written and the handler has not read it yet. Set by the send
        /// that writes; cleared by the handler after its read and before it drains the queue, so
        /// a send that skipped its write (it found the flag set) queued its message before the
        /// clear, and the drain that follows sees it (the exchanges are read-modify-writes on one
        /// atomic, acquire-release). A send after the clear writes again: at worst the handler
        /// runs once more and finds the queue empty, never a message left without a wake-up.
        let signalled = Atomic<Bool>(false)
    }
    private let queue = Queue()
    /// The source1 to add to a loop's modes.
    public private(set) var source: RLSource1!

    /// Creates a port; `handler` runs on the loop's thread, once per message.
    public init(name: String? = nil, handler: @escaping (Message) -> Void) throws(RLError) {
        let fd = try Waiter.makeEventCounter()
        self.fd = fd
        let q = queue
        self.source = try RLSource1(fd: fd, interest: .read, name: name) { _, fd, _ in
            var v: UInt64 = 0
            _ = read(fd, &v, 8)
            _ = q.signalled.exchange(false, ordering: .acquiringAndReleasing)
            // Until the queue is empty, as many at a time as were queued (messages sent during
            // the deliveries come after, in order). The emptied deque goes back to the senders at
            // the next swap, its buffer reused.
            var taken = Deque<Message>()
            while true {
                q.lock.withLock { swap(&q.items, &taken) }
                if taken.isEmpty { break }
                while let msg = taken.popFirst() { handler(msg) }
            }
        }
    }

    deinit {
        source.invalidate()
        close(fd)
    }

    /// Queues `message` and wakes the receiving loop (any thread).
    public func send(_ message: Message) {
        queue.lock.withLock { queue.items.append(message) }
        if queue.signalled.exchange(true, ordering: .acquiringAndReleasing) { return }
        var one: UInt64 = 1
        while write(fd, &one, 8) < 0 && errno == EINTR {}
    }

    /// Stops receiving: the source is invalidated (queued messages are dropped).
    public func invalidate() { source.invalidate() }
}
