import Testing

@testable import Chirp
@testable import ChirpSupport

/// Strings from other peers are printed and logged through `UntrustedText.escaped`: none of them can start a new line
/// or reach the terminal as a control sequence.
@Suite(.timeLimit(.minutes(5))) struct UntrustedTextTests {
    @Test(arguments: [
        ("x\n2026-11-24 critical receiver: FORGED LINE", "x\\n2026-11-24 critical receiver: FORGED LINE"),
        ("\u{1B}]0;TITLE\u{07}", "\\u{1B}]0;TITLE\\u{7}"),
        ("a\rb\tc", "a\\rb\\tc"),
        ("csi\u{9B}2J", "csi\\u{9B}2J"),
        ("del\u{7F}", "del\\u{7F}"),
        ("nul\u{0}", "nul\\u{0}"),
        ("sep\u{2028}line", "sep\\u{2028}line"),
        ("bidi\u{202E}txt.exe", "bidi\\u{202E}txt.exe")
    ])
    func controlCharactersAreEscaped(input: String, expected: String) {
        #expect(UntrustedText.escaped(input) == expected)
    }

    @Test func ordinaryTextIsKeptAsItIs() {
        // The positive control for the cases above: letters of any script, emoji, quotes and backslashes pass through.
        for text in ["chat.line", "Zoë's Mac", "東京", "👋 hi", #"a\b "quoted""#, ""] {
            #expect(UntrustedText.escaped(text) == text)
        }
    }

    @Test func theEscapedFormHasNoControlCharacterLeft() {
        let hostile = String(decoding: (0...0xFF).map { UInt8($0) }, as: UTF8.self) + "\u{2029}\u{2066}"
        let escaped = UntrustedText.escaped(hostile)
        #expect(!escaped.unicodeScalars.contains(where: UntrustedText.needsEscape))
        #expect(!escaped.contains("\n"))
    }
}
