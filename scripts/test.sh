#!/usr/bin/env bash
# Runs every test: the Swift suites (unit, differential against CoreFoundation, LTTng integration).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Every temporary file of the run (traces, session daemons' homes, exports, the build's own) in one
# folder of this run, removed at the end whatever the outcome: tests that keep a recording for the
# whole process (the truth and diff recordings) leave nothing behind in /tmp.
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/rltrace-tests.XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
swift build --build-tests
swift test --skip-build --no-parallel
/usr/bin/python3 -m unittest discover -s analysis/tests -v
