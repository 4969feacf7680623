import Foundation
import Testing

@testable import ChirpTrust

/// A fingerprint's readable form: base32 in groups of 4 and a Luhn mod 32 check character. The expected strings come
/// from Python (hashlib, base64.b32encode and the same Luhn mod N), not from this code.
@Suite(.timeLimit(.minutes(1))) struct FingerprintTests {
    /// The fingerprint of an empty SubjectPublicKeyInfo (SHA-256 of nothing: e3b0c442...).
    static let empty = Fingerprint(spki: [])
    static let emptyText = "chirp:4oym-iquy-7qob-jgx3-6tej-s35z-eqt2-4qpe-msnz-gtfe-swmr-w6cs-xbkq-l"

    @Test func readableFormMatchesAnIndependentEncoder() {
        #expect(Self.empty.description == Self.emptyText)
        #expect(
            Fingerprint(spki: Array("chirp".utf8)).description
                == "chirp:ss2k-t6jo-iuvv-hdp4-wrzv-5ua7-fofh-7vcm-43zh-q72q-oqsc-bex3-3xrq-k")
        #expect(
            Fingerprint(spki: (0..<91).map { UInt8($0) }).description
                == "chirp:ldjj-iwns-cmfc-4fis-klka-rok6-nwwe-etcw-ibro-xei4-y5se-bs4s-nsqa-2")
        #expect(Self.empty.bytes.prefix(4) == [0xE3, 0xB0, 0xC4, 0x42])
    }

    @Test func parsingAcceptsWhatAPersonTypes() throws {
        let bare = String(Self.emptyText.dropFirst(Fingerprint.prefix.count))
        for text in [
            Self.emptyText, Self.emptyText.uppercased(), bare, bare.replacingOccurrences(of: "-", with: ""),
            "  " + bare.replacingOccurrences(of: "-", with: " ") + "\n", "CHIRP:" + bare
        ] {
            #expect(try Fingerprint(parsing: text) == Self.empty, "\(text)")
        }
    }

    @Test func everySingleMistypedCharacterIsCaught() {
        let characters = Array(String(Self.emptyText.dropFirst(Fingerprint.prefix.count)).filter { $0 != "-" })
        #expect(characters.count == Fingerprint.characterCount)
        var caught = 0
        for position in characters.indices {
            for replacement in "abcdefghijklmnopqrstuvwxyz234567" where replacement != characters[position] {
                var typo = characters
                typo[position] = replacement
                #expect(throws: FingerprintError(.checkFailed)) { try Fingerprint(parsing: String(typo)) }
                caught += 1
            }
        }
        #expect(caught == 53 * 31)
    }

    @Test func mostSwapsOfNeighboursAreCaught() {
        let characters = Array(String(Self.emptyText.dropFirst(Fingerprint.prefix.count)).filter { $0 != "-" })
        var swaps = 0
        var caught = 0
        for position in characters.indices.dropLast() where characters[position] != characters[position + 1] {
            var typo = characters
            typo.swapAt(position, position + 1)
            swaps += 1
            if (try? Fingerprint(parsing: String(typo))) == nil { caught += 1 }
        }
        // Luhn mod 32 misses a swap only of two characters whose doubled values keep the sum (1 pair in 32).
        #expect(caught >= swaps - 2, "\(caught) of \(swaps)")
    }

    @Test func errorsSayWhatIsWrongAndWhatToDo() {
        let missing = String(Self.emptyText.dropLast())
        #expect(throws: FingerprintError(.wrongLength(52))) { try Fingerprint(parsing: missing) }
        #expect(FingerprintError(.wrongLength(52)).description.contains("1 missing"))
        #expect(FingerprintError(.wrongLength(54)).description.contains("1 too many"))

        var zero = Array(Self.emptyText)
        zero[7] = "0"  // the second character after the prefix: 'o' in the original
        #expect(throws: FingerprintError(.invalidCharacter("0", position: 2))) {
            try Fingerprint(parsing: String(zero))
        }
        #expect(FingerprintError(.invalidCharacter("0", position: 2)).description.contains("did you mean 'o'?"))
        #expect(FingerprintError(.checkFailed).description.contains("mistyped"))

        for blank in ["", "chirp:", "  -- "] {
            #expect(throws: FingerprintError(.empty)) { try Fingerprint(parsing: blank) }
        }
        // A character from the terminal is shown escaped.
        #expect(FingerprintError(.invalidCharacter("\u{1B}", position: 1)).description.contains("\\u{1B}"))
    }

    @Test func shortFormIsTheFirstTwoGroups() {
        #expect(Self.empty.short == "chirp:4oym-iquy")
    }

    @Test func digestOfAnotherLengthIsNotAFingerprint() {
        #expect(Fingerprint(digest: [UInt8](repeating: 1, count: 31)) == nil)
        #expect(Fingerprint(digest: Self.empty.bytes) == Self.empty)
    }

    @Test func codableAsItsReadableForm() throws {
        let data = try JSONEncoder().encode([Self.empty])
        #expect(String(decoding: data, as: UTF8.self) == "[\"\(Self.emptyText)\"]")
        #expect(try JSONDecoder().decode([Fingerprint].self, from: data) == [Self.empty])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Fingerprint].self, from: Data("[\"x\"]".utf8)) }
    }
}
