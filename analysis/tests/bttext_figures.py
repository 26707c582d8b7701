"""A second, deliberately different derivation of the cross-checked figures, for the tests.

It does not use bt2 at all: it runs the `babeltrace2 --clock-cycles` command line, parses its text
lines with regular expressions, and derives the figures of docs/report-json.md with different
algorithms than analysis/rl_bt2_report.py:

* iterations are paired by their (unique per loop) number in a dictionary (an `iteration_end`
  without a number, the schema since the constant pools, ends the latest begun of the dictionary),
  and an iteration is top-level when its time interval is not inside another completed
  iteration's interval (instead of an iteration stack);
* a sleep or poll is attributed to the top-level iteration whose interval holds its timestamps
  (instead of the innermost open iteration);
* callouts are paired per (kind, item) with one stack per key (an exit without `item_id` takes
  the item of the latest entry of its kind still open), and their total is also checked as
  Σ exit timestamps − Σ entry timestamps;
* wake reasons use babeltrace2's own enumeration labels (not our value → label table);
* blocks, one item per name in the report, are paired per block id and summed per name at the end
  (named by their entry's `name`, or by the `item_info` of kind block before it, else `(unnamed)`;
  a block whose id is a pooled name's, bit 47 set, by that id's `item_info` anywhere in the trace,
  looked up per process at the end);
* a loop is (vpid, loop_id), or, when loop_id is 2^32 or more, (its quotient by 2^32 unless the
  vpid context says it, its remainder).

It assumes a well-formed trace (no lost events), which is what the tests record.
"""

import re
import subprocess
from collections import defaultdict

LINE = re.compile(r'^\[(\d+)\] \([^)]*\) \S+ (\w+):(\w+): (.*)$')
INT_FIELD = {name: re.compile(r'\b%s = (-?\d+)' % name)
             for name in ("vpid", "loop_id", "iteration", "item_id")}
KIND = re.compile(r'\bkind = \( "(\w+)" : container = \d+ \)')
REASON = re.compile(r'\breason = \( "(\w+)" : container = \d+ \)')
CALLOUT = re.compile(r'^(observer|source0|source1|timer|main_queue|block)_(entry|exit)$')
NAME = re.compile(r'\bname = "((?:[^"\\]|\\.)*)"')


def bucket(d):
    k = 0
    while (1 << (k + 1)) <= d:
        k += 1
    return k


