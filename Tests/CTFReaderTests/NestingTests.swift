import Foundation
import Testing
@testable import CTFReader
#if canImport(Glibc)
import Glibc
#endif

/// Types nested as deep as the reader accepts (Nesting.swift): ctf-testsuite's
/// `stress/struct-nest-n-deep` shape — one event whose payload is `depth` structures inside one
/// another around a `uint8_t` — read and printed as babeltrace2 prints it, one level more refused,
/// and a thread whose stack cannot take the values refused with what to do, never a crash.
@Suite("types nested 2048 deep: read as babeltrace2 reads them, or refused, never a crash", .serialized)
struct NestingTests {
    /// A trace of one event whose payload nests `depth` structures (`s_depth_<depth-1>` outermost)
    /// around `uint8_t field = 42`, as ctf-testsuite's generator writes it; or, with `arrays`, one
    /// field of `depth` one-element array dimensions.
    static func write(depth: Int, arrays: Bool = false) throws -> String {
        var m = """
        /* CTF 1.8 */
        typealias integer { size = 8; align = 8; signed = false; base = 10; } := uint8_t;
        typealias integer { size = 32; align = 32; signed = false; base = hex; } := uint32_t;
        trace { major = 1; minor = 8; uuid = "2a6422d0-6cee-11e0-8c08-cb07d7b3a564"; byte_order = le;
            packet.header := struct { uint32_t magic; uint8_t uuid[16]; }; };
        event { name = myevent; fields := struct {

        """
        if arrays {
            m += "uint8_t a" + String(repeating: "[1]", count: depth) + ";\n"
        } else {
            m += String(repeating: "struct {\n", count: depth) + "uint8_t field;\n"
            for i in 0..<depth { m += "} s_depth_\(i);\n" }
        }
        m += "}; };\n"
        let dir = SharedDaemon.scratch.appendingPathComponent("nest-\(depth)\(arrays ? "a" : "s")-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try m.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        let header: [UInt8] = [0xC1, 0x1F, 0xFC, 0xC1, 0x2A, 0x64, 0x22, 0xD0, 0x6C, 0xEE, 0x11, 0xE0,
                               0x8C, 0x08, 0xCB, 0x07, 0xD7, 0xB3, 0xA5, 0x64]
        try Data(header + [42]).write(to: dir.appendingPathComponent("stream"))
        return dir.path
    }

    /// Runs `body` on a thread with a `stackBytes` stack, and waits for it.
    static func onThread<T>(stackBytes: Int, _ body: @escaping @Sendable () -> T) -> T {
        let box = ThreadResult<T>()
        let t = Thread { box.value = body(); box.done.signal() }
        t.stackSize = stackBytes
        t.start()
        box.done.wait()
        return box.value!
    }

    /// Opens `dir` and prints every event as `rltrace dump` does; the error's text if any, and the
    /// warnings. Everything (the values, the types) is released on the calling thread.
    static func dump(_ dir: String) -> (text: String, error: String, warnings: [String]) {
        do {
            let set = try CTFTraceSet(paths: [dir])
            var it = set.makeMergedIterator()
            var f = CTFEventFormatter(style: .text)
            var out = ""
            while try it.next() { it.withCurrent { f.format($0, into: &out) } }
            return (out, "", set.warnings.map { "\($0)" })
        } catch {
            return ("", "\(error)", [])
        }
    }

    /// babeltrace2's text with the timestamp columns `rltrace dump` adds taken off.
    static func payload(_ text: String) -> [String] {
        text.split(separator: "\n").map { line in
            guard line.hasPrefix("["), let r = line.range(of: ") ") else { return String(line) }
            return String(line[r.upperBound...])
        }
    }

