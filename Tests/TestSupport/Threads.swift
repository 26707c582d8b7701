import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A plain, named, joinable pthread running a closure — for tests and benchmarks that need a real
/// thread of their own (to signal it with `pthread_kill`, to let it exit inside a callout, to run a
/// workload on a fresh thread) rather than a pool thread.
public final class RawThread: @unchecked Sendable {
    /// The thread (valid once `init` returned).
    public private(set) var thread = pthread_t()
    private let body: () -> Void
    private let name: String

    /// Starts the thread; its kernel name is `name` (15 bytes kept).
    public init(name: String, _ body: @escaping () -> Void) {
        self.body = body
        self.name = name
        let box = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { p in
            let me = Unmanaged<RawThread>.fromOpaque(p!).takeRetainedValue()
            // The thread's kernel name (`/proc/thread-self/comm`: what prctl(PR_SET_NAME) sets).
            if let f = fopen("/proc/thread-self/comm", "w") { fputs(String(me.name.utf8.prefix(15))!, f); fclose(f) }
            me.body()
            return nil
        }, box)
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }

    /// Waits for the thread to end.
    public func join() { pthread_join(thread, nil) }
}
