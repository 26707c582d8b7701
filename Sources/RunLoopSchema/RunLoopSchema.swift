// The `runloop` LTTng-UST provider's event schema, stated once (docs/tracepoints.md).
//
// Every event's name, log level, event class and payload fields (in order, with their CTF kind and
// their Swift parameter), every enumeration (labels and values), and how each event is emitted
// (RunLoopSchemaEmitters.swift); the events themselves are declared in RunLoopSchemaEvents.swift.
// The provider's C header, C emitters, enabled checks, RLTrace's public functions and out-of-line
// emitters and the events table of docs/tracepoints.md are generated from this by Tools/rl-tpgen
// (scripts/gen-provider.sh);
// Tests/RunLoopTracingTests/GeneratedProviderTests.swift fails when the checked-in files differ from its
// output, and SchemaTests.swift still parses the header back as an independent check.
// RunLoopTracing and RLAnalysis take their names and values from here. Dependency-free (the
// standard library only).

// MARK: - value enumerations

/// The kind of a run-loop callout: the `callout_kind` enumeration of the `runloop` provider.
///
/// The one callout-kind type of the package: RunLoopCore, RunLoopTracing and RLAnalysis all use
/// it under this name. The provider's enumeration also has `loop` (``RunLoopSchema/calloutKindLoop``),
/// recorded only by `hang_begin`, which is not a callout and so not a case here.
public enum RLCalloutKind: UInt8, Sendable, CaseIterable, Codable, Comparable {
    /// A run-loop observer (activity callout).
    case observer = 0
    /// A version-0 source (signalled, performed by the loop).
    case source0 = 1
    /// A version-1 source (a file descriptor the loop waits on).
    case source1 = 2
    /// A timer.
    case timer = 3
    /// The process's main dispatch queue, drained by the main loop.
    case mainQueue = 4
    /// A perform-block.
    case block = 5

    /// The label of the value in the trace schema (and in rltrace's JSON): `main_queue` …
    @inlinable public var label: String {
        switch self {
        case .observer: "observer"
        case .source0: "source0"
        case .source1: "source1"
        case .timer: "timer"
        case .mainQueue: "main_queue"
        case .block: "block"
        }
    }

    /// The callout's entry event (`runloop:<label>_entry`).
    public var entryEvent: RLSchemaEventID {
        switch self {
        case .observer: .observerEntry
        case .source0: .source0Entry
        case .source1: .source1Entry
        case .timer: .timerEntry
        case .mainQueue: .mainQueueEntry
        case .block: .blockEntry
        }
    }

    /// The callout's exit event (`runloop:<label>_exit`).
    public var exitEvent: RLSchemaEventID {
        switch self {
        case .observer: .observerExit
        case .source0: .source0Exit
        case .source1: .source1Exit
        case .timer: .timerExit
        case .mainQueue: .mainQueueExit
        case .block: .blockExit
        }
    }

    /// Orders kinds by raw value.
    @inlinable public static func < (a: RLCalloutKind, b: RLCalloutKind) -> Bool { a.rawValue < b.rawValue }
}

/// Why a sleeping run loop woke up: the `wake_reason` enumeration of the `runloop` provider.
///
/// The one wake-reason type of the package: RunLoopCore, RunLoopTracing and RLAnalysis all use it
/// under this name.
public enum RLWakeReason: UInt8, Sendable, CaseIterable, Codable {
    /// The loop did not sleep (poll), or woke without any cause it could identify.
    case none = 0
    /// The run's own timeout passed.
    case timeout = 1
    /// An explicit wakeUp (also stop and the waking perform conveniences).
    case wakeUp = 2
    /// A timer of the running mode became due.
    case timer = 3
    /// A source1's file descriptor became ready.
    case source1 = 4
    /// The main dispatch queue has work.
    case mainQueue = 5

    /// The label of the value in the trace schema (`wake_up`, `main_queue` …).
    @inlinable public var label: String {
        switch self {
        case .none: "none"
        case .timeout: "timeout"
        case .wakeUp: "wake_up"
        case .timer: "timer"
        case .source1: "source1"
        case .mainQueue: "main_queue"
        }
    }
}

