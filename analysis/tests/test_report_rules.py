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

    # The schema since the constant pools (docs/tracepoints.md, "Constant pools"): exits and
    # iteration_end name no item or iteration, entries no name.

    def test_exit_without_item_closes_the_innermost_callout_of_its_kind(self):
        lp = r.Loop(0, 1)
        lp.callout_entry(0, "source0", 4)
        lp.callout_entry(10, "timer", 9)
        lp.callout_entry(20, "source0", 5)        # nested in the timer: the innermost source0
        lp.callout_exit(25, "source0")
        lp.callout_exit(30, "timer")
        lp.callout_exit(40, "source0")
        self.assertEqual({k: v["durations"] for k, v in lp.items.items()},
                         {("source0", 5, None): [5], ("timer", 9, None): [20], ("source0", 4, None): [40]})
        self.assertEqual(lp.unmatched, 0)

    def test_exit_without_item_discards_other_kinds_above_it(self):
        lp = r.Loop(0, 1)
        lp.callout_entry(0, "timer", 1)
        lp.callout_entry(5, "block", 2, "b")      # never exits
        lp.callout_exit(20, "timer")
        lp.callout_exit(21, "observer")           # no open observer
        self.assertEqual(lp.unmatched, 2)
        self.assertEqual(lp.kind_durations, {"timer": [20]})

    def test_iteration_end_without_number_closes_the_innermost(self):
        lp = r.Loop(0, 1)
        lp.iteration_begin(0, 1)
        lp.iteration_begin(10, 2)
        lp.sleep_begin(20)
        lp.wake(50, None, 3)                      # same innermost iteration: a sleep of 30
        lp.iteration_end(60)                      # ends 2
        lp.wake(70, None, 1)                      # no sleep_begin pending: a poll
        lp.iteration_end(100)                     # ends 1
        lp.iteration_end(110)                     # nothing open: ignored
        self.assertEqual((lp.iterations, lp.top_level, lp.busy_ns, lp.sleep_ns, lp.sleeps, lp.polls),
                         (2, 1, 70, 30, 1, 1))
        self.assertEqual([rec[0] for rec in lp.top_records], [1])

    def test_sleep_of_an_iteration_that_ended_is_not_paired_by_a_later_wake(self):
        lp = r.Loop(0, 1)
        lp.iteration_begin(0, 1)
        lp.iteration_begin(5, 2)
        lp.sleep_begin(10)                        # in iteration 2
        lp.iteration_end(20)                      # (damaged trace) iteration 2 ends asleep
        lp.wake(30, None, 2)                      # in iteration 1: a poll
        lp.iteration_end(40)
        self.assertEqual((lp.sleeps, lp.polls, lp.sleep_ns), (0, 1, 0))

    def test_names_come_from_the_pool_and_name_items_at_the_end(self):
        names = {}
        lp = r.Loop(0, 1, names=names)
        lp.callout_entry(0, "timer", 3)
        lp.callout_exit(5, "timer")
        self.assertEqual(lp.item_name("timer", 3), "")         # not described yet
        names[("timer", 3)] = "tick"                            # item_info / item_added
        self.assertEqual(lp.item_name("timer", 3), "tick")
        self.assertEqual(lp.item_name("timer", 3, "old-entry-name"), "tick")
        self.assertEqual(lp.item_name("main_queue", 0), "main-queue")

    def test_loop_key(self):
        self.assertEqual(r.loop_key(None, (1234 << 32) | 2), (1234, 2))
        self.assertEqual(r.loop_key(0, (1234 << 32) | 2), (1234, 2))
        self.assertEqual(r.loop_key(99, (1234 << 32) | 2), (99, 2))       # the vpid context wins
        self.assertEqual(r.loop_key(None, 17), (0, 17))                   # older traces
        self.assertEqual(r.loop_key(7, 17), (7, 17))

    def analyse(self, events):
        """The report of hand-made events (ts, name, payload) without contexts."""
        trace = r.new_trace([])
        trace.update(beginNs=events[0][0], endNs=events[-1][0], events=len(events), runloopEvents=len(events))
        return r.analyse([], decoded=(trace, [(ts, "runloop:" + n, None, None, None, f) for ts, n, f in events]))

    def test_pools_name_loops_items_and_blocks(self):
        L = (42 << 32) | 1
        doc = self.analyse([
            (0, "loop_info", {"loop_id": L, "pid": 42, "tid": 43, "procname": "svc", "thread_name": "worker"}),
            (1, "item_added", {"loop_id": L, "kind": 3, "item_id": 7, "name": "tick", "iteration": 0}),
            (2, "iteration_begin", {"loop_id": L, "iteration": 5}),
            (3, "timer_entry", {"loop_id": L, "item_id": 7, "scheduled_ns": 2}),
            (8, "timer_exit", {"loop_id": L}),
            (9, "item_info", {"loop_id": L, "kind": 5, "item_id": 300, "order": 0, "name": "job", "mode": "(unnamed)"}),
            (10, "block_entry", {"loop_id": L, "item_id": 300}),
            (14, "block_exit", {"loop_id": L}),
            (15, "block_entry", {"loop_id": L, "item_id": 301}),
            (16, "block_exit", {"loop_id": L}),
            (17, "item_info", {"loop_id": L, "kind": 1, "item_id": 8, "order": 0, "name": "late", "mode": "m"}),
            (18, "iteration_end", {"loop_id": L, "handled_source": 1, "callouts": 3}),
            (19, "item_info", {"loop_id": L, "kind": 3, "item_id": 7, "order": 0, "name": "tock", "mode": "m"}),
        ])
        lp, = doc["loops"]
        self.assertEqual((lp["pid"], lp["loop"], lp["tid"], lp["threadName"], lp["procname"]),
                         (42, 1, 43, "worker", "svc"))
        self.assertEqual(sorted((i["kind"], i["item"], i["name"], i["totalNs"]) for i in lp["items"]),
                         [("block", 0, "(unnamed)", 1), ("block", 0, "job", 4), ("timer", 7, "tock", 5)])
        self.assertEqual(lp["timerLateness"][0]["name"], "tock")
        self.assertEqual((lp["iterations"], lp["busyNs"], lp["slowest"][0]["iteration"]), (1, 16, 5))

    def test_pooled_block_names(self):
        """A block entry whose item is a pooled name's id (bit 47) takes that id's item_info, from any
        loop of the process, for every block of it — also the blocks run before the description (the
        pool is read when the report is written, as rltrace does); an undescribed one has no name."""
        A, B = (42 << 32) | 1, (42 << 32) | 2
        job, late, never, early = ((1 << 47) | (42 << 24) | n for n in (1, 2, 3, 4))
        doc = self.analyse([
            (0, "item_info", {"loop_id": B, "kind": 5, "item_id": job, "order": 0, "name": "job", "mode": "(unnamed)"}),
            (1, "block_entry", {"loop_id": A, "item_id": job}),
            (3, "block_exit", {"loop_id": A}),
            (4, "block_entry", {"loop_id": A, "item_id": job}),
            (7, "block_exit", {"loop_id": A}),
            (8, "block_entry", {"loop_id": B, "item_id": job}),
            (9, "block_exit", {"loop_id": B}),
            (10, "block_entry", {"loop_id": A, "item_id": late}),
            (11, "item_info", {"loop_id": B, "kind": 5, "item_id": late, "order": 0, "name": "late", "mode": "(unnamed)"}),
            (15, "block_exit", {"loop_id": A}),
            (16, "block_entry", {"loop_id": A, "item_id": never}),
            (17, "block_exit", {"loop_id": A}),
            (18, "block_entry", {"loop_id": A, "item_id": early}),
            (19, "block_exit", {"loop_id": A}),
            (20, "item_info", {"loop_id": B, "kind": 5, "item_id": early, "order": 0, "name": "early", "mode": "(unnamed)"}),
        ])
        items = {(lp["loop"], i["name"]): (i["count"], i["totalNs"]) for lp in doc["loops"] for i in lp["items"]}
        self.assertEqual(items, {(1, "job"): (2, 5), (2, "job"): (1, 1), (1, "late"): (1, 5), (1, ""): (1, 1), (1, "early"): (1, 1)})

    def test_loop_info_names_every_loop_of_its_process(self):
        doc = self.analyse([
            (0, "iteration_begin", {"loop_id": (42 << 32) | 2, "iteration": 1}),
            (1, "iteration_end", {"loop_id": (42 << 32) | 2, "handled_source": 0, "callouts": 0}),
            (2, "loop_info", {"loop_id": (42 << 32) | 1, "pid": 42, "tid": 42, "procname": "svc", "thread_name": "main"}),
        ])
        self.assertEqual([(lp["pid"], lp["loop"], lp["procname"]) for lp in doc["loops"]], [(42, 1, "svc"), (42, 2, "svc")])

    def test_callout_cpu_scales_the_last_reading_of_the_innermost_callout(self):
        """callout_cpu (docs/tracepoints.md): the last reading of the innermost open callout of
        that kind and item, scaled to its duration, min(duration, cpu / elapsed * duration); a
        hang's on-CPU time is the sum over its callouts, "computing" at a quarter of its busy time."""
        L = (42 << 32) | 1
        ev = [
            (0, "iteration_begin", {"loop_id": L, "iteration": 1}),
            (0, "timer_entry", {"loop_id": L, "item_id": 7, "scheduled_ns": 0}),
            (10, "callout_cpu", {"loop_id": L, "kind": 3, "item_id": 7, "elapsed_ns": 5, "cpu_ns": 5}),
            (20, "callout_cpu", {"loop_id": L, "kind": 3, "item_id": 7, "elapsed_ns": 15, "cpu_ns": 5}),   # the last counts
            (25, "callout_cpu", {"loop_id": L, "kind": 3, "item_id": 8, "elapsed_ns": 15, "cpu_ns": 15}),  # no such callout
            (30, "timer_exit", {"loop_id": L}),                    # 30 * 5 / 15 = 10
            (30, "source0_entry", {"loop_id": L, "item_id": 9}),
            (40, "callout_cpu", {"loop_id": L, "kind": 1, "item_id": 9, "elapsed_ns": 10, "cpu_ns": 30}),
            (50, "source0_exit", {"loop_id": L}),                  # 20 * 3 > 20: 20
            (50, "source0_entry", {"loop_id": L, "item_id": 9}),
            (51, "source0_exit", {"loop_id": L}),                  # no reading
            (60, "iteration_end", {"loop_id": L, "handled_source": 1, "callouts": 3}),
        ]
        trace = r.new_trace([])
        trace.update(beginNs=0, endNs=60, events=len(ev), runloopEvents=len(ev))
        doc = r.analyse([], hang_ns=50, decoded=(trace, [(ts, "runloop:" + n, None, None, None, f) for ts, n, f in ev]))
        lp, = doc["loops"]
        (h,) = lp["hangs"]
        self.assertEqual((h["busyNs"], h["onCpuNs"], h["state"]), (60, 30, "computing"))
        slowest = {(i["kind"], i["item"]): (i["maxNs"], i.get("slowestOnCpuNs"), i.get("slowestState")) for i in lp["items"]}
        self.assertEqual(slowest, {("timer", 7): (30, 10, "computing"), ("source0", 9): (20, 20, "computing")})

    def test_no_reading_no_cpu_figures(self):
        lp = r.Loop(0, 1)
        lp.iteration_begin(0, 1)
        lp.callout_entry(0, "timer", 7)
        lp.callout_cpu("timer", 7, 0, 5)           # elapsed 0: no reading
        lp.callout_exit(400, "timer")
        lp.iteration_end(400)
        self.assertIsNone(lp.top_records[0][9])
        self.assertEqual(lp.items[("timer", 7, None)]["slowest"], (400, None))
        lp.iteration_begin(500, 2)
        lp.callout_entry(500, "timer", 7)
        lp.callout_cpu("timer", 7, 100, 10)
        lp.callout_exit(900, "timer")                # 400 * 10 / 100 = 40 < 400 / 4: blocked
        lp.iteration_end(900)
        self.assertEqual(lp.top_records[1][9], 40)
        self.assertEqual(r.cpu_state(40, 400), "blocked")
        self.assertEqual(r.cpu_state(100, 400), "computing")


if __name__ == "__main__":
    unittest.main()
