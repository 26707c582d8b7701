import Foundation
import Testing
@testable import CTFReader
#if canImport(Glibc)
import Glibc
#endif

/// `Tests/Tools/`: the independent CTF writers (Python, standard library only).
private let toolsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Tools")

/// A fresh scratch directory.
private func scratch(_ name: String) -> String {
    let d = FileManager.default.temporaryDirectory.appendingPathComponent("rdiff-\(name)-\(getpid())-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d
}

/// Writes the hand-made trace `name` of `Tests/Tools/ctf_cases.py` into a new directory.
private func writeCase(_ name: String) throws -> String {
    let d = scratch(name)
    let r = try runProgram("/usr/bin/python3", [toolsDirectory.appendingPathComponent("ctf_cases.py").path, name, d], timeout: 60)
    if r.status != 0 { throw TestSetupError(message: "ctf_cases.py \(name) failed: \(r.stderr)") }
    return d
}

/// `rltrace dump DIR` and `babeltrace2 --clock-seconds DIR`, byte for byte (the first differing line is named).
private func expectDumpEqualsBabeltrace(_ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [Substring] {
    let mine = try runProgram(try productPath("rltrace"), ["dump", dir], timeout: 60)
    let bt = try runProgram("/usr/bin/babeltrace2", ["--clock-seconds", dir], timeout: 60)
    #expect(bt.status == 0 && !bt.stderr.contains(" E "), "babeltrace2 refused: \(bt.stderr.prefix(400))", sourceLocation: sourceLocation)
    #expect(mine.status == 0, "rltrace dump: \(mine.stderr)", sourceLocation: sourceLocation)
    let a = mine.stdout.split(separator: "\n", omittingEmptySubsequences: false)
    let b = bt.stdout.split(separator: "\n", omittingEmptySubsequences: false)
    if let i = zip(a, b).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
        Issue.record("first difference at line \(i + 1):\n rltrace:     \(a[i])\n babeltrace2: \(b[i])", sourceLocation: sourceLocation)
    }
    #expect(a.count == b.count, "lines: rltrace \(a.count), babeltrace2 \(b.count)", sourceLocation: sourceLocation)
    return a.filter { !$0.isEmpty }
}

@Suite("Randomized differential test and the defects it found, against babeltrace2 2.0", .serialized)
struct RandomDifferentialTests {
    /// The CI run of `scripts/reader-differential.sh`: 300 random traces from fixed seeds.
    @Test("300 random traces (seeds 1-300): rltrace dump is babeltrace2's text byte for byte")
    func randomTraces() throws {
        let r = try runProgram("/usr/bin/python3", [toolsDirectory.appendingPathComponent("ctf_random.py").path,
                                                    "--rltrace", try productPath("rltrace"), "--count", "300", "--seed", "1", "--jobs", "2"],
                               timeout: 600)
        let summary = r.stdout.split(separator: "\n").last(where: { $0.hasPrefix("reader-differential:") }) ?? ""
        #expect(r.status == 0, "\(r.stdout.split(separator: "\n").filter { !$0.contains("refuses") }.joined(separator: "\n"))\n\(r.stderr)")
        // Counted from the summary: most traces are compared (not refused by babeltrace2), none differs.
        let numbers = summary.split(separator: " ").compactMap { Int($0) }
        // "reader-differential: 300 traces (seeds 1..300): I identical, R refused by babeltrace2, D differ; T s"
        #expect(numbers.count >= 4 && numbers[0] == 300, "\(summary)")
        if numbers.count >= 4 {
            #expect(numbers[1] >= 280, "identical: \(summary)")
            #expect(numbers[3] == 0, "\(summary)")
        }
    }

    @Test("a 2.99 GHz clock with an offset: each timestamp to the nanosecond babeltrace2 prints")
    func clockRounding() throws {
        let d = try writeCase("clock")
        let lines = try expectDumpEqualsBabeltrace(d)
        #expect(lines.count == 7)
        // The conversion itself, for the cycle counts of the trace (offset 1234567891 cycles at 2992045000 Hz):
        // the offset and the value are converted apart, each truncated (babeltrace2's bt_util_ns_from_value).
        let c = CTFClock(name: "c", frequency: 2_992_045_000, offsetSeconds: 1_641_396_363, offsetCycles: 1_234_567_891)
        for cycles: UInt64 in [5183230086075223, 17946138350965620, 29410382195694242] {
            let expected = 1_641_396_363 * 1_000_000_000 + Int64(1e9 * 1_234_567_891.0 / 2_992_045_000.0)
                + Int64((1e9 * Double(cycles)) / 2_992_045_000.0)
            #expect(c.nanoseconds(fromCycles: cycles) == expected)
        }
    }

    @Test("equal timestamps in four streams: babeltrace2's order (stream class, stream instance id), not file order")
    func ties() throws {
        let lines = try expectDumpEqualsBabeltrace(try writeCase("ties"))
        // Files s0 (class 1), s1 (instance 9), s2 (instance 2), s3 (instance 5): at each time class 0 first,
        // by instance id, then class 1.
        let files = lines.map { $0.split(separator: "=").last!.trimmingCharacters(in: CharacterSet(charactersIn: " }")) }
        #expect(files == ["2", "3", "1", "0", "2", "2", "3", "3", "1", "1", "0", "0", "2", "3", "1", "0"])
    }

    @Test("packet context fields in their display base (cpu_id = 0x1), babeltrace2's own fields left out")
    func packetContextBases() throws {
        let lines = try expectDumpEqualsBabeltrace(try writeCase("pcbase"))
        #expect(lines.first?.contains(#"{ cpu_id = 0x1, flags = 0b1111111111111110, mode = 011, tag = "cpu-one" }"#) == true)
    }

    @Test("a packet at a file offset not a multiple of 8 bytes: its fields align from the packet's start")
    func alignmentFromThePacketStart() throws {
        let lines = try expectDumpEqualsBabeltrace(try writeCase("align"))
        #expect(lines.count == 3)
        #expect(lines[1].hasSuffix("{ a = 7, x = 72623859790382856, b = 8, y = 84281096 }"))
    }

    @Test("an event header without id: the stream class's only event class, whatever its id")
    func headerWithoutID() throws {
        let lines = try expectDumpEqualsBabeltrace(try writeCase("noid"))
        #expect(lines.count == 2)
    }

    @Test("arrays and sequences of empty structures at the end of the packet's content are read, as babeltrace2 reads them")
    func emptyElementsAtThePacketEnd() throws {
        let lines = try expectDumpEqualsBabeltrace(try writeCase("emptyelements"))
        #expect(lines.count == 2)
    }

    @Test("negative odd-sized integers in hexadecimal, octal and binary as babeltrace2 shows them")
    func signedBases() throws {
        let lines = try expectDumpEqualsBabeltrace(try writeCase("signedbases"))
        #expect(lines.first?.hasSuffix("{ h9 = 0xFFF, o7 = 0777, b5 = 0b11111, h26 = 0xFFFFFFF, uo10 = 01777 }") == true)
    }

    @Test("strings of 0-300 bytes at every offset: LTTng compact and large headers, skipped and decoded bodies")
    func stringsEverywhere() throws {
        let lines = try expectDumpEqualsBabeltrace(try writeCase("strings"))
        #expect(lines.count == 2 * 8 * 22)
    }

    @Test("a string written empty between strings written whole decodes empty (babeltrace2 2.0.4 prints the earlier event's value there)")
    func emptyStringAfterAFullOne() throws {
        let dir = try writeCase("emptyafter")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let mine = try runProgram(try productPath("rltrace"), ["dump", dir], timeout: 60)
        #expect(mine.status == 0, "\(mine.stderr)")
        // The writer's values, in order: the truth (babeltrace2 2.0.4 is no oracle for these).
        let names = mine.stdout.split(separator: "\n").compactMap { line -> String? in
            guard let r = line.range(of: "filename = \"") else { return nil }
            return String(line[r.upperBound...].prefix { $0 != "\"" })
        }
        let written = Array([["/etc/passwd", "", "/tmp/x", "", ""]].joined()), expected = Array(repeatElement(written, count: 20).joined())
        #expect(names == expected, "\(mine.stdout)")
    }

    @Test("a FIFO, a socket-like device and a FIFO index among the stream files: skipped with a warning, never blocks")
    func nonRegularFiles() throws {
        let d = try writeCase("noid")
        #expect(mkfifo(d + "/stream_fifo", 0o600) == 0)
        try FileManager.default.createDirectory(atPath: d + "/index", withIntermediateDirectories: true)
        #expect(mkfifo(d + "/index/stream_0.idx", 0o600) == 0)
        #expect(symlink("/dev/zero", d + "/stream_zero") == 0)
        let start = Date()
        let set = try CTFTraceSet(paths: [d])
        #expect(set.streams.count == 1)
        #expect(set.warnings.map(\.path).sorted() == [d + "/stream_fifo", d + "/stream_zero"])
        #expect(set.warnings.allSatisfy { $0.message.contains("not a regular file") })
        var it = try set.makeMergedIterator(fromNanoseconds: 0)   // reads the (FIFO) index: not used
        var n = 0
        while try it.next() { n += 1 }
        #expect(n == 2)
        #expect(Date().timeIntervalSince(start) < 10)
        let r = try runProgram(try productPath("rltrace"), ["dump", d], timeout: 30)
        #expect(r.status == 0 && r.stdout.split(separator: "\n").count == 2)
        #expect(r.stderr.contains("stream_fifo") && r.stderr.contains("a FIFO"))
        // A FIFO as the metadata: refused, naming it.
        let m = try writeCase("noid")
        try FileManager.default.removeItem(atPath: m + "/metadata")
        #expect(mkfifo(m + "/metadata", 0o600) == 0)
        let bad = try runProgram(try productPath("rltrace"), ["dump", m], timeout: 30)
        #expect(bad.status == 1 && bad.stderr.contains(m + "/metadata") && bad.stderr.contains("a FIFO"))
    }
}