// MARK: - schema types

/// An LTTng-UST log level (`LTTNG_UST_TRACEPOINT_LOGLEVEL_<name>`), raw value LTTng's number.
public enum RLSchemaLogLevel: Int, Sendable, CaseIterable {
    /// `WARNING` (4): the hang watchdog's events.
    case warning = 4
    /// `INFO` (6): loop and run lifecycle.
    case info = 6
    /// `DEBUG_PROCESS` (9): timers armed, registrations.
    case debugProcess = 9
    /// `DEBUG` (14): every per-iteration event.
    case debug = 14

    /// The level's name as in the LTTng macro (`DEBUG_PROCESS`); `lttng` spells it `TRACE_<name>`.
    public var macroName: String {
        switch self {
        case .warning: "WARNING"
        case .info: "INFO"
        case .debugProcess: "DEBUG_PROCESS"
        case .debug: "DEBUG"
        }
    }
}

/// An integer as recorded in CTF: width, signedness and preferred display base.
public struct RLSchemaInteger: Hashable, Sendable, CustomStringConvertible {
    /// Width in bits (8, 16, 32, 64).
    public var bits: Int
    /// Whether the integer is signed.
    public var signed: Bool
    /// Whether it is displayed in hexadecimal (`lttng_ust_field_integer_hex`, `sequence_hex`).
    public var hex: Bool

    /// Creates an integer type.
    public init(bits: Int, signed: Bool, hex: Bool = false) {
        self.bits = bits
        self.signed = signed
        self.hex = hex
    }

    /// `uint8_t`.
    public static let u8 = RLSchemaInteger(bits: 8, signed: false)
    /// `uint32_t`.
    public static let u32 = RLSchemaInteger(bits: 32, signed: false)
    /// `uint64_t`.
    public static let u64 = RLSchemaInteger(bits: 64, signed: false)
    /// `int32_t`.
    public static let s32 = RLSchemaInteger(bits: 32, signed: true)
    /// `int64_t`.
    public static let s64 = RLSchemaInteger(bits: 64, signed: true)
    /// This type displayed in hexadecimal.
    public var inHex: RLSchemaInteger { RLSchemaInteger(bits: bits, signed: signed, hex: true) }

    /// The C type (`uint64_t`, `int32_t`), with `/hex` appended when displayed in hexadecimal.
    public var description: String { (signed ? "int" : "uint") + "\(bits)_t" + (hex ? "/hex" : "") }
}

/// The CTF kind of a payload field.
public enum RLSchemaFieldType: Hashable, Sendable {
    /// An integer (`lttng_ust_field_integer`, `lttng_ust_field_integer_hex`).
    case integer(RLSchemaInteger)
    /// A NUL-terminated UTF-8 string (`lttng_ust_field_string`).
    case string
    /// A value of the provider's enumeration `enumeration` (its name) in a `container` integer
    /// (`lttng_ust_field_enum`).
    case enumeration(String, container: RLSchemaInteger)
    /// A variable-length array of `element` integers, its length recorded first as a `length`
    /// integer (`lttng_ust_field_sequence`, `lttng_ust_field_sequence_hex`).
    case sequence(element: RLSchemaInteger, length: RLSchemaInteger)
}

