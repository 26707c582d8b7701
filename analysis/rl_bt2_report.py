#!/usr/bin/python3
"""rl_bt2_report.py -- per-loop run loop report from an LTTng trace, on babeltrace2's Python bindings.

    /usr/bin/python3 analysis/rl_bt2_report.py [--indent N] [--hang-threshold-ns N]
        [--slow-threshold-ns N] [--spin-min-iterations N] [--pid P] [--tid T] [--procname NAME]
        [--loop L] [--kind K] [--item GLOB] [--min-duration-ns N] [--begin-ns T] [--end-ns T]
        TRACE [TRACE...]

Reads the `runloop` events (docs/tracepoints.md) of one or more CTF traces through bt2 and prints
a JSON document of schema `rltrace-report/2` (docs/report-json.md), the same shape as
`rltrace report --format json`.

This is an independent implementation: it was written from the two documents above, not from
rltrace's Swift code, so that the numbers of both can be checked against each other
(analysis/tests/test_crosscheck.py). It is also meant as a readable template for your own
analyses: one pass over the messages, one small state machine per loop (rl_loop_model.py).

Selection (docs/report-json.md, "Selection and time window"): loop filters (--pid, --tid,
--procname, --loop; repeatable, a loop must pass all) choose the loops listed; callout filters
(--kind, --item, --min-duration-ns) narrow only the callout figures; the window
[--begin-ns, --end-ns] (raw clock values, see Times) counts what overlaps it, once, cut to it.
Nothing selected: exit 4; a window that misses the trace: exit 2.

Times: every time is an event timestamp taken as the raw clock value (`clock_snapshot.value`).
LTTng's UST clock is CLOCK_MONOTONIC with a frequency of 1 GHz, so the raw value is directly in
CLOCK_MONOTONIC nanoseconds, the unit of the `*_ns` payload fields (`ns_from_origin` adds the
clock's offset to the epoch, which would not compare with `scheduled_ns`).
"""

import argparse
import json
import math
import os
import re
import sys

import bt2

from rl_loop_model import CALLOUT_KINDS, Loop, PooledBlockName, Selection, cpu_state, log2_bucket  # noqa: F401 (log2_bucket: for the tests)

SCHEMA = "rltrace-report/2"

# Callout event name -> (kind label, entry?); items sort by kind in this order.
KIND_ORDER = {k: i for i, k in enumerate(CALLOUT_KINDS)}

CALLOUT_EVENTS = {}
for _kind in CALLOUT_KINDS:
    CALLOUT_EVENTS["runloop:%s_entry" % _kind] = (_kind, True)
    CALLOUT_EVENTS["runloop:%s_exit" % _kind] = (_kind, False)

# callout_kind's container values (docs/tracepoints.md, "Enumerations"): observer 0 ... block 5.
KIND_LABELS = dict(enumerate(CALLOUT_KINDS))
# A block entry's item with this bit (47) set is the id of a name in its process's block-name pool
# (docs/tracepoints.md, "Constant pools"); no other item id reaches it.
BLOCK_NAME_TAG = 1 << 47


# ---------------------------------------------------------------------------------------------
# small helpers

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
# the pass over the trace

class NothingSelected(Exception):
    """The selection keeps nothing (exit 4), or the window misses the trace (exit 2)."""

    def __init__(self, message, code=4):
        Exception.__init__(self, message)
        self.code = code


# The payload fields the analysis reads (docs/tracepoints.md). `iteration`, `item_id` and `name`
# are absent from the per-iteration and callout events since the constant pools; present in
# traces of the older schema.
PAYLOAD_FIELDS = ("loop_id", "item_id", "name", "scheduled_ns", "iteration", "reason", "accepted", "caller_tid",
                  "signal_seq", "tid", "thread_name", "kind", "pid", "procname", "elapsed_ns", "cpu_ns")

# The per-event CPU clock context: rltrace takes on-CPU times from it when recorded; this report
# computes none then (it reads only the watchdog's callout_cpu readings).
CPU_CLOCK_CONTEXT = "perf_thread_task_clock"

