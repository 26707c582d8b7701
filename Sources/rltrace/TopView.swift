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
    func restoreTerminal() {
        guard onScreen else { return }
        onScreen = false
        out("\u{1B}[?25h\u{1B}[?1049l")
        if var t = saved { tcsetattr(0, TCSANOW, &t) }
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
        var ws = winsize()
        let width = ioctl(1, UInt(TIOCGWINSZ), &ws) == 0 && ws.ws_col > 0 ? Int(ws.ws_col) : 120
        let height = ws.ws_row > 0 ? Int(ws.ws_row) : 40
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

    private func dur(_ ns: Int64?) -> String { ns.map { formatDuration($0) } ?? "-" }

    private func pad(_ s: String, _ n: Int, right: Bool = false) -> String {
        let c = s.count
        if c >= n { return String(s.prefix(n)) }
        let sp = String(repeating: " ", count: n - c)
        return right ? sp + s : s + sp
    }

    /// The snapshot as lines of text.
    func text(_ s: TopSnapshot, width: Int) -> [String] {
        var lines: [String] = []
        let span = Double(max(0, s.intervalEndNs - s.intervalBeginNs)) / 1e9
        var head = "rltrace top — \(s.wallTime) — \(s.loops.count) loop\(s.loops.count == 1 ? "" : "s") in \(s.sessions.count) session\(s.sessions.count == 1 ? "" : "s")"
        head += String(format: " — interval %.2f s", span)
        if let lag = s.lagNs, lag >= 0 { head += String(format: ", data %.2f s behind", Double(lag) / 1e9) }
        if s.hangsInProgress > 0 { head += " — \(s.hangsInProgress) HANG\(s.hangsInProgress == 1 ? "" : "S") IN PROGRESS" }
        if s.final { head += " — final (session over)" }
        lines.append(head)
        for x in s.sessions {
            lines.append("  \(UntrustedText.terminal(x.url)): \(x.openStreams)/\(x.streams) streams open, \(x.runloopEvents) runloop events, \(x.packets) packets, \(x.beacons) beacons, \(x.discardedEvents) discarded\(x.ended ? ", ended" : "")")
        }
        let hostWidth = min(20, max(4, s.loops.map { hostLabel($0, s).count }.max() ?? 4))
        lines.append(pad("HOST", hostWidth) + " " + pad("PROCESS", 22) + " " + pad("TID", 7, right: true) + " " + pad("THREAD", 12) + " "
                     + pad("LOOP", 5, right: true) + " " + pad("IT/S", 8, right: true) + " " + pad("BUSY%", 6, right: true) + " "
                     + pad("P50", 8, right: true) + " " + pad("P99", 8, right: true) + " " + pad("LATE", 4, right: true) + " "
                     + pad("SPIN", 4, right: true) + " " + pad("DISC", 5, right: true) + "  WORST / HANG")
        for r in s.loops {
            var l = pad(hostLabel(r, s), hostWidth) + " " + pad("\(UntrustedText.terminal(r.procname))[\(r.pid)]", 22) + " " + pad("\(r.tid)", 7, right: true) + " "
            l += pad(r.threadName.isEmpty ? "-" : UntrustedText.terminal(r.threadName), 12) + " " + pad("\(r.loop)", 5, right: true) + " "
            l += pad(String(format: "%.1f", r.iterationsPerSecond), 8, right: true) + " " + pad(String(format: "%.1f", r.busyRatio * 100), 6, right: true) + " "
            l += pad(dur(r.calloutP50Ns), 8, right: true) + " " + pad(dur(r.calloutP99Ns), 8, right: true) + " "
            l += pad("\(r.lateTimers)", 4, right: true) + " " + pad("\(r.spins)", 4, right: true) + " " + pad("\(r.discardedEvents)", 5, right: true) + "  "
            if let h = r.hang {
                l += "▶ HANG \(formatDuration(h.durationNs)) in \(UntrustedText.terminal(h.kind))\(h.name.isEmpty ? "" : " \"\(UntrustedText.terminal(h.name))\"") (\(UntrustedText.terminal(h.source)))"
            } else if let w = r.worst {
                l += "\(UntrustedText.terminal(w.kind)) \"\(UntrustedText.terminal(w.name))\" \(formatDuration(w.durationNs))"
            } else {
                l += "-"
            }
            if !r.hangs.isEmpty {
                l += "  [hang\(r.hangs.count == 1 ? "" : "s"): " + r.hangs.map { "\(UntrustedText.terminal($0.kind)) \"\(UntrustedText.terminal($0.name))\" \(formatDuration($0.durationNs))" }.joined(separator: ", ") + "]"
            }
            lines.append(l)
        }
        if s.loops.isEmpty { lines.append(filter.isEmpty ? "  (no loop seen yet)" : "  (no loop matches the filter \"\(UntrustedText.terminal(filter))\")") }
        return lines
    }

    private func hostLabel(_ r: TopLoopRow, _ s: TopSnapshot) -> String {
        UntrustedText.terminal(s.sessions.filter { $0.host == r.host }.count > 1 ? "\(r.host)/\(r.session)" : r.host)
    }
}
