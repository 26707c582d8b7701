/*
 * CRunLoopHang: the hang watchdog's stack sampler (runloop_hang.c; docs/tracepoints.md "Hangs"),
 * kept apart from the provider (CRunLoopTracepoints, whose `hang_stack` emitter it calls from its
 * signal handler). Swift sees it through RunLoopTracing's RLHangSampler. When the package is built
 * with RLTRACE_DISABLED=1 runloop_hang.c compiles to nothing and RLHangSampler never calls it.
 */
#ifndef C_RUNLOOP_HANG_H
#define C_RUNLOOP_HANG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

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

#endif /* C_RUNLOOP_HANG_H */
