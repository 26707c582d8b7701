/*
 * Stack capture for the hang watchdog (Sources/RunLoopCore/Watchdog.swift, through RunLoopTracing's
 * RLHangSampler): a signal sent to the
 * hung loop thread, whose handler walks that thread's own stack and emits `runloop:hang_stack` on
 * it. Design and its reasons: docs/tracepoints.md "Hangs".
 *
 * Async-signal safety of the handler:
 *   - no malloc, no lock: the request and the frame buffer are static; the handler only touches
 *     atomics, its own stack, clock_gettime (vDSO), gettid/futex system calls and
 *   - backtrace() (glibc, which calls libgcc_s's CFI unwinder). It is not on POSIX's list because
 *     its FIRST call dlopen()s libgcc_s; rl_hang_capture_install() makes that first call on the
 *     watchdog's thread. After it, on glibc >= 2.35 with GCC >= 12's libgcc (Debian 12: 2.36 and
 *     12.2), the unwinder finds each frame's FDE through _dl_find_object (lock-free, no malloc) and
 *     takes its object mutex only when code registered unwind tables at run time (JITs: none here).
 *     Unlike a frame-pointer walk it also sees the frame that called into libc code built without
 *     frame pointers (usleep, nanosleep, futex waits), which is where hung threads usually are.
 *   - the tracepoint: LTTng-UST's probe path is built for instrumented signal handlers (the ring
 *     buffer reserves lock-free with a per-thread nesting count, and contexts such as procname
 *     keep per-nesting caches: lttng-ust commit 74011e88 "procname context async-signal safety").
 */
#ifndef RLTRACE_DISABLED
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <execinfo.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <stdint.h>
#include "CRunLoopTracepoints.h"
#include "CRunLoopHang.h"

enum { RL_HANG_IDLE = 0, RL_HANG_REQUESTED = 1, RL_HANG_RUNNING = 2, RL_HANG_DONE = 3 };

/* The one outstanding request (the watchdog is the only requester; one capture at a time). */
static struct {
    int32_t state;                     /* RL_HANG_*; also the futex word */
    int32_t tid;
    uint64_t loop_id, hang_id, start_ns;
    uint32_t sample;
    uint32_t nframes;
    uint64_t frames[RL_HANG_MAX_FRAMES];
} rl_hang_req;

static int rl_hang_signo = 0;          /* 0 = not installed */
static uint64_t rl_hang_sent = 0;
static pid_t rl_hang_pid = 0;

static uint64_t rl_hang_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uintptr_t rl_hang_context_pc(void *uctx) {
    ucontext_t *uc = (ucontext_t *)uctx;
    if (uc == NULL) return 0;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    return 0;
#endif
}

