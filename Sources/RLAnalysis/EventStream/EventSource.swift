import Foundation
import CTFReader
import Synchronization

/// Errors of the analysis front end, with the exit codes the CLI documents.
public enum AnalysisError: Error, CustomStringConvertible {
    /// The paths hold no CTF trace.
    case noTrace([String])
    /// The traces hold no `runloop` event; `providers` lists what they do hold.
    case noRunLoopEvents(providers: [String])
    /// The `runloop` provider in the trace has a layout this rltrace does not understand.
    case schemaMismatch(String)
    /// The reader refused the trace.
    case reader(String)
    /// Options that cannot all hold.
    case contradictoryFilters(String)
    /// The selection (loops, callouts, time window) matches nothing in the traces: what was asked
    /// and what the traces hold.
    case emptySelection(asked: String, holds: String)

    /// A sentence for the user.
    public var description: String {
        switch self {
        case .noTrace(let p): "no CTF trace (a directory holding a `metadata` file) below \(p.joined(separator: ", "))"
        case .noRunLoopEvents(let providers):
            "the trace has no `runloop` events (was the program built on RunLoopCore, and was `runloop:*` enabled?); providers present: \(providers.isEmpty ? "none" : providers.joined(separator: ", "))"
        case .schemaMismatch(let s): "unsupported `runloop` event schema: \(s) (this rltrace reads the schema of docs/tracepoints.md)"
        case .reader(let s): s
        case .contradictoryFilters(let s): "contradictory filters: \(s)"
        case .emptySelection(let asked, let holds): "nothing matches the selection: \(asked); the trace holds \(holds)"
        }
    }

    /// The process exit code (documented in `rltrace --help`).
    public var exitCode: Int32 {
        switch self {
        case .noTrace: 3
        case .noRunLoopEvents: 4
        case .schemaMismatch: 5
        case .reader: 1
        case .contradictoryFilters: 2
        case .emptySelection: 4
        }
    }
}

/// Reads CTF traces and delivers their `runloop` events, in time order, as ``RunLoopEvent``s.
///
/// The `runloop` schema is resolved once per stream and event class into an ``EventPlan`` (which
/// event, which payload field holds each value); the per-event path reads the class index, switches
/// on the plan and reads integers at fixed positions. Strings (item names, modes, thread and process
/// names) are interned in a ``NameTable``: an item's name is read the first time the item is seen, a
/// block's name (every block is its own item, one item per name in the figures) from its bytes
/// without allocating.
///
/// With two threads (``forEach(threads:filter:_:)``), one thread reads and decodes into chunks of
/// events while the caller's thread consumes them: the same events in the same order as with one.
public final class RunLoopEventSource: @unchecked Sendable {
    /// The traces read.
    public let traceSet: CTFTraceSet
    /// The trace directories.
    public let paths: [String]
    /// The strings the delivered events' `name` and `procname` ids refer to, as seen by the thread
    /// that receives the events (complete for every event delivered so far).
    public let names = NameTable()
    /// Every event read (any provider).
    public var totalEvents: Int { clock.totalEvents }
    /// `runloop` events read.
    public private(set) var runLoopEvents = 0
    /// Events past the time window's end once the loop model follows nothing there any more
    /// (``windowDone``): read and counted (totals, `runloop` events, the last timestamp, the
    /// binaries mapped), not decoded.
    public private(set) var eventsCountedOnly = 0
    /// Set by the loop model when nothing after the window can count (``LoopModel/pastWindow``).
    public let windowDone = WindowDoneFlag()
    /// Work for the reading and the consuming thread while they would wait for each other (the
    /// Perfetto export's deflate: ``SpareWorkSink``), when the trace is read on two threads.
    public var spareWork: SpareWork?
    /// Loops (process, loop id) whose events the selection's `--pid` and `--loop` turned away (at
    /// most 64), for the message when nothing is selected.
    public private(set) var turnedAway: Set<LoopKey> = []
    private var turnedAwayCount = 0
    /// First and last event timestamps (CLOCK_MONOTONIC ns), over all events.
    public var firstTs: Int64 { clock.firstTs }
    /// Last event timestamp.
    public var lastTs: Int64 { clock.lastTs }
    /// Events whose timestamp was earlier than the one before them (a damaged trace): delivered
    /// with the previous timestamp, so no duration is negative.
    public var backwardsEvents: Int { clock.backwardsEvents }
    /// Reader timestamps (ns since the epoch) minus CLOCK_MONOTONIC ns: converts the reader's times.
    public var clockOffset: Int64 { clock.clockOffset }
    private var clock = EventClock()
    /// Providers seen (the part of event names before `:`).
    public private(set) var providers: Set<String> = []
    /// The filter's time window resolved against the trace (absolute CLOCK_MONOTONIC ns): set
    /// before the first event is delivered.
    public private(set) var window: (lo: Int64, hi: Int64)?
    /// The hang watchdog's events whole (stack frames, names) and the binaries each process had
    /// mapped (`lttng_ust_statedump`, `lttng_ust_lib`), filled as the trace is read.
    public let evidence = HangEvidenceStore()

