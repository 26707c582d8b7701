#!/usr/bin/env bash
# Long soak with tracing at full rate in LTTng's discard mode.
#   bash scripts/soak.sh [SECONDS]     (default 180: half untraced, half traced; the trace grows ~16 MB/s
#   and `rltrace report` needs ~1.4x its size in memory: 170 MB → 236 MB RSS — see docs/reliability.md)
# Runs the ReliabilityTests stress (3 loops, 4 producer threads, every item kind, all its checks)
# for SECONDS/2 untraced, then SECONDS/2 under `rltrace record` (every runloop tracepoint enabled,
# default discard-mode channel), and compares the operation rates. Passes when both runs pass their
# checks, the traced rate is at least SOAK_MIN_RATIO (default 0.25) of the untraced one, and
# `rltrace report --format json` reads the trace and states its discarded-event count.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-180}"
MIN_RATIO="${SOAK_MIN_RATIO:-0.25}"
B=.build-rel
swift build --build-tests --scratch-path "$B" > "$B/soak-build.log" 2>&1 || { tail -30 "$B/soak-build.log"; exit 1; }
# rltrace itself in release: reading a trace of several hundred MB in a debug build takes minutes.
swift build -c release --scratch-path "$B" --product rltrace >> "$B/soak-build.log" 2>&1 || { tail -30 "$B/soak-build.log"; exit 1; }
BIN=$(swift build --scratch-path "$B" --show-bin-path)
XCTEST="$BIN/RunLoopTracePackageTests.xctest"
RLTRACE="$(swift build -c release --scratch-path "$B" --show-bin-path)/rltrace"
SCALE=$(python3 -c "print($SECS / 2 / 4)")
OUT="$B/soak"; rm -rf "$OUT"; mkdir -p "$OUT"
stress() { RELIABILITY_SCALE="$SCALE" "$@" --testing-library swift-testing --filter "ReliabilityTests.StressTests/stress"; }

echo "== untraced: $((SECS / 2)) s of stress"
stress "$XCTEST" > "$OUT/untraced.log" 2>&1 || { tail -30 "$OUT/untraced.log"; echo "untraced stress failed"; exit 1; }
grep "RELIABILITY stress" "$OUT/untraced.log"
echo "== traced (rltrace record, discard mode): $((SECS / 2)) s of stress"
RELIABILITY_SCALE="$SCALE" "$RLTRACE" record --quiet -o "$OUT/trace" -- "$XCTEST" --testing-library swift-testing \
    --filter "ReliabilityTests.StressTests/stress" > "$OUT/traced.log" 2>&1 || { tail -30 "$OUT/traced.log"; echo "traced stress failed"; exit 1; }
grep "RELIABILITY stress" "$OUT/traced.log"
echo "trace: $(du -sh "$OUT/trace" | cut -f1)"
/usr/bin/time -f "rltrace report: %e s, max RSS %M KB" "$RLTRACE" report "$OUT/trace" --format json > "$OUT/report.json"
python3 - "$OUT" "$MIN_RATIO" <<'PY'
import json, re, sys
out, min_ratio = sys.argv[1], float(sys.argv[2])
def rate(f):
    m = re.search(r"RELIABILITY stress seconds=([\d.]+) .*?operations=(\d+)", open(f).read())
    return int(m.group(2)) / float(m.group(1)), int(m.group(2))
(u, un), (t, tn) = rate(out + "/untraced.log"), rate(out + "/traced.log")
rep = json.load(open(out + "/report.json"))
trace = rep.get("trace", {})
disc = trace.get("discardedEvents")
events = trace.get("events", trace.get("eventCount"))
print(f"soak: untraced {un} ops ({u:.0f}/s), traced {tn} ops ({t:.0f}/s), ratio {t / u:.2f}; "
      f"trace events {events}, discardedEvents {disc}")
ok = disc is not None and t / u >= min_ratio
sys.exit(0 if ok else 1)
PY
