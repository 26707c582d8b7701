#!/usr/bin/python3
"""rl_bt2_report.py -- per-loop run loop report from an LTTng trace, on babeltrace2's Python bindings.

    /usr/bin/python3 analysis/rl_bt2_report.py [--indent N] [--hang-threshold-ns N]
        [--slow-threshold-ns N] [--spin-min-iterations N] TRACE [TRACE...]

Reads the `runloop` events (docs/tracepoints.md) of one or more CTF traces through bt2 and prints
a JSON document of schema `rltrace-report/2` (docs/report-json.md), the same shape as
`rltrace report --format json`.

This is an independent implementation: it was written from the two documents above, not from
rltrace's Swift code, so that the numbers of both can be checked against each other
(analysis/tests/test_crosscheck.py). It is also meant as a readable template for your own
analyses: one pass over the messages, one small state machine per loop.

Times: every time is an event timestamp taken as the raw clock value (`clock_snapshot.value`).
LTTng's UST clock is CLOCK_MONOTONIC with a frequency of 1 GHz, so the raw value is directly in
CLOCK_MONOTONIC nanoseconds, the unit of the `*_ns` payload fields (`ns_from_origin` adds the
clock's offset to the epoch, which would not compare with `scheduled_ns`).
"""

import argparse
import json
import math
import os
import sys

import bt2

SCHEMA = "rltrace-report/2"

# Enumerations of docs/tracepoints.md, by container value (we read the integer, not bt2's label,
# so the mapping is ours and checked by the tests).
WAKE_REASONS = {0: "none", 1: "timeout", 2: "wake_up", 3: "timer", 4: "source1", 5: "main_queue"}
REASON_TIMEOUT = 1
REASON_WAKE_UP = 2

# Callout event name prefix -> kind label (the keys of `calloutKinds`).
CALLOUT_KINDS = ("observer", "source0", "source1", "timer", "main_queue", "block")
KIND_ORDER = {k: i for i, k in enumerate(CALLOUT_KINDS)}

CALLOUT_EVENTS = {}
for _kind in CALLOUT_KINDS:
    CALLOUT_EVENTS["runloop:%s_entry" % _kind] = (_kind, True)
    CALLOUT_EVENTS["runloop:%s_exit" % _kind] = (_kind, False)


# ---------------------------------------------------------------------------------------------
# small helpers

def log2_bucket(d):
    """k = max(0, bitLength(d) - 1): 2^k <= d < 2^(k+1); 0 and 1 share bucket 0."""
    return max(0, int(d).bit_length() - 1)


def nearest_rank(sorted_values, p):
    """Nearest-rank percentile: the value at 1-based rank ceil(p/100 * n) (exact; rltrace uses
    HdrHistogram, so its percentiles may differ by < 0.1 %)."""
    n = len(sorted_values)
    if n == 0:
        return 0
    rank = max(1, math.ceil(p / 100.0 * n))
    return sorted_values[min(rank, n) - 1]


def stats(values, percentiles=(50, 99)):
    """count/totalNs/maxNs and the asked percentiles of a list of durations."""
    s = sorted(values)
    out = {"count": len(s), "totalNs": sum(s), "maxNs": s[-1] if s else 0}
    for p in percentiles:
        key = "p%sNs" % (str(p).replace(".", ""))
        out[key] = nearest_rank(s, p)
    return out


def field(container, name, default=None):
    """A field of a bt2 structure field, as a Python value (None/default when absent)."""
    if container is None:
        return default
    try:
        f = container[name]
    except KeyError:
        return default
    if isinstance(f, bt2._StringFieldConst):
        return str(f)
    return int(f)


# ---------------------------------------------------------------------------------------------
# per-loop state

class Frame:
    """An open iteration on a loop's iteration stack."""
    __slots__ = ("number", "begin", "top_level", "sleep_ns", "sleeps", "polls", "wake_reason",
                 "callouts")

    def __init__(self, number, begin, top_level):
        self.number = number
        self.begin = begin
        self.top_level = top_level
        self.sleep_ns = 0      # sleeps belonging to this iteration or iterations nested in it
        self.sleeps = 0
        self.polls = 0
        self.wake_reason = None  # reason of the wake that ended this iteration's own sleep
        self.callouts = []     # (kind, item, name, duration) of callouts that belong to it

    def absorb(self, child):
        self.sleep_ns += child.sleep_ns
        self.sleeps += child.sleeps
        self.polls += child.polls


