import Foundation
import Testing
@testable import CTFReader
import TestSupport

/// A ``ByteSink``'s encoding as spare work (Sources/CTFReader/Output/BufferWriter.swift,
/// SpareWork.swift): whole buffers encoded by threads that would otherwise wait, the rest by the
/// writer thread in order — and the file the same bytes whoever encoded what.
///
/// Every scenario runs on a thread of its own under a watchdog
/// (``bounded(_:seconds:sourceLocation:_:)``): a deadlock fails the test after a minute instead of
/// hanging the suite. Its figures come back to the test, which checks them (not the scenario's
/// thread: issues are recorded in the test's task).
@Suite("ByteSink: encoding as spare work")
struct ByteSinkSpareWorkTests {
    @Test("with helper threads encoding whole buffers, the file holds the sequential encoding, every buffer encoded once, by a helper or the writer", arguments: [1, 2])
    func helpersEncodeWholeBuffers(helpers: Int) throws {
        let run = try bounded("\(helpers) helpers") { () -> Outcome in
            var g = Generator(seed: 11 &+ UInt64(helpers))
            return try writeThroughSink(helpers: helpers, endHelpersBeforeFinish: helpers == 2) { write, flush in
                var total = 0, flushed = false
                while total < 40 << 20 {
                    // Mostly small writes, now and then one of up to 200 KB.
                    let n = g.below(40) == 0 ? 1 + g.below(200_000) : 1 + g.below(6000)
                    write(n, &g)
                    total += n
                    if !flushed && total > 20 << 20 { flush(); flushed = true }
                }
            }
        }
        guard let run else { return }
        run.expectSequentialBytes()
        let e = run.encodings, t = run.tally.snapshot()
        #expect(run.model.handedOver > 30 && run.model.nonWholeHandedOver == 0, "\(run.model.handedOver) buffers handed over, \(run.model.nonWholeHandedOver) not whole")
        #expect(e.helped > 0, "no buffer was encoded by a helping thread")
        #expect(e.helped + e.byWriter == run.model.handedOver, "\(e.helped) buffers encoded by helpers and \(e.byWriter) by the writer of \(run.model.handedOver) handed over")
        // The encoders' own counts: whole-buffer encoders only on helping threads (the helpers and
        // the sink's caller), never on the writer; the sink's encoder on the writer for every buffer
        // it encoded there, and on the caller for the flushes' partial buffers only.
        #expect(t.byMade.values.reduce(0, +) == e.helped, "made encoders encoded \(t.byMade) for \(e.helped) said helped")
        #expect(t.byMade[writerThread] == nil, "the writer thread used a whole-buffer encoder: \(t.byMade)")
        let onHelpers = t.byMade.filter { $0.key.hasPrefix(helperThread) }.values.reduce(0, +)
        #expect(onHelpers > 0, "the helper threads encoded nothing: \(t.byMade)")
        #expect(t.byMain[writerThread, default: 0] == e.byWriter, "the sink's encoder ran \(t.byMain) on threads; the writer says \(e.byWriter)")
        #expect(t.byMain[callerThread, default: 0] == run.model.chunks.count - run.model.handedOver, "the sink's encoder ran \(t.byMain) on threads")
        #expect(Set(t.byMain.keys).isSubset(of: [writerThread, callerThread]), "the sink's encoder ran on \(t.byMain.keys)")
        // Encoders made: at most one per thread helping at once (the helpers and the caller).
        #expect(t.made >= 1 && t.made <= helpers + 1, "\(t.made) whole-buffer encoders made for \(helpers) helpers")
        #expect(t.violations.isEmpty, "\(t.violations)")
    }

