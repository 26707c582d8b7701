"""The cross-check: real traces recorded under a private LTTng session daemon (the example service,
plain and with every injected problem, and the tracing scenarios), analysed by

  1. analysis/rl_bt2_report.py (babeltrace2's Python bindings),
  2. an independent derivation from `babeltrace2 --clock-cycles` text output (bttext_figures.py),
  3. `rltrace report --format json` (the Swift implementation),

which must agree exactly on the figures listed at the end of docs/report-json.md.

Environment: RL_BIN_DIR (folder of rl-example, tracing-scenarios, rltrace; default .build/debug),
RL_RLTRACE (an rltrace binary), RL_SKIP_RLTRACE=1 (skip the comparisons with rltrace),
RL_ANALYSIS_TRACES=DIR (reuse traces recorded earlier into DIR/<name>).
"""

import os
import unittest

import common
import bttext_figures


def bt2_figures(doc):
    """rl_bt2_report.py's document in bttext_figures' shape."""
    out = {"events": doc["trace"]["events"], "runloopEvents": doc["trace"]["runloopEvents"], "loops": {}}
    for lp in doc["loops"]:
        c = common.comparable({"trace": doc["trace"], "loops": [lp]})
        figs = c["loop pid=%d id=%d" % (lp["pid"], lp["loop"])]
        figs["items"] = {(it["kind"], it["item"], it["name"] if it["kind"] == "block" else None):
                         {"count": it["count"], "totalNs": it["totalNs"], "maxNs": it["maxNs"]} for it in lp["items"]}
        out["loops"][(lp["pid"], lp["loop"])] = figs
    return out


