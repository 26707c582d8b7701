import CTFReader
import RunLoopSchema

/// How to read one event class of the `runloop` provider (docs/tracepoints.md), resolved once from
/// the trace's metadata: which ``RunLoopEvent`` it is and at which payload position each value
/// lies, so decoding an event is a switch and a few integer reads.
struct EventPlan {
    /// `RunLoopEvent.Kind` raw value, or ``none`` for an event of another provider or unknown name.
    var kind: UInt8 = EventPlan.none
    /// The callout kind (callout events) or the item kind (registrations).
    var callout: RLCalloutKind = .observer
    /// Payload positions (-1: absent, read as 0).
    var loop = -1, iteration = -1, item = -1, a = -1, b = -1, c = -1
    /// The string field read into `RunLoopEvent.name`, and when it is read.
    var name = -1
    var nameRule = NameRule.never
    /// `kind` of item_added / item_removed / item_info / callout_cpu.
    var kindField = -1
    /// `procname` of loop_info.
    var procnameField = -1
    /// An exit without `item_id`, or an `iteration_end` without `iteration` (the schema since the
    /// constant pools): it closes the innermost open callout of its kind, or iteration — read as
    /// ``RunLoopEvent/innermost``.
    var innermost = false
    /// Whether the decoder has anything beyond integer reads and the name to do (`procname`,
    /// `kind`, ``innermost``): one test on the usual path.
    /// (Stored, set at the end of `init`: computed, it was three loads and tests per event.)
    private(set) var extras = false

    static let none: UInt8 = 255

    /// `forensic`: a hang watchdog event, recorded whole in the source's ``HangEvidenceStore``.
    enum NameRule { case never, always, firstPerItem, forensic }
    /// Event classes of `lttng_ust_statedump` and `lttng_ust_lib` (which binary is loaded where, per
    /// process): not delivered, read into the source's module map.
    static let aux: UInt8 = 254

    /// Resolves the plan of the event class `name` whose payload fields are `fields`; `missing` is
    /// set to a required integer field the class lacks (events of this class are then refused).
    init(eventName: String, fields: [String], missing: inout String?) {
        guard eventName.hasPrefix(RunLoopSchema.provider + ":") else {
            if eventName.hasPrefix("lttng_ust_statedump:") || eventName.hasPrefix("lttng_ust_lib:") { kind = EventPlan.aux }
            return
        }
        // Names are RunLoopSchema's (resolved once per event class, never per event).
        var k: RunLoopEvent.Kind?
        switch RunLoopSchema.event(named: eventName).flatMap({ RLSchemaEventID(name: $0.name) }) {
        case .loopCreated: k = .loopCreated
        case .loopDestroyed: k = .loopDestroyed
        case .runEnter: k = .runEnter
        case .runExit: k = .runExit
        case .iterationBegin: k = .iterationBegin
        case .iterationEnd: k = .iterationEnd
        case .sleepBegin: k = .sleepBegin
        case .wake: k = .wake
        case .wakeUpRequested: k = .wakeUpRequested
        case .source0Signalled: k = .source0Signalled
        case .timerArmed: k = .timerArmed
        case .itemAdded: k = .itemAdded
        case .itemRemoved: k = .itemRemoved
        case .hangBegin: k = .hangBegin
        case .hangStack: k = .hangStack
        case .hangEnd: k = .hangEnd
        case .loopInfo: k = .loopInfo
        case .itemInfo: k = .itemInfo
        case .calloutCpu: k = .calloutCpu
        case let id?:
            if let c = id.callout { k = c.isEntry ? .calloutEntry : .calloutExit; callout = c.kind }
        case nil: break
        }
        guard let kind = k else { return }
        self.kind = kind.rawValue
        func req(_ f: RLSchemaFieldName) -> Int {
            if let i = fields.firstIndex(of: f.rawValue) { return i }
            if missing == nil { missing = f.rawValue }
            return -1
        }
        // A field added to the schema later (`iteration` of lifecycle, cross-thread and registration
        // events; `loop_id` and `signal_seq` of `source0_signalled`): 0 when the trace predates it.
        func opt(_ f: RLSchemaFieldName) -> Int { fields.firstIndex(of: f.rawValue) ?? -1 }
        // Every event names its loop; `source0_signalled` of a source in no loop names loop 0; a
        // hang event lacking a field is read as far as it goes (HangEvidenceStore), never refused.
        loop = kind == .source0Signalled || kind == .hangBegin || kind == .hangStack || kind == .hangEnd ? opt(.loopID) : req(.loopID)
        switch kind {
        case .loopCreated:
            iteration = opt(.iteration); a = req(.tid); name = opt(.threadName); nameRule = .always
        case .loopDestroyed:
            iteration = opt(.iteration); a = req(.tid)
        case .runEnter:
            iteration = req(.iteration); name = opt(.mode); nameRule = .always
            a = req(.timeoutNs); b = req(.depth); c = req(.returnAfterSourceHandled)
        case .runExit:
            iteration = req(.iteration); name = opt(.mode); nameRule = .always
            a = req(.result); b = req(.depth)
        case .iterationBegin:
            iteration = req(.iteration)
        case .iterationEnd:
            iteration = opt(.iteration); b = req(.handledSource); c = req(.callouts)
            innermost = iteration < 0
        case .calloutEntry, .calloutExit:
            // Since the constant pools, callouts carry ids only (no iteration, no name but a
            // block's): traces of either schema read.
            iteration = opt(.iteration)
            if callout != .mainQueue { item = kind == .calloutEntry ? req(.itemID) : opt(.itemID) }
            innermost = kind == .calloutExit && callout != .mainQueue && item < 0
            switch callout {
            case .observer: a = kind == .calloutEntry ? req(.activity) : opt(.activity)
            case .source1: a = opt(.fd); b = opt(.events)
            case .timer: a = kind == .calloutEntry ? req(.scheduledNs) : opt(.scheduledNs)
            default: break
            }
            if kind == .calloutEntry && callout != .mainQueue {
                name = opt(.name)
                // Every perform-block is its own item: its name is read every time (interned).
                nameRule = callout == .block ? .always : .firstPerItem
            }
        case .sleepBegin:
            iteration = opt(.iteration); a = req(.timeoutNs); b = req(.deadlineNs)
        case .wake:
            iteration = opt(.iteration); b = req(.reason); a = req(.fd); c = req(.sleptNs)
        case .wakeUpRequested:
            iteration = opt(.iteration); b = req(.accepted); a = req(.callerTid)
        case .source0Signalled:
            callout = .source0
            iteration = opt(.iteration); item = req(.itemID); a = req(.callerTid); c = opt(.signalSeq)
            name = opt(.name); nameRule = .firstPerItem
        case .timerArmed:
            iteration = opt(.iteration); item = req(.itemID); a = req(.fireNs); c = req(.intervalNs); b = req(.missedFires)
        case .itemAdded, .itemRemoved:
            iteration = opt(.iteration); item = req(.itemID); name = opt(.name); nameRule = .always
            kindField = opt(.kind)
        case .hangBegin, .hangStack, .hangEnd:
            iteration = opt(.iteration); a = opt(.hangID)
            name = 0; nameRule = .forensic
        case .loopInfo:
            a = req(.tid); b = req(.pid); name = opt(.threadName); nameRule = .always; procnameField = opt(.procname)
        case .itemInfo:
            item = req(.itemID); name = opt(.name); nameRule = .always; kindField = req(.kind)
        case .calloutCpu:
            item = req(.itemID); a = req(.elapsedNs); b = req(.cpuNs); kindField = req(.kind)
        case .gap:
            break
        }
        extras = procnameField >= 0 || kindField >= 0 || innermost
    }
}