    @Test("a registered helper that never does the work does not stall the sink: its caller encodes whole buffers itself when the queue is full, and the rest are encoded at finish")
    func idleHelperDoesNotDeadlock() throws {
        let run = try bounded("an idle helper") { () -> Outcome in
            var g = Generator(seed: 23)
            return try writeThroughSink(helpers: 0, registerIdleHelper: true) { write, _ in
                for _ in 0..<12_000 { write(1 + g.below(3000), &g) }
            }
        }
        guard let run else { return }
        run.expectSequentialBytes()
        let e = run.encodings, t = run.tally.snapshot()
        #expect(run.model.handedOver > 10)
        #expect(e.helped > 0, "the sink's caller never encoded a buffer while the queue was full")
        #expect(e.helped + e.byWriter == run.model.handedOver, "\(e.helped) helped + \(e.byWriter) by the writer of \(run.model.handedOver)")
        // Nobody but the caller helped (the registered helper did nothing).
        #expect(t.byMade == (e.helped > 0 ? [callerThread: e.helped] : [:]), "made encoders ran \(t.byMade)")
        #expect(t.violations.isEmpty, "\(t.violations)")
    }

    @Test("writes larger than a buffer (buffers that are not whole) go through the sink's encoder on the writer thread in order, whole buffers through anyone: the file holds the sequential encoding")
    func writesLargerThanABuffer() throws {
        let run = try bounded("huge writes") { () -> Outcome in
            var g = Generator(seed: 37)
            return try writeThroughSink(helpers: 1) { write, _ in
                var total = 0, i = 0
                while total < 32 << 20 {
                    // Every 700 writes one larger than a buffer, or of exactly a buffer, or of one more.
                    let n: Int
                    switch i % 700 {
                    case 350: n = [3 << 20, 2 << 20, 1 << 20, (1 << 20) + 1, 3 << 20][(i / 700) % 5]
                    default: n = 1 + g.below(5000)
                    }
                    write(n, &g)
                    total += n; i += 1
                }
            }
        }
        guard let run else { return }
        run.expectSequentialBytes()
        let e = run.encodings, t = run.tally.snapshot()
        #expect(run.model.nonWholeHandedOver >= 8, "only \(run.model.nonWholeHandedOver) buffers not whole")
        #expect(e.helped > 0, "no buffer was encoded by a helping thread")
        #expect(e.helped + e.byWriter == run.model.handedOver, "\(e.helped) helped + \(e.byWriter) by the writer of \(run.model.handedOver)")
        // Every buffer that is not whole went through the sink's encoder on the writer thread.
        #expect(t.nonWholeByMain[writerThread, default: 0] == run.model.nonWholeHandedOver, "not-whole buffers encoded \(t.nonWholeByMain) of \(run.model.nonWholeHandedOver)")
        #expect(t.byMade.values.reduce(0, +) == e.helped)
        #expect(t.violations.isEmpty, "\(t.violations)")
    }

    @Test("spare work is offered only by a file's sink whose encoder makes whole-buffer encoders; not by an in-memory sink, nor for an encoder that makes none")
    func spareWorkOnlyWhereHelpable() throws {
        let path = temporaryPath("plain")
        defer { unlink(path) }
        let tally = Tally()
        let plain = try ByteSink(creating: path)
        plain.encoder = Framing(tally: tally, makesWholeBufferEncoders: false)
        #expect(plain.spareWork == nil, "an encoder that makes no whole-buffer encoders")
        let none = try ByteSink(creating: path)
        #expect(none.spareWork == nil, "no encoder")
        let memory = ByteSink()
        memory.encoder = Framing(tally: tally)
        #expect(memory.spareWork == nil, "an in-memory sink")
        let helpable = try ByteSink(creating: path)
        helpable.encoder = Framing(tally: tally)
        #expect(helpable.spareWork != nil, "a file's sink whose encoder makes whole-buffer encoders")
        // Nothing queued: nothing to do.
        #expect(helpable.spareWork?.doSpareWork() == false)
        // The sink of an encoder that makes none writes every buffer through it, helped by nobody.
        let run = try bounded("an encoder without whole-buffer encoders") { () -> Outcome in
            var g = Generator(seed: 41)
            return try writeThroughSink(helpers: 0, makesWholeBufferEncoders: false) { write, _ in
                for _ in 0..<6000 { write(1 + g.below(3000), &g) }
            }
        }
        guard let run else { return }
        run.expectSequentialBytes()
        #expect(run.encodings.helped == 0 && run.encodings.byWriter == run.model.handedOver, "\(run.encodings) of \(run.model.handedOver)")
        #expect(run.tally.snapshot().made == 0)
    }

