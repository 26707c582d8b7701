/*
 * tracing-bench's floor provider `rlbench_floor` (bench only: not part of the `runloop` provider,
 * its schema or any library; only the tracing-bench executable links it).
 *
 *   rlbench_floor:int1        one uint64 field: the least an lttng-ust event can carry, i.e. what
 *                             LTTng itself costs per event (reserve, timestamp, contexts, commit)
 *   rlbench_floor:block_like  the payload of runloop:block_entry (three uint64 + a string), emitted
 *                             straight from C: how much of our cost is payload rather than the
 *                             Swift -> C path
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER rlbench_floor

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./floor_tp.h"

#if !defined(RLBENCH_FLOOR_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RLBENCH_FLOOR_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(rlbench_floor, int1,
    LTTNG_UST_TP_ARGS(uint64_t, value),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, value, value)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(rlbench_floor, int1, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

LTTNG_UST_TRACEPOINT_EVENT(rlbench_floor, block_like,
    LTTNG_UST_TP_ARGS(uint64_t, loop_id, uint64_t, iteration, uint64_t, item_id, const char *, name),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint64_t, loop_id, loop_id)
        lttng_ust_field_integer(uint64_t, iteration, iteration)
        lttng_ust_field_integer(uint64_t, item_id, item_id)
        lttng_ust_field_string(name, name)
    )
)
LTTNG_UST_TRACEPOINT_LOGLEVEL(rlbench_floor, block_like, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

#endif /* RLBENCH_FLOOR_TP_H */

#include <lttng/tracepoint-event.h>
