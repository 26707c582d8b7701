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

  Needs the vtid context in the trace (`lttng add-context -u -t vtid`, as every recording in this
  project does): loop threads are keyed by `context._vtid`.

  1. State system "runloop.tracecompass.state" and the time-graph view "Run loops":
       Threads/<vtid>/Status          what the loop thread does: sleeping, polling (awake in the
                                      loop's own code, between callouts), or the kind of the
                                      callout it is in (observer, source0, source1, timer,
                                      main_queue, block); "callout" after a nested run returned
                                      into its callout; null outside any run.
       Threads/<vtid>/Callouts/<kind> the item's name while a callout of that kind runs
                                      ("main queue" for the main queue drain), null otherwise.
       Threads/<vtid>/threadName, loop, depth, mode, iteration, wakeReason: the latest values.
  2. Pattern "runloop.tracecompass.latency": segments for every callout (named by its kind; fields
     item_name, item, loop, tid, iteration), every iteration (named "iteration") and every sleep (named
     "sleep"; field reason), so the latency views (table, scatter, density, statistics) work.
     Durations are those of docs/report-json.md: exit - entry, iteration_end - iteration_begin,
     wake - sleep_begin.

  Known limits: a callout nested in a callout of the same kind on the same thread shows the inner
  item's name until the inner exit, then null (the outer one is still running); two nested callouts
  of the same item may pair an exit with the outer entry.
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
	<entry path="Threads/*">
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

	<location id="Thread">
		<stateAttribute type="constant" value="Threads" />
		<stateAttribute type="eventField" value="context._vtid" />
	</location>
''')

def sc(attr, value, indent="\t\t"):
    """stateChange on Thread/<attr path> with a stateValue element string."""
    parts = "".join('%s\t<stateAttribute type="constant" value="%s" />\n' % (indent, a) for a in attr)
    return ('%s<stateChange>\n%s\t<stateAttribute type="location" value="Thread" />\n%s%s\t%s\n%s</stateChange>'
            % (indent, indent, parts, indent, value, indent))

def handler(event, changes):
    w('\t<eventHandler eventName="%s">' % event)
    for c in changes:
        w(c)
    w('\t</eventHandler>')

handler("runloop:loop_created", [
    sc(["threadName"], '<stateValue type="eventField" value="thread_name" />'),
    sc(["loop"], '<stateValue type="eventField" value="loop_id" />')])
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
				<stateAttribute type="location" value="Thread" />
				<stateAttribute type="constant" value="Status" />
				<stateValue type="null" />
			</then>
			<else>
				<stateAttribute type="location" value="Thread" />
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
            else '<stateValue type="eventField" value="name" />')
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

def scen(name):
    return ('<stateValue type="query">\n\t\t\t\t\t\t<stateAttribute type="constant" value="#CurrentScenario" />\n'
            '\t\t\t\t\t\t<stateAttribute type="constant" value="%s" />\n\t\t\t\t\t</stateValue>' % name)

for tid, field, key in (("same_thread", "context._vtid", "tid"), ("same_item", "item_id", "item"),
                        ("same_iteration", "iteration", "iteration")):
    w('''		<test id="%s">
			<if>
				<condition>
					%s
					<stateValue type="eventField" value="%s" />
				</condition>
			</if>
		</test>''' % (tid, scen(key), field))

def save(key, value):
    return ('\t\t\t<stateChange>\n\t\t\t\t<stateAttribute type="constant" value="#CurrentScenario" />\n'
            '\t\t\t\t<stateAttribute type="constant" value="%s" />\n\t\t\t\t%s\n\t\t\t</stateChange>' % (key, value))

def action(aid, changes):
    w('\t\t<action id="%s">' % aid)
    for c in changes:
        w(c)
    w('\t\t</action>')

common_saves = [save("tid", '<stateValue type="eventField" value="context._vtid" />'),
                save("loop", '<stateValue type="eventField" value="loop_id" />'),
                save("iteration", '<stateValue type="eventField" value="iteration" />')]
action("save_callout", common_saves + [save("item", '<stateValue type="eventField" value="item_id" />'),
                                       save("name", '<stateValue type="eventField" value="name" />')])
action("save_main_queue", common_saves + [save("item", '<stateValue type="long" value="0" />'),
                                          save("name", '<stateValue type="string" value="main queue" />')])
action("save_loop_position", common_saves)

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

pos = [("tid", "long", "tid"), ("loop", "long", "loop"), ("iteration", "long", "iteration")]
for k, v, c in KINDS:
    segment_action("segment_%s" % k, k, [("item_name", "string", "name"), ("item", "long", "item")] + pos)
segment_action("segment_iteration", "iteration", pos)
segment_action("segment_sleep", "sleep", pos, [
    '\t\t\t\t\t<segField name="reason" type="string">\n\t\t\t\t\t\t<stateValue type="eventField" value="reason" forcedType="string" />\n\t\t\t\t\t</segField>'])

for k, v, c in KINDS:
    save_id = "save_main_queue" if k == "main_queue" else "save_callout"
    cond = "same_thread" if k == "main_queue" else "same_thread:same_item"
    w('''		<fsm id="%(k)s_callout" multiple="true">
			<precondition event="runloop:%(k)s_entry" />
			<precondition event="runloop:%(k)s_exit" />
			<initialState>
				<transition event="runloop:%(k)s_entry" target="running" action="%(save)s" />
			</initialState>
			<state id="running">
				<transition event="runloop:%(k)s_exit" cond="%(cond)s" target="returned" action="segment_%(k)s" />
			</state>
			<final id="returned" />
		</fsm>''' % {"k": k, "save": save_id, "cond": cond})
w('''		<fsm id="iteration" multiple="true">
			<precondition event="runloop:iteration_begin" />
			<precondition event="runloop:iteration_end" />
			<initialState>
				<transition event="runloop:iteration_begin" target="running" action="save_loop_position" />
			</initialState>
			<state id="running">
				<transition event="runloop:iteration_end" cond="same_thread:same_iteration" target="ended" action="segment_iteration" />
			</state>
			<final id="ended" />
		</fsm>
		<fsm id="sleep" multiple="true">
			<precondition event="runloop:sleep_begin" />
			<precondition event="runloop:wake" />
			<initialState>
				<transition event="runloop:sleep_begin" target="sleeping" action="save_loop_position" />
			</initialState>
			<state id="sleeping">
				<transition event="runloop:wake" cond="same_thread:same_iteration" target="woken" action="segment_sleep" />
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
