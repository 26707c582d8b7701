#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CRunLoopShims
import Synchronization

/// The name of a run-loop mode (CF's `CFRunLoopMode`). Modes are created by adding an item or a
/// block to them, never by running them, and are never removed.
public struct RLMode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The name, interned: one ``RLModeName`` per distinct string in the process, held unretained
    /// (the interning table keeps every one for the process's life). A mode is then two plain words:
    /// passing one costs no retain/release of its string, and equality and hashing are of the
    /// reference, not of the characters — the same relation as string equality, since equal strings
    /// intern to the same object (`RunLoopCoreTests.modeNamesInternByString`).
    let interned: Unmanaged<RLModeName>
    /// Whether the name is the common-modes pseudo-mode's (its interned name's flag, copied here so
    /// that the per-operation paths — perform, add, remove — test a bit they already hold).
    let isCommonModes: Bool
    /// The mode's name.
    public var rawValue: String { interned._withUnsafeGuaranteedRef { $0.name } }
    /// Creates a mode name.
    public init(rawValue: String) { self.init(rawValue) }
    /// Creates a mode name (finds or makes its interned name: one hash and one short lock section).
    public init(_ name: String) {
        let interned = RLModeName.intern(name)
        self.interned = interned
        self.isCommonModes = interned._withUnsafeGuaranteedRef { $0.isCommonModes }
    }
    /// Creates a mode name from a literal.
    public init(stringLiteral value: String) { self.init(value) }
    /// Names are equal when their strings are (equal strings share one interned name).
    @inlinable public static func == (a: RLMode, b: RLMode) -> Bool { a.identity == b.identity }
    /// Hashes the name (its interned object's identity).
    public func hash(into h: inout Hasher) { h.combine(identity) }
    /// The interned name's address: what equality and hashing compare.
    @usableFromInline var identity: UInt { UInt(bitPattern: interned.toOpaque()) }
    /// The default mode (`kCFRunLoopDefaultMode`).
    public static let `default` = RLMode("kCFRunLoopDefaultMode")
    /// The common-modes pseudo-mode (`kCFRunLoopCommonModes`): adding to it adds to every mode
    /// marked common; a loop never runs "in" it.
    public static let commonModes = RLMode("kCFRunLoopCommonModes")
    /// The name.
    public var description: String { rawValue }
}

/// A mode's name, interned (see ``RLMode/interned``): made once per distinct string and never freed,
/// as CF keeps every mode a loop ever ran in. A program that makes unboundedly many distinct mode
/// names keeps each name's string (it would keep a mode per name in CF's loops too).
final class RLModeName: Sendable {
    let name: String
    /// Whether this is `kCFRunLoopCommonModes`, decided once per distinct name.
    let isCommonModes: Bool
    private init(_ name: String) {
        self.name = name
        self.isCommonModes = name == "kCFRunLoopCommonModes"
    }

    /// The interning table, under the loop's kind of lock (``RLLock``), not `Synchronization.Mutex`:
    /// every `RLMode("…")` (a string literal where a mode is expected too) takes it, and with the
    /// priority-inheritance futex eight threads doing so made 31 k names/s against 10 M for one
    /// (docs/benchmarks.md, "Items' state locks").
    private nonisolated(unsafe) static var table: [String: RLModeName] = [:]
    private static let tableLock = RLLock()

    /// The one interned name for `name` (unretained: the table holds it for ever).
    static func intern(_ name: String) -> Unmanaged<RLModeName> {
        tableLock.withLock {
            if let n = table[name] { return .passUnretained(n) }
            let n = RLModeName(name)
            table[name] = n
            return .passUnretained(n)
        }
    }
}

