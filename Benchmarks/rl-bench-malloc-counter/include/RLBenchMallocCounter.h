#ifndef RLBENCH_MALLOC_COUNTER_H
#define RLBENCH_MALLOC_COUNTER_H
#include <stdint.h>

/// Allocation counting for rl-bench: this target defines malloc/calloc/realloc/memalign/
/// posix_memalign/aligned_alloc/valloc in the executable, which (ELF interposition) every shared
/// library of the process then calls; each forwards to glibc's __libc_* entry points.
/// Counting is off until rlb_malloc_counting(1); counts are process-wide (all threads).
void rlb_malloc_counting(int on);
/// Allocations (malloc, calloc, realloc of NULL or growing, aligned variants) since the last reset.
uint64_t rlb_malloc_count(void);
/// Frees since the last reset.
uint64_t rlb_free_count(void);
void rlb_malloc_reset(void);
/// 1 when this executable's malloc is the one the process uses (interposition worked).
int rlb_malloc_interposed(void);

/// Callgrind's collection switch for the calling thread (CALLGRIND_TOGGLE_COLLECT, from valgrind's
/// own <valgrind/callgrind.h>): rl-bench's instruction rows run a workload's child under
/// `valgrind --tool=callgrind --collect-atstart=no` and collect only its timed phase. A no-op when
/// not under valgrind, or when this file was compiled without valgrind's headers.
void rlb_callgrind_toggle_collect(void);
/// 1 when valgrind's headers were there at build time (else the toggle does nothing).
int rlb_callgrind_compiled(void);

#endif
