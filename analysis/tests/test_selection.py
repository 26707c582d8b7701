"""Selection and time window (docs/report-json.md, "Selection and time window"): on the traces the
suite records, for a grid of selections -- each loop filter matching and matching nothing,
--kind/--item/--min-duration, windows inside the hang, across sleeps, at the trace's ends and at
seeded random edges -- rl_bt2_report.py and `rltrace report --format json` must agree on every
figure the cross-check compares (common.comparable and common.comparable_beyond), and a selection
that matches nothing must end both with exit status 4.

rltrace gets its window relative to the first runloop event (`--begin +Xns`), rl_bt2_report.py the
absolute clock value (first runloop event + X).

Environment: as test_crosscheck.py (RL_BIN_DIR, RL_RLTRACE, RL_SKIP_RLTRACE, RL_ANALYSIS_TRACES).
"""

import json
import os
import random
import subprocess
import unittest

import common
import rl_bt2_report
import rl_loop_model

MS = 1_000_000
SEED = 20261127


_decoded = {}


def decoded(traces, name):
    """(trace, events) of a recorded trace, decoded through bt2 once per test run."""
    if name not in _decoded:
        trace = rl_bt2_report.new_trace([traces[name]])
        _decoded[name] = (trace, list(rl_bt2_report.decode([traces[name]], trace)))
    return _decoded[name]


class Sel:
    """One selection: keyword arguments of rl_bt2_report.Selection, given to rltrace as its
    options. Times are offsets (ns) from the first runloop event."""

    def __init__(self, label, begin=None, end=None, **filters):
        self.label, self.begin, self.end, self.filters = label, begin, end, filters

    def rltrace_args(self):
        out = []
        for key, opt in (("pids", "--pid"), ("tids", "--tid"), ("procnames", "--procname"), ("loops", "--loop"),
                         ("kinds", "--kind")):
            for v in self.filters.get(key, ()):
                out += [opt, str(v)]
        if "item" in self.filters:
            out += ["--item", self.filters["item"]]
        if "min_duration" in self.filters:
            out += ["--min-duration", "%dns" % self.filters["min_duration"]]
        for opt, t in (("--begin", self.begin), ("--end", self.end)):
            if t is not None:
                out += [opt, "+%dns" % t]
        return out

    def selection(self, origin):
        return rl_bt2_report.Selection(begin=None if self.begin is None else origin + self.begin,
                                       end=None if self.end is None else origin + self.end, **self.filters)