    @Test("a write error with a helper registered (helping or not): finish throws it, and nothing hangs; later buffers are dropped, not encoded", arguments: [true, false])
    func writeErrorWithHelper(helping: Bool) throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { return }
        let r = try bounded("a write error") { () -> (error: Int32, threw: Bool, encodings: (helped: Int, byWriter: Int, helpers: Int), handedOver: Int) in
            let tally = Tally()
            let sink = try ByteSink(creating: "/dev/full")
            sink.encoder = Framing(tally: tally)
            guard let work = sink.spareWork else { throw ScenarioError("a helpable encoder's file sink offers no spare work") }
            let helpers = HelperThreads(work: work)
            if helping { helpers.start(1) } else { work.helperStarts() }
            var model = Model(flushAt: 1 << 20)
            var g = Generator(seed: 53)
            let pool = Generator.pool
            while model.data.count < 20 << 20 {
                let n = 1 + g.below(4000), at = g.below(pool.count - n)
                pool.withUnsafeBytes { sink.bytes(UnsafeRawBufferPointer(rebasing: $0[at..<(at + n)])) }
                model.write(pool[at..<(at + n)])
            }
            let error = sink.writeError
            var threw = false
            do { try sink.finish() } catch is ByteSinkError { threw = true }
            if helping { helpers.stop() } else { work.helperEnds() }
            return (error, threw, sink.encodings, model.handedOver)
        }
        guard let r else { return }
        #expect(r.error == ENOSPC, "writeError \(r.error)")
        #expect(r.threw, "finish did not throw the write error")
        // The first written buffer fails; at most those queued meanwhile were encoded (no more than
        // the queue holds: the caller gets no buffer back before that first write ends).
        #expect(r.encodings.helped + r.encodings.byWriter <= BufferWriter.depth + 1, "\(r.encodings) encoded of \(r.handedOver) after the error")
        #expect(r.handedOver >= 19)
    }
}

// MARK: - helpers

private let writerThread = "writer", callerThread = "spare-test-caller", helperThread = "spare-test-helper"

private func temporaryPath(_ tag: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("bytesink-spare-\(tag)-\(UUID().uuidString)").path
}

/// The calling thread's role, as tagged by ``tagThisThread(_:)`` (the scenario's caller, the
/// helpers), ``writerThread`` for any other: the sink's writer thread, the only other thread that
/// encodes (``Tally`` checks there is one). (Names do not do: Foundation on Linux gives threads
/// neither the names they were started with nor kernel names of their own.)
private func currentThreadRole() -> String {
    (Thread.current.threadDictionary[threadRoleKey] as? String) ?? writerThread
}
private func tagThisThread(_ role: String) { Thread.current.threadDictionary[threadRoleKey] = role }
private let threadRoleKey = "ByteSinkSpareWorkTests.role"

/// The tests' seeded generator (TestSupport's SplitMix64), and a pool of random bytes writes are
/// cut from.
private typealias Generator = SplitMix64
extension SplitMix64 {
    /// 4 MiB of random bytes (more than the largest write).
    fileprivate static let pool: [UInt8] = {
        var g = Generator(seed: 0xC0FFEE)
        return [UInt8](unsafeUninitializedCapacity: 4 << 20) { b, n in
            let words = UnsafeMutableRawPointer(b.baseAddress!).bindMemory(to: UInt64.self, capacity: b.count / 8)
            for i in 0..<(b.count / 8) { words[i] = g.next() }
            n = b.count
        }
    }()
}

