import ChirpSupport

/// The devices a transceiver trusts: the parsed content of a trust file, as `authorized_keys` is for SSH.
///
/// ```
/// # Devices that may connect to listr.
/// chirp:abcd-...-x  laptop
/// chirp:efgh-...-y  kitchen tablet   perms=read
/// chirp:ijkl-...-z  log viewer       perms=logs
/// ```
///
/// - One trusted device per line: its fingerprint (``Fingerprint``'s readable form, one word: dashes optional,
///   spaces not), a label (one or more words, required), and optionally `perms=` as the last word: a comma-separated
///   list of ``Permission``s (`read`, `write`, `logs`, `admin`), or `none`. Without it, ``Permission/defaults``;
///   a `perms=` word anywhere else is an error (a device would silently get the defaults).
/// - Words are separated by spaces or tabs; a line whose first non-blank character is `#` is a comment; blank lines
///   are kept. Lines may end with `\r\n`; they are written back with `\n`.
/// - Parsing is all or nothing: the first malformed line (a fingerprint with a typo, no label, an unknown
///   permission) or a fingerprint listed twice throws a ``ParseError`` naming the line and what to change, and no
///   store comes out, so an app keeps the store it had rather than half of a new one.
///
/// ``text`` writes the file back: the lines read are kept as they were, comments included; ``add(_:)`` appends a
/// line and ``remove(_:)`` drops one, touching no other.
public struct TrustStore: Sendable, Equatable {
    /// Why a trust file was refused: where (``path``, ``line``) and what to change (``problem``).
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The file, as given to ``TrustStore/init(parsing:path:)``.
        public let path: String
        /// The line, counted from 1.
        public let line: Int
        /// What is wrong with it and what to do, as a sentence.
        public let problem: String

