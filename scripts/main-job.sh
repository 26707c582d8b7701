#!/usr/bin/env bash
# The main job: record the bundled example loop service (rl-example, with a slow callout, a hang, a
# late timer and a busy spin injected) under LTTng — a private session daemon, no LTTng set-up
# needed — then print rltrace's report and write the HTML report.
#   bash scripts/main-job.sh [DIR]     (DIR keeps the trace and report.html; default: a new temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# rltrace with the Swift runtime and Foundation linked in: one binary that runs on a host without
# the toolchain, and starts without binding thousands of symbols (docs/benchmarks.md).
swift build -c release --static-swift-stdlib --product rltrace >&2
swift build -c release --product rl-example >&2
bin=$(swift build -c release --show-bin-path)
out=${1:-$(mktemp -d /tmp/rltrace-demo.XXXXXX)}
"$bin/rltrace" demo -o "$out"
