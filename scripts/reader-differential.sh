#!/usr/bin/env bash
# Randomized differential test of the CTF reader: random CTF 1.8 traces from an independent writer
# (Tests/Tools/ctf_random.py), `rltrace dump DIR` compared byte for byte with `babeltrace2 --clock-seconds DIR`.
# See docs/reader.md, "Randomized differential test".
#
#   scripts/reader-differential.sh [--count N] [--seed S] [--jobs J] [--keep DIR] [--rltrace PATH]
#
# Defaults: 5000 traces from seed 1, two at a time, the debug build's rltrace (built if missing).
# A failing trace prints its seed and the first differing line; `--keep DIR` keeps failing traces, and
# `python3 Tests/Tools/ctf_random.py --write DIR --seed S` writes one again. Exit status 1 when any differs.
set -euo pipefail
cd "$(dirname "$0")/.."
count=5000 seed=1 jobs=2 keep="" rltrace=""
while [ $# -gt 0 ]; do
    case "$1" in
        --count) count="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --keep) keep="$2"; shift 2 ;;
        --rltrace) rltrace="$2"; shift 2 ;;
        *) echo "usage: $0 [--count N] [--seed S] [--jobs J] [--keep DIR] [--rltrace PATH]" >&2; exit 2 ;;
    esac
done
command -v babeltrace2 >/dev/null || { echo "reader-differential: babeltrace2 is not installed" >&2; exit 2; }
if [ -z "$rltrace" ]; then
    swift build --product rltrace >/dev/null
    rltrace="$(swift build --show-bin-path)/rltrace"
fi
args=(--rltrace "$rltrace" --count "$count" --seed "$seed" --jobs "$jobs")
[ -n "$keep" ] && args+=(--keep "$keep")
exec /usr/bin/python3 Tests/Tools/ctf_random.py "${args[@]}"
