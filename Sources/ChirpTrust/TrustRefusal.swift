import ChirpSupport

/// Why a peer was refused, with a sentence a user can act on (``message``): which device, under which name, and what
/// to run or edit if the device is in fact theirs.
///
/// The name came from the peer: the message shows it with its control characters escaped, and a command it suggests
/// quotes it for a POSIX shell, so that copying the command cannot run anything the peer chose.
package struct TrustRefusal: Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: Sendable, Equatable {
        /// The device's fingerprint is not in the trust file.
        case notTrusted
        /// A different fingerprint is pinned under the name (trust on first use): someone may be impersonating it.
        case identityChanged(pinned: Fingerprint)
        /// The peer's certificate is not the one it advertised (its TXT `fp`): an impostor, or a stale
        /// advertisement.
        case fingerprintMismatch(advertised: Fingerprint)
    }

    /// What went wrong.
    package let kind: Kind
    /// The fingerprint the peer presented (its TLS certificate's).
    package let fingerprint: Fingerprint
    /// The name the peer goes by (untrusted text).
    package let name: String
    /// The sentence to show or log.
    package let message: String

    /// The sentence.
    package var description: String { message }

    /// A device not in the trust file at `path`.
    package static func notTrusted(_ fingerprint: Fingerprint, name: String, path: String) -> TrustRefusal {
        // A name that starts with a dash follows `--`, so that it is not read as an option.
        let label = (UntrustedText.escaped(name).hasPrefix("-") ? "-- " : "") + shellWord(name)
        return TrustRefusal(
            kind: .notTrusted, fingerprint: fingerprint, name: name,
            message:
                "device \(fingerprint.short) (\"\(UntrustedText.escaped(name))\") is not in the trust file \(path); if it is yours, check its fingerprint (`chirp id` on it) and run `chirp trust add \(fingerprint) \(label)`"
        )
    }

    /// A name pinned (in the pins file at `path`) to another fingerprint than the one presented.
    package static func identityChanged(
        _ fingerprint: Fingerprint, name: String, pinned: Fingerprint, path: String
    ) -> TrustRefusal {
        TrustRefusal(
            kind: .identityChanged(pinned: pinned), fingerprint: fingerprint, name: name,
            message:
                "PEER IDENTITY HAS CHANGED: \"\(UntrustedText.escaped(name))\" was pinned as \(pinned) and now presents \(fingerprint): someone may be impersonating it, or it made a new identity; refused. If you know it made a new one (check with `chirp id` on it), remove its pin from \(path)"
        )
    }

    /// A certificate that is not the one the peer advertised.
    package static func fingerprintMismatch(
        _ fingerprint: Fingerprint, name: String, advertised: Fingerprint
    ) -> TrustRefusal {
        TrustRefusal(
            kind: .fingerprintMismatch(advertised: advertised), fingerprint: fingerprint, name: name,
            message:
                "\"\(UntrustedText.escaped(name))\" advertised the identity \(advertised.short) but its certificate is \(fingerprint.short): refused, it is not the device it claims to be (an impostor, or an advertisement from before it changed identity)"
        )
    }

    /// `text` as one word for a POSIX shell: as it is when it holds only letters, digits and `._-+@:`, else in
    /// single quotes (a quote inside written `'\''`), its control characters escaped first.
    static func shellWord(_ text: String) -> String {
        let shown = UntrustedText.escaped(text)
        let plain =
            !shown.isEmpty
            && shown.unicodeScalars.allSatisfy { scalar in
                scalar.isASCII
                    && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                        || ("0"..."9").contains(scalar) || "._-+@:".unicodeScalars.contains(scalar))
            }
        if plain { return shown }
        return "'" + shown.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