    /// The hosts whose traces are read (each trace's `env.hostname`; "" for a trace that names
    /// none), in name order: a loop's host is `hosts[LoopKey.hostIndex]`. Once a reading selected
    /// hosts (`--host`, ``selectHosts(_:)``), only those: the first of them is host 0, whose clock
    /// the others' times are moved onto — so one host selected reads exactly as its traces alone.
    public private(set) var hosts: [TraceHost]
    /// Every host of the traces, whatever the selection.
    public let allHosts: [TraceHost]
    /// Per stream, its host's index in ``allHosts``; and in ``hosts`` (-1: not selected).
    private let streamHostsAll: [Int]
    private var streamHosts: [Int]

    private let streams: [CTFStream]
    private let plans: [StreamPlan]
    /// Skips what overlapping traces (flight-recorder snapshots) share.
    private let overlap: OverlapDedup
    /// Decodes each event's fields, interning into the reading thread's table (``names`` itself
    /// when one thread does everything).
    private let fields: RunLoopFieldDecoder

    /// Opens every CTF trace below `paths`.
    public init(paths: [String]) throws {
        do {
            // Follow symbolic links (a `latest` link to a session, say), as babeltrace2 does.
            let resolved = paths.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path }
            // A path that does not exist holds no trace (exit 3), as an empty directory does.
            let missing = resolved.filter { !FileManager.default.fileExists(atPath: $0) }
            guard missing.isEmpty else { throw AnalysisError.noTrace(missing.map { "\($0) (no such file or directory)" }) }
            let found = try discoverCTFTraces(in: resolved)
            guard !found.isEmpty else { throw AnalysisError.noTrace(paths) }
            self.paths = found
            traceSet = try CTFTraceSet(paths: found)
        } catch let e as AnalysisError {
            throw e
        } catch {
            throw AnalysisError.reader("\(error)")
        }
        streams = traceSet.streams
        var providers: Set<String> = []
        plans = streams.map { StreamPlan($0, providers: &providers) }
        self.providers = providers
        overlap = OverlapDedup(streams: streams)
        fields = RunLoopFieldDecoder(names: names, evidence: evidence)
        // Hosts: by name; each host's clock offset is that of its first stream (its sessions'
        // offsets differ by the error of LTTng's measurement only; within a host the monotonic
        // clock is one, and read as it is).
        let (hosts, streamHosts) = RunLoopEventSource.hosts(of: streams)
        allHosts = hosts
        streamHostsAll = streamHosts
        self.hosts = hosts
        self.streamHosts = streamHosts
        use(hosts: hosts.map { _ in true })
    }

    /// Reads only the hosts `picked` (by index in ``allHosts``): renumbers them, shifts their
    /// clocks onto the first's, and marks each stream plan with its host.
    private func use(hosts picked: [Bool]) {
        let kept = allHosts.indices.filter { picked[$0] }
        let newIndex = Dictionary(uniqueKeysWithValues: kept.enumerated().map { ($1, $0) })
        let base = kept.first.map { allHosts[$0].clockOffset } ?? 0
        hosts = kept.map { let h = allHosts[$0]; return TraceHost(name: h.name, traces: h.traces, clockOffset: h.clockOffset, shiftNs: h.clockOffset &- base) }
        streamHosts = streamHostsAll.map { newIndex[$0] ?? -1 }
        for (i, p) in plans.enumerated() {
            let h = streamHosts[i]
            p.hostBits = h > 0 ? Int64(h) << LoopKey.hostShift : 0
            p.hostShiftNs = h > 0 ? hosts[h].shiftNs : 0
        }
        if hosts.count > 1 { clock.setHosts(shifts: hosts.map(\.shiftNs), offset: base) }
        hostsRead = picked
    }

    /// Applies `filter`'s `--host` selection (before the first reading; ``forEach(threads:filter:_:)``
    /// does it too). Throws ``AnalysisError/emptySelection(asked:holds:)`` when it matches no host.
    public func selectHosts(_ filter: EventFilter) throws {
        let picked = try selectedHosts(filter)
        if picked != hostsRead { use(hosts: picked) }
    }

    /// The trace directories read: those of the hosts selected.
    public var pathsRead: [String] { hosts.count == allHosts.count ? paths : hosts.flatMap(\.traces).sorted() }

    /// The hosts of `streams` by name, and each stream's host index.
    private static func hosts(of streams: [CTFStream]) -> ([TraceHost], [Int]) {
        let hostOf = streams.map { $0.trace?.hostname ?? "" }
        let names = Array(Set(hostOf)).sorted()
        let index = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        let streamHosts = hostOf.map { index[$0]! }
        var offsets = [Int64](repeating: 0, count: names.count), seen = [Bool](repeating: false, count: names.count)
        for (i, s) in streams.enumerated() where !seen[streamHosts[i]] { seen[streamHosts[i]] = true; offsets[streamHosts[i]] = s.clockOffsetNanoseconds }
        let hosts = names.enumerated().map { h, name in
            TraceHost(name: name, traces: Set(zip(streams, streamHosts).filter { $0.1 == h }.compactMap { $0.0.trace?.path }).sorted(),
                      clockOffset: offsets[h], shiftNs: offsets[h] &- offsets[0])
        }
        return (hosts, streamHosts)
    }

    /// Per host of ``allHosts``: whether its traces are read (the selection's `--host`).
    public private(set) var hostsRead: [Bool] = []

    /// Per host, its first and last event time (on the first host's clock; `.max`/`.min` when it
    /// had none). One host: the trace's.
    public var hostSpans: [(first: Int64, last: Int64)] {
        hosts.count > 1 ? zip(clock.hostFirst, clock.hostLast).map { ($0, $1) } : [(firstTs, lastTs)]
    }

    /// `HOST ` for a loop of traces of several hosts (escaped for a terminal), "" for one host.
    public func hostPrefix(_ key: LoopKey) -> String {
        hosts.count > 1 ? UntrustedText.terminal(hosts[key.hostIndex].name) + " " : ""
    }

    /// The hosts `filter`'s `--host` patterns select (every host without any); throws
    /// ``AnalysisError/emptySelection(asked:holds:)`` when they match none.
    public func selectedHosts(_ filter: EventFilter) throws -> [Bool] {
        guard !filter.hosts.isEmpty else { return allHosts.map { _ in true } }
        let picked = allHosts.map { h in filter.hosts.contains { globMatch($0, h.name) } }
        if !picked.contains(true) {
            throw AnalysisError.emptySelection(asked: filter.hosts.sorted().map { "--host \($0.debugDescription)" }.joined(separator: " "),
                                               holds: "the hosts \(allHosts.map { $0.name.isEmpty ? "(unnamed)" : $0.name.debugDescription }.joined(separator: ", "))")
        }
        return picked
    }

    /// Losses the reader found (discarded events, lost packets), with their time ranges.
    public var losses: [CTFLoss] { traceSet.losses }
    /// Reader warnings (e.g. a truncated final packet).
    public var warnings: [CTFWarning] { traceSet.warnings }

    /// Calls `body` with every `runloop` event in time order that passes `filter`'s event-level
    /// filters (time window, pid, loop), on the calling thread. With `threads` ≥ 2 the trace is read
    /// and decoded on another thread meanwhile. Throws ``AnalysisError`` for a trace with no
    /// `runloop` events or an unknown layout; a reader error mid-way ends the stream with the events
    /// read so far delivered and the error thrown.
    public func forEach(threads: Int = 1, filter: EventFilter = EventFilter(), _ body: (RunLoopEvent) throws -> Void) throws {
        try forEachBatch(threads: threads, filter: filter) { batch in
            for e in batch { try body(e) }
        }
    }

    /// ``forEach(threads:filter:_:)`` by batches: `body` gets the events in runs of up to 8192 (a
    /// buffer valid during the call), so the per-event work of the consumer is its own loop.
    public func forEachBatch(threads: Int = 1, filter: EventFilter = EventFilter(),
                             _ body: (UnsafeBufferPointer<RunLoopEvent>) throws -> Void) throws {
        try selectHosts(filter)
        if threads >= 2 {
            try forEachPipelined(filter: filter, body)
        } else {
            let chunk = Chunk()
            var failure: Error?, bodyFailed = false
            do {
                try produce(EventGate(filter), into: Filling(chunk)) { _ in
                    defer { chunk.count = 0 }
                    do { try body(UnsafeBufferPointer(start: chunk.events, count: chunk.count)) } catch { bodyFailed = true; throw error }
                    return chunk
                }
            } catch {
                failure = error
            }
            // What was read before a reader error is delivered before it is thrown.
            if chunk.count > 0 && !bodyFailed {
                defer { chunk.count = 0 }
                try body(UnsafeBufferPointer(start: chunk.events, count: chunk.count))
            }
            if let failure { throw failure }
        }
        if runLoopEvents == 0 {
            throw AnalysisError.noRunLoopEvents(providers: providers.sorted())
        }
    }

    /// Where the reading thread decodes events: straight into the next free entry of a chunk. When
    /// the chunk is full, `full` gets it and returns the chunk to fill next. (A class the loop's
    /// closure reaches: holding the chunk in a captured local instead, strong or unmanaged, cost
    /// 4–11 more instructions per event on the reading thread.)
    private final class Filling {
        var chunk: Chunk
        init(_ chunk: Chunk) { self.chunk = chunk }
    }

    /// Reads every event and decodes each `runloop` event the gate accepts into `target`'s chunk,
    /// calling `full` with each chunk that fills up (which returns the next one to fill). When it
    /// returns or throws, the chunk being filled (`target.chunk`) counts the entries written.
    private func produce(_ gate: EventGate, into target: Filling, full: (Chunk) throws -> Chunk) throws {
        // Only the streams of the hosts selected are read at all (`--host`); the reading loop is
        // specialized for one host (a trace's figures cost nothing for the fleet's) and several.
        let read = streams.indices.filter { streamHosts[$0] >= 0 }
        if hosts.count > 1 {
            try produce(gate, into: target, full: full, reading: read, OnSeveralHosts(hostOf: ContiguousArray(read.map { streamHosts[$0] })))
        } else {
            try produce(gate, into: target, full: full, reading: read, OnOneHost())
        }
    }

    /// ``produce(_:into:full:)`` over the streams `read` (indices into ``streams``).
    private func produce<H: HostTiming>(_ gate: EventGate, into target: Filling, full: (Chunk) throws -> Chunk,
                                        reading read: [Int], _ hostTiming: H) throws {
        var it = read.count == streams.count ? traceSet.makeMergedIterator() : traceSet.makeMergedIterator(over: read.map { streams[$0] })
        // Plans as unmanaged references, used through `_withUnsafeGuaranteedRef`: the source owns
        // them for its whole life (`plans`), so the per-event path needs no retain or release of
        // them (copying an `unowned(unsafe)` reference into a local retained it); the iterator's
        // loop hands the stream over the same way.
        let refs = ContiguousArray(read.map { Unmanaged.passUnretained(plans[$0]) })
        let shared = ContiguousArray(read.map { overlap.isShared($0) })
        // The chunk being filled, its next free entry and its end: the per-event path writes
        // through `next` and touches the chunk object only when it is full.
        var chunk = target.chunk
        var next = chunk.events + chunk.count
        var end = chunk.events + Chunk.capacity
        defer { chunk.count = next - chunk.events }
        // Set once an event after the window's end is read and the model follows nothing past
        // the window any more (``windowDone``): the rest is only counted.
        var pastEnd = false
        // The entry at `next` is delivered: a full chunk is handed on.
        @inline(__always) func advance() throws {
            next += 1
            if next == end {
                chunk.count = Chunk.capacity
                chunk = try full(chunk)
                target.chunk = chunk
                next = chunk.events + chunk.count
                end = chunk.events + Chunk.capacity
            }
        }
        do {
            try withExtendedLifetime((plans, gate, target)) {
                try it.forEachEvent { index, s in
                    // A stream another trace also holds (flight-recorder snapshots): each packet once.
                    var gap = false
                    if shared[index] {
                        let v = overlap.check(s, index: read[index])
                        if v == .duplicate { return true }
                        gap = v == .gap
                    }
                    let ts = hostTiming.time(of: s, stream: index, &clock)
                    if pastEnd {
                        try refs[index]._withUnsafeGuaranteedRef { try countOnly(s, $0, ts: ts) }
                        return true
                    }
                    if gap, window != nil {
                        // Where two overlapping snapshots do not meet: a gap event before this one.
                        next.pointee = RunLoopEvent(kind: .gap, ts: ts)
                        try advance()
                    }
                    let taken = refs[index]._withUnsafeGuaranteedRef { step(s, $0, ts: ts, gate, into: next, hostTiming) }
                    if taken > 0 {
                        // Past the window's end, once the model has nothing open there to follow.
                        if ts > gate.hi && windowDone.isSet { pastEnd = true }
                        try advance()
                    } else if taken < 0 {
                        _ = try refs[index]._withUnsafeGuaranteedRef { try fields.decodeOther(s, $0, ts: ts, classIndex: s.eventClassIndex) }
                    }
                    return true
                }
            }
        } catch let e as AnalysisError {
            throw e
        } catch let e as CTFReaderError {
            throw AnalysisError.reader("\(e)")
        }
    }

    /// The event `s` is on, at time `ts`: decoded by plan `sp` into `e`. 1 when it is to be
    /// delivered (a `runloop` event the gate accepts), 0 when not, -1 for an event of a class
    /// that is not a complete `runloop` event (``RunLoopFieldDecoder/decodeOther(_:_:ts:classIndex:)``
    /// takes it, outside this path, which then does not throw: 1.8 % fewer instructions on the
    /// reading thread, docs/benchmarks.md, "The Perfetto export: where the parity comes from").
    @inline(__always)
    private func step<H: HostTiming>(_ s: CTFStream, _ sp: StreamPlan, ts: Int64, _ gate: EventGate, into e: UnsafeMutablePointer<RunLoopEvent>, _ hostTiming: H) -> Int {
        guard fields.decodeRunLoop(s, sp, ts: ts, into: e) else { return -1 }
        hostTiming.adjust(e, sp, fields)
        runLoopEvents &+= 1
        guard gate.accepts(e.pointee, epochOffset: clockOffset) else {
            if gate.turnedAway.count != turnedAwayCount { turnedAwayCount = gate.turnedAway.count; turnedAway = gate.turnedAway }
            return 0
        }
        if window == nil { window = (gate.lo, gate.hi) }
        return 1
    }

    /// The event `s` is on, after the window: counted as ``step(_:_:ts:_:into:)`` counts it, and
    /// the binaries mapped still recorded (a statedump regenerated late — a flight-recorder
    /// snapshot — names the modules of stacks sampled earlier), nothing decoded.
    @inline(never)
    private func countOnly(_ s: CTFStream, _ sp: StreamPlan, ts: Int64) throws {
        eventsCountedOnly &+= 1
        let ci = s.eventClassIndex
        if sp.takes(ci) { runLoopEvents &+= 1 } else { _ = try fields.decodeOther(s, sp, ts: ts, classIndex: ci) }
    }

    // MARK: two threads

    /// Chunks in the ring between the two threads (about 6.8 MB): enough that the reading thread
    /// can deflate a buffer of the Perfetto export (about 1.1 ms) while the consumer works through
    /// what it read ahead (docs/benchmarks.md, "The Perfetto export: deflating in spare time").
    static let ringSize = 8

    /// A block of decoded events handed from the reading thread to the consuming one, with the
    /// strings interned while it was filled.
    private final class Chunk: @unchecked Sendable {
        static let capacity = 8192
        /// Entries: `events[0..<count]` are written by the thread filling the chunk before it hands
        /// the chunk on; the rest are never read. Left untouched when allocated (a `RunLoopEvent` is
        /// a trivial type, which storing through the pointer initializes — checked in `init`), so
        /// their pages (850 KB a chunk, ``ringSize`` in the ring) are first touched by the reading
        /// thread as it fills them, beside the consumer, instead of all on the caller's thread
        /// before the first event is read (about 1 700 page faults at the start of every command).
        let events = UnsafeMutablePointer<RunLoopEvent>.allocate(capacity: Chunk.capacity)
        init() { precondition(_isPOD(RunLoopEvent.self), "RunLoopEvent must stay a trivial type") }
        var count = 0
        var newNames: [String] = []
        var last = false
        var error: Error?
        deinit { events.deallocate() }
    }

    private func forEachPipelined(filter: EventFilter, _ body: (UnsafeBufferPointer<RunLoopEvent>) throws -> Void) throws {
        let ring = (0..<Self.ringSize).map { _ in Chunk() }
        let free = DispatchSemaphore(value: ring.count), full = DispatchSemaphore(value: 0)
        // The reader interns into its own table; the consumer's (`names`) receives each chunk's new
        // strings before the chunk's events, so ids agree.
        let mine = NameTable(recordingAdditions: true)
        fields.names = mine
        defer { fields.names = names }
        let done = DispatchSemaphore(value: 0)
        let stop = ManagedAtomicFlag()
        // Spare work (the Perfetto export's deflate) for both threads: the reading thread's once it
        // is a ring ahead (all chunks but the one it fills are full: the consumer has more to do
        // than a unit of the work takes) and while the ring is full, the caller's while the ring
        // is empty — so the work goes to whichever thread has time for it.
        let spare = spareWork
        let filled = FilledChunks()
        let thread = Thread { [self] in
            spare?.helperStarts()
            defer { spare?.helperEnds() }
            var index = 0
            var chunk = ring[0]
            free.wait()
            chunk.count = 0
            func publish(last: Bool, error: Error? = nil) {
                chunk.newNames = mine.takeAdded()
                chunk.last = last
                chunk.error = error
                filled.count.add(1, ordering: .relaxed)
                full.signal()
                if last { return }
                index = (index + 1) % ring.count
                chunk = ring[index]
                if let spare, filled.count.load(ordering: .relaxed) >= ring.count &- 1 { _ = spare.doSpareWork() }
                Self.wait(free, doing: spare, polling: true)
                chunk.count = 0
            }
            do {
                try produce(EventGate(filter), into: Filling(chunk)) { _ in
                    if stop.isSet { throw CancellationError() }     // the consumer gave up
                    publish(last: false)
                    return chunk
                }
                publish(last: true)
            } catch {
                publish(last: true, error: error)
            }
            done.signal()
        }
        thread.stackSize = 1 << 22
        thread.start()
        var index = 0
        var failure: Error?
        while true {
            Self.wait(full, doing: spare)
            let chunk = ring[index]
            names.adopt(chunk.newNames)
            if failure == nil {
                do {
                    if chunk.count > 0 { try body(UnsafeBufferPointer(start: chunk.events, count: chunk.count)) }
                } catch {
                    failure = error
                    stop.set()
                }
            }
            let last = chunk.last, error = chunk.error
            filled.count.subtract(1, ordering: .relaxed)
            free.signal()
            if last {
                if failure == nil, let error, !(error is CancellationError) { failure = error }
                break
            }
            index = (index + 1) % ring.count
        }
        done.wait()
        if let failure { throw failure }
    }

    /// Waits for `s`, doing `work`'s spare work meanwhile, a unit at a time while `s` is not
    /// signalled; `polling`: also looking for new work every 100 µs while there is none (the
    /// reading thread, for which the consumer makes new work while it waits; the consumer, which
    /// makes the work itself, blocks when there is none).
    private static func wait(_ s: DispatchSemaphore, doing work: SpareWork?, polling: Bool = false) {
        guard s.wait(timeout: .now()) == .timedOut else { return }
        guard let work else { return s.wait() }
        while true {
            while work.doSpareWork() {
                if s.wait(timeout: .now()) == .success { return }
            }
            if !polling { return s.wait() }
            if s.wait(timeout: .now() + .microseconds(100)) == .success { return }
        }
    }
}