/// A payload field's name. The names every event uses are the static members (`.loopID`
/// is `loop_id`): readers resolve fields by these, never by a spelled-out string.
public struct RLSchemaFieldName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The field's name in the trace (`loop_id`).
    public var rawValue: String
    /// Wraps a field name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The field's name in the trace.
    public var description: String { rawValue }

    /// `loop_id`: the run loop (process-unique).
    public static let loopID = Self(rawValue: "loop_id")
    /// `iteration`: the loop's iteration counter.
    public static let iteration = Self(rawValue: "iteration")
    /// `tid`: the loop's thread (lifecycle events).
    public static let tid = Self(rawValue: "tid")
    /// `thread_name`: the loop's thread's name.
    public static let threadName = Self(rawValue: "thread_name")
    /// `mode`: a run-loop mode.
    public static let mode = Self(rawValue: "mode")
    /// `timeout_ns`: a run's or a sleep's timeout.
    public static let timeoutNs = Self(rawValue: "timeout_ns")
    /// `return_after_source_handled`: the run's flag.
    public static let returnAfterSourceHandled = Self(rawValue: "return_after_source_handled")
    /// `depth`: the run's nesting depth.
    public static let depth = Self(rawValue: "depth")
    /// `result`: a run's result (`run_result`).
    public static let result = Self(rawValue: "result")
    /// `handled_source`: whether the iteration handled a source.
    public static let handledSource = Self(rawValue: "handled_source")
    /// `callouts`: callouts of the iteration.
    public static let callouts = Self(rawValue: "callouts")
    /// `item_id`: an observer, source, timer or block.
    public static let itemID = Self(rawValue: "item_id")
    /// `name`: an item's name.
    public static let name = Self(rawValue: "name")
    /// `activity`: an observer callout's activity bit (`activity`).
    public static let activity = Self(rawValue: "activity")
    /// `fd`: a file descriptor.
    public static let fd = Self(rawValue: "fd")
    /// `events`: an epoll readiness mask.
    public static let events = Self(rawValue: "events")
    /// `scheduled_ns`: the fire time a timer was due at.
    public static let scheduledNs = Self(rawValue: "scheduled_ns")
    /// `deadline_ns`: the time a sleep's wake timer is armed for.
    public static let deadlineNs = Self(rawValue: "deadline_ns")
    /// `reason`: why a loop woke (`wake_reason`).
    public static let reason = Self(rawValue: "reason")
    /// `slept_ns`: time slept.
    public static let sleptNs = Self(rawValue: "slept_ns")
    /// `accepted`: whether a wake-up request was accepted.
    public static let accepted = Self(rawValue: "accepted")
    /// `caller_tid`: the requesting thread.
    public static let callerTid = Self(rawValue: "caller_tid")
    /// `signal_seq`: the signal a `source0_signalled` belongs to.
    public static let signalSeq = Self(rawValue: "signal_seq")
    /// `fire_ns`: a timer's next fire time.
    public static let fireNs = Self(rawValue: "fire_ns")
    /// `interval_ns`: a timer's interval.
    public static let intervalNs = Self(rawValue: "interval_ns")
    /// `missed_fires`: fires a timer skipped.
    public static let missedFires = Self(rawValue: "missed_fires")
    /// `kind`: an item's or a hang's callout kind (`callout_kind`).
    public static let kind = Self(rawValue: "kind")
    /// `hang_id`: a hang (process-unique).
    public static let hangID = Self(rawValue: "hang_id")
    /// `item_name`: the hung callout's item name.
    public static let itemName = Self(rawValue: "item_name")
    /// `threshold_ns`: the watchdog's threshold.
    public static let thresholdNs = Self(rawValue: "threshold_ns")
    /// `elapsed_ns`: time stuck so far.
    public static let elapsedNs = Self(rawValue: "elapsed_ns")
    /// `loop_tid`: the hung thread.
    public static let loopTid = Self(rawValue: "loop_tid")
    /// `sample`: a stack sample's index.
    public static let sample = Self(rawValue: "sample")
    /// `frames`: a stack sample's frames, innermost first.
    public static let frames = Self(rawValue: "frames")
    /// `duration_ns`: a hang's duration.
    public static let durationNs = Self(rawValue: "duration_ns")
    /// `samples`: stack samples taken of a hang.
    public static let samples = Self(rawValue: "samples")
    /// `pid`: the loop's process (`loop_info`).
    public static let pid = Self(rawValue: "pid")
    /// `procname`: the loop's process name (`loop_info`).
    public static let procname = Self(rawValue: "procname")
    /// `order`: an observer's or source0's order (`item_info`; 0 for other kinds).
    public static let order = Self(rawValue: "order")
    /// `cpu_ns`: the loop thread's CPU time over `elapsed_ns` (`callout_cpu`).
    public static let cpuNs = Self(rawValue: "cpu_ns")
}