/// The plans of one stream, by event class index, and the positions of its context fields.
final class StreamPlan {
    private let plans: UnsafeMutablePointer<EventPlan>
    /// The plans' kinds, whether each class lacks a required field, and which.
    let kinds: UnsafeMutablePointer<UInt8>
    let incomplete: UnsafeMutablePointer<UInt8>
    let missing: [String?]
    /// Stream event context positions of `vpid`, `vtid`, `procname` and the thread's CPU clock
    /// (`perf_thread_task_clock`, ns) (-1: absent).
    let vpid: Int, vtid: Int, procname: Int, taskClock: Int
    /// Per event class, room for ``readCount`` integer references: those of the fields the class
    /// has (the context's `vpid`, `vtid` and CPU clock, the plan's payload fields), each with the
    /// ``RunLoopEvent`` field it is read into as its destination (the field's byte offset / 8);
    /// ``readCounts`` says how many.
    let reads: UnsafeMutablePointer<CTFIntegerRef>
    /// The integers ``RunLoopFieldDecoder`` reads per event, each into a ``RunLoopEvent`` field.
    enum Read: Int, CaseIterable {
        case pid, vtid, cpu, loop, iteration, item, a, b, c

        /// The field's position in a ``RunLoopEvent``, in 8-byte words.
        var destination: Int {
            let k: PartialKeyPath<RunLoopEvent>
            switch self {
            case .pid: k = \RunLoopEvent.pid
            case .vtid: k = \RunLoopEvent.vtid
            case .cpu: k = \RunLoopEvent.cpu
            case .loop: k = \RunLoopEvent.loop
            case .iteration: k = \RunLoopEvent.iteration
            case .item: k = \RunLoopEvent.item
            case .a: k = \RunLoopEvent.a
            case .b: k = \RunLoopEvent.b
            case .c: k = \RunLoopEvent.c
            }
            let offset = MemoryLayout<RunLoopEvent>.offset(of: k)!
            precondition(offset % 8 == 0 && MemoryLayout<RunLoopEvent>.alignment >= 8, "RunLoopEvent's integer fields are 8-byte aligned")
            return offset / 8
        }
    }
    static let readCount = Read.allCases.count
    /// Per event class, how many of its ``reads`` there are (the fields it has).
    let readCounts: UnsafeMutablePointer<Int>
    /// Per event class, whether every one of its ``reads`` is read in place (``CTFIntegerRef/readsInPlace``).
    let readsInPlace: UnsafeMutablePointer<Bool>
    /// Per event class, the `kind` field of `item_added` / `item_removed` (absent for the others).
    let kindReads: UnsafeMutablePointer<CTFIntegerRef>
    /// The procname of the last thread seen in this stream (a thread's events come in runs).
    var lastVtid: Int64 = .min
    var lastProcname: Int32 = -1
    /// The stream's host (``RunLoopEventSource/hosts``) in a process key's high bits (``LoopKey``):
    /// 0 for the first host, so a trace of one host reads as before.
    var hostBits: Int64 = 0
    /// What moves the stream's host's times onto the first host's clock (``TraceHost/shiftNs``).
    var hostShiftNs: Int64 = 0

