import CTFReader
import HeapModule
import RunLoopSchema

/// `rltrace timeline`: one line per iteration, written as the trace is read.
///
/// Lines come out in the order of the iterations' begin times (a parent before the iterations
/// nested in it), grouped under a loop header whenever the loop changes. An iteration is printed
/// once nothing that began before it can still arrive: iterations of other loops, or nested ones,
/// wait in a heap until every iteration that began earlier has closed; non-sleeping top-level
/// iterations wait (at most ``ReportOptions/spinMinIterations`` per loop) until their run of
/// iterations is known to be a spin or not — the same per-loop rule as the report. Nothing waits
/// for more than ``holdLimitNs`` of trace time, so memory stays bounded however long an iteration
/// stays open.
public final class TimelineSink: LoopModelSink, NameResolving, SelectionAware {
    /// Which iterations to show, beyond the pipeline's selection (whose callout filters show the
    /// iterations that hold a selected callout).
    public struct Selection: Sendable {
        /// Only flagged iterations (hang, spin, late timer).
        public var flaggedOnly = false
        /// Creates a selection that keeps everything.
        public init() {}
    }

    /// A line waiting to be printed: rendered when its iteration closed (into `buffers[buffer]`:
    /// the line up to its flags, then from `lateStart` its LATE flags), so that what waits holds
    /// no reference to the model's records (whose storage the model reuses) and moves through the
    /// heap as plain bytes; only whether it is in a spin is decided later.
    struct Row: Comparable {
        var begin: Int64
        var depth: Int
        var seq: Int
        var spin = false
        var loop: LoopKey
        /// Its loop header, in `headers`.
        var header: Int
        /// Its rendering (-1: the selection leaves it out whatever its flags).
        var buffer = -1, lateStart = 0
        var hang = false, slow = false, late = false, clipped = false
        static func < (a: Row, b: Row) -> Bool {
            (a.begin, a.depth, a.seq) < (b.begin, b.depth, b.seq)
        }
        static func == (a: Row, b: Row) -> Bool { a.seq == b.seq }
    }
    struct SpinState { var pending: [Row] = []; var inSpin = false }

    /// The thresholds (for flags).
    public let options: ReportOptions
    /// A timer later than this is flagged (the options' LATE TIMER threshold).
    public var lateTimerNs: Int64 { options.lateTimerNs }
    /// The selection.
    public let selection: Selection
    /// The pipeline's selection stage (nil when it selects everything).
    public var selectionStage: SelectionStage?
    /// The model, for names and open iterations.
    public var resolver: LoopModel?
    private let out: ByteSink
    private var heap = Heap<Row>()
    /// Each loop's spin state, by its number in `spinLoops`.
    private var spins: [SpinState] = []
    private var spinLoops = LoopNumbering()
    private var seq = 0
    private var origin: Int64 = 0
    private var currentLoop: LoopKey?
    /// Lines printed (iterations shown).
    public private(set) var shown = 0
    /// The most lines waiting at once (in the heap and held for a spin): what bounds the
    /// timeline's memory (Tests/RLAnalysisTests/TimelineSinkTests.swift).
    public private(set) var peakWaiting = 0
    /// Lines held for their spin, over all loops.
    private var heldForSpins = 0

    /// Creates a timeline writing to `out`.
    deinit { scratch.deallocate() }

    public init(out: ByteSink, options: ReportOptions = ReportOptions(), selection: Selection = Selection()) {
        self.out = out
        self.options = options
        self.selection = selection
        out.write("  iteration   start (epoch s)      +rel        busy      sleep  wake          callouts\n")
    }

    public func traceBegins(at ts: Int64, epochOffset: Int64) { origin = ts; self.epochOffset = epochOffset }
    /// The trace clock's offset: the start column is the clock's absolute time (seconds since the
    /// epoch, as `rltrace dump` and `babeltrace2 --clock-seconds` print), so a time copied from one
    /// command works as `--begin @…` in any other.
    private var epochOffset: Int64 = 0