static void rl_hang_handler(int sig, siginfo_t *info, void *uctx) {
    (void)sig;
    int saved_errno = errno;
    /* Only our own request for this very thread (tgkill from this process). */
    if (info == NULL || info->si_code != SI_TKILL || info->si_pid != rl_hang_pid) goto out;
    if (__atomic_load_n(&rl_hang_req.state, __ATOMIC_ACQUIRE) != RL_HANG_REQUESTED) goto out;
    if ((int32_t)syscall(SYS_gettid) != rl_hang_req.tid) goto out;
    int32_t expected = RL_HANG_REQUESTED;
    if (!__atomic_compare_exchange_n(&rl_hang_req.state, &expected, RL_HANG_RUNNING, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) goto out;

    void *buf[RL_HANG_MAX_FRAMES + 8];
    int n = backtrace(buf, RL_HANG_MAX_FRAMES + 8);
    /* Drop the handler's own frames and the signal trampoline: start at the interrupted PC. */
    uintptr_t pc = rl_hang_context_pc(uctx);
    int first = n > 2 ? 2 : n;
    for (int i = 0; i < n; i++) {
        if ((uintptr_t)buf[i] == pc) { first = i; break; }
    }
    uint32_t count = 0;
    for (int i = first; i < n && count < RL_HANG_MAX_FRAMES; i++) {
        rl_hang_req.frames[count++] = (uint64_t)(uintptr_t)buf[i];
    }
    rl_hang_req.nframes = count;
    /* The provider's emitter (runloop_emit.c): the same probe call, one direct call further. */
    if (rl_tp_hang_stack_enabled()) {
        rl_tp_hang_stack(rl_hang_req.loop_id, rl_hang_req.hang_id, rl_hang_req.sample,
                         rl_hang_now() - rl_hang_req.start_ns, rl_hang_req.frames, count);
    }
    __atomic_store_n(&rl_hang_req.state, RL_HANG_DONE, __ATOMIC_RELEASE);
    syscall(SYS_futex, &rl_hang_req.state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
out:
    errno = saved_errno;
}

static int rl_hang_is_free(int s) {
    struct sigaction old;
    if (sigaction(s, NULL, &old) != 0) return 0;
    return !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
}

/* The first free real-time signal at or below `start`, above liblttng-ust's three; -1 if none. */
static int rl_hang_pick(int start) {
    for (int s = start; s >= SIGRTMIN + 3; s--) {
        if (rl_hang_is_free(s)) return s;
    }
    return -1;
}

static int rl_hang_chosen = 0;         /* 0 = not chosen yet */

int rl_hang_signal_choose(void) {
    int c = __atomic_load_n(&rl_hang_chosen, __ATOMIC_ACQUIRE);
    if (c != 0) return c;
    int start = SIGRTMAX - 5;
    const char *env = getenv("RLTRACE_HANG_SIGNAL");
    if (env != NULL) {
        int n = atoi(env);
        if (n >= SIGRTMIN + 3 && n <= SIGRTMAX) start = n;
    }
    int picked = rl_hang_pick(start);
    int expected = 0;
    /* Several loops' first runs may race: the first choice wins. */
    __atomic_compare_exchange_n(&rl_hang_chosen, &expected, picked, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&rl_hang_chosen, __ATOMIC_ACQUIRE);
}

void rl_hang_thread_prepare(void) {
    int s = rl_hang_signal_choose();
    if (s <= 0) return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, s);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

int rl_hang_capture_install(void) {
    static int installed = 0;   /* called on the watchdog's thread only */
    if (installed != 0) return installed;
    /* Pre-warm backtrace(): its first call loads libgcc_s and initialises the unwinder. */
    void *warm[4];
    (void)backtrace(warm, 4);
    rl_hang_pid = getpid();
    int chosen = rl_hang_signal_choose();
    /* Taken since it was chosen (the application installed a handler): none rather than a
     * signal the loop threads may block. */
    if (chosen > 0 && !rl_hang_is_free(chosen)) chosen = -1;
    if (chosen > 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = rl_hang_handler;
        sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        if (sigaction(chosen, &sa, NULL) != 0) chosen = -1;
    }
    rl_hang_signo = chosen > 0 ? chosen : 0;
    installed = chosen > 0 ? chosen : -1;
    return installed;
}

int32_t rl_hang_capture(int32_t tid, uint64_t loop_id, uint64_t hang_id, uint32_t sample, uint64_t start_ns,
                        uint64_t timeout_ns) {
    int s = rl_hang_signo;
    if (s == 0) return -1;
    /* Never send a signal whose handler is no longer ours (its default action would kill). */
    struct sigaction cur;
    if (sigaction(s, NULL, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != rl_hang_handler) return -1;
    rl_hang_req.tid = tid;
    rl_hang_req.loop_id = loop_id;
    rl_hang_req.hang_id = hang_id;
    rl_hang_req.sample = sample;
    rl_hang_req.start_ns = start_ns;
    rl_hang_req.nframes = 0;
    __atomic_store_n(&rl_hang_req.state, RL_HANG_REQUESTED, __ATOMIC_RELEASE);
    if (syscall(SYS_tgkill, rl_hang_pid, tid, s) != 0) {
        __atomic_store_n(&rl_hang_req.state, RL_HANG_IDLE, __ATOMIC_RELAXED);
        return -1;
    }
    __atomic_fetch_add(&rl_hang_sent, 1, __ATOMIC_RELAXED);
    uint64_t deadline = rl_hang_now() + timeout_ns;
    for (;;) {
        int32_t st = __atomic_load_n(&rl_hang_req.state, __ATOMIC_ACQUIRE);
        if (st == RL_HANG_DONE) break;
        uint64_t now = rl_hang_now();
        if (st == RL_HANG_REQUESTED && now >= deadline) {
            /* Withdraw; if the handler took it meanwhile, wait for it to finish. */
            int32_t expected = RL_HANG_REQUESTED;
            if (__atomic_compare_exchange_n(&rl_hang_req.state, &expected, RL_HANG_IDLE, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return -1;
            continue;
        }
        /* REQUESTED (before the deadline) or RUNNING (the handler always finishes): sleep on the word. */
        uint64_t left = st == RL_HANG_REQUESTED ? deadline - now : 1000000ull;
        struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
        syscall(SYS_futex, &rl_hang_req.state, FUTEX_WAIT_PRIVATE, st, &ts, NULL, 0);
    }
    int32_t n = (int32_t)rl_hang_req.nframes;
    __atomic_store_n(&rl_hang_req.state, RL_HANG_IDLE, __ATOMIC_RELAXED);
    return n;
}

uint32_t rl_hang_last_frames(uint64_t *out, uint32_t max) {
    uint32_t n = rl_hang_req.nframes < max ? rl_hang_req.nframes : max;
    memcpy(out, rl_hang_req.frames, n * sizeof(uint64_t));
    return n;
}

uint64_t rl_hang_signals_sent(void) { return __atomic_load_n(&rl_hang_sent, __ATOMIC_RELAXED); }
#else
typedef int rl_hang_disabled_translation_unit;
#endif
