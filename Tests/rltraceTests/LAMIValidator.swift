import Foundation

// A strict validator of LAMI 1.0 output, written from the specification (lttng/lami-spec,
// `lami.adoc` v1.0.1) and checked against what Trace Compass's reader (LamiAnalysis / LamiData)
// refuses. It has its own JSON parser so that value types are exact: an integer is not a float,
// `true` is not 1, a duplicated key is an error, and 64-bit timestamps are read without rounding.
//
// Strict beyond the letter of the specification, where rltrace's output must be stricter than what a
// consumer tolerates:
// - unknown keys are violations (the specification tells consumers to ignore them; rltrace emits none,
//   so one is a typo such as `type` for `class`);
// - a cell is a data object or `null`, never a bare JSON value (bare values are LAMI 0.1; 1.0 has
//   boolean, number and string objects);
// - a metadata object and every table class it defines have a `title`, and a table class has
//   `column-descriptions` (Trace Compass refuses the analysis otherwise);
// - timestamp, duration and size values are integers (Trace Compass reads them as 64-bit integers);
// - the version line matches Trace Compass's `\d{1,3}\.\d{1,3}` and is exactly `1.0`.

/// A JSON value with exact types.
indirect enum LJSON: Equatable {
    case null
    case bool(Bool)
    /// An integer literal (no fraction, no exponent) that fits 64 bits.
    case int(Int64)
    /// Any other number.
    case double(Double)
    case string(String)
    case array([LJSON])
    /// Keys in document order.
    case object([(String, LJSON)])

    static func == (a: LJSON, b: LJSON) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.int(let x), .int(let y)): x == y
        case (.double(let x), .double(let y)): x == y
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.object(let x), .object(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    subscript(key: String) -> LJSON? {
        if case .object(let kv) = self { return kv.first { $0.0 == key }?.1 }
        return nil
    }
    var objectKeys: [String]? { if case .object(let kv) = self { return kv.map(\.0) } else { return nil } }
    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var array: [LJSON]? { if case .array(let a) = self { return a } else { return nil } }
    var int: Int64? { if case .int(let i) = self { return i } else { return nil } }
    /// Any number as a Double.
    var number: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }
    var isNumber: Bool { number != nil }
}

/// A strict RFC 8259 parser (one value, whitespace around it, nothing else).
struct LJSONParser {
    struct Failure: Error, CustomStringConvertible { var description: String }
    let bytes: [UInt8]
    var i = 0

    static func parse(_ text: String) throws -> LJSON {
        var p = LJSONParser(bytes: Array(text.utf8))
        p.skipSpace()
        let v = try p.value()
        p.skipSpace()
        guard p.i == p.bytes.count else { throw Failure(description: "text after the JSON value at byte \(p.i)") }
        return v
    }

