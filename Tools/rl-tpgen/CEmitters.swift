// include/CRunLoopTracepoints.h (enabled checks, emitter prototypes) and runloop_emit.c (emitters).
import RunLoopSchema

/// The C parameters of an event's emitter (`uint64_t loop_id`, `bool accepted`, ...).
func cParameters(_ e: RLSchemaEvent) -> [String] {
    e.fields.flatMap { f -> [String] in
        if case .callingThread = f.source { return [] }
        if case .parameter(_, .bool) = f.source { return ["bool \(f.name)"] }
        switch f.type {
        case .integer(let i): return ["\(cType(i)) \(f.name)"]
        case .enumeration(_, let c): return ["\(cType(c)) \(f.name)"]
        case .string: return ["const char *\(f.name)"]
        case .sequence(let el, let len): return ["const \(cType(el)) *\(f.name)", "\(cType(len)) \(lengthName(f))"]
        }
    }
}

/// The arguments the emitter hands the tracepoint, one per LTTng-UST argument.
func cArguments(_ e: RLSchemaEvent) -> [String] {
    e.fields.flatMap { f -> [String] in
        switch (f.source, f.type) {
        case (.callingThread, _): return ["rl_tp_current_tid()"]
        case (.parameter(_, .bool), .integer(let i)): return ["(\(cType(i)))\(f.name)"]
        case (_, .string): return ["rl_name(\(f.name))"]
        case (_, .sequence): return ["\(f.name)", lengthName(f)]
        default: return ["\(f.name)"]
        }
    }
}

func prototype(_ e: RLSchemaEvent, body: Bool) -> String {
    let head = "void rl_tp_\(e.name)("
    return wrapped(head, cParameters(e), body ? ") {" : ");", indent: String(repeating: " ", count: head.count))
}

/// The events the hang watchdog emits (WARNING), checked together by `rl_tp_hang_any_enabled()`.
var hangEvents: [RLSchemaEvent] { RunLoopSchema.events.filter { $0.logLevel == .warning } }

func umbrellaHeader() -> String {
    let p = RunLoopSchema.provider
    var o = """
    /*
     * \(generatedNotice)
     *
     * CRunLoopTracepoints: the C side of the `\(p)` LTTng-UST provider, as Swift sees it.
     *
     * For every event `\(p):NAME` this header gives
     *   - `rl_tp_NAME_enabled()`: a `static inline` check "is any session recording this event",
     *     which is one relaxed load of the tracepoint's state word plus a branch. Swift inlines it
     *     (it is compiled into the caller by the Clang importer), so a disabled site costs ~1 ns.
     *   - `rl_tp_NAME(...)`: the out-of-line emitter, defined in runloop_emit.c. Call it only after
     *     the check said yes (it re-checks nothing and always goes through the probe).
     *
     * The tracepoint structures are hidden symbols (LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION: the provider,
     * the definitions and every caller are linked into one image), so the check compiles to a single
     * PC-relative load of the state word, with no GOT indirection.
     *
     * The tracepoint structures themselves (`lttng_ust_tracepoint_\(p)___NAME`) are defined in
     * runloop_tp.c (LTTNG_UST_TRACEPOINT_DEFINE); liblttng-ust flips their `state` word when a
     * session enables the event. This header deliberately includes only <lttng/tracepoint-types.h>
     * (type definitions), not <lttng/tracepoint.h>, whose weak definitions and constructors must not
     * be instantiated in every Swift module that imports this one.
     *
     * When the package is built with RLTRACE_DISABLED=1 the .c files compile to nothing and the
     * Swift side never references these symbols.
     */
    #ifndef C_RUNLOOP_TRACEPOINTS_H
    #define C_RUNLOOP_TRACEPOINTS_H

    #include <stdbool.h>
    #include <stdint.h>
    #include <lttng/tracepoint-types.h>

    #ifdef __cplusplus
    extern "C" {
    #endif

    #define RL_TP_DECLARE_ENABLED(event)                                                             \\
        extern struct lttng_ust_tracepoint lttng_ust_tracepoint_\(p)___##event                    \\
            __attribute__((visibility("hidden")));                                                   \\
        static inline __attribute__((always_inline)) bool rl_tp_##event##_enabled(void) {            \\
            return __builtin_expect(                                                                 \\
                __atomic_load_n(&lttng_ust_tracepoint_\(p)___##event.state, __ATOMIC_RELAXED) != 0, \\
                0);                                                                                  \\
        }

    /*
     * `rl_tp_KIND_callout_enabled()`: whether a session records KIND_entry or KIND_exit, in one branch
     * (the two state words are or-ed): what each callout trampoline checks before its callout.
     */
    #define RL_TP_DECLARE_CALLOUT_ENABLED(kind)                                                      \\
        static inline __attribute__((always_inline)) bool rl_tp_##kind##_callout_enabled(void) {     \\
            return __builtin_expect(                                                                 \\
                (__atomic_load_n(&lttng_ust_tracepoint_\(p)___##kind##_entry.state, __ATOMIC_RELAXED) | \\
                 __atomic_load_n(&lttng_ust_tracepoint_\(p)___##kind##_exit.state, __ATOMIC_RELAXED)) != 0, \\
                0);                                                                                  \\
        }


    """
    for e in RunLoopSchema.events { o += "RL_TP_DECLARE_ENABLED(\(e.name))\n" }
    o += "\n/* Whether a session records any of the hang watchdog's events (one branch). */\n"
    o += "static inline __attribute__((always_inline)) bool rl_tp_hang_any_enabled(void) {\n    return __builtin_expect(\n        ("
    o += hangEvents.map { "__atomic_load_n(&lttng_ust_tracepoint_\(p)___\($0.name).state, __ATOMIC_RELAXED)" }
        .joined(separator: " |\n         ")
    o += ") != 0, 0);\n}\n\n"
    for k in RLCalloutKind.allCases { o += "RL_TP_DECLARE_CALLOUT_ENABLED(\(k.label))\n" }
    o += "\n/* ---- emitters (out of line; call only when the matching check is true) -------------------- */\n\n"
    for e in RunLoopSchema.events { o += prototype(e, body: false) + "\n" }
    o += """

    /* The calling thread's kernel thread id (cached per thread): the `caller_tid` fields. */
    int32_t rl_tp_current_tid(void);

    #ifdef __cplusplus
    }
    #endif

    #endif /* C_RUNLOOP_TRACEPOINTS_H */

    """
    return o
}

