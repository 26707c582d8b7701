#!/usr/bin/env bash
# The benchmark, side by side in one run: RunLoopCore vs CoreFoundation's CFRunLoop vs a
# bare eventfd/timerfd+epoll floor (workloads 1-7), 1, 2 and 8 producer threads posting to one
# running loop vs a mutex-protected queue + eventfd floor (10), syscalls per cycle
# (strace -c -f), allocations per item (malloc interposed in rl-bench), instructions per item under
# rows 1-5 (callgrind; ours and the floor), tracing cost against a
# build with tracing compiled out (RLTRACE_DISABLED=1) with and without an LTTng session recording (8;
# with it, tracing-bench's recording table: a recorded callout against LTTng's own floor), trace decoding,
# CTFReader vs babeltrace2 (9, through reader-bench), and rltrace's analysis commands vs babeltrace2
# on recorded rl-example traces of ≥ 3 M and ~30 M events (p, through pipeline-bench;
# alone: scripts/bench-pipeline.sh; PIPELINE_BENCH_ARGS passes it options, e.g. "--traces DIR").
#
#   scripts/bench.sh            # builds the release binaries, prints the table
#   scripts/bench.sh --json     # the same as JSON: {schema, rows: [{id, workload, unit, ours, cf,
#                               #   floor, ratio, ratio_of, target, pass, note}]}
#   scripts/bench.sh --quick    # small sizes, one repetition (a smoke run)
#   scripts/bench.sh --only 1,5,s   # some workloads only (1-7, 10, 11, s = syscalls, 8, 9, p = pipeline)
#   (--json with the pipeline: rl-bench's document with pipeline-bench's under the key "pipeline")
# Build logs and progress go to stderr; only the table (or the JSON) goes to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# rl-bench counts instructions per item with callgrind under the timed rows 1-5.
if ! command -v valgrind >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "bench.sh: installing valgrind (instruction counts)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind >/dev/null 2>&1; } \
      || echo "bench.sh: valgrind could not be installed; no instruction rows" >&2
fi
swift build -c release --scratch-path .build-bench --product rl-bench >&2
RLTRACE_DISABLED=1 swift build -c release --scratch-path .build-bench-notrace --product rl-bench >&2
# The pipeline benchmark (p): wanted unless --only leaves it out; rl-bench itself is skipped when
# --only names nothing else.
json=0; quick=(); only=""; prev=""
for a in "$@"; do
    [ "$prev" = "--only" ] && only="$a"
    case "$a" in --json) json=1 ;; --quick) quick=(--quick) ;; esac
    prev="$a"
done
want_p=1; want_rl=1; want_rec=1
if [ -n "$only" ]; then
    case ",$only," in *,8,*) ;; *) want_rec=0 ;; esac
    case ",$only," in *,p,*) ;; *) want_p=0 ;; esac
    [ -z "$(echo ",$only," | sed 's/,p,/,/g; s/^,*//; s/,*$//')" ] && want_rl=0
fi
pipeline=()
if [ "$want_p" = 1 ]; then
    if swift build -c release --scratch-path .build-bench --product rl-example >&2 \
       && swift build -c release --scratch-path .build-bench --product trace-workload >&2 \
       && swift build -c release --scratch-path .build-bench --product pipeline-bench >&2; then
        read -r -a extra <<< "${PIPELINE_BENCH_ARGS:-}"
        pipeline=(.build-bench/release/pipeline-bench "${quick[@]}" "${extra[@]}")
    else
        echo "bench.sh: pipeline-bench did not build; the pipeline benchmark is skipped" >&2
    fi
fi
# Recording against LTTng's own floor: tracing-bench's recording table, printed after
# rl-bench's rows when workload 8 is wanted (text output only).
recording=()
if [ "$want_rec" = 1 ] && [ "$json" = 0 ]; then
    if swift build -c release --scratch-path .build-bench --product tracing-bench >&2; then
        recording=(.build-bench/release/tracing-bench --recording-only)
        if [ ${#quick[@]} -gt 0 ]; then recording+=(--recording-rounds 1); fi
    else
        echo "bench.sh: tracing-bench did not build; the recording table is skipped" >&2
    fi
fi
# reader-bench (workload 9) last, with rltrace's build flags: the decoding child is linked as rltrace
# is shipped (the Swift runtime and Foundation inside: no dynamic symbol binding at start-up, ~5 ms
# of a 0.1 s run), and the builds with --static-swift-stdlib come together (switching the flag
# recompiles the modules that import Foundation).
reader=()
if swift build -c release --scratch-path .build-bench --product ctf-testgen >&2 \
   && swift build -c release --scratch-path .build-bench --static-swift-stdlib --product reader-bench >&2; then
    reader=(--reader-bench .build-bench/release/reader-bench)
else
    echo "bench.sh: reader-bench did not build; workload 9 skipped" >&2
fi
if [ ${#pipeline[@]} -gt 0 ]; then
    # (pipeline-bench runs this rltrace: built last, so that the flags of the build above match.)
    swift build -c release --scratch-path .build-bench --static-swift-stdlib --product rltrace >&2 \
      || { echo "bench.sh: rltrace did not build; the pipeline benchmark is skipped" >&2; pipeline=(); }
fi
echo "bench.sh: built in $(( $(date +%s) - start )) s" >&2
rl=(.build-bench/release/rl-bench --baseline .build-bench-notrace/release/rl-bench "${reader[@]}" "$@")
if [ "$json" = 1 ] && [ "$want_rl" = 1 ] && [ ${#pipeline[@]} -gt 0 ]; then
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    "${rl[@]}" > "$tmp/rl.json"
    "${pipeline[@]}" --json > "$tmp/pipeline.json" || true
    /usr/bin/python3 - "$tmp/rl.json" "$tmp/pipeline.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
try:
    doc["pipeline"] = json.load(open(sys.argv[2]))
except ValueError:
    doc["pipeline"] = None
print(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False))
PY
else
    if [ "$want_rl" = 1 ]; then "${rl[@]}"; fi
    if [ ${#recording[@]} -gt 0 ]; then
        echo
        "${recording[@]}" || echo "bench.sh: tracing-bench's recording table failed" >&2
    fi
    if [ ${#pipeline[@]} -gt 0 ]; then
        [ "$want_rl" = 1 ] && [ "$json" = 0 ] && echo
        "${pipeline[@]}" $([ "$json" = 1 ] && echo --json) || echo "bench.sh: pipeline-bench failed" >&2
    fi
fi
echo "bench.sh: total $(( $(date +%s) - start )) s" >&2
