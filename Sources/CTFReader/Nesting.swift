import Foundation
import CCTFReaderShims
#if canImport(Glibc)
import Glibc
#endif

// How deep CTF types and values may nest, and the stack that takes.
//
// TSDL nests types (structures, variants, arrays, sequences) without a bound, and every pass over a
// type or a value — parsing, compiling, walking a value, formatting it, releasing it — recurses once
// per level. So the reader bounds the nesting (``Nesting/maxDepth``, checked by the parser and the
// compiler), parses and compiles metadata on a thread with a stack sized for that bound
// (``Nesting/onLargeStack(_:)``), and checks, before a value walk goes deeper, that the calling
// thread's stack holds the rest of the way down and back up (``Nesting/StackBudget``): a trace that
// nests deeper than the thread can take is refused with an error, never a crash.

enum Nesting {
    /// The most elements of an array or sequence whose elements may hold no bits (an empty structure) read
    /// where the packet has no bits left for them (they cost work but no data; babeltrace2 reads them).
    static let maxEmptyElements = 1 << 16
    /// The most compound types (structures, variants, arrays, sequences) a field may sit inside, not
    /// counting its scope's own structure: 2048. babeltrace2 2.0 reads ctf-testsuite's 2048-deep structures
    /// (`stress/struct-nest-n-deep`) and its parser runs out of memory at 4096.
    static let maxDepth = 2048

    /// Stack of the thread that parses and compiles metadata: 256 MiB of address space, of which only
    /// the pages touched take memory. A 2048-deep structure needs 32–64 MiB in a debug build (the
    /// parser's frames are ~31 KiB a level there), far less in a release build.
    static let parseStackBytes = 256 << 20

