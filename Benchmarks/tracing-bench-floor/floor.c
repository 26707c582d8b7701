/* The one translation unit of the `rlbench_floor` provider: probes, tracepoint structures, loops. */
#ifndef RLTRACE_DISABLED
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION
#define LTTNG_UST_TRACEPOINT_PROVIDER_HIDDEN_DEFINITION
#include "floor_tp.h"
#include "CTracingBenchFloor.h"

__attribute__((noinline)) void rlbench_floor_int1_pairs(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        lttng_ust_tracepoint(rlbench_floor, int1, i);
        lttng_ust_tracepoint(rlbench_floor, int1, i);
    }
}

__attribute__((noinline)) void rlbench_floor_block_like_pairs(uint64_t n, const char *name) {
    for (uint64_t i = 0; i < n; i++) {
        lttng_ust_tracepoint(rlbench_floor, block_like, 1, i, i, name);
        lttng_ust_tracepoint(rlbench_floor, block_like, 1, i, i, name);
    }
}

int rlbench_floor_int1_enabled(void) {
    return lttng_ust_tracepoint_enabled(rlbench_floor, int1) ? 1 : 0;
}
#else
#include "CTracingBenchFloor.h"
void rlbench_floor_int1_pairs(uint64_t n) { (void)n; }
void rlbench_floor_block_like_pairs(uint64_t n, const char *name) { (void)n; (void)name; }
int rlbench_floor_int1_enabled(void) { return 0; }
#endif