/// What encoders did, shared by an encoder and those it makes (a lock: they run on several threads).
private final class Tally: @unchecked Sendable {
    struct Figures {
        /// Whole-buffer encoders made.
        var made = 0
        /// Buffers encoded by made encoders, and by the sink's own, by thread name; the latter's
        /// buffers that were not whole.
        var byMade: [String: Int] = [:], byMain: [String: Int] = [:], nonWholeByMain: [String: Int] = [:]
        /// Encoders used by two threads at once, made encoders given a buffer that is not whole.
        var violations: [String] = []
    }
    private let lock = NSLock()
    private var figures = Figures()
    private var busy: Set<Int> = []
    /// The one thread not the test's that encodes (the sink's writer thread).
    private var writer: ObjectIdentifier?
    func snapshot() -> Figures { lock.lock(); defer { lock.unlock() }; return figures }
    func madeOne() -> Int { lock.lock(); defer { lock.unlock() }; figures.made += 1; return figures.made }
    func enter(_ id: Int) {
        lock.lock(); defer { lock.unlock() }
        if !busy.insert(id).inserted { figures.violations.append("encoder \(id) used by two threads at once") }
    }
    func leave(_ id: Int, main: Bool, whole: Bool) {
        let thread = currentThreadRole()
        let untagged = thread == writerThread ? ObjectIdentifier(Thread.current) : nil
        lock.lock(); defer { lock.unlock() }
        busy.remove(id)
        if let u = untagged, writer != u {
            if writer != nil { figures.violations.append("encoding on two threads that are not the test's") }
            writer = u
        }
        if main {
            figures.byMain[thread, default: 0] += 1
            if !whole { figures.nonWholeByMain[thread, default: 0] += 1 }
        } else {
            figures.byMade[thread, default: 0] += 1
            if !whole { figures.violations.append("made encoder \(id) given a buffer that is not whole") }
        }
    }
}

/// A test encoder whose output depends only on each buffer (so misplaced, missing or repeated
/// buffers show): a whole buffer is `W`, its length (4 bytes, little-endian) and its bytes reversed
/// and XOR-ed with 0x5A; a buffer that is not whole goes through a stateful path, `N`, its length,
/// the number of such buffers before it (4 bytes) and its bytes XOR-ed with a key from that number;
/// ``finish(_:)`` writes `E` and that number. Whole-buffer encoders it makes are fresh instances
/// sharing its ``Tally``.
private final class Framing: ByteSinkEncoder {
    let tally: Tally
    let id: Int
    let isMain: Bool
    let makesWholeBufferEncoders: Bool
    /// Buffers not whole encoded so far (the stateful path's state).
    private var notWhole: UInt32 = 0

    init(tally: Tally, makesWholeBufferEncoders: Bool = true, id: Int = 0) {
        self.tally = tally; self.makesWholeBufferEncoders = makesWholeBufferEncoders
        self.id = id; isMain = id == 0
    }

    func makeWholeBufferEncoder() -> ByteSinkEncoder? {
        guard makesWholeBufferEncoders else { return nil }
        return Framing(tally: tally, id: tally.madeOne())
    }

    func encode(_ bytes: UnsafeBufferPointer<UInt8>, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        encode(bytes, whole: false, emit: emit)
    }

    func encode(_ bytes: UnsafeBufferPointer<UInt8>, whole: Bool, emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        tally.enter(id)
        defer { tally.leave(id, main: isMain, whole: whole) }
        let n = bytes.count
        if whole {
            header(0x57, n, nil, emit)
            let body = [UInt8](unsafeUninitializedCapacity: n) { b, c in
                let o = b.baseAddress!
                for i in 0..<n { o[n &- 1 &- i] = bytes[i] ^ 0x5A }
                c = n
            }
            body.withUnsafeBufferPointer { emit($0) }
        } else {
            header(0x4E, n, notWhole, emit)
            let key = UInt8(truncatingIfNeeded: notWhole &* 37 &+ 1)
            let body = [UInt8](unsafeUninitializedCapacity: n) { b, c in
                let o = b.baseAddress!
                for i in 0..<n { o[i] = bytes[i] ^ key }
                c = n
            }
            body.withUnsafeBufferPointer { emit($0) }
            notWhole &+= 1
        }
    }

    func finish(_ emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        header(0x45, Int(notWhole), nil, emit)
    }

    private func header(_ kind: UInt8, _ n: Int, _ sequence: UInt32?, _ emit: (UnsafeBufferPointer<UInt8>) -> Void) {
        var h: [UInt8] = [kind]
        withUnsafeBytes(of: UInt32(n).littleEndian) { h += $0 }
        if let s = sequence { withUnsafeBytes(of: s.littleEndian) { h += $0 } }
        h.withUnsafeBufferPointer { emit($0) }
    }
}

