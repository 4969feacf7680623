import ChirpTrust
import Testing

/// The pins file of trust on first use: written, read back the same, refused whole when a line is wrong.
@Suite(.timeLimit(.minutes(1))) struct TrustPinsTextTests {
    let laptop = Fingerprint(spki: Array("laptop".utf8))
    let tablet = Fingerprint(spki: Array("tablet".utf8))

    @Test func pinsReadBackAsTheyWereWrittenNamesWithSpacesAndControlCharactersIncluded() throws {
        var pins = TrustPins()
        pins.pin(laptop, name: "laptop")
        pins.pin(laptop, name: "laptop (renamed)")
        pins.pin(tablet, name: "kitchen\ttablet\u{1B}[31m")
        let text = pins.text
        #expect(text.hasPrefix("# Chirp:"))
        #expect(!text.contains("\u{1B}"))  // written escaped: one pin per line, nothing for a terminal
        let read = try TrustPins(parsing: text, path: "known-peers")
        #expect(read == pins)
        #expect(read.fingerprint(for: "kitchen\ttablet\u{1B}[31m") == tablet)
        #expect(read.fingerprint(for: "laptop (renamed)") == laptop)
        #expect(read.fingerprint(for: "other") == nil)
    }

    @Test func aWrongLineRefusesTheWholeFileNamingTheLine() throws {
        let good = "\(laptop) laptop\n"
        for (text, line, problem) in [
            (good + "chirp:abcd laptop2\n", 2, "not a fingerprint"),
            (good + "\(tablet)\n", 2, "a pin needs a fingerprint and a peer name"),
            (good + "# comment\n\(tablet) laptop\n", 3, "pinned already on line 1")
        ] {
            let error = #expect(throws: TrustStore.ParseError.self) {
                try TrustPins(parsing: text, path: "known-peers")
            }
            #expect(error?.line == line, "\(text)")
            #expect(error?.problem.contains(problem) == true, "\(String(describing: error))")
        }
        // The positive control: the good line alone is read.
        #expect(try TrustPins(parsing: good).fingerprint(for: "laptop") == laptop)
    }
}
