#!/usr/bin/env bash
# Tracepoint cost, side by side: this build (tracing compiled in, no session), the same build
# recording `runloop:*` in a private session daemon, and a build with tracing compiled out
# (RLTRACE_DISABLED=1). Usage: scripts/bench-tracing.sh
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --scratch-path .build-bench-traced --product tracing-bench >&2
RLTRACE_DISABLED=1 swift build -c release --scratch-path .build-bench-notrace --product tracing-bench >&2
exec .build-bench-traced/release/tracing-bench --baseline .build-bench-notrace/release/tracing-bench
