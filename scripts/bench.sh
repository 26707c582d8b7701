#!/usr/bin/env bash
# The benchmark, side by side in one run (issue 8): RunLoopCore vs CoreFoundation's CFRunLoop vs a
# bare eventfd/timerfd+epoll floor (workloads 1-7), syscalls per cycle (strace -c -f), allocations
# per item (malloc interposed in rl-bench), tracing cost against a build with tracing compiled out
# (RLTRACE_DISABLED=1) with and without an LTTng session recording (8), and trace decoding,
# CTFReader vs babeltrace2 (9, through reader-bench).
#
#   scripts/bench.sh            # builds the release binaries, prints the table
#   scripts/bench.sh --json     # the same as JSON: {schema, rows: [{id, workload, unit, ours, cf,
#                               #   floor, ratio, ratio_of, target, pass, note}]}
#   scripts/bench.sh --quick    # small sizes, one repetition (a smoke run)
#   scripts/bench.sh --only 1,5,s   # some workloads only (1-7, s = syscalls, 8, 9)
# Build logs and progress go to stderr; only the table (or the JSON) goes to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
swift build -c release --scratch-path .build-bench --product rl-bench >&2
RLTRACE_DISABLED=1 swift build -c release --scratch-path .build-bench-notrace --product rl-bench >&2
reader=()
if swift build -c release --scratch-path .build-bench --product ctf-testgen >&2 \
   && swift build -c release --scratch-path .build-bench --product reader-bench >&2; then
    reader=(--reader-bench .build-bench/release/reader-bench)
else
    echo "bench.sh: reader-bench did not build; workload 9 skipped" >&2
fi
echo "bench.sh: built in $(( $(date +%s) - start )) s" >&2
.build-bench/release/rl-bench --baseline .build-bench-notrace/release/rl-bench "${reader[@]}" "$@"
echo "bench.sh: total $(( $(date +%s) - start )) s" >&2
