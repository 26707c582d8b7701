/*
 * LTTng-UST tracepoint provider `runloop` (API v1 macros).
 *
 * This is the provider header: it is included by runloop_tp.c (with
 * LTTNG_UST_TRACEPOINT_CREATE_PROBES + LTTNG_UST_TRACEPOINT_DEFINE, the one place the probes and
 * the tracepoint structures are created) and by runloop_emit.c (the out-of-line emitters Swift
 * calls once an enabled check said yes). Swift never sees this header: it imports the umbrella
 * header include/CRunLoopTracepoints.h. Every event and field is documented in
 * docs/tracepoints.md, the contract the rltrace reader relies on.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER runloop

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./runloop_tp.h"

#if !defined(RUNLOOP_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RUNLOOP_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>
#include <string.h>

/* The probe's payload writes, one ring-buffer write per event: runloop_tp_writers.h (included
 * at every stage of this multi-read header; it acts only in the probe-writing stage). */
#include "runloop_tp_writers.h"

/* ---- enumerations ------------------------------------------------------------------------- */

/* RLTraceCalloutKind */
LTTNG_UST_TRACEPOINT_ENUM(runloop, callout_kind,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("observer", 0)
        lttng_ust_field_enum_value("source0", 1)
        lttng_ust_field_enum_value("source1", 2)
        lttng_ust_field_enum_value("timer", 3)
        lttng_ust_field_enum_value("main_queue", 4)
        lttng_ust_field_enum_value("block", 5)
        /* hang_begin only: the loop was stuck outside any callout (in its own code) */
        lttng_ust_field_enum_value("loop", 6)
    )
)

/* RLTraceWakeReason */
LTTNG_UST_TRACEPOINT_ENUM(runloop, wake_reason,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("none", 0)
        lttng_ust_field_enum_value("timeout", 1)
        lttng_ust_field_enum_value("wake_up", 2)
        lttng_ust_field_enum_value("timer", 3)
        lttng_ust_field_enum_value("source1", 4)
        lttng_ust_field_enum_value("main_queue", 5)
    )
)

/* CFRunLoopRunResult raw values */
LTTNG_UST_TRACEPOINT_ENUM(runloop, run_result,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("finished", 1)
        lttng_ust_field_enum_value("stopped", 2)
        lttng_ust_field_enum_value("timed_out", 3)
        lttng_ust_field_enum_value("handled_source", 4)
    )
)

/* CFRunLoopActivity bits (one bit per observer callout) */
LTTNG_UST_TRACEPOINT_ENUM(runloop, activity,
    LTTNG_UST_TP_ENUM_VALUES(
        lttng_ust_field_enum_value("entry", 1)
        lttng_ust_field_enum_value("before_timers", 2)
        lttng_ust_field_enum_value("before_sources", 4)
        lttng_ust_field_enum_value("before_waiting", 32)
        lttng_ust_field_enum_value("after_waiting", 64)
        lttng_ust_field_enum_value("exit", 128)
    )
)

/* ---- loop lifecycle (INFO) ---------------------------------------------------------------- */

LTTNG_UST_TRACEPOINT_EVENT(runloop, loop_created,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration, int32_t, tid, const char *, thread_name),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
        lttng_ust_field_integer(int32_t, tid, tid)
        lttng_ust_field_string(thread_name, thread_name)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, loop_created, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)

LTTNG_UST_TRACEPOINT_EVENT(runloop, loop_destroyed,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration, int32_t, tid),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
        lttng_ust_field_integer(int32_t, tid, tid)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, loop_destroyed, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)

/* ---- run activations (INFO) --------------------------------------------------------------- */

LTTNG_UST_TRACEPOINT_EVENT(runloop, run_enter,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration, const char *, mode,
                      int64_t, timeout_ns, uint8_t, return_after_source_handled, uint32_t, depth),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
        lttng_ust_field_string(mode, mode)
        lttng_ust_field_integer(int64_t, timeout_ns, timeout_ns)
        lttng_ust_field_integer(uint8_t, return_after_source_handled, return_after_source_handled)
        lttng_ust_field_integer(uint32_t, depth, depth)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, run_enter, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)

LTTNG_UST_TRACEPOINT_EVENT(runloop, run_exit,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration, const char *, mode,
                      uint8_t, result, uint32_t, depth),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
        lttng_ust_field_string(mode, mode)
        lttng_ust_field_enum(runloop, run_result, uint8_t, result, result)
        lttng_ust_field_integer(uint32_t, depth, depth)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, run_exit, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)

/* ---- iterations (DEBUG) ------------------------------------------------------------------- */

LTTNG_UST_TRACEPOINT_EVENT(runloop, iteration_begin,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, iteration_begin, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

LTTNG_UST_TRACEPOINT_EVENT(runloop, iteration_end,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint8_t, handled_source, uint32_t, callouts),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint8_t, handled_source, handled_source)
        lttng_ust_field_integer(uint32_t, callouts, callouts)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, iteration_end, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

