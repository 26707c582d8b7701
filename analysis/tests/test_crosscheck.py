"""The cross-check: real traces recorded under a private LTTng session daemon (the example service,
plain and with every injected problem, and the tracing scenarios), analysed by

  1. analysis/rl_bt2_report.py (babeltrace2's Python bindings),
  2. an independent derivation from `babeltrace2 --clock-cycles` text output (bttext_figures.py),
  3. `rltrace report --format json` (the Swift implementation), when rltrace has `report`,

which must agree exactly on the figures listed at the end of docs/report-json.md.

Environment: RL_BIN_DIR (folder of rl-example, tracing-scenarios, rltrace; default .build/debug),
RL_RLTRACE (an rltrace binary), RL_REQUIRE_RLTRACE=1 (fail instead of skipping when rltrace has no
`report`), RL_ANALYSIS_TRACES=DIR (reuse traces recorded earlier into DIR/<name>).
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
        figs["items"] = {(it["kind"], it["item"]): {"count": it["count"], "totalNs": it["totalNs"],
                                                    "maxNs": it["maxNs"]} for it in lp["items"]}
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
            self.assertEqual(doc["schema"], "rltrace-report/1")
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
        self.assertEqual([h["culprit"]["name"] for h in main["hangs"]], ["hang-timer"])
        self.assertGreaterEqual(len(main["spins"]), 1)
        self.assertGreater(hangs, 0)
        self.assertGreater(spins, 0)

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

    def test_bt2_report_agrees_with_rltrace_report(self):
        """The cross-check proper: rl_bt2_report.py against `rltrace report --format json`."""
        cmd = common.rltrace_report_command()
        if cmd is None:
            msg = "rltrace has no `report --format json` yet (build rltrace, or set RL_RLTRACE)"
            if os.environ.get("RL_REQUIRE_RLTRACE") == "1":
                self.fail(msg)
            self.skipTest(msg)
        for name, path in self.traces.items():
            with self.subTest(trace=name):
                theirs = common.comparable(common.run_rltrace_report(cmd, path))
                mine = common.comparable(self.reports[name])
                diffs = common.differences(mine, theirs)
                self.assertEqual(diffs, [], "rl_bt2_report.py (left) vs rltrace report (right) on %s (%s):\n  %s"
                                 % (name, path, "\n  ".join(diffs[:40])))


if __name__ == "__main__":
    unittest.main()
