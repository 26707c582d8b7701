/*
 * tracing-bench's LTTng floor (Benchmarks/tracing-bench-floor/floor_tp.h): loops written in C that
 * emit the `rlbench_floor` provider's events the way a C program would (`lttng_ust_tracepoint`:
 * the enabled check and the probe call, nothing else). Each "pair" is two events, as a recorded
 * callout's entry and exit are. Compiled to nothing with RLTRACE_DISABLED=1 (the baseline build
 * must not link liblttng-ust).
 */
#ifndef C_TRACING_BENCH_FLOOR_H
#define C_TRACING_BENCH_FLOOR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2n events rlbench_floor:int1 {value = i}. */
void rlbench_floor_int1_pairs(uint64_t n);
/* 2n events rlbench_floor:block_like {1, i, i, name}. */
void rlbench_floor_block_like_pairs(uint64_t n, const char *name);
/* Whether a session records rlbench_floor:int1 (so the bench can tell a floor that recorded nothing). */
int rlbench_floor_int1_enabled(void);

#ifdef __cplusplus
}
#endif

#endif
