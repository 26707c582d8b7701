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
analyses: one pass over the messages, one small state machine per loop.

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
# selection (docs/report-json.md, "Selection and time window")

NEVER, FOREVER = -(1 << 64), 1 << 64


def glob_regex(pattern):
    """A glob as a regular expression: `*` any run, `?` one character, everything else literal
    (brackets too)."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern),
                      re.DOTALL)


class Selection:
    """What the options select. Loops: pid, tid, procname, loop id (each a set; empty = any).
    Callouts: kinds, an item-name glob, a minimum duration. Time: the window [begin, end]."""

    def __init__(self, pids=(), tids=(), procnames=(), loops=(), kinds=(), item=None, min_duration=0,
                 begin=None, end=None):
        self.pids, self.tids, self.procnames, self.loops = set(pids), set(tids), set(procnames), set(loops)
        self.kinds = set(kinds)
        self.item = item
        self.item_re = glob_regex(item) if item is not None else None
        self.min_duration = min_duration or 0
        self.windowed = begin is not None or end is not None
        self.begin = NEVER if begin is None else begin
        self.end = FOREVER if end is None else end

    def inside(self, ts):
        return self.begin <= ts <= self.end

    def overlaps(self, a, b):
        """A record [a, b] counts when it ends at or after the window's begin and begins at or before its end."""
        return b >= self.begin and a <= self.end

    def clip(self, a, b):
        return min(b, self.end) - max(a, self.begin)

    def kind_item(self, kind, name):
        """--kind and --item (the item's name against the glob)."""
        return ((not self.kinds or kind in self.kinds)
                and (self.item_re is None or self.item_re.fullmatch(name or "") is not None))

    def loop_selected(self, pid, loop_id, tid, procname):
        return ((not self.pids or pid in self.pids) and (not self.loops or loop_id in self.loops)
                and (not self.tids or tid in self.tids) and (not self.procnames or procname in self.procnames))

    def describe(self):
        parts = ["--%s %s" % (opt, " ".join(map(str, sorted(v))))
                 for opt, v in (("pid", self.pids), ("tid", self.tids), ("procname", self.procnames),
                                ("loop", self.loops), ("kind", self.kinds)) if v]
        if self.item is not None:
            parts.append("--item %r" % self.item)
        if self.windowed:
            parts.append("window [%s, %s]" % ("-" if self.begin == NEVER else self.begin,
                                              "-" if self.end == FOREVER else self.end))
        return ", ".join(parts) or "everything"


# ---------------------------------------------------------------------------------------------
# per-loop state

class Frame:
    """An open iteration on a loop's iteration stack."""
    __slots__ = ("number", "begin", "top_level", "sleep_ns", "sleeps", "sleep_cut", "sleeps_in", "polls_in",
                 "wake_reason", "wake_ts", "callouts")

    def __init__(self, number, begin, top_level):
        self.number = number
        self.begin = begin
        self.top_level = top_level
        self.sleep_ns = 0      # sleeps belonging to this iteration or iterations nested in it (whole)
        self.sleeps = 0
        self.sleep_cut = 0     # the same sleeps cut to the window
        self.sleeps_in = 0     # of them, those overlapping the window
        self.polls_in = 0      # polls (wakes without a sleep) in the window
        self.wake_reason = None  # reason of the wake that ended this iteration's own sleep
        self.wake_ts = None      # and its time
        self.callouts = []     # (kind, item, name, whole duration) of callouts that belong to it (unfiltered)

    def absorb(self, child):
        self.sleep_ns += child.sleep_ns
        self.sleeps += child.sleeps
        self.sleep_cut += child.sleep_cut
        self.sleeps_in += child.sleeps_in
        self.polls_in += child.polls_in


