"""Reports across hosts (docs/production.md, "Reports across hosts"), cross-checked: a tree of two
hosts — the committed demo trace as host `alpha`, and a copy re-hosted by Tests/Tools/ctf_rehost.py
as host `beta` with its wall clock an hour ahead (or behind): another host name and trace UUID, the
same pids, tids, loop ids and monotonic readings. rl_bt2_report.py must give each host's loops
apart, with the host's clock moved onto the first host's, and agree with `rltrace report` on every
figure the cross-check compares, absolute times included.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import common

DEMO = os.path.join(common.REPO, "Tests", "rltraceTests", "Fixtures", "demo-trace")
REHOST = os.path.join(common.REPO, "Tests", "Tools", "ctf_rehost.py")


def fleet_tree(shift_ns):
    root = tempfile.mkdtemp(prefix="rl-fleet-")
    for host, shift in (("alpha", 0), ("beta", shift_ns)):
        subprocess.run([common.PYTHON, REHOST, DEMO, os.path.join(root, host, "s1"), host, str(shift)], check=True)
    return root


def by_loop(doc):
    """Per (host, pid, loop): the figures both implementations must reproduce, and those beyond."""
    out = {}
    for lp in doc["loops"]:
        one = {"trace": doc["trace"], "loops": [lp]}
        figs = dict(next(v for k, v in common.comparable(one).items() if k.startswith("loop ")))
        figs.update(next(v for k, v in common.comparable_beyond(one).items() if k.startswith("loop ")))
        out[(lp.get("host"), lp["pid"], lp["loop"])] = figs
    return out


class Fleet(unittest.TestCase):
    def check(self, shift_ns):
        root = fleet_tree(shift_ns)
        try:
            doc = common.run_bt2_report(root)
            self.assertEqual([(h["name"], h["shiftNs"], h["loops"]) for h in doc["trace"]["hosts"]],
                             [("alpha", 0, 2), ("beta", shift_ns, 2)])
            loops = by_loop(doc)
            self.assertEqual(sorted(loops), [("alpha", 5117, 17), ("alpha", 5117, 18), ("beta", 5117, 17), ("beta", 5117, 18)])
            # Each host's loops as its trace alone gives them, absolute times moved by its shift.
            for host, shift in (("alpha", 0), ("beta", shift_ns)):
                alone = by_loop(common.run_bt2_report(os.path.join(root, host)))
                for (h, pid, loop), figs in loops.items():
                    if h != host:
                        continue
                    mine = alone[(None, pid, loop)]
                    for key in ("firstNs", "lastNs"):
                        self.assertEqual(figs[key] - shift, mine[key], (host, loop, key))
                    for a, b in zip(figs["hangs"], mine["hangs"]):
                        self.assertEqual(a["beginNs"] - shift, b["beginNs"])
                    same = {k: v for k, v in figs.items() if k not in ("firstNs", "lastNs", "hangs", "spins")}
                    self.assertEqual(same, {k: v for k, v in mine.items() if k in same}, (host, loop))
            cmd = common.rltrace_report_command()
            if cmd is None or os.environ.get("RL_SKIP_RLTRACE") == "1":
                self.skipTest("no rltrace report")
            theirs = by_loop(common.run_rltrace_report(cmd, root))
            self.assertEqual(common.differences(loops, theirs), [])
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def test_a_host_an_hour_ahead(self):
        self.check(3_600_000_000_000)

    def test_a_host_an_hour_behind(self):
        self.check(-3_600_000_000_000)


if __name__ == "__main__":
    unittest.main()