    /// Runs `body` on a thread of its own with a ``parseStackBytes`` stack and returns its result (or
    /// rethrows its error); the calling thread waits.
    static func onLargeStack<T>(_ body: () throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            var result: Result<T, Error>?
            withoutActuallyEscaping({ result = Result { try body() } }) { run in
                let call = StackCall(run)
                var attr = pthread_attr_t()
                pthread_attr_init(&attr)
                defer { pthread_attr_destroy(&attr) }
                pthread_attr_setstacksize(&attr, parseStackBytes)
                var thread = pthread_t()
                let context = Unmanaged.passRetained(call).toOpaque()
                let rc = pthread_create(&thread, &attr, { p in
                    let call = Unmanaged<StackCall>.fromOpaque(p!).takeRetainedValue()
                    call.run?()
                    call.run = nil
                    return nil
                }, context)
                if rc == 0 {
                    pthread_join(thread, nil)
                } else {
                    // No thread (a limit on threads or memory): on the caller's stack, as before.
                    Unmanaged<StackCall>.fromOpaque(context).release()
                    run()
                }
            }
            return try result!.get()
        }
    }

    /// Stack a level of nesting takes at most in a value's walk, its formatting
    /// (``CTFEventFormatter``) or its release — and in the release of the types — with a margin of
    /// about 2×. Measured with `ulimit -s` on ctf-testsuite's 2048-deep structure printed by
    /// `rltrace dump`: a release build needs 512–640 KiB (~300 bytes a level), a debug build 2–3 MiB
    /// (~1.2–1.5 KiB a level).
    #if DEBUG
    static let bytesPerLevel = 3072
    #else
    static let bytesPerLevel = 640
    #endif
    /// Stack kept free below the deepest level, for the calls a level makes (allocation, printing).
    static let stackMargin = 64 << 10

    /// The stack a value walk may use, from where it starts: checked every ``StackBudget/every``
    /// levels, so a shallow value (every LTTng event) costs one comparison per level.
    struct StackBudget {
        /// Address of the walk's first frame (the stack grows down from it).
        let top: UInt
        /// The end of the stack, when found where the budget was taken (`withStackEnd`); 0: the end of
        /// the stack of the thread asking (found then, once per thread).
        let low: UInt
        /// How often (in levels) the stack left is checked: a power of two (the walk tests `depth & (every - 1)`).
        static let every = 32

        /// The calling thread's stack from here (its end found only when first needed).
        @inline(__always) init() {
            top = UInt(ctf_frame_address())
            low = 0
        }

        /// The calling thread's stack from here, its end found now: to check on another thread.
        init(withStackEnd: ()) {
            top = UInt(ctf_frame_address())
            low = Nesting.stackLowEnd()
        }

        /// Bytes of stack between the walk's start and the thread's end (`Int.max` when the end is unknown).
        var available: Int {
            let low = self.low != 0 ? self.low : Nesting.stackLowEnd()
            if low == 0 { return .max }
            return top > low ? Int(top - low) : 0
        }

        /// Whether a walk that reached `depth` may go `every` levels deeper: the stack between its start
        /// and the thread's end holds ``bytesPerLevel`` per level down to `depth + every`, and the margin.
        func allows(depth: Int) -> Bool {
            let a = available
            return a == .max || a >= (depth + StackBudget.every) * Nesting.bytesPerLevel + Nesting.stackMargin
        }
    }

    /// Throws unless the stack `budget` was taken on holds values nested `depth` levels deep
    /// (the walk, the formatting and the release of such a value: ``bytesPerLevel`` a level): a trace
    /// whose types nest deeper than its reader's thread can take is refused when it is opened, with
    /// what to do, instead of crashing when a value is printed or the trace released. Shallow types
    /// (at most ``StackBudget/every`` levels, every real trace) are not checked.
    /// `budget`: taken (`withStackEnd`) on the thread that reads the trace; checked on any thread.
    static func checkStack(_ budget: StackBudget, forDepth depth: Int, path: String) throws {
        guard depth > StackBudget.every else { return }
        guard !budget.allows(depth: depth) else { return }
        let levels = max(0, (budget.available - stackMargin) / bytesPerLevel - StackBudget.every)
        throw CTFReaderError.metadataSemantic(path: path, message:
            "types nest \(depth) deep, and this thread's stack (\(budget.available >> 10) KiB left) holds values about \(levels) deep " +
            "(\(bytesPerLevel) bytes a level): read the trace on a thread with a larger stack (at least \((depth + StackBudget.every) * bytesPerLevel / 1024 + stackMargin / 1024) KiB)")
    }

    /// Per thread: the lowest address of its stack, found once (glibc reads /proc/self/maps for the
    /// main thread) and kept in a thread-specific slot.
    private static let stackKey: pthread_key_t = {
        var k = pthread_key_t()
        pthread_key_create(&k, nil)
        return k
    }()

    /// The lowest usable address of the calling thread's stack (0 when it cannot be known: then
    /// every check passes, as before this bound).
    static func stackLowEnd() -> UInt {
        if let p = pthread_getspecific(stackKey) { return UInt(bitPattern: p) }
        var attr = pthread_attr_t()
        var low: UInt = 0
        if ctf_pthread_getattr_np(pthread_self(), &attr) == 0 {
            var addr: UnsafeMutableRawPointer?
            var size = 0
            if pthread_attr_getstack(&attr, &addr, &size) == 0, let addr {
                // (The guard page, if any, lies below `addr`.)
                low = UInt(bitPattern: addr)
            }
            pthread_attr_destroy(&attr)
        }
        if low != 0 { pthread_setspecific(stackKey, UnsafeRawPointer(bitPattern: low)) }
        return low
    }
}

/// ``Nesting/onLargeStack(_:)``'s call, handed to the thread: it drops the closure once run (the
/// caller's `withoutActuallyEscaping` checks that nothing holds it when the call returns).
private final class StackCall: @unchecked Sendable {
    var run: (() -> Void)?
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// glibc's `pthread_getattr_np` (a GNU extension the Glibc module does not import): the attributes of a
/// running thread, its stack's address and size among them.
@_silgen_name("pthread_getattr_np")
private func ctf_pthread_getattr_np(_ thread: pthread_t, _ attr: UnsafeMutablePointer<pthread_attr_t>) -> Int32