class Loop:
    def __init__(self, pid, loop_id, sel=None):
        self.pid = pid
        self.loop_id = loop_id
        self.sel = sel or Selection()
        self.tid_created = None
        self.tid_context = None
        self.thread_name = ""
        self.procname = None
        self.first = None                # first/last event or cut record in the window
        self.last = None
        self.follow_end = None           # after the window: when the iterations open at its end had ended

        self.stack = []                  # open iterations (Frame)
        self.iterations = 0
        self.top_level = 0
        self.busy_ns = 0
        self.sleep_ns = 0
        self.sleeps = 0
        self.polls = 0
        self.iteration_hist = {}
        self.top_records = []            # counted top-level iterations: (number, begin, whole busy, callouts, slept,
                                         #   duration, busy cut, begin cut, end cut)
        self.spurious = 0
        self.woke_idle = None            # wake time when the last iteration to end woke idle: spurious unless the next works

        self.pending_sleep = None        # (sleep_begin ts, iteration number, frame)
        self.wake_reasons = {}
        self.sleep_hist = {}             # reason -> bucket -> count

        self.callout_stack = []          # open callouts: (kind, item, name, entry ts, frame it belongs to)
        self.unmatched = 0
        self.item_names = {}             # (kind, item) -> name of its first entry (learned before the window too)
        self.kind_item_matches = 0       # callouts in the window passing --kind/--item (before --min-duration)
        self.kind_durations = {}         # kind -> [durations cut to the window]
        self.items = {}                  # (kind, item, None), blocks (kind, 0, name) -> {"name":..., "durations": [...]}

        self.last_wake = None            # (ts, frame) of the last sleep's wake awaiting its first callout
        self.wake_to_first = []

        self.timer_lateness = {}         # item -> {"name", "values"}
        self.signal_latency = {}         # item -> {"name", "values", "tids"}
        self.pending_wakeups = []        # (ts, caller_tid) of accepted wakeup_requested
        self.wakeup_latency = []
        self.wakeup_tids = set()

    def touch(self, a, b):
        """Something of this loop in the window: an event (a == b) or a record cut to it."""
        a, b = max(a, self.sel.begin), min(b, self.sel.end)
        if self.first is None or a < self.first:
            self.first = a
        if self.last is None or b > self.last:
            self.last = b

    def event(self, ts):
        """Every event of the loop, before it is handled."""
        sel = self.sel
        if sel.begin <= ts <= sel.end:
            self.touch(ts, ts)
        elif ts > sel.end and self.follow_end is None and not self.stack:
            self.follow_end = sel.end        # nothing open at the window's end: nothing to follow

    # --- iterations ---------------------------------------------------------------------------

    # docs/report-json.md, "Iteration": begin pushes; end pops the matching number (discarding the
    # open iterations above it); an end without a matching open iteration is ignored. Top-level =
    # the stack was empty at its begin. busyNs = duration - sleeps of it and of nested iterations.
    # Window: an iteration counts once it has ended, when it overlaps the window, cut to it; what is
    # about the whole iteration (hang, slow, spurious wake) is decided on the whole iteration.

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
        sel = self.sel
        followed = self.follow_end is None or ts <= self.follow_end
        if ts > sel.end and self.follow_end is None and not self.stack:
            self.follow_end = ts                     # the last iteration open at the window's end ended
        duration = ts - frame.begin
        counted = sel.overlaps(frame.begin, ts)
        if counted:
            self.iterations += 1
            self.touch(frame.begin, ts)
        # Spurious wake (docs/report-json.md): woken (not by its timeout) in an iteration that made
        # no callout but observers, and the loop's next iteration to end made none either (a
        # signal-then-wake is performed in the next iteration). The wake counts when it is in the
        # window; the next iteration is judged only when followed.
        worked = any(c[0] != "observer" for c in frame.callouts)
        if self.woke_idle is not None:
            wake_ts, self.woke_idle = self.woke_idle, None
            if not worked and followed and sel.inside(wake_ts):
                self.spurious += 1
        if frame.wake_reason is not None and frame.wake_reason != REASON_TIMEOUT and not worked:
            self.woke_idle = frame.wake_ts
        if self.stack:
            self.stack[-1].absorb(frame)
        if frame.top_level and counted:
            busy = duration - frame.sleep_ns
            busy_cut = sel.clip(frame.begin, ts) - frame.sleep_cut
            self.top_level += 1
            self.busy_ns += busy_cut
            self.sleep_ns += frame.sleep_cut
            self.sleeps += frame.sleeps_in
            self.polls += frame.polls_in
            b = str(log2_bucket(busy_cut))
            self.iteration_hist[b] = self.iteration_hist.get(b, 0) + 1
            self.top_records.append((frame.number, frame.begin, busy, frame.callouts, frame.sleeps > 0, duration,
                                     busy_cut, max(frame.begin, sel.begin), min(ts, sel.end)))

    # --- sleeps and wakes ---------------------------------------------------------------------

    # "Sleep": a sleep_begin followed by the loop's next wake with the same iteration number;
    # any other wake is a poll. A sleep belongs to the innermost open iteration at its sleep_begin.
    # Window: a sleep counts when it overlaps it (cut to it); a wake (poll, reason, wake-up
    # latency) when it is in it.

    def sleep_begin(self, ts, number):
        frame = self.stack[-1] if self.stack else None
        self.pending_sleep = (ts, number, frame)

    def wake(self, ts, number, reason):
        sel = self.sel
        inside = sel.inside(ts)
        label = WAKE_REASONS.get(reason, str(reason))
        if inside:
            self.wake_reasons[label] = self.wake_reasons.get(label, 0) + 1
        pending, self.pending_sleep = self.pending_sleep, None
        if pending is not None and pending[1] == number:
            slept = ts - pending[0]
            frame = pending[2]
            overlaps = sel.overlaps(pending[0], ts)
            cut = sel.clip(pending[0], ts) if overlaps else 0
            if frame is not None:
                frame.sleep_ns += slept
                frame.sleeps += 1
                frame.sleep_cut += cut
                frame.sleeps_in += 1 if overlaps else 0
                frame.wake_reason = reason
                frame.wake_ts = ts
            if overlaps:
                self.touch(pending[0], ts)
                hist = self.sleep_hist.setdefault(label, {})
                b = str(log2_bucket(cut))
                hist[b] = hist.get(b, 0) + 1
            self.last_wake = (ts, frame)
        else:
            if self.stack and inside:
                self.stack[-1].polls_in += 1
            self.last_wake = None
        if reason == REASON_WAKE_UP and self.pending_wakeups:
            for req_ts, tid in self.pending_wakeups:
                if inside:
                    self.wakeup_latency.append(ts - req_ts)
                    self.wakeup_tids.add(tid)
            self.pending_wakeups = []

    # --- callouts -----------------------------------------------------------------------------

    # "Callout": entry pushes; exit pops the topmost entry of the same (kind, item), discarding
    # (and counting as unmatched) the entries above it; an exit without an entry is unmatched too.
    # Window and filters: a pair counts when it overlaps the window (cut to it) and passes --kind,
    # --item (the item's name) and --min-duration (its duration in the window).

    def item_name(self, kind, item, name):
        return name if kind == "block" else self.item_names.setdefault((kind, item), name)

    def callout_entry(self, ts, kind, item, name):
        frame = self.stack[-1] if self.stack else None
        self.item_name(kind, item, name)
        if kind != "observer" and self.last_wake is not None:
            wake_ts, wake_frame = self.last_wake
            # Counted when both the wake and the callout's entry are in the window.
            if wake_frame is frame and self.sel.begin <= wake_ts and ts <= self.sel.end:
                self.wake_to_first.append(ts - wake_ts)
            self.last_wake = None
        self.callout_stack.append((kind, item, name, ts, frame))

    def callout_exit(self, ts, kind, item):
        sel = self.sel
        idx = None
        for i in range(len(self.callout_stack) - 1, -1, -1):
            c = self.callout_stack[i]
            if c[0] == kind and c[1] == item:
                idx = i
                break
        if idx is None:
            self.unmatched += 1 if sel.inside(ts) else 0
            return
        self.unmatched += (len(self.callout_stack) - idx - 1) if sel.inside(ts) else 0
        entry = self.callout_stack[idx]
        del self.callout_stack[idx:]
        _, _, name, entry_ts, frame = entry
        d = ts - entry_ts
        if frame is not None:
            frame.callouts.append((kind, item, name, d))
        if not sel.overlaps(entry_ts, ts):
            return
        self.touch(entry_ts, ts)
        item_name = self.item_name(kind, item, name)
        if not sel.kind_item(kind, item_name):
            return
        self.kind_item_matches += 1
        cut = sel.clip(entry_ts, ts)
        if cut < sel.min_duration:
            return
        self.kind_durations.setdefault(kind, []).append(cut)
        # Every perform-block is its own item: blocks are one item per name (item 0).
        key = (kind, 0, name) if kind == "block" else (kind, item, None)
        it = self.items.setdefault(key, {"name": item_name, "durations": []})
        it["durations"].append(cut)

