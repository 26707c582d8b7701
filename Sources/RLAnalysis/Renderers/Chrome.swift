import CTFReader

/// `rltrace export --format chrome`: Chrome Trace Event JSON (opens in Perfetto and chrome://tracing),
/// written to the file as the trace is read. Per loop thread, strictly nested complete slices:
/// run → iteration → sleep / callout (→ nested run …); thread and process names; a busy-ratio
/// counter per loop; flow arrows from the thread that woke or signalled a loop to the loop's wake
/// or perform. Times are µs after the trace's first event, written with three decimals (exact ns).
public final class ChromeTraceSink: LoopModelSink, NameResolving, SelectionAware {
    /// The model, for names and loops.
    public var resolver: LoopModel? {
        didSet { model = resolver.map { Unmanaged.passUnretained($0) } }
    }
    /// `resolver`, unretained (it holds the model while set): the per-callout lookups make no
    /// retain or release.
    private var model: Unmanaged<LoopModel>?
    /// The pipeline's selection (which loops the thread names are written for).
    public var selectionStage: SelectionStage?
    private let out: ByteSink
    private let strips = BusyStripCollector()
    private var origin: Int64 = 0
    private var first = true
    private var flowID = 0
    private var openRuns: [LoopKey: [(mode: String, ts: Int64, depth: Int)]] = [:]
    /// An export written to `out` (what it holds is chosen by the pipeline's selection).
    public init(out: ByteSink) {
        self.out = out
        out.write("{\"traceEvents\":[\n")
    }

    public func traceBegins(at ts: Int64, epochOffset: Int64) {
        origin = ts
        self.epochOffset = epochOffset
        strips.traceBegins(at: ts, epochOffset: epochOffset)
    }
    private var epochOffset: Int64 = 0

    /// The thread id shown for a loop (its thread, else its loop id).
    @inline(__always)
    private func tid(_ key: LoopKey) -> Int64? {
        guard let model else { return nil }
        return model._withUnsafeGuaranteedRef { m in
            guard let t = m.threadID(of: key) else { return nil }
            return t >= 0 ? t : Int64(bitPattern: key.loop)
        }
    }

    @inline(__always) private func begin() {
        if first { first = false } else { out.write(",\n") }
    }
    /// A time in µs with 3 decimals (`"ts":…`, `"dur":…`).
    @inline(__always) private func micros(_ ns: Int64) { out.reserving(25) { ChromeTraceSink.micros(&$0, ns) } }
    /// ``micros(_:)`` through a cursor (at most 25 bytes).
    @inline(__always) private static func micros(_ c: inout ByteCursor, _ ns: Int64) {
        if ns < 0 { c.byte(0x2D) }
        let m = ns.magnitude
        c.uint(m / 1000); c.byte(0x2E)
        let f = m % 1000
        c.byte(0x30 &+ UInt8(f / 100)); c.byte(0x30 &+ UInt8(f / 10 % 10)); c.byte(0x30 &+ UInt8(f % 10))
    }
    /// Room for a slice record written through a cursor, beyond its name: the keys, punctuation,
    /// six numbers of at most 25 bytes and a category.
    private static let sliceRoom = 320

    /// A complete slice. `args` writes the members of its `args` object through a cursor (at most
    /// `argsRoom` bytes more than a record's numbers need); `name` writes its name, of any length,
    /// to `out`.
    @inline(__always)
    private func slice(cat: StaticString, pid: Int64, tid: Int64, ts: Int64, dur: Int64, hasArgs: Bool = true, argsRoom: Int = 0,
                       args: (inout ByteCursor) -> Void, name: () -> Void) {
        out.reserving(ChromeTraceSink.sliceRoom + argsRoom) { c in
            if first { first = false } else { c.write(",\n") }
            if hasArgs { c.write("{\"args\":{"); args(&c); c.write("},\"cat\":\"") } else { c.write("{\"cat\":\"") }
            c.write(cat); c.write("\",\"dur\":"); ChromeTraceSink.micros(&c, dur); c.write(",\"name\":")
        }
        name()
        let origin = self.origin
        out.reserving(ChromeTraceSink.sliceRoom) { c in
            c.write(",\"ph\":\"X\",\"pid\":"); c.int(LoopKey.exportPID(pid)); c.write(",\"tid\":"); c.int(tid)
            c.write(",\"ts\":"); ChromeTraceSink.micros(&c, ts &- origin); c.byte(0x7D)
        }
    }