/// The sink's cutting of writes into buffers, as ByteSink does it (a write of at most a buffer's
/// size lies wholly in one buffer; a larger one is written in pieces of a buffer, and the buffers
/// holding them are not whole), and the bytes written.
private struct Model {
    let flushAt: Int
    var data: [UInt8] = []
    private var pendingStart = 0, split = false
    /// The buffers in order: their bytes in `data`, whether whole, whether handed over to the
    /// writer (else encoded by the caller: a flush's).
    private(set) var chunks: [(range: Range<Int>, whole: Bool, handedOver: Bool)] = []
    var handedOver: Int { chunks.count(where: { $0.handedOver }) }
    var nonWholeHandedOver: Int { chunks.count(where: { $0.handedOver && !$0.whole }) }

    init(flushAt: Int) { self.flushAt = flushAt }

    mutating func write(_ w: ArraySlice<UInt8>) {
        if w.count <= flushAt { room(w.count); data += w; return }
        var rest = w
        while !rest.isEmpty {
            let piece = rest.prefix(flushAt)
            room(piece.count)
            split = true
            data += piece
            rest = rest.dropFirst(piece.count)
        }
    }
    private mutating func room(_ n: Int) {
        if data.count - pendingStart + n > flushAt { cut(handedOver: true) }
    }
    private mutating func cut(handedOver: Bool) {
        chunks.append((pendingStart..<data.count, !split, handedOver))
        pendingStart = data.count
        split = false
    }
    /// ``ByteSink/flush()``: the pending bytes, encoded on the caller's thread.
    mutating func flush() { if data.count > pendingStart { cut(handedOver: false) } }

    /// Every buffer through one encoder, in order, then its finish.
    func sequentialEncoding() -> [UInt8] {
        let e = Framing(tally: Tally(), makesWholeBufferEncoders: false)
        var out: [UInt8] = []
        out.reserveCapacity(data.count + 64 * chunks.count)
        data.withUnsafeBufferPointer { d in
            for c in chunks { e.encode(UnsafeBufferPointer(rebasing: d[c.range]), whole: c.whole) { out += $0 } }
        }
        e.finish { out += $0 }
        return out
    }
}

/// What a scenario through a file's sink gave.
private struct Outcome: @unchecked Sendable {
    var model: Model
    var written: [UInt8]
    /// The file's size right after a flush in the middle, and the encoding's length at that point.
    var flushedSize: Int?, expectedFlushedSize: Int?
    var encodings: (helped: Int, byWriter: Int, helpers: Int)
    var tally: Tally

    /// The file is the sequential encoding byte for byte (and a flush in the middle returned once
    /// everything before it was written).
    func expectSequentialBytes(sourceLocation: SourceLocation = #_sourceLocation) {
        let expected = model.sequentialEncoding()
        #expect(written.count == expected.count, "\(written.count) bytes written for \(expected.count)", sourceLocation: sourceLocation)
        let same = written.count == expected.count && written.withUnsafeBytes { a in expected.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } }
        // The first byte that differs (not `==` in #expect: Swift Testing would diff megabytes).
        let first = same ? nil : ((0..<min(written.count, expected.count)).first { written[$0] != expected[$0] } ?? min(written.count, expected.count))
        #expect(same, "the file differs from the sequential encoding from byte \(first ?? -1)", sourceLocation: sourceLocation)
        if let s = flushedSize { #expect(s == expectedFlushedSize, "flush returned with \(s) bytes in the file, not \(expectedFlushedSize ?? -1)", sourceLocation: sourceLocation) }
    }
}

/// Helping threads: each registers (``SpareWork/helperStarts()``), then does spare work until
/// stopped, sleeping a little when there is none.
private final class HelperThreads: @unchecked Sendable {
    let work: SpareWork
    private let lock = NSLock()
    private var stopping = false
    private var count = 0
    private let started = DispatchSemaphore(value: 0), ended = DispatchSemaphore(value: 0)
    init(work: SpareWork) { self.work = work }

    private var stopped: Bool { lock.lock(); defer { lock.unlock() }; return stopping }