class Loop:
    def __init__(self, pid, loop_id):
        self.pid = pid
        self.loop_id = loop_id
        self.tid_created = None
        self.tid_context = None
        self.thread_name = ""
        self.procname = None
        self.first = None
        self.last = None

        self.stack = []                  # open iterations (Frame)
        self.iterations = 0
        self.top_level = 0
        self.busy_ns = 0
        self.sleep_ns = 0
        self.sleeps = 0
        self.polls = 0
        self.iteration_hist = {}
        self.top_records = []            # completed top-level iterations: (number, begin, busy, callouts, slept, duration)
        self.spurious = 0
        self.woke_idle = False           # the last iteration to end woke idle: spurious unless the next works

        self.pending_sleep = None        # (sleep_begin ts, iteration number, frame)
        self.wake_reasons = {}
        self.sleep_hist = {}             # reason -> bucket -> count

        self.callout_stack = []          # open callouts: (kind, item, name, entry ts, frame it belongs to)
        self.unmatched = 0
        self.kind_durations = {}         # kind -> [durations]
        self.items = {}                  # (kind, item, None), blocks (kind, 0, name) -> {"name":..., "durations": [...]}

        self.last_wake = None            # (ts, frame) of the last sleep's wake awaiting its first callout
        self.wake_to_first = []

        self.timer_lateness = {}         # item -> {"name", "values"}
        self.signal_latency = {}         # item -> {"name", "values", "tids"}
        self.pending_wakeups = []        # (ts, caller_tid) of accepted wakeup_requested
        self.wakeup_latency = []
        self.wakeup_tids = set()

    # --- iterations ---------------------------------------------------------------------------

    # docs/report-json.md, "Iteration": begin pushes; end pops the matching number (discarding the
    # open iterations above it); an end without a matching open iteration is ignored. Top-level =
    # the stack was empty at its begin. busyNs = duration - sleeps of it and of nested iterations.

    def iteration_begin(self, ts, number):
        self.stack.append(Frame(number, ts, top_level=not self.stack))

    def iteration_end(self, ts, number):
        idx = None
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i].number == number:
                idx = i
                break
        if idx is None:
            return                                   # no matching open iteration: ignored
        # Discard the open iterations above the matching one; their sleeps still happened inside
        # the matching iteration, so they count as nested in it.
        while len(self.stack) > idx + 1:
            self.stack[-2].absorb(self.stack.pop())
        frame = self.stack.pop()
        duration = ts - frame.begin
        self.iterations += 1
        # Spurious wake (docs/report-json.md): woken (not by its timeout) in an iteration that made
        # no callout but observers, and the loop's next iteration to end made none either (a
        # signal-then-wake is performed in the next iteration).
        worked = any(c[0] != "observer" for c in frame.callouts)
        if self.woke_idle:
            self.woke_idle = False
            if not worked:
                self.spurious += 1
        if frame.wake_reason is not None and frame.wake_reason != REASON_TIMEOUT and not worked:
            self.woke_idle = True
        if self.stack:
            self.stack[-1].absorb(frame)
        if frame.top_level:
            busy = duration - frame.sleep_ns
            self.top_level += 1
            self.busy_ns += busy
            self.sleep_ns += frame.sleep_ns
            self.sleeps += frame.sleeps
            self.polls += frame.polls
            b = str(log2_bucket(busy))
            self.iteration_hist[b] = self.iteration_hist.get(b, 0) + 1
            self.top_records.append((frame.number, frame.begin, busy, frame.callouts, frame.sleeps > 0, duration))

    # --- sleeps and wakes ---------------------------------------------------------------------

    # "Sleep": a sleep_begin followed by the loop's next wake with the same iteration number;
    # any other wake is a poll. A sleep belongs to the innermost open iteration at its sleep_begin.

    def sleep_begin(self, ts, number):
        frame = self.stack[-1] if self.stack else None
        self.pending_sleep = (ts, number, frame)

    def wake(self, ts, number, reason):
        label = WAKE_REASONS.get(reason, str(reason))
        self.wake_reasons[label] = self.wake_reasons.get(label, 0) + 1
        pending, self.pending_sleep = self.pending_sleep, None
        if pending is not None and pending[1] == number:
            slept = ts - pending[0]
            frame = pending[2]
            if frame is not None:
                frame.sleep_ns += slept
                frame.sleeps += 1
                frame.wake_reason = reason
            hist = self.sleep_hist.setdefault(label, {})
            b = str(log2_bucket(slept))
            hist[b] = hist.get(b, 0) + 1
            self.last_wake = (ts, frame)
        else:
            if self.stack:
                self.stack[-1].polls += 1
            self.last_wake = None
        if reason == REASON_WAKE_UP and self.pending_wakeups:
            for req_ts, tid in self.pending_wakeups:
                self.wakeup_latency.append(ts - req_ts)
                self.wakeup_tids.add(tid)
            self.pending_wakeups = []

    # --- callouts -----------------------------------------------------------------------------

    # "Callout": entry pushes; exit pops the topmost entry of the same (kind, item), discarding
    # (and counting as unmatched) the entries above it; an exit without an entry is unmatched too.

    def callout_entry(self, ts, kind, item, name):
        frame = self.stack[-1] if self.stack else None
        if kind != "observer" and self.last_wake is not None:
            wake_ts, wake_frame = self.last_wake
            if wake_frame is frame:
                self.wake_to_first.append(ts - wake_ts)
            self.last_wake = None
        self.callout_stack.append((kind, item, name, ts, frame))

    def callout_exit(self, ts, kind, item):
        idx = None
        for i in range(len(self.callout_stack) - 1, -1, -1):
            c = self.callout_stack[i]
            if c[0] == kind and c[1] == item:
                idx = i
                break
        if idx is None:
            self.unmatched += 1
            return
        self.unmatched += len(self.callout_stack) - idx - 1
        entry = self.callout_stack[idx]
        del self.callout_stack[idx:]
        _, _, name, entry_ts, frame = entry
        d = ts - entry_ts
        self.kind_durations.setdefault(kind, []).append(d)
        # Every perform-block is its own item: blocks are one item per name (item 0).
        key = (kind, 0, name) if kind == "block" else (kind, item, None)
        it = self.items.setdefault(key, {"name": name, "durations": []})
        it["durations"].append(d)
        if frame is not None:
            frame.callouts.append((kind, item, name, d))


