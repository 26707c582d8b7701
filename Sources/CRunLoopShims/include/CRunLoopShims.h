#ifndef CRUNLOOPSHIMS_H
#define CRUNLOOPSHIMS_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/// libdispatch's (undeclared) hooks that let a run loop service the main queue on Linux.
/// On Linux the handle is an eventfd; the callback must run on the process's main thread.
int _dispatch_get_main_queue_handle_4CF(void);
void _dispatch_main_queue_callback_4CF(void *_Nullable msg);

/// The calling thread's kernel thread id.
pid_t rl_gettid(void);
/// Whether the calling thread is the process's main thread.
int rl_is_main_thread(void);
/// The calling thread's name (prctl PR_GET_NAME) into buf (at least 16 bytes).
void rl_thread_name(char *_Nonnull buf, size_t len);
/// Sets the calling thread's name (at most 15 bytes are kept).
void rl_set_thread_name(const char *_Nonnull name);
/// CLOCK_MONOTONIC in nanoseconds (LTTng's clock).
uint64_t rl_monotonic_ns(void);

/// The calling thread's `pthread_self()`, without a call: on x86-64 glibc the thread's
/// `struct pthread` starts with its TCB header, whose `self` field (offset 16 from the thread
/// pointer, %fs) is what glibc's own pthread_self() returns — this is that function's body,
/// inlined (a perform-block on the loop's thread asks this once per block; the call through the
/// PLT made the caller save and restore five registers). Elsewhere it is pthread_self().
/// `RunLoopCoreTests.threadSelfIsPthreadSelf` checks the two agree on many threads.
static inline uintptr_t rl_thread_self(void) {
#if defined(__x86_64__) && defined(__GLIBC__)
    uintptr_t self;
    __asm__("movq %%fs:16, %0" : "=r"(self));
    return self;
#else
    return (uintptr_t)pthread_self();
#endif
}

/// An address inside the calling function (the return address of this non-inlined call): for
/// tests that look for a function in a sampled stack.
uintptr_t rl_caller_address(void);
/// The symbol containing `address` as the dynamic linker sees it (dladdr1): its start, its size
/// (0 if unknown) and the load base of its object. Returns 0 if no symbol was found.
int rl_symbol_range(uintptr_t address, uintptr_t *_Nonnull start, uintptr_t *_Nonnull size, uintptr_t *_Nonnull base);

/*
 * The loop's two waiting calls, made as raw system calls rather than through glibc's wrappers.
 * In a multi-threaded process (any process linking liblttng-ust, which starts listener threads)
 * glibc makes epoll_wait and poll cancellation points: it switches the thread to asynchronous
 * cancellation around the call and back, two atomic updates (~90 instructions per loop pass that
 * polls). Run-loop threads are never cancelled: pthread_cancel unwinding through Swift frames is
 * undefined behaviour, and CF on Linux gives no cancellation guarantee either.
 */
/// epoll_wait(ep, ev, max, timeout) as a raw epoll_pwait with no signal mask (-1 and errno set on error).
static inline int rl_epoll_wait(int ep, struct epoll_event *_Nonnull ev, int max, int timeout) {
    return (int)syscall(SYS_epoll_pwait, ep, ev, max, timeout, (void *)0, (size_t)8);
}
/// Whether `fd` is readable right now: a raw ppoll of POLLIN with a zero timeout.
static inline int rl_poll_readable(int fd) {
    struct pollfd p = { .fd = fd, .events = POLLIN, .revents = 0 };
    struct timespec zero = { 0, 0 };
    return (int)syscall(SYS_ppoll, &p, 1, &zero, (void *)0, (size_t)8) == 1 && (p.revents & POLLIN) != 0;
}

#endif
