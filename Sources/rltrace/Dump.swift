import ArgumentParser
import CTFReader
#if canImport(Glibc)
import Glibc
#endif

/// `rltrace dump TRACE…`: prints every event of every trace below the given paths, in time order.
struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every event of CTF traces in time order (babeltrace2-like text or JSON lines)."
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(name: .long, help: "Output format: text (babeltrace2-like, timestamps in seconds since the epoch) or json (one object per line).")
    var format: Format = .text

    @Argument(help: "Trace directories, or directories containing traces (LTTng session output, snapshots, relayd trees).")
    var traces: [String]

    func run() throws {
        do {
            let set = try CTFTraceSet(paths: traces)
            var it = set.makeMergedIterator()
            var formatter = CTFEventFormatter(style: format == .json ? .json : .text)
            var out = ""
            out.reserveCapacity(1 << 16)
            while try it.next() {
                formatter.format(it.current, into: &out)
                if out.utf8.count >= 1 << 16 {
                    writeStdout(out)
                    out.removeAll(keepingCapacity: true)
                }
            }
            writeStdout(out)
            for l in set.losses { warn("warning: \(l)") }
            for w in set.warnings { warn("warning: \(w)") }
        } catch let e as CTFReaderError {
            warn("rltrace: error: \(e)")
            throw ExitCode(1)
        }
    }
}

func writeStdout(_ s: String) {
    var s = s
    s.withUTF8 { buf in
        var off = 0
        while off < buf.count {
            let n = write(1, buf.baseAddress! + off, buf.count - off)
            if n <= 0 { return }
            off += n
        }
    }
}

func warn(_ s: String) {
    var line = s + "\n"
    line.withUTF8 { buf in _ = write(2, buf.baseAddress!, buf.count) }
}
