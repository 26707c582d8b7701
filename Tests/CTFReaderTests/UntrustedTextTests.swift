import Foundation
import Testing
import CTFReader

/// The escapers' rules, exactly (docs/output-escaping.md).
@Suite("UntrustedText: one rule per output format")
struct UntrustedTextRules {
    @Test func terminal() {
        #expect(UntrustedText.terminal("plain name-1.2 ünï ✓") == "plain name-1.2 ünï ✓")
        #expect(UntrustedText.terminal("\u{1B}]0;T\u{07}\u{1B}[2J") == "\\e]0;T\\a\\e[2J")
        #expect(UntrustedText.terminal("\u{0}\u{1}\u{8}\u{9}\u{A}\u{B}\u{C}\u{D}\u{1F}\u{7F}") == "\\x00\\x01\\b\\t\\n\\v\\f\\r\\x1f\\x7f")
        #expect(UntrustedText.terminal("a\\b\"c'd?") == "a\\\\b\"c'd?")
        #expect(UntrustedText.terminal("\u{80}\u{85}\u{9B}\u{9F}\u{A0}") == "\\u{80}\\u{85}\\u{9b}\\u{9f}\u{A0}")
        #expect(UntrustedText.terminal("\u{61C}\u{200E}\u{200F}\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}\u{2066}\u{2067}\u{2068}\u{2069}")
                == "\\u{61c}\\u{200e}\\u{200f}\\u{202a}\\u{202b}\\u{202c}\\u{202d}\\u{202e}\\u{2066}\\u{2067}\\u{2068}\\u{2069}")
        // Neighbours of the escaped code points are themselves.
        #expect(UntrustedText.terminal("\u{61B}\u{200D}\u{2029}\u{202F}\u{2065}\u{206A}\u{FFFD}") == "\u{61B}\u{200D}\u{2029}\u{202F}\u{2065}\u{206A}\u{FFFD}")
        #expect(UntrustedText.quotedTerminal("a\"b'c?d\\e\u{1B}\u{202E}") == "\"a\\\"b\\'c\\?d\\\\e\\e\\u{202e}\"")
    }

    @Test func json() throws {
        let hostile = "q\"b\\\u{0}\u{8}\u{9}\u{A}\u{C}\u{D}\u{1B}\u{7F}\u{85}\u{202E}\u{2066}é✓"
        let j = UntrustedText.json(hostile)
        #expect(j == "\"q\\\"b\\\\\\u0000\\u0008\\t\\n\\u000c\\r\\u001b\\u007f\\u0085\\u202e\\u2066é✓\"")
        #expect(try JSONSerialization.jsonObject(with: Data(j.utf8), options: [.fragmentsAllowed]) as? String == hostile)
        var out: [UInt8] = []
        [0xFF, 0x41, 0xC3].withUnsafeBufferPointer { UntrustedText.appendJSON($0, to: &out) }
        #expect(out == Array("\"\u{FFFD}A\u{FFFD}\"".utf8))
        out = []
        [0x61, 0xE2, 0x80].withUnsafeBufferPointer { UntrustedText.appendJSON($0, to: &out) }
        #expect(out == Array("\"a\u{FFFD}\"".utf8))
        // An encoder's JSON: only DEL, C1 and bidi change, and it decodes to the same document.
        let encoded = try JSONEncoder().encode(["k\u{202E}": hostile])
        let hardened = UntrustedText.hardenJSON(Array(encoded))
        #expect(rawControls(Array(hardened.utf8)).isEmpty)
        #expect(try JSONSerialization.jsonObject(with: Data(hardened.utf8)) as? [String: String] == ["k\u{202E}": hostile])
    }

    @Test func csv() {
        #expect(UntrustedText.csv("plain") == "plain")
        #expect(UntrustedText.csv("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"")
        #expect(UntrustedText.csv("+1") == "'+1")
        #expect(UntrustedText.csv("-2") == "'-2")
        #expect(UntrustedText.csv("@SUM(A1)") == "'@SUM(A1)")
        #expect(UntrustedText.csv("a,b\nc\u{1B}") == "\"a,b\\nc\\e\"")
        #expect(UntrustedText.csv(" pad") == "\" pad\"")
        #expect(UntrustedText.csv("\t=x") == "\\t=x")
    }

    @Test func html() {
        #expect(UntrustedText.html("<script>&\"'\u{1B}\u{202E}") == "&lt;script&gt;&amp;&quot;&#39;\\e\\u{202e}")
        #expect(UntrustedText.htmlEntities("\\e <b>") == "\\e &lt;b&gt;")
    }
}