# Events emitted on another thread than the loop's: their vtid never names the loop's thread.
OTHER_THREAD_EVENTS = frozenset("runloop:" + n for n in (
    "wakeup_requested", "item_added", "item_removed", "timer_armed", "hang_begin", "hang_stack", "hang_end",
    "loop_info", "item_info", "callout_cpu"))

LOW32 = 0xFFFFFFFF


def loop_key(vpid, loop_id):
    """(pid, loop) of an event: a `loop_id` names its process in its high 32 bits and the loop's
    number in the low 32 (docs/tracepoints.md, "Conventions"); the pid is the `vpid` context when
    recorded (and not 0), else those high bits. Older traces' ids are below 2^32: (vpid or 0, id)."""
    hi = loop_id >> 32
    pid = vpid if vpid else 0
    if hi:
        if not pid:
            pid = hi
        loop_id &= LOW32
    return pid, loop_id


HOST_SHIFT = 32


def trace_hosts(paths):
    """The hosts of the traces below `paths` (docs/production.md, "Reports across hosts"), from each
    trace's metadata as babeltrace2's ctf plugin reads it (`metadata-info`): {name: (index, shift
    ns)} with hosts in name order, each host's clock moved onto the first's by the difference of
    their clock offsets (a host's offset: its trace of the smallest UUID's, as rltrace takes it);
    None for traces of one host (nothing changes then)."""
    fs = bt2.find_plugin("ctf").source_component_classes["fs"]
    found = {}
    for p in paths:
        for root, _, files in os.walk(p) if os.path.isdir(p) else []:
            if "metadata" not in files:
                continue
            text = str(bt2.QueryExecutor(fs, "metadata-info", {"path": root}).query()["text"])
            host = re.search(r'hostname\s*=\s*"([^"]*)"', text)
            uuid = re.search(r'trace\s*\{[^}]*?uuid\s*=\s*"([^"]+)"', text, re.S)
            clock = re.search(r"clock\s*\{(.*?)\};", text, re.S)
            offset = 0
            if clock:
                s = re.search(r"offset_s\s*=\s*(\d+)", clock.group(1))
                o = re.search(r"\boffset\s*=\s*(\d+)", clock.group(1))
                offset = (int(s.group(1)) if s else 0) * 1_000_000_000 + (int(o.group(1)) if o else 0)
            name = host.group(1) if host else ""
            key = uuid.group(1).lower() if uuid else "~" + root
            if name not in found or key < found[name][0]:
                found[name] = (key, offset)
    if len(found) < 2:
        return None
    names = sorted(found)
    base = found[names[0]][1]
    return {n: (i, found[n][1] - base) for i, n in enumerate(names)}


def new_trace(paths):
    return {"paths": [os.path.abspath(p) for p in paths], "beginNs": 0, "endNs": 0,
            "events": 0, "runloopEvents": 0, "discardedEvents": 0, "lostPackets": 0, "losses": []}


def decode(paths, trace):
    """The `runloop` events of the traces, merged in timestamp order, as (ts, name, vpid, vtid,
    procname, {payload field: value}, host index); counts every event and loss into `trace`.
    Traces of several hosts: each event's time (and a timer's `scheduled_ns`) on the first host's
    clock (`trace_hosts`)."""
    hosts = trace_hosts(paths)
    if hosts:
        trace["hosts"] = [{"name": n, "shiftNs": s, "loops": 0} for n, (_, s) in sorted(hosts.items(), key=lambda h: h[1][0])]
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
        host = 0
        if hosts:
            env = msg.event.stream.trace.environment
            host, shift = hosts.get(str(env["hostname"]) if "hostname" in env else "", (0, 0))
            ts += shift
        if trace["events"] == 0 or ts < trace["beginNs"]:
            trace["beginNs"] = ts
        trace["endNs"] = max(trace["endNs"], ts) if trace["events"] else ts
        trace["events"] += 1
        ev = msg.event
        if not ev.name.startswith("runloop:"):
            continue
        trace["runloopEvents"] += 1
        ctx = ev.common_context_field
        if ctx is not None and CPU_CLOCK_CONTEXT in ctx and not trace.get("_cpuClockContext"):
            trace["_cpuClockContext"] = True
        payload = ev.payload_field
        fields = {}
        for k in PAYLOAD_FIELDS:
            v = field(payload, k)
            if v is not None:
                fields[k] = v
        if host and fields.get("scheduled_ns"):
            fields["scheduled_ns"] += shift
        yield ts, ev.name, field(ctx, "vpid"), field(ctx, "vtid"), field(ctx, "procname"), fields, host