    @Test("2048 nested structures print what babeltrace2 prints, on a thread with the stack for them; 2049 are refused")
    func deepestStructure() throws {
        let dir = try Self.write(depth: Nesting.maxDepth)
        let got = Self.onThread(stackBytes: 64 << 20) { Self.dump(dir) }
        #expect(got.error.isEmpty, "\(got.error)")
        #expect(got.warnings.isEmpty, "\(got.warnings)")
        let bt = try babeltrace([dir]).map(String.init)
        #expect(bt.count == 1 && bt[0].hasPrefix("myevent: { s_depth_2047 = { s_depth_2046 = {"))
        #expect(Self.payload(got.text) == bt)
        #expect(got.text.contains("{ field = 42 }" + String(repeating: " }", count: 2048)))

        let over = try Self.write(depth: Nesting.maxDepth + 1)
        let refused = Self.onThread(stackBytes: 64 << 20) { Self.dump(over) }
        #expect(refused.error.contains("metadata") && refused.error.contains("nested more than 2048 deep"), "\(refused.error)")
    }

    @Test("2048 nested structures keep each field's own name: the names grow with the depth, not its square, and a dotted name is still whole")
    func namesGrowWithTheDepth() throws {
        let dir = try Self.write(depth: Nesting.maxDepth)
        // (Opened on a thread with the stack for the values, as `deepestStructure` does.)
        let got = Self.onThread(stackBytes: 64 << 20) { () -> (stored: Int, entries: Int, innermost: String, error: String) in
            do {
                let set = try CTFTraceSet(paths: [dir])
                let names = set.streams[0].names
                let i = names.firstIndex(of: "event.fields.s_depth_2047.s_depth_2046") ?? -1
                return (names.storedCharacters, names.count, names[names.count - 1], i >= 0 ? "" : "s_depth_2046 not found")
            } catch {
                return (0, 0, "", "\(error)")
            }
        }
        #expect(got.error.isEmpty, "\(got.error)")
        // Every level's own name once (≈ 12 bytes each, plus the other scopes' few fields). Dotted names
        // stored whole took 2048²/2 components of ≈ 12 bytes: ≈ 25 MB.
        #expect(got.stored > 2048 * 10 && got.stored < 64 * 1024, "\(got.stored) characters for \(got.entries) names")
        // The innermost field, the last one compiled, named by its whole path.
        let path = "event.fields." + (0..<Nesting.maxDepth).reversed().map { "s_depth_\($0)" }.joined(separator: ".") + ".field"
        #expect(got.innermost == path)
    }

    @Test("1000 variants nested in one another, each tagged by the field before it, print what babeltrace2 prints")
    func deepVariants() throws {
        // `enum e tag; variant <tag> { struct { <the next level> } A; uint8_t B; } v;` 1000 times around
        // `uint8_t field`: 2000 compound levels, every tag selecting A (0). (Compiling it once copied
        // every tag's slot into each enclosing level under a longer name: 4.6 s; docs/reader.md.)
        var inner = "uint8_t field;"
        for _ in 0..<1000 { inner = "enum e tag; variant <tag> { struct { \(inner) } A; uint8_t B; } v;" }
        let m = """
        /* CTF 1.8 */
        typealias integer { size = 8; align = 8; signed = false; base = 10; } := uint8_t;
        typealias integer { size = 32; align = 32; signed = false; base = hex; } := uint32_t;
        trace { major = 1; minor = 8; uuid = "2a6422d0-6cee-11e0-8c08-cb07d7b3a564"; byte_order = le;
            packet.header := struct { uint32_t magic; uint8_t uuid[16]; }; };
        enum e : uint8_t { A = 0, B = 1 };
        event { name = myevent; fields := struct { \(inner) }; };

        """
        let dir = SharedDaemon.scratch.appendingPathComponent("nest-variants-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try m.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        let header: [UInt8] = [0xC1, 0x1F, 0xFC, 0xC1, 0x2A, 0x64, 0x22, 0xD0, 0x6C, 0xEE, 0x11, 0xE0,
                               0x8C, 0x08, 0xCB, 0x07, 0xD7, 0xB3, 0xA5, 0x64]
        try Data(header + [UInt8](repeating: 0, count: 1000) + [42]).write(to: dir.appendingPathComponent("stream"))
        let got = Self.onThread(stackBytes: 64 << 20) { Self.dump(dir.path) }
        #expect(got.error.isEmpty, "\(got.error)")
        let bt = try babeltrace([dir.path]).map(String.init)
        #expect(bt.count == 1 && bt[0].contains("field = 42"))
        #expect(Self.payload(got.text) == bt)
    }