def events(trace):
    """(ts, provider, name, rest-of-line) per event line of `babeltrace2 --clock-cycles TRACE`."""
    out = subprocess.run(["babeltrace2", "--clock-cycles", trace], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout.decode("utf-8", "replace")
    for line in out.splitlines():
        m = LINE.match(line)
        if m is None:
            raise ValueError("unparsed babeltrace2 line: %r" % line)
        yield int(m.group(1)), m.group(2), m.group(3), m.group(4)


def intval(name, rest):
    m = INT_FIELD[name].search(rest)
    return int(m.group(1)) if m else None


def figures(trace):
    n_events = 0
    n_runloop = 0
    per_loop = defaultdict(lambda: {
        "begins": {}, "intervals": [],
        "pending_sleep": None, "sleeps": [], "polls": [], "wakeReasons": defaultdict(int),
        "open": defaultdict(list), "callouts": defaultdict(list),
        "sum_entry": defaultdict(int), "sum_exit": defaultdict(int), "block_names": {},
        "kind_order": defaultdict(list), "described_blocks": {}, "woke": [],
    })
    pooled = {}                                   # (pid, pooled block-name id) -> name
    for ts, provider, name, rest in events(trace):
        n_events += 1
        if provider != "runloop":
            continue
        n_runloop += 1
        if name == "source0_signalled":
            continue                              # emitted for the loops that may perform it: not a loop's own event
        loop_id = intval("loop_id", rest)
        if loop_id is None:
            continue
        vpid = intval("vpid", rest)
        high, low = divmod(loop_id, 1 << 32)
        if high:
            L = per_loop[(vpid or high, low)]
        else:
            L = per_loop[(vpid if vpid is not None else 0, loop_id)]
        if name == "iteration_begin":
            L["begins"][intval("iteration", rest)] = ts
            L["woke"].append(False)
        elif name == "iteration_end":
            # An iteration without a wake of its own polled and found nothing: a poll with reason
            # none at its end (docs/tracepoints.md, "wake").
            if L["woke"] and not L["woke"].pop() and L["pending_sleep"] is None:
                L["wakeReasons"]["none"] += 1
                L["polls"].append(ts)
            number = intval("iteration", rest)
            if number is None:
                b = L["begins"].popitem()[1] if L["begins"] else None
            else:
                b = L["begins"].pop(number, None)
            if b is not None:
                L["intervals"].append((b, ts))
        elif name == "item_info":
            k = KIND.search(rest)
            if k and k.group(1) == "block":
                item = intval("item_id", rest)
                if item & (1 << 47):
                    pooled[((vpid or high) if high else (vpid or 0), item)] = NAME.search(rest).group(1)
                else:
                    L["described_blocks"][item] = NAME.search(rest).group(1)
        elif name == "sleep_begin":
            L["pending_sleep"] = (intval("iteration", rest), ts)
        elif name == "wake":
            if L["woke"]:
                L["woke"][-1] = True
            reason = REASON.search(rest).group(1)
            L["wakeReasons"][reason] += 1
            p, L["pending_sleep"] = L["pending_sleep"], None
            if p is not None and p[0] == intval("iteration", rest):
                L["sleeps"].append((p[1], ts, reason))
            else:
                L["polls"].append(ts)
        else:
            m = CALLOUT.match(name)
            if m:
                kind = m.group(1)
                item = 0 if kind == "main_queue" else intval("item_id", rest)
                if item is None:                  # an exit naming its loop alone
                    order = L["kind_order"][kind]
                    while order and not L["open"][(kind, order[-1])]:
                        order.pop()
                    if not order:
                        continue                  # no entry: not a callout (would be "unmatched")
                    item = order[-1]
                key = (kind, item)
                if m.group(2) == "entry":
                    if kind == "block" and item & (1 << 47):
                        L["block_names"][item] = None     # named at the end, from the pool
                    elif kind == "block":
                        named = NAME.search(rest)
                        L["block_names"][item] = (named.group(1) if named
                                                  else L["described_blocks"].pop(item, "(unnamed)"))
                    L["open"][key].append(ts)
                    L["kind_order"][kind].append(item)
                    L["sum_entry"][key] += ts
                else:
                    if not L["open"][key]:
                        continue                  # no entry: not a callout (would be "unmatched")
                    if L["kind_order"][kind] and L["kind_order"][kind][-1] == item:
                        L["kind_order"][kind].pop()
                    L["sum_exit"][key] += ts
                    entry = L["open"][key].pop()
                    L["callouts"][key].append(ts - entry)

    loops = {}
    for key, L in per_loop.items():
        intervals = sorted(L["intervals"])
        top = []
        for b, e in intervals:
            if top and b >= top[-1][0] and e <= top[-1][1]:
                continue                          # inside the previous top-level iteration
            top.append((b, e))
        sleep_in = defaultdict(int)
        sleeps_in = defaultdict(int)
        polls_in = defaultdict(int)

        def owner(t):
            # top-level iteration holding time t (binary search over disjoint sorted intervals)
            lo, hi = 0, len(top) - 1
            while lo <= hi:
                mid = (lo + hi) // 2
                b, e = top[mid]
                if t < b:
                    hi = mid - 1
                elif t > e:
                    lo = mid + 1
                else:
                    return mid
            return None

        sleep_hist = defaultdict(lambda: defaultdict(int))
        for b, e, reason in L["sleeps"]:
            sleep_hist[reason][str(bucket(e - b))] += 1
            i = owner(b)
            if i is not None:
                sleep_in[i] += e - b
                sleeps_in[i] += 1
        for t in L["polls"]:
            i = owner(t)
            if i is not None:
                polls_in[i] += 1
        busy = [(e - b) - sleep_in[i] for i, (b, e) in enumerate(top)]
        iter_hist = defaultdict(int)
        for x in busy:
            iter_hist[str(bucket(x))] += 1

        kinds = defaultdict(lambda: {"count": 0, "totalNs": 0, "maxNs": 0})
        items = {}
        sums = {}
        unsummable = set()
        for (kind, item), ds in L["callouts"].items():
            k = kinds[kind]
            k["count"] += len(ds)
            k["totalNs"] += sum(ds)
            k["maxNs"] = max(k["maxNs"], max(ds))
            # report items: (kind, item, None); blocks (block, 0, name)
            ik = (("block", 0, L["block_names"][item] or pooled.get((key[0], item), "(unnamed)")) if kind == "block"
                  else (kind, item, None))
            it = items.setdefault(ik, {"count": 0, "totalNs": 0, "maxNs": 0})
            it["count"] += len(ds)
            it["totalNs"] += sum(ds)
            it["maxNs"] = max(it["maxNs"], max(ds))
            if L["open"][(kind, item)]:
                unsummable.add(ik)                # an entry without its exit
            else:
                sums[ik] = sums.get(ik, 0) + L["sum_exit"][(kind, item)] - L["sum_entry"][(kind, item)]
        for ik in unsummable:
            sums.pop(ik, None)
        loops[key] = {
            "iterations": len(intervals),
            "topLevelIterations": len(top),
            "busyNs": sum(busy),
            "sleepNs": sum(sleep_in.values()),
            "sleeps": sum(sleeps_in.values()),
            "polls": sum(polls_in.values()),
            "callouts": sum(k["count"] for k in kinds.values()),
            "calloutKinds": {k: dict(v) for k, v in kinds.items()},
            "items": items,
            "itemSumsByTimestamps": sums,
            "openCallouts": sum(len(v) for v in L["open"].values()),
            "wakeReasons": dict(L["wakeReasons"]),
            "sleepHistogram": {r: dict(h) for r, h in sleep_hist.items()},
            "iterationHistogram": dict(iter_hist),
        }
    return {"events": n_events, "runloopEvents": n_runloop, "loops": loops}