/* ---- callouts (DEBUG) ---------------------------------------------------------------------
 * Ids only (docs/tracepoints.md, "Constant pools"): an item's name, kind, order and modes are
 * described by `item_added` and `item_info`, its loop's process and thread by `loop_created` and
 * `loop_info`; the iteration is the one `iteration_begin` opened. An exit closes the innermost open
 * callout of its kind, so it names its loop alone. A named block is described by an `item_info`
 * just before its entry. */

/* The main queue's entry and every exit: the loop alone. */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(runloop, loop_callout,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
    )
)
#define RL_TP_LOOP_ARGS LTTNG_UST_TP_ARGS(uint64_t, loop_id)

/* source0 and block entries: the item */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(runloop, item_callout,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, item_id),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
    )
)
#define RL_TP_ITEM_ARGS LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, item_id)

/* observer entry: the activity (CFRunLoopActivity bit) */
LTTNG_UST_TRACEPOINT_EVENT(runloop, observer_entry,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, item_id, uint8_t, activity),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_enum(runloop, activity, uint8_t, activity, activity)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, observer_entry, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, loop_callout, runloop, observer_exit, RL_TP_LOOP_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, observer_exit, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, item_callout, runloop, source0_entry, RL_TP_ITEM_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, source0_entry, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, loop_callout, runloop, source0_exit, RL_TP_LOOP_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, source0_exit, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, item_callout, runloop, block_entry, RL_TP_ITEM_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, block_entry, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, loop_callout, runloop, block_exit, RL_TP_LOOP_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, block_exit, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

/* source1 entry: fd and epoll readiness */
LTTNG_UST_TRACEPOINT_EVENT(runloop, source1_entry,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, item_id, int32_t, fd, uint32_t, events),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_integer(int32_t, fd, fd)
        lttng_ust_field_integer_hex(uint32_t, events, events)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, source1_entry, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, loop_callout, runloop, source1_exit, RL_TP_LOOP_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, source1_exit, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

/* timer entry: the fire time it was scheduled for */
LTTNG_UST_TRACEPOINT_EVENT(runloop, timer_entry,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, item_id, uint64_t, scheduled_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_integer(uint64_t, scheduled_ns, scheduled_ns)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, timer_entry, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, loop_callout, runloop, timer_exit, RL_TP_LOOP_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, timer_exit, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

/* main queue drain: no item */
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, loop_callout, runloop, main_queue_entry, RL_TP_LOOP_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, main_queue_entry, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, loop_callout, runloop, main_queue_exit, RL_TP_LOOP_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, main_queue_exit, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

/* ---- sleep and wake (DEBUG): in the iteration `iteration_begin` opened -------------------- */

LTTNG_UST_TRACEPOINT_EVENT(runloop, sleep_begin,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, int64_t, timeout_ns, uint64_t, deadline_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(int64_t, timeout_ns, timeout_ns)
        lttng_ust_field_integer(uint64_t, deadline_ns, deadline_ns)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, sleep_begin, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

LTTNG_UST_TRACEPOINT_EVENT(runloop, wake,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint8_t, reason, int32_t, fd, uint64_t, slept_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_enum(runloop, wake_reason, uint8_t, reason, reason)
        lttng_ust_field_integer(int32_t, fd, fd)
        lttng_ust_field_integer(uint64_t, slept_ns, slept_ns)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, wake, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

/* ---- cross-thread requests (DEBUG, emitted on the requesting thread) ---------------------- */

LTTNG_UST_TRACEPOINT_EVENT(runloop, wakeup_requested,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint8_t, accepted, int32_t, caller_tid),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint8_t, accepted, accepted)
        lttng_ust_field_integer(int32_t, caller_tid, caller_tid)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, wakeup_requested, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

/*
 * One event per loop the source is in (loop_id 0: in no loop); the events of one signal share
 * `signal_seq`.
 */
LTTNG_UST_TRACEPOINT_EVENT(runloop, source0_signalled,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, item_id, uint64_t, signal_seq, int32_t, caller_tid),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_integer(uint64_t, signal_seq, signal_seq)
        lttng_ust_field_integer(int32_t, caller_tid, caller_tid)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, source0_signalled, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

/* ---- timers and registrations (DEBUG_PROCESS) --------------------------------------------- */

LTTNG_UST_TRACEPOINT_EVENT(runloop, timer_armed,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, item_id, uint64_t, fire_ns, uint64_t, interval_ns,
                      uint32_t, missed_fires),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_integer(uint64_t, fire_ns, fire_ns)
        lttng_ust_field_integer(uint64_t, interval_ns, interval_ns)
        lttng_ust_field_integer(uint32_t, missed_fires, missed_fires)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, timer_armed, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROCESS)

LTTNG_UST_TRACEPOINT_EVENT_CLASS(runloop, item_registration,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration, uint8_t, kind, uint64_t, item_id,
                      const char *, name, const char *, mode),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
        lttng_ust_field_enum(runloop, callout_kind, uint8_t, kind, kind)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_string(name, name)
        lttng_ust_field_string(mode, mode)
    )
)
#define RL_TP_REGISTRATION_ARGS \
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration, uint8_t, kind, uint64_t, item_id, \
                      const char *, name, const char *, mode)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, item_registration, runloop, item_added, RL_TP_REGISTRATION_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, item_added, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROCESS)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(runloop, item_registration, runloop, item_removed, RL_TP_REGISTRATION_ARGS)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, item_removed, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG_PROCESS)

