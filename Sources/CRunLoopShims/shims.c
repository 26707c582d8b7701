#define _GNU_SOURCE
#include "CRunLoopShims.h"
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <string.h>

pid_t rl_gettid(void) { return (pid_t)syscall(SYS_gettid); }
int rl_is_main_thread(void) { return getpid() == rl_gettid(); }
uint64_t rl_monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rl_thread_name(char *buf, size_t len) {
    char tmp[17] = {0};
    prctl(PR_GET_NAME, tmp, 0, 0, 0);
    strncpy(buf, tmp, len - 1);
    buf[len - 1] = 0;
}
void rl_set_thread_name(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }
