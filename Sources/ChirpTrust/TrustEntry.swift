import ChirpSupport

/// One trusted device: a line of a trust file, `FINGERPRINT LABEL [perms=PERMISSION,...]` (``TrustStore``).
public struct TrustEntry: Sendable, Hashable {
    /// The device's identity.
    public let fingerprint: Fingerprint
    /// What a person calls the device ("laptop", the peer name it was paired under). Untrusted text: it may have
    /// come from the device itself, so show it through ``shownLabel``.
    public let label: String
    /// What the device may do.
    public let permissions: Set<Permission>

    /// An entry for `fingerprint`, labelled `label`, holding `permissions`.
    ///
    /// The label is made to read back as it is from a trust file line: its control characters escaped as `\n`,
    /// `\u{1B}` (so that it stays on its line), its runs of spaces made one, a word starting with `perms=` written
    /// `perms:` (only the last word of a line may say `perms=`); "unnamed" when nothing is left.
    public init(fingerprint: Fingerprint, label: String, permissions: Set<Permission> = Permission.defaults) {
        self.fingerprint = fingerprint
        let words = UntrustedText.escaped(label).split(separator: " ", omittingEmptySubsequences: true).map { word in
            word.hasPrefix(TrustStore.permissionsKey)
                ? "perms:" + word.dropFirst(TrustStore.permissionsKey.count) : word
        }
        self.label = words.isEmpty ? "unnamed" : words.joined(separator: " ")
        self.permissions = permissions
    }

    /// An entry as read from a file: the label is kept as it is written there.
    init(fingerprint: Fingerprint, fileLabel: String, permissions: Set<Permission>) {
        self.fingerprint = fingerprint
        self.label = fileLabel
        self.permissions = permissions
    }

    /// The label with its control characters escaped, to print or log.
    public var shownLabel: String { UntrustedText.escaped(label) }

    /// The entry as a trust file line: `perms=` is written when the permissions are not the defaults.
    public var line: String {
        var line = "\(fingerprint) \(label)"
        if permissions != Permission.defaults {
            line += " \(TrustStore.permissionsKey)\(Permission.list(permissions))"
        }
        return line
    }
}
