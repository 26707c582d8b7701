// Allocation counter: see include/RLBenchMallocCounter.h.
#define _GNU_SOURCE
#include "RLBenchMallocCounter.h"
#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
extern void __libc_free(void *);

static _Atomic int counting;
static _Atomic uint64_t mallocs;
static _Atomic uint64_t frees;
static _Atomic int seen;

#define COUNT_ALLOC() do { atomic_store_explicit(&seen, 1, memory_order_relaxed); \
    if (atomic_load_explicit(&counting, memory_order_relaxed)) atomic_fetch_add_explicit(&mallocs, 1, memory_order_relaxed); } while (0)

void rlb_malloc_counting(int on) { atomic_store(&counting, on); }
uint64_t rlb_malloc_count(void) { return atomic_load(&mallocs); }
uint64_t rlb_free_count(void) { return atomic_load(&frees); }
void rlb_malloc_reset(void) { atomic_store(&mallocs, 0); atomic_store(&frees, 0); }
int rlb_malloc_interposed(void) {
    atomic_store(&seen, 0);
    void *volatile p = malloc(24);   // through the PLT: our own definition if interposition works
    free(p);
    return atomic_load(&seen);
}

void *malloc(size_t n) { COUNT_ALLOC(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { COUNT_ALLOC(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { COUNT_ALLOC(); return __libc_realloc(p, n); }
void free(void *p) {
    if (p && atomic_load_explicit(&counting, memory_order_relaxed)) atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
    __libc_free(p);
}
void *memalign(size_t al, size_t n) { COUNT_ALLOC(); return __libc_memalign(al, n); }
void *aligned_alloc(size_t al, size_t n) { COUNT_ALLOC(); return __libc_memalign(al, n); }
void *valloc(size_t n) { COUNT_ALLOC(); return __libc_valloc(n); }
void *pvalloc(size_t n) { COUNT_ALLOC(); return __libc_pvalloc(n); }
int posix_memalign(void **out, size_t al, size_t n) {
    if (al < sizeof(void *) || (al & (al - 1)) != 0) return EINVAL;
    COUNT_ALLOC();
    void *p = __libc_memalign(al, n);
    if (!p && n) return ENOMEM;
    *out = p;
    return 0;
}

/* Callgrind's collection switch (rl-bench's instruction rows): valgrind's own client-request macro
 * when its headers are installed (scripts/bench.sh installs valgrind before building). */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define RLB_HAVE_CALLGRIND 1
#endif
#endif

void rlb_callgrind_toggle_collect(void) {
#ifdef RLB_HAVE_CALLGRIND
    CALLGRIND_TOGGLE_COLLECT;
#endif
}

int rlb_callgrind_compiled(void) {
#ifdef RLB_HAVE_CALLGRIND
    return 1;
#else
    return 0;
#endif
}
