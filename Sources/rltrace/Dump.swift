import ArgumentParser
import CTFReader
#if canImport(Glibc)
import Glibc
#endif

/// `rltrace dump TRACE…`: prints every event of every trace below the given paths, in time order.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print every event of CTF traces in time order (babeltrace2-like text or JSON lines).",
        discussion: """
        Examples:
          rltrace dump TRACE | less
          rltrace dump TRACE --format json | jq 'select(.name == "runloop:wake")'

        The text is babeltrace2 --clock-seconds' style: [epoch seconds] (+delta) …. Losses and reader warnings go to standard error; events decoded before an error are printed.

        Exit codes: 0 ok; 1 unreadable trace or failed write (named on standard error); 3 no trace found; 64 bad command line.
        """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(name: .long, help: "Output format: text (babeltrace2-like, timestamps in seconds since the epoch) or json (one object per line).")
    var format: Format = .text

    @Argument(help: "Trace directories, or directories containing traces (LTTng session output, snapshots, relayd trees).")
    var traces: [String]

    func run() throws {
        // Events are formatted as bytes into one sink (Sources/CTFReader/Output), which writes them out in
        // chunks as it fills.
        let out = ByteSink(fd: 1)
        let missing = traces.filter { access($0, F_OK) != 0 }
        guard missing.isEmpty else {
            warn("rltrace: no CTF trace (a directory holding a `metadata` file) below \(missing.map { "\($0) (no such file or directory)" }.joined(separator: ", "))")
            throw ExitCode(3)
        }
        do {
            let set = try CTFTraceSet(paths: traces)
            var it = set.makeMergedIterator()
            var formatter = CTFEventFormatter(style: format == .json ? .json : .text)
            var events = 0
            while try it.next() {
                it.withCurrent { formatter.format($0, into: out) }
                // A failed write (a closed pipe, a full disk) ends the dump: nothing more can be written.
                events &+= 1
                if events & 0xFFF == 0 && out.writeError != 0 { break }
            }
            do { try out.finish() } catch {
                warn("rltrace: \(error)")
                throw ExitCode(1)
            }
            for l in set.losses { warn("warning: \(l)") }
            for w in set.warnings { warn("warning: \(w)") }
        } catch CTFReaderError.noTrace {
            // The wording and exit code of every other command (a path that does not exist, an empty folder).
            warn("rltrace: no CTF trace (a directory holding a `metadata` file) below \(traces.joined(separator: ", "))")
            throw ExitCode(3)
        } catch let e as CTFReaderError {
            // Every event decoded before the error is printed, then the error.
            out.flush()
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

/// Writes `s` and a newline to standard error, each of its lines in terminal form
/// (``UntrustedText/terminal(_:)``: a message may quote a name or a file name from a trace).
func warn(_ s: String) {
    var line = s.split(separator: "\n", omittingEmptySubsequences: false).map { UntrustedText.terminal(String($0)) }.joined(separator: "\n") + "\n"
    line.withUTF8 { buf in _ = write(2, buf.baseAddress!, buf.count) }
}
