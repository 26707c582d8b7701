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