    mutating func skipSpace() { while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 } }
    func fail(_ m: String) -> Failure { Failure(description: "\(m) at byte \(i)") }

    mutating func value() throws -> LJSON {
        guard i < bytes.count else { throw fail("unexpected end") }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return try number()
        }
    }
    mutating func literal(_ s: String) throws {
        let l = Array(s.utf8)
        guard i + l.count <= bytes.count, Array(bytes[i..<(i + l.count)]) == l else { throw fail("bad literal") }
        i += l.count
    }
    mutating func object() throws -> LJSON {
        i += 1
        var kv: [(String, LJSON)] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(kv) }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let k = try string()
            if kv.contains(where: { $0.0 == k }) { throw fail("duplicate key \(k.debugDescription)") }
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            i += 1
            skipSpace()
            kv.append((k, try value()))
            skipSpace()
            guard i < bytes.count else { throw fail("unterminated object") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(kv) }
            throw fail("expected ',' or '}'")
        }
    }
    mutating func array() throws -> LJSON {
        i += 1
        var a: [LJSON] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
        while true {
            skipSpace()
            a.append(try value())
            skipSpace()
            guard i < bytes.count else { throw fail("unterminated array") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(a) }
            throw fail("expected ',' or ']'")
        }
    }
    mutating func string() throws -> String {
        i += 1
        var out: [UInt8] = []
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            i += 1
            if c == UInt8(ascii: "\"") { break }
            if c < 0x20 { throw fail("control character in a string") }
            if c != UInt8(ascii: "\\") { out.append(c); continue }
            guard i < bytes.count else { throw fail("unterminated escape") }
            let e = bytes[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var u = try hex4()
                if (0xD800..<0xDC00).contains(u) {
                    guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else { throw fail("lone surrogate") }
                    i += 2
                    let lo = try hex4()
                    guard (0xDC00..<0xE000).contains(lo) else { throw fail("bad surrogate pair") }
                    u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(u) else { throw fail("bad \\u escape") }
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            default: throw fail("bad escape")
            }
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8 in a string") }
        return s
    }
    mutating func hex4() throws -> UInt32 {
        guard i + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[i..<(i + 4)], as: UTF8.self), radix: 16) else { throw fail("bad \\u escape") }
        i += 4
        return v
    }
    mutating func number() throws -> LJSON {
        let start = i
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        func digits() -> Int { let s = i; while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }; return i - s }
        let intStart = i
        let n = digits()
        guard n > 0 else { throw fail("bad value") }
        if n > 1 && bytes[intStart] == UInt8(ascii: "0") { throw fail("leading zero") }
        var isInt = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") { i += 1; isInt = false; guard digits() > 0 else { throw fail("bad fraction") } }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1; isInt = false
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() > 0 else { throw fail("bad exponent") }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if isInt, let v = Int64(text) { return .int(v) }
        guard let d = Double(text), d.isFinite else { throw fail("number out of range") }
        return .double(d)
    }
}

/// The LAMI 1.0 checks. Every function returns the violations found (empty: valid), each naming
/// where (a JSON path) and what.
enum LAMIValidator {
    /// The column classes of LAMI 1.0 (column description object).
    static let columnClasses: Set<String> = ["bool", "number", "string", "ratio", "timestamp", "duration", "size", "bitrate",
                                             "time-range", "syscall", "process", "path", "fd", "irq", "cpu", "disk", "part", "netif", "mixed"]
    /// The data object classes of LAMI 1.0 (`unknown` may fill any cell).
    static let dataClasses: Set<String> = columnClasses.subtracting(["mixed"]).union(["unknown"])
    /// The classes that inherit the number object (value and/or low/high).
    static let numberClasses: Set<String> = ["number", "ratio", "timestamp", "duration", "size", "bitrate"]
    /// Number classes whose values are 64-bit integers for Trace Compass.
    static let integerNumberClasses: Set<String> = ["timestamp", "duration", "size"]

    /// A parsed metadata object: its table classes by name.
    struct Metadata {
        /// Table class name → column classes (a class inheriting another without its own columns: the other's).
        var tableColumns: [String: [String]]
    }

    // MARK: the LAMI version phase

    /// The version line: `MAJOR.MINOR`, possibly ended by one LF, nothing else; Trace Compass's
    /// `\d{1,3}\.\d{1,3}` on the trimmed text; the version must be 1.0 (what the metadata says).
    static func validateVersionOutput(_ out: String) -> [String] {
        var v: [String] = []
        let line = out.hasSuffix("\n") ? String(out.dropLast()) : out
        if line.contains("\n") || line.contains("\r") { v.append("version output: more than one line: \(out.debugDescription)") }
        let parts = line.split(separator: ".", omittingEmptySubsequences: false)
        let decimal = parts.count == 2 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
        if !decimal { v.append("version output: \(line.debugDescription) is not MAJOR.MINOR (Trace Compass matches \\d{1,3}\\.\\d{1,3})") }
        else if line != "1.0" { v.append("version output: \(line) is not the LAMI 1.0 this validator checks") }
        return v
    }

    // MARK: the metadata phase

