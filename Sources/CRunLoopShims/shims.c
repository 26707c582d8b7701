#define _GNU_SOURCE
#include "CRunLoopShims.h"
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

pid_t rl_gettid(void) { return (pid_t)syscall(SYS_gettid); }
int rl_is_main_thread(void) { return getpid() == rl_gettid(); }
uint64_t rl_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
