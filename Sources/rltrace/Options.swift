import ArgumentParser
import Foundation
import RLAnalysis

// The options the commands share, in one place: the selection every command takes
// (docs/report-json.md, "Selection and time window"), parsed here once into the one
// ``EventFilter`` the pipeline's selection stage applies; the traces and time window of the
// analysis commands; the thresholds of the findings. (Shared.swift holds the shared helpers.)

/// Which loops and callouts: every analysis command and `top`.
struct SelectionOptions: ParsableArguments {
    @Option(help: "Only the traces of this host: its name as the traces record it (`env.hostname`, the relay daemon's HOST/ directory), a glob ('web-*'); repeatable. Other hosts' traces are not read.")
    var host: [String] = []
    @Option(help: "Only this process id (vpid context); repeatable.") var pid: [Int64] = []
    @Option(help: "Only the loop of this thread id; repeatable.") var tid: [Int64] = []
    @Option(help: "Only loops of this process name; repeatable.") var procname: [String] = []
    @Option(help: "Only this loop id; repeatable.") var loop: [UInt64] = []
    @Option(help: "Only what runs in this mode (`default` for kCFRunLoopDefaultMode): its iterations, and the callouts, sleeps and wakes in them; repeatable.")
    var mode: [String] = []
    @Option(help: "Callout figures only for this kind (observer, source0, source1, timer, main_queue, block); repeatable or comma-separated.")
    var kind: [String] = []
    @Option(help: "Callout figures only for items whose name matches this glob (e.g. 'client*').") var item: String?
    @Option(help: "Callout figures only for callouts at least this long (e.g. 1ms).") var minDuration: String?

    func validate() throws { _ = try filter() }

    /// The loop and callout filters (no time window).
    func filter() throws -> EventFilter {
        var f = EventFilter()
        f.hosts = Set(host)
        f.pids = Set(pid); f.tids = Set(tid); f.procnames = Set(procname); f.loops = Set(loop); f.modes = Set(mode)
        f.calloutKinds = try kindSet(kind)
        f.itemGlob = item
        if let m = minDuration { f.minCalloutNs = try parseThreshold(m, "--min-duration") }
        return f
    }
}

/// Options every analysis command shares: the traces, the selection and the time window.
struct AnalysisOptions: ParsableArguments {
    @Argument(help: "Trace directories, or directories containing traces (LTTng session output, snapshots).")
    var traces: [String]

    @OptionGroup var selection: SelectionOptions
    @Option(parsing: .unconditional,
            help: "Start at this time: a duration after the trace start (250ms, +1.5s) or an absolute time of the trace clock: @SECONDS as `dump` and `timeline` print it (seconds since the epoch), @YYYY-MM-DDTHH:MM:SS[.NNNNNNNNN] (UTC), or @HH:MM:SS[.NNNNNNNNN] (UTC, on the trace's first day, as `babeltrace2 --clock-gmt` prints it).")
    var begin: String?
    @Option(parsing: .unconditional, help: "Stop at this time (same forms as --begin).") var end: String?

    func validate() throws { _ = try filter() }

    /// The selection with its time window.
    func filter() throws -> EventFilter {
        var f = try selection.filter()
        for (flag, v) in [("--begin", begin), ("--end", end)] {
            if let v, v.hasPrefix("-") {
                throw ValidationError("\(flag): \(v.debugDescription) is before the trace start; give a time after it (+1.5s) or on the trace clock (@SECONDS)")
            }
        }
        if let b = begin {
            guard let t = EventFilter.TimeBound(parsing: b) else { throw ValidationError("--begin: cannot read the time \(b.debugDescription) (e.g. 1.5s, 250ms, +2s, @1763875200.123456789, @2026-11-23T09:52:24.5, @09:52:24.5)") }
            f.begin = t
        }
        if let e = end {
            guard let t = EventFilter.TimeBound(parsing: e) else { throw ValidationError("--end: cannot read the time \(e.debugDescription) (e.g. 1.5s, 250ms, +2s, @1763875200.123456789, @2026-11-23T09:52:24.5, @09:52:24.5)") }
            f.end = t
        }
        return f
    }
}

/// The thresholds every finding uses, shared by `report`, `timeline` and `hangs`.
struct ThresholdOptions: ParsableArguments {
    @Option(name: [.customLong("hang-threshold"), .customLong("threshold")], help: "An iteration busy at least this long is a hang (with a unit: 250ms).")
    var hangThreshold = "250ms"
    @Option(help: "An iteration busy at least this long counts as slow.") var slowThreshold = "100ms"
    @Option(help: "A callout at least this long is a SLOW CALLOUT finding.") var slowCallout = "10ms"
    @Option(help: "A timer fired at least this late is a LATE TIMER finding.") var lateTimer = "10ms"
    @Option(help: "This many consecutive iterations without sleeping make a spin (at least 2).") var spinIterations = 100

    func validate() throws {
        _ = try options()
        if spinIterations < 2 { throw ValidationError("--spin-iterations must be at least 2 (a spin is a run of iterations that never sleep)") }
    }

    func options() throws -> ReportOptions {
        ReportOptions(hangThresholdNs: try parseThreshold(hangThreshold, "--hang-threshold"),
                      slowThresholdNs: try parseThreshold(slowThreshold, "--slow-threshold"),
                      spinMinIterations: spinIterations,
                      slowCalloutNs: try parseThreshold(slowCallout, "--slow-callout"),
                      lateTimerNs: try parseThreshold(lateTimer, "--late-timer"))
    }
}

/// The exit codes every analysis command documents.
let exitCodesHelp = """
Exit codes: 0 ok; 1 unreadable trace or output; 2 contradictory options (a window outside the trace, an existing output file without --force); 3 no trace found; 4 no runloop events; 5 unsupported runloop schema; 6 LTTng session set-up failed (record, demo); 64 bad command line.
"""