def analyse(paths, hang_ns=250_000_000, slow_ns=100_000_000, spin_min=100, sel=None, decoded=None):
    """The report of the traces under a selection. `decoded`: (trace, events) from an earlier
    decode() of the same traces, to analyse them again without reading them."""
    sel = sel or Selection()
    loops = {}
    sources = {}                    # (pid, item) -> pending signals [(ts, tid, signal_seq)]; a perform by any loop ends them
    if decoded is not None:
        trace, events = dict(decoded[0]), decoded[1]
    else:
        trace = new_trace(paths)
        events = decode(paths, trace)
    warnings = []
    process_names = {}              # pid -> procname: loop_info's, else its main thread's (vtid == vpid)
    from_loop_info = set()          # pids named by a loop_info (authoritative)
    pools = {}                      # pid -> {(kind, item): name}: the process's item descriptions
    block_names = {}                # (pid, block item) -> name of an item_info of kind block not yet performed
    pooled_blocks = {}              # (pid, pooled name id) -> name: the process's block-name pool

    def loop_of(pid, loop_id):
        key = (pid, loop_id)
        lp = loops.get(key)
        if lp is None:
            lp = loops[key] = Loop(pid, loop_id, sel, pools.setdefault(pid, {}))
        return lp

    for ts, name, vpid, vtid, procname, payload, *rest in events:
        host = rest[0] if rest else 0      # (hand-made events of the tests carry no host)
        loop_id = payload.get("loop_id")
        if loop_id is None:
            continue
        pid, loop_id = loop_key(vpid, loop_id)
        # A process of another host is another process: the host's index above the pid.
        pid |= host << HOST_SHIFT

        if name == "runloop:source0_signalled":
            item = payload.get("item_id")
            # One event per loop the source is in, sharing signal_seq (absent in older traces).
            seq = payload.get("signal_seq") or 0
            pend = sources.setdefault((pid, item), [])
            if seq and pend and pend[-1][2] == seq:
                continue
            pend.append((ts, payload.get("caller_tid"), seq))
            continue

        lp = loop_of(pid, loop_id)
        lp.event(ts)
        if lp.tid_context is None and name not in OTHER_THREAD_EVENTS:
            lp.tid_context = vtid
        # Process name (docs/report-json.md): LTTng's procname is per thread; a loop's process is
        # named by its main thread's (vtid == vpid) procname once one is seen, until then by the
        # first procname of the loop's own events.
        if procname is not None:
            if vtid == pid & LOW32 and pid not in process_names and pid not in from_loop_info:
                process_names[pid] = procname
            if pid in process_names:
                lp.procname = process_names[pid]
            elif lp.procname is None:
                lp.procname = procname

        callout = CALLOUT_EVENTS.get(name)
        if callout is not None:
            kind, is_entry = callout
            item = 0 if kind == "main_queue" else payload.get("item_id")
            if is_entry:
                entry_name = payload.get("name")     # older traces only
                if kind == "block" and entry_name is None:
                    # A named block's entry carries its pooled name's id (BLOCK_NAME_TAG set),
                    # described once per session; an older trace's (or a full pool's) named block
                    # is described by an item_info of kind block, with its own id, just before its entry.
                    if isinstance(item, int) and item & BLOCK_NAME_TAG:
                        entry_name = PooledBlockName(pooled_blocks, (pid, item))
                    else:
                        entry_name = block_names.pop((pid, item), "(unnamed)")
                lp.callout_entry(ts, kind, item, entry_name)
                item_name = lp.item_name(kind, item, entry_name)
                # Point events: a timer's lateness at its entry, a signal's latency at its perform,
                # when in the window and the item passes --kind and --item.
                selected = sel.inside(ts) and sel.kind_item(kind, item_name)
                if kind == "timer" and selected:
                    tl = lp.timer_lateness.setdefault(item, {"values": []})
                    # A timer never fires before its date: a negative difference is a damaged clock, taken as 0.
                    tl["values"].append(max(0, ts - payload.get("scheduled_ns")))
                elif kind == "source0":
                    pend = sources.pop((pid, item), [])
                    if pend and selected:
                        # Every signal since the last perform ends at this one (signals coalesce).
                        sl = lp.signal_latency.setdefault(item, {"values": [], "tids": set()})
                        for sig_ts, tid, _ in pend:
                            sl["values"].append(ts - sig_ts)
                            sl["tids"].add(tid)
            else:
                # An exit without item_id closes the innermost open callout of its kind.
                lp.callout_exit(ts, kind, item)
        elif name == "runloop:iteration_begin":
            lp.iteration_begin(ts, payload.get("iteration"))
        elif name == "runloop:iteration_end":
            lp.iteration_end(ts, payload.get("iteration"))
        elif name == "runloop:sleep_begin":
            lp.sleep_begin(ts, payload.get("iteration"))
        elif name == "runloop:wake":
            lp.wake(ts, payload.get("iteration"), payload.get("reason"))
        elif name == "runloop:wakeup_requested":
            if payload.get("accepted") == 1:
                lp.pending_wakeups.append((ts, payload.get("caller_tid")))
        elif name == "runloop:loop_created":
            lp.tid_created = payload.get("tid")
            lp.thread_name = payload.get("thread_name", "")
        elif name == "runloop:callout_cpu":
            kind = KIND_LABELS.get(payload.get("kind"))
            if kind is not None:
                lp.callout_cpu(kind, 0 if kind == "main_queue" else payload.get("item_id"),
                               payload.get("elapsed_ns"), payload.get("cpu_ns"))
        elif name == "runloop:loop_info":
            # The loop's description: its thread and the thread's name now; the process's name,
            # authoritative for every loop of the process.
            if payload.get("tid") is not None:
                lp.tid_created = payload["tid"]
            if payload.get("thread_name"):
                lp.thread_name = payload["thread_name"]
            if payload.get("procname"):
                process_names[pid] = payload["procname"]
                from_loop_info.add(pid)
        elif name in ("runloop:item_added", "runloop:item_removed", "runloop:item_info"):
            kind = KIND_LABELS.get(payload.get("kind"))
            item, item_name = payload.get("item_id"), payload.get("name")
            if kind is None or item is None or not item_name:
                continue
            if kind == "block":
                if name == "runloop:item_info":
                    if isinstance(item, int) and item & BLOCK_NAME_TAG:
                        pooled_blocks[(pid, item)] = item_name
                    else:
                        block_names[(pid, item)] = item_name
            else:
                lp.item_names[(kind, item)] = item_name

    if trace["discardedEvents"] or trace["lostPackets"]:
        warnings.append("events were lost (%d discarded, %d packets lost): figures near the losses are incomplete"
                        % (trace["discardedEvents"], trace["lostPackets"]))

    for lp in loops.values():
        if lp.pid in process_names:
            lp.procname = process_names[lp.pid]
        # An idle wake that no iteration followed: spurious, unless the window ends before the
        # trace (then what follows it was not looked at).
        if lp.woke_idle is not None and sel.inside(lp.woke_idle) and sel.end >= trace["endNs"]:
            lp.spurious += 1
    # Without the CPU clock context, hangs and items' longest callouts get the watchdog's readings.
    sampled_cpu = not trace.pop("_cpuClockContext", False)
    selected = select(loops, sel, trace)
    out_loops = [loop_json(lp, hang_ns, slow_ns, spin_min, sampled_cpu) for lp in selected]
    if trace.get("hosts"):
        # Several hosts: each loop names its host, its pid the host's own.
        for lp, out in zip(selected, out_loops):
            h = trace["hosts"][lp.pid >> HOST_SHIFT]
            out["host"] = h["name"]
            out["pid"] = lp.pid & LOW32
            h["loops"] += 1
    for lp in selected:
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


