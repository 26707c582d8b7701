// Sources/CRunLoopTracepoints/runloop_tp.h: the LTTng-UST provider declaration.
import RunLoopSchema

/// The LTTng-UST argument list of an event (`uint64_t, loop_id, const char *, name, ...`), as pairs.
func tpArgs(_ e: RLSchemaEvent) -> [String] {
    e.fields.flatMap { f -> [String] in
        switch f.type {
        case .integer(let i): return ["\(cType(i)), \(f.name)"]
        case .enumeration(_, let c): return ["\(cType(c)), \(f.name)"]
        case .string: return ["const char *, \(f.name)"]
        case .sequence(let el, let len): return ["const \(cType(el)) *, \(f.name)", "\(cType(len)), \(lengthName(f))"]
        }
    }
}

/// The field macro of one field (`lttng_ust_field_integer(uint64_t, loop_id, loop_id)`).
func fieldMacro(_ f: RLSchemaField) -> String {
    let n = f.name.rawValue
    switch f.type {
    case .integer(let i): return "lttng_ust_field_integer\(i.hex ? "_hex" : "")(\(cType(i)), \(n), \(n))"
    case .string: return "lttng_ust_field_string(\(n), \(n))"
    case .enumeration(let en, let c): return "lttng_ust_field_enum(\(RunLoopSchema.provider), \(en), \(cType(c)), \(n), \(n))"
    case .sequence(let el, let len):
        return "lttng_ust_field_sequence\(el.hex ? "_hex" : "")(\(cType(el)), \(n), \(n), \(cType(len)), \(lengthName(f)))"
    }
}

/// What each enumeration mirrors (a comment above it).
let enumerationNotes: [String: String] = [
    "callout_kind": "RLCalloutKind; `loop` (hang_begin only): stuck outside any callout, in the loop's own code",
    "wake_reason": "RLWakeReason",
    "run_result": "CFRunLoopRunResult raw values: RunLoopCore's RLRunResult",
    "activity": "CFRunLoopActivity bits, one per observer callout: RunLoopCore's RLActivity",
]

func providerHeader() -> String {
    let p = RunLoopSchema.provider
    var o = """
    /*
     * \(generatedNotice)
     *
     * LTTng-UST tracepoint provider `\(p)` (API v1 macros): the events, fields and enumerations of
     * RunLoopSchema, in its order. Included by runloop_tp.c (with LTTNG_UST_TRACEPOINT_CREATE_PROBES +
     * LTTNG_UST_TRACEPOINT_DEFINE, the one place the probes and the tracepoint structures are created)
     * and by runloop_emit.c (the out-of-line emitters Swift calls once an enabled check said yes).
     * Swift never sees this header: it imports the umbrella header include/CRunLoopTracepoints.h.
     * Every event and field is documented in docs/tracepoints.md, the contract the rltrace reader
     * relies on.
     */
    #undef LTTNG_UST_TRACEPOINT_PROVIDER
    #define LTTNG_UST_TRACEPOINT_PROVIDER \(p)

    #undef LTTNG_UST_TRACEPOINT_INCLUDE
    #define LTTNG_UST_TRACEPOINT_INCLUDE "./runloop_tp.h"

    #if !defined(RUNLOOP_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
    #define RUNLOOP_TP_H

    #include <lttng/tracepoint.h>
    #include <stdint.h>
    #include <string.h>

    /* The probe's payload writes, one ring-buffer write per event: runloop_tp_writers.h (hand-written;
     * included at every stage of this multi-read header, it acts only in the probe-writing stage). */
    #include "runloop_tp_writers.h"

    /* ---- enumerations ------------------------------------------------------------------------- */

    """
    for en in RunLoopSchema.enumerations {
        if let note = enumerationNotes[en.name] { o += "\n/* \(note) */\n" } else { o += "\n" }
        o += "LTTNG_UST_TRACEPOINT_ENUM(\(p), \(en.name),\n    LTTNG_UST_TP_ENUM_VALUES(\n"
        for v in en.enumerators { o += "        lttng_ust_field_enum_value(\"\(v.label)\", \(v.value))\n" }
        o += "    )\n)\n"
    }
    o += "\n/* ---- events ------------------------------------------------------------------------------ */\n"
    var classes = Set<String>()
    for e in RunLoopSchema.events {
        let args = wrapped("    LTTNG_UST_TP_ARGS(", tpArgs(e), ")", indent: "                      ")
        let fields = "    LTTNG_UST_TP_FIELDS(\n" + e.fields.map { "        " + fieldMacro($0) + "\n" }.joined() + "    )\n"
        o += "\n"
        if let c = e.eventClass {
            if classes.insert(c).inserted {
                o += "LTTNG_UST_TRACEPOINT_EVENT_CLASS(\(p), \(c),\n\(args),\n\(fields))\n"
            }
            o += "LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(\(p), \(c), \(p), \(e.name),\n\(args))\n"
        } else {
            o += "LTTNG_UST_TRACEPOINT_EVENT(\(p), \(e.name),\n\(args),\n\(fields))\n"
        }
        o += "LTTNG_UST_TRACEPOINT_LOGLEVEL(\(p), \(e.name), LTTNG_UST_TRACEPOINT_LOGLEVEL_\(e.logLevel.macroName))\n"
    }
    o += "\n#endif /* RUNLOOP_TP_H */\n\n#include <lttng/tracepoint-event.h>\n"
    return o
}