    /// Validates a metadata document (the whole standard output of `--metadata`).
    static func validateMetadata(_ out: String) -> (Metadata?, [String]) {
        let doc: LJSON
        do { doc = try LJSONParser.parse(out) } catch { return (nil, ["metadata: not one JSON value: \(error)"]) }
        var v: [String] = []
        guard case .object = doc else { return (nil, ["metadata: not a JSON object"]) }
        if doc["error-message"] != nil { return (nil, ["metadata: an error object: \(validateError(doc))"]) }
        v += unknownKeys(doc, ["mi-version", "version", "title", "authors", "description", "url", "tags", "table-classes"], at: "metadata")
        if let mv = doc["mi-version"] {
            v += validateVersionObject(mv, at: "metadata.mi-version")
            if mv["major"] != .int(1) || mv["minor"] != .int(0) { v.append("metadata.mi-version: must be {major: 1, minor: 0}") }
        } else { v.append("metadata: `mi-version` is required") }
        if let ver = doc["version"] { v += validateVersionObject(ver, at: "metadata.version") }
        if let t = doc["title"] { if t.string == nil { v.append("metadata.title: not a string") } }
        else { v.append("metadata: no `title` (Trace Compass requires it)") }
        for k in ["description", "url"] { if let x = doc[k], x.string == nil { v.append("metadata.\(k): not a string") } }
        for k in ["authors", "tags"] {
            if let x = doc[k], !(x.array?.allSatisfy { $0.string != nil } ?? false) { v.append("metadata.\(k): not an array of strings") }
        }
        var meta = Metadata(tableColumns: [:])
        guard let tcs = doc["table-classes"] else { return (nil, v + ["metadata: `table-classes` is required"]) }
        guard case .object(let classes) = tcs else { return (nil, v + ["metadata.table-classes: not an object"]) }
        if classes.isEmpty { v.append("metadata.table-classes: at least one table class is required") }
        for (name, tc) in classes {
            let (cols, tv) = validateTableClass(tc, at: "metadata.table-classes.\(name)", requireComplete: true)
            v += tv
            if let cols { meta.tableColumns[name] = cols } else if tc["inherit"] == nil { meta.tableColumns[name] = [] }
        }
        // Inheritance: names a defined class; the inherited columns apply when none are given.
        for (name, tc) in classes {
            guard let parent = tc["inherit"]?.string else { continue }
            if meta.tableColumns.keys.contains(parent) && parent != name {
                if meta.tableColumns[name] == nil { meta.tableColumns[name] = meta.tableColumns[parent] }
            } else { v.append("metadata.table-classes.\(name).inherit: \(parent.debugDescription) is not another table class") }
        }
        return (meta, v)
    }

    static func validateVersionObject(_ o: LJSON, at path: String) -> [String] {
        guard case .object = o else { return ["\(path): not an object"] }
        var v = unknownKeys(o, ["major", "minor", "patch", "extra"], at: path)
        for k in ["major", "minor", "patch"] {
            if let x = o[k] { if x.int.map({ $0 >= 0 }) != true { v.append("\(path).\(k): not a non-negative integer") } }
        }
        if let x = o["extra"], x.string == nil { v.append("\(path).extra: not a string") }
        if o["minor"] != nil && o["major"] == nil { v.append("\(path): `major` is required when `minor` exists") }
        if o["patch"] != nil && o["minor"] == nil { v.append("\(path): `minor` is required when `patch` exists") }
        return v
    }