# ---------------------------------------------------------------------------------------------
# the pass over the trace

class NothingSelected(Exception):
    """The selection keeps nothing (exit 4), or the window misses the trace (exit 2)."""

    def __init__(self, message, code=4):
        Exception.__init__(self, message)
        self.code = code


# The payload fields the analysis reads (docs/tracepoints.md).
PAYLOAD_FIELDS = ("loop_id", "item_id", "name", "scheduled_ns", "iteration", "reason", "accepted", "caller_tid",
                  "signal_seq", "tid", "thread_name")


def new_trace(paths):
    return {"paths": [os.path.abspath(p) for p in paths], "beginNs": 0, "endNs": 0,
            "events": 0, "runloopEvents": 0, "discardedEvents": 0, "lostPackets": 0, "losses": []}


def decode(paths, trace):
    """The `runloop` events of the traces, merged in timestamp order, as (ts, name, vpid, vtid,
    procname, {payload field: value}); counts every event and loss into `trace`."""
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
        if trace["events"] == 0:
            trace["beginNs"] = ts
        trace["endNs"] = ts
        trace["events"] += 1
        ev = msg.event
        if not ev.name.startswith("runloop:"):
            continue
        trace["runloopEvents"] += 1
        ctx = ev.common_context_field
        payload = ev.payload_field
        fields = {}
        for k in PAYLOAD_FIELDS:
            v = field(payload, k)
            if v is not None:
                fields[k] = v
        yield ts, ev.name, field(ctx, "vpid"), field(ctx, "vtid"), field(ctx, "procname"), fields


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
    process_names = {}              # pid -> procname of its main thread (vtid == vpid)

    def loop_of(pid, loop_id):
        key = (pid, loop_id)
        lp = loops.get(key)
        if lp is None:
            lp = loops[key] = Loop(pid, loop_id, sel)
        return lp

    for ts, name, vpid, vtid, procname, payload in events:
        pid = vpid if vpid is not None else 0

        if name == "runloop:source0_signalled":
            item = payload.get("item_id")
            # One event per loop the source is in, sharing signal_seq (absent in older traces).
            seq = payload.get("signal_seq") or 0
            pend = sources.setdefault((pid, item), [])
            if seq and pend and pend[-1][2] == seq:
                continue
            pend.append((ts, payload.get("caller_tid"), seq))
            continue

        loop_id = payload.get("loop_id")
        if loop_id is None:
            continue
        lp = loop_of(pid, loop_id)
        lp.event(ts)
        if lp.tid_context is None:
            lp.tid_context = vtid
        # Process name (docs/report-json.md): LTTng's procname is per thread; a loop's process is
        # named by its main thread's (vtid == vpid) procname once one is seen, until then by the
        # first procname of the loop's own events.
        if procname is not None:
            if vtid == pid and pid not in process_names:
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
                item_name = "main-queue" if kind == "main_queue" else payload.get("name", "")
                lp.callout_entry(ts, kind, item, item_name)
                item_name = lp.item_name(kind, item, item_name)
                # Point events: a timer's lateness at its entry, a signal's latency at its perform,
                # when in the window and the item passes --kind and --item.
                selected = sel.inside(ts) and sel.kind_item(kind, item_name)
                if kind == "timer" and selected:
                    tl = lp.timer_lateness.setdefault(item, {"name": item_name, "values": []})
                    # A timer never fires before its date: a negative difference is a damaged clock, taken as 0.
                    tl["values"].append(max(0, ts - payload.get("scheduled_ns")))
                elif kind == "source0":
                    pend = sources.pop((pid, item), [])
                    if pend and selected:
                        # Every signal since the last perform ends at this one (signals coalesce).
                        sl = lp.signal_latency.setdefault(item, {"name": item_name, "values": [], "tids": set()})
                        for sig_ts, tid, _ in pend:
                            sl["values"].append(ts - sig_ts)
                            sl["tids"].add(tid)
            else:
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
    selected = select(loops, sel, trace)
    out_loops = [loop_json(lp, hang_ns, slow_ns, spin_min) for lp in selected]
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
    chosen = [lp for lp in everything if sel.loop_selected(lp.pid, lp.loop_id, loop_tid(lp), lp.procname or "")]
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