class SelectionAgrees(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.environ.get("RL_SKIP_RLTRACE") == "1":
            raise unittest.SkipTest("RL_SKIP_RLTRACE=1")
        cls.cmd = common.rltrace_report_command()
        if cls.cmd is None:
            raise AssertionError("no rltrace with `report --format json` in %s (or set RL_RLTRACE)" % common.bin_dir())
        cls.traces = common.recorded_traces()
        # Each trace decoded once through bt2, analysed once per selection.
        cls.decoded = {n: decoded(cls.traces, n) for n in cls.traces}
        cls.origin = {n: events[0][0] for n, (_, events) in cls.decoded.items()}
        cls.whole = {n: rl_bt2_report.analyse([p], decoded=cls.decoded[n]) for n, p in cls.traces.items()}

    def compare(self, name, sel):
        """Both implementations on one selection: the same exit status; when 0, the same figures."""
        trace = self.traces[name]
        what = "%s, %s (rltrace %s)" % (name, sel.label, " ".join(sel.rltrace_args()))
        try:
            mine, rc_b, err_b = rl_bt2_report.analyse([trace], sel=sel.selection(self.origin[name]),
                                                      decoded=self.decoded[name]), 0, ""
        except rl_bt2_report.NothingSelected as e:
            mine, rc_b, err_b = None, e.code, str(e)
        r = subprocess.run(self.cmd + sel.rltrace_args() + [trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(rc_b, r.returncode, "%s: exit status rl_bt2_report.py %d (%s) vs rltrace %d (%s)"
                         % (what, rc_b, err_b, r.returncode, r.stderr.decode(errors="replace").strip()))
        if rc_b != 0:
            return rc_b, None
        theirs = json.loads(r.stdout)
        for project in (common.comparable, common.comparable_beyond):
            diffs = common.differences(project(mine), project(theirs))
            self.assertEqual(diffs, [], "rl_bt2_report.py (left) vs rltrace (right), %s:\n  %s"
                             % (what, "\n  ".join(diffs[:30])))
        return rc_b, mine

    # --- loop filters -----------------------------------------------------------------------

    def test_loop_filters(self):
        """Each loop filter for each loop of the two-loop traces (scenario-wakes: a source in both
        loops, signalled once), and each filter matching nothing (exit 4 from both)."""
        for name in ("example-injected", "scenario-wakes"):
            loops = self.whole[name]["loops"]
            self.assertEqual(len(loops), 2)
            for lp in loops:
                for filters in ({"loops": [lp["loop"]]}, {"tids": [lp["tid"]]},
                                {"pids": [lp["pid"]], "procnames": [lp["procname"]]}):
                    with self.subTest(trace=name, filters=filters):
                        rc, doc = self.compare(name, Sel("filter", **filters))
                        self.assertEqual(rc, 0)
                        expected = [x["loop"] for x in loops] if "pids" in filters else [lp["loop"]]
                        self.assertEqual([x["loop"] for x in doc["loops"]], expected)
        name = "example-injected"
        loops = self.whole[name]["loops"]
        for filters in ({"loops": [999999]}, {"tids": [1]}, {"pids": [1]}, {"procnames": ["nosuch"]},
                        {"loops": [loops[0]["loop"]], "tids": [loops[1]["tid"]]}):
            with self.subTest(filters=filters):
                self.assertEqual(self.compare(name, Sel("no match", **filters))[0], 4)

    # --- callout filters --------------------------------------------------------------------

    def test_callout_filters(self):
        """--kind and --item narrow the callout figures only (iterations stay); --min-duration too;
        a kind or item that no callout has is exit 4 from both."""
        grid = [{"kinds": ["timer"]}, {"kinds": ["source0", "block"]}, {"kinds": ["observer", "main_queue"]},
                {"item": "client*"}, {"item": "*e?t*"}, {"kinds": ["source0"], "item": "compute*"},
                {"min_duration": MS}]
        for name in ("example-injected", "scenario-wakes"):
            for filters in grid:
                with self.subTest(trace=name, filters=filters):
                    rc, doc = self.compare(name, Sel("callouts", **filters))
                    if rc == 0:
                        self.assertEqual([lp["iterations"] for lp in doc["loops"]],
                                         [lp["iterations"] for lp in self.whole[name]["loops"]])
        for filters in ({"item": "no-such-item*"}, {"kinds": ["source1"], "item": "heartbeat"}):
            with self.subTest(filters=filters):
                self.assertEqual(self.compare("example-injected", Sel("no match", **filters))[0], 4)

    # --- windows ----------------------------------------------------------------------------

    def windows(self, name):
        """(label, begin, end) offsets for one trace: at its ends, seeded random edges, inside the hang."""
        doc = self.whole[name]
        span = doc["trace"]["endNs"] - self.origin[name]
        out = [("whole, ends exact", 0, span), ("first third", None, span // 3), ("last third", 2 * span // 3, None),
               ("the last ns", span, span)]
        rnd = random.Random("%s/%s" % (SEED, name))
        for i in range(2):
            a, b = sorted(rnd.randrange(0, span + 1) for _ in range(2))
            out.append(("random %d" % i, a, b))
        for h in self.hangs(name)[:1]:
            out.append(("inside the hang", h[0] + 50 * MS, h[0] + 100 * MS))
        return out

    def hangs(self, name):
        """(begin offset, duration) of the whole trace's hangs."""
        return [(h["beginNs"] - self.origin[name], h["durationNs"]) for lp in self.whole[name]["loops"]
                for h in lp["hangs"]]

    def test_windows(self):
        """Windows at the trace's ends, inside the hang and at seeded random edges, on every
        recorded trace; a window inside the hang lists it whole."""
        for name in self.traces:
            for label, b, e in self.windows(name):
                with self.subTest(trace=name, window=label):
                    rc, doc = self.compare(name, Sel(label, b, e))
                    if label == "inside the hang":
                        whole = [(h["beginNs"], h["durationNs"], h["busyNs"]) for lp in self.whole[name]["loops"]
                                 for h in lp["hangs"]]
                        cut = [(h["beginNs"], h["durationNs"], h["busyNs"]) for lp in doc["loops"] for h in lp["hangs"]]
                        self.assertEqual(cut, whole[:1])
        self.assertEqual(len(self.hangs("example-injected")), 1)

    def test_window_across_the_hangs_end(self):
        """A window from 1 ms before the hang's end: the hang, once (rltrace once listed besides it
        a watchdog hang made from the `hang_end` event alone, its `hang_begin` before the window
        not followed)."""
        (b, d), = self.hangs("example-injected")
        self.compare("example-injected", Sel("across the hang's end", b + d - MS, b + d + 30 * MS))

    def test_windows_after_the_hang_before_the_watchdogs_end(self):
        """Windows at the end of a watchdog hang: beginning after the stuck callout returned (when
        the loop got going again) but before the watchdog's `hang_end`, which it writes at its next
        tick, up to a tick later; holding only that `hang_end`; and beginning just before the
        return. (rltrace once judged the hang by `hang_end` and listed it in windows after it.)"""
        name = "example-injected"
        o = self.origin[name]
        stuck, checked = {}, 0
        for ts, ev, pid, _, _, f, *_ in self.decoded[name][1]:
            if "loop_id" not in f:
                continue
            k = (pid, f["loop_id"])
            if ev == "runloop:hang_begin":
                stuck[k] = None
            elif k in stuck and stuck[k] is None and (ev == "runloop:iteration_end" or
                                                      (ev.endswith("_exit") and ev != "runloop:run_exit")):
                stuck[k] = ts
            elif ev == "runloop:hang_end" and k in stuck:
                resumed = stuck.pop(k)
                if resumed is None or ts - resumed < 2:
                    continue
                for label, b, e in (("from after the return to past hang_end", resumed + 1, ts + MS),
                                    ("hang_end only", ts, ts),
                                    ("from just before the return", resumed - 1, ts + MS)):
                    with self.subTest(window=label):
                        self.compare(name, Sel(label, b - o, e - o))
                        checked += 1
        self.assertGreaterEqual(checked, 3)

    def idle_wakes(self, name):
        """(wake, iteration end, next iteration's begin and end) of the top-level iterations woken
        (not by their timeout) that made no callout but observers, in every loop, and whether the
        next made none either (a spurious wake): where a window's end decides whether a wake is
        judged."""
        out, state = [], {}
        for ts, ev, pid, _, _, f, *_ in self.decoded[name][1]:
            if "loop_id" not in f:
                continue
            st = state.setdefault((pid, f["loop_id"]), {"depth": 0, "sleep": None, "open": None, "last": None})
            if ev == "runloop:iteration_begin":
                st["depth"] += 1
                if st["depth"] == 1:
                    st["open"] = {"begin": ts, "wake": None, "worked": False}
                    if st["last"] is not None:
                        st["last"]["next_begin"] = ts
            elif ev == "runloop:iteration_end" and st["depth"]:
                st["depth"] -= 1
                if st["depth"] == 0 and st["open"] is not None:
                    it, st["open"] = st["open"], None
                    if st["last"] is not None:
                        st["last"]["next_end"], st["last"]["spurious"] = ts, not it["worked"]
                        out.append(st["last"])
                        st["last"] = None
                    if it["wake"] is not None and not it["worked"]:
                        it["end"], st["last"] = ts, it
            elif ev == "runloop:sleep_begin":
                st["sleep"] = ("asleep in", f.get("iteration"))     # no number since the constant pools
            elif ev == "runloop:wake":
                if st["sleep"] == ("asleep in", f.get("iteration")) and st["open"] is not None and f["reason"] != 1:
                    st["open"]["wake"] = ts
                st["sleep"] = None
            elif ev.endswith("_entry") and not ev.startswith("runloop:observer") and st["open"] is not None:
                st["open"]["worked"] = True
        return out

    def test_windows_ending_after_an_idle_wake(self):
        """Windows whose end falls after a wake in an iteration that did no work: at the wake, at
        its iteration's end, and between the next iteration's begin and end (followed, so judged),
        one just holding the wake, and one beginning at the instant the iteration ends (which
        overlaps it)."""
        checked = 0
        for name in ("example-injected", "scenario-wakes", "example"):
            o = self.origin[name]
            wakes = self.idle_wakes(name)
            # Spurious wakes (when a recording has some: 2 or 0 in example-injected) and two others.
            spurious = [w for w in wakes if w["spurious"]]
            for i, w in enumerate(spurious[:4] + [w for w in wakes if not w["spurious"]][:2]):
                for label, b, e in (("end at the wake", None, w["wake"]), ("end at its iteration's end", None, w["end"]),
                                    ("end inside the next", w["wake"] - MS, (w["next_begin"] + w["next_end"]) // 2),
                                    ("the wake only", w["wake"], w["wake"]),
                                    ("begin at its iteration's end", w["end"], w["next_end"])):
                    with self.subTest(trace=name, wake=i, window=label):
                        self.compare(name, Sel(label, None if b is None else b - o, e - o))
                        checked += 1
        self.assertGreater(checked, 20)

    def test_windows_across_sleeps(self):
        """Windows that begin and end inside sleeps of the main loop (the sleeps cut to them)."""
        name = "example"
        whole = self.whole[name]["loops"]
        main = max(whole, key=lambda lp: lp["sleepNs"])
        self.assertGreater(main["sleepNs"], main["busyNs"])      # mostly asleep: random edges fall in sleeps
        rnd = random.Random(SEED)
        span = self.whole[name]["trace"]["endNs"] - self.origin[name]
        for i in range(3):
            a = rnd.randrange(span // 10, span // 2)
            with self.subTest(window=i):
                self.compare(name, Sel("across sleeps %d" % i, a, a + rnd.randrange(MS, 200 * MS)))

    def test_window_and_filters_together(self):
        """Filters within a window; inside the hang, --min-duration takes the callout's whole
        duration (the 300 ms hang timer, 50 ms of it in the window, passes 100 ms and counts its
        50 ms; 400 ms leaves none: an answer, not an error)."""
        name = "example-injected"
        lp = self.whole[name]["loops"][0]
        span = self.whole[name]["trace"]["endNs"] - self.origin[name]
        for filters in ({"loops": [lp["loop"]], "kinds": ["timer"]}, {"item": "client*"}):
            with self.subTest(filters=filters):
                self.compare(name, Sel("window+filters", span // 4, span // 2, **filters))
        (b, _), = self.hangs(name)
        for filters, expected in (({"min_duration": 100 * MS}, [(1, 50 * MS)]), ({"min_duration": 400 * MS}, []),
                                  ({"kinds": ["timer"], "item": "hang*"}, [(1, 50 * MS)])):
            with self.subTest(filters=filters):
                rc, doc = self.compare(name, Sel("inside the hang", b + 50 * MS, b + 100 * MS, **filters))
                timers = [it for x in doc["loops"] for it in x["items"] if it["name"] == "hang-timer"]
                self.assertEqual([(t["count"], t["totalNs"]) for t in timers], expected)

    def test_windows_cutting_the_spin(self):
        """Windows that cut the injected spin (201 iterations that never slept) at either end."""
        name = "example-injected"
        spins = [(s["beginNs"] - self.origin[name], s["endNs"] - self.origin[name])
                 for lp in self.whole[name]["loops"] for s in lp["spins"]]
        self.assertEqual(len(spins), 1)
        (b, e), = spins
        mid = (b + e) // 2
        for label, wb, we in (("its second half", mid, e + 10 * MS), ("its first half", b - 10 * MS, mid),
                              ("its middle", b + (e - b) // 4, e - (e - b) // 4)):
            with self.subTest(window=label):
                self.compare(name, Sel(label, wb, we))

    def test_window_missing_the_trace(self):
        """A window after the trace's end: exit 2 from both."""
        name = "scenario-sequence"
        span = self.whole[name]["trace"]["endNs"] - self.origin[name]
        self.assertEqual(self.compare(name, Sel("after the end", span + 10 * MS, span + 20 * MS))[0], 2)

    def test_command_line_exit_status_and_message(self):
        """The script itself: exit 4 with a message naming what was asked and what the trace holds."""
        r = subprocess.run([common.PYTHON, common.REPORT, "--procname", "nosuch", self.traces["scenario-wakes"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(r.returncode, 4)
        self.assertEqual(r.stdout, b"")
        err = r.stderr.decode()
        self.assertIn("--procname nosuch", err)
        self.assertIn("the trace holds loop", err)


class LateSession(unittest.TestCase):
    """A session that starts 0.6 s after the program (example-late-session): its loops and items
    were described before the trace began, so only the constant pools' later descriptions
    (`loop_info`, `item_info`, docs/tracepoints.md, "Constant pools") name them; the report names
    them at the end."""

    compare = SelectionAgrees.compare

    @classmethod
    def setUpClass(cls):
        if os.environ.get("RL_SKIP_RLTRACE") == "1":
            raise unittest.SkipTest("RL_SKIP_RLTRACE=1")
        cls.cmd = common.rltrace_report_command()
        if cls.cmd is None:
            raise AssertionError("no rltrace with `report --format json` in %s (or set RL_RLTRACE)" % common.bin_dir())
        cls.traces = common.late_traces()
        cls.decoded = {n: decoded(cls.traces, n) for n in cls.traces}
        cls.origin = {n: events[0][0] for n, (_, events) in cls.decoded.items()}

    def first_description(self):
        """Offsets from the first runloop event of the first loop_info / item_info, and of the end
        of a window before it: the first iteration_end (a window ending there has no iteration open
        at its end) when it comes first, else the instant before the description. The watchdog's
        thread describes the pools as soon as it sees the session (docs/tracepoints.md, "Constant
        pools"), which may be before the loop ends its first iteration in the trace (seen in CI:
        1 ms before); only when the description is the trace's very first runloop event does no
        window precede it, and the window then ends at the first iteration's end, just after it."""
        events = self.decoded["example-late-session"][1]
        t0 = events[0][0]
        first = next(e[0] for e in events if e[1] in ("runloop:loop_info", "runloop:item_info"))
        end = next(e[0] for e in events if e[1] == "runloop:iteration_end")
        if end >= first and first > t0:
            end = first - 1
        return first - t0, end - t0

    def test_whole_trace_names_every_loop_and_item(self):
        self.first_description()
        self.assertNotIn("runloop:item_added", {e[1] for e in self.decoded["example-late-session"][1]})
        _, doc = self.compare("example-late-session", Sel("whole trace"))
        for lp in doc["loops"]:
            self.assertEqual(lp["procname"], "rl-example")
            self.assertGreater(lp["tid"], 0)
            self.assertEqual([it for it in lp["items"] if not it["name"]], [])
        self.assertTrue(any(lp["items"] for lp in doc["loops"]))

    def test_window_before_the_first_description(self):
        """A window that ends at the first iteration's end, before the first description: the
        report still names loops and items by the trace's descriptions (docs/tracepoints.md,
        "Constant pools": past the window, rltrace reads on for the descriptions it lacks)."""
        _, end = self.first_description()
        self.compare("example-late-session", Sel("before the first description", None, end))


class Metamorphic(unittest.TestCase):
    """docs/report-json.md: a window split in two gives the same figures as the whole, except what
    spans the split, which counts once in each half (= what the one-instant window at the split
    counts); a filter and its complement add up to the unfiltered figures. rl_bt2_report.py alone
    (ConsistencyTests check rltrace)."""

    ADDITIVE = ("iterations", "topLevelIterations", "busyNs", "sleepNs", "sleeps", "polls", "callouts")

    @classmethod
    def setUpClass(cls):
        cls.traces = common.recorded_traces()
        cls.decoded = {n: decoded(cls.traces, n) for n in ("example", "example-injected")}

    def figures(self, name, **kw):
        """{loop: {figure: value}}, flattening wake reasons and callout kinds; {} when nothing is selected."""
        try:
            doc = rl_bt2_report.analyse([], sel=rl_loop_model.Selection(**kw), decoded=self.decoded[name])
        except rl_bt2_report.NothingSelected as e:
            self.assertEqual(e.code, 4)
            return {}
        out = {}
        for lp in doc["loops"]:
            f = {k: lp[k] for k in self.ADDITIVE}
            f.update(("wake " + r, n) for r, n in lp["wakeReasons"].items())
            f.update(("kind %s count" % k, v["count"]) for k, v in lp["calloutKinds"].items())
            f.update(("kind %s total" % k, v["totalNs"]) for k, v in lp["calloutKinds"].items())
            out[lp["loop"]] = f
        return out

    @staticmethod
    def combine(a, b, sign=1):
        out = {}
        for src, s in ((a, 1), (b, sign)):
            for loop, f in src.items():
                for k, v in f.items():
                    out.setdefault(loop, {}).setdefault(k, 0)
                    out[loop][k] += s * v
        return {loop: {k: v for k, v in f.items() if v} for loop, f in out.items()}

    def test_window_split_in_two(self):
        for name, (trace, events) in self.decoded.items():
            begin, end = events[0][0], trace["endNs"]
            rnd = random.Random("%s/split/%s" % (SEED, name))
            for _ in range(3):
                s = rnd.randrange(begin, end)
                with self.subTest(trace=name, split=s - begin):
                    halves = self.combine(self.figures(name, end=s), self.figures(name, begin=s))
                    self.assertEqual(self.combine(halves, self.figures(name, begin=s, end=s), -1),
                                     self.combine(self.figures(name), {}))

    def test_kind_and_its_complement(self):
        name = "example-injected"
        for kinds in (["timer"], ["source0", "observer"]):
            rest = [k for k in rl_loop_model.CALLOUT_KINDS if k not in kinds]
            with self.subTest(kinds=kinds):
                both = self.combine(self.figures(name, kinds=kinds), self.figures(name, kinds=rest))
                whole = self.figures(name)
                for loop, f in whole.items():
                    for k in ("callouts",) + tuple(k for k in f if k.startswith("kind ")):
                        self.assertEqual(both[loop].get(k, 0), f[k], "loop %d %s" % (loop, k))
                    for k in self.ADDITIVE[:-1]:
                        self.assertEqual(both[loop].get(k, 0), 2 * f[k], "loop %d %s (not narrowed)" % (loop, k))


class SelectionRules(unittest.TestCase):
    """The selection's own rules on hand-made event sequences."""

    def test_glob_is_star_and_question_mark_only(self):
        g = rl_loop_model.glob_regex
        self.assertTrue(g("client*").fullmatch("client-3"))
        self.assertTrue(g("c?ient").fullmatch("client"))
        self.assertFalse(g("client").fullmatch("client-3"))
        self.assertTrue(g("[ab]").fullmatch("[ab]"))
        self.assertFalse(g("[ab]").fullmatch("a"))

    def test_window_cuts_iterations_and_sleeps_and_keeps_hang_whole(self):
        sel = rl_loop_model.Selection(begin=150, end=1000)
        lp = rl_loop_model.Loop(0, 1, sel)
        lp.iteration_begin(100, 1)
        lp.callout_entry(110, "timer", 5, "t")
        lp.callout_exit(400, "timer", 5)           # 290 whole, 250 in the window
        lp.sleep_begin(500, 1)
        lp.wake(700, 1, 3)
        lp.iteration_end(800, 1)                   # whole: 700 - 200 = 500 busy; cut: 650 - 200 = 450
        lp.iteration_begin(1100, 2)                # after the window
        lp.iteration_end(1200, 2)
        self.assertEqual((lp.iterations, lp.top_level, lp.busy_ns, lp.sleep_ns, lp.sleeps), (1, 1, 450, 200, 1))
        self.assertEqual(lp.kind_durations, {"timer": [250]})
        self.assertEqual([r[2] for r in lp.top_records], [500])
        self.assertEqual((lp.first, lp.last), (150, 800))

    def spurious(self, events, begin=None, end=None):
        """spuriousWakes of loop 1 for hand-made events (ts, name, payload) of loop 1, pid 7."""
        trace = rl_bt2_report.new_trace([])
        trace.update(beginNs=events[0][0], endNs=events[-1][0], events=len(events), runloopEvents=len(events))
        decoded = (trace, [(ts, "runloop:" + ev, 7, 7, "p", dict(f, loop_id=f.get("loop_id", 1)))
                           for ts, ev, f in events])
        doc = rl_bt2_report.analyse([], sel=rl_loop_model.Selection(begin=begin, end=end), decoded=decoded)
        return {lp["loop"]: lp["spuriousWakes"] for lp in doc["loops"]}.get(1)

    @staticmethod
    def idle_iteration(n, t):
        """Iteration n from t: sleeps, woken by a timer at t + 50, ends at t + 60 with no callout."""
        return [(t, "iteration_begin", {"iteration": n}), (t + 10, "sleep_begin", {"iteration": n}),
                (t + 50, "wake", {"iteration": n, "reason": 3}), (t + 60, "iteration_end", {"iteration": n})]

    def test_last_idle_wake_is_judged_only_at_the_trace_end(self):
        """An idle wake no iteration followed is spurious when the trace ends (no --end, or an
        end at the trace's end), not judged when the window ends before the trace."""
        events = self.idle_iteration(1, 100) + [(1000, "iteration_begin", {"iteration": 1, "loop_id": 2})]
        self.assertEqual(self.spurious(events), 1)
        self.assertEqual(self.spurious(events, end=1000), 1)
        self.assertEqual(self.spurious(events, end=999), 0)
        self.assertEqual(self.spurious(events, begin=151), 0)      # the wake (at 150) is before the window

    def test_next_iteration_judged_only_when_followed(self):
        """Two idle iterations (the first wake spurious): a window ending before the second begins
        leaves the first wake unjudged; ending inside the second (followed until it ends) judges it."""
        events = self.idle_iteration(1, 100) + self.idle_iteration(2, 300) + self.idle_iteration(3, 500)
        self.assertEqual(self.spurious(events), 3)
        self.assertEqual(self.spurious(events, end=200), 0)        # after iteration 1, before 2
        self.assertEqual(self.spurious(events, end=155), 0)        # at the wake, iteration 1 open
        self.assertEqual(self.spurious(events, end=320), 1)        # inside iteration 2: followed to its end
        self.assertEqual(self.spurious(events, begin=200, end=400), 0)   # iteration 3 begins after: not followed
        self.assertEqual(self.spurious(events, begin=200, end=520), 1)   # iteration 3 open at the end: followed

    def test_iteration_open_at_the_trace_end_counts_nothing(self):
        sel = rl_loop_model.Selection(begin=0, end=100)
        lp = rl_loop_model.Loop(0, 1, sel)
        lp.iteration_begin(10, 1)
        lp.sleep_begin(20, 1)
        self.assertEqual((lp.iterations, lp.sleeps, lp.sleep_ns, lp.busy_ns), (0, 0, 0, 0))


if __name__ == "__main__":
    unittest.main()