    /// A table class object; returns its column classes (nil when it has none).
    static func validateTableClass(_ tc: LJSON, at path: String, requireComplete: Bool) -> ([String]?, [String]) {
        guard case .object = tc else { return (nil, ["\(path): not an object"]) }
        var v = unknownKeys(tc, ["inherit", "title", "column-descriptions"], at: path)
        if let x = tc["inherit"], x.string == nil { v.append("\(path).inherit: not a string") }
        if let x = tc["title"] { if x.string == nil { v.append("\(path).title: not a string") } }
        else if requireComplete || tc["inherit"] == nil { v.append("\(path): no `title` (Trace Compass requires it)") }
        guard let cds = tc["column-descriptions"] else {
            if requireComplete && tc["inherit"] == nil { v.append("\(path): no `column-descriptions` (Trace Compass requires them)") }
            return (nil, v)
        }
        guard let list = cds.array else { return (nil, v + ["\(path).column-descriptions: not an array"]) }
        var cols: [String] = []
        for (j, cd) in list.enumerated() {
            let p = "\(path).column-descriptions[\(j)]"
            guard case .object = cd else { v.append("\(p): not an object"); cols.append("mixed"); continue }
            v += unknownKeys(cd, ["title", "class", "unit"], at: p)
            if let t = cd["title"], t.string == nil { v.append("\(p).title: not a string") }
            var cls = "mixed"
            if let c = cd["class"] {
                if let s = c.string, columnClasses.contains(s) { cls = s }
                else { v.append("\(p).class: \(c) is not a LAMI 1.0 column class (\(columnClasses.sorted().joined(separator: ", ")))") }
            }
            if let u = cd["unit"] {
                if u.string == nil { v.append("\(p).unit: not a string") }
                if cls != "number" { v.append("\(p).unit: a unit is only defined for `number` columns, not `\(cls)`") }
            }
            cols.append(cls)
        }
        return (cols, v)
    }

    // MARK: the results phase

    /// What a results run must show besides being valid LAMI.
    struct Expectations {
        /// Progress lines may precede the object (`--output-progress` was given).
        var progressAllowed = false
        /// Every table's time range, ns since the epoch (nil: not checked).
        var timeRange: (begin: Int64, end: Int64)? = nil
        /// At most this many rows per table.
        var limit: Int? = nil
    }

    /// Validates the whole standard output of a results run against the metadata.
    static func validateResults(_ out: String, metadata: Metadata, expect: Expectations = Expectations()) -> [String] {
        var v: [String] = []
        // Progress lines, then the JSON object (Trace Compass: the first line matching `\s*\{.*`).
        var lines = out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var progress: [String] = []
        while let first = lines.first, !first.trimmingCharacters(in: .whitespaces).hasPrefix("{") {
            if first.isEmpty && lines.count == 1 { break }
            progress.append(first)
            lines.removeFirst()
        }
        if !progress.isEmpty && !expect.progressAllowed { v.append("results: \(progress.count) line(s) before the JSON object without --output-progress: \(progress.prefix(2))") }
        v += validateProgress(progress)
        let json = lines.joined(separator: "\n")
        let doc: LJSON
        do { doc = try LJSONParser.parse(json) } catch { return v + ["results: not one JSON value: \(error)"] }
        guard case .object = doc else { return v + ["results: not a JSON object"] }
        if doc["error-message"] != nil { return v + ["results: an error object: \(doc)"] }
        v += unknownKeys(doc, ["results"], at: "results")
        guard let tables = doc["results"]?.array else { return v + ["results: `results` (an array of result tables) is required"] }
        for (n, t) in tables.enumerated() { v += validateResultTable(t, at: "results[\(n)]", metadata: metadata, expect: expect) }
        return v
    }

