#!/usr/bin/env bash
# The main job: build the example loop service, run it, and print what its loops did.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build -c release --product rlc-scenarios
.build/release/rlc-scenarios demo
