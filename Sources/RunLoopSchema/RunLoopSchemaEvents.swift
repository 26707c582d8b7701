// The events of the `runloop` provider, each declared once: its name, event class, log level, payload
// fields (CTF kind; Swift parameter label and type, or derived), how RunLoopTracing reaches its C
// emitter, and RLTrace's public function for it (name, doc comment). Everything Tools/rl-tpgen
// generates for an event comes from its declaration here (docs/tracepoints.md).

extension RunLoopSchema {
    /// Every event, in the header's order (index = ``RLSchemaEventID`` raw value).
    public static let events: [RLSchemaEvent] = {
        typealias F = RLSchemaField
        typealias S = RLSchemaSwiftFunction
        // A field, its Swift parameter's label and type.
        func int(_ n: RLSchemaFieldName, _ t: RLSchemaInteger, _ label: String) -> F { F(n, .integer(t), source: .parameter(label, .integer)) }
        func flag(_ n: RLSchemaFieldName, _ label: String) -> F { F(n, .integer(.u8), source: .parameter(label, .bool)) }
        func str(_ n: RLSchemaFieldName, _ label: String) -> F { F(n, .string, source: .parameter(label, .name)) }
        func enm(_ n: RLSchemaFieldName, _ e: String, _ label: String, _ t: RLSchemaSwiftType) -> F {
            F(n, .enumeration(e, container: .u8), source: .parameter(label, t))
        }
        let loop = int(.loopID, .u64, "loop"), iter = int(.iteration, .u64, "iteration")
        let item = int(.itemID, .u64, "item"), name = str(.name, "name"), mode = str(.mode, "mode")
        let kind = enm(.kind, "callout_kind", "kind", .calloutKind)
        // The per-callout events carry ids only (docs/tracepoints.md, "Constant pools"): the
        // loop and item are described once by `loop_info` / `item_info` (and `loop_created`,
        // `item_added`), the iteration is the one `iteration_begin` opened, and an exit closes the
        // innermost open callout of its kind, so it names its loop alone.
        let observer = [loop, item, enm(.activity, "activity", "activity", .integer)]
        let itemCallout = [loop, item]
        let exit = [loop]
        let registration = [loop, iter, kind, item, name, mode]
        let callerTid = F(.callerTid, .integer(.s32), source: .callingThread)
        let exitDoc = ["Exit from the innermost open callout of this kind."]
        // `emit`: see RLSchemaSwiftEmitter (nil: out of line when the event has a string or a sequence).
        func ev(_ n: String, _ c: String? = nil, _ l: RLSchemaLogLevel, _ f: [F], emit: RLSchemaSwiftEmitter? = nil,
                _ swift: S) -> RLSchemaEvent {
            RLSchemaEvent(name: n, eventClass: c, logLevel: l, fields: f, swiftEmitter: emit, swift: swift)
        }
        return [
            ev("loop_created", nil, .info, [loop, iter, int(.tid, .s32, "tid"), str(.threadName, "threadName")],
               S(name: "loopCreated", doc: ["A run loop was created for thread `tid` (its name, if any); `iteration` is its counter (0)."],
                 section: ["MARK: lifecycle (INFO)"])),
            ev("loop_destroyed", nil, .info, [loop, iter, int(.tid, .s32, "tid")], emit: .outOfLine,
               S(name: "loopDestroyed", doc: ["A run loop was destroyed (its thread exited or it was released) after `iteration` iterations."])),
            ev("run_enter", nil, .info, [loop, iter, mode, int(.timeoutNs, .s64, "timeoutNs"),
                                         flag(.returnAfterSourceHandled, "returnAfterSourceHandled"), int(.depth, .u32, "depth")],
               S(name: "runEnter", doc: ["A run activation started. `timeoutNs`: -1 = no timeout (run forever), 0 = poll."])),
            ev("run_exit", nil, .info, [loop, iter, mode, enm(.result, "run_result", "result", .integer), int(.depth, .u32, "depth")],
               S(name: "runExit", doc: ["A run activation returned `result` (CF's raw values: finished 1, stopped 2, timedOut 3, handledSource 4)."])),
            ev("iteration_begin", nil, .debug, [loop, iter], emit: .outOfLine,
               S(name: "iterationBegin", doc: ["Iteration `iteration` of `loop` begins (iteration numbers are per loop, across runs)."],
                 section: ["MARK: iterations (DEBUG)"])),
            ev("iteration_end", nil, .debug, [loop, flag(.handledSource, "handledSource"), int(.callouts, .u32, "callouts")],
               S(name: "iterationEnd", doc: ["The innermost open iteration ends; `callouts` counts every callout of the iteration",
                                             "(observers included)."])),
            ev("observer_entry", nil, .debug, observer,
               S(name: "observerEntry", doc: ["Entry into an observer callout for `activity` (CF's activity bit)."],
                 section: ["MARK: callouts (DEBUG): an entry and an exit per callout",
                           "Ids only: an item's name, kind and modes are described by `itemAdded` and the watchdog's",
                           "`itemInfo`, the loop's process and thread by `loopCreated` and `loopInfo`, the iteration by",
                           "`iterationBegin` (docs/tracepoints.md, \"Constant pools\"). Only a block names itself",
                           "(`blockEntry`, hand-written: RLTraceEmit.swift)."])),
            ev("observer_exit", "loop_callout", .debug, exit, S(name: "observerExit", doc: exitDoc)),
            ev("source0_entry", "item_callout", .debug, itemCallout, S(name: "source0Entry", doc: ["Entry into a source0's perform."])),
            ev("source0_exit", "loop_callout", .debug, exit, S(name: "source0Exit", doc: exitDoc)),
            ev("block_entry", "item_callout", .debug, itemCallout, emit: .handWritten,
               S(name: "blockEntry", doc: ["Entry into a perform-block (hand-written: RLTraceEmit.swift)."])),
            ev("block_exit", "loop_callout", .debug, exit, S(name: "blockExit", doc: exitDoc)),
            ev("source1_entry", nil, .debug, [loop, item, int(.fd, .s32, "fd"), int(.events, RLSchemaInteger.u32.inHex, "events")],
               S(name: "source1Entry", doc: ["Entry into a source1's callout on `fd`; `events` is the epoll readiness mask."])),
            ev("source1_exit", "loop_callout", .debug, exit, S(name: "source1Exit", doc: exitDoc)),
            ev("timer_entry", nil, .debug, [loop, item, int(.scheduledNs, .u64, "scheduledNs")],
               S(name: "timerEntry", doc: ["Entry into a timer's callout; `scheduledNs` is the fire time it was due at."])),
            ev("timer_exit", "loop_callout", .debug, exit, S(name: "timerExit", doc: exitDoc)),
            ev("main_queue_entry", "loop_callout", .debug, exit, S(name: "mainQueueEntry", doc: ["Entry into the main-queue drain."])),
            ev("main_queue_exit", "loop_callout", .debug, exit, S(name: "mainQueueExit", doc: ["Exit from the main-queue drain."])),
            ev("sleep_begin", nil, .debug, [loop, int(.timeoutNs, .s64, "timeoutNs"), int(.deadlineNs, .u64, "deadlineNs")],
               S(name: "sleepBegin", doc: ["The loop is about to sleep. `timeoutNs`: -1 = unbounded, else ns until the run's deadline;",
                                           "`deadlineNs`: the absolute time the wake timer is armed for (0 = not armed)."],
                 section: ["MARK: sleep and wake (DEBUG), in the iteration `iterationBegin` opened"])),
            ev("wake", nil, .debug, [loop, enm(.reason, "wake_reason", "reason", .wakeReason),
                                     int(.fd, .s32, "fd"), int(.sleptNs, .u64, "sleptNs")],
               S(name: "wake", doc: ["The loop woke (or polled): `reason`, the ready fd (-1 if none) and the time slept."])),
            ev("wakeup_requested", nil, .debug, [loop, flag(.accepted, "accepted"), callerTid],
               S(name: "wakeUpRequested", doc: ["Someone asked `loop` to wake up (`accepted` false when the loop was ignoring wake-ups)."],
                 section: ["MARK: cross-thread requests (DEBUG, emitted on the caller's thread, with its tid)"])),
            ev("source0_signalled", nil, .debug, [loop, item, int(.signalSeq, .u64, "signalSeq"), callerTid],
               S(name: "source0Signalled", doc: ["A source0 was signalled (on the signalling thread): one event per loop it is in (`loop` 0",
                                                 "when it is in none); the events of one signal share `signalSeq` (process-wide, increasing)."])),
            ev("timer_armed", nil, .debugProcess, [loop, item, int(.fireNs, .u64, "fireNs"),
                                                   int(.intervalNs, .u64, "intervalNs"), int(.missedFires, .u32, "missedFires")],
               S(name: "timerArmed", doc: ["A timer was (re)scheduled on `loop` to `fireNs`, having skipped `missedFires` fires."],
                 section: ["MARK: timers and registrations (DEBUG)"])),
            ev("item_added", "item_registration", .debugProcess, registration,
               S(name: "itemAdded", doc: ["An item was added to a mode of `loop` (`iteration`: the loop's iteration counter then)."])),
            ev("item_removed", "item_registration", .debugProcess, registration,
               S(name: "itemRemoved", doc: ["An item was removed from a mode of `loop` (`iteration`: the loop's iteration counter then)."])),
            ev("hang_begin", nil, .warning, [loop, iter, int(.hangID, .u64, "hangID"),
                                             enm(.kind, "callout_kind", "kind", .calloutKindOrLoop), item,
                                             str(.itemName, "name"), int(.thresholdNs, .u64, "thresholdNs"),
                                             int(.elapsedNs, .u64, "elapsedNs"), int(.loopTid, .s32, "loopTid")],
               S(name: "hangBegin", doc: ["A loop has been stuck for `elapsedNs` (≥ `thresholdNs`) in one callout of `kind` on item",
                                          "`item` (0 if none) — or, with `kind` nil, in its own code between callouts (recorded as",
                                          "`loop`, 6). Emitted by the watchdog's thread; `loopTid` is the hung thread. `hangID` is",
                                          "process-unique, increasing from 1."],
                 section: ["MARK: hang watchdog (WARNING; RunLoopCore's RLHangWatchdog emits these)"])),
            ev("hang_stack", nil, .warning, [loop, int(.hangID, .u64, "hangID"), int(.sample, .u32, "sample"),
                                             int(.elapsedNs, .u64, "elapsedNs"),
                                             F(.frames, .sequence(element: RLSchemaInteger.u64.inHex, length: .u32),
                                               source: .parameter("frames", .frames))], emit: .handWrittenHelper,
               S(name: "hangStack", doc: ["One stack sample of a hang: `frames` innermost first (at most 64 are recorded). RunLoopCore",
                                          "emits it from a signal handler on the hung thread itself (C, `rl_hang_capture`); this Swift",
                                          "entry point emits it on the calling thread (tools and tests)."])),
            ev("hang_end", nil, .warning, [loop, iter, int(.hangID, .u64, "hangID"), int(.durationNs, .u64, "durationNs"),
                                           int(.samples, .u32, "samples")], emit: .outOfLine,
               S(name: "hangEnd", doc: ["The hung loop made progress again: the hang lasted `durationNs`; `samples` stacks were taken."])),
            ev("loop_info", nil, .info, [loop, int(.pid, .s32, "pid"), int(.tid, .s32, "tid"),
                                         str(.procname, "procname"), str(.threadName, "threadName")],
               S(name: "loopInfo", doc: ["Describes `loop`: its process `pid` (named `procname`), its thread `tid` (named `threadName`).",
                                         "Emitted when the loop is created and re-emitted by the watchdog (docs/tracepoints.md, \"Constant pools\")."],
                 section: ["MARK: constant pools and CPU readings (INFO; RunLoopCore's RLHangWatchdog re-emits them)"])),
            ev("item_info", nil, .info, [loop, kind, item, int(.order, .s64, "order"), name, mode],
               S(name: "itemInfo", doc: ["Describes item `item` of `kind` in one `mode` of `loop`: its name and order (0 for kinds without one)."])),
            ev("callout_cpu", nil, .info, [loop, kind, item, int(.elapsedNs, .u64, "elapsedNs"), int(.cpuNs, .u64, "cpuNs")],
               S(name: "calloutCPU", doc: ["A long callout of `kind` on `item`: over the `elapsedNs` since the watchdog first saw it, the loop's",
                                           "thread ran `cpuNs` (read from the thread's CPU clock by the watchdog, not by the loop)."])),
        ]
    }()
}
