#!/usr/bin/python3
"""Writes runloop.xml (next to this file): the Trace Compass analysis has one block per callout kind,
so it is generated rather than edited by hand. Run `/usr/bin/python3 analysis/tracecompass/generate.py`
after a change; analysis/tests/test_tracecompass.py checks that runloop.xml is up to date."""
import os
import sys
KINDS = [("observer", "3", "#8E7CC3"), ("source0", "4", "#E69138"), ("source1", "5", "#3D85C6"),
         ("timer", "6", "#CC0000"), ("main_queue", "7", "#F1C232"), ("block", "8", "#45818E")]
o = []
w = o.append
w('''<?xml version="1.0" encoding="UTF-8"?>
<!--
  Trace Compass data-driven analysis of the `runloop` LTTng-UST provider (docs/tracepoints.md).
  How to load it: analysis/README.md. Checked by analysis/tests/test_tracecompass.py (schema
  validation against Trace Compass's xmlDefinition.xsd, every event and field against
  docs/tracepoints.md).

  Reads payload fields only, no context: loops are keyed by `loop_id` (the process id in its high
  32 bits, the loop's number in the low 32), which every event carries, so it works on traces
  recorded by `rltrace record` (no context) as on traces with vpid/vtid/procname. Callout events
  carry ids only (docs/tracepoints.md, "Constant pools"): items are named by `item_added` and
  `item_info`, and an exit, which names its loop alone, closes the innermost open callout of its
  kind in that loop. A named perform-block's entry carries the id of its name in its process's
  block-name pool (an id no other item of any process of the trace has), described by an
  `item_info` of kind block of any loop of the process: block names are kept by item id alone
  (BlockNames/<item_id>, blocknames/<item_id>), from every `item_info` (in traces from before the
  pool, a named block is described with its own id just before its entry).

  1. State system "runloop.tracecompass.state" and the time-graph view "Run loops":
       Loops/<loop_id>/Status          what the loop's thread does: sleeping, polling (awake in the
                                       loop's own code, between callouts), or the kind of the
                                       callout it is in (observer, source0, source1, timer,
                                       main_queue, block); "callout" after a nested run returned
                                       into its callout; null outside any run.
       Loops/<loop_id>/Callouts/<kind> the item's name while a callout of that kind runs
                                       ("main queue" for the main queue drain), null otherwise.
       Loops/<loop_id>/Items/<item_id> the item's name (its latest description).
       Loops/<loop_id>/threadName, tid, procname (loop_created, loop_info), loop, depth, mode,
       iteration, wakeReason: the latest values.
  2. Pattern "runloop.tracecompass.latency": segments for every callout (named by its kind; fields
     item_name, item, loop), every iteration (named "iteration"; fields loop, iteration) and every
     sleep (named "sleep"; fields loop, reason), so the latency views (table, scatter, density,
     statistics) work. Durations are those of docs/report-json.md: exit - entry, iteration_end -
     iteration_begin, wake - sleep_begin. An exit (an iteration_end) closes the scenario of the
     innermost open callout of its kind (the innermost open iteration) of its loop: the pattern
     keeps a depth per kind and loop (depth/<kind>/<loop_id>), each scenario the depth it opened
     at; item names are kept per loop and item (names/<loop_id>/<item_id>).

  Known limits: a callout nested in a callout of the same kind on the same loop shows the inner
  item's name until the inner exit, then null (the outer one is still running); a perform-block
  without a name, and in traces of the schema before the constant pools every block, has no
  item_name; an entry that never exits (lost events) stays open and takes the next exit of its
  kind.
-->
<tmfxml xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
	xsi:noNamespaceSchemaLocation="xmlDefinition.xsd">

<timeGraphView id="runloop.tracecompass.view.loops">
	<head>
		<analysis id="runloop.tracecompass.state" />
		<label value="Run loops" />
	</head>
	<definedValue name="sleeping" value="1" color="#D9D9D9" />
	<definedValue name="polling" value="2" color="#6AA84F" />''')
for k, v, c in KINDS:
    w('\t<definedValue name="%s" value="%s" color="%s" />' % (k, v, c))