    /// The flow kinds' names as JSON string literals.
    private static let wakeUpName = jsonBytes("wakeUp"), signalName = jsonBytes("signal")

    /// `s` as a JSON string literal.
    private static func jsonBytes(_ s: String) -> [UInt8] {
        var s = s, b: [UInt8] = []
        s.withUTF8 { appendJSONString($0, to: &b) }
        return b
    }

    public func run(_ enter: Bool, mode: String, depth: Int, result: Int64, at ts: Int64, of key: LoopKey) {
        if enter { openRuns[key, default: []].append((mode, ts, depth)); return }
        guard let o = openRuns[key]?.popLast(), let t = tid(key) else { return }
        let mode = ChromeTraceSink.jsonBytes(o.mode)
        slice(cat: "run", pid: key.pid, tid: t, ts: o.ts, dur: ts &- o.ts, argsRoom: mode.count, args: { c in
            c.write("\"depth\":"); c.int(Int64(o.depth)); c.write(",\"mode\":"); mode.withUnsafeBytes { c.bytes($0) }
            c.write(",\"result\":"); c.int(result)
        }, name: { out.jsonString("run \(o.mode == "kCFRunLoopDefaultMode" ? "default" : o.mode)") })
    }

    public func iteration(_ it: IterationRecord, of loop: LoopInfo) {
        strips.iteration(it, of: loop)
        let t = loop.tid >= 0 ? loop.tid : Int64(bitPattern: loop.key.loop)
        let pid = it.key.pid
        slice(cat: "iteration", pid: pid, tid: t, ts: it.begin, dur: it.duration, args: { c in
            c.write("\"busy_ns\":"); c.int(it.busyNs); c.write(",\"handled_source\":")
            if it.handledSource { c.write("true") } else { c.write("false") }
            c.write(",\"iteration\":"); c.uint(it.number)
        }, name: { out.write("\"iteration\"") })
        for s in it.sleeps {
            var label = s.reason.label
            label.withUTF8 { label in
                slice(cat: "sleep", pid: pid, tid: t, ts: s.begin, dur: s.duration, argsRoom: label.count, args: { c in
                    c.write("\"fd\":"); c.int(s.fd); c.write(",\"reason\":\""); c.bytes(UnsafeRawBufferPointer(label)); c.byte(0x22)
                }, name: { out.write("\"sleep → "); out.bytes(UnsafeRawBufferPointer(label)); out.byte(0x22) })
            }
        }
    }

    /// Every callout, also those outside any iteration (a run's entry and exit observers).
    ///
    /// The hottest record of the export (one per callout): written as the constant text before
    /// its category, the category with the keys around it (one literal per kind), and its name with
    /// everything up to its time (`"name","ph":"X","pid":P,"tid":T,"ts":`), rendered once per item
    /// and thread — the same bytes as ``slice(cat:pid:tid:ts:dur:hasArgs:argsRoom:args:name:)``.
    public func callout(_ cl: CalloutRecord, of key: LoopKey) {
        guard let t = tid(key) else { return }
        let catAndDur: StaticString
        switch cl.kind {
        case .observer: catAndDur = "},\"cat\":\"observer\",\"dur\":"
        case .source0: catAndDur = "},\"cat\":\"source0\",\"dur\":"
        case .source1: catAndDur = "},\"cat\":\"source1\",\"dur\":"
        case .timer: catAndDur = "},\"cat\":\"timer\",\"dur\":"
        case .mainQueue: catAndDur = "},\"cat\":\"main_queue\",\"dur\":"
        case .block: catAndDur = "},\"cat\":\"block\",\"dur\":"
        }
        out.reserving(ChromeTraceSink.sliceRoom) { c in
            if first { first = false } else { c.write(",\n") }
            c.write("{\"args\":{\"detail\":"); c.int(cl.detail); c.write(",\"item\":"); c.uint(cl.item)
            c.write(catAndDur); ChromeTraceSink.micros(&c, cl.duration); c.write(",\"name\":")
        }
        let origin = self.origin
        if let r = tailRange(cl, pid: key.pid, tid: t) {
            tails.withBytes(r) { out.bytes($0) }
        } else {
            // An item not named yet: written each time, so its name shows once known.
            writeUncachedName(cl, pid: key.pid)
            out.reserving(ChromeTraceSink.sliceRoom) { c in
                c.write(",\"ph\":\"X\",\"pid\":"); c.int(LoopKey.exportPID(key.pid)); c.write(",\"tid\":"); c.int(t); c.write(",\"ts\":")
            }
        }
        out.reserving(32) { c in ChromeTraceSink.micros(&c, cl.begin &- origin); c.byte(0x7D) }
    }

