/*
 * ctf-testgen: records LTTng-UST events of many shapes so the CTF reader's tests and benchmark
 * have real traces to decode.
 *
 *   ctf-testgen mixed ITER THREADS   every event kind ITER times on each of THREADS threads
 *   ctf-testgen bench COUNT THREADS  COUNT small `rltest:tick` events split over THREADS threads
 *   ctf-testgen hang ITER            ITER mixed events, prints "ready", then sleeps until killed
 */
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "testgen_tp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sched.h>

static long g_iter = 10;
static long g_count = 0;
static int g_threads = 1;

static void emit_mixed(long i, int t) {
    int64_t v = (i * 7919 + t) * ((i % 2) ? -1 : 1) * (int64_t)(1 + (i % 5) * 1000003);
    uint64_t u = (uint64_t)(i * 2654435761u) ^ ((uint64_t)t << 40) ^ (i % 3 == 0 ? UINT64_C(0xF000000000000000) : 0);
    lttng_ust_tracepoint(rltest, ints, v, u);
    double d = (double)i / 7.0 - (double)t * 1.5e10;
    if (i % 11 == 3) d = -0.0;
    lttng_ust_tracepoint(rltest, floats, d);
    char s[64];
    snprintf(s, sizeof s, "t%d-i%ld %s", t, i, (i % 4 == 0) ? "\"quoted\"\\" : "héllo");
    char arr[9] = "abcdefgh";
    /* babeltrace2 2.0 prints stale text for a zero-length text sequence or a text array starting with NUL,
       so the oracle comparison keeps the first character and at least one sequence element. */
    arr[1 + i % 7] = (i % 3 == 0) ? '\0' : 'Z';
    lttng_ust_tracepoint(rltest, strings, s, arr, (size_t)(1 + i % 8));
    int32_t a[4] = {(int32_t)i, -(int32_t)i, t, (int32_t)0x80000000};
    uint16_t q[16];
    unsigned int n = (unsigned int)(i % 17);
    if (n > 16) n = 16;
    for (unsigned int k = 0; k < n; k++) q[k] = (uint16_t)(k * 4099 + i);
    lttng_ust_tracepoint(rltest, seqs, a, q, n);
    static const int colors[] = {0, 1, 10, 15, 20, 21, 7, -3};
    lttng_ust_tracepoint(rltest, enums, colors[(i + t) % 8]);
    lttng_ust_tracepoint(rltest, empty);
}

static void *mixed_thread(void *arg) {
    int t = (int)(intptr_t)arg;
    for (long i = 0; i < g_iter; i++) {
        emit_mixed(i, t);
        if (i % 64 == 0) sched_yield();
    }
    return NULL;
}

static void *bench_thread(void *arg) {
    int t = (int)(intptr_t)arg;
    long n = g_count / g_threads + (t < g_count % g_threads ? 1 : 0);
    for (long i = 0; i < n; i++) lttng_ust_tracepoint(rltest, tick, (uint64_t)i, t);
    return NULL;
}

static void run_threads(void *(*fn)(void *)) {
    pthread_t th[256];
    if (g_threads < 1) g_threads = 1;
    if (g_threads > 256) g_threads = 256;
    for (int t = 0; t < g_threads; t++) pthread_create(&th[t], NULL, fn, (void *)(intptr_t)t);
    for (int t = 0; t < g_threads; t++) pthread_join(th[t], NULL);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: ctf-testgen mixed ITER THREADS | bench COUNT THREADS | hang ITER\n");
        return 2;
    }
    if (strcmp(argv[1], "mixed") == 0) {
        g_iter = argc > 2 ? atol(argv[2]) : 10;
        g_threads = argc > 3 ? atoi(argv[3]) : 1;
        run_threads(mixed_thread);
        if (getenv("CTF_TESTGEN_HOLD")) {
            /* Alive until told (standard input closed): the recording stops while the per-process
               buffers still belong to a live process, so the stop flushes them (SharedDaemon.swift). */
            printf("done\n");
            fflush(stdout);
            while (getchar() != EOF) {}
        }
    } else if (strcmp(argv[1], "bench") == 0) {
        g_count = argc > 2 ? atol(argv[2]) : 1000000;
        g_threads = argc > 3 ? atoi(argv[3]) : 1;
        run_threads(bench_thread);
    } else if (strcmp(argv[1], "hang") == 0) {
        g_iter = argc > 2 ? atol(argv[2]) : 10;
        for (long i = 0; i < g_iter; i++) emit_mixed(i, 0);
        printf("ready\n");
        fflush(stdout);
        for (;;) pause();
    } else {
        fprintf(stderr, "unknown mode %s\n", argv[1]);
        return 2;
    }
    return 0;
}
