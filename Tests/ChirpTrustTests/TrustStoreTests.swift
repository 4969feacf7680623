import Foundation
import Testing

@testable import ChirpTrust

/// Trust files: what parses, what is refused as a whole and with which line, and writing back without disturbing
/// the other lines.
@Suite(.timeLimit(.minutes(1))) struct TrustStoreTests {
    static let laptop = Fingerprint(spki: Array("laptop".utf8))
    static let tablet = Fingerprint(spki: Array("tablet".utf8))
    static let viewer = Fingerprint(spki: Array("viewer".utf8))

    static let file = """
        # Devices that may connect to listr.

        \(laptop)  laptop
        \(tablet)\tkitchen tablet   perms=read
          # the log viewer on the NAS
        \(String(viewer.description.dropFirst(6)).uppercased().replacingOccurrences(of: "-", with: "")) nas perms=logs
        \(Fingerprint(spki: Array("muted".utf8))) muted perms=none

        """

    @Test func parsesEntriesCommentsAndBlankLines() throws {
        let store = try TrustStore(parsing: Self.file)
        #expect(store.entries.map(\.label) == ["laptop", "kitchen tablet", "nas", "muted"])
        #expect(store.entry(for: Self.laptop)?.permissions == Permission.defaults)
        #expect(store.entry(for: Self.tablet)?.permissions == [.read])
        #expect(store.entry(for: Self.viewer)?.permissions == [.logs])
        #expect(store.entries.last?.permissions == [])
        #expect(Permission.defaults == [.read, .write, .logs])
        // Written back as it was read, byte for byte.
        #expect(store.text == Self.file)
        #expect(try TrustStore(parsing: "").entries.isEmpty)
    }

    @Test func windowsLineEndsAreRead() throws {
        let store = try TrustStore(parsing: "# devices\r\n\(Self.laptop) laptop perms=read,write\r\n")
        #expect(store.entries == [TrustEntry(fingerprint: Self.laptop, label: "laptop", permissions: [.read, .write])])
        #expect(store.text == "# devices\n\(Self.laptop) laptop perms=read,write\n")
    }

    /// Each malformed line: the error names the file, the line and what to change.
    @Test(arguments: [
        ("chirp:abcd laptop", 2, "is not a device's fingerprint: it has 4 characters"),
        ("\(Self.laptop)", 2, "no label after the fingerprint"),
        ("\(Self.laptop) perms=read", 2, "no label after the fingerprint"),
        ("\(Self.laptop) laptop perms=read,rwite", 2, "unknown permission 'rwite'"),
        ("\(Self.laptop) laptop perms=read,,write", 2, "unknown permission ''"),
        ("\(Self.laptop) laptop perms=", 2, "perms= lists nothing"),
        ("\(Self.laptop) viewer perms=logs # the NAS", 2, "'perms=logs' is not the last word of the line"),
        ("laptop \(Self.laptop)", 2, "is not a device's fingerprint"),
        ("\(Self.tablet) t\n\(Self.laptop) a\n\(Self.laptop) b", 4, "is listed already on line 3 (\"a\")")
    ])
    func aMalformedLineRefusesTheWholeFile(line: String, number: Int, problem: String) {
        let text = "# trusted\n\(line)\n\(Self.viewer) fine\n"
        let error = #expect(throws: TrustStore.ParseError.self) {
            try TrustStore(parsing: text, path: "/home/me/.config/chirp/trust/listr")
        }
        #expect(error?.line == number)
        #expect(error?.problem.contains(problem) == true, "\(String(describing: error))")
        #expect(error?.description.hasPrefix("/home/me/.config/chirp/trust/listr:\(number): ") == true)
        #expect(error?.description.contains("the trust file was not used") == true)
    }

    @Test func aTypoInAFingerprintSaysSo() {
        var typo = Array(Self.laptop.description)
        typo[11] = typo[11] == "a" ? "b" : "a"
        let error = #expect(throws: TrustStore.ParseError.self) {
            try TrustStore(parsing: "\(String(typo)) laptop\n")
        }
        #expect(error?.problem.contains("mistyped") == true)
    }

    @Test func addingAndRemovingKeepsTheOtherLines() throws {
        var store = try TrustStore(parsing: Self.file)
        let phone = Fingerprint(spki: Array("phone".utf8))
        try store.add(TrustEntry(fingerprint: phone, label: "phone", permissions: [.read, .admin]))
        #expect(store.text == Self.file + "\(phone) phone perms=read,admin\n")
        #expect(store.remove(Self.tablet)?.label == "kitchen tablet")
        #expect(store.remove(Self.tablet) == nil)
        let expected =
            Self.file.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix(Self.tablet.description) }.joined(separator: "\n")
            + "\(phone) phone perms=read,admin\n"
        #expect(store.text == expected)
        // What is written reads back the same.
        #expect(try TrustStore(parsing: store.text) == store)
    }

    @Test func addingATrustedFingerprintAgainIsRefused() throws {
        var store = try TrustStore(parsing: Self.file)
        let before = store
        #expect(throws: TrustStore.DuplicateError.self) {
            try store.add(TrustEntry(fingerprint: Self.laptop, label: "other"))
        }
        #expect(store == before)
    }

    @Test func labelsFromAPeerStayOnTheirLineAndReadBack() throws {
        var store = TrustStore()
        let hostile = TrustEntry(
            fingerprint: Self.laptop, label: "evil\n\(Self.tablet) forged\u{1B}]0;x\u{07}  perms=admin")
        try store.add(hostile)
        #expect(store.text.split(separator: "\n").count == 1)
        #expect(store.text.hasSuffix("perms:admin\n"))
        let read = try TrustStore(parsing: store.text)
        #expect(read.entries == [hostile])
        #expect(read.entry(for: Self.tablet) == nil)
        #expect(read.entries.first?.permissions == Permission.defaults)
        #expect(TrustEntry(fingerprint: Self.laptop, label: "   ").label == "unnamed")
    }

    @Test func aLabelReadFromTheFileIsShownEscaped() throws {
        let store = try TrustStore(parsing: "\(Self.laptop) bell\u{07}and\u{1B}[31mred\n")
        #expect(store.entries.first?.shownLabel == "bell\\u{7}and\\u{1B}[31mred")
    }
}
