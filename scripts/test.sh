#!/usr/bin/env bash
# Runs every test: the Swift suites (unit, differential against CoreFoundation, LTTng integration).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build --build-tests
swift test --skip-build --no-parallel
/usr/bin/python3 -m unittest discover -s analysis/tests -v