    /// Callout slice names (`"timer heartbeat"`, a JSON string) with the record's tail up to its
    /// time, rendered once per item and thread (``callout(_:of:)``).
    private let tails = RenderedNames()

    /// Where a callout record's name and tail lie in `tails`; nil for an item not named yet (its
    /// name is written each time by ``writeUncachedName(_:pid:)``, so it shows once known).
    @inline(__always)
    private func tailRange(_ cl: CalloutRecord, pid: Int64, tid: Int64) -> (start: Int, count: Int)? {
        tails.range(of: cl, pid: pid, context: tid) { cl in
            let name = cl.kind == .mainQueue ? "main-queue" : (resolver?.name(of: cl, pid: pid) ?? "")
            guard !name.isEmpty || !cl.namedByItem else { return nil }
            var text = "\(cl.kind.label) \(name)"
            var bytes: [UInt8] = []
            text.withUTF8 { appendJSONString($0, to: &bytes) }
            bytes += Array(",\"ph\":\"X\",\"pid\":\(LoopKey.exportPID(pid)),\"tid\":\(tid),\"ts\":".utf8)
            return bytes
        }
    }

    public func sleep(_ s: SleepRecord, of key: LoopKey) { strips.sleep(s, of: key) }

    /// The watchdog's events, written as instant events on the hung loop's thread at the end.
    private let watchdog = WatchdogCollector()
    private var hangLoops: [LoopKey] = []
    public func hang(_ record: HangEventRecord, of key: LoopKey) {
        if !hangLoops.contains(key) { hangLoops.append(key) }
        watchdog.add(record, of: key)
    }

    /// Per watchdog hang: an instant `hang #N detected` where it was noticed, and one
    /// `hang #N stack (×count)` per run of identical stack samples, its frames in `args.frames`.
    private func writeHangs() {
        guard !hangLoops.isEmpty else { return }
        let symbolizer = StackSymbolizer(modules: resolver?.evidence?.modules ?? [])
        for key in hangLoops {
            guard let t = tid(key) else { continue }
            for h in watchdog.merge([], key: key, symbolizer: symbolizer) {
                guard let w = h.watchdog else { continue }
                instant("hang #\(w.hangId) detected", pid: key.pid, tid: t, ts: w.detectedNs) {
                    out.write("\"hang_id\":"); out.uint(w.hangId); out.write(",\"item\":"); out.jsonString("\(w.kind) \(w.name) #\(w.item)")
                    out.write(",\"stuck_ns\":"); out.int(w.durationNs ?? -1); out.write(",\"threshold_ns\":"); out.int(w.thresholdNs)
                }
                for g in h.stacks ?? [] {
                    instant("hang #\(w.hangId) stack (×\(g.count))", pid: key.pid, tid: t, ts: g.firstNs) {
                        out.write("\"elapsed_ns\":"); out.int(g.firstElapsedNs); out.write(",\"frames\":[")
                        for (i, f) in g.frames.enumerated() { if i > 0 { out.byte(0x2C) }; out.jsonString(f.text) }
                        out.write("],\"samples\":"); out.jsonString(g.count == 1 ? "\(g.firstSample)" : "\(g.firstSample)-\(g.lastSample)")
                    }
                }
            }
        }
    }

    private func instant(_ name: String, pid: Int64, tid: Int64, ts: Int64, args: () -> Void) {
        begin()
        out.write("{\"args\":{"); args(); out.write("},\"cat\":\"hang\",\"name\":"); out.jsonString(name)
        out.write(",\"ph\":\"i\",\"pid\":"); out.int(LoopKey.exportPID(pid)); out.write(",\"s\":\"t\",\"tid\":"); out.int(tid)
        out.write(",\"ts\":"); micros(ts &- origin); out.byte(0x7D)
    }

