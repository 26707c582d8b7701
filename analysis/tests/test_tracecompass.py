"""analysis/tracecompass/runloop.xml: well-formed, valid against Trace Compass's own XML schema
(xmlDefinition.xsd, bundled under data/tracecompass-xsd), internally consistent, and naming only
events and fields that docs/tracepoints.md documents (each field checked against the event it is
read from)."""

import os
import re
import shutil
import subprocess
import unittest
import xml.etree.ElementTree as ET

import common

XML = os.path.join(common.ANALYSIS, "tracecompass", "runloop.xml")
GENERATOR = os.path.join(common.ANALYSIS, "tracecompass", "generate.py")
XSD_DIR = os.path.join(common.HERE, "data", "tracecompass-xsd")
DOC = os.path.join(common.REPO, "docs", "tracepoints.md")
XS = "{http://www.w3.org/2001/XMLSchema}"


def documented_events():
    """{event name: set of payload field names} from the headings and field tables of
    docs/tracepoints.md ("Same fields as `x`" sections inherit x's table)."""
    events, same_as = {}, {}
    current = []
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#### "):
                current = re.findall(r"`(runloop:\w+)`", line)
                for e in current:
                    events[e] = set()
                continue
            if line.startswith("#"):
                current = []
                continue
            m = re.match(r"\|\s*`(\w+)`\s*\|", line)
            if m and current:
                for e in current:
                    events[e].add(m.group(1))
            m = re.search(r"Same fields as `(\w+)`", line)
            if m and current:
                for e in current:
                    same_as[e] = "runloop:" + m.group(1)
    for e, src in same_as.items():
        events[e] |= events[src]
    return events


