// What output escaping is checked against, by CTFReaderTests (UntrustedText's rules) and
// rltraceTests (hostile names through every command).

/// What a terminal must never receive raw: ESC, the other C0 controls but tab and newline, DEL, a C1
/// control, a bidirectional formatting character, or bytes that are not UTF-8. Empty when `bytes`
/// holds none; else what it found (with counts).
public func rawControls(_ bytes: [UInt8]) -> [String: Int] {
    var found: [String: Int] = [:]
    let esc = bytes.filter { $0 == 0x1B }.count
    if esc > 0 { found["ESC"] = esc }
    let c0 = bytes.filter { $0 < 0x20 && $0 != 0x0A && $0 != 0x09 && $0 != 0x1B }.count
    if c0 > 0 { found["C0"] = c0 }
    let del = bytes.filter { $0 == 0x7F }.count
    if del > 0 { found["DEL"] = del }
    guard let s = String(validating: bytes, as: UTF8.self) else {
        found["invalid UTF-8"] = 1
        return found
    }
    let bidi: Set<UInt32> = [0x61C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069]
    for u in s.unicodeScalars {
        if (0x80...0x9F).contains(u.value) { found["C1", default: 0] += 1 }
        if bidi.contains(u.value) { found["bidi", default: 0] += 1 }
    }
    return found
}