/// Chunks the reading thread has filled and the consumer not yet taken.
private final class FilledChunks: Sendable {
    let count = Atomic<Int>(0)
}

/// A flag one thread sets and another reads.
private final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set() { lock.lock(); value = true; lock.unlock() }
}

/// One host whose traces a source reads.
public struct TraceHost: Sendable {
    /// The host's name (the traces' `env.hostname`; "" when they name none).
    public let name: String
    /// Its trace directories.
    public let traces: [String]
    /// Its clock offset (wall clock minus monotonic clock, ns; its first stream's).
    public let clockOffset: Int64
    /// What is added to its times to put them on the first host's clock (0 for the first host).
    public let shiftNs: Int64
}

/// How the reading loop times and adjusts events for the hosts of the traces
/// (``RunLoopEventSource``'s reading loop is specialized for each: one host pays nothing).
private protocol HostTiming {
    /// The time of the event `s` (of the reading loop's stream `stream`) is on, counted by `clock`.
    func time(of s: CTFStream, stream: Int, _ clock: inout EventClock) -> Int64
    /// Adjusts a decoded event of stream plan `sp` for its host.
    func adjust(_ e: UnsafeMutablePointer<RunLoopEvent>, _ sp: StreamPlan, _ fields: RunLoopFieldDecoder)
}

/// Traces of one host: its clock as it is.
private struct OnOneHost: HostTiming {
    @inline(__always) func time(of s: CTFStream, stream: Int, _ clock: inout EventClock) -> Int64 { clock.time(of: s) }
    @inline(__always) func adjust(_ e: UnsafeMutablePointer<RunLoopEvent>, _ sp: StreamPlan, _ fields: RunLoopFieldDecoder) {}
}

/// Traces of several hosts: each host's clock moved onto the first's, each host's events after
/// the first's keyed and timed as its (``RunLoopFieldDecoder/onAnotherHost(_:_:)``).
private struct OnSeveralHosts: HostTiming {
    /// Per stream the reading loop reads, its host.
    let hostOf: ContiguousArray<Int>
    @inline(__always) func time(of s: CTFStream, stream: Int, _ clock: inout EventClock) -> Int64 { clock.time(of: s, host: hostOf[stream]) }
    @inline(__always) func adjust(_ e: UnsafeMutablePointer<RunLoopEvent>, _ sp: StreamPlan, _ fields: RunLoopFieldDecoder) {
        if sp.hostBits != 0 { fields.onAnotherHost(sp, e) }
    }
}
