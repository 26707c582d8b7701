#!/bin/sh
# Regenerates the `runloop` provider's files from RunLoopSchema (docs/tracepoints.md): the C header
# and emitters, the enabled checks, the Swift out-of-line emitters, the docs' events table, and
# RunLoopSchema's `run_result` and `activity` tables from RunLoopCore's RLRunResult and RLActivity.
# Tests/RunLoopTracingTests/GeneratedProviderTests.swift fails while the checked-in files differ.
# (rl-tpgen is built against the checked-in files, so RunLoopSchema+RunLoopCore.swift must exist.)
set -eu
cd "$(dirname "$0")/.."
swift build --product rl-tpgen
"$(swift build --show-bin-path)/rl-tpgen" --root . --output .
"$(swift build --show-bin-path)/rl-tpgen" --list
