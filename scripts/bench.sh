#!/usr/bin/env bash
# The benchmark, side by side in one run (issue 8): RunLoopCore vs CoreFoundation's CFRunLoop vs a
# bare eventfd/timerfd+epoll floor, syscalls per cycle (strace -c -f), allocations per item, and
# tracing cost against a build with tracing compiled out (RLTRACE_DISABLED=1).
#
#   scripts/bench.sh            # builds both release binaries, prints the table
#   scripts/bench.sh --json     # the same as JSON (keys: id, workload, unit, ours, cf, floor, ratio,
#                               #   ratio_of, target, pass, note)
#   scripts/bench.sh --quick    # small sizes, one repetition (a smoke run)
# Build logs go to stderr; only the table (or JSON) goes to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
swift build -c release --scratch-path .build-bench --product rl-bench >&2
RLTRACE_DISABLED=1 swift build -c release --scratch-path .build-bench-notrace --product rl-bench >&2
echo "bench.sh: built in $(( $(date +%s) - start )) s" >&2
.build-bench/release/rl-bench --baseline .build-bench-notrace/release/rl-bench "$@"
echo "bench.sh: total $(( $(date +%s) - start )) s" >&2
