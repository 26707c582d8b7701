/*
 * CRunLoopTracepoints: the C side of the `runloop` LTTng-UST provider, as Swift sees it.
 *
 * For every event `runloop:NAME` this header gives
 *   - `rl_tp_NAME_enabled()`: a `static inline` check "is any session recording this event",
 *     which is one relaxed load of the tracepoint's state word plus a branch. Swift inlines it
 *     (it is compiled into the caller by the Clang importer), so a disabled site costs ~1 ns.
 *   - `rl_tp_NAME(...)`: the out-of-line emitter, defined in runloop_emit.c. Call it only after
 *     the check said yes (it re-checks nothing and always goes through the probe).
 *
 * The tracepoint structures are hidden symbols (LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION: the provider,
 * the definitions and every caller are linked into one image), so the check compiles to a single
 * PC-relative load of the state word, with no GOT indirection.
 *
 * The tracepoint structures themselves (`lttng_ust_tracepoint_runloop___NAME`) are defined in
 * runloop_tp.c (LTTNG_UST_TRACEPOINT_DEFINE); liblttng-ust flips their `state` word when a
 * session enables the event. This header deliberately includes only <lttng/tracepoint-types.h>
 * (type definitions), not <lttng/tracepoint.h>, whose weak definitions and constructors must not
 * be instantiated in every Swift module that imports this one.
 *
 * When the package is built with RLTRACE_DISABLED=1 the .c files compile to nothing and the
 * Swift side never references these symbols.
 */
#ifndef C_RUNLOOP_TRACEPOINTS_H
#define C_RUNLOOP_TRACEPOINTS_H

#include <stdbool.h>
#include <stdint.h>
#include <lttng/tracepoint-types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RL_TP_DECLARE_ENABLED(event)                                                             \
    extern struct lttng_ust_tracepoint lttng_ust_tracepoint_runloop___##event                    \
        __attribute__((visibility("hidden")));                                                   \
    static inline __attribute__((always_inline)) bool rl_tp_##event##_enabled(void) {            \
        return __builtin_expect(                                                                 \
            __atomic_load_n(&lttng_ust_tracepoint_runloop___##event.state, __ATOMIC_RELAXED) != 0, \
            0);                                                                                  \
    }

/*
 * `rl_tp_KIND_callout_enabled()`: whether a session records KIND_entry or KIND_exit, in one branch
 * (the two state words are or-ed): what each callout trampoline checks before its callout.
 */