/// Run-loop activities an observer can watch (CF's `CFRunLoopActivity`, same raw values).
public struct RLActivity: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw CF bit mask.
    public let rawValue: UInt32
    /// Creates an activity mask from CF's raw bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// A run is entered (1).
    public static let entry = RLActivity(rawValue: 1 << 0)
    /// About to process timers (2).
    public static let beforeTimers = RLActivity(rawValue: 1 << 1)
    /// About to process sources (4).
    public static let beforeSources = RLActivity(rawValue: 1 << 2)
    /// About to sleep (32).
    public static let beforeWaiting = RLActivity(rawValue: 1 << 5)
    /// Just woke, before handling what woke it (64).
    public static let afterWaiting = RLActivity(rawValue: 1 << 6)
    /// A run is exited (128).
    public static let exit = RLActivity(rawValue: 1 << 7)
    /// All activities (0x0FFFFFFF).
    public static let allActivities = RLActivity(rawValue: 0x0FFF_FFFF)

    /// The activity's CF name (e.g. `entry`), or the names of its bits joined by `|`.
    public var description: String {
        let names: [(RLActivity, String)] = [(.entry, "entry"), (.beforeTimers, "beforeTimers"),
                                             (.beforeSources, "beforeSources"), (.beforeWaiting, "beforeWaiting"),
                                             (.afterWaiting, "afterWaiting"), (.exit, "exit")]
        if self == .allActivities { return "allActivities" }
        let parts = names.filter { contains($0.0) }.map(\.1)
        return parts.isEmpty ? "0x\(String(rawValue, radix: 16))" : parts.joined(separator: "|")
    }
}

/// Why a run returned (CF's `CFRunLoopRunResult`, same raw values).
public enum RLRunResult: Int32, Sendable, CustomStringConvertible {
    /// The mode had nothing to wait for (or was invalid).
    case finished = 1
    /// The run was stopped (``RLRunLoop/stop()``).
    case stopped = 2
    /// The timeout passed.
    case timedOut = 3
    /// A source was handled and the run was asked to return after one.
    case handledSource = 4
    /// The case name.
    public var description: String {
        switch self {
        case .finished: "finished"
        case .stopped: "stopped"
        case .timedOut: "timedOut"
        case .handledSource: "handledSource"
        }
    }
}

/// A point in time on CLOCK_MONOTONIC, in nanoseconds: the clock the loop's timers and LTTng's
/// timestamps use. (`DispatchTime.uptimeNanoseconds` reads the same clock on Linux.)
public struct RLInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since an arbitrary origin (boot) on CLOCK_MONOTONIC.
    public var nanoseconds: UInt64
    /// Creates an instant from CLOCK_MONOTONIC nanoseconds.
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    /// The current time.
    public static var now: RLInstant { RLInstant(nanoseconds: rl_monotonic_ns()) }
    /// A time that never comes (about 146 years after boot).
    public static let distantFuture = RLInstant(nanoseconds: UInt64(Int64.max))
    /// This instant moved by `duration` (clamped to `0...distantFuture`).
    public func advanced(by duration: Duration) -> RLInstant {
        RLInstant(nanoseconds: RLInstant.add(nanoseconds, RLInstant.nanoseconds(of: duration)))
    }
    /// This instant moved by `seconds`. A NaN is a programming error (precondition); +∞ is
    /// ``distantFuture``; a time before the clock's origin clamps to it (a date in the past means now).
    public func advanced(bySeconds seconds: Double) -> RLInstant {
        precondition(!seconds.isNaN, "RunLoopCore: a NaN time offset is not a date")
        if seconds >= 9.2e9 { return .distantFuture }
        if seconds <= -9.2e9 { return RLInstant(nanoseconds: 0) }
        return RLInstant(nanoseconds: RLInstant.add(nanoseconds, Int64(seconds * 1e9)))
    }
    /// `lhs` moved by `rhs`.
    public static func + (lhs: RLInstant, rhs: Duration) -> RLInstant { lhs.advanced(by: rhs) }
    /// The duration from `rhs` to `lhs` (negative if `lhs` is earlier).
    public static func - (lhs: RLInstant, rhs: RLInstant) -> Duration {
        lhs >= rhs ? .nanoseconds(Int64(clamping: lhs.nanoseconds - rhs.nanoseconds))
                   : .nanoseconds(-Int64(clamping: rhs.nanoseconds - lhs.nanoseconds))
    }
    /// Orders instants by time.
    public static func < (lhs: RLInstant, rhs: RLInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
    /// Seconds since the clock's origin, for humans.
    public var description: String {
        let s = nanoseconds / 1_000_000_000, ns = nanoseconds % 1_000_000_000
        let frac = String(ns)
        return "\(s).\(String(repeating: "0", count: 9 - frac.count))\(frac)s"
    }

    static func nanoseconds(of d: Duration) -> Int64 {
        let (s, atto) = d.components
        let (ns, o1) = s.multipliedReportingOverflow(by: 1_000_000_000)
        if o1 { return s < 0 ? .min : .max }
        let (r, o2) = ns.addingReportingOverflow(atto / 1_000_000_000)
        return o2 ? (s < 0 ? .min : .max) : r
    }
    static func add(_ base: UInt64, _ delta: Int64) -> UInt64 {
        let limit = UInt64(Int64.max)
        if delta >= 0 {
            let (r, o) = base.addingReportingOverflow(UInt64(delta))
            return o ? limit : min(r, limit)
        }
        let m = delta.magnitude
        return base > m ? base - m : 0
    }
}

