/*
 * Out-of-line emitters of the `runloop` provider. Swift calls `rl_tp_NAME(...)` only after the
 * inlined `rl_tp_NAME_enabled()` check said a session records the event, so this code runs only
 * while tracing. Compiled to nothing when the package is built with RLTRACE_DISABLED=1.
 */
#ifndef RLTRACE_DISABLED
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

/* Provider, tracepoint definitions and all their users live in one linked image. */
#define LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION
#define LTTNG_UST_TRACEPOINT_PROVIDER_HIDDEN_DEFINITION
#include "runloop_tp.h"
#include "CRunLoopTracepoints.h"

static __thread int32_t rl_tp_cached_tid;

int32_t rl_tp_current_tid(void) {
    int32_t tid = rl_tp_cached_tid;
    if (tid == 0) {
        tid = (int32_t)syscall(SYS_gettid);
        rl_tp_cached_tid = tid;
    }
    return tid;
}

#define RL_EMIT(event, ...) lttng_ust_do_tracepoint(runloop, event, __VA_ARGS__)

/*
 * Strings (item, thread and mode names): an empty one is recorded as "(unnamed)". babeltrace2 2.0.4 (Debian 12)
 * prints a zero-length string field as the previous string it decoded, i.e. another item's name,
 * which would be worse than no name.
 */
static inline const char *rl_name(const char *name) {
    return (name == NULL || name[0] == '\0') ? "(unnamed)" : name;
}