    public func iteration(_ it: IterationRecord, of loop: LoopInfo) {
        seq += 1
        let n = spinLoops.number(loop.key)
        if n == spins.count { spins.append(SpinState()); headerOf.append((-1, "", "", -1)) }
        let row = render(it, loop, loopNumber: n)
        if it.depth == 0 {
            // In place in the array: a copy of the state would copy its pending rows (up to
            // spinMinIterations of them) at every append.
            let held = spins[n].pending.count
            admit(row, slept: it.slept || it.nestedSleeps > 0, into: &spins[n])
            heldForSpins &+= spins[n].pending.count &- held
        } else {
            heap.insert(row)
        }
        peakWaiting = max(peakWaiting, heap.count &+ heldForSpins)
        release(upTo: watermark(now: it.end))
    }

    /// A top-level iteration: printed at once if it slept (with the run of non-sleeping ones before
    /// it), held while its loop's run of non-sleeping iterations may still become a spin.
    private func admit(_ row: Row, slept: Bool, into st: inout SpinState) {
        if slept {
            for r in st.pending { heap.insert(r) }
            st.pending.removeAll(keepingCapacity: true)
            st.inSpin = false
            heap.insert(row)
        } else if st.inSpin {
            var r = row
            r.spin = true
            heap.insert(r)
        } else {
            st.pending.append(row)
            if st.pending.count >= options.spinMinIterations {
                for var r in st.pending { r.spin = true; heap.insert(r) }
                st.pending.removeAll(keepingCapacity: true)
                st.inSpin = true
            }
        }
    }

    /// How long (trace time) lines may wait for an iteration still open, or for a run of
    /// non-sleeping iterations to become a spin or not: a loop asleep for an hour, or busy for an
    /// hour in one iteration (a nested run) after a few iterations that did not sleep, would
    /// otherwise hold an hour of lines in memory. An iteration open longer is printed when it
    /// ends, and waiting iterations when their spin is decided — after lines that began after them.
    public static let holdLimitNs: Int64 = 100_000_000

    /// Everything that began before this can be printed.
    private func watermark(now: Int64) -> Int64 {
        var m = resolver?.openWatermark ?? .max
        for st in spins { if let f = st.pending.first, f.begin < m { m = f.begin } }
        return max(m, now &- TimelineSink.holdLimitNs)
    }

    private func release(upTo mark: Int64) {
        while let top = heap.min, top.begin < mark {
            print(heap.removeMin())
        }
    }

    public func finish(end: Int64) {
        for st in spins { for r in st.pending { heap.insert(r) } }
        spins.removeAll()
        spinLoops = LoopNumbering()
        headerOf.removeAll()
        release(upTo: .max)
        while !heap.isEmpty { print(heap.removeMin()) }
        if shown == 0 { out.write("  (no iteration matches the filters)\n") }
        out.flush()
    }

