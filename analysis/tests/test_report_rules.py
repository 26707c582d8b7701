"""The per-loop rules of docs/report-json.md on hand-made event sequences (no trace needed):
iteration stack, nesting, discarding, sleeps vs polls, callout matching, buckets, percentiles."""

import unittest

import common  # noqa: F401  (puts analysis/ on sys.path)
import rl_bt2_report as r


class Rules(unittest.TestCase):
    def test_log2_bucket(self):
        self.assertEqual([r.log2_bucket(d) for d in (0, 1, 2, 3, 4, 1023, 1024, 1025)],
                         [0, 0, 1, 1, 2, 9, 10, 10])

    def test_nearest_rank(self):
        v = list(range(1, 101))
        self.assertEqual(r.nearest_rank(v, 50), 50)
        self.assertEqual(r.nearest_rank(v, 99), 99)
        self.assertEqual(r.nearest_rank(v, 99.9), 100)
        self.assertEqual(r.nearest_rank([7], 50), 7)
        self.assertEqual(r.nearest_rank([], 50), 0)

    def test_iteration_with_sleep_and_poll(self):
        lp = r.Loop(0, 1)
        lp.iteration_begin(100, 1)
        lp.sleep_begin(110, 1)
        lp.wake(150, 1, 3)            # timer: slept 40
        lp.iteration_end(160, 1)
        lp.iteration_begin(200, 2)
        lp.wake(205, 2, 1)            # poll (no sleep_begin)
        lp.iteration_end(210, 2)
        self.assertEqual((lp.iterations, lp.top_level), (2, 2))
        self.assertEqual((lp.busy_ns, lp.sleep_ns, lp.sleeps, lp.polls), (20 + 10, 40, 1, 1))
        self.assertEqual(lp.wake_reasons, {"timer": 1, "timeout": 1})
        self.assertEqual(lp.sleep_hist, {"timer": {"5": 1}})
        self.assertEqual(lp.iteration_hist, {"4": 1, "3": 1})

    def test_sleep_of_other_iteration_is_a_poll(self):
        lp = r.Loop(0, 1)
        lp.iteration_begin(0, 5)
        lp.sleep_begin(1, 4)          # stale number: the wake below is a poll
        lp.wake(3, 5, 2)
        lp.iteration_end(4, 5)
        self.assertEqual((lp.sleeps, lp.polls, lp.sleep_ns, lp.busy_ns), (0, 1, 0, 4))

    def test_nested_iteration_sleep_counts_for_the_top_level_one(self):
        lp = r.Loop(0, 1)
        lp.iteration_begin(0, 1)
        lp.callout_entry(10, "source0", 7, "outer")
        lp.iteration_begin(20, 2)      # nested run inside the callout
        lp.sleep_begin(30, 2)
        lp.wake(80, 2, 1)
        lp.iteration_end(90, 2)
        lp.callout_exit(95, "source0", 7)
        lp.iteration_end(100, 1)
        self.assertEqual((lp.iterations, lp.top_level), (2, 1))
        self.assertEqual((lp.busy_ns, lp.sleep_ns, lp.sleeps), (50, 50, 1))
        self.assertEqual(lp.kind_durations, {"source0": [85]})
        self.assertEqual(lp.iteration_hist, {"5": 1})

    def test_end_discards_open_iterations_above_and_unmatched_end_is_ignored(self):
        lp = r.Loop(0, 1)
        lp.iteration_begin(0, 1)
        lp.iteration_begin(10, 2)      # never ended
        lp.iteration_end(50, 1)
        lp.iteration_end(60, 9)        # no such open iteration
        self.assertEqual((lp.iterations, lp.top_level, lp.busy_ns), (1, 1, 50))
        self.assertEqual(lp.stack, [])

    def test_callout_matching(self):
        lp = r.Loop(0, 1)
        lp.callout_entry(0, "timer", 1, "a")
        lp.callout_entry(5, "block", 2, "b")      # never exits: discarded by the timer's exit
        lp.callout_exit(20, "timer", 1)
        lp.callout_exit(25, "observer", 3)        # no entry
        lp.callout_entry(30, "observer", 3, "o")
        lp.callout_exit(31, "observer", 3)
        self.assertEqual(lp.unmatched, 2)
        self.assertEqual(lp.kind_durations, {"timer": [20], "observer": [1]})
        self.assertEqual(set(lp.items), {("timer", 1, None), ("observer", 3, None)})

    def test_blocks_are_one_item_per_name(self):
        lp = r.Loop(0, 1)
        for i, (name, d) in enumerate([("job", 3), ("job", 5), ("other", 7), ("job", 2)]):
            lp.callout_entry(100 * i, "block", 1000 + i, name)
            lp.callout_exit(100 * i + d, "block", 1000 + i)
        self.assertEqual({k: v["durations"] for k, v in lp.items.items()},
                         {("block", 0, "job"): [3, 5, 2], ("block", 0, "other"): [7]})

    def test_same_item_nested_matches_innermost(self):
        lp = r.Loop(0, 1)
        lp.callout_entry(0, "source0", 4, "s")
        lp.callout_entry(10, "source0", 4, "s")
        lp.callout_exit(15, "source0", 4)
        lp.callout_exit(40, "source0", 4)
        self.assertEqual(sorted(lp.items[("source0", 4, None)]["durations"]), [5, 40])
        self.assertEqual(lp.unmatched, 0)


if __name__ == "__main__":
    unittest.main()