def loop_tid(lp):
    return lp.tid_created if lp.tid_created is not None else (lp.tid_context if lp.tid_context is not None else -1)


def select(loops, sel, trace):
    """The loops the selection keeps, sorted by (pid, loop), or NothingSelected."""
    everything = [loops[k] for k in sorted(loops)]
    if not everything:
        raise NothingSelected("no runloop events in the trace")
    if sel.begin > trace["endNs"] or sel.end < trace["beginNs"] or sel.begin > sel.end:
        raise NothingSelected("the window [%d, %d] misses the trace [%d, %d]"
                              % (sel.begin, sel.end, trace["beginNs"], trace["endNs"]), code=2)
    held = ", ".join("loop %d (%s pid %d tid %d)" % (lp.loop_id, lp.procname or "", lp.pid, loop_tid(lp))
                     for lp in everything)
    chosen = [lp for lp in everything if sel.loop_selected(lp.pid & LOW32, lp.loop_id, loop_tid(lp), lp.procname or "")]
    if not chosen:
        raise NothingSelected("nothing matches the selection: %s; the trace holds %s" % (sel.describe(), held))
    # A loop with nothing in the window is not listed.
    chosen = [lp for lp in chosen if lp.first is not None]
    if not chosen:
        raise NothingSelected("no selected loop did anything in the window: %s; the trace holds %s"
                              % (sel.describe(), held))
    if (sel.kinds or sel.item is not None) and not any(lp.kind_item_matches for lp in chosen):
        raise NothingSelected("no callout of the selected loops matches %s" % sel.describe())
    return chosen


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


