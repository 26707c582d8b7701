#!/usr/bin/env bash
# The main job: record the bundled example loop service under LTTng (a private session daemon, no
# set-up needed) and print what its loops did.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
swift build -c release --product rl-example >&2
bin=$(swift build -c release --show-bin-path)

out=${1:-$(mktemp -d /tmp/rl-example-trace.XXXXXX)}
mkdir -p "$out"
export LTTNG_HOME=$(mktemp -d /tmp/rl-lttng-home.XXXXXX)
lttng-sessiond --no-kernel >"$LTTNG_HOME/sessiond.log" 2>&1 &
sessiond=$!
trap 'kill "$sessiond" 2>/dev/null; wait "$sessiond" 2>/dev/null; rm -rf "$LTTNG_HOME"' EXIT
for _ in $(seq 50); do lttng list >/dev/null 2>&1 && break; sleep 0.1; done
lttng create rl-example --output="$out/trace" >/dev/null
lttng enable-event -u 'runloop:*' >/dev/null
lttng add-context -u -t vpid -t vtid -t procname >/dev/null
lttng start >/dev/null
"$bin/rl-example" --duration 3 --clients 4 --requests 300 --inject slow-callout,hang,late-timer,spin
lttng stop >/dev/null
lttng destroy >/dev/null

echo
echo "trace: $out/trace"
echo "events recorded, by name (babeltrace2):"
babeltrace2 "$out/trace" | sed -E 's/^\[[^]]*\] \([^)]*\) [^ ]+ ([^:]+:[^:]+): .*/\1/' | sort | uniq -c | sort -rn
if [ -x "$bin/rltrace" ] && "$bin/rltrace" --help 2>/dev/null | grep -q report; then
  echo; "$bin/rltrace" report "$out/trace"
fi
