import ChirpSupport

/// The pins file of trust on first use (`known-peers`, as SSH's `known_hosts`): one pin per line, the fingerprint
/// then the peer name it was first seen under.
///
/// ```
/// # Identities first seen under each peer name.
/// chirp:abcd-...-x laptop
/// chirp:abcd-...-x laptop (renamed)
/// chirp:efgh-...-y kitchen tablet
/// ```
///
/// The name is the rest of the line after one space or tab, as written (names are untrusted text: control
/// characters are written escaped, `\n`, `\u{1B}`, so a pin stays on its line). Blank lines and lines starting with
/// `#` are comments; they are not kept when the file is written again (the file is the app's, not a person's).
/// Parsing is all or nothing, as for ``TrustStore``: a fingerprint with a typo, a line without a name, or a name
/// pinned twice throws a ``TrustStore/ParseError`` naming the line.
extension TrustPins {
    /// The pins the text of a pins file describes.
    ///
    /// - Parameter path: the file, for the error's sentence.
    package init(parsing text: String, path: String = "pins file") throws(TrustStore.ParseError) {
        var pins: [String: Fingerprint] = [:]
        var lineOf: [String: Int] = [:]
        var rawLines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        if rawLines.last == "" { rawLines.removeLast() }
        for (index, raw) in rawLines.enumerated() {
            let number = index + 1
            let line = String(raw)
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let separator = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }) else {
                throw TrustStore.ParseError(
                    path: path, line: number, problem: "a pin needs a fingerprint and a peer name after it")
            }
            let fingerprint: Fingerprint
            do {
                fingerprint = try Fingerprint(parsing: String(trimmed[..<separator]))
            } catch {
                throw TrustStore.ParseError(path: path, line: number, problem: error.description)
            }
            let name = String(trimmed[trimmed.index(after: separator)...])
            if let earlier = lineOf[name] {
                throw TrustStore.ParseError(
                    path: path, line: number,
                    problem: "the name \"\(name)\" is pinned already on line \(earlier): keep one of the two lines")
            }
            lineOf[name] = number
            pins[name] = fingerprint
        }
        self.init(pins)
    }

    /// The pins file's text: a comment that says what the file is, then one line per pin, sorted by name.
    package var text: String {
        var text =
            "# Chirp: the identity first seen under each peer name (trust on first use). A peer that shows another\n"
        text += "# identity under a pinned name is refused; delete its line to accept the new one.\n"
        for (name, fingerprint) in all.sorted(by: { $0.key < $1.key }) {
            text += "\(fingerprint) \(name)\n"
        }
        return text
    }
}
