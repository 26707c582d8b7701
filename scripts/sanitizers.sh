#!/usr/bin/env bash
# Runs the reliability suite and the unit tests under ThreadSanitizer and AddressSanitizer (issue 7).
#   bash scripts/sanitizers.sh [thread|address|all]      (default all)
# Scratch folders .build-tsan / .build-asan. The stress runs at RELIABILITY_SCALE (default 0.5: ~2 s
# of stress per run, sanitizers slow everything 5-15x); forking tests are skipped (RELIABILITY_NO_FORK=1:
# fork in a multi-threaded sanitized process is unsupported). Exits non-zero on a failed test or on any
# sanitizer report; logs in .build-{tsan,asan}/sanitizer.log.
set -uo pipefail
cd "$(dirname "$0")/.."
WHICH="${1:-all}"
FILTER="${SANITIZER_FILTER:-ReliabilityTests|RunLoopCoreTests\.RunLoopCoreTests|CTFReaderTests\.(MalformedTests|BitFieldTests|CompoundTypeTests)}"
export RELIABILITY_SCALE="${RELIABILITY_SCALE:-0.5}" RELIABILITY_NO_FORK=1
status=0
run() {
    local san=$1 dir=$2
    echo "== $san sanitizer ($dir)"
    if ! swift build --build-tests --scratch-path "$dir" --sanitize="$san" > "$dir.build.log" 2>&1; then
        tail -30 "$dir.build.log"; echo "build failed"; status=1; return
    fi
    local log="$dir/sanitizer.log" start=$SECONDS
    TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
    ASAN_OPTIONS="detect_leaks=0 halt_on_error=1 ${ASAN_OPTIONS:-}" \
        swift test --skip-build --scratch-path "$dir" --sanitize="$san" --no-parallel --filter "$FILTER" > "$log" 2>&1
    local rc=$?
    local reports
    reports=$(grep -cE "WARNING: ThreadSanitizer|ERROR: AddressSanitizer" "$log")
    grep -E "^(✔|✘|━) Test run|RELIABILITY stress|SUMMARY: .*Sanitizer" "$log" | sort | uniq -c | head -40
    echo "$san: exit $rc, $reports sanitizer reports, $((SECONDS - start)) s (log: $log)"
    if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then status=1; fi
}
case "$WHICH" in
    thread) run thread .build-tsan ;;
    address) run address .build-asan ;;
    all) run thread .build-tsan; run address .build-asan ;;
    *) echo "usage: $0 [thread|address|all]"; exit 2 ;;
esac
exit $status