    /// The name of a callout whose item has none (yet): `"source0 #21"`.
    @inline(never)
    private func writeUncachedName(_ cl: CalloutRecord, pid: Int64) {
        let name = cl.kind == .mainQueue ? "main-queue" : (resolver?.name(of: cl, pid: pid) ?? "")
        out.jsonString("\(cl.kind.label) \(name.isEmpty ? "#\(cl.item)" : name)")
    }

    public func flow(_ f: Flow) {
        guard let t = tid(f.to) else { return }
        flowID += 1
        // On a loop's thread the arrow starts from the slice the request was made in (the enclosing
        // callout: `s` binds to it); elsewhere a zero-length slice anchors it (a 1 µs one could
        // outlast its enclosing callout, or overlap the next anchor).
        if !(resolver?.isLoopThread(f.fromTid, pid: f.to.pid) ?? false) {
            slice(cat: "flow", pid: f.to.pid, tid: f.fromTid, ts: f.fromTs, dur: 0, hasArgs: false, args: { _ in }, name: { out.jsonString(f.kind.rawValue) })
        }
        let name = f.kind == .wakeUp ? ChromeTraceSink.wakeUpName : ChromeTraceSink.signalName
        let origin = self.origin
        for end in 0..<2 {
            let ts = end == 0 ? f.fromTs : f.toTs, th = end == 0 ? f.fromTid : t
            out.reserving(ChromeTraceSink.sliceRoom + name.count) { c in
                if first { first = false } else { c.write(",\n") }
                if end == 1 { c.write("{\"bp\":\"e\",") } else { c.byte(0x7B) }
                c.write("\"cat\":\"flow\",\"id\":"); c.int(Int64(flowID)); c.write(",\"name\":"); name.withUnsafeBytes { c.bytes($0) }
                c.write(",\"ph\":\""); if end == 1 { c.byte(0x66) } else { c.byte(0x73) }
                c.write("\",\"pid\":"); c.int(LoopKey.exportPID(f.to.pid)); c.write(",\"tid\":"); c.int(th)
                c.write(",\"ts\":"); ChromeTraceSink.micros(&c, ts &- origin); c.byte(0x7D)
            }
        }
    }

    /// Writes the names and counters (known at the end) and closes the document. `end` is the
    /// trace's last event time.
    public func finish(end: Int64) {
        writeHangs()
        let loops = (resolver?.loops ?? []).filter { selectionStage?.filter.acceptsLoop($0) ?? true }
        var seenProcesses = Set<Int64>()
        for l in loops {
            let t = l.tid >= 0 ? l.tid : Int64(bitPattern: l.key.loop)
            begin()
            out.write("{\"args\":{\"name\":"); out.jsonString("\(l.threadName.isEmpty ? "thread \(t)" : l.threadName) — loop \(l.key.loop)")
            out.write("},\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":"); out.int(LoopKey.exportPID(l.key.pid)); out.write(",\"tid\":"); out.int(t); out.byte(0x7D)
            if seenProcesses.insert(l.key.pid).inserted {
                begin()
                out.write("{\"args\":{\"name\":"); out.jsonString(resolver?.processTitle(l) ?? l.procname)
                out.write("},\"name\":\"process_name\",\"ph\":\"M\",\"pid\":"); out.int(LoopKey.exportPID(l.key.pid)); out.byte(0x7D)
            }
        }
        let bins = 200
        if end > origin {
            let width = Double(end - origin) / Double(bins)
            for l in loops {
                for (i, v) in strips.strip(l.key, begin: origin, end: end, bins: bins).enumerated() {
                    begin()
                    out.write("{\"args\":{\"busy\":"); out.write(String((v * 1000).rounded() / 1000))
                    out.write("},\"name\":"); out.jsonString("busy ratio (loop \(l.key.loop))")
                    out.write(",\"ph\":\"C\",\"pid\":"); out.int(LoopKey.exportPID(l.key.pid)); out.write(",\"ts\":"); micros(Int64((Double(i) * width).rounded(.down)))
                    out.byte(0x7D)
                }
            }
        }
        out.write("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"rltrace\",\"origin_monotonic_ns\":")
        out.int(origin); out.write(",\"origin_epoch_ns\":"); out.int(origin &+ epochOffset); out.write("}}\n")
        out.flush()
    }

}
