import CTFReader
import Foundation
import Testing

// Names read from a trace are untrusted: a copy of the committed demo trace whose process, thread,
// item and mode names are rewritten in place (same byte length, so every packet stays as it was)
// into terminal escapes, C1 controls, bidirectional overrides, invalid UTF-8, CSV formula starts
// and HTML and JSON metacharacters, given to every command in every format. Each output must show
// them in the visible form of docs/output-escaping.md and pass nothing raw to a terminal.

/// A name of the demo trace and what it becomes (the same number of bytes, no NUL).
struct HostileName {
    var original: String
    var hostile: [UInt8]
    /// The hostile name as the reader decodes it (invalid UTF-8 as U+FFFD).
    var decoded: String { String(decoding: hostile, as: UTF8.self) }
}

/// The rewrites: the process name sets the terminal's title and clears the screen, the others carry
/// every class of character the escapers must handle.
let hostileNames: [HostileName] = [
    // ESC ] 0 ; T BEL ESC [ 2 J: sets the window title, clears the screen.
    HostileName(original: "rl-example", hostile: Array("\u{1B}]0;T\u{07}\u{1B}[2J".utf8)),
    // Colours, with a backslash-free payload.
    HostileName(original: "idle-timeout", hostile: Array("\u{1B}[31mRED\u{1B}[0m".utf8)),
    // A right-to-left override.
    HostileName(original: "stats", hostile: Array("\u{202E}ab".utf8)),
    // A formula start, the C1 control CSI, a left-to-right isolate.
    HostileName(original: "pool-push", hostile: Array("=\u{9B}31m\u{2066}".utf8)),
    // Invalid UTF-8 (FF FE; C3 before an ASCII byte), a backslash, a quote, a comma, a newline.
    HostileName(original: "flush-writes", hostile: [0xFF, 0xFE, 0x61, 0x5C, 0x62, 0x22, 0x63, 0x2C, 0x64, 0x0A, 0xC3, 0x28]),
    // A spreadsheet's `@`, a tab, HTML's metacharacters.
    HostileName(original: "client", hostile: Array("@\t<&>'".utf8)),
    // A `-` start, a right-to-left mark, a backspace.
    HostileName(original: "reply", hostile: Array("-\u{200F}\u{08}".utf8)),
    // Isolates and embeddings, and text hidden by ESC [ 8 m (the hangs' culprit).
    HostileName(original: "compute-results", hostile: Array("\u{2067}\u{202B}evil\u{1B}[8mx".utf8)),
    // A device control string: ESC P q ESC \ and DEL.
    HostileName(original: "blocker", hostile: Array("\u{1B}Pqx\u{1B}\\\u{7F}".utf8)),
]