# ---------------------------------------------------------------------------------------------
# the pass over the trace

def analyse(paths, hang_ns=250_000_000, slow_ns=100_000_000, spin_min=100):
    loops = {}
    sources = {}                    # (pid, item) -> pending signals [(ts, tid, signal_seq)]; a perform by any loop ends them
    trace = {"paths": [os.path.abspath(p) for p in paths], "beginNs": 0, "endNs": 0,
             "events": 0, "runloopEvents": 0, "discardedEvents": 0, "lostPackets": 0,
             "losses": []}
    warnings = []
    first_ts = None
    last_ts = None
    process_names = {}              # pid -> procname of its main thread (vtid == vpid)

    def loop_of(pid, loop_id):
        key = (pid, loop_id)
        lp = loops.get(key)
        if lp is None:
            lp = loops[key] = Loop(pid, loop_id)
        return lp

    for msg in bt2.TraceCollectionMessageIterator([str(p) for p in paths]):
        t = type(msg)
        if t is bt2._DiscardedEventsMessageConst:
            n = msg.count or 0
            trace["discardedEvents"] += n
            trace["losses"].append(loss("discarded", n, msg))
            continue
        if t is bt2._DiscardedPacketsMessageConst:
            n = msg.count or 0
            trace["lostPackets"] += n
            trace["losses"].append(loss("lostPackets", n, msg))
            continue
        if t is not bt2._EventMessageConst:
            continue

        ts = msg.default_clock_snapshot.value
        if first_ts is None:
            first_ts = ts
        last_ts = ts
        trace["events"] += 1
        ev = msg.event
        name = ev.name
        if not name.startswith("runloop:"):
            continue
        trace["runloopEvents"] += 1

        ctx = ev.common_context_field
        vpid = field(ctx, "vpid")
        pid = vpid if vpid is not None else 0
        payload = ev.payload_field

        if name == "runloop:source0_signalled":
            item = field(payload, "item_id")
            # One event per loop the source is in, sharing signal_seq (absent in older traces).
            seq = field(payload, "signal_seq") or 0
            pend = sources.setdefault((pid, item), [])
            if seq and pend and pend[-1][2] == seq:
                continue
            pend.append((ts, field(payload, "caller_tid"), seq))
            continue

        loop_id = field(payload, "loop_id")
        if loop_id is None:
            continue
        lp = loop_of(pid, loop_id)
        if lp.first is None:
            lp.first = ts
        lp.last = ts
        if lp.tid_context is None:
            lp.tid_context = field(ctx, "vtid")
        # Process name (docs/report-json.md): LTTng's procname is per thread; a loop's process is
        # named by its main thread's (vtid == vpid) procname once one is seen, until then by the
        # first procname of the loop's own events.
        procname = field(ctx, "procname")
        if procname is not None:
            if field(ctx, "vtid") == pid and pid not in process_names:
                process_names[pid] = procname
            if pid in process_names:
                lp.procname = process_names[pid]
            elif lp.procname is None:
                lp.procname = procname

        callout = CALLOUT_EVENTS.get(name)
        if callout is not None:
            kind, is_entry = callout
            item = 0 if kind == "main_queue" else field(payload, "item_id")
            if is_entry:
                item_name = "" if kind == "main_queue" else field(payload, "name", "")
                lp.callout_entry(ts, kind, item, item_name)
                if kind == "timer":
                    tl = lp.timer_lateness.setdefault(item, {"name": item_name, "values": []})
                    # A timer never fires before its date: a negative difference is a damaged clock, taken as 0.
                    tl["values"].append(max(0, ts - field(payload, "scheduled_ns")))
                elif kind == "source0":
                    pend = sources.pop((pid, item), [])
                    if pend:
                        # Every signal since the last perform ends at this one (signals coalesce).
                        sl = lp.signal_latency.setdefault(item, {"name": item_name, "values": [], "tids": set()})
                        for sig_ts, tid, _ in pend:
                            sl["values"].append(ts - sig_ts)
                            sl["tids"].add(tid)
            else:
                lp.callout_exit(ts, kind, item)
        elif name == "runloop:iteration_begin":
            lp.iteration_begin(ts, field(payload, "iteration"))
        elif name == "runloop:iteration_end":
            lp.iteration_end(ts, field(payload, "iteration"))
        elif name == "runloop:sleep_begin":
            lp.sleep_begin(ts, field(payload, "iteration"))
        elif name == "runloop:wake":
            lp.wake(ts, field(payload, "iteration"), field(payload, "reason"))
        elif name == "runloop:wakeup_requested":
            if field(payload, "accepted") == 1:
                lp.pending_wakeups.append((ts, field(payload, "caller_tid")))
        elif name == "runloop:loop_created":
            lp.tid_created = field(payload, "tid")
            lp.thread_name = field(payload, "thread_name", "")

    trace["beginNs"] = first_ts or 0
    trace["endNs"] = last_ts or 0
    if trace["discardedEvents"] or trace["lostPackets"]:
        warnings.append("events were lost (%d discarded, %d packets lost): figures near the losses are incomplete"
                        % (trace["discardedEvents"], trace["lostPackets"]))

    for lp in loops.values():
        if lp.pid in process_names:
            lp.procname = process_names[lp.pid]
    out_loops = [loop_json(loops[k], hang_ns, slow_ns, spin_min) for k in sorted(loops)]
    for lp in (loops[k] for k in sorted(loops)):
        if lp.stack:
            warnings.append("loop %d (pid %d): %d iteration(s) still open at the end of the trace (not counted)"
                            % (lp.loop_id, lp.pid, len(lp.stack)))
    return {
        "schema": SCHEMA,
        "trace": trace,
        "options": {"hangThresholdNs": hang_ns, "slowThresholdNs": slow_ns, "spinMinIterations": spin_min},
        "loops": out_loops,
        "warnings": warnings,
    }