w('''	<definedValue name="callout" value="9" color="#999999" />
	<entry path="Loops/*">
		<display type="constant" value="Status" />
		<name type="self" />
		<entry path="Callouts/*" displayText="true">
			<display type="self" />
			<name type="self" />
		</entry>
	</entry>
</timeGraphView>

<stateProvider id="runloop.tracecompass.state" version="1">
	<head>
		<traceType id="org.eclipse.linuxtools.lttng2.ust.tracetype" />
		<label value="Run loop states" />
	</head>
	<definedValue name="SLEEPING" value="1" />
	<definedValue name="POLLING" value="2" />''')
for k, v, c in KINDS:
    w('\t<definedValue name="%s" value="%s" />' % (k.upper(), v))
w('''	<definedValue name="CALLOUT" value="9" />

	<location id="Loop">
		<stateAttribute type="constant" value="Loops" />
		<stateAttribute type="eventField" value="loop_id" />
	</location>
''')

def sc(attr, value, indent="\t\t"):
    """stateChange on Loop/<attr path> with a stateValue element string; a path element
    ("field", name) is the event's field."""
    parts = "".join('%s\t<stateAttribute type="eventField" value="%s" />\n' % (indent, a[1]) if isinstance(a, tuple)
                    else '%s\t<stateAttribute type="constant" value="%s" />\n' % (indent, a) for a in attr)
    return ('%s<stateChange>\n%s\t<stateAttribute type="location" value="Loop" />\n%s%s\t%s\n%s</stateChange>'
            % (indent, indent, parts, indent, value, indent))

def handler(event, changes):
    w('\t<eventHandler eventName="%s">' % event)
    for c in changes:
        w(c)
    w('\t</eventHandler>')

handler("runloop:loop_created", [
    sc(["threadName"], '<stateValue type="eventField" value="thread_name" />'),
    sc(["tid"], '<stateValue type="eventField" value="tid" />'),
    sc(["loop"], '<stateValue type="eventField" value="loop_id" />')])
handler("runloop:loop_info", [
    sc(["threadName"], '<stateValue type="eventField" value="thread_name" />'),
    sc(["tid"], '<stateValue type="eventField" value="tid" />'),
    sc(["procname"], '<stateValue type="eventField" value="procname" />')])
handler("runloop:item_added", [sc(["Items", ("field", "item_id")], '<stateValue type="eventField" value="name" />')])
handler("runloop:item_info", [sc(["Items", ("field", "item_id")], '<stateValue type="eventField" value="name" />'),
    '\t\t<stateChange>\n\t\t\t<stateAttribute type="constant" value="BlockNames" />\n'
    '\t\t\t<stateAttribute type="eventField" value="item_id" />\n'
    '\t\t\t<stateValue type="eventField" value="name" />\n\t\t</stateChange>'])
handler("runloop:loop_destroyed", [sc(["Status"], '<stateValue type="null" />')])
handler("runloop:run_enter", [
    sc(["Status"], '<stateValue type="int" value="$POLLING" />'),
    sc(["loop"], '<stateValue type="eventField" value="loop_id" />'),
    sc(["depth"], '<stateValue type="eventField" value="depth" />'),
    sc(["mode"], '<stateValue type="eventField" value="mode" />')])
# run_exit: the outermost run leaves the loop idle; a nested run returns into its callout.
w('''	<eventHandler eventName="runloop:run_exit">
		<stateChange>
			<if>
				<condition>
					<field name="depth" />
					<stateValue type="long" value="1" />
				</condition>
			</if>
			<then>
				<stateAttribute type="location" value="Loop" />
				<stateAttribute type="constant" value="Status" />
				<stateValue type="null" />
			</then>
			<else>
				<stateAttribute type="location" value="Loop" />
				<stateAttribute type="constant" value="Status" />
				<stateValue type="int" value="$CALLOUT" />
			</else>
		</stateChange>
	</eventHandler>''')
handler("runloop:iteration_begin", [
    sc(["Status"], '<stateValue type="int" value="$POLLING" />'),
    sc(["iteration"], '<stateValue type="eventField" value="iteration" />')])
handler("runloop:sleep_begin", [sc(["Status"], '<stateValue type="int" value="$SLEEPING" />')])
handler("runloop:wake", [
    sc(["Status"], '<stateValue type="int" value="$POLLING" />'),
    sc(["wakeReason"], '<stateValue type="eventField" value="reason" forcedType="string" />')])