    func start(_ n: Int) {
        count = n
        for i in 0..<n {
            let t = Thread { [self] in
                tagThisThread("\(helperThread)-\(i)")
                work.helperStarts()
                started.signal()
                while !stopped {
                    if !work.doSpareWork() { usleep(100) }
                }
                work.helperEnds()
                ended.signal()
            }
            t.start()
        }
        for _ in 0..<n { started.wait() }
    }

    func stop() {
        lock.lock(); stopping = true; lock.unlock()
        for _ in 0..<count { ended.wait() }
    }
}

/// Writes through a file's sink whose encoder is a ``Framing``, with `helpers` helping threads (or
/// a helper registered that never helps), ending them before or after ``ByteSink/finish()``;
/// `body` writes through `write(n, &g)` (`n` bytes from a random place of the pool) and may
/// `flush()`. Returns the file and the figures.
private func writeThroughSink(helpers: Int, registerIdleHelper: Bool = false, endHelpersBeforeFinish: Bool = false,
                              makesWholeBufferEncoders: Bool = true,
                              _ body: (_ write: (Int, inout Generator) -> Void, _ flush: () -> Void) -> Void) throws -> Outcome {
    let path = temporaryPath("run")
    defer { unlink(path) }
    let tally = Tally()
    let sink = try ByteSink(creating: path)
    sink.encoder = Framing(tally: tally, makesWholeBufferEncoders: makesWholeBufferEncoders)
    var model = Model(flushAt: 1 << 20)
    let pool = Generator.pool
    var threads: HelperThreads?
    if helpers > 0 || registerIdleHelper {
        guard let work = sink.spareWork else { throw ScenarioError("a helpable encoder's file sink offers no spare work") }
        if registerIdleHelper { work.helperStarts() }
        if helpers > 0 { threads = HelperThreads(work: work); threads!.start(helpers) }
    }
    var flushedSize: Int?, expectedFlushedSize: Int?
    body({ n, g in
        let at = g.below(pool.count - n + 1)
        pool.withUnsafeBytes { sink.bytes(UnsafeRawBufferPointer(rebasing: $0[at..<(at + n)])) }
        model.write(pool[at..<(at + n)])
    }, {
        sink.flush()
        model.flush()
        var st = stat()
        flushedSize = stat(path, &st) == 0 ? Int(st.st_size) : -1
        var m = model
        m.flush()
        expectedFlushedSize = m.sequentialEncoding().count - 5      // less the finish's `E` and count
    })
    if endHelpersBeforeFinish { threads?.stop() }
    try sink.finish()
    if !endHelpersBeforeFinish { threads?.stop() }
    if registerIdleHelper { sink.spareWork?.helperEnds() }
    model.flush()
    let written = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    return Outcome(model: model, written: written, flushedSize: flushedSize, expectedFlushedSize: expectedFlushedSize,
                   encodings: sink.encodings, tally: tally)
}

/// Runs `body` on a thread of its own (tagged ``callerThread``) and returns what it returns, or
/// records an issue and returns nil if it has not returned within `seconds` (a deadlock: the thread
/// is left behind). Rethrows its error.
private func bounded<T>(_ what: String, seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation,
                        _ body: @escaping () throws -> T) throws -> T? {
    let box = BoundedRun(body)
    let t = Thread {
        tagThisThread(callerThread)
        box.result = Result { try box.body() }
        box.done.signal()
    }
    t.stackSize = 8 << 20
    t.start()
    guard box.done.wait(timeout: .now() + seconds) == .success else {
        Issue.record("\(what): not done in \(Int(seconds)) s — a deadlock?", sourceLocation: sourceLocation)
        return nil
    }
    return try box.result!.get()
}

/// A scenario's body and result, handed between threads (``bounded(_:seconds:sourceLocation:_:)``).
private final class BoundedRun<T>: @unchecked Sendable {
    let body: () throws -> T
    var result: Result<T, Error>?
    let done = DispatchSemaphore(value: 0)
    init(_ b: @escaping () throws -> T) { body = b }
}

/// A scenario that could not run as meant (thrown on its thread, rethrown in the test).
private struct ScenarioError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
