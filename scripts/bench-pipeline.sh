#!/usr/bin/env bash
# The pipeline benchmark alone (docs/benchmarks.md): rltrace's analysis commands (report, timeline, histogram, hangs,
# export --format chrome, dump) against babeltrace2 (counter sink, text) and the bt2 analysis in
# analysis/, on a recorded rl-example trace of ≥ 3 M events and one 10× larger, side by side: wall and
# CPU time, events/s, peak RSS (wait4), the targets and PASS/FAIL. scripts/bench.sh runs it too.
#
#   scripts/bench-pipeline.sh                      # builds the release binaries, records, prints the table
#   scripts/bench-pipeline.sh --json               # the same as JSON
#   scripts/bench-pipeline.sh --quick              # 300k + 3M events, one run each (a smoke run, ~3 min)
#   scripts/bench-pipeline.sh --traces /var/tmp/pb # record into /var/tmp/pb/{base,large} and keep them; reused next time
#   scripts/bench-pipeline.sh --trace DIR [--large-trace DIR | --no-large]   # existing traces
#   scripts/bench-pipeline.sh --rltrace /path/to/other/rltrace              # measure another build
#   scripts/bench-pipeline.sh --help               # every option
# The 30 M-event trace takes about 4 minutes to record and ~2 GB of disk (under $TMPDIR, deleted unless
# kept). Build logs and progress go to stderr; only the table (or the JSON) goes to stdout.
# BENCH_SCRATCH sets the build folder (default .build-bench, as scripts/bench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${BENCH_SCRATCH:-.build-bench}
start=$(date +%s)
# rltrace as it is shipped (scripts/main-job.sh): the Swift runtime and Foundation linked in
# (--static-swift-stdlib: one binary to copy onto a host, no dynamic symbol binding at start-up).
swift build -c release --scratch-path "$scratch" --static-swift-stdlib --product rltrace >&2
for p in rl-example trace-workload pipeline-bench; do
    swift build -c release --scratch-path "$scratch" --product "$p" >&2
done
echo "bench-pipeline.sh: built in $(( $(date +%s) - start )) s" >&2
"$scratch/release/pipeline-bench" "$@"
echo "bench-pipeline.sh: total $(( $(date +%s) - start )) s" >&2