/// Copies the demo trace to `dir` with every NUL-terminated occurrence of each original name in its
/// stream files replaced by the hostile bytes; returns how many strings were replaced per name.
func writeHostileDemo(to dir: String) throws -> [String: Int] {
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.createDirectory(atPath: (dir as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try FileManager.default.copyItem(atPath: demoTrace, toPath: dir)
    let streams = dir + "/ust/uid/0/64-bit"
    var counts: [String: Int] = [:]
    for file in try FileManager.default.contentsOfDirectory(atPath: streams) where file.hasPrefix("channel") {
        let path = streams + "/" + file
        var d = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        for h in hostileNames {
            let o = Array(h.original.utf8) + [0]
            precondition(h.hostile.count == o.count - 1 && !h.hostile.contains(0))
            var i = 0
            while i + o.count <= d.count {
                if d[i] == o[0] && Array(d[i ..< i + o.count]) == o {
                    d.replaceSubrange(i ..< i + h.hostile.count, with: h.hostile)
                    counts[h.original, default: 0] += 1
                    i += o.count
                } else {
                    i += 1
                }
            }
        }
        try Data(d).write(to: URL(fileURLWithPath: path))
    }
    return counts
}

/// A program's output as bytes (rltrace's outputs are checked byte by byte: a lossy decoding would
/// hide invalid UTF-8).
struct RawRun {
    var out: [UInt8]
    var err: [UInt8]
    var status: Int32
}

/// Runs the built `rltrace` with `args`.
func runRaw(_ args: [String]) throws -> RawRun {
    let r = try runProgram(binDir.appendingPathComponent("rltrace").path, args)
    return RawRun(out: r.stdoutBytes, err: r.stderrBytes, status: r.status)
}

/// Every string in a JSON document (keys and values).
func jsonStrings(_ v: Any) -> Set<String> {
    if let s = v as? String { return [s] }
    if let d = v as? [String: Any] { return d.reduce(into: Set(d.keys)) { $0.formUnion(jsonStrings($1.value)) } }
    if let a = v as? [Any] { return a.reduce(into: Set<String>()) { $0.formUnion(jsonStrings($1)) } }
    return []
}

/// The records of an RFC 4180 CSV text; nil when it is not well formed (a quote inside an
/// unquoted field, text after a closing quote, an unterminated quoted field).
func parseCSV(_ text: String) -> [[String]]? {
    var rows: [[String]] = [], row: [String] = [], field = ""
    var quoted = false, wasQuoted = false
    var it = Array(text.unicodeScalars).makeIterator()
    var pending: Unicode.Scalar? = nil
    func next() -> Unicode.Scalar? { if let p = pending { pending = nil; return p }; return it.next() }
    while let c = next() {
        if quoted {
            if c == "\"" {
                if let n = next() { if n == "\"" { field.unicodeScalars.append(c) } else { quoted = false; pending = n } } else { quoted = false }
            } else { field.unicodeScalars.append(c) }
            continue
        }
        switch c {
        case "\"":
            guard field.isEmpty, !wasQuoted else { return nil }
            quoted = true; wasQuoted = true
        case ",": row.append(field); field = ""; wasQuoted = false
        case "\n": row.append(field); rows.append(row); row = []; field = ""; wasQuoted = false
        default:
            if wasQuoted { return nil }
            field.unicodeScalars.append(c)
        }
    }
    if quoted { return nil }
    if !field.isEmpty || !row.isEmpty { row.append(field); rows.append(row) }
    return rows
}

@Suite("hostile names through every command and format: escaped, never raw", .serialized)
struct HostileNamesTests {
    static let dir = NSTemporaryDirectory() + "rltrace-hostile-names-\(getpid())/trace"

    /// The visible (terminal) form of the process name and of the right-to-left item name.
    static let titleEscape = "\\e]0;T\\a\\e[2J"
    static let rloEscape = "\\u{202e}ab"
    /// The visible forms of the names with a bidirectional formatting character.
    static let bidiEscapes = [rloEscape, "=\\u{9b}31m\\u{2066}", "-\\u{200f}\\b", "\\u{2067}\\u{202b}evil\\e[8mx"]

    @Test func everyCommandAndFormatEscapesHostileNames() throws {
        defer { try? FileManager.default.removeItem(atPath: (HostileNamesTests.dir as NSString).deletingLastPathComponent) }
        let counts = try writeHostileDemo(to: HostileNamesTests.dir)
        // Every rewrite found its strings (the demo trace is committed: these are exact).
        for h in hostileNames { #expect((counts[h.original] ?? 0) > 0, "\(h.original) not found in the demo trace") }
        let t = HostileNamesTests.dir
        let outDir = (t as NSString).deletingLastPathComponent
        let chrome = outDir + "/chrome.json", reportHTML = outDir + "/report.html", diffHTML = outDir + "/diff.html"

        enum Kind { case text, json, jsonLines, csv, html }
        let runs: [(args: [String], kind: Kind, file: String?)] = [
            (["report", t], .text, nil),
            (["report", "--format", "json", t], .json, nil),
            (["report", "--format", "csv", t], .csv, nil),
            (["report", "--format", "lami", t], .json, nil),
            (["report", "--format", "html", "-o", reportHTML, t], .html, reportHTML),
            (["timeline", t], .text, nil),
            (["histogram", "--of", "callout", "--by", "item", t], .text, nil),
            (["hangs", "--hang-threshold", "50ms", t], .text, nil),
            (["hangs", "--hang-threshold", "50ms", "--format", "json", t], .json, nil),
            (["diff", t, t], .text, nil),
            (["diff", "--format", "json", demoTrace, t], .json, nil),
            (["diff", "--format", "html", "-o", diffHTML, demoTrace, t], .html, diffHTML),
            (["export", "--format", "chrome", "-o", chrome, t], .json, chrome),
            (["dump", t], .text, nil),
            (["dump", "--format", "json", t], .jsonLines, nil),
        ]
        var seenInJSON = Set<String>()
        var visibleInText: Set<String> = []
        for (args, kind, file) in runs {
            let what = args.prefix(while: { $0 != t && $0 != demoTrace }).joined(separator: " ")
            let r = try runRaw(args)
            #expect(r.status == 0, "\(what): status \(r.status): \(String(decoding: r.err.prefix(400), as: UTF8.self))")
            let out = try file.map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0))) } ?? r.out
            #expect(!out.isEmpty, "\(what): no output")
            #expect(rawControls(out).isEmpty, "\(what): raw \(rawControls(out)) in the output")
            #expect(rawControls(r.err).isEmpty, "\(what): raw \(rawControls(r.err)) on standard error")
            let text = String(decoding: out, as: UTF8.self)
            switch kind {
            case .text:
                if text.contains(HostileNamesTests.titleEscape) { visibleInText.insert("title:" + what) }
                if HostileNamesTests.bidiEscapes.contains(where: { text.contains($0) }) { visibleInText.insert("bidi:" + what) }
            case .json:
                let doc = try #require(try? JSONSerialization.jsonObject(with: Data(out), options: [.fragmentsAllowed]), "\(what): not JSON")
                let strings = jsonStrings(doc)
                seenInJSON.formUnion(strings)
                // The process name comes back exactly, inside the strings that hold it.
                #expect(strings.contains { $0.contains(hostileNames[0].decoded) }, "\(what): the process name does not round-trip")
            case .jsonLines:
                var any = false
                for line in text.split(separator: "\n") {
                    let doc = try #require(try? JSONSerialization.jsonObject(with: Data(line.utf8)), "\(what): a line is not JSON: \(line.prefix(200))")
                    let strings = jsonStrings(doc)
                    seenInJSON.formUnion(strings)
                    any = any || strings.contains(hostileNames[0].decoded)
                }
                #expect(any, "\(what): the process name does not round-trip")
            case .csv:
                let rows = try #require(parseCSV(text), "\(what): not RFC 4180 CSV")
                let header = try #require(rows.first)
                #expect(rows.count > 1)
                for row in rows { #expect(row.count == header.count, "\(what): a row of \(row.count) fields, the header has \(header.count): \(row)") }
                let names = Set(rows.dropFirst().map { $0[header.firstIndex(of: "name")!] })
                // A formula start is neutralised; nothing starts a cell with = + - @.
                #expect(names.contains("'=\\u{9b}31m\\u{2066}"), "\(what): \(names.sorted())")
                #expect(names.contains("'@\\t<&>'"), "\(what): \(names.sorted())")
                for row in rows.dropFirst() {
                    for (i, cell) in row.enumerated() where header[i].hasSuffix("name") || header[i] == "procname" {
                        #expect(!(cell.first.map { "=+-@".contains($0) } ?? false), "\(what): a cell starts a formula: \(cell)")
                    }
                }
                #expect(text.contains(HostileNamesTests.titleEscape), "\(what): the process name is not shown escaped")
            case .html:
                #expect(!text.contains("<&>"), "\(what): HTML metacharacters of a name written raw")
                #expect(text.contains("@\\t&lt;&amp;&gt;&#39;") || what.hasPrefix("diff"), "\(what): the name is not entity-escaped")
                #expect(text.contains(HostileNamesTests.rloEscape), "\(what): the right-to-left name is not shown escaped")
            }
        }
        // JSON gives every hostile name back exactly (invalid UTF-8 as U+FFFD, as the reader decodes it).
        for h in hostileNames {
            #expect(seenInJSON.contains { $0.contains(h.decoded) }, "no JSON output holds \(h.decoded.debugDescription)")
        }
        // The text outputs show the escapes (the name is there, visibly).
        for cmd in ["report", "timeline", "hangs --hang-threshold 50ms", "diff", "dump"] {
            #expect(visibleInText.contains("title:" + cmd), "\(cmd) does not show the process name as \(HostileNamesTests.titleEscape)")
        }
        for cmd in ["report", "timeline", "histogram --of callout --by item", "hangs --hang-threshold 50ms", "diff", "dump"] {
            #expect(visibleInText.contains("bidi:" + cmd), "\(cmd) does not show any of \(HostileNamesTests.bidiEscapes)")
        }
    }
}

extension HostileNamesTests {
    /// A path with escapes, quoted by an error message on standard error: shown escaped.
    @Test func errorsQuoteNamesEscaped() throws {
        let path = NSTemporaryDirectory() + "rltrace-no-such-\(getpid())\u{1B}[2J\u{202E}"
        for cmd in ["report", "timeline", "hangs", "dump"] {
            let r = try runRaw([cmd, path])
            #expect(r.status != 0, "\(cmd): status \(r.status)")
            #expect(rawControls(r.err).isEmpty, "\(cmd): raw \(rawControls(r.err)) on standard error")
            #expect(String(decoding: r.err, as: UTF8.self).contains("\\e[2J\\u{202e}"), "\(cmd): \(String(decoding: r.err, as: UTF8.self))")
        }
    }
}
