import CTFReader

// The renderers write through CTFReader's one byte buffer (Sources/CTFReader/Output: ``ByteSink``,
// its ``ByteCursor`` and writer thread), the one `rltrace dump`'s formatter writes through; what
// only the renderers need (durations, JSON strings into arrays) is added here.

extension ByteSink {
    /// Appends a duration as ``formatDuration(_:)`` writes it (`812ns`, `3.4µs`, `12.5ms`, `1.25s`).
    public func duration(_ ns: Int64) {
        reserving(ByteCursor.durationRoom) { $0.duration(ns) }
    }
}

/// `formatDuration(ns)` as bytes: the same rounding (to 3 significant digits below 100 of a unit,
/// whole units above), without going through `String`.
func appendDuration(_ ns: Int64, to out: inout [UInt8]) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ByteCursor.durationRoom) { t in
        var c = ByteCursor(t.baseAddress!)
        c.duration(ns)
        out.append(contentsOf: UnsafeBufferPointer(start: t.baseAddress!, count: c.p - t.baseAddress!))
    }
}

extension ByteCursor {
    /// `x.rounded()` (to nearest, halves away from zero) for 0 ≤ `x` < 2⁵³, without the libm call
    /// `rounded()` makes on x86-64's baseline: `x + 0.5` truncated, less one when that sum rounded
    /// up past `x + 0.5` (possible only just below a power of two, where the sum's spacing doubles;
    /// `Double(k) − x` is exact there).
    @inline(__always)
    static func roundedHalfAway(_ x: Double) -> UInt64 {
        var k = UInt64(x + 0.5)
        if Double(k) - x > 0.5 { k &-= 1 }
        return k
    }

    /// The most bytes ``duration(_:)`` writes.
    static let durationRoom = 32

    /// Writes a duration as ``formatDuration(_:)`` does (`812ns`, `3.4µs`, `12.5ms`, `1.25s`): 3
    /// significant digits below 100 of a unit, whole units above (at most ``durationRoom`` bytes).
    @inline(__always)
    public mutating func duration(_ ns: Int64) {
        let a = abs(Double(ns))
        if ns < 0 { byte(0x2D) }
        if a < 1_000 { uint(UInt64(a)); byte(0x6E); byte(0x73); return }
        let v: Double
        if a < 1_000_000 { v = a / 1e3 } else if a < 1_000_000_000 { v = a / 1e6 } else { v = a / 1e9 }
        if v >= 100 {
            uint(ByteCursor.roundedHalfAway(v))
        } else {
            let decimals = v >= 10 ? 1 : 2
            let k = ByteCursor.roundedHalfAway(v * (decimals == 1 ? 10 : 100))
            let scale: UInt64 = decimals == 1 ? 10 : 100
            uint(k / scale)
            var frac = k % scale
            if frac != 0 {
                byte(0x2E)
                if decimals == 2 {
                    if frac % 10 == 0 { frac /= 10; byte(0x30 &+ UInt8(frac)) } else {
                        byte(0x30 &+ UInt8(frac / 10)); byte(0x30 &+ UInt8(frac % 10))
                    }
                } else {
                    byte(0x30 &+ UInt8(frac))
                }
            }
        }
        if a < 1_000_000 { byte(0xC2); byte(0xB5); byte(0x73) }        // µs
        else if a < 1_000_000_000 { byte(0x6D); byte(0x73) }           // ms
        else { byte(0x73) }                                            // s
    }
}

/// A JSON string literal of UTF-8 `bytes`, escaped as ``UntrustedText/json(_:)`` says.
@inline(__always)
func appendJSONString(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
    UntrustedText.appendJSON(bytes, to: &out)
}
