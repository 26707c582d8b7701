#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization
import RunLoopTracing

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
    /// The main loop, once made; never cleared (it lives as long as the process). Written under
    /// `mainLock`.
    nonisolated(unsafe) static var mainLoop: RLRunLoop?
    /// `mainLoop`'s address once it is made (0 before): stored with release after `mainLoop` was
    /// set, so a reader that loads it with acquire sees a complete loop and needs no lock — as CF's
    /// `CFRunLoopGetMain` reads a static. The lock, per call, made 8 threads reading
    /// ``RLRunLoop/main`` share one mutex (4.6 M reads/s against 16.5 M for one thread).
    static let mainLoopAddress = Atomic<UInt>(0)
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