def callout_json(c, lp):
    kind, item, name, d, _ = c
    return {"kind": kind, "item": item, "name": lp.item_name(kind, item, name), "durationNs": d}


def loop_json(lp, hang_ns, slow_ns, spin_min, sampled_cpu=True):
    span = (lp.last - lp.first) if lp.first is not None else 0
    tid = loop_tid(lp)
    callouts = sum(len(v) for v in lp.kind_durations.values())

    kinds = {}
    for kind in CALLOUT_KINDS:
        if kind in lp.kind_durations:
            kinds[kind] = stats(lp.kind_durations[kind], (50, 90, 99, 99.9))

    items = []
    for (kind, item, _), it in lp.items.items():
        s = stats(it["durations"])
        # Items are named at the end: by the last description of the trace (docs/tracepoints.md).
        items.append(dict({"kind": kind, "item": item, "name": lp.item_name(kind, item, it["name"])}, **s))
        slowest_ns, slowest_cpu = it["slowest"]
        if sampled_cpu and slowest_cpu is not None:
            items[-1].update(slowestOnCpuNs=slowest_cpu, slowestState=cpu_state(slowest_cpu, slowest_ns))
    items.sort(key=lambda r: (-r["totalNs"], KIND_ORDER[r["kind"]], r["item"], r["name"]))

    hangs = []
    slow = 0
    # Decided on the whole iteration, listed whole (its culprit too), even when the window cuts it.
    for number, begin, busy, cos, _, duration, _, _, _, cpu in lp.top_records:
        if busy >= slow_ns:
            slow += 1
        if busy >= hang_ns:
            culprit = max(cos, key=lambda c: c[3]) if cos else None
            hangs.append({"iteration": number, "beginNs": begin, "durationNs": duration, "busyNs": busy,
                          "culprit": callout_json(culprit, lp) if culprit else None})
            # On-CPU time: the watchdog's readings of its callouts, scaled (callout_cpu).
            if sampled_cpu and cpu is not None:
                hangs[-1].update(onCpuNs=cpu, state=cpu_state(cpu, busy))

    spins = []
    run = []
    for rec in lp.top_records + [None]:
        if rec is not None and not rec[4]:
            run.append(rec)
            continue
        if len(run) >= spin_min:
            spins.append({"firstIteration": run[0][0], "iterations": len(run), "beginNs": run[0][7],
                          "endNs": run[-1][8]})
        run = []

    slowest = sorted(lp.top_records, key=lambda r: -r[6])[:5]

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
        "timerLateness": [dict({"item": item, "name": lp.item_name("timer", item)}, **stats(v["values"]))
                          for item, v in sorted(lp.timer_lateness.items())],
        "signalLatency": [dict({"item": item, "name": lp.item_name("source0", item)}, **stats(v["values"]),
                               callerTids=sorted(t for t in v["tids"] if t is not None))
                          for item, v in sorted(lp.signal_latency.items())],
        "wakeUpLatency": dict(stats(lp.wakeup_latency), callerTids=sorted(lp.wakeup_tids)),
        "spuriousWakes": lp.spurious,
        "hangs": hangs,
        "slowIterations": slow,
        "spins": spins,
        "slowest": [{"iteration": r[0], "beginNs": r[7], "busyNs": r[6],
                     "callouts": [callout_json(c, lp) for c in r[3]]} for r in slowest],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description="Per-loop run loop report (rltrace-report/2 JSON) through babeltrace2.")
    ap.add_argument("traces", nargs="+", help="CTF trace directories (or a directory holding them)")
    ap.add_argument("--indent", type=int, default=2)
    ap.add_argument("--hang-threshold-ns", type=int, default=250_000_000)
    ap.add_argument("--slow-threshold-ns", type=int, default=100_000_000)
    ap.add_argument("--spin-min-iterations", type=int, default=100)
    sel = ap.add_argument_group("selection (docs/report-json.md, \"Selection and time window\")")
    sel.add_argument("--pid", type=int, action="append", default=[], help="only loops of this process id; repeatable")
    sel.add_argument("--tid", type=int, action="append", default=[], help="only the loop of this thread id; repeatable")
    sel.add_argument("--procname", action="append", default=[], help="only loops of this process name; repeatable")
    sel.add_argument("--loop", type=int, action="append", default=[], help="only this loop id; repeatable")
    sel.add_argument("--kind", action="append", default=[],
                     help="callout figures only for this kind (%s); repeatable or comma-separated" % ", ".join(CALLOUT_KINDS))
    sel.add_argument("--item", help="callout figures only for items whose name matches this glob (* and ?)")
    sel.add_argument("--min-duration-ns", type=int, default=0, help="callout figures only for callouts at least this long in the window")
    sel.add_argument("--begin-ns", type=int, help="window start: a raw clock value (CLOCK_MONOTONIC ns)")
    sel.add_argument("--end-ns", type=int, help="window end: a raw clock value (CLOCK_MONOTONIC ns)")
    a = ap.parse_args(argv)
    kinds = [k for arg in a.kind for k in arg.split(",") if k]
    for k in kinds:
        if k not in CALLOUT_KINDS:
            ap.error("--kind %s: not one of %s" % (k, ", ".join(CALLOUT_KINDS)))
    selection = Selection(a.pid, a.tid, a.procname, a.loop, kinds, a.item, a.min_duration_ns, a.begin_ns, a.end_ns)
    try:
        doc = analyse(a.traces, a.hang_threshold_ns, a.slow_threshold_ns, a.spin_min_iterations, selection)
    except NothingSelected as e:
        sys.stderr.write("rl_bt2_report.py: %s\n" % e)
        sys.exit(e.code)
    json.dump(doc, sys.stdout, indent=a.indent if a.indent > 0 else None)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
