#if canImport(Glibc)
import Glibc
#endif

// Text from a trace written into a ``ByteSink``, escaped by ``UntrustedText``'s loop, with the fast
// path of `rltrace dump`'s string fields: a string that needs no escape (nearly all of them) is
// recognised eight bytes at a time and copied whole.

extension ByteSink: EscapeOutput {
    @inline(__always) func put(_ b: UInt8) { byte(b) }
    @inline(__always) func put(_ p: UnsafePointer<UInt8>, _ n: Int) { bytes(p, n) }
}

extension ByteSink {
    /// Appends raw string bytes from a trace quoted for text (`json` false: a babeltrace2 string literal) or
    /// JSON, escaped as ``UntrustedText`` says: ASCII is escaped in place; anything else first goes through
    /// `String(decoding:as:)` so that invalid UTF-8 becomes U+FFFD, exactly as the decoded `CTFValue.string`
    /// would print.
    @inline(__always)
    func quotedRaw(_ bytes: UnsafeRawBufferPointer, json: Bool) {
        if let p = bytes.baseAddress, ByteSink.isPlain(p, bytes.count, json: json) {
            let n = bytes.count
            byte(34)
            self.bytes(p.assumingMemoryBound(to: UInt8.self), n)
            byte(34)
        } else if ByteSink.isASCII(bytes) {
            quoted(bytes, json: json)
        } else {
            var s = String(decoding: bytes, as: UTF8.self)
            s.withUTF8 { quoted(UnsafeRawBufferPointer($0), json: json) }
        }
    }

    /// Appends a Swift string quoted for text (a babeltrace2 string literal) or JSON.
    func quoted(_ s: String, json: Bool) {
        var s = s
        s.withUTF8 { quoted(UnsafeRawBufferPointer($0), json: json) }
    }

    /// Appends a Swift string for a terminal, unquoted (``UntrustedText/terminal(_:)``): names from the
    /// metadata in a text line.
    func terminalText(_ s: String) {
        var s = s
        var out = self
        s.withUTF8 { u in if let p = u.baseAddress { UntrustedText.escape(p, u.count, .terminal, into: &out) } }
    }

    /// Valid UTF-8 in double quotes, escaped by ``UntrustedText``'s loop.
    private func quoted(_ b: UnsafeRawBufferPointer, json: Bool) {
        byte(34)
        if let p = b.baseAddress?.assumingMemoryBound(to: UInt8.self) {
            var out = self
            UntrustedText.escape(p, b.count, json ? .json : .quoted, into: &out)
        }
        byte(34)
    }

    /// Whether none of the `n` bytes at `p` needs an escape or UTF-8 repair: the ASCII bytes
    /// ``UntrustedText`` escapes and the bytes from 0x80, checked eight bytes at a time.
    @inline(__always)
    private static func isPlain(_ p: UnsafeRawPointer, _ n: Int, json: Bool) -> Bool {
        @inline(__always) func special(_ x: UInt64) -> UInt64 {
            let ones: UInt64 = 0x0101_0101_0101_0101
            @inline(__always) func equal(_ c: UInt64) -> UInt64 { let e = x ^ (ones &* c); return (e &- ones) & ~e }
            // Per byte, the high bit flags: below 0x20 (a borrow), equal to `"`, `\` or DEL (zero after the
            // xor), or 0x80 and above; for text also `'` and `?`. Exact as to whether any byte is flagged.
            let common = ((x &- ones &* 0x20) & ~x) | equal(0x22) | equal(0x5C) | equal(0x7F) | x
            return json ? common : common | equal(0x27) | equal(0x3F)
        }
        let high: UInt64 = 0x8080_8080_8080_8080
        if n < 8 {
            var x: UInt64 = 0x6161_6161_6161_6161   // padded with `a`
            for i in 0..<n { x = (x << 8) | UInt64(p.load(fromByteOffset: i, as: UInt8.self)) }
            return special(x) & high == 0
        }
        var acc: UInt64 = 0
        var i = 0
        while i + 8 <= n {
            acc |= special(p.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i += 8
        }
        if i < n { acc |= special(p.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)) }
        return acc & high == 0
    }

    @inline(__always)
    private static func isASCII(_ b: UnsafeRawBufferPointer) -> Bool {
        guard let p = b.baseAddress else { return true }
        let n = b.count
        var i = 0
        while i + 8 <= n {
            if p.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            i += 8
        }
        while i < n {
            if p.load(fromByteOffset: i, as: UInt8.self) >= 0x80 { return false }
            i += 1
        }
        return true
    }

    /// Appends a double like C's `%g` (glibc's `gcvt` with 6 digits is `%.6g`; at most 64 bytes).
    func general(_ d: Double) {
        reserving(64) { c in
            _ = gcvt(d, 6, UnsafeMutableRawPointer(c.p).assumingMemoryBound(to: CChar.self))
            c.p += strlen(UnsafeRawPointer(c.p).assumingMemoryBound(to: CChar.self))
        }
    }
}