for k, v, c in KINDS:
    name = ('<stateValue type="string" value="main queue" />' if k == "main_queue"
            else '<stateValue type="query">\n\t\t\t\t<stateAttribute type="constant" value="BlockNames" />\n'
                 '\t\t\t\t<stateAttribute type="eventField" value="item_id" />\n\t\t\t</stateValue>' if k == "block"
            else '<stateValue type="query">\n\t\t\t\t<stateAttribute type="location" value="Loop" />\n'
                 '\t\t\t\t<stateAttribute type="constant" value="Items" />\n'
                 '\t\t\t\t<stateAttribute type="eventField" value="item_id" />\n\t\t\t</stateValue>')
    handler("runloop:%s_entry" % k, [
        sc(["Status"], '<stateValue type="int" value="$%s" />' % k.upper()),
        sc(["Callouts", k], name)])
    handler("runloop:%s_exit" % k, [
        sc(["Status"], '<stateValue type="int" value="$POLLING" />'),
        sc(["Callouts", k], '<stateValue type="null" />')])
w('</stateProvider>\n')

# ---- pattern
w('''<pattern version="1" id="runloop.tracecompass.latency">
	<head>
		<traceType id="org.eclipse.linuxtools.lttng2.ust.tracetype" />
		<label value="Run loop callouts, iterations and sleeps" />
		<viewLabelPrefix value="Run loop" />
	</head>

	<patternHandler>''')

def path(elems):
    """stateAttribute elements: ("scenario", key) -> #CurrentScenario/key; ("field", f) an event
    field; a string a constant."""
    out = []
    for e in elems:
        if isinstance(e, tuple) and e[0] == "scenario":
            out += ['<stateAttribute type="constant" value="#CurrentScenario" />',
                    '<stateAttribute type="constant" value="%s" />' % e[1]]
        elif isinstance(e, tuple):
            out.append('<stateAttribute type="eventField" value="%s" />' % e[1])
        else:
            out.append('<stateAttribute type="constant" value="%s" />' % e)
    return out

def query(elems, indent):
    return ('<stateValue type="query">\n' + "".join(indent + "\t" + a + "\n" for a in path(elems))
            + indent + '</stateValue>')

def test(tid, a, b):
    w('\t\t<test id="%s">\n\t\t\t<if>\n\t\t\t\t<condition>\n\t\t\t\t\t%s\n\t\t\t\t\t%s\n\t\t\t\t</condition>\n'
      '\t\t\t</if>\n\t\t</test>' % (tid, a, b))

LOOP = ("field", "loop_id")
test("same_loop", query([("scenario", "loop")], "\t\t\t\t\t"), '<stateValue type="eventField" value="loop_id" />')
# The innermost open scenario of a kind in the event's loop: the one opened at the loop's current
# depth of that kind.
for k in [k for k, _, _ in KINDS] + ["iteration"]:
    test("innermost_%s" % k, query([("scenario", "depth")], "\t\t\t\t\t"), query(["depth", k, LOOP], "\t\t\t\t\t"))

def change(elems, value):
    return ('\t\t\t<stateChange>\n' + "".join("\t\t\t\t" + a + "\n" for a in path(elems))
            + '\t\t\t\t' + value + '\n\t\t\t</stateChange>')

def save(key, value):
    return change([("scenario", key)], value)

def action(aid, changes):
    w('\t\t<action id="%s">' % aid)
    for c in changes:
        w(c)
    w('\t\t</action>')

# Names: the constant pool (item_added, item_info), per loop and item.
action("save_name", [change(["names", LOOP, ("field", "item_id")], '<stateValue type="eventField" value="name" />')])
action("save_block_name", [change(["blocknames", ("field", "item_id")], '<stateValue type="eventField" value="name" />')])

def opening(k):
    """Entering depth k of the loop: one deeper, and the scenario remembers the depth it opened at."""
    return [change(["depth", k, LOOP], '<stateValue type="long" value="1" increment="true" />'),
            save("depth", query(["depth", k, LOOP], "\t\t\t\t")),
            save("loop", '<stateValue type="eventField" value="loop_id" />')]

def closing(k):
    return [change(["depth", k, LOOP], '<stateValue type="long" value="-1" increment="true" />')]

