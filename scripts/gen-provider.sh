#!/bin/sh
# Regenerates the `runloop` provider's files from RunLoopSchema (docs/tracepoints.md): the C header
# and emitters, the enabled checks, the Swift out-of-line emitters and the docs' events table.
# Tests/TracingTests/GeneratedProviderTests.swift fails while the checked-in files differ.
set -eu
cd "$(dirname "$0")/.."
swift build --product rl-tpgen
"$(swift build --show-bin-path)/rl-tpgen" --root . --output .
"$(swift build --show-bin-path)/rl-tpgen" --list
