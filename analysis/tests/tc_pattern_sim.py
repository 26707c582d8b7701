"""A small interpreter of the subset of Trace Compass's XML pattern language that
analysis/tracecompass/runloop.xml uses, run over a real trace through bt2. It lets the tests check
that the pattern's segments (what Trace Compass's latency views show) have the counts and durations
of the report, without Trace Compass.

Subset (as Trace Compass documents it): an FSM with `multiple="true"` has one pending scenario in its
initial state; when a transition of the initial state fires, the scenario moves to its target and a
new pending scenario is created. Events are offered to the FSM's scenarios in creation order; with
`consuming` (the default) the first scenario whose transition fires takes the event. A transition
fires when the event name matches and every test of `cond` (separated by ':') holds; a transition
of the initial state to a final state ends its scenario at once. Tests compare two values: an event
field, a constant, or a query of the pattern's state (`#CurrentScenario/<key>`, or a path of
constants and event fields). Actions (a transition's actions run in order, separated by ':')
store a value into such a path (`increment="true"`: add it to the long there, absent = 0), or emit
a segment from the scenario's start to the current event. Anything else in the file makes this
interpreter raise (so it cannot silently skip a construct).
"""

import xml.etree.ElementTree as ET
from collections import defaultdict

import bt2


def _path(elem):
    """The stateAttribute children of `elem` -> ('scenario', key) for '#CurrentScenario/<key>', else
    ('state', [('const', c) | ('field', name), ...]), a path in the pattern's own state."""
    attrs = elem.findall("stateAttribute")
    if attrs and attrs[0].get("value") == "#CurrentScenario" and attrs[0].get("type") == "constant":
        if len(attrs) != 2 or attrs[1].get("type") != "constant":
            raise ValueError("unsupported path in %s" % ET.tostring(elem)[:200])
        return ("scenario", attrs[1].get("value"))
    parts = []
    for a in attrs:
        t = a.get("type")
        if t == "constant":
            parts.append(("const", a.get("value")))
        elif t == "eventField":
            parts.append(("field", a.get("value")))
        else:
            raise ValueError("unsupported stateAttribute type %s" % t)
    if not parts:
        raise ValueError("empty path in %s" % ET.tostring(elem)[:200])
    return ("state", parts)


def _value(sv):
    """A stateValue element -> ('field', name) | ('const', value) | ('scenario', key) | ('state', path)."""
    t = sv.get("type")
    if set(sv.attrib) - {"type", "value", "forcedType", "increment"}:
        raise ValueError("unsupported stateValue attributes %s" % sv.attrib)
    if t == "eventField":
        return ("field", sv.get("value"))
    if t in ("string", "long", "int"):
        v = sv.get("value")
        return ("const", int(v) if t != "string" else v)
    if t == "query":
        return _path(sv)
    raise ValueError("unsupported stateValue type %s" % t)