#define RL_TP_DECLARE_CALLOUT_ENABLED(kind)                                                      \
    static inline __attribute__((always_inline)) bool rl_tp_##kind##_callout_enabled(void) {     \
        return __builtin_expect(                                                                 \
            (__atomic_load_n(&lttng_ust_tracepoint_runloop___##kind##_entry.state, __ATOMIC_RELAXED) | \
             __atomic_load_n(&lttng_ust_tracepoint_runloop___##kind##_exit.state, __ATOMIC_RELAXED)) != 0, \
            0);                                                                                  \
    }

RL_TP_DECLARE_ENABLED(loop_created)
RL_TP_DECLARE_ENABLED(loop_destroyed)
RL_TP_DECLARE_ENABLED(run_enter)
RL_TP_DECLARE_ENABLED(run_exit)
RL_TP_DECLARE_ENABLED(iteration_begin)
RL_TP_DECLARE_ENABLED(iteration_end)
RL_TP_DECLARE_ENABLED(observer_entry)
RL_TP_DECLARE_ENABLED(observer_exit)
RL_TP_DECLARE_ENABLED(source0_entry)
RL_TP_DECLARE_ENABLED(source0_exit)
RL_TP_DECLARE_ENABLED(source1_entry)
RL_TP_DECLARE_ENABLED(source1_exit)
RL_TP_DECLARE_ENABLED(timer_entry)
RL_TP_DECLARE_ENABLED(timer_exit)
RL_TP_DECLARE_ENABLED(main_queue_entry)
RL_TP_DECLARE_ENABLED(main_queue_exit)
RL_TP_DECLARE_ENABLED(block_entry)
RL_TP_DECLARE_ENABLED(block_exit)
RL_TP_DECLARE_ENABLED(sleep_begin)
RL_TP_DECLARE_ENABLED(wake)
RL_TP_DECLARE_ENABLED(wakeup_requested)
RL_TP_DECLARE_ENABLED(source0_signalled)
RL_TP_DECLARE_ENABLED(timer_armed)
RL_TP_DECLARE_ENABLED(item_added)
RL_TP_DECLARE_ENABLED(item_removed)
RL_TP_DECLARE_ENABLED(hang_begin)
RL_TP_DECLARE_ENABLED(hang_stack)
RL_TP_DECLARE_ENABLED(hang_end)
RL_TP_DECLARE_ENABLED(loop_info)
RL_TP_DECLARE_ENABLED(item_info)
RL_TP_DECLARE_ENABLED(callout_cpu)

/* Whether a session records any of the hang watchdog's three events (one branch). */
static inline __attribute__((always_inline)) bool rl_tp_hang_any_enabled(void) {
    return __builtin_expect(
        (__atomic_load_n(&lttng_ust_tracepoint_runloop___hang_begin.state, __ATOMIC_RELAXED) |
         __atomic_load_n(&lttng_ust_tracepoint_runloop___hang_stack.state, __ATOMIC_RELAXED) |
         __atomic_load_n(&lttng_ust_tracepoint_runloop___hang_end.state, __ATOMIC_RELAXED)) != 0, 0);
}

RL_TP_DECLARE_CALLOUT_ENABLED(observer)
RL_TP_DECLARE_CALLOUT_ENABLED(source0)
RL_TP_DECLARE_CALLOUT_ENABLED(source1)
RL_TP_DECLARE_CALLOUT_ENABLED(timer)
RL_TP_DECLARE_CALLOUT_ENABLED(main_queue)
RL_TP_DECLARE_CALLOUT_ENABLED(block)

/* ---- emitters (out of line; call only when the matching check is true) -------------------- */

void rl_tp_loop_created(uint64_t loop_id, uint64_t iteration, int32_t tid, const char *thread_name);
void rl_tp_loop_destroyed(uint64_t loop_id, uint64_t iteration, int32_t tid);
void rl_tp_run_enter(uint64_t loop_id, uint64_t iteration, const char *mode, int64_t timeout_ns,
                     bool return_after_source_handled, uint32_t depth);
void rl_tp_run_exit(uint64_t loop_id, uint64_t iteration, const char *mode, uint8_t result, uint32_t depth);
void rl_tp_iteration_begin(uint64_t loop_id, uint64_t iteration);
void rl_tp_iteration_end(uint64_t loop_id, bool handled_source, uint32_t callouts);
void rl_tp_observer_entry(uint64_t loop_id, uint64_t item_id, uint8_t activity);
void rl_tp_observer_exit(uint64_t loop_id);
void rl_tp_source0_entry(uint64_t loop_id, uint64_t item_id);
void rl_tp_source0_exit(uint64_t loop_id);
void rl_tp_source1_entry(uint64_t loop_id, uint64_t item_id, int32_t fd, uint32_t events);
void rl_tp_source1_exit(uint64_t loop_id);
void rl_tp_timer_entry(uint64_t loop_id, uint64_t item_id, uint64_t scheduled_ns);
void rl_tp_timer_exit(uint64_t loop_id);
void rl_tp_main_queue_entry(uint64_t loop_id);
void rl_tp_main_queue_exit(uint64_t loop_id);
void rl_tp_block_entry(uint64_t loop_id, uint64_t item_id);
void rl_tp_block_exit(uint64_t loop_id);
void rl_tp_sleep_begin(uint64_t loop_id, int64_t timeout_ns, uint64_t deadline_ns);
void rl_tp_wake(uint64_t loop_id, uint8_t reason, int32_t fd, uint64_t slept_ns);
/* Emitted on the requesting thread; caller_tid is that thread's tid. */
void rl_tp_wakeup_requested(uint64_t loop_id, bool accepted);
void rl_tp_source0_signalled(uint64_t loop_id, uint64_t item_id, uint64_t signal_seq);
void rl_tp_timer_armed(uint64_t loop_id, uint64_t item_id, uint64_t fire_ns, uint64_t interval_ns,
                       uint32_t missed_fires);
void rl_tp_item_added(uint64_t loop_id, uint64_t iteration, uint8_t kind, uint64_t item_id, const char *name,
                      const char *mode);
void rl_tp_item_removed(uint64_t loop_id, uint64_t iteration, uint8_t kind, uint64_t item_id, const char *name,
                        const char *mode);

/* The calling thread's kernel thread id (cached per thread). */
int32_t rl_tp_current_tid(void);

/* ---- hang watchdog (runloop_emit.c, runloop_hang.c; docs/tracepoints.md "Hangs") --------- */

/* kind: a callout_kind value, 6 = `loop` (stuck outside any callout). */
void rl_tp_hang_begin(uint64_t loop_id, uint64_t iteration, uint64_t hang_id, uint8_t kind, uint64_t item_id,
                      const char *item_name, uint64_t threshold_ns, uint64_t elapsed_ns, int32_t loop_tid);
void rl_tp_hang_end(uint64_t loop_id, uint64_t iteration, uint64_t hang_id, uint64_t duration_ns, uint32_t samples);
/* hang_stack from an ordinary thread (RunLoopCore emits it from rl_hang_capture's signal handler). */
/* The constant pools (docs/tracepoints.md, "Constant pools") and the watchdog's CPU readings. */
void rl_tp_loop_info(uint64_t loop_id, int32_t pid, int32_t tid, const char *procname, const char *thread_name);
void rl_tp_item_info(uint64_t loop_id, uint8_t kind, uint64_t item_id, int64_t order, const char *name,
                     const char *mode);
void rl_tp_callout_cpu(uint64_t loop_id, uint8_t kind, uint64_t item_id, uint64_t elapsed_ns, uint64_t cpu_ns);
void rl_tp_hang_stack(uint64_t loop_id, uint64_t hang_id, uint32_t sample, uint64_t elapsed_ns,
                      const uint64_t *frames, uint32_t frame_count);

/* At most this many frames per `hang_stack` sample. */
#define RL_HANG_MAX_FRAMES 64

/*
 * The capture signal, chosen once per process: RLTRACE_HANG_SIGNAL=N from the environment, else
 * SIGRTMAX - 5 (59 on Linux), or the next lower real-time signal whose disposition is still the
 * default (never SIGRTMIN..SIGRTMIN+2, liblttng-ust's own). Returns it, or -1 if none is free.
 */
int rl_hang_signal_choose(void);

/*
 * Called on each loop's thread at its first run: unblocks the capture signal for the calling thread
 * (a process started from a thread that blocked it — a libdispatch worker, for one — inherits the
 * blocked mask, and the signal would never be delivered). No handler is installed yet.
 */
void rl_hang_thread_prepare(void);

/*
 * Installs the stack-capture signal handler on the chosen signal (once per process; later calls
 * return the same number) and pre-warms glibc's backtrace() (which loads libgcc_s and initialises
 * its unwinder outside any signal handler). Called by the watchdog when a session first records
 * the hang events. Returns the signal number, or -1 when none is free (the chosen one got a
 * handler of the application's meanwhile).
 */
int rl_hang_capture_install(void);

/*
 * Samples the stack of thread `tid` (of this process) during a hang: sends it the capture signal
 * (tgkill); its handler walks its own stack into a preallocated buffer and, when a session records
 * it, emits `runloop:hang_stack` on that thread with (loop_id, hang_id, sample, now - start_ns,
 * frames). Waits at most `timeout_ns` for the handler; one capture at a time (the watchdog's thread).
 * Returns the number of frames captured (>= 0), or -1 when no signal was sent (not installed, the
 * application replaced the handler, tgkill failed) or the handler did not run in time (the thread
 * blocks the signal): then the request is withdrawn and a late delivery does nothing.
 */
int32_t rl_hang_capture(int32_t tid, uint64_t loop_id, uint64_t hang_id, uint32_t sample, uint64_t start_ns,
                        uint64_t timeout_ns);

/* Copies the frames of the last successful capture into `out` (at most `max`); returns their number. */
uint32_t rl_hang_last_frames(uint64_t *out, uint32_t max);

/* How many capture signals this process has sent (a diagnostic counter). */
uint64_t rl_hang_signals_sent(void);

#ifdef __cplusplus
}
#endif

#endif /* C_RUNLOOP_TRACEPOINTS_H */
