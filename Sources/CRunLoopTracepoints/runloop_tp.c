/*
 * The one translation unit that creates the `runloop` provider's probes and defines its
 * tracepoint structures (LTTNG_UST_TRACEPOINT_CREATE_PROBES + LTTNG_UST_TRACEPOINT_DEFINE).
 * Compiled to nothing when the package is built with RLTRACE_DISABLED=1.
 */
#ifndef RLTRACE_DISABLED
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
/* Provider, tracepoint definitions and all their users live in one linked image. */
#define LTTNG_UST_TRACEPOINT_HIDDEN_DEFINITION
#define LTTNG_UST_TRACEPOINT_PROVIDER_HIDDEN_DEFINITION
#include "runloop_tp.h"
#else
typedef int rl_tp_disabled_translation_unit;
#endif