/* ---- hang watchdog (WARNING): docs/tracepoints.md "Hangs" -------------------------------- */

/*
 * Emitted by the watchdog thread (its vtid) when a loop has been stuck in one callout (or in its
 * own code, kind `loop`) for at least `threshold_ns`; `loop_tid` is the hung thread.
 */
LTTNG_UST_TRACEPOINT_EVENT(runloop, hang_begin,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration, uint64_t, hang_id, uint8_t, kind,
                      uint64_t, item_id, const char *, item_name, uint64_t, threshold_ns,
                      uint64_t, elapsed_ns, int32_t, loop_tid),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
        lttng_ust_field_integer(uint64_t, hang_id, hang_id)
        lttng_ust_field_enum(runloop, callout_kind, uint8_t, kind, kind)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_string(item_name, item_name)
        lttng_ust_field_integer(uint64_t, threshold_ns, threshold_ns)
        lttng_ust_field_integer(uint64_t, elapsed_ns, elapsed_ns)
        lttng_ust_field_integer(int32_t, loop_tid, loop_tid)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, hang_begin, LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING)

/*
 * One stack sample of the hung thread, emitted from a signal handler ON that thread (its vtid):
 * `frames` innermost first (frames[0] the interrupted instruction, then return addresses).
 */
LTTNG_UST_TRACEPOINT_EVENT(runloop, hang_stack,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, hang_id, uint32_t, sample, uint64_t, elapsed_ns,
                      const uint64_t *, frames, uint32_t, frame_count),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, hang_id, hang_id)
        lttng_ust_field_integer(uint32_t, sample, sample)
        lttng_ust_field_integer(uint64_t, elapsed_ns, elapsed_ns)
        lttng_ust_field_sequence_hex(uint64_t, frames, frames, uint32_t, frame_count)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, hang_stack, LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING)

/* The hung loop made progress again (emitted by the watchdog thread). */
LTTNG_UST_TRACEPOINT_EVENT(runloop, hang_end,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration, uint64_t, hang_id, uint64_t, duration_ns,
                      uint32_t, samples),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
        lttng_ust_field_integer(uint64_t, hang_id, hang_id)
        lttng_ust_field_integer(uint64_t, duration_ns, duration_ns)
        lttng_ust_field_integer(uint32_t, samples, samples)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, hang_end, LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING)

/* ---- constant pools and the watchdog's CPU readings (INFO): docs/tracepoints.md ------------
 * Emitted when a loop is created (`loop_info`), and by the hang watchdog's thread while a session
 * records them: when it first sees them enabled, every `RLTRACE_POOL_PERIOD` (1 s) and right
 * after a hang begins, so that a snapshot or a view that joins late still names every loop and
 * item. */

LTTNG_UST_TRACEPOINT_EVENT(runloop, loop_info,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, int32_t, pid, int32_t, tid, const char *, procname,
                      const char *, thread_name),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(int32_t, pid, pid)
        lttng_ust_field_integer(int32_t, tid, tid)
        lttng_ust_field_string(procname, procname)
        lttng_ust_field_string(thread_name, thread_name)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, loop_info, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)

/* One per item and mode it is in. */
LTTNG_UST_TRACEPOINT_EVENT(runloop, item_info,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint8_t, kind, uint64_t, item_id, int64_t, order,
                      const char *, name, const char *, mode),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_enum(runloop, callout_kind, uint8_t, kind, kind)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_integer(int64_t, order, order)
        lttng_ust_field_string(name, name)
        lttng_ust_field_string(mode, mode)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, item_info, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)

/*
 * A long callout's CPU time, read by the watchdog from the loop thread's CPU clock: over the
 * `elapsed_ns` since the watchdog first saw the callout, the thread ran `cpu_ns`. Emitted at each
 * watchdog tick while the callout lasts (the last one before the exit is the best).
 */
LTTNG_UST_TRACEPOINT_EVENT(runloop, callout_cpu,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint8_t, kind, uint64_t, item_id, uint64_t, elapsed_ns,
                      uint64_t, cpu_ns),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_enum(runloop, callout_kind, uint8_t, kind, kind)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_integer(uint64_t, elapsed_ns, elapsed_ns)
        lttng_ust_field_integer(uint64_t, cpu_ns, cpu_ns)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(runloop, callout_cpu, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)

#endif /* RUNLOOP_TP_H */

#include <lttng/tracepoint-event.h>