    /// Progress lines: `VALUE[ MESSAGE]`, VALUE a number from 0 to 1 or `*`; all `*` if one is.
    static func validateProgress(_ lines: [String]) -> [String] {
        var v: [String] = []
        var stars = 0
        for l in lines {
            let value = l.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            if value == "*" { stars += 1; continue }
            let isDecimal = value.range(of: #"^[0-9]+(\.[0-9]+)?$"#, options: .regularExpression) != nil
            if !isDecimal || !(0...1).contains(Double(value) ?? -1) { v.append("progress line \(l.debugDescription): VALUE must be a number from 0 to 1 or `*`") }
        }
        if stars > 0 && stars != lines.count { v.append("progress: some lines have `*`, so all must") }
        return v
    }

    static func validateResultTable(_ t: LJSON, at path: String, metadata: Metadata, expect: Expectations) -> [String] {
        guard case .object = t else { return ["\(path): not an object"] }
        var v = unknownKeys(t, ["time-range", "class", "data"], at: path)
        if let tr = t["time-range"] {
            v += validateDataObject(tr, expected: "time-range", at: "\(path).time-range")
            if let want = expect.timeRange,
               tr["begin"]?["value"] != .int(want.begin) || tr["end"]?["value"] != .int(want.end) {
                v.append("\(path).time-range: \(tr["begin"]?["value"].map { "\($0)" } ?? "?")…\(tr["end"]?["value"].map { "\($0)" } ?? "?"), expected \(want.begin)…\(want.end)")
            }
        } else { v.append("\(path): `time-range` is required") }
        var columns: [String]?
        switch t["class"] {
        case .string(let name)?:
            if let cols = metadata.tableColumns[name] { columns = cols } else { v.append("\(path).class: \(name.debugDescription) is not a table class of the metadata") }
        case .object?:
            let (cols, tv) = validateTableClass(t["class"]!, at: "\(path).class", requireComplete: false)
            v += tv
            if let parent = t["class"]!["inherit"]?.string {
                if let pc = metadata.tableColumns[parent] { columns = cols ?? pc } else { v.append("\(path).class.inherit: \(parent.debugDescription) is not a table class of the metadata") }
            } else { columns = cols }
        case nil: v.append("\(path): `class` is required")
        default: v.append("\(path).class: neither a table class name nor a table class object")
        }
        guard let data = t["data"] else { return v + ["\(path): `data` is required"] }
        guard let rows = data.array else { return v + ["\(path).data: not an array of rows"] }
        if let limit = expect.limit, rows.count > limit { v.append("\(path).data: \(rows.count) rows, more than --limit \(limit)") }
        for (r, row) in rows.enumerated() {
            let rp = "\(path).data[\(r)]"
            guard let cells = row.array else { v.append("\(rp): not an array of cells"); continue }
            guard let cols = columns else { continue }
            if cells.count != cols.count { v.append("\(rp): \(cells.count) cells for \(cols.count) columns"); continue }
            for (c, cell) in cells.enumerated() where cell != .null {
                v += validateDataObject(cell, expected: cols[c], at: "\(rp)[\(c)]")
            }
        }
        return v
    }

    /// A data object of the column class `expected` (`mixed`: any class; `unknown` fits any column).
    static func validateDataObject(_ o: LJSON, expected: String, at path: String) -> [String] {
        guard case .object = o else { return ["\(path): \(o) is not a data object (a bare JSON value is LAMI 0.1, not 1.0)"] }
        guard let cls = o["class"]?.string else { return ["\(path): a data object needs a string `class`"] }
        guard dataClasses.contains(cls) else { return ["\(path): \(cls.debugDescription) is not a LAMI 1.0 data object class"] }
        var v: [String] = []
        if cls != "unknown" && expected != "mixed" && cls != expected { v.append("\(path): a `\(cls)` object in a `\(expected)` column") }
        func str(_ k: String, required: Bool) {
            if let x = o[k] { if x.string == nil { v.append("\(path).\(k): not a string") } } else if required { v.append("\(path): `\(k)` is required") }
        }
        func integer(_ k: String, required: Bool) {
            if let x = o[k] { if x.int == nil { v.append("\(path).\(k): not an integer") } } else if required { v.append("\(path): `\(k)` is required") }
        }
        switch cls {
        case "unknown": v += unknownKeys(o, ["class"], at: path)
        case "bool":
            v += unknownKeys(o, ["class", "value"], at: path)
            if case .bool? = o["value"] {} else { v.append("\(path).value: a boolean is required") }
        case "string":
            v += unknownKeys(o, ["class", "value"], at: path)
            str("value", required: true)
        case _ where numberClasses.contains(cls):
            v += unknownKeys(o, ["class", "value", "low", "high"], at: path)
            let value = o["value"], low = o["low"], high = o["high"]
            func bound(_ x: LJSON?) -> Double? {
                switch x {
                case .string("-inf")?: -.infinity
                case .string("+inf")?: .infinity
                default: x?.number
                }
            }
            if let value, !value.isNumber { v.append("\(path).value: not a number") }
            for (k, x) in [("low", low), ("high", high)] { if let x, bound(x) == nil { v.append("\(path).\(k): not a number, \"-inf\" or \"+inf\"") } }
            if value == nil && (low == nil || high == nil) { v.append("\(path): `value`, or both `low` and `high`, are required") }
            if (low == nil) != (high == nil) { v.append("\(path): `low` and `high` go together (Trace Compass refuses one alone)") }
            let val = value?.number, lo = bound(low) ?? val, hi = bound(high) ?? val
            if let lo, let hi { let m = val ?? lo; if !(lo <= m && m <= hi) { v.append("\(path): low ≤ value ≤ high does not hold") } }
            if integerNumberClasses.contains(cls) {
                for (k, x) in [("value", value), ("low", low), ("high", high)] {
                    if let x, x.isNumber, x.int == nil { v.append("\(path).\(k): a \(cls) is an integer count of \(cls == "size" ? "bytes" : "ns")") }
                }
            }
            if cls == "timestamp", let t = val, t < 0 { v.append("\(path).value: a timestamp before the epoch") }
        case "time-range":
            v += unknownKeys(o, ["class", "begin", "end"], at: path)
            for k in ["begin", "end"] {
                if let x = o[k] {
                    if case .object = x { v += validateDataObject(x, expected: "timestamp", at: "\(path).\(k)") }
                    else { v.append("\(path).\(k): a timestamp object is required (a bare number is LAMI 0.1)") }
                } else { v.append("\(path): `\(k)` is required") }
            }
            if let b = o["begin"]?["value"]?.number, let e = o["end"]?["value"]?.number, e < b { v.append("\(path): end before begin") }
        case "syscall", "disk", "part", "netif":
            v += unknownKeys(o, ["class", "name"], at: path)
            str("name", required: true)
        case "process":
            v += unknownKeys(o, ["class", "name", "pid", "tid"], at: path)
            str("name", required: false)
            integer("pid", required: false)
            integer("tid", required: false)
        case "path":
            v += unknownKeys(o, ["class", "path"], at: path)
            str("path", required: true)
        case "fd":
            v += unknownKeys(o, ["class", "fd"], at: path)
            integer("fd", required: true)
        case "irq":
            v += unknownKeys(o, ["class", "hard", "nr", "name"], at: path)
            if let h = o["hard"], case .bool = h {} else if o["hard"] != nil { v.append("\(path).hard: not a boolean") }
            integer("nr", required: true)
            str("name", required: false)
        case "cpu":
            v += unknownKeys(o, ["class", "id"], at: path)
            integer("id", required: true)
        default: break
        }
        return v
    }

    // MARK: errors and the compatibility test phase

    /// An error object: `error-message` (string, required), `error-code` (string or number).
    static func validateError(_ doc: LJSON) -> [String] {
        guard case .object = doc else { return ["error: not a JSON object"] }
        var v = unknownKeys(doc, ["error-message", "error-code"], at: "error")
        if doc["error-message"]?.string == nil { v.append("error: `error-message` (a string) is required") }
        if let c = doc["error-code"], c.string == nil && !c.isNumber { v.append("error.error-code: neither a string nor a number") }
        return v
    }

    /// The standard output of a failed run: nothing, or one error object.
    static func validateErrorOutput(_ out: String) -> [String] {
        if out.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return [] }
        do { return validateError(try LJSONParser.parse(out)) } catch { return ["error output: not one JSON value: \(error)"] }
    }

    /// The compatibility test phase: exit 0 and nothing printed, or non-zero and nothing or an error object.
    static func validateCompatibility(out: String, status: Int32) -> [String] {
        if status == 0 {
            return out.isEmpty ? [] : ["compatibility: exit 0 must print nothing, printed \(out.debugDescription)"]
        }
        return validateErrorOutput(out)
    }

    static func unknownKeys(_ o: LJSON, _ allowed: Set<String>, at path: String) -> [String] {
        (o.objectKeys ?? []).filter { !allowed.contains($0) }.map { "\(path): unknown key \($0.debugDescription)" }
    }
}