    /// Room for a row's columns (beyond its indentation), and for one callout (beyond its name and
    /// depth marks).
    private static let columnsRoom = 256, calloutRoom = 96
    /// Each column is written here first, to be padded.
    private let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: 128)
    /// The labels below, held by the sink: a `static let` is reached through a lazy-initialization
    /// check (`swift_once`) at every use.
    private let kindLabelBytes = TimelineSink.kindLabels, wakeLabelBytes = TimelineSink.wakeLabels
    /// Labels by raw value, written once and then only read.
    nonisolated(unsafe) private static let kindLabels: [UnsafeRawBufferPointer] = RLCalloutKind.allCases.sorted { $0.rawValue < $1.rawValue }.map { staticBytes($0.label) }
    nonisolated(unsafe) private static let wakeLabels: [UnsafeRawBufferPointer] = {
        let all = RLWakeReason.allCases
        let n = Int(all.map(\.rawValue).max() ?? 0) + 1
        return (0..<n).map { i in staticBytes(all.first { Int($0.rawValue) == i }?.label ?? "") }
    }()
    /// The bytes of `s`, kept for the process's life (labels, a few dozen bytes).
    private static func staticBytes(_ s: String) -> UnsafeRawBufferPointer {
        let u = Array(s.utf8)
        let p = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, u.count), alignment: 1)
        p.copyBytes(from: u)
        return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(p)[0..<u.count])
    }

    /// Writes what `body` writes (at most 64 bytes) aligned in `width` characters, with one space
    /// beside it when it is as wide or wider, as `lpad` and `pad` do for strings (widths count
    /// characters: `µ` is two bytes).
    @inline(__always)
    private func aligned(_ c: inout ByteCursor, _ width: Int, right: Bool, _ body: (inout ByteCursor) -> Void) {
        var t = ByteCursor(scratch)
        body(&t)
        let n = t.p - scratch
        // Characters: the bytes less the UTF-8 continuation bytes (10xxxxxx), counted eight at a time.
        var continuation = 0, i = 0
        while i &+ 8 <= n {
            let w = UnsafeRawPointer(scratch + i).loadUnaligned(as: UInt64.self)
            continuation &+= (w & ~(w << 1) & 0x8080_8080_8080_8080).nonzeroBitCount
            i &+= 8
        }
        while i < n { if scratch[i] & 0xC0 == 0x80 { continuation &+= 1 }; i &+= 1 }
        let chars = n &- continuation
        if !right { c.bytes(scratch, n) }
        if chars >= width { c.byte(0x20) } else { for _ in 0..<(width - chars) { c.byte(0x20) } }
        if right { c.bytes(scratch, n) }
    }

    /// Callout names (``UntrustedText/terminal(_:)``), rendered once per item.
    private let names = RenderedNames()

    /// Where a callout's name lies in `names`; nil while its item has none (its `#id` is written then).
    @inline(__always)
    private func nameRange(_ cl: CalloutRecord, _ pid: Int64) -> (start: Int, count: Int)? {
        names.range(of: cl, pid: pid) { cl in
            let n = name(cl, pid)
            return n.isEmpty ? nil : Array(UntrustedText.terminal(n).utf8)
        }
    }

    private func name(_ c: CalloutRecord, _ pid: Int64) -> String {
        c.kind == .mainQueue ? "main-queue" : (resolver?.name(of: c, pid: pid) ?? "")
    }

    /// Rendered lines: buffers in use by waiting rows, and those free for reuse (a steady stream
    /// of iterations allocates nothing).
    private var buffers: [[UInt8]] = []
    private var freeBuffers: [Int] = []
    /// Where a line is rendered before it is kept in a buffer.
    private let staging = ByteSink()
    /// Loop headers (`loop 3 (pid … tid …)`), and per loop number the last one rendered: a new one
    /// only when what it shows changed.
    private var headers: [[UInt8]] = []
    private var headerOf: [(tid: Int64, procname: String, threadName: String, index: Int)] = []

    /// The row of iteration `it` of `loop` (the `loopNumber`th loop seen), its line rendered unless
    /// the selection leaves it out.
    private func render(_ it: IterationRecord, _ loop: LoopInfo, loopNumber n: Int) -> Row {
        let h = headerOf[n]
        if h.index < 0 || h.tid != loop.tid || h.procname != loop.procname || h.threadName != loop.threadName {
            renderHeader(loop, loopNumber: n)
        }
        var r = Row(begin: it.begin, depth: it.depth, seq: seq, loop: it.key, header: headerOf[n].index)
        // Flags are about the whole iteration (a window that cuts a hang still shows it as one).
        r.hang = it.wholeBusyNs >= options.hangThresholdNs
        r.slow = !r.hang && it.wholeBusyNs >= options.slowThresholdNs
        r.clipped = it.clipped
        // Whether it is flagged only counts for the flagged-only selection: checked when printed
        // (whether it is in a spin is not known yet).
        guard accept(it) else { return r }
        let out = staging
        // The columns, through a cursor: each into `scratch`, then padded (widths count characters:
        // `µ` is two bytes).
        let origin = self.origin, epochOffset = self.epochOffset
        // The record's values as locals: a closure that reads the record copies it (its arrays
        // retained and released).
        let depth = min(it.depth, 1000), number = it.number, begin = it.begin, busy = it.busyNs, sleep = it.ownSleepNs
        let wake: RLWakeReason? = it.sleeps.first?.reason, polls = it.polls
        out.reserving(TimelineSink.columnsRoom + 4 * depth) { c in
            for _ in 0..<depth { c.write("    ") }
            aligned(&c, 11, right: true) { b in b.byte(0x23); b.uint(number) }
            c.write("  ")
            let abs = begin &+ epochOffset
            let secs = abs / 1_000_000_000, frac = abs % 1_000_000_000
            aligned(&c, 20, right: true) { b in
                b.int(secs); b.byte(0x2E)
                if frac >= 0 { b.nineDigits(UInt64(frac)) } else {
                    // (A time before the epoch: the digits of the negative remainder, as written before.)
                    var d: Int64 = 100_000_000
                    while d > 0 { b.byte(0x30 &+ UInt8(truncatingIfNeeded: (frac / d) % 10)); d /= 10 }
                }
            }
            aligned(&c, 12, right: true) { b in b.byte(0x2B); b.duration(begin &- origin) }
            aligned(&c, 12, right: true) { b in b.duration(busy) }
            aligned(&c, 11, right: true) { b in if sleep > 0 { b.duration(sleep) } else { b.byte(0x2D) } }
            c.write("  ")
            aligned(&c, 12, right: false) { b in
                if let wake { b.bytes(wakeLabelBytes[Int(wake.rawValue)]) } else if polls > 0 { b.write("poll") } else { b.byte(0x2D) }
            }
        }
        var first = true
        var observers = 0
        for cl in it.callouts {
            if cl.kind == .observer { observers += 1; if cl.duration < 1_000_000 { continue } }
            let name = nameRange(cl, it.key.pid)
            let depth = min(cl.depth, 1000)
            out.reserving(TimelineSink.calloutRoom + 3 * depth) { c in
                if !first { c.write(", ") }
                first = false
                for _ in 0..<depth { c.write("›") }
                c.bytes(kindLabelBytes[Int(cl.kind.rawValue)]); c.byte(0x28)
                if name == nil { c.byte(0x23); c.uint(cl.item) }
            }
            if let name { names.withBytes(name) { out.bytes($0) } }
            out.reserving(TimelineSink.calloutRoom) { c in c.write(") "); c.duration(cl.duration) }
        }
        if let o = it.overflow {
            // Past the model's limit the callouts are counted, not listed (LoopModel.calloutLimit).
            out.write(first ? "+" : ", +"); out.int(Int64(o.count - o.observers)); out.write(" more callouts")
            observers += o.observers
        }
        if observers > 0 { out.write(" ["); out.int(Int64(observers)); out.write(observers == 1 ? " observer]" : " observers]") }
        writeMode(it.mode, to: out)
        let b: Int
        if let f = freeBuffers.popLast() { b = f } else { b = buffers.count; buffers.append([]) }
        buffers[b].removeAll(keepingCapacity: true)
        staging.moveWritten(appendingTo: &buffers[b])
        r.buffer = b
        r.lateStart = buffers[b].count
        // The LATE flags, each after a space but the first (the line's other flags come before
        // them, and whether one does is known when the line is printed). (A clipped callout's
        // begin is the window's edge: its lateness is not known here.)
        var sep = false
        for cl in it.callouts where cl.kind == .timer && !cl.clipped {
            let d = saturatingDifference(cl.begin, cl.detail)
            guard d >= lateTimerNs else { continue }
            if sep { out.byte(0x20) }
            out.write("LATE "); out.write(UntrustedText.terminal(resolver?.name(of: .timer, item: cl.item, pid: it.key.pid) ?? "")); out.write(" +"); out.duration(d)
            sep = true
        }
        // Timers past the model's limit: each late one once, with its largest lateness.
        for x in it.overflow?.byItem ?? [] where x.longest.kind == .timer && x.maxLateNs >= lateTimerNs {
            if sep { out.byte(0x20) }
            out.write("LATE "); out.write(UntrustedText.terminal(resolver?.name(of: .timer, item: x.longest.item, pid: it.key.pid) ?? "")); out.write(" +"); out.duration(x.maxLateNs)
            sep = true
        }
        staging.moveWritten(appendingTo: &buffers[b])
        r.late = buffers[b].count > r.lateStart
        return r
    }

    /// Renders the header of loop `loop` (the `n`th loop seen) into `headers`.
    @inline(never)
    private func renderHeader(_ loop: LoopInfo, loopNumber n: Int) {
        let out = staging
        out.write("loop "); out.uint(loop.key.loop); out.write(" (")
        if let h = resolver?.hostName(of: loop.key.pid) { out.write("host "); out.write(UntrustedText.terminal(h)); out.byte(0x20) }
        out.write("pid "); out.int(loop.key.processID)
        if !loop.procname.isEmpty { out.byte(0x20); out.write(UntrustedText.terminal(loop.procname)) }
        out.write(" tid "); out.int(loop.tid)
        if !loop.threadName.isEmpty { out.write(" \""); out.write(UntrustedText.terminal(loop.threadName)); out.byte(0x22) }
        out.write(")\n")
        var h: [UInt8] = []
        out.moveWritten(appendingTo: &h)
        headerOf[n] = (loop.tid, loop.procname, loop.threadName, headers.count)
        headers.append(h)
    }

    /// Prints a row's line (unless the selection leaves it out), under its loop's header when the
    /// loop changed.
    private func print(_ r: Row) {
        guard r.buffer >= 0 else { return }
        defer { freeBuffers.append(r.buffer) }
        if selection.flaggedOnly && !(r.hang || r.slow || r.spin || r.late) { return }
        if currentLoop != r.loop {
            currentLoop = r.loop
            out.write(headers[r.header])
        }
        buffers[r.buffer].withUnsafeBytes { line in
            out.bytes(UnsafeRawBufferPointer(rebasing: line[..<r.lateStart]))
            if r.hang || r.slow || r.spin || r.late || r.clipped {
                out.write("  ◀ ")
                var sep = false
                if r.clipped { out.write("CLIPPED"); sep = true }     // cut by --begin/--end
                if sep && (r.hang || r.slow) { out.byte(0x20) }
                if r.hang { out.write("HANG"); sep = true } else if r.slow { out.write("SLOW"); sep = true }
                if r.spin { if sep { out.byte(0x20) }; out.write("SPIN"); sep = true }
                if r.late { if sep { out.byte(0x20) }; out.bytes(UnsafeRawBufferPointer(rebasing: line[r.lateStart...])) }
            }
        }
        out.newline()
        shown += 1
    }

    /// Per mode id, what a line shows for it (` {mode}`; nil for no mode and the default mode),
    /// worked out once per mode; the last one kept beside the table (a dictionary lookup per line
    /// cost 1.4 % of `timeline`'s instructions).
    private var modeLabels: [Int32: [UInt8]?] = [:]
    private var lastMode: (id: Int32, label: [UInt8]?) = (-1, nil)

    @inline(__always)
    private func writeMode(_ id: Int32, to out: ByteSink) {
        if id != lastMode.id {
            let label: [UInt8]?
            if let known = modeLabels[id] { label = known } else {
                let mode = resolver?.names[id] ?? ""
                label = mode.isEmpty || mode == "kCFRunLoopDefaultMode" ? nil : Array(" {\(UntrustedText.terminal(mode))}".utf8)
                modeLabels[id] = label
            }
            lastMode = (id, label)
        }
        if let l = lastMode.label { out.write(l) }
    }

    /// Whether the mode of name id `id` is the selected mode `m` (`default` also names
    /// `kCFRunLoopDefaultMode`): decided once per mode id (`modeDecisions`: 0 not yet, 1 yes, 2 no).

    /// Whether the selection keeps iteration `it`, its flags aside (``print(_:)`` applies
    /// `flaggedOnly`).
    private func accept(_ it: IterationRecord) -> Bool {
        if let st = selectionStage, st.filter.narrowsCallouts, !it.hasCallout(where: { st.selects($0, pid: it.key.pid) }) { return false }
        return true
    }

}
