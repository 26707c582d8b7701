import Foundation
import Testing

/// `rltrace dump` writes through the one byte sink every writer uses (Sources/CTFReader/Output): a
/// failed write is reported with what could not be written, as the other commands report theirs.
/// Runs rltrace with standard output on /dev/full (every write fails with ENOSPC): its exit status
/// and standard error; nil where there is no /dev/full.
func rltraceToFullDevice(_ args: [String]) throws -> (status: Int32, stderr: String)? {
    guard let full = FileHandle(forWritingAtPath: "/dev/full") else { return nil }
    let p = Process()
    p.executableURL = binDir.appendingPathComponent("rltrace")
    p.arguments = args
    p.standardOutput = full
    let err = Pipe()
    p.standardError = err
    try p.run()
    let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    return (p.terminationStatus, message)
}

@Suite("dump's output")
struct DumpOutputTests {
    @Test("a write error (standard output on a full device) is named on standard error, exit 1")
    func writeErrorIsReported() throws {
        guard let r = try rltraceToFullDevice(["dump", demoTrace]) else { return }
        #expect(r.status == 1)
        #expect(r.stderr == "rltrace: cannot write <stdout>: No space left on device\n")
    }

    @Test("dump to a pipe writes every event's line, in chunks, exactly as to a file")
    func pipeAndFileAgree() throws {
        let piped = try run("rltrace", ["dump", demoTrace])
        #expect(piped.status == 0)
        let path = NSTemporaryDirectory() + "rltrace-dump-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).txt"
        defer { unlink(path) }
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let file = try #require(FileHandle(forWritingAtPath: path))
        let p = Process()
        p.executableURL = binDir.appendingPathComponent("rltrace")
        p.arguments = ["dump", demoTrace]
        p.standardOutput = file
        p.standardError = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        let written = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        #expect(written == piped.out)
        #expect(written.split(separator: "\n").count == 26_610)
        #expect(written.utf8.count > 2 << 20)   // more than a 1 MiB chunk to a file, many 64 KiB ones to a pipe
    }
}