for k, v, c in KINDS:
    if k == "main_queue":
        extra = [save("item", '<stateValue type="long" value="0" />'),
                 save("name", '<stateValue type="string" value="main queue" />')]
    else:
        extra = [save("item", '<stateValue type="eventField" value="item_id" />'),
                 save("name", query(["blocknames", ("field", "item_id")] if k == "block" else ["names", LOOP, ("field", "item_id")],
                                    "\t\t\t\t"))]
    action("open_%s" % k, opening(k) + extra)
    action("close_%s" % k, closing(k))
action("open_iteration", opening("iteration") + [save("iteration", '<stateValue type="eventField" value="iteration" />')])
action("close_iteration", closing("iteration"))
action("save_loop", [save("loop", '<stateValue type="eventField" value="loop_id" />')])

def segfield(name, typ, key):
    return ('\t\t\t\t\t<segField name="%s" type="%s">\n\t\t\t\t\t\t<stateValue type="query">\n'
            '\t\t\t\t\t\t\t<stateAttribute type="constant" value="#CurrentScenario" />\n'
            '\t\t\t\t\t\t\t<stateAttribute type="constant" value="%s" />\n'
            '\t\t\t\t\t\t</stateValue>\n\t\t\t\t\t</segField>' % (name, typ, key))

def segment_action(aid, segname, fields, extra=()):
    w('\t\t<action id="%s">\n\t\t\t<segment>\n\t\t\t\t<segType segName="%s" />\n\t\t\t\t<segContent>' % (aid, segname))
    for f in fields:
        w(segfield(*f))
    for e in extra:
        w(e)
    w('\t\t\t\t</segContent>\n\t\t\t</segment>\n\t\t</action>')

pos = [("loop", "long", "loop")]
for k, v, c in KINDS:
    segment_action("segment_%s" % k, k, [("item_name", "string", "name"), ("item", "long", "item")] + pos)
segment_action("segment_iteration", "iteration", pos + [("iteration", "long", "iteration")])
segment_action("segment_sleep", "sleep", pos, [
    '\t\t\t\t\t<segField name="reason" type="string">\n\t\t\t\t\t\t<stateValue type="eventField" value="reason" forcedType="string" />\n\t\t\t\t\t</segField>'])

w('''		<fsm id="names" multiple="true">
			<precondition event="runloop:item_added" />
			<precondition event="runloop:item_info" />
			<initialState>
				<transition event="runloop:item_added" target="named" action="save_name" />
				<transition event="runloop:item_info" target="named" action="save_name:save_block_name" />
			</initialState>
			<final id="named" />
		</fsm>''')
for k, v, c in KINDS:
    w('''		<fsm id="%(k)s_callout" multiple="true">
			<precondition event="runloop:%(k)s_entry" />
			<precondition event="runloop:%(k)s_exit" />
			<initialState>
				<transition event="runloop:%(k)s_entry" target="running" action="open_%(k)s" />
			</initialState>
			<state id="running">
				<transition event="runloop:%(k)s_exit" cond="same_loop:innermost_%(k)s" target="returned" action="segment_%(k)s:close_%(k)s" />
			</state>
			<final id="returned" />
		</fsm>''' % {"k": k})
w('''		<fsm id="iteration" multiple="true">
			<precondition event="runloop:iteration_begin" />
			<precondition event="runloop:iteration_end" />
			<initialState>
				<transition event="runloop:iteration_begin" target="running" action="open_iteration" />
			</initialState>
			<state id="running">
				<transition event="runloop:iteration_end" cond="same_loop:innermost_iteration" target="ended" action="segment_iteration:close_iteration" />
			</state>
			<final id="ended" />
		</fsm>
		<fsm id="sleep" multiple="true">
			<precondition event="runloop:sleep_begin" />
			<precondition event="runloop:wake" />
			<initialState>
				<transition event="runloop:sleep_begin" target="sleeping" action="save_loop" />
			</initialState>
			<state id="sleeping">
				<transition event="runloop:wake" cond="same_loop" target="woken" action="segment_sleep" />
			</state>
			<final id="woken" />
		</fsm>
	</patternHandler>
</pattern>
</tmfxml>''')
TEXT = "\n".join(o) + "\n"
if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "runloop.xml")
    with open(out, "w") as f:
        f.write(TEXT)