def documented_contexts():
    """Context names the doc's recording instructions add (`lttng add-context -u -t X ...`)."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    names = set()
    for line in re.findall(r"lttng add-context[^\n`]*", text):
        names |= set(re.findall(r"-t (\w+)", line))
    return names


def matches(pattern, name):
    return re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), name) is not None


def event_fields(elem):
    """Event field names an element reads: <field name>, and stateAttribute / stateValue of type
    eventField (recursively)."""
    out = set()
    for e in elem.iter():
        if e.tag == "field":
            out.add(e.get("name"))
        elif e.tag in ("stateAttribute", "stateValue") and e.get("type") == "eventField":
            out.add(e.get("value"))
    return out


class TraceCompassXML(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tree = ET.parse(XML)              # well-formed, or this raises
        cls.root = cls.tree.getroot()
        cls.events = documented_events()
        cls.contexts = documented_contexts()

    def test_doc_parsing_sanity(self):
        # Every event the provider defines is documented (the provider header is the other source).
        header = os.path.join(os.path.dirname(common.ANALYSIS), "Sources", "CRunLoopTracepoints", "runloop_tp.h")
        with open(header) as f:
            text = f.read()
        defined = set(re.findall(r"^LTTNG_UST_TRACEPOINT_EVENT\(\s*runloop\s*,\s*(\w+)", text, re.M))
        defined |= set(re.findall(r"^LTTNG_UST_TRACEPOINT_EVENT_INSTANCE\(\s*runloop\s*,\s*\w+\s*,\s*runloop\s*,\s*(\w+)", text, re.M))
        self.assertEqual(len(defined), 31)
        self.assertEqual(set(self.events), {"runloop:" + e for e in defined})
        self.assertEqual(self.events["runloop:block_entry"], {"loop_id", "item_id"})
        self.assertEqual(self.events["runloop:block_exit"], {"loop_id"})
        self.assertIn("scheduled_ns", self.events["runloop:timer_entry"])
        self.assertEqual(self.events["runloop:wake"], {"loop_id", "reason", "fd", "slept_ns"})
        self.assertEqual(self.events["runloop:item_info"], {"loop_id", "kind", "item_id", "order", "name", "mode"})
        self.assertIn("vtid", self.contexts)

    def test_reads_no_context(self):
        """The analysis works on traces recorded without contexts (`rltrace record`'s default):
        nothing reads a `context._` field; loops are keyed by the payload's loop_id."""
        used = set()
        for e in self.root.iter():
            if e.tag in ("stateAttribute", "stateValue") and e.get("type") == "eventField":
                used.add(e.get("value"))
            elif e.tag == "field":
                used.add(e.get("name"))
        self.assertEqual({f for f in used if f.startswith("context.")}, set())
        self.assertIn("loop_id", used)

    def test_generated_file_is_up_to_date(self):
        r = subprocess.run([common.PYTHON, GENERATOR, "/dev/stdout"], stdout=subprocess.PIPE, check=True)
        with open(XML, "rb") as f:
            self.assertEqual(r.stdout, f.read(), "runloop.xml differs from generate.py's output: rerun generate.py")

    def test_valid_against_trace_compass_schema(self):
        """Full XSD validation, as Trace Compass does when a file is imported."""
        xmllint = shutil.which("xmllint")
        self.assertIsNotNone(xmllint, "xmllint missing: scripts/install-deps.sh installs libxml2-utils")
        r = subprocess.run([xmllint, "--noout", "--schema", os.path.join(XSD_DIR, "xmlDefinition.xsd"), XML],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(r.returncode, 0, r.stdout.decode(errors="replace"))

    def test_element_and_attribute_names_are_in_the_schema(self):
        """Without a validator: every element and attribute name is one the schema declares."""
        elements, attributes = set(), set()
        for name in os.listdir(XSD_DIR):
            if name.endswith(".xsd"):
                x = ET.parse(os.path.join(XSD_DIR, name)).getroot()
                elements |= {e.get("name") for e in x.iter(XS + "element") if e.get("name")}
                attributes |= {a.get("name") for a in x.iter(XS + "attribute") if a.get("name")}
        for e in self.root.iter():
            self.assertIn(e.tag, elements)
            for a in e.attrib:
                if not a.startswith("{"):       # xsi:noNamespaceSchemaLocation
                    self.assertIn(a, attributes, "attribute %s of <%s>" % (a, e.tag))

    def check_fields(self, event_pattern, fields, where):
        evs = [e for e in self.events if matches(event_pattern, e)]
        self.assertTrue(evs, "%s: event %r is not in docs/tracepoints.md" % (where, event_pattern))
        for f in fields:
            if f.startswith("context._"):
                self.assertIn(f[len("context._"):], self.contexts, "%s: context %s" % (where, f))
                continue
            for e in evs:
                self.assertIn(f, self.events[e], "%s: field %r is not a field of %s" % (where, f, e))

    def test_state_provider_events_and_fields_are_documented(self):
        sp = self.root.find("stateProvider")
        locations = {loc.get("id"): event_fields(loc) for loc in sp.findall("location")}
        handled = set()
        for h in sp.findall("eventHandler"):
            name = h.get("eventName")
            handled.add(name)
            fields = event_fields(h)
            for a in h.iter("stateAttribute"):
                if a.get("type") == "location":
                    fields |= locations[a.get("value")]
            self.check_fields(name, fields, "eventHandler %s" % name)
        # Every event the time graph needs is handled: the callouts, sleeps and wakes, runs.
        for kind in ("observer", "source0", "source1", "timer", "main_queue", "block"):
            self.assertIn("runloop:%s_entry" % kind, handled)
            self.assertIn("runloop:%s_exit" % kind, handled)
        for e in ("sleep_begin", "wake", "iteration_begin", "run_enter", "run_exit", "loop_created", "loop_info",
                  "item_added", "item_info"):
            self.assertIn("runloop:" + e, handled)

    def test_pattern_events_and_fields_are_documented(self):
        ph = self.root.find("pattern/patternHandler")
        tests = {t.get("id"): event_fields(t) for t in ph.findall("test")}
        actions = {a.get("id"): a for a in ph.findall("action")}

        def action_fields(aid, seen=()):
            a = actions[aid]
            out = event_fields(a)
            for sub in a.findall("action"):
                out |= action_fields(sub.get("id"), seen + (aid,))
            return out

        segments = set()
        for a in actions.values():
            for st in a.iter("segType"):
                segments.add(st.get("segName"))
        self.assertEqual(segments, {"observer", "source0", "source1", "timer", "main_queue", "block",
                                    "iteration", "sleep"})
        for fsm in ph.findall("fsm"):
            for p in fsm.findall("precondition"):
                self.check_fields(p.get("event"), set(), "fsm %s precondition" % fsm.get("id"))
            state_ids = {s.get("id") for s in fsm.iter("state")} | {s.get("id") for s in fsm.iter("final")}
            for t in fsm.iter("transition"):
                fields = set()
                for c in filter(None, (t.get("cond") or "").split(":")):
                    self.assertIn(c, tests)
                    fields |= tests[c]
                for a in filter(None, (t.get("action") or "").split(":")):
                    self.assertIn(a, actions)
                    fields |= action_fields(a)
                self.assertIn(t.get("target"), state_ids)
                self.check_fields(t.get("event"), fields, "fsm %s transition on %s" % (fsm.get("id"), t.get("event")))

    def test_views_and_defined_values_are_consistent(self):
        sp = self.root.find("stateProvider")
        defined = {d.get("name"): d.get("value") for d in sp.findall("definedValue")}
        used = {v.get("value")[1:] for v in sp.iter("stateValue") if (v.get("value") or "").startswith("$")}
        self.assertTrue(used <= set(defined), used - set(defined))
        view = self.root.find("timeGraphView")
        self.assertEqual(view.find("head/analysis").get("id"), sp.get("id"))
        shown = {d.get("value"): d.get("name") for d in view.findall("definedValue")}
        for name, value in defined.items():
            self.assertEqual(shown.get(value), name.lower(), "view legend for %s" % name)
            self.assertRegex(view.find("definedValue[@value='%s']" % value).get("color"), r"^#[0-9A-F]{6}$")


class TraceCompassPatternOnRealTraces(unittest.TestCase):
    """The pattern's segments (Trace Compass's latency views), computed by tc_pattern_sim.py on the
    cross-check's recorded traces (new schema with and without contexts, and the older schema), have
    the report's callout counts, totals and maxima per kind, its iteration count, its sleeps per wake
    reason, and, in the new schema, its items' names."""

    def test_segments_match_the_report(self):
        import tc_pattern_sim
        pattern = tc_pattern_sim.Pattern(XML)
        for name, path in common.recorded_traces().items():
            with self.subTest(trace=name):
                segments = pattern.segments(path)
                segs, reasons = tc_pattern_sim.summary(segments)
                doc = common.run_bt2_report(path)
                kinds = {}
                for lp in doc["loops"]:
                    for k, v in lp["calloutKinds"].items():
                        o = kinds.setdefault(k, {"count": 0, "totalNs": 0, "maxNs": 0})
                        o["count"] += v["count"]
                        o["totalNs"] += v["totalNs"]
                        o["maxNs"] = max(o["maxNs"], v["maxNs"])
                self.assertEqual({k: v for k, v in segs.items() if k not in ("iteration", "sleep")}, kinds)
                self.assertEqual(segs.get("iteration", {}).get("count", 0), sum(lp["iterations"] for lp in doc["loops"]))
                sleeps = {}
                for lp in doc["loops"]:
                    for r, h in lp["sleepHistogram"].items():
                        sleeps[r] = sleeps.get(r, 0) + sum(h.values())
                self.assertEqual(reasons, sleeps)
                if name in common.OLD_SCHEMA_TRACES:
                    continue                    # blocks are named by their entries there, not by item_info
                # Names: every callout segment's item_name is the report's name of its item (blocks:
                # one report item per name), as described by the constant pools.
                low = 0xFFFFFFFF
                report_names = {(lp["loop"], it["kind"], it["item"]): it["name"] for lp in doc["loops"] for it in lp["items"]
                                if it["kind"] != "block"}
                report_blocks = {(lp["loop"], "block", 0, it["name"]) for lp in doc["loops"] for it in lp["items"]
                                 if it["kind"] == "block"}
                seg_names = {}
                for sg in segments:
                    if sg["#name"] in ("iteration", "sleep"):
                        continue
                    key = (sg["loop"] & low, sg["#name"], 0 if sg["#name"] == "block" else sg["item"])
                    # The report names the main queue "main-queue" and a block without a name
                    # "(unnamed)"; the segments "main queue" and nothing (no item_info describes it).
                    n = sg["item_name"]
                    n = "main-queue" if sg["#name"] == "main_queue" else "(unnamed)" if n is None and sg["#name"] == "block" else n
                    seg_names.setdefault(key, set()).add(n)
                blocks = {(k[0], "block", 0, n) for k, v in seg_names.items() if k[1] == "block" for n in v}
                self.assertEqual(blocks, report_blocks)
                self.assertEqual({k: v for k, v in seg_names.items() if k[1] != "block"},
                                 {k: {n} for k, n in report_names.items()})


if __name__ == "__main__":
    unittest.main()
