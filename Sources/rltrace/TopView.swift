import CTFReader
import Foundation
import RLAnalysis
#if canImport(Glibc)
import Glibc
#endif

/// What `rltrace top` shows: snapshots printed (--batch: text or JSON lines), or a full-screen
/// view (alternate screen, raw keys) redrawn at each refresh; the terminal is restored on exit.
final class TopView {
    enum KeyResult { case none, quit }

    let batch: Bool
    let json: Bool
    var sort: SortKey
    var descending = true
    var filter: String
    var paused = false
    /// Typing a filter after `/`.
    var editing: String?
    private var last: TopSnapshot?
    private var saved: termios?
    private var onScreen = false
    private var stdinClosed = false

    var interactive: Bool { !batch }

    init(batch: Bool, json: Bool, sort: SortKey, filter: String) {
        self.batch = batch; self.json = json; self.sort = sort; self.filter = filter
    }

    // MARK: terminal

    func enterScreen() {
        guard interactive, !onScreen else { return }
        var t = termios()
        if tcgetattr(0, &t) == 0 {
            saved = t
            var raw = t
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
            withUnsafeMutablePointer(to: &raw.c_cc) { p in
                p.withMemoryRebound(to: cc_t.self, capacity: Int(NCCS)) { cc in cc[Int(VMIN)] = 0; cc[Int(VTIME)] = 0 }
            }
            tcsetattr(0, TCSANOW, &raw)
        }
        onScreen = true
        out("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J")
        draw()
    }

    /// Leaves the alternate screen and restores the terminal's modes (harmless when not needed).
    /// The last snapshot shown is printed again on the normal screen, so that it stays on the
    /// terminal once the view ends (the alternate screen's content goes with it).
    func restoreTerminal() {
        guard onScreen else { return }
        onScreen = false
        out("\u{1B}[?25h\u{1B}[?1049l")
        if var t = saved { tcsetattr(0, TCSANOW, &t) }
        if let l = last {
            var s = l
            s.loops = arrange(s.loops)
            let width = terminalSize().width
            out(text(s, width: width).map { clip($0, width) }.joined(separator: "\n") + "\n")
        }
    }