/// Errors RunLoopCore throws for bad input it can detect.
public enum RLError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file descriptor is not open.
    case badFileDescriptor(Int32)
    /// The file descriptor cannot be waited on with epoll (a regular file or a directory).
    case notPollable(Int32)
    /// The item was invalidated; it can no longer be added to a loop.
    case invalidated(String)
    /// The item belongs to another run loop (timers, observers and source1s belong to one).
    case belongsToAnotherLoop(String)
    /// A system call failed (name, errno); e.g. `EMFILE` when out of descriptors.
    case systemCall(String, Int32)

    /// A sentence naming what failed.
    public var description: String {
        switch self {
        case .badFileDescriptor(let fd): "file descriptor \(fd) is not open (EBADF)"
        case .notPollable(let fd): "file descriptor \(fd) cannot be polled (regular file or directory: EPERM from epoll_ctl)"
        case .invalidated(let what): "\(what) is invalidated and cannot be added to a run loop"
        case .belongsToAnotherLoop(let what): "\(what) already belongs to another run loop"
        case .systemCall(let name, let e): "\(name) failed: \(String(cString: strerror(e))) (errno \(e))"
        }
    }
}

/// Process-unique ids for loops and items (the `item`/`loop` fields of the trace events).
enum RLIDs {
    static let next = Atomic<UInt64>(16)
    static let nextLoop = Atomic<UInt32>(0)
    /// A loop's id, unique across the processes of one trace: the process id in the high 32 bits,
    /// the loop's number in this process (1, 2, …) in the low ones — so that a trace recorded
    /// without the `vpid` context still tells two processes' loops apart (docs/tracepoints.md,
    /// "Constant pools").
    static func makeLoop() -> UInt64 {
        (UInt64(UInt32(bitPattern: getpid())) << 32) | UInt64(nextLoop.wrappingAdd(1, ordering: .relaxed).newValue)
    }
    static func make() -> UInt64 { next.wrappingAdd(1, ordering: .relaxed).newValue }   // one `lock xadd` (`add` checks overflow: a CAS loop)
    /// Reserves `n` consecutive ids; returns the first.
    static func reserve(_ n: UInt64) -> UInt64 { next.wrappingAdd(n, ordering: .relaxed).newValue &- n &+ 1 }
}

/// Process-unique ids handed out from ranges of 256 reserved at a time (``RLIDs/reserve(_:)``): no
/// atomic operation on the process-wide counter per id. Used by one thread at a time (its owner's
/// lock, or the owning thread).
struct RLIDRange {
    private var next: UInt64 = 0, limit: UInt64 = 0

    /// The next id, reserving a new range when this one is used up.
    @inline(__always)
    mutating func take() -> UInt64 {
        if next == limit {
            next = RLIDs.reserve(256)
            limit = next &+ 256
        }
        defer { next &+= 1 }
        return next
    }
}
