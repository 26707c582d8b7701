"""Shared test fixtures: where the binaries are, the recorded traces (recorded once per test run),
and the projection of a `rltrace-report/2` document onto the figures that must agree exactly."""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ANALYSIS = os.path.dirname(HERE)
REPO = os.path.dirname(ANALYSIS)
REPORT = os.path.join(ANALYSIS, "rl_bt2_report.py")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

sys.path.insert(0, HERE)
sys.path.insert(0, ANALYSIS)


def bin_dir():
    """The Swift products: $RL_BIN_DIR, else the default build folder that scripts/test.sh builds
    (`swift build --build-tests`), else whatever `swift build --show-bin-path` says."""
    d = os.environ.get("RL_BIN_DIR")
    if d:
        return d
    d = os.path.join(REPO, ".build", "debug")
    if os.path.exists(os.path.join(d, "rl-example")):
        return d
    r = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    return r.stdout.decode().strip()


def program(name):
    path = os.path.join(bin_dir(), name)
    if not os.access(path, os.X_OK):
        raise RuntimeError("%s not found in %s: build it first (scripts/test.sh does: swift build --build-tests), "
                           "or point RL_BIN_DIR at the folder holding it" % (name, bin_dir()))
    return path


def rltrace_report_command():
    """argv prefix of `rltrace report --format json`, or None when rltrace has no `report` yet.
    $RL_RLTRACE overrides the binary."""
    exe = os.environ.get("RL_RLTRACE") or os.path.join(bin_dir(), "rltrace")
    if not os.access(exe, os.X_OK):
        return None
    r = subprocess.run([exe, "report", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0 or b"--format" not in r.stdout:
        return None
    return [exe, "report", "--format", "json"]


# --- recorded traces -------------------------------------------------------------------------

# name -> (program, arguments[, contexts[, start_after]]). Kept short: the whole analysis suite
# should stay well under 3 min. Recorded with the vpid, vtid and procname contexts unless contexts
# are given (() for none, as `rltrace record` records: loop ids and loop_info then name processes
# and threads); start_after: the session starts that many seconds after the program.
RECORDINGS = {
    "example": ("rl-example", ["--duration", "1.5", "--clients", "4", "--requests", "100"]),
    "example-injected": ("rl-example", ["--duration", "2", "--clients", "4", "--requests", "100",
                                        "--inject", "slow-callout,hang,late-timer,spin"]),
    "scenario-sequence": ("tracing-scenarios", ["sequence"]),
    "scenario-nested": ("tracing-scenarios", ["nested"]),
    "scenario-wakes": ("tracing-scenarios", ["wakes"]),
    "example-no-context": ("rl-example", ["--duration", "1", "--clients", "2", "--requests", "50"], ()),
    # A session that joins late: items and loops named only by the pools' later descriptions.
    "example-late-session": ("rl-example", ["--duration", "2.5", "--clients", "0"], (), 0.6),
}

# Recorded with the others but left out of recorded_traces() (the general grid): see late_traces().
LATE = {"example-late-session"}

# Traces of the schema before the constant pools (names and iteration numbers in every event),
# checked in for rltrace's own tests: they must still read.
OLD_SCHEMA_TRACES = {
    "old-schema-demo": os.path.join(REPO, "Tests", "rltraceTests", "Fixtures", "demo-trace"),
}

_traces = None
_tmp = None


def recorded_traces():
    """{name: trace directory}: the RECORDINGS but the LATE ones, recorded once (under one private
    session daemon) per process, and the OLD_SCHEMA_TRACES. $RL_ANALYSIS_TRACES=DIR reuses DIR/<name> when present
    (handy while editing the analysis)."""
    return {n: p for n, p in _all_traces().items() if n not in LATE}


def late_traces():
    """{name: trace directory} of the recordings whose session started after the program."""
    return {n: p for n, p in _all_traces().items() if n in LATE}


def _all_traces():
    global _traces, _tmp
    if _traces is not None:
        return _traces
    reuse = os.environ.get("RL_ANALYSIS_TRACES")
    if reuse and all(os.path.isdir(os.path.join(reuse, n)) for n in RECORDINGS):
        _traces = {n: os.path.join(reuse, n) for n in RECORDINGS}
        _traces.update(OLD_SCHEMA_TRACES)
        return _traces
    import lttng_record
    _tmp = tempfile.mkdtemp(prefix="rl-analysis-traces-")
    atexit.register(shutil.rmtree, _tmp, True)
    traces = {}
    with lttng_record.PrivateSessiond() as d:
        for i, (name, rec) in enumerate(RECORDINGS.items()):
            out = os.path.join(_tmp, name)
            kw = dict(zip(("contexts", "start_after"), rec[2:]))
            d.record(out, [program(rec[0])] + rec[1], session="rl-analysis-%d" % i, **kw)
            traces[name] = out
    traces.update(OLD_SCHEMA_TRACES)
    _traces = traces
    return _traces


# --- reports ---------------------------------------------------------------------------------

def run_bt2_report(trace):
    r = subprocess.run([PYTHON, REPORT, trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("rl_bt2_report.py failed:\n" + r.stderr.decode(errors="replace"))
    return json.loads(r.stdout)


def run_rltrace_report(cmd, trace):
    r = subprocess.run(cmd + [trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd + [trace]), r.stderr.decode(errors="replace")))
    return json.loads(r.stdout)


LOOP_FIELDS = ("iterations", "topLevelIterations", "busyNs", "sleepNs", "sleeps", "polls", "callouts",
               "wakeReasons", "sleepHistogram", "iterationHistogram")


def comparable(doc):
    """The figures docs/report-json.md says both implementations must reproduce exactly."""
    out = {"trace.events": doc["trace"]["events"], "trace.runloopEvents": doc["trace"]["runloopEvents"]}
    for lp in doc["loops"]:
        key = "loop pid=%d id=%d" % (lp["pid"], lp["loop"])
        figs = {f: lp[f] for f in LOOP_FIELDS}
        # Zero counts carry no information (one side may list every reason, the other only those seen).
        figs["wakeReasons"] = {r: n for r, n in lp["wakeReasons"].items() if n}
        figs["sleepHistogram"] = {r: {b: n for b, n in h.items() if n}
                                  for r, h in lp["sleepHistogram"].items() if any(h.values())}
        figs["iterationHistogram"] = {b: n for b, n in lp["iterationHistogram"].items() if n}
        figs["calloutKinds"] = {k: {"count": v["count"], "totalNs": v["totalNs"], "maxNs": v["maxNs"]}
                                for k, v in lp["calloutKinds"].items()}
        # Blocks are one item per name (item 0), the other kinds one per item id.
        figs["items"] = {("%s/%d" % (it["kind"], it["item"])) + ("/" + it["name"] if it["kind"] == "block" else ""):
                         {"count": it["count"], "totalNs": it["totalNs"], "maxNs": it["maxNs"]}
                         for it in lp["items"]}
        out[key] = figs
    return out


def _exact(s):
    return {"count": s["count"], "totalNs": s["totalNs"], "maxNs": s["maxNs"]}


def comparable_beyond(doc):
    """Figures docs/report-json.md defines exactly but does not list as cross-checked: the trace's
    time span, unmatched callouts, latencies (count/total/max; percentiles are HdrHistogram's in
    rltrace), spurious wakes, hangs, slow iterations, spins, and each loop's identity and names."""
    out = {"trace.beginNs": doc["trace"]["beginNs"], "trace.endNs": doc["trace"]["endNs"]}
    for lp in doc["loops"]:
        out["loop pid=%d id=%d" % (lp["pid"], lp["loop"])] = {
            "tid": lp["tid"], "threadName": lp["threadName"],
            "firstNs": lp["firstNs"], "lastNs": lp["lastNs"],
            "unmatchedCallouts": lp["unmatchedCallouts"],
            "wakeToFirstCallout": _exact(lp["wakeToFirstCallout"]),
            "timerLateness": {t["item"]: _exact(t) for t in lp["timerLateness"]},
            "signalLatency": {t["item"]: dict(_exact(t), callerTids=sorted(t["callerTids"]))
                              for t in lp["signalLatency"]},
            "wakeUpLatency": dict(_exact(lp["wakeUpLatency"]), callerTids=sorted(lp["wakeUpLatency"]["callerTids"])),
            "spuriousWakes": lp["spuriousWakes"],
            "hangs": [{"iteration": h["iteration"], "beginNs": h["beginNs"], "durationNs": h["durationNs"],
                       "busyNs": h["busyNs"], "onCpuNs": h.get("onCpuNs"), "state": h.get("state"),
                       "culprit": h["culprit"] and {k: h["culprit"][k] for k in ("kind", "item", "durationNs")}}
                      for h in lp["hangs"]],
            "slowIterations": lp["slowIterations"],
            "spins": [{k: s[k] for k in ("firstIteration", "iterations", "beginNs", "endNs")} for s in lp["spins"]],
            "slowest": [{"iteration": s["iteration"], "busyNs": s["busyNs"]} for s in lp["slowest"]],
            # Names: since the constant pools they come from loop_info / item_added / item_info, not
            # from the callouts (docs/tracepoints.md, "Constant pools").
            "procname": lp["procname"],
            "itemNames": {"%s/%d" % (it["kind"], it["item"]): it["name"] for it in lp["items"] if it["kind"] != "block"},
            # The longest callout's on-CPU time: the watchdog's readings (callout_cpu), scaled.
            "itemSlowestCpu": {"%s/%d/%s" % (it["kind"], it["item"], it["name"] if it["kind"] == "block" else ""):
                               (it.get("slowestOnCpuNs"), it.get("slowestState")) for it in lp["items"]},
            "timerNames": {t["item"]: t["name"] for t in lp["timerLateness"]},
            "signalNames": {t["item"]: t["name"] for t in lp["signalLatency"]},
            "culpritNames": [h["culprit"] and h["culprit"]["name"] for h in lp["hangs"]],
        }
    return out


def differences(a, b, path=""):
    """Human-readable list of the differences between two nested dicts."""
    diffs = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            p = "%s.%s" % (path, k) if path else str(k)
            if k not in a:
                diffs.append("%s: missing on the left, right has %r" % (p, b[k]))
            elif k not in b:
                diffs.append("%s: left has %r, missing on the right" % (p, a[k]))
            else:
                diffs.extend(differences(a[k], b[k], p))
    elif a != b:
        diffs.append("%s: %r != %r" % (path, a, b))
    return diffs