def callout_json(c):
    kind, item, name, d = c
    return {"kind": kind, "item": item, "name": name, "durationNs": d}


def loop_json(lp, hang_ns, slow_ns, spin_min):
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
        items.append(dict({"kind": kind, "item": item, "name": it["name"]}, **s))
    items.sort(key=lambda r: (-r["totalNs"], KIND_ORDER[r["kind"]], r["item"], r["name"]))

    hangs = []
    slow = 0
    # Decided on the whole iteration, listed whole (its culprit too), even when the window cuts it.
    for number, begin, busy, cos, _, duration, _, _, _ in lp.top_records:
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
        "timerLateness": [dict({"item": item, "name": v["name"]}, **stats(v["values"]))
                          for item, v in sorted(lp.timer_lateness.items())],
        "signalLatency": [dict({"item": item, "name": v["name"]}, **stats(v["values"]),
                               callerTids=sorted(t for t in v["tids"] if t is not None))
                          for item, v in sorted(lp.signal_latency.items())],
        "wakeUpLatency": dict(stats(lp.wakeup_latency), callerTids=sorted(lp.wakeup_tids)),
        "spuriousWakes": lp.spurious,
        "hangs": hangs,
        "slowIterations": slow,
        "spins": spins,
        "slowest": [{"iteration": r[0], "beginNs": r[7], "busyNs": r[6],
                     "callouts": [callout_json(c) for c in r[3]]} for r in slowest],
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
    sel.add_argument("--min-duration-ns", type=int, default=0, help="callout figures only for callouts this long")
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
