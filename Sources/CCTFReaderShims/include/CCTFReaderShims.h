#ifndef CCTFREADERSHIMS_H
#define CCTFREADERSHIMS_H
#include <stdint.h>

/// An address in the calling function's frame on the thread's real stack. (A Swift local's
/// address is not one under AddressSanitizer, which may move locals to a "fake stack" on the heap
/// to catch uses after return: CTFReader's stack budget, Nesting.swift, measures with this.)
static inline uintptr_t ctf_frame_address(void) {
    return (uintptr_t)__builtin_frame_address(0);
}

#endif
