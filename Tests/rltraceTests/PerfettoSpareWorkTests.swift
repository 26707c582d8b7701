import Foundation
import Testing
import CTFReader
import LTTngControl
import RLAnalysis

// The Perfetto export's deflate as spare work of the pipeline's two threads (docs/benchmarks.md,
// "The Perfetto export: deflating in spare time"), on a recorded trace whose export fills several
// of the sink's 1 MiB buffers: wired only where there is a deflate to share, and the same bytes
// whoever deflates. (Which thread deflates how many buffers depends on timing; ByteSinkSpareWorkTests
// drive every way of sharing them deterministically.)

@Suite("the Perfetto export's deflate done by the pipeline's threads", .serialized)
struct PerfettoSpareWorkTests {
    /// `trace-workload 20000 --burst 200000` (about 600 000 events), recorded once for the suite.
    static let trace: Result<URL, Error> = Result {
        let fm = FileManager.default
        let work = fm.temporaryDirectory.appendingPathComponent("rltrace-sparework-\(getpid())")
        try? fm.removeItem(at: work)
        try fm.createDirectory(at: work, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("rltrace-sparework-\(getpid())")) }
        let dir = work.appendingPathComponent("trace")
        let daemon = try PrivateSessionDaemon.start()
        defer { daemon.stop() }
        try recordWorkload(steps: 20_000, into: dir, daemon: daemon)
        return dir
    }

    struct Exported {
        var bytes: Data
        var encodings: (helped: Int, byWriter: Int, helpers: Int)
        var offered: Bool
    }

    /// The export of the recorded trace through the pipeline on `threads` threads, to `name` in the
    /// trace's folder.
    func export(_ name: String, threads: Int, compression: PerfettoCompression = .deflate, filter: EventFilter = EventFilter()) throws -> Exported {
        let dir = try Self.trace.get()
        let path = dir.deletingLastPathComponent().appendingPathComponent(name).path
        try? FileManager.default.removeItem(atPath: path)
        let out = try ByteSink(creating: path)
        let sink = PerfettoTraceSink(out: out, options: ReportOptions(), compression: compression)
        let source = try RunLoopEventSource(paths: [dir.path])
        _ = try runPipeline(source: source, filter: filter, into: sink, threads: threads)
        try out.finish()
        defer { try? FileManager.default.removeItem(atPath: path) }
        return Exported(bytes: try Data(contentsOf: URL(fileURLWithPath: path)), encodings: out.encodings, offered: source.spareWork != nil)
    }

    /// Where two files first differ (nil: equal) — compared as a value, so that a failure reports an
    /// offset rather than a diff of megabytes.
    static func firstDifference(_ a: Data, _ b: Data) -> Int? {
        if a == b { return nil }
        return zip(a, b).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(a.count, b.count)
    }

    @Test("read on two threads, the reading thread registers to deflate and the buffers are deflated once each; the file is byte for byte the export read on one thread, whose buffers the writer deflates")
    func twoThreadsDeflateTheSameBytes() throws {
        let two = try export("two.pftrace", threads: 2)
        let one = try export("one.pftrace", threads: 1)
        #expect(two.offered && one.offered, "the pipeline hands the deflate to the source of a deflated file export")
        #expect(two.encodings.helpers == 1, "the reading thread registers as a helper: \(two.encodings)")
        #expect(one.encodings.helpers == 0, "no reading thread, no registered helper: \(one.encodings)")
        // Several buffers, each deflated once: 1 MiB of packets deflates to about 240 KB.
        let buffers = two.encodings.helped + two.encodings.byWriter
        #expect(buffers >= 4 && buffers == one.encodings.helped + one.encodings.byWriter, "\(two.encodings) against \(one.encodings)")
        #expect(two.bytes.count > 1 << 20)
        #expect(Self.firstDifference(two.bytes, one.bytes) == nil, "the deflated export differs with the deflate shared (\(two.bytes.count) against \(one.bytes.count) bytes)")
    }

    @Test("under a time window the deflate is shared too, and the bytes are the one-thread export's")
    func selectionsDeflateTheSameBytes() throws {
        var filter = EventFilter()
        filter.begin = .relative(100_000_000)
        let two = try export("two-window.pftrace", threads: 2, filter: filter)
        let one = try export("one-window.pftrace", threads: 1, filter: filter)
        #expect(two.encodings.helpers == 1)
        #expect(Self.firstDifference(two.bytes, one.bytes) == nil && two.bytes.count > 0)
    }

    @Test("nothing is offered where nothing is deflated: an export with --compression none, the Chrome export, an export to memory")
    func offeredOnlyForADeflatedFile() throws {
        let plain = try export("plain.pftrace", threads: 2, compression: .none)
        #expect(!plain.offered && plain.encodings.helpers == 0 && plain.encodings.helped == 0)
        let dir = try Self.trace.get()
        let chromeSource = try RunLoopEventSource(paths: [dir.path])
        let chromePath = dir.deletingLastPathComponent().appendingPathComponent("chrome.json").path
        let chromeOut = try ByteSink(creating: chromePath)
        defer { try? FileManager.default.removeItem(atPath: chromePath) }
        _ = try runPipeline(source: chromeSource, filter: EventFilter(), into: ChromeTraceSink(out: chromeOut), threads: 2)
        try chromeOut.finish()
        #expect(chromeSource.spareWork == nil)
        let memorySource = try RunLoopEventSource(paths: [dir.path])
        let memory = ByteSink()
        _ = try runPipeline(source: memorySource, filter: EventFilter(), into: PerfettoTraceSink(out: memory, options: ReportOptions(), compression: .deflate), threads: 2)
        #expect(memorySource.spareWork == nil)
    }
}