class CrossCheck(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.traces = common.recorded_traces()
        cls.reports = {name: common.run_bt2_report(path) for name, path in cls.traces.items()}

    def test_traces_exercise_every_figure(self):
        """The recorded traces are worth cross-checking: together they contain every callout kind,
        every wake reason but `none`, sleeps, polls, nested iterations, a hang and a spin."""
        kinds, reasons = set(), set()
        nested = sleeps = polls = hangs = spins = 0
        for doc in self.reports.values():
            self.assertEqual(doc["schema"], "rltrace-report/2")
            self.assertEqual(doc["trace"]["discardedEvents"], 0)
            self.assertEqual(doc["trace"]["lostPackets"], 0)
            for lp in doc["loops"]:
                kinds |= set(lp["calloutKinds"])
                reasons |= {r for r, n in lp["wakeReasons"].items() if n}
                nested += lp["iterations"] - lp["topLevelIterations"]
                sleeps += lp["sleeps"]
                polls += lp["polls"]
                hangs += len(lp["hangs"])
                spins += len(lp["spins"])
                self.assertEqual(lp["unmatchedCallouts"], 0)
        self.assertEqual(kinds, {"observer", "source0", "source1", "timer", "main_queue", "block"})
        self.assertTrue({"timeout", "wake_up", "timer", "source1", "main_queue"} <= reasons, reasons)
        self.assertGreater(nested, 0)
        self.assertGreater(sleeps, 0)
        self.assertGreater(polls, 0)
        inj = self.reports["example-injected"]["loops"]
        main = max(inj, key=lambda lp: lp["iterations"])
        self.assertIn("hang-timer", [h["culprit"]["name"] for h in main["hangs"] if h["culprit"]])
        self.assertGreaterEqual(len(main["spins"]), 1)
        self.assertGreater(hangs, 0)
        self.assertGreater(spins, 0)
        # tracing-scenarios wakes signals a source that is in two loops once: two source0_signalled
        # events (one per loop, same signal_seq), one signal paired with the one perform.
        wakes = [s for lp in self.reports["scenario-wakes"]["loops"] for s in lp["signalLatency"]
                 if s["name"] == "signalled-elsewhere"]
        self.assertEqual([s["count"] for s in wakes], [1], wakes)

    def test_bt2_report_agrees_with_babeltrace2_text(self):
        """rl_bt2_report.py against figures derived differently from babeltrace2's text output."""
        for name, path in self.traces.items():
            with self.subTest(trace=name):
                mine = bt2_figures(self.reports[name])
                text = bttext_figures.figures(path)
                self.assertEqual(mine["events"], text["events"])
                self.assertEqual(mine["runloopEvents"], text["runloopEvents"])
                self.assertEqual(set(mine["loops"]), set(text["loops"]))
                for key, t in text["loops"].items():
                    m = mine["loops"][key]
                    self.assertEqual(t["openCallouts"], 0, "callouts left open in %s" % name)
                    for f in common.LOOP_FIELDS + ("calloutKinds", "items"):
                        self.assertEqual(m[f], t[f], "%s loop %s: %s" % (name, key, f))
                    for item, total in t["itemSumsByTimestamps"].items():
                        self.assertEqual(m["items"][item]["totalNs"], total, "%s loop %s item %s" % (name, key, item))

    _rltrace = {}

    def rltrace_reports(self):
        """{trace name: rltrace report JSON} (rltrace is required unless RL_SKIP_RLTRACE=1)."""
        if os.environ.get("RL_SKIP_RLTRACE") == "1":
            self.skipTest("RL_SKIP_RLTRACE=1")
        cmd = common.rltrace_report_command()
        if cmd is None:
            self.fail("no rltrace with `report --format json` in %s (scripts/test.sh builds it; or set RL_RLTRACE; "
                      "RL_SKIP_RLTRACE=1 skips the comparison)" % common.bin_dir())
        if not CrossCheck._rltrace:
            CrossCheck._rltrace = {name: common.run_rltrace_report(cmd, path) for name, path in self.traces.items()}
        return CrossCheck._rltrace

    def compare_with_rltrace(self, project):
        for name, theirs in self.rltrace_reports().items():
            with self.subTest(trace=name):
                diffs = common.differences(project(self.reports[name]), project(theirs))
                self.assertEqual(diffs, [], "rl_bt2_report.py (left) vs rltrace report (right) on %s (%s):\n  %s"
                                 % (name, self.traces[name], "\n  ".join(diffs[:40])))

    def test_bt2_report_agrees_with_rltrace_report(self):
        """The cross-check proper: rl_bt2_report.py against `rltrace report --format json`, on the
        figures docs/report-json.md lists."""
        self.compare_with_rltrace(common.comparable)

    def test_bt2_report_agrees_with_rltrace_report_beyond_the_list(self):
        """The other exactly defined figures: latencies (count/total/max), hangs, spins, identity."""
        self.compare_with_rltrace(common.comparable_beyond)

    def test_percentiles_within_the_stated_precision(self):
        """docs/report-json.md, "Percentiles": rltrace's are exact up to 32 values and from an
        HdrHistogram (3 significant digits) beyond; rl_bt2_report.py's are exact. So they are equal
        up to 32 values and within 0.1 % beyond, for every item and callout kind."""
        checked = 0
        for name, theirs in self.rltrace_reports().items():
            mine = self.reports[name]
            for lp_b, lp_r in zip(mine["loops"], theirs["loops"]):
                pairs = [(k, lp_b["calloutKinds"][k], v) for k, v in lp_r["calloutKinds"].items() if k in lp_b["calloutKinds"]]
                items_b = {(i["kind"], i["item"], i["name"] if i["kind"] == "block" else ""): i for i in lp_b["items"]}
                for i in lp_r["items"]:
                    key = (i["kind"], i["item"], i["name"] if i["kind"] == "block" else "")
                    if key in items_b:
                        pairs.append((key, items_b[key], i))
                for key, b, r in pairs:
                    for p in ("p50Ns", "p90Ns", "p99Ns", "p999Ns"):
                        if p not in b or p not in r or b[p] is None or r[p] is None:
                            continue
                        checked += 1
                        if r["count"] <= 32:
                            self.assertEqual(r[p], b[p], "%s %s %s" % (name, key, p))
                        else:
                            self.assertLessEqual(abs(r[p] - b[p]), 0.001 * b[p] + 1, "%s %s %s: %d vs exact %d" % (name, key, p, r[p], b[p]))
        self.assertGreater(checked, 20)

    def test_procname_of_every_loop(self):
        """docs/report-json.md: `procname` names the loop's process — its main thread's procname
        context (LTTng's is per thread) — also for a process's second loop, on rl-example's
        `compute-worker` thread, which must read `rl-example`."""
        def procnames(doc):
            return {"loop pid=%d id=%d" % (lp["pid"], lp["loop"]): lp["procname"] for lp in doc["loops"]}
        workers = 0
        for name, theirs in self.rltrace_reports().items():
            self.assertEqual(procnames(self.reports[name]), procnames(theirs), name)
            for lp in theirs["loops"]:
                if lp["threadName"] == "compute-worker":
                    workers += 1
                    self.assertEqual(lp["procname"], "rl-example", name)
        self.assertGreater(workers, 0, "no trace has rl-example's compute-worker loop")



class RecordedByRltrace(unittest.TestCase):
    """A trace as `rltrace record` makes it (its own private session daemon): no context on the
    runloop events (loops and processes from loop ids and loop_info), the watchdog's callout_cpu,
    and the state dump events in a channel of their own. rl_bt2_report.py, the babeltrace2 text
    derivation and rltrace agree on it."""

    def test_rltrace_record_default_trace(self):
        import shutil
        import subprocess
        import tempfile
        if os.environ.get("RL_SKIP_RLTRACE") == "1":
            self.skipTest("RL_SKIP_RLTRACE=1")
        cmd = common.rltrace_report_command()
        self.assertIsNotNone(cmd, "no rltrace in %s" % common.bin_dir())
        tmp = tempfile.mkdtemp(prefix="rl-analysis-record-")
        self.addCleanup(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "trace")
        r = subprocess.run([cmd[0], "record", "-o", out, "--", common.program("rl-example"), "--duration", "1.5",
                            "--clients", "2", "--requests", "50", "--inject", "hang"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace"))
        text = subprocess.run(["babeltrace2", out], stdout=subprocess.PIPE, check=True).stdout.decode(errors="replace")
        runloop = [l for l in text.splitlines() if " runloop:" in l]
        self.assertTrue(runloop)
        self.assertEqual([l for l in runloop if "vpid =" in l or "vtid =" in l], [])     # no context
        for e in ("loop_info", "item_info", "callout_cpu"):
            self.assertIn(" runloop:%s:" % e, text)
        self.assertIn(" lttng_ust_statedump:", text)
        mine, theirs = common.run_bt2_report(out), common.run_rltrace_report(cmd, out)
        for project in (common.comparable, common.comparable_beyond):
            diffs = common.differences(project(mine), project(theirs))
            self.assertEqual(diffs, [], "rl_bt2_report.py (left) vs rltrace (right):\n  " + "\n  ".join(diffs[:40]))
        figs, texts = bt2_figures(mine), bttext_figures.figures(out)
        self.assertEqual((figs["events"], figs["runloopEvents"]), (texts["events"], texts["runloopEvents"]))
        for key, t in texts["loops"].items():
            for f in common.LOOP_FIELDS + ("calloutKinds", "items"):
                self.assertEqual(figs["loops"][key][f], t[f], "loop %s: %s" % (key, f))
        self.assertEqual(sorted((lp["procname"], lp["threadName"]) for lp in mine["loops"]),
                         [("rl-example", "compute-worker"), ("rl-example", "rl-example")])
        self.assertTrue(all(lp["pid"] > 0 and lp["loop"] in (1, 2) for lp in mine["loops"]))
        hangs = [h for lp in mine["loops"] for h in lp["hangs"]]
        self.assertEqual(len(hangs), 1)
        self.assertIn(hangs[0].get("state"), ("computing", "blocked"))    # from callout_cpu


if __name__ == "__main__":
    unittest.main()