    @Test("300 nested structures of fields of mixed alignments, some declared align(64), print what babeltrace2 prints")
    func deepMixedAlignments() throws {
        // The test's own model of the layout: a structure's alignment is the largest of its declared
        // one and its fields'; each field starts at the next multiple of its alignment.
        indirect enum T { case u(bits: Int, name: String); case s([(String, T)], align: Int) }
        func alignment(_ t: T) -> Int {
            switch t {
            case .u(let b, _): return b
            case .s(let fs, let a): return fs.reduce(a) { max($0, alignment($1.1)) }
            }
        }
        func size(_ t: T, from pos: Int) -> Int {
            let start = (pos + alignment(t) - 1) / alignment(t) * alignment(t)
            switch t {
            case .u(let b, _): return start + b
            case .s(let fs, _): return fs.reduce(start) { size($1.1, from: $0) }
            }
        }
        func tsdl(_ t: T) -> String {
            switch t {
            case .u(_, let n): return n
            case .s(let fs, let a): return "struct { " + fs.map { "\(tsdl($0.1)) \($0.0);" }.joined(separator: " ") + " }" + (a > 1 ? " align(\(a))" : "")
            }
        }
        let u8 = T.u(bits: 8, name: "uint8_t"), u16 = T.u(bits: 16, name: "uint16_a"), u32 = T.u(bits: 32, name: "uint32_t"), u64 = T.u(bits: 64, name: "uint64_a")
        var t = T.s([("z", u8)], align: 1)
        // Each structure follows a byte (`p`): where it starts depends on its alignment, which for most
        // levels comes from a field several levels down (a 64-bit one every fourth level).
        for k in 0..<300 {
            let mid: [(String, T)] = k % 4 == 1 ? [("e", u64)] : k % 2 == 0 ? [("b", u32), ("c", u16)] : [("c", u16)]
            t = .s([("a", u8)] + mid + [("p", u8), ("x", t), ("d", u8)], align: k % 7 == 3 ? 64 : 1)
        }
        let payloadStart = 20 * 8
        let end = size(t, from: payloadStart)
        #expect(end % 8 == 0)
        guard case .s(let top, _) = t else { return }
        let m = """
        /* CTF 1.8 */
        typealias integer { size = 8; align = 8; signed = false; base = 10; } := uint8_t;
        typealias integer { size = 16; align = 16; signed = false; base = 10; } := uint16_a;
        typealias integer { size = 32; align = 32; signed = false; base = 10; } := uint32_t;
        typealias integer { size = 64; align = 64; signed = false; base = 10; } := uint64_a;
        trace { major = 1; minor = 8; uuid = "2a6422d0-6cee-11e0-8c08-cb07d7b3a564"; byte_order = le;
            packet.header := struct { uint32_t magic; uint8_t uuid[16]; }; };
        event { name = myevent; fields := struct { \(top.map { "\(tsdl($0.1)) \($0.0);" }.joined(separator: " ")) }; };

        """
        let dir = SharedDaemon.scratch.appendingPathComponent("nest-aligned-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try m.write(to: dir.appendingPathComponent("metadata"), atomically: true, encoding: .utf8)
        let header: [UInt8] = [0xC1, 0x1F, 0xFC, 0xC1, 0x2A, 0x64, 0x22, 0xD0, 0x6C, 0xEE, 0x11, 0xE0,
                               0x8C, 0x08, 0xCB, 0x07, 0xD7, 0xB3, 0xA5, 0x64]
        let body = (0..<(end / 8 - header.count)).map { UInt8(truncatingIfNeeded: $0 * 7 + 3) }
        try Data(header + body).write(to: dir.appendingPathComponent("stream"))
        let got = Self.onThread(stackBytes: 64 << 20) { Self.dump(dir.path) }
        #expect(got.error.isEmpty, "\(got.error)")
        #expect(got.warnings.isEmpty, "\(got.warnings)")
        let bt = try babeltrace([dir.path]).map(String.init)
        #expect(bt.count == 1)
        #expect(Self.payload(got.text) == bt)
    }

    @Test("300 nested array dimensions read as babeltrace2 reads them")
    func deepArrays() throws {
        let dir = try Self.write(depth: 300, arrays: true)
        let got = Self.onThread(stackBytes: 64 << 20) { Self.dump(dir) }
        #expect(got.error.isEmpty, "\(got.error)")
        let bt = try babeltrace([dir]).map(String.init)
        #expect(Self.payload(got.text) == bt)
        #expect(got.text.contains(String(repeating: "[ [0] = ", count: 300) + "42" + String(repeating: " ]", count: 300)))
    }

    @Test("a thread whose stack cannot take the nesting: refused when the trace is opened, with what to do")
    func smallStackRefusedAtOpen() throws {
        let dir = try Self.write(depth: Nesting.maxDepth)
        // 512 KiB: less than 2048 levels need (bytesPerLevel each) in any build.
        let got = Self.onThread(stackBytes: 512 << 10) { Self.dump(dir) }
        #expect(got.text.isEmpty)
        #expect(got.error.contains("types nest 2048 deep") && got.error.contains("read the trace on a thread with a larger stack"), "\(got.error)")
        // Shallow nesting is never checked: 20 levels open on the same stack.
        let shallow = try Self.write(depth: 20)
        let ok = Self.onThread(stackBytes: 512 << 10) { Self.dump(shallow) }
        #expect(ok.error.isEmpty && ok.text.contains("{ field = 42 }"), "\(ok.error)")
    }

    @Test("a value walked on a thread with less stack than where the trace was opened: left out with a warning, not silently")
    func walkBudgetWarns() throws {
        let dir = try Self.write(depth: Nesting.maxDepth)
        final class Held: @unchecked Sendable { var set: CTFTraceSet?; var it: CTFMergedIterator? }
        let held = Held()
        let opened: String = Self.onThread(stackBytes: 64 << 20) {
            do { held.set = try CTFTraceSet(paths: [dir]); held.it = held.set!.makeMergedIterator(); return "" } catch { return "\(error)" }
        }
        #expect(opened.isEmpty, "\(opened)")
        guard held.set != nil else { return }
        // Formatting on a 512 KiB thread: the walk stops where its stack budget ends.
        let printed: String = Self.onThread(stackBytes: 512 << 10) {
            var f = CTFEventFormatter(style: .text)
            var out = ""
            do { while try held.it!.next() { held.it!.withCurrent { f.format($0, into: &out) } } } catch { return "error: \(error)" }
            return out
        }
        #expect(printed.hasSuffix("myevent: { }\n"), "\(printed.prefix(200))")
        let warnings = held.set!.warnings.map { "\($0)" }
        #expect(warnings.count == 1 && warnings[0].contains("field `s_depth_2047` left out") && warnings[0].contains("more than this thread's stack can take"),
                "\(warnings)")
        // Released where the stack holds the types.
        Self.onThread(stackBytes: 64 << 20) { held.it = nil; held.set = nil }
    }
}

/// ``NestingTests/onThread(stackBytes:_:)``'s result, read after `done`.
private final class ThreadResult<T>: @unchecked Sendable {
    var value: T?
    let done = DispatchSemaphore(value: 0)
}