/// One payload field: its name and CTF kind, and where its emitters take its value from.
/// Two fields are equal when their names and kinds are (what a trace records); `source` is not compared.
public struct RLSchemaField: Hashable, Sendable {
    /// The field's name.
    public var name: RLSchemaFieldName
    /// The field's kind.
    public var type: RLSchemaFieldType
    /// Where the emitters take the value from: a parameter (its Swift label and type) or the calling thread.
    public var source: RLSchemaFieldSource
    /// Creates a field.
    public init(_ name: RLSchemaFieldName, _ type: RLSchemaFieldType, source: RLSchemaFieldSource) {
        self.name = name
        self.type = type
        self.source = source
    }
    /// Equal names and kinds.
    public static func == (a: RLSchemaField, b: RLSchemaField) -> Bool { a.name == b.name && a.type == b.type }
    /// Hashes the name and kind.
    public func hash(into h: inout Hasher) {
        h.combine(name)
        h.combine(type)
    }
}

/// One event of the provider.
public struct RLSchemaEvent: Hashable, Sendable {
    /// The event's name without the provider (`timer_entry`).
    public var name: String
    /// The event class it is an instance of (`timer_callout`), or nil for a standalone event.
    public var eventClass: String?
    /// Its log level.
    public var logLevel: RLSchemaLogLevel
    /// Its payload fields, in order.
    public var fields: [RLSchemaField]
    /// How RunLoopTracing's inlined check reaches the C emitter.
    public var swiftEmitter: RLSchemaSwiftEmitter
    /// RLTrace's public function for the event: its name and doc comment.
    public var swift: RLSchemaSwiftFunction

    /// Creates an event. Without `swiftEmitter`: ``RLSchemaSwiftEmitter/outOfLine`` when a field is
    /// a string or a sequence (names are converted out of line), else ``RLSchemaSwiftEmitter/inlineCall``.
    public init(name: String, eventClass: String? = nil, logLevel: RLSchemaLogLevel, fields: [RLSchemaField],
                swiftEmitter: RLSchemaSwiftEmitter? = nil, swift: RLSchemaSwiftFunction) {
        self.name = name
        self.swift = swift
        self.eventClass = eventClass
        self.logLevel = logLevel
        self.fields = fields
        self.swiftEmitter = swiftEmitter ?? (fields.contains { f in
            switch f.type { case .string, .sequence: true; default: false }
        } ? .outOfLine : .inlineCall)
    }

    /// The full LTTng name, e.g. `runloop:timer_entry`.
    public var fullName: String { RunLoopSchema.provider + ":" + name }
}

/// One label of an enumeration.
public struct RLSchemaEnumerator: Hashable, Sendable {
    /// The label (`main_queue`).
    public var label: String
    /// Its value.
    public var value: Int64
    /// Creates a label.
    public init(_ label: String, _ value: Int64) {
        self.label = label
        self.value = value
    }
}

/// One enumeration of the provider (`LTTNG_UST_TRACEPOINT_ENUM`): labels and values in order.
public struct RLSchemaEnumeration: Hashable, Sendable {
    /// The enumeration's name (`callout_kind`).
    public var name: String
    /// Its labels, in declaration order.
    public var enumerators: [RLSchemaEnumerator]
    /// Creates an enumeration.
    public init(name: String, enumerators: [RLSchemaEnumerator]) {
        self.name = name
        self.enumerators = enumerators
    }
    /// The label of `value`, or nil.
    public func label(of value: Int64) -> String? { enumerators.first { $0.value == value }?.label }
}

// MARK: - the events