    init(_ s: CTFStream, providers: inout Set<String>) {
        var plans: [EventPlan] = [], missing: [String?] = []
        for (i, cls) in s.eventClasses.enumerated() {
            if let colon = cls.name.firstIndex(of: ":") { providers.insert(String(cls.name[..<colon])) }
            var m: String?
            plans.append(EventPlan(eventName: cls.name, fields: s.payloadFieldNames(ofClass: i), missing: &m))
            missing.append(m)
        }
        self.plans = .allocate(capacity: max(1, plans.count))
        self.plans.initialize(from: plans, count: plans.count)
        kinds = .allocate(capacity: max(1, plans.count))
        kinds.initialize(from: plans.map(\.kind), count: plans.count)
        incomplete = .allocate(capacity: max(1, plans.count))
        incomplete.initialize(from: missing.map { $0 != nil ? 1 : 0 }, count: plans.count)
        self.missing = missing
        let ctx = s.streamContextFieldNames
        vpid = ctx.firstIndex(of: "vpid") ?? -1
        vtid = ctx.firstIndex(of: "vtid") ?? -1
        procname = ctx.firstIndex(of: "procname") ?? -1
        taskClock = ctx.firstIndex(of: "perf_thread_task_clock") ?? -1
        // Per class, only the fields it has, each with where its value goes.
        let n = StreamPlan.readCount
        reads = .allocate(capacity: max(1, plans.count * n))
        readCounts = .allocate(capacity: max(1, plans.count))
        readsInPlace = .allocate(capacity: max(1, plans.count))
        kindReads = .allocate(capacity: max(1, plans.count))
        let destinations = Read.allCases.map(\.destination)
        for (ci, p) in plans.enumerated() {
            let all: [(Read, CTFIntegerRef)] = [
                (.pid, s.integerRef(contextField: vpid, ofClass: ci)),
                (.vtid, s.integerRef(contextField: vtid, ofClass: ci)),
                (.cpu, s.integerRef(contextField: taskClock, ofClass: ci)),
                (.loop, s.integerRef(payloadField: p.loop, ofClass: ci)),
                (.iteration, s.integerRef(payloadField: p.iteration, ofClass: ci)),
                (.item, s.integerRef(payloadField: p.item, ofClass: ci)),
                (.a, s.integerRef(payloadField: p.a, ofClass: ci)),
                (.b, s.integerRef(payloadField: p.b, ofClass: ci)),
                (.c, s.integerRef(payloadField: p.c, ofClass: ci)),
            ]
            var k = 0
            var inPlace = true
            for (what, ref) in all where ref.isPresent {
                inPlace = inPlace && ref.readsInPlace
                var r = ref
                r.destination = destinations[what.rawValue]
                reads[ci * n + k] = r
                k += 1
            }
            readCounts[ci] = k
            readsInPlace[ci] = inPlace
            (kindReads + ci).initialize(to: s.integerRef(payloadField: p.kindField, ofClass: ci))
        }
    }

    deinit { plans.deallocate(); kinds.deallocate(); incomplete.deallocate(); reads.deallocate(); readCounts.deallocate(); readsInPlace.deallocate(); kindReads.deallocate() }

    /// The integer references of event class `index` (`readCounts[index]` of them).
    @inline(__always)
    func reads(_ index: Int) -> UnsafePointer<CTFIntegerRef> { UnsafePointer(reads + index &* StreamPlan.readCount) }

    /// Whether events of class `index` are ones the loop model takes: complete `runloop` events.
    @inline(__always)
    func takes(_ index: Int) -> Bool { kinds[index] < EventPlan.aux && incomplete[index] == 0 }

    /// The plan of event class `index`.
    @inline(__always)
    func plan(_ index: Int) -> UnsafePointer<EventPlan> { UnsafePointer(plans + index) }
}
