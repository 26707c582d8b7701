#define _GNU_SOURCE
#include "CRunLoopShims.h"
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <string.h>
#include <dlfcn.h>
#include <link.h>

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

__attribute__((noinline)) uintptr_t rl_caller_address(void) {
    return (uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
}

int rl_symbol_range(uintptr_t address, uintptr_t *start, uintptr_t *size, uintptr_t *base) {
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    *start = 0; *size = 0; *base = 0;
    if (dladdr1((void *)address, &info, (void **)&sym, RTLD_DL_SYMENT) == 0) return 0;
    *base = (uintptr_t)info.dli_fbase;
    if (info.dli_saddr == NULL) return 0;
    *start = (uintptr_t)info.dli_saddr;
    *size = sym != NULL ? (uintptr_t)sym->st_size : 0;
    return 1;
}