/// Every event of the provider, in the header's order; raw value = index in ``RunLoopSchema/events``.
public enum RLSchemaEventID: UInt8, Sendable, CaseIterable {
    /// `runloop:loop_created`
    case loopCreated
    /// `runloop:loop_destroyed`
    case loopDestroyed
    /// `runloop:run_enter`
    case runEnter
    /// `runloop:run_exit`
    case runExit
    /// `runloop:iteration_begin`
    case iterationBegin
    /// `runloop:iteration_end`
    case iterationEnd
    /// `runloop:observer_entry`
    case observerEntry
    /// `runloop:observer_exit`
    case observerExit
    /// `runloop:source0_entry`
    case source0Entry
    /// `runloop:source0_exit`
    case source0Exit
    /// `runloop:block_entry`
    case blockEntry
    /// `runloop:block_exit`
    case blockExit
    /// `runloop:source1_entry`
    case source1Entry
    /// `runloop:source1_exit`
    case source1Exit
    /// `runloop:timer_entry`
    case timerEntry
    /// `runloop:timer_exit`
    case timerExit
    /// `runloop:main_queue_entry`
    case mainQueueEntry
    /// `runloop:main_queue_exit`
    case mainQueueExit
    /// `runloop:sleep_begin`
    case sleepBegin
    /// `runloop:wake`
    case wake
    /// `runloop:wakeup_requested`
    case wakeUpRequested
    /// `runloop:source0_signalled`
    case source0Signalled
    /// `runloop:timer_armed`
    case timerArmed
    /// `runloop:item_added`
    case itemAdded
    /// `runloop:item_removed`
    case itemRemoved
    /// `runloop:hang_begin`
    case hangBegin
    /// `runloop:hang_stack`
    case hangStack
    /// `runloop:hang_end`
    case hangEnd
    /// `runloop:loop_info` (a loop's description in the constant pool)
    case loopInfo
    /// `runloop:item_info` (an item's description in the constant pool, one per mode)
    case itemInfo
    /// `runloop:callout_cpu` (the watchdog's reading of a long callout's CPU time)
    case calloutCpu

    /// The event's definition.
    public var event: RLSchemaEvent { RunLoopSchema.events[Int(rawValue)] }
    /// The event's name without the provider (`wake`).
    public var name: String { event.name }

    /// The event with name `name` (`timer_entry`, without the provider), or nil.
    public init?(name: String) {
        guard let i = RunLoopSchema.events.firstIndex(where: { $0.name == name }) else { return nil }
        self.init(rawValue: UInt8(i))
    }

    /// For a callout's entry or exit event: the callout kind and whether it is the entry.
    public var callout: (kind: RLCalloutKind, isEntry: Bool)? {
        for k in RLCalloutKind.allCases {
            if k.entryEvent == self { return (k, true) }
            if k.exitEvent == self { return (k, false) }
        }
        return nil
    }
}

/// The `runloop` provider's schema: its events and enumerations.
public enum RunLoopSchema {
    /// The provider's name.
    public static let provider = "runloop"

    /// The `loop` value of `callout_kind`: `hang_begin` of a loop stuck in its own code.
    public static let calloutKindLoop: UInt8 = 6

    /// The `callout_kind` enumeration.
    public static let calloutKind = RLSchemaEnumeration(
        name: "callout_kind",
        enumerators: RLCalloutKind.allCases.map { RLSchemaEnumerator($0.label, Int64($0.rawValue)) }
            + [RLSchemaEnumerator("loop", Int64(calloutKindLoop))])
    /// The `wake_reason` enumeration.
    public static let wakeReason = RLSchemaEnumeration(
        name: "wake_reason",
        enumerators: RLWakeReason.allCases.map { RLSchemaEnumerator($0.label, Int64($0.rawValue)) })
    // `run_result` and `activity` (``runResult``, ``activity``) are RunLoopCore's RLRunResult and
    // RLActivity, generated from them: RunLoopSchema+RunLoopCore.swift.
    /// Every enumeration, in the header's order.
    public static let enumerations: [RLSchemaEnumeration] = [calloutKind, wakeReason, runResult, activity]

    // `events`: every event, in the header's order: RunLoopSchemaEvents.swift.

    /// The event named `name`: with or without the `runloop:` prefix; nil for another provider's.
    public static func event(named name: String) -> RLSchemaEvent? {
        var n = Substring(name)
        if n.hasPrefix(provider + ":") { n = n.dropFirst(provider.count + 1) } else if n.contains(":") { return nil }
        return events.first { $0.name == n }
    }

    /// The enumeration named `name` (`wake_reason`), or nil.
    public static func enumeration(named name: String) -> RLSchemaEnumeration? {
        enumerations.first { $0.name == name }
    }
}