def loss(kind, count, msg):
    def ns(snap):
        return snap.value if snap is not None else 0
    begin = end = 0
    try:
        begin = ns(msg.beginning_default_clock_snapshot)
        end = ns(msg.end_default_clock_snapshot)
    except Exception:   # streams without clock snapshots on losses
        pass
    return {"kind": kind, "count": count, "beginNs": begin, "endNs": end, "stream": msg.stream.name or ""}


def callout_json(c):
    kind, item, name, d = c
    return {"kind": kind, "item": item, "name": name, "durationNs": d}


def loop_json(lp, hang_ns, slow_ns, spin_min):
    span = (lp.last - lp.first) if lp.first is not None else 0
    tid = lp.tid_created if lp.tid_created is not None else (lp.tid_context if lp.tid_context is not None else -1)
    callouts = sum(len(v) for v in lp.kind_durations.values())

    kinds = {}
    for kind in CALLOUT_KINDS:
        if kind in lp.kind_durations:
            kinds[kind] = stats(lp.kind_durations[kind], (50, 90, 99, 99.9))

    items = []
    for (kind, item, _), it in lp.items.items():
        s = stats(it["durations"])
        items.append(dict({"kind": kind, "item": item, "name": it["name"]}, **s))
    items.sort(key=lambda r: (-r["totalNs"], KIND_ORDER[r["kind"]], r["item"], r["name"]))

    hangs = []
    slow = 0
    for number, begin, busy, cos, _, duration in lp.top_records:
        if busy >= slow_ns:
            slow += 1
        if busy >= hang_ns:
            culprit = max(cos, key=lambda c: c[3]) if cos else None
            hangs.append({"iteration": number, "beginNs": begin, "durationNs": duration, "busyNs": busy,
                          "culprit": callout_json(culprit) if culprit else None})

    spins = []
    run = []
    for rec in lp.top_records + [None]:
        if rec is not None and not rec[4]:
            run.append(rec)
            continue
        if len(run) >= spin_min:
            spins.append({"firstIteration": run[0][0], "iterations": len(run), "beginNs": run[0][1],
                          "endNs": run[-1][1] + run[-1][5]})
        run = []

    slowest = sorted(lp.top_records, key=lambda r: -r[2])[:5]

    return {
        "pid": lp.pid, "loop": lp.loop_id, "tid": tid, "threadName": lp.thread_name or "",
        "procname": lp.procname or "",
        "firstNs": lp.first or 0, "lastNs": lp.last or 0, "spanNs": span,
        "iterations": lp.iterations,
        "topLevelIterations": lp.top_level,
        "iterationsPerSecond": (lp.iterations / (span / 1e9)) if span > 0 else 0.0,
        "busyNs": lp.busy_ns,
        "sleepNs": lp.sleep_ns,
        "sleeps": lp.sleeps, "polls": lp.polls,
        "busyRatio": (lp.busy_ns / (lp.busy_ns + lp.sleep_ns)) if (lp.busy_ns + lp.sleep_ns) else 0.0,
        "callouts": callouts,
        "calloutsPerIteration": (callouts / lp.iterations) if lp.iterations else 0.0,
        "unmatchedCallouts": lp.unmatched,
        "calloutKinds": kinds,
        "items": items,
        "wakeReasons": lp.wake_reasons,
        "sleepHistogram": lp.sleep_hist,
        "iterationHistogram": lp.iteration_hist,
        "wakeToFirstCallout": stats(lp.wake_to_first),
        "timerLateness": [dict({"item": item, "name": v["name"]}, **stats(v["values"]))
                          for item, v in sorted(lp.timer_lateness.items())],
        "signalLatency": [dict({"item": item, "name": v["name"]}, **stats(v["values"]),
                               callerTids=sorted(t for t in v["tids"] if t is not None))
                          for item, v in sorted(lp.signal_latency.items())],
        "wakeUpLatency": dict(stats(lp.wakeup_latency), callerTids=sorted(lp.wakeup_tids)),
        "spuriousWakes": lp.spurious + (1 if lp.woke_idle else 0),    # an idle wake nothing came after
        "hangs": hangs,
        "slowIterations": slow,
        "spins": spins,
        "slowest": [{"iteration": r[0], "beginNs": r[1], "busyNs": r[2],
                     "callouts": [callout_json(c) for c in r[3]]} for r in slowest],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description="Per-loop run loop report (rltrace-report/2 JSON) through babeltrace2.")
    ap.add_argument("traces", nargs="+", help="CTF trace directories (or a directory holding them)")
    ap.add_argument("--indent", type=int, default=2)
    ap.add_argument("--hang-threshold-ns", type=int, default=250_000_000)
    ap.add_argument("--slow-threshold-ns", type=int, default=100_000_000)
    ap.add_argument("--spin-min-iterations", type=int, default=100)
    a = ap.parse_args(argv)
    doc = analyse(a.traces, a.hang_threshold_ns, a.slow_threshold_ns, a.spin_min_iterations)
    json.dump(doc, sys.stdout, indent=a.indent if a.indent > 0 else None)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
