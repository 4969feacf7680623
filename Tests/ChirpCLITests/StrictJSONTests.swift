import Foundation
import Testing

@testable import chirp

/// The JSON `chirp send` accepts: RFC 8259 exactly. Foundation's parser on Linux takes some JSON5 (a trailing comma,
/// a byte order mark); every form RFC 8259 does not allow is refused here, with what is wrong and where.
@Suite(.timeLimit(.minutes(1))) struct StrictJSONTests {
    @Test(arguments: [
        "{}", "[]", #"{"text":"hi"}"#, " \t\r\n{ \"a\" : [ 1 , -2.5e+3 , true , false , null ] }\n ",
        "0", "-0", "-0.0e-0", "1E9", "0e5", "123.456", #""a string""#, "true", "null",
        #"{"a":{"b":{"c":[[[]]]}}}"#, #"["\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"]"#, "\"é 中 😀\"",
        #"{"dup":1,"dup":2}"#, #"{"":0}"#, "[1,[2,[3,{}]]]"
    ])
    func acceptsRFC8259JSON(_ text: String) throws {
        try StrictJSON.check(Array(text.utf8))
    }

    @Test(arguments: [
        (#"{"text":"x",}"#, "a trailing comma before '}' (line 1, column 12)"),
        ("[1,2,]", "a trailing comma before ']' (line 1, column 5)"),
        ("{\n  // note\n  \"a\": 1\n}", "a comment; JSON has none (line 2, column 3)"),
        ("[1, /* two */ 2]", "a comment; JSON has none (line 1, column 5)"),
        ("{'a': 1}", "a single-quoted key; JSON strings take double quotes (line 1, column 2)"),
        (#"{"a": 'b'}"#, "a single-quoted string; JSON strings take double quotes (line 1, column 7)"),
        ("{a: 1}", "an object key must be a string in double quotes, found 'a' (line 1, column 2)"),
        ("NaN", "NaN is not a JSON number (line 1, column 1)"),
        ("[Infinity]", "Infinity is not a JSON number (line 1, column 2)"),
        ("-Infinity", "-Infinity is not a JSON number (line 1, column 1)"),
        ("[01]", "a number with a leading zero (line 1, column 2)"),
        ("0x1F", "a hexadecimal number; JSON numbers are decimal (line 1, column 1)"),
        ("+1", "a number with a plus sign; JSON numbers have none (line 1, column 1)"),
        (".5", "a number without a digit before its decimal point (line 1, column 1)"),
        ("5.", "a number without a digit after its decimal point (line 1, column 1)"),
        ("1e", "a number without digits in its exponent (line 1, column 1)"),
        ("-", "a minus sign without digits (line 1, column 1)"),
        ("True", "'T' where a value should be (line 1, column 1)"),
        ("[tru]", "'tru' where a value should be (true, false and null are lower case) (line 1, column 2)"),
        (
            "\"a\tb\"",
            "a raw control character U+0009 in a string; write it as an escape (\\n, \\t, \\u00XX) (line 1, column 3)"
        ),
        (#""\x41""#, "an invalid escape \\x in a string (line 1, column 2)"),
        (#""\u12""#, "a \\u escape needs four hexadecimal digits (line 1, column 2)"),
        (
            #""\uD800""#,
            "\\uD800 is the first half of a UTF-16 surrogate pair, without its second half (line 1, column 2)"
        ),
        (
            #""\uDC00x""#,
            "\\uDC00 is the second half of a UTF-16 surrogate pair, without its first half (line 1, column 2)"
        ),
        (#"{"a" 1}"#, "expected ':' after the object key, found '1' (line 1, column 6)"),
        (#"{"a":}"#, "a value is missing before '}' (line 1, column 6)"),
        ("[1 2]", "expected ',' or ']' after an array element, found '2' (line 1, column 4)"),
        (#"{"a":1 "b":2}"#, "expected ',' or '}' after an object member, found '\"' (line 1, column 8)"),
        ("[,1]", "a value is missing before ',' (line 1, column 2)"),
        ("{} {}", "'{' after the JSON value; give one value only (line 1, column 4)"),
        ("[1", "the array is not closed (a ']' is missing) (line 1, column 3)"),
        (#"{"a":1"#, "the object is not closed (a '}' is missing) (line 1, column 7)"),
        (#""open"#, "the string is not closed (a '\"' is missing) (line 1, column 1)"),
        ("   ", "no JSON value, only whitespace (line 1, column 4)"),
        ("\u{FEFF}{}", "a byte order mark (U+FEFF) before the JSON value; JSON text has none (line 1, column 1)"),
        ("[\"é\" ,, 1]", "a value is missing before ',' (line 1, column 7)")
    ])
    func refusesAnythingElseSayingWhatAndWhere(_ text: String, _ expected: String) {
        #expect(throws: StrictJSON.SyntaxError.self) { try StrictJSON.check(Array(text.utf8)) }
        do {
            try StrictJSON.check(Array(text.utf8))
        } catch {
            #expect(error.description == expected, "\(text)")
        }
    }

    @Test func refusesBytesThatAreNotUTF8() {
        let bytes: [UInt8] = Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        #expect(throws: StrictJSON.SyntaxError(problem: "bytes that are not UTF-8", line: 1, column: 7)) {
            try StrictJSON.check(bytes)
        }
    }

    @Test func deepNestingNeedsNoRecursion() throws {
        let depth = 200_000
        try StrictJSON.check(
            Array(repeating: UInt8(ascii: "["), count: depth) + Array(repeating: UInt8(ascii: "]"), count: depth))
        #expect(throws: StrictJSON.SyntaxError.self) {
            try StrictJSON.check(Array(repeating: UInt8(ascii: "["), count: depth))
        }
    }

    /// The forms Foundation's parser accepts on this platform that RFC 8259 does not: the reason for `StrictJSON`.
    /// Informative (it records what Foundation does; the check above refuses them all either way).
    @Test func foundationAcceptsSomeOfTheseWhichIsWhyChirpChecksItself() {
        let lenient = [#"{"text":"x",}"#, "[1,2,]", "\u{FEFF}{}", "{\"a\": 1 // c\n}", "{a: 1}", "NaN", "[01]", "'x'"]
            .filter {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8), options: [.fragmentsAllowed])) != nil
            }
        for text in lenient {
            #expect(throws: StrictJSON.SyntaxError.self, "Foundation takes \(text)") {
                try StrictJSON.check(Array(text.utf8))
            }
        }
    }
}
