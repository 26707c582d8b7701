#!/usr/bin/env bash
# Tracepoint cost, side by side: this build (tracing compiled in, no session), the same build
# recording `runloop:*` in a private session daemon, and a build with tracing compiled out
# (RLTRACE_DISABLED=1). Then recording as `rltrace record` records — contexts none /
# vpid,vtid,procname / + perf:thread:task-clock — next to LTTng's own floor, a C tracepoint with
# one integer field (`rlbench_floor:int1`) recorded by the same session.
#
#   scripts/bench-tracing.sh                 # timings (best of interleaved runs)
#   scripts/bench-tracing.sh --instructions  # also instructions per loop iteration / per block,
#                                            # counted by valgrind (immune to a busy machine)
#   scripts/bench-tracing.sh --json [--reps K --rounds N --duration S --clients N --contexts LIST|none]
#       every figure of the recording targets in one run, ONE JSON object on stdout, the table
#       and PASS/MISS per target on stderr (tracing-bench summary, Benchmarks/tracing-bench/Summary.swift):
#       floor and rltrace-default recording per callout, ping iteration untraced/recorded, bytes per
#       event, and the whole service (rl-example --max-load untraced / rltrace record / --on-hang).
#       --contexts: record with these instead of rltrace record's default (a preview of another default).
#       Never fails on a missed target. docs/benchmarks.md, "One run, every recording figure".
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--json" ]; then
  shift
  for p in tracing-bench rltrace rl-example; do
    swift build -c release --scratch-path .build-bench-traced --product "$p" >&2
  done
  bin=.build-bench-traced/release
  exec "$bin/tracing-bench" summary --rltrace "$bin/rltrace" --example "$bin/rl-example" "$@"
fi
swift build -c release --scratch-path .build-bench-traced --product tracing-bench >&2
RLTRACE_DISABLED=1 swift build -c release --scratch-path .build-bench-notrace --product tracing-bench >&2
on=.build-bench-traced/release/tracing-bench
off=.build-bench-notrace/release/tracing-bench
"$on" --baseline "$off"
if [ "${1:-}" = "--instructions" ]; then
  command -v valgrind >/dev/null || { echo "valgrind not installed" >&2; exit 1; }
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  # valgrind cannot read the toolchain's DWARF 5: count on stripped copies.
  strip -g -o "$tmp/on" "$on"; strip -g -o "$tmp/off" "$off"
  export LTTNG_HOME="$tmp"
  ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | grep -o "Collected : [0-9]*" | grep -o "[0-9]*"; }
  echo
  echo "instructions per unit (valgrind, (N=30000 run - N=10000 run) / 20000)"
  printf "%-34s %12s %12s %8s\n" workload "compiled in" "compiled out" delta
  for w in ping block; do
    a_on=$(ir "$tmp/on" child-count $w 10000); b_on=$(ir "$tmp/on" child-count $w 30000)
    a_off=$(ir "$tmp/off" child-count $w 10000); b_off=$(ir "$tmp/off" child-count $w 30000)
    i_on=$(( (b_on - a_on) / 20000 )); i_off=$(( (b_off - a_off) / 20000 ))
    printf "%-34s %12d %12d %+7.2f%%\n" "loop: $w" "$i_on" "$i_off" "$(echo "($i_on - $i_off) * 100 / $i_off" | bc -l)"
    # Both multi-threaded (an idle thread), as a program using Dispatch/Foundation threads is.
    a_on=$(TRACING_BENCH_IDLE_THREAD=1 ir "$tmp/on" child-count $w 10000); b_on=$(TRACING_BENCH_IDLE_THREAD=1 ir "$tmp/on" child-count $w 30000)
    a_off=$(TRACING_BENCH_IDLE_THREAD=1 ir "$tmp/off" child-count $w 10000); b_off=$(TRACING_BENCH_IDLE_THREAD=1 ir "$tmp/off" child-count $w 30000)
    i_on=$(( (b_on - a_on) / 20000 )); i_off=$(( (b_off - a_off) / 20000 ))
    printf "%-34s %12d %12d %+7.2f%%\n" "loop: $w, both multi-threaded" "$i_on" "$i_off" "$(echo "($i_on - $i_off) * 100 / $i_off" | bc -l)"
  done
  # Recording: the children run under `tracing-bench session` (a private daemon recording runloop:*
  # and rlbench_floor:* with the contexts given), each per pair = one callout's entry + exit.
  echo
  echo "instructions per callout while recording (valgrind, (N=30000 run - N=10000 run) / 20000)"
  printf "%-42s %12s %20s\n" workload "no context" "vpid,vtid,procname"
  export -f ir
  for w in floor floorblock block source0 batch; do
    row=()
    for ctx in none vpid,vtid,procname; do
      row+=("$("$on" session --contexts "$ctx" -- bash -c "a=\$(ir $tmp/on child-recording-count $w 10000); b=\$(ir $tmp/on child-recording-count $w 30000); echo \$(( (b - a) / 20000 ))")")
    done
    case $w in
      floor) label="LTTng floor: C, 1 int field (2 events)";; floorblock) label="C, block_entry's payload (2 events)";;
      block) label="ours: RLTrace block entry+exit";; source0) label="ours: RLTrace source0 entry+exit";;
      batch) label="batch perform, per block (rl-bench 1)";;
    esac
    printf "%-42s %12s %20s\n" "$label" "${row[0]}" "${row[1]}"
  done
  a=$(ir "$tmp/on" child-recording-count batch 10000); b=$(ir "$tmp/on" child-recording-count batch 30000)
  printf "%-42s %12s\n" "batch perform, per block, no session" "$(( (b - a) / 20000 ))"
fi