func emitterSource() -> String {
    var o = """
    /*
     * \(generatedNotice)
     *
     * Out-of-line emitters of the `\(RunLoopSchema.provider)` provider. Swift calls `rl_tp_NAME(...)` only after the
     * inlined `rl_tp_NAME_enabled()` check said a session records the event, so this code runs only
     * while tracing. Compiled to nothing when the package is built with RLTRACE_DISABLED=1.
     */
    #ifndef RLTRACE_DISABLED
    #define _GNU_SOURCE
    #include <sys/syscall.h>
    #include <unistd.h>

    /* Provider, tracepoint definitions and all their users live in one linked image. */
    #define LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION
    #define LTTNG_UST_TRACEPOINT_PROVIDER_HIDDEN_DEFINITION
    #include "runloop_tp.h"
    #include "CRunLoopTracepoints.h"

    static __thread int32_t rl_tp_cached_tid;

    int32_t rl_tp_current_tid(void) {
        int32_t tid = rl_tp_cached_tid;
        if (tid == 0) {
            tid = (int32_t)syscall(SYS_gettid);
            rl_tp_cached_tid = tid;
        }
        return tid;
    }

    #define RL_EMIT(event, ...) lttng_ust_do_tracepoint(\(RunLoopSchema.provider), event, __VA_ARGS__)

    /*
     * Strings (item, thread and mode names): an empty one is recorded as "(unnamed)". babeltrace2 2.0.4 (Debian 12)
     * prints a zero-length string field as the previous string it decoded, i.e. another item's name,
     * which would be worse than no name.
     */
    static inline const char *rl_name(const char *name) {
        return (name == NULL || name[0] == '\\0') ? "(unnamed)" : name;
    }


    """
    for e in RunLoopSchema.events {
        o += prototype(e, body: true) + "\n"
        o += wrapped("    RL_EMIT(", [e.name] + cArguments(e), ");", indent: "            ") + "\n}\n"
    }
    o += "#else\ntypedef int rl_tp_emit_disabled_translation_unit;\n#endif\n"
    return o
}
