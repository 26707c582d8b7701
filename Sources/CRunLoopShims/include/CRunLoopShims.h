#ifndef CRUNLOOPSHIMS_H
#define CRUNLOOPSHIMS_H
#include <stdint.h>
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <poll.h>
#include <pthread.h>

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

#endif
