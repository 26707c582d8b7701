// The Swift face of the `runloop` LTTng-UST provider.
//
// CONTRACT: RunLoopCore calls exactly these functions (names, labels, types). Each is a cheap
// "is anyone listening" check first; arguments (names above all) are built only when enabled.
//
// The functions are generated from RunLoopSchema (RunLoopSchemaEvents.swift: each event's function
// name, doc comment, and its fields' Swift labels and types) by Tools/rl-tpgen into
// RLTrace+Events.swift; `blockEntry` alone is hand-written (RLTraceEmit.swift: its name is not a
// field of its event). Each body is `#if !RLTRACE_DISABLED  if rl_tp_NAME_enabled() { ... }  #endif`:
// the check is a `static inline` C function (one relaxed load of the tracepoint's state word + a
// branch) that inlines into the caller; inside the branch either the C emitter is called directly
// (the id-only callout events: RunLoopSchema's `swiftEmitter` `.inlineCall`) or the `@autoclosure`
// names are evaluated and handed as `String`s to an out-of-line `_NAME` helper (generated:
// RLTrace+Generated.swift; hand-written: RLTraceEmit.swift), which converts them (`withCName`) and
// calls the C emitter. Built with RLTRACE_DISABLED=1 in the environment, every body is empty.
// Events: docs/tracepoints.md.
//
// For callers: the `@autoclosure` arguments are evaluated only when a session records the event,
// but what they capture must exist on the disabled path too. Capture a class reference or a local
// (`name: source.name ?? ""`), never a struct with reference-counted fields (`name: item.name ?? ""`
// on a struct parameter makes the optimizer keep and copy the whole struct: measured +230
// instructions per perform-block, see docs/tracepoints.md "Cost").

import RunLoopSchema

/// Tracepoints of the `runloop` provider. All loop and item ids are process-unique `UInt64`s;
/// times are CLOCK_MONOTONIC nanoseconds (LTTng's own clock), durations nanoseconds.
///
/// One function per event (RLTrace+Events.swift, generated; `blockEntry`: RLTraceEmit.swift), the
/// enabled checks ``isEnabled(_:)``, ``isCalloutTraced(_:)`` (RLTrace+Generated.swift) and
/// ``isHangTraced``. Events are named by RunLoopSchema's ``RLSchemaEventID``, wake reasons by
/// ``RLWakeReason``, callout kinds by ``RLCalloutKind``.
public enum RLTrace {}

extension RLSchemaEventID {
    /// The event's full LTTng name, e.g. `runloop:wake`.
    public var lttngName: String { event.fullName }
}