    /// The terminal's columns and rows (120 × 40 when standard output is not a terminal).
    private func terminalSize() -> (width: Int, height: Int) {
        var ws = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &ws) == 0 else { return (120, 40) }
        return (ws.ws_col > 0 ? Int(ws.ws_col) : 120, ws.ws_row > 0 ? Int(ws.ws_row) : 40)
    }

    /// Set when standard output cannot be written (a closed pipe): the view quits.
    private(set) var outputFailed = false

    private func out(_ s: String) {
        var s = s
        s.withUTF8 { b in
            var off = 0
            while off < b.count {
                let n = write(1, b.baseAddress! + off, b.count - off)
                if n <= 0 {
                    if n < 0 && errno == EINTR { continue }
                    outputFailed = true
                    return
                }
                off += n
            }
        }
    }

    /// Waits up to `timeoutMs` for keys and handles them.
    func waitForKeys(timeoutMs: Int32) -> KeyResult {
        if stdinClosed {
            if timeoutMs > 0 { usleep(UInt32(timeoutMs) * 1000) }
            return .none
        }
        var pfd = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, timeoutMs) > 0, pfd.revents & Int16(POLLIN | POLLHUP) != 0 else { return .none }
        var buf = [UInt8](repeating: 0, count: 64)
        let n = read(0, &buf, buf.count)
        guard n > 0 else {
            // No keyboard (standard input at its end): keys are not read any more.
            if n == 0 || (errno != EINTR && errno != EAGAIN) { stdinClosed = true }
            return .none
        }
        for b in buf[0..<n] where handle(b) == .quit { return .quit }
        draw()
        return .none
    }

    private func handle(_ b: UInt8) -> KeyResult {
        if var e = editing {
            switch b {
            case 13, 10: filter = e; editing = nil
            case 27: filter = ""; editing = nil
            case 127, 8: if !e.isEmpty { e.removeLast() }; editing = e
            default: if b >= 32 && b < 127 { e.append(Character(UnicodeScalar(b))); editing = e }
            }
            return .none
        }
        switch b {
        case UInt8(ascii: "q"), UInt8(ascii: "Q"): return .quit
        case UInt8(ascii: "s"): sort = sort.next; descending = sort != .loop
        case UInt8(ascii: "S"): descending.toggle()
        case UInt8(ascii: "/"): editing = ""
        case UInt8(ascii: " "), UInt8(ascii: "p"), UInt8(ascii: "P"): paused.toggle()
        default: break
        }
        return .none
    }

    // MARK: snapshots

    func show(_ snap: TopSnapshot) {
        var s = snap
        s.loops = arrange(s.loops)
        if batch {
            if json {
                let enc = JSONEncoder()
                enc.outputFormatting = [.sortedKeys]
                let data = (try? enc.encode(s)) ?? Data()
                out(UntrustedText.hardenJSON(Array(data)) + "\n")
            } else {
                out(text(s, width: 200).joined(separator: "\n") + "\n\n")
            }
            return
        }
        if paused { last = last ?? s; draw(); return }
        last = s
        draw()
    }

    private func draw() {
        guard interactive, onScreen else { return }
        let (width, height) = terminalSize()
        var lines: [String]
        if let l = last {
            var s = l
            s.loops = arrange(s.loops)
            lines = text(s, width: width)
        } else {
            lines = ["rltrace top — waiting for the first refresh…"]
        }
        let status = editing.map { "filter: \($0)▏  (Enter applies, Esc clears)" }
            ?? "keys: s sort (\(sort.rawValue)\(descending ? " ▼" : " ▲")), S reverse, / filter\(filter.isEmpty ? "" : " \"\(filter)\""), space pause\(paused ? " [PAUSED]" : ""), q quit"
        lines = Array(lines.prefix(max(1, height - 2)))
        var o = "\u{1B}[H"
        for l in lines { o += clip(l, width) + "\u{1B}[K\n" }
        o += "\u{1B}[J\u{1B}[\(height);1H\u{1B}[7m" + clip(status, width) + "\u{1B}[0m\u{1B}[K"
        out(o)
    }

    private func clip(_ s: String, _ w: Int) -> String { s.count <= w ? s : String(s.prefix(max(0, w - 1))) + "…" }

    /// Filters and sorts the rows.
    func arrange(_ rows: [TopLoopRow]) -> [TopLoopRow] {
        var r = rows
        if !filter.isEmpty {
            let f = filter.lowercased()
            r = r.filter { row in
                [row.host, row.session, row.procname, row.threadName, "\(row.pid)", "\(row.tid)", "\(row.loop)"].contains { $0.lowercased().contains(f) }
            }
        }
        func key(_ x: TopLoopRow) -> Double {
            switch sort {
            case .busy: x.busyRatio
            case .rate: x.iterationsPerSecond
            case .p99: Double(x.calloutP99Ns ?? -1)
            case .worst: Double(x.worst?.durationNs ?? -1)
            case .hang: Double(x.hang?.durationNs ?? -1)
            case .loop: 0
            }
        }
        r.sort { a, b in
            if sort != .loop, key(a) != key(b) { return descending ? key(a) > key(b) : key(a) < key(b) }
            let ka = (a.host, a.session, a.pid, a.loop), kb = (b.host, b.session, b.pid, b.loop)
            return (sort == .loop && !descending) ? ka > kb : ka < kb
        }
        return r
    }

    /// The snapshot as lines of text, its table laid out for `width` columns (``TopLayout``).
    func text(_ s: TopSnapshot, width: Int) -> [String] {
        var lines: [String] = []
        let span = Double(max(0, s.intervalEndNs - s.intervalBeginNs)) / 1e9
        // What matters first, for a narrow terminal: hangs, the end, then the interval and time.
        var head = "rltrace top — \(s.loops.count) loop\(s.loops.count == 1 ? "" : "s") in \(s.sessions.count) session\(s.sessions.count == 1 ? "" : "s")"
        if s.hangsInProgress > 0 { head += " — \(s.hangsInProgress) HANG\(s.hangsInProgress == 1 ? "" : "S") IN PROGRESS" }
        if s.final { head += " — final (session over)" }
        head += String(format: " — interval %.2f s", span)
        if let lag = s.lagNs, lag >= 0 { head += String(format: ", data %.2f s behind", Double(lag) / 1e9) }
        head += " — \(s.wallTime)"
        lines.append(head)
        for x in s.sessions {
            lines.append("  \(UntrustedText.terminal(x.url)): \(x.openStreams)/\(x.streams) streams open, \(x.runloopEvents) runloop events, \(x.packets) packets, \(x.beacons) beacons, \(x.discardedEvents) discarded\(x.ended ? ", ended" : "")")
        }
        let hostWidth = min(20, max(4, s.loops.map { hostLabel($0, s).count }.max() ?? 4))
        let layout = TopLayout(width: width, hostWidth: hostWidth)
        lines.append(layout.header())
        for r in s.loops { lines.append(layout.row(r, host: hostLabel(r, s))) }
        if s.loops.isEmpty { lines.append(filter.isEmpty ? "  (no loop seen yet)" : "  (no loop matches the filter \"\(UntrustedText.terminal(filter))\")") }
        lines += stackLines(s.loops, width: width)
        return lines
    }

    /// Frames shown of a hang's stack sample (the innermost: where the thread is stuck, and the
    /// callers up to the loop's callout in a usual stack).
    static let stackFrames = 12

    /// Under the table, the watchdog's latest stack sample of each hang the rows show (in
    /// progress, or ended in the interval), in the rows' order, each line within `width`.
    func stackLines(_ rows: [TopLoopRow], width: Int) -> [String] {
        var lines: [String] = []
        for r in rows {
            for h in [r.hang].compactMap({ $0 }) + r.hangs {
                guard let st = h.stack, !st.frames.isEmpty else { continue }
                let what = "\(UntrustedText.terminal(h.kind))\(h.name.isEmpty ? "" : " \"\(UntrustedText.terminal(h.name))\"")"
                lines.append(clip("\(h.inProgress ? "▶ HANG" : "hang") \(UntrustedText.terminal(r.procname))[\(r.pid)] loop \(r.loop) in \(what), \(formatDuration(h.durationNs))\(TopLayout.cpuNote(h)) — stack sample \(st.sample), \(formatDuration(st.elapsedNs)) stuck:", width))
                for (i, f) in st.frames.prefix(Self.stackFrames).enumerated() {
                    lines.append(clip("    #\(i) \(UntrustedText.terminal(f.text))", width))
                }
                if st.frames.count > Self.stackFrames { lines.append(clip("    … \(st.frames.count - Self.stackFrames) more frames", width)) }
            }
        }
        return lines
    }

    private func hostLabel(_ r: TopLoopRow, _ s: TopSnapshot) -> String {
        UntrustedText.terminal(s.sessions.filter { $0.host == r.host }.count > 1 ? "\(r.host)/\(r.session)" : r.host)
    }
}
