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
public final class RLMessagePort<Message: Sendable>: @unchecked Sendable {
    private let fd: Int32
    private final class Queue: @unchecked Sendable { let items = Mutex(Deque<Message>()) }
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
