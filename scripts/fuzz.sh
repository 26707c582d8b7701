#!/usr/bin/env bash
# Fuzzes CTFReader (metadata parser + stream decoder) with libFuzzer + AddressSanitizer for a bounded time.
# fuzz/CTFFuzz.swift's custom mutator mostly rewrites packet-header/context words of the stream part with
# extreme values (structure-aware); the seed corpus holds real LTTng packets (FUZZ_SEED_DEMO=1, the default,
# adds the demo trace's first packets from Tests/rltraceTests/Fixtures, copied into the scratch corpus).
#   bash scripts/fuzz.sh [SECONDS]   (default 300; FUZZ_JOBS=N parallel workers, default 1)
# Builds CTFReader with -sanitize=fuzzer,address into .build-fuzz, links fuzz/CTFFuzz.swift against it,
# runs from the seed corpus fuzz/corpus (real LTTng runloop traces + a hand-built all-types trace) into
# a scratch corpus .build-fuzz/corpus, and prints the execution count. A crash leaves
# .build-fuzz/artifacts/crash-* and exits non-zero: turn it into a test (Tests/ReliabilityTests).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-300}"
JOBS="${FUZZ_JOBS:-1}"
B=.build-fuzz
swift build -c release --scratch-path "$B" --target CTFReader \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -g >/dev/null
# CTFReader's objects, and its C helper module (CCTFReaderShims: inline functions, found through the
# module map SwiftPM writes; its one object file is linked too).
OBJS=$(find "$B/release/CTFReader.build" "$B/release/CCTFReaderShims.build" -name '*.o')
swiftc -O -g -sanitize=fuzzer,address -parse-as-library \
    -I "$B/release/Modules" -Xcc -fmodule-map-file="$B/release/CCTFReaderShims.build/module.modulemap" \
    -I Sources/CCTFReaderShims/include fuzz/CTFFuzz.swift $OBJS -o "$B/ctf-fuzz" 2>&1 | { grep -v "ld.gold: warning: Cannot export local symbol" || true; }
mkdir -p "$B/corpus" "$B/artifacts"
if [ "${FUZZ_SEED_DEMO:-1}" = 1 ]; then
    DEMO=Tests/rltraceTests/Fixtures/demo-trace/ust/uid/0/64-bit
    for ch in channel0_0 channel0_1; do
        # metadata + marker + the first 64 KiB of the stream (whole packets are larger: the tail is cut,
        # which the reader reports as a truncated packet; the header and context are what gets mutated).
        if [ -f "$DEMO/$ch" ]; then
            { cat "$DEMO/metadata"; printf '\n@@CTF-STREAM@@\n'; head -c 65536 "$DEMO/$ch"; } > "$B/corpus/demo-$ch"
        fi
    done
fi
LOG="$PWD/$B/fuzz.log"
PAR=()
if [ "$JOBS" -gt 1 ]; then PAR=(-jobs="$JOBS" -workers="$JOBS"); fi
set +e
# Run inside $B: with -jobs libFuzzer writes fuzz-N.log into the working directory.
(cd "$B" && rm -f fuzz-*.log && ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 ./ctf-fuzz corpus ../fuzz/corpus \
    -max_total_time="$SECONDS_TO_RUN" -rss_limit_mb=2048 -timeout=10 -max_len=262144 \
    -artifact_prefix=artifacts/ -print_final_stats=1 "${PAR[@]}") > "$LOG" 2>&1
rc=$?
set -e
cat "$LOG" "$B"/fuzz-*.log 2>/dev/null | grep -E "^#[0-9]+.*(INITED|DONE)|stat::number_of_executed_units|ERROR|Test unit written" || true
EXECS=$(cat "$LOG" "$B"/fuzz-*.log 2>/dev/null | grep "stat::number_of_executed_units" | awk '{s+=$2} END {print s+0}' || true)
echo "fuzz: ${SECONDS_TO_RUN}s x ${JOBS} worker(s), executions=${EXECS}, corpus=$(ls "$B/corpus" | wc -l) files, crashes=$(ls "$B/artifacts" | wc -l), exit=$rc"
exit $rc
