"""rl_loop_model.py -- the per-loop state machine of rl_bt2_report.py, and the selection it counts under.

docs/report-json.md defines every figure ("Definitions") and what a selection and a time window
count ("Selection and time window"); this module is those rules, one small state machine per loop
(`Loop`: iteration stack, pending sleep, callout stack) fed one event at a time by
rl_bt2_report.analyse(). Independent of rltrace's Swift code (see rl_bt2_report.py).
"""

import re

# Enumerations of docs/tracepoints.md, by container value (we read the integer, not bt2's label,
# so the mapping is ours and checked by the tests).
WAKE_REASONS = {0: "none", 1: "timeout", 2: "wake_up", 3: "timer", 4: "source1", 5: "main_queue"}
REASON_TIMEOUT = 1
REASON_WAKE_UP = 2

# Callout kinds: the keys of `calloutKinds`, in the order of docs/tracepoints.md's callout_kind.
CALLOUT_KINDS = ("observer", "source0", "source1", "timer", "main_queue", "block")


def cpu_state(cpu, busy):
    """"computing" when on CPU for at least a quarter of the time, else "blocked"."""
    return "computing" if cpu * 4 >= busy else "blocked"


def log2_bucket(d):
    """k = max(0, bitLength(d) - 1): 2^k <= d < 2^(k+1); 0 and 1 share bucket 0."""
    return max(0, int(d).bit_length() - 1)



# ---------------------------------------------------------------------------------------------
# selection (docs/report-json.md, "Selection and time window")

NEVER, FOREVER = -(1 << 64), 1 << 64


