import CTFReader
/// The watchdog's view of a hang and its stack samples, as text lines (for `rltrace hangs` and
/// the text report): identical consecutive samples once, with their count.
public enum HangStackText {
    /// At most this many frames per sample are printed.
    public static let maxFrames = 32

    /// The lines (each starting with `indent`), empty when the hang has no watchdog data.
    public static func render(_ h: HangReport, indent: String) -> String {
        var o = ""
        if let w = h.watchdog {
            let what = w.kind.isEmpty ? "" : w.kind == "loop" ? " between callouts" : " in \(UntrustedText.terminal(w.kind)) \"\(UntrustedText.terminal(w.name))\" #\(w.item)"
            let how = w.durationNs.map { "stuck \(formatDuration($0))" } ?? "still stuck when the trace ends"
            o += "\(indent)watchdog hang #\(w.hangId): \(how)\(what) (threshold \(formatDuration(w.thresholdNs)), thread \(w.tid)), \(w.samples) stack sample\(w.samples == 1 ? "" : "s")\n"
        }
        for g in h.stacks ?? [] {
            let which = g.count == 1 ? "sample \(g.firstSample)" : "samples \(g.firstSample)–\(g.lastSample) (×\(g.count))"
            let when = g.count == 1 ? "at \(formatDuration(g.firstElapsedNs)) stuck" : "from \(formatDuration(g.firstElapsedNs)) to \(formatDuration(g.lastElapsedNs)) stuck"
            o += "\(indent)  \(which), \(when):\n"
            if g.frames.isEmpty { o += "\(indent)    (no frames)\n" }
            for (i, f) in g.frames.prefix(maxFrames).enumerated() {
                o += "\(indent)    #\(i) \(UntrustedText.terminal(f.text))\(f.inlined == true ? " [inlined]" : "")\n"
            }
            if g.frames.count > maxFrames { o += "\(indent)    … \(g.frames.count - maxFrames) more frames\n" }
        }
        return o
    }

    /// Why frames could not be resolved, once per reason and binary (empty when all were).
    public static func unresolvedNote(_ r: Report) -> String {
        var reasons: [String: Set<String>] = [:]
        for l in r.loops { for h in l.hangs { for g in h.stacks ?? [] { for f in g.frames {
            if let why = f.unresolved, why != "no symbol" { reasons[why, default: []].insert(f.module.map { $0.lastComponent } ?? f.address) }
        } } } }
        return reasons.sorted { $0.key < $1.key }.map { "  ⚠ stack frames shown as module+offset (\(UntrustedText.terminal($0.key))): \($0.value.sorted().prefix(6).map(UntrustedText.terminal).joined(separator: ", "))\($0.value.count > 6 ? ", …" : "")\n" }.joined()
    }
}

extension String {
    var lastComponent: String { split(separator: "/").last.map(String.init) ?? self }
}