        /// `PATH:LINE: PROBLEM`, then that the file was not used.
        public var description: String {
            "\(path):\(line): \(problem) (the trust file was not used: fix the line and it is read again)"
        }
    }

    /// Why an entry could not be added: its fingerprint is trusted already, under ``existing``.
    public struct DuplicateError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The entry that holds the fingerprint.
        public let existing: TrustEntry

        /// A sentence saying so.
        public var description: String {
            "\(existing.fingerprint) is trusted already, as \"\(existing.shownLabel)\": remove that entry first to change it"
        }
    }

    /// What starts the permissions word of a line.
    static let permissionsKey = "perms="

    /// A line of the file: an entry, or what is kept as it is (a comment, a blank line).
    private enum Line: Sendable, Equatable {
        case entry(TrustEntry, text: String)
        case other(String)
    }

    private var lines: [Line]

    /// An empty store: nobody is trusted.
    public init() { lines = [] }

    /// The store a trust file's `text` describes.
    ///
    /// - Parameter path: the file, for the error's sentence.
    /// - Throws: ``ParseError`` for the first line that is wrong, or that lists a fingerprint listed before.
    public init(parsing text: String, path: String = "trust file") throws(ParseError) {
        var lines: [Line] = []
        var seen: [Fingerprint: (line: Int, entry: TrustEntry)] = [:]
        // "\r\n" is one Character: a line ends at either.
        var rawLines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        if rawLines.last == "" { rawLines.removeLast() }
        for (index, line) in rawLines.enumerated() {
            let number = index + 1
            let trimmed = String(line).trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") {
                lines.append(.other(String(line)))
                continue
            }
            let entry: TrustEntry
            do {
                entry = try Self.entry(parsing: line)
            } catch {
                throw ParseError(path: path, line: number, problem: error.problem)
            }
            if let earlier = seen[entry.fingerprint] {
                throw ParseError(
                    path: path, line: number,
                    problem:
                        "\(entry.fingerprint.short) is listed already on line \(earlier.line) (\"\(earlier.entry.shownLabel)\"): keep one of the two lines"
                )
            }
            seen[entry.fingerprint] = (number, entry)
            lines.append(.entry(entry, text: String(line)))
        }
        self.lines = lines
    }

    /// The trusted devices, in the file's order.
    public var entries: [TrustEntry] {
        lines.compactMap { line in
            if case .entry(let entry, _) = line { return entry }
            return nil
        }
    }

    /// The entry of `fingerprint`, if the device is trusted.
    public func entry(for fingerprint: Fingerprint) -> TrustEntry? {
        entries.first { $0.fingerprint == fingerprint }
    }

    /// Trusts one more device: its line goes at the end.
    ///
    /// - Throws: ``DuplicateError`` when its fingerprint is trusted already (the store is unchanged).
    public mutating func add(_ entry: TrustEntry) throws(DuplicateError) {
        if let existing = self.entry(for: entry.fingerprint) { throw DuplicateError(existing: existing) }
        lines.append(.entry(entry, text: entry.line))
    }

    /// Stops trusting `fingerprint`: its line goes, the others stay as they are. Returns its entry, or nil when it
    /// was not trusted.
    @discardableResult
    public mutating func remove(_ fingerprint: Fingerprint) -> TrustEntry? {
        guard
            let index = lines.firstIndex(where: { line in
                if case .entry(let entry, _) = line { return entry.fingerprint == fingerprint }
                return false
            }), case .entry(let entry, _) = lines[index]
        else { return nil }
        lines.remove(at: index)
        return entry
    }

    /// The file's text: every line, as read or as added, each ended by `\n`.
    public var text: String {
        lines.map { line in
            switch line {
            case .entry(_, let text): text + "\n"
            case .other(let text): text + "\n"
            }
        }.joined()
    }

    // MARK: - One line

    /// What is wrong with a line, without its number.
    private struct LineError: Error {
        let problem: String
    }

    /// The entry a line (not blank, not a comment) describes.
    private static func entry(parsing line: Substring) throws(LineError) -> TrustEntry {
        var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
        guard let fingerprintWord = words.popFirst() else { throw LineError(problem: "the line is blank") }
        let fingerprint: Fingerprint
        do {
            fingerprint = try Fingerprint(parsing: String(fingerprintWord))
        } catch {
            throw LineError(problem: "the first word is not a device's fingerprint: \(error.reason)")
        }
        var permissions = Permission.defaults
        if let last = words.last, last.hasPrefix(permissionsKey) {
            permissions = try Self.permissions(parsing: last.dropFirst(permissionsKey.count))
            words.removeLast()
        }
        if let misplaced = words.first(where: { $0.hasPrefix(permissionsKey) }) {
            throw LineError(
                problem:
                    "'\(UntrustedText.escaped(misplaced))' is not the last word of the line: move perms= to the end (a comment after it needs a line of its own, starting with #)"
            )
        }
        guard !words.isEmpty else {
            throw LineError(
                problem:
                    "no label after the fingerprint: add a name for the device, as in `\(fingerprint.short)... laptop`")
        }
        return TrustEntry(
            fingerprint: fingerprint, fileLabel: words.joined(separator: " "), permissions: permissions)
    }

    /// The permissions of a `perms=` word (what follows the `=`).
    private static func permissions(parsing list: Substring) throws(LineError) -> Set<Permission> {
        let known = Permission.allCases.map(\.rawValue).joined(separator: ", ")
        if list == Permission.noneWord { return [] }
        guard !list.isEmpty else {
            throw LineError(
                problem:
                    "perms= lists nothing: name some of \(known) (comma-separated, no spaces), write perms=none, or leave perms= out for the defaults (\(Permission.list(Permission.defaults)))"
            )
        }
        var permissions: Set<Permission> = []
        for word in list.split(separator: ",", omittingEmptySubsequences: false) {
            guard let permission = Permission(rawValue: String(word)) else {
                throw LineError(
                    problem:
                        "unknown permission '\(UntrustedText.escaped(word))' in perms=: the permissions are \(known), comma-separated with no spaces"
                )
            }
            permissions.insert(permission)
        }
        return permissions
    }
}
