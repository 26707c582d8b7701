#!/usr/bin/env bash
# Runs the reliability suite and the unit tests under ThreadSanitizer and AddressSanitizer.
#   bash scripts/sanitizers.sh [thread|address|all]      (default all)
# Scratch folders .build-tsan / .build-asan (prefix: SANITIZER_SCRATCH, default .build). The stress
# runs at RELIABILITY_SCALE (default 0.5: ~2 s of stress per run, sanitizers slow everything 5-15x);
# forking tests are skipped (RELIABILITY_NO_FORK=1: fork in a multi-threaded sanitized process is
# unsupported). Exits non-zero on a failed test or on any sanitizer report; logs in
# <scratch>/sanitizer.log.
#
# ThreadSanitizer cannot see Synchronization.Mutex's lock on Linux (a priority-inheritance futex it does
# not intercept): every access made under such a lock is reported as a race (282 false reports on
# 2026-11-22; a 15-line program reproduces it). The loop's own lock, the message port's and the
# mode-name table's (RLLock) and the items' state locks (timers, sources, observers:
# `withItemStateLock`) are atomic words (RLLock parks its waiters on a POSIX semaphore), which TSan
# sees as they are; what is still `Mutex` in RunLoopCore is the hang watchdog's loop list.
# Unless TSAN_PTHREAD_MUTEX=0,
# the thread run therefore builds a copy of the working tree in <scratch>/src in which the `Mutex` of
# RunLoopCore and of the test modules that share state under one (RunLoopCoreTests, RunLoopScenarios)
# is a pthread mutex with the same API (TSan intercepts pthread mutexes), so what TSan reports is
# real. Nothing else is changed. See docs/reliability.md.
set -uo pipefail
cd "$(dirname "$0")/.."
WHICH="${1:-all}"
SCRATCH="${SANITIZER_SCRATCH:-.build}"
# (PerfettoDeflaterTests: the deflate of Sources/CPacketDeflate, C with 16-byte loads, on generated
# packets and their edges.)
FILTER="${SANITIZER_FILTER:-ReliabilityTests|RunLoopCoreTests\.(RunLoopCoreTests|ContendedPostingTests|EngineFastPathTests)|CTFReaderTests\.(MalformedTests|BitFieldTests|CompoundTypeTests)|RLAnalysisTests\.PerfettoDeflaterTests}"
export RELIABILITY_SCALE="${RELIABILITY_SCALE:-0.5}" RELIABILITY_NO_FORK=1
status=0
pthread_mutex_copy() {   # $1 = destination; prints the package path to build
    local dst=$1
    rm -rf "$dst"; mkdir -p "$dst"
    tar --exclude='./.build*' --exclude='./.git' -cf - . | tar -xf - -C "$dst"
    # RunLoopCore, and the test modules whose threads share state under a Mutex (EventLog, the
    # engine's concurrency tests): each gets its own copy of the stand-in.
    local dirs=(Sources/RunLoopCore Tests/RunLoopCoreTests Tests/RunLoopScenarios)
    for d in "${dirs[@]}"; do
        sed -i -E -e 's/\bMutex(<|\()/TSanPThreadMutex\1/g' -e 's/\bextension Mutex\b/extension TSanPThreadMutex/g' \
            "$dst/$d"/*.swift
    done
    cat > "$dst/Sources/RunLoopCore/TSanPThreadMutex.swift" <<'SWIFT'
#if canImport(Glibc)
import Glibc
#endif
/// Build-time stand-in for Synchronization.Mutex in the TSan run only (scripts/sanitizers.sh).
final class TSanPThreadMutex<Value>: @unchecked Sendable {
    private var value: Value
    private let m: UnsafeMutablePointer<pthread_mutex_t>
    init(_ v: Value) { value = v; m = .allocate(capacity: 1); pthread_mutex_init(m, nil) }
    @inline(__always) func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(m); defer { pthread_mutex_unlock(m) }
        return try body(&value)
    }
    @inline(__always) func _unsafeLock() { pthread_mutex_lock(m) }
    @inline(__always) func _unsafeUnlock() { pthread_mutex_unlock(m) }
}
SWIFT
    for d in "${dirs[@]:1}"; do cp "$dst/Sources/RunLoopCore/TSanPThreadMutex.swift" "$dst/$d/TSanPThreadMutex.swift"; done
}
run() {
    local san=$1 dir=$2 pkg=.
    echo "== $san sanitizer ($dir)"; mkdir -p "$dir"
    if [ "$san" = thread ] && [ "${TSAN_PTHREAD_MUTEX:-1}" = 1 ]; then
        pthread_mutex_copy "$dir/src"; pkg="$dir/src"
        echo "   (RunLoopCore's Mutex built as a pthread mutex in $pkg; TSAN_PTHREAD_MUTEX=0 to build the tree as is)"
    fi
    dir=$(cd "$dir" && pwd)
    if ! swift build --package-path "$pkg" --build-tests --scratch-path "$dir" --sanitize="$san" > "$dir/build.log" 2>&1; then
        tail -30 "$dir/build.log"; echo "build failed"; status=1; return
    fi
    local log="$dir/sanitizer.log" start=$SECONDS
    TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
    ASAN_OPTIONS="detect_leaks=0 halt_on_error=1 ${ASAN_OPTIONS:-}" \
        swift test --package-path "$pkg" --skip-build --scratch-path "$dir" --sanitize="$san" --no-parallel --filter "$FILTER" > "$log" 2>&1
    local rc=$?
    local reports
    reports=$(grep -cE "WARNING: ThreadSanitizer|ERROR: AddressSanitizer" "$log")
    grep -E "^(✔|✘|━) Test run|RELIABILITY stress|SUMMARY: .*Sanitizer" "$log" | sort | uniq -c | head -40
    echo "$san: exit $rc, $reports sanitizer reports, $((SECONDS - start)) s (log: $log)"
    if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then status=1; fi
}
case "$WHICH" in
    thread) run thread "$SCRATCH-tsan" ;;
    address) run address "$SCRATCH-asan" ;;
    all) run thread "$SCRATCH-tsan"; run address "$SCRATCH-asan" ;;
    *) echo "usage: $0 [thread|address|all]"; exit 2 ;;
esac
exit $status