def glob_regex(pattern):
    """A glob as a regular expression: `*` any run, `?` one character, everything else literal
    (brackets too)."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern),
                      re.DOTALL)


class PooledBlockName:
    """The name of a block entered as its pooled name's id (docs/tracepoints.md, "Constant pools"):
    the process's block-name pool's, looked up whenever it is asked (as other items' names are), so
    blocks run before their name's description (a snapshot's oldest part) are named once it is
    read; "" while it is not. Blocks of one pooled name are one item: equal by (pid, id)."""

    __slots__ = ("pool", "key")

    def __init__(self, pool, key):
        self.pool, self.key = pool, key

    def resolve(self):
        return self.pool.get(self.key, "")

    def __eq__(self, other):
        return isinstance(other, PooledBlockName) and other.key == self.key

    def __hash__(self):
        return hash(("pooled", self.key))


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
                 "wake_reason", "wake_ts", "callouts", "sampled_cpu", "woke")

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
        self.callouts = []     # (kind, item, name, whole duration, sampled CPU ns or None) of callouts that belong to it (unfiltered)
        self.sampled_cpu = None  # Σ sampled CPU ns of its callouts that have a callout_cpu reading (None: none has)
        self.woke = False      # whether a wake of its own was read (without one, it polled and found nothing)

    def absorb(self, child):
        self.sleep_ns += child.sleep_ns
        self.sleeps += child.sleeps
        self.sleep_cut += child.sleep_cut
        self.sleeps_in += child.sleeps_in
        self.polls_in += child.polls_in


class Loop:
    def __init__(self, pid, loop_id, sel=None, names=None):
        self.pid = pid
        self.loop_id = loop_id
        self.sel = sel or Selection()
        self.tid_created = None
        self.tid_context = None
        self.thread_name = ""
        self.procname = None
        self.first = None                # first/last event or cut record in the window
        self.last = None
        self.followed = True             # False once past the window with no iteration open (nothing more followed)

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

        self.callout_stack = []          # open callouts: [kind, item, name, entry ts, frame it belongs to,
                                         #   last callout_cpu reading (elapsed, cpu) or None]
        self.unmatched = 0
        # (kind, item) -> name: the process's constant pool (docs/tracepoints.md, "Constant pools"),
        # shared by the loops of one process (item ids are process-unique): item_added / item_info
        # descriptions, or, in traces of the older schema, the first entry's `name`.
        self.item_names = names if names is not None else {}
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
        elif ts > sel.end and not self.stack:
            self.followed = False            # the iterations open at the window's end have ended

    # --- iterations ---------------------------------------------------------------------------

    # docs/report-json.md, "Iteration": begin pushes; end pops the matching number (discarding the
    # open iterations above it); an end without a matching open iteration is ignored. An end
    # without a number (the schema since the constant pools, docs/tracepoints.md) closes the
    # innermost open iteration. Top-level =
    # the stack was empty at its begin. busyNs = duration - sleeps of it and of nested iterations.
    # Window: an iteration counts once it has ended, when it overlaps the window, cut to it; what is
    # about the whole iteration (hang, slow, spurious wake) is decided on the whole iteration.

    def iteration_begin(self, ts, number):
        self.stack.append(Frame(number, ts, top_level=not self.stack))

    def iteration_end(self, ts, number=None):
        idx = None
        if number is None:
            if self.stack:
                idx = len(self.stack) - 1
        for i in range(len(self.stack) - 1, -1, -1) if number is not None else ():
            if self.stack[i].number == number:
                idx = i
                break
        if idx is None:
            return                                   # no matching open iteration: ignored
        top = self.stack[-1]
        if idx == len(self.stack) - 1 and not top.woke and self.pending_sleep is None:
            # No wake in it: it polled and found nothing (docs/tracepoints.md, "wake"), a poll with
            # reason none at its end (traces from before that rule write that wake).
            self.wake(ts, number, 0)
        # Discard the open iterations above the matching one; their sleeps still happened inside
        # the matching iteration, so they count as nested in it.
        while len(self.stack) > idx + 1:
            self.stack[-2].absorb(self.stack.pop())
        frame = self.stack.pop()
        sel = self.sel
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
            if not worked and self.followed and sel.inside(wake_ts):
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
                                     busy_cut, max(frame.begin, sel.begin), min(ts, sel.end), frame.sampled_cpu))

    # --- sleeps and wakes ---------------------------------------------------------------------

    # "Sleep": a sleep_begin followed by the loop's next wake with the same iteration number;
    # any other wake is a poll. A sleep belongs to the innermost open iteration at its sleep_begin.
    # Without numbers (the schema since the constant pools: per-iteration events belong to the
    # innermost open iteration), "the same iteration" is the same innermost open iteration.
    # Window: a sleep counts when it overlaps it (cut to it); a wake (poll, reason, wake-up
    # latency) when it is in it.

    def sleep_begin(self, ts, number=None):
        frame = self.stack[-1] if self.stack else None
        self.pending_sleep = (ts, number, frame)

    def wake(self, ts, number, reason):
        sel = self.sel
        inside = sel.inside(ts)
        label = WAKE_REASONS.get(reason, str(reason))
        if inside:
            self.wake_reasons[label] = self.wake_reasons.get(label, 0) + 1
        if self.stack:
            self.stack[-1].woke = True
        pending, self.pending_sleep = self.pending_sleep, None
        if pending is not None and (pending[1] == number if number is not None or pending[1] is not None
                                    else pending[2] is (self.stack[-1] if self.stack else None)):
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
    # An exit without an item (the schema since the constant pools) pops the topmost entry of its
    # kind.
    # Window and filters: a pair counts when it overlaps the window (cut to it) and passes --kind,
    # --item (the item's name) and --min-duration (its duration in the window).

    def item_name(self, kind, item, name=None):
        """The name of an item now: a block's is its own (`name`); another item's the pool's, else
        `name` (an older trace's entry), which then names it; "" when never described."""
        if kind == "block":
            return name.resolve() if isinstance(name, PooledBlockName) else name
        if kind == "main_queue":
            return "main-queue"
        known = self.item_names.get((kind, item))
        if known is None and name is not None:
            known = self.item_names[(kind, item)] = name
        return known if known is not None else ""

    def callout_entry(self, ts, kind, item, name=None):
        """`name`: a block's name; for other kinds an older trace's entry `name` (None when the
        entry carries none: the name is the constant pool's)."""
        frame = self.stack[-1] if self.stack else None
        self.item_name(kind, item, name)
        if kind != "observer" and self.last_wake is not None:
            wake_ts, wake_frame = self.last_wake
            # Counted when both the wake and the callout's entry are in the window.
            if wake_frame is frame and self.sel.begin <= wake_ts and ts <= self.sel.end:
                self.wake_to_first.append(ts - wake_ts)
            self.last_wake = None
        self.callout_stack.append([kind, item, name if kind == "block" else None, ts, frame, None])

    # callout_cpu (docs/tracepoints.md, "Constant pools"): the hang watchdog's reading of a long
    # callout's CPU time over its last `elapsed` ns; it belongs to the innermost open callout of
    # that kind and item, and the last reading counts: scaled to the callout's whole duration at
    # its exit, min(duration, cpu / elapsed * duration).

    def callout_cpu(self, kind, item, elapsed, cpu):
        if not elapsed or elapsed <= 0 or cpu is None or cpu < 0:
            return
        for c in reversed(self.callout_stack):
            if c[0] == kind and c[1] == item:
                c[5] = (elapsed, cpu)
                return

    def callout_exit(self, ts, kind, item=None):
        sel = self.sel
        idx = None
        for i in range(len(self.callout_stack) - 1, -1, -1):
            c = self.callout_stack[i]
            if c[0] == kind and (item is None or c[1] == item):
                idx = i
                break
        if idx is None:
            self.unmatched += 1 if sel.inside(ts) else 0
            return
        self.unmatched += (len(self.callout_stack) - idx - 1) if sel.inside(ts) else 0
        entry = self.callout_stack[idx]
        del self.callout_stack[idx:]
        _, item, name, entry_ts, frame, reading = entry
        d = ts - entry_ts
        sampled = None
        if reading is not None:
            whole = float(max(0, d))
            sampled = int(min(whole, float(reading[1]) / float(reading[0]) * whole))
        if frame is not None:
            frame.callouts.append((kind, item, name, d, sampled))
            if sampled is not None:
                frame.sampled_cpu = (frame.sampled_cpu or 0) + sampled
        if not sel.overlaps(entry_ts, ts):
            return
        self.touch(entry_ts, ts)
        item_name = self.item_name(kind, item, name if kind == "block" else None)
        if not sel.kind_item(kind, item_name):
            return
        self.kind_item_matches += 1
        cut = sel.clip(entry_ts, ts)
        if d < sel.min_duration:        # by its whole duration, cut by the window or not
            return
        self.kind_durations.setdefault(kind, []).append(cut)
        # Every perform-block is its own item: blocks are one item per name (item 0).
        key = (kind, 0, name) if kind == "block" else (kind, item, None)
        it = self.items.setdefault(key, {"name": name if kind == "block" else None, "durations": [],
                                         "slowest": (-1, None)})
        it["durations"].append(cut)
        if cut > it["slowest"][0]:
            # Its longest callout and what the watchdog read of it; a callout the window cuts has
            # no on-CPU time (docs/report-json.md, "What a window counts").
            it["slowest"] = (cut, sampled if cut == d else None)
