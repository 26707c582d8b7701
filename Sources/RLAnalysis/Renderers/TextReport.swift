import CTFReader
/// Renders a ``Report`` for a terminal: findings first (hangs, slow callouts, late timers, spins,
/// losses) naming the items responsible, then per loop the figures of `docs/report-json.md`.
public struct TextReportRenderer {
    /// Creates a renderer (the thresholds of the findings are the report's options).
    public init() {}

    /// The report as text.
    public func render(_ r: Report) -> String {
        let slowCalloutNs = r.options.slowCalloutNs, lateTimerNs = r.options.lateTimerNs
        var o = ""
        let span = r.trace.endNs - r.trace.beginNs
        o += "rltrace report — \(r.trace.paths.count) trace\(r.trace.paths.count == 1 ? "" : "s"), \(r.trace.events) events (\(r.trace.runloopEvents) runloop), \(formatDuration(span))\n"
        if let hosts = r.trace.hosts {
            // Several hosts: each host's traces, and how its clock was put on the first host's.
            for h in hosts {
                let shift = h.shiftNs == 0 ? "its clock" : "clock \(h.shiftNs < 0 ? "−" : "+")\(formatDuration(h.shiftNs.magnitude > UInt64(Int64.max) ? .max : Int64(h.shiftNs.magnitude))) onto \(UntrustedText.terminal(hosts[0].name))'s"
                o += "  host \(UntrustedText.terminal(h.name)): \(h.loops) loop\(h.loops == 1 ? "" : "s"), \(h.paths.count) trace\(h.paths.count == 1 ? "" : "s"), \(formatDuration(h.endNs - h.beginNs)) from \(rel(h.beginNs, r)) (\(shift))\n"
                for p in h.paths { o += "    \(UntrustedText.terminal(p))\n" }
            }
        } else {
            for p in r.trace.paths { o += "  \(UntrustedText.terminal(p))\n" }
        }
        if r.trace.discardedEvents > 0 || r.trace.lostPackets > 0 {
            o += "  ⚠ DATA LOST: \(r.trace.discardedEvents) discarded events, \(r.trace.lostPackets) lost packets\n"
            for l in r.trace.losses {
                o += "    \(l.kind) \(l.count) at \(rel(l.beginNs, r))…\(rel(l.endNs, r)) (\(UntrustedText.terminal(l.stream)))\n"
            }
            o += "    figures near these ranges are incomplete\n"
        }
        for w in r.warnings where !w.hasPrefix("the trace lost data") { o += "  ⚠ \(UntrustedText.terminal(w))\n" }

        // Findings
        var findings: [String] = []
        for l in r.loops {
            let who = loopName(l, r)
            for h in l.hangs {
                let c = h.culprit.map { "\($0.kind) \"\(UntrustedText.terminal($0.name))\" (\(formatDuration($0.durationNs)))" } ?? "no callout"
                let cpu = h.onCpuNs.map { " (on CPU \(formatDuration($0)): \(h.state ?? ""))" } ?? ""
                findings.append("HANG \(who): iteration \(h.iteration) at \(rel(h.beginNs, r)) busy \(formatDuration(h.busyNs))\(cpu) — held by \(c)")
            }
            for i in l.items where i.maxNs >= slowCalloutNs && i.kind != "observer" {
                if l.hangs.contains(where: { $0.culprit?.item == i.item && $0.culprit?.kind == i.kind }) && i.count == 1 { continue }
                let cpu = i.slowestOnCpuNs.map { " (on CPU \(formatDuration($0)): \(i.slowestState ?? ""))" } ?? ""
                findings.append("SLOW CALLOUT \(who): \(i.kind) \"\(UntrustedText.terminal(i.name))\" max \(formatDuration(i.maxNs))\(cpu), p50 \(formatDuration(i.p50Ns)), \(i.count)×, total \(formatDuration(i.totalNs))")
            }
            for t in l.timerLateness where t.maxNs >= lateTimerNs {
                findings.append("LATE TIMER \(who): \"\(UntrustedText.terminal(t.name))\" up to \(formatDuration(t.maxNs)) late (p50 \(formatDuration(t.p50Ns)), \(t.count) fires)")
            }
            for s in l.spins {
                let c = s.culprit.map { " — busy with \($0.kind) \"\(UntrustedText.terminal($0.name))\"" } ?? ""
                findings.append("SPIN \(who): \(s.iterations) iterations without sleeping from \(rel(s.beginNs, r)) for \(formatDuration(s.endNs - s.beginNs))\(c)")
            }
        }
        o += "\nfindings:\n"
        o += findings.isEmpty ? "  none (no hang, slow callout, late timer or spin)\n" : findings.map { "  • \($0)\n" }.joined()
        let watched = r.loops.flatMap { l in l.hangs.filter { $0.watchdog != nil || $0.stacks != nil }.map { (l, $0) } }
        if !watched.isEmpty {
            o += "\nhang stacks (the program's watchdog):\n"
            for (l, h) in watched {
                o += "  \(loopName(l, r)) iteration \(h.iteration) at \(rel(h.beginNs, r)):\n" + HangStackText.render(h, indent: "    ")
            }
            o += HangStackText.unresolvedNote(r)
        }

        for l in r.loops {
            o += "\nloop \(l.loop) — \(hostPart(l, r))pid \(l.pid) \(l.procname.isEmpty ? "" : "\(UntrustedText.terminal(l.procname)) ")thread \(l.tid)\(l.threadName.isEmpty ? "" : " \"\(UntrustedText.terminal(l.threadName))\"")\n"
            o += "  span \(formatDuration(l.spanNs)) · \(l.iterations) iterations (\(Int(l.iterationsPerSecond.rounded()))/s) · busy \(formatDuration(l.busyNs))\(l.onCpuNs.map { " (on CPU while busy \(formatDuration($0)))" } ?? "") / asleep \(formatDuration(l.sleepNs)) (busy \(pct(l.busyRatio))) · \(String(format1(l.calloutsPerIteration))) callouts/iteration\n"
            if l.unmatchedCallouts > 0 { o += "  ⚠ \(l.unmatchedCallouts) callout entries/exits could not be paired\n" }
            if !l.calloutKinds.isEmpty {
                o += "  " + pad("callouts", 12) + lpad("count", 9) + lpad("total", 10) + lpad("p50", 9) + lpad("p90", 9) + lpad("p99", 9) + lpad("p99.9", 9) + lpad("max", 9) + "\n"
                for k in ["observer", "source0", "source1", "timer", "main_queue", "block"] {
                    guard let s = l.calloutKinds[k] else { continue }
                    o += "    " + pad(k, 10) + lpad("\(s.count)", 9) + lpad(formatDuration(s.totalNs), 10) + lpad(formatDuration(s.p50Ns), 9)
                        + lpad(formatDuration(s.p90Ns ?? 0), 9) + lpad(formatDuration(s.p99Ns), 9) + lpad(formatDuration(s.p999Ns ?? 0), 9) + lpad(formatDuration(s.maxNs), 9) + "\n"
                }
            }
            if !l.items.isEmpty {
                o += "  items by total time:\n"
                for i in l.items.prefix(12) {
                    o += "    " + pad(i.kind, 10) + pad("\"\(UntrustedText.terminal(i.name))\"" + (i.kind == "block" ? "" : " #\(i.item)"), 30) + lpad("\(i.count)×", 8) + lpad(formatDuration(i.totalNs), 10)
                        + "  p50 " + formatDuration(i.p50Ns) + "  p99 " + formatDuration(i.p99Ns) + "  max " + formatDuration(i.maxNs)
                        + (i.onCpuNs.map { "  on CPU " + formatDuration($0) } ?? "") + "\n"
                }
                if l.items.count > 12 { o += "    … \(l.items.count - 12) more\n" }
            }
            if !l.wakeReasons.isEmpty {
                o += "  wakes: " + l.wakeReasons.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { "\(UntrustedText.terminal($0.key)) \($0.value)" }.joined(separator: " · ")
                    + " · sleeps \(l.sleeps), polls \(l.polls), spurious \(l.spuriousWakes)\n"
            }
            if !l.sleepHistogram.isEmpty {
                o += "  sleep durations by wake reason:\n"
                for (reason, h) in l.sleepHistogram.sorted(by: { $0.key < $1.key }) {
                    let total = h.values.reduce(0, +)
                    o += "    \(UntrustedText.terminal(reason)) (\(total)):\n"
                    o += histogramLines(h, indent: "      ")
                }
            }
            if l.wakeToFirstCallout.count > 0 {
                let w = l.wakeToFirstCallout
                o += "  wake → first callout: p50 \(formatDuration(w.p50Ns)) · p99 \(formatDuration(w.p99Ns)) · max \(formatDuration(w.maxNs)) (\(w.count))\n"
            }
            for t in l.timerLateness {
                o += "  timer lateness \"\(UntrustedText.terminal(t.name))\": p50 \(formatDuration(t.p50Ns)) · p99 \(formatDuration(t.p99Ns)) · max \(formatDuration(t.maxNs)) (\(t.count) fires)\n"
            }
            for s in l.signalLatency {
                o += "  signal → perform \"\(UntrustedText.terminal(s.name))\": p50 \(formatDuration(s.p50Ns)) · p99 \(formatDuration(s.p99Ns)) · max \(formatDuration(s.maxNs)) (\(s.count), signalled by tid \((s.callerTids ?? []).map(String.init).joined(separator: ", ")))\n"
            }
            if l.wakeUpLatency.count > 0 {
                let w = l.wakeUpLatency
                o += "  wakeUp → wake: p50 \(formatDuration(w.p50Ns)) · p99 \(formatDuration(w.p99Ns)) · max \(formatDuration(w.maxNs)) (\(w.count), from tid \(w.callerTids.map(String.init).joined(separator: ", ")))\n"
            }
            o += "  hangs (≥ \(formatDuration(r.options.hangThresholdNs))): \(l.hangs.count) · slow iterations (≥ \(formatDuration(r.options.slowThresholdNs))): \(l.slowIterations) · spins (≥ \(r.options.spinMinIterations) iterations): \(l.spins.count)\n"
            if !l.slowest.isEmpty {
                o += "  slowest iterations:\n"
                for s in l.slowest {
                    let cs = s.callouts.prefix(3).map { "\($0.kind) \"\(UntrustedText.terminal($0.name))\" \(formatDuration($0.durationNs))" }.joined(separator: ", ")
                    o += "    #\(s.iteration) at \(rel(s.beginNs, r)) busy \(formatDuration(s.busyNs))\(cs.isEmpty ? "" : ": \(cs)")\n"
                }
            }
        }
        return o
    }

    /// `host H ` when the report spans several hosts, else "".
    func hostPart(_ l: LoopReport, _ r: Report) -> String {
        r.trace.hosts != nil ? "host \(UntrustedText.terminal(l.host ?? "")) " : ""
    }

    /// `loop N (HOST PROCESS tid T "THREAD")` — the host only when the report spans several.
    public func loopName(_ l: LoopReport, _ r: Report) -> String {
        "loop \(l.loop) (\(r.trace.hosts != nil ? "\(UntrustedText.terminal(l.host ?? "")) " : "")\(l.procname.isEmpty ? "pid \(l.pid)" : UntrustedText.terminal(l.procname)) tid \(l.tid)\(l.threadName.isEmpty ? "" : " \"\(UntrustedText.terminal(l.threadName))\""))"
    }
    func rel(_ ns: Int64, _ r: Report) -> String { "+" + formatDuration(ns - r.trace.beginNs) }
}

func pct(_ x: Double) -> String { format1(x * 100) + " %" }
func format1(_ x: Double) -> String {
    let r = (x * 10).rounded() / 10
    return r == r.rounded() ? "\(Int64(r)).0" : "\(r)"
}
func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s + String(repeating: " ", count: n - s.count) }
func lpad(_ s: String, _ n: Int) -> String { s.count >= n ? " " + s : String(repeating: " ", count: n - s.count) + s }

/// Bar lines for a log2-bucket histogram: `[lo, hi)  count  bar`.
public func histogramLines(_ h: [String: Int], indent: String, width: Int = 40) -> String {
    let buckets = h.compactMap { k, v in Int(k).map { ($0, v) } }.sorted { $0.0 < $1.0 }
    guard let maxCount = buckets.map(\.1).max(), maxCount > 0 else { return "" }
    var o = ""
    for (k, v) in buckets {
        let lo: Int64 = k == 0 ? 0 : Int64(1) << k
        let hi: Int64 = Int64(1) << (k + 1)
        let bar = String(repeating: "█", count: max(1, v * width / maxCount))
        o += indent + lpad("[\(formatDuration(lo)), \(formatDuration(hi)))", 22) + lpad("\(v)", 8) + " " + bar + "\n"
    }
    return o
}