void rl_tp_loop_created(uint64_t loop_id, uint64_t iteration, int32_t tid, const char *thread_name) {
    RL_EMIT(loop_created, loop_id, iteration, tid, rl_name(thread_name));
}
void rl_tp_loop_destroyed(uint64_t loop_id, uint64_t iteration, int32_t tid) {
    RL_EMIT(loop_destroyed, loop_id, iteration, tid);
}
void rl_tp_run_enter(uint64_t loop_id, uint64_t iteration, const char *mode, int64_t timeout_ns,
                     bool return_after_source_handled, uint32_t depth) {
    RL_EMIT(run_enter, loop_id, iteration, rl_name(mode), timeout_ns, (uint8_t)return_after_source_handled, depth);
}
void rl_tp_run_exit(uint64_t loop_id, uint64_t iteration, const char *mode, uint8_t result, uint32_t depth) {
    RL_EMIT(run_exit, loop_id, iteration, rl_name(mode), result, depth);
}
void rl_tp_iteration_begin(uint64_t loop_id, uint64_t iteration) {
    RL_EMIT(iteration_begin, loop_id, iteration);
}
void rl_tp_iteration_end(uint64_t loop_id, bool handled_source, uint32_t callouts) {
    RL_EMIT(iteration_end, loop_id, (uint8_t)handled_source, callouts);
}
void rl_tp_observer_entry(uint64_t loop_id, uint64_t item_id, uint8_t activity) {
    RL_EMIT(observer_entry, loop_id, item_id, activity);
}
void rl_tp_observer_exit(uint64_t loop_id) {
    RL_EMIT(observer_exit, loop_id);
}
void rl_tp_source0_entry(uint64_t loop_id, uint64_t item_id) {
    RL_EMIT(source0_entry, loop_id, item_id);
}
void rl_tp_source0_exit(uint64_t loop_id) {
    RL_EMIT(source0_exit, loop_id);
}
void rl_tp_source1_entry(uint64_t loop_id, uint64_t item_id, int32_t fd, uint32_t events) {
    RL_EMIT(source1_entry, loop_id, item_id, fd, events);
}
void rl_tp_source1_exit(uint64_t loop_id) {
    RL_EMIT(source1_exit, loop_id);
}
void rl_tp_timer_entry(uint64_t loop_id, uint64_t item_id, uint64_t scheduled_ns) {
    RL_EMIT(timer_entry, loop_id, item_id, scheduled_ns);
}
void rl_tp_timer_exit(uint64_t loop_id) {
    RL_EMIT(timer_exit, loop_id);
}
void rl_tp_main_queue_entry(uint64_t loop_id) {
    RL_EMIT(main_queue_entry, loop_id);
}
void rl_tp_main_queue_exit(uint64_t loop_id) {
    RL_EMIT(main_queue_exit, loop_id);
}
void rl_tp_block_entry(uint64_t loop_id, uint64_t item_id) {
    RL_EMIT(block_entry, loop_id, item_id);
}
void rl_tp_block_exit(uint64_t loop_id) {
    RL_EMIT(block_exit, loop_id);
}
void rl_tp_sleep_begin(uint64_t loop_id, int64_t timeout_ns, uint64_t deadline_ns) {
    RL_EMIT(sleep_begin, loop_id, timeout_ns, deadline_ns);
}
void rl_tp_wake(uint64_t loop_id, uint8_t reason, int32_t fd, uint64_t slept_ns) {
    RL_EMIT(wake, loop_id, reason, fd, slept_ns);
}
void rl_tp_wakeup_requested(uint64_t loop_id, bool accepted) {
    RL_EMIT(wakeup_requested, loop_id, (uint8_t)accepted, rl_tp_current_tid());
}
void rl_tp_source0_signalled(uint64_t loop_id, uint64_t item_id, uint64_t signal_seq) {
    RL_EMIT(source0_signalled, loop_id, item_id, signal_seq, rl_tp_current_tid());
}
void rl_tp_timer_armed(uint64_t loop_id, uint64_t item_id, uint64_t fire_ns, uint64_t interval_ns,
                       uint32_t missed_fires) {
    RL_EMIT(timer_armed, loop_id, item_id, fire_ns, interval_ns, missed_fires);
}
void rl_tp_item_added(uint64_t loop_id, uint64_t iteration, uint8_t kind, uint64_t item_id, const char *name,
                      const char *mode) {
    RL_EMIT(item_added, loop_id, iteration, kind, item_id, rl_name(name), rl_name(mode));
}
void rl_tp_item_removed(uint64_t loop_id, uint64_t iteration, uint8_t kind, uint64_t item_id, const char *name,
                        const char *mode) {
    RL_EMIT(item_removed, loop_id, iteration, kind, item_id, rl_name(name), rl_name(mode));
}
void rl_tp_hang_begin(uint64_t loop_id, uint64_t iteration, uint64_t hang_id, uint8_t kind, uint64_t item_id,
                      const char *item_name, uint64_t threshold_ns, uint64_t elapsed_ns, int32_t loop_tid) {
    RL_EMIT(hang_begin, loop_id, iteration, hang_id, kind, item_id, rl_name(item_name), threshold_ns, elapsed_ns,
            loop_tid);
}
void rl_tp_hang_end(uint64_t loop_id, uint64_t iteration, uint64_t hang_id, uint64_t duration_ns, uint32_t samples) {
    RL_EMIT(hang_end, loop_id, iteration, hang_id, duration_ns, samples);
}
/* RunLoopCore's samples are emitted by the capture signal handler itself (runloop_hang.c); this
 * emitter is for callers on an ordinary thread. */
void rl_tp_hang_stack(uint64_t loop_id, uint64_t hang_id, uint32_t sample, uint64_t elapsed_ns,
                      const uint64_t *frames, uint32_t frame_count) {
    RL_EMIT(hang_stack, loop_id, hang_id, sample, elapsed_ns, frames, frame_count);
}
void rl_tp_loop_info(uint64_t loop_id, int32_t pid, int32_t tid, const char *procname, const char *thread_name) {
    RL_EMIT(loop_info, loop_id, pid, tid, rl_name(procname), rl_name(thread_name));
}
void rl_tp_item_info(uint64_t loop_id, uint8_t kind, uint64_t item_id, int64_t order, const char *name,
                     const char *mode) {
    RL_EMIT(item_info, loop_id, kind, item_id, order, rl_name(name), rl_name(mode));
}
void rl_tp_callout_cpu(uint64_t loop_id, uint8_t kind, uint64_t item_id, uint64_t elapsed_ns, uint64_t cpu_ns) {
    RL_EMIT(callout_cpu, loop_id, kind, item_id, elapsed_ns, cpu_ns);
}
#else
typedef int rl_tp_emit_disabled_translation_unit;
#endif