class Pattern:
    def __init__(self, path):
        root = ET.parse(path).getroot()
        ph = root.find("pattern/patternHandler")
        self.tests = {}
        for t in ph.findall("test"):
            cond = t.find("if/condition")
            a, b = cond.findall("stateValue")
            if cond.get("operator", "eq") != "eq":
                raise ValueError("unsupported test %s" % t.get("id"))
            self.tests[t.get("id")] = (_value(a), _value(b))
        self.actions = {}
        for a in ph.findall("action"):
            steps = []
            for child in a:
                if child.tag == "stateChange":
                    sv = child.find("stateValue")
                    steps.append(("save", _path(child), _value(sv), sv.get("increment") == "true"))
                elif child.tag == "segment":
                    name = child.find("segType").get("segName")
                    fields = {}
                    for f in child.iter("segField"):
                        fields[f.get("name")] = _value(f.find("stateValue"))
                    steps.append(("segment", name, fields))
                else:
                    raise ValueError("unsupported action element %s" % child.tag)
            self.actions[a.get("id")] = steps
        self.fsms = []
        for fsm in ph.findall("fsm"):
            if fsm.get("multiple", "true") != "true" or fsm.get("consuming", "true") != "true":
                raise ValueError("unsupported fsm attributes")
            initial = [self._transition(t) for t in fsm.findall("initialState/transition")]
            states = {s.get("id"): [self._transition(t) for t in s.findall("transition")] for s in fsm.findall("state")}
            finals = {f.get("id") for f in fsm.findall("final")}
            pre = [p.get("event") for p in fsm.findall("precondition")]
            self.fsms.append({"id": fsm.get("id"), "initial": initial, "states": states, "finals": finals, "pre": pre})

    def _transition(self, t):
        return {"event": t.get("event"), "cond": [c for c in (t.get("cond") or "").split(":") if c],
                "target": t.get("target"), "action": [a for a in (t.get("action") or "").split(":") if a]}

    @staticmethod
    def _field(ev, name):
        if name.startswith("context._"):
            f = ev.common_context_field[name[len("context._"):]]
        else:
            f = ev.payload_field[name]
        if isinstance(f, bt2._StringFieldConst):
            return str(f)
        if isinstance(f, (bt2._UnsignedEnumerationFieldConst, bt2._SignedEnumerationFieldConst)):
            return f.labels[0] if f.labels else int(f)
        return int(f)

    def _key(self, ev, parts):
        return tuple(v if k == "const" else self._field(ev, v) for k, v in parts)

    def _eval(self, ev, scenario, value):
        kind, v = value
        if kind == "field":
            return self._field(ev, v)
        if kind == "const":
            return v
        if kind == "scenario":
            return scenario.get(v)
        return self.state.get(self._key(ev, v))

    def _holds(self, tr, ev, scenario):
        for c in tr["cond"]:
            a, b = self.tests[c]
            if self._eval(ev, scenario, a) != self._eval(ev, scenario, b):
                return False
        return True

    def _run_actions(self, tr, ev, ts, scenario, segments):
        for aid in tr["action"]:
            for step in self.actions[aid]:
                if step[0] == "save":
                    _, (where, key), value, increment = step
                    v = self._eval(ev, scenario, value)
                    store, k = (scenario, key) if where == "scenario" else (self.state, self._key(ev, key))
                    store[k] = (store.get(k) or 0) + v if increment else v
                else:
                    _, name, fields = step
                    seg = {"#name": name, "#duration": ts - scenario["#start"]}
                    for fname, value in fields.items():
                        seg[fname] = self._eval(ev, scenario, value)
                    segments.append(seg)

    def segments(self, trace):
        """Every segment the pattern emits on `trace`: dicts with #name, #duration and the fields."""
        segments = []
        self.state = {}                                 # the pattern's own state: path tuple -> value
        active = {f["id"]: [] for f in self.fsms}       # scenarios: dict with '#state', '#start'
        for msg in bt2.TraceCollectionMessageIterator(trace):
            if type(msg) is not bt2._EventMessageConst:
                continue
            ev = msg.event
            name = ev.name
            ts = msg.default_clock_snapshot.value
            for fsm in self.fsms:
                if fsm["pre"] and name not in fsm["pre"]:
                    continue
                scen = active[fsm["id"]]
                taken = False
                for s in list(scen):
                    for tr in fsm["states"][s["#state"]]:
                        if tr["event"] == name and self._holds(tr, ev, s):
                            self._run_actions(tr, ev, ts, s, segments)
                            if tr["target"] in fsm["finals"]:
                                scen.remove(s)
                            else:
                                s["#state"] = tr["target"]
                            taken = True
                            break
                    if taken:
                        break
                if taken:
                    continue
                for tr in fsm["initial"]:           # the pending scenario
                    if tr["event"] == name:
                        s = {"#state": tr["target"], "#start": ts}
                        self._run_actions(tr, ev, ts, s, segments)
                        if tr["target"] not in fsm["finals"]:
                            scen.append(s)
                        break
        return segments


def summary(segments):
    """{segment name: {"count", "totalNs", "maxNs"}}, and sleeps per reason."""
    out = defaultdict(lambda: {"count": 0, "totalNs": 0, "maxNs": 0})
    reasons = defaultdict(int)
    for s in segments:
        o = out[s["#name"]]
        o["count"] += 1
        o["totalNs"] += s["#duration"]
        o["maxNs"] = max(o["maxNs"], s["#duration"])
        if s["#name"] == "sleep":
            reasons[s["reason"]] += 1
    return {k: dict(v) for k, v in out.items()}, dict(reasons)
