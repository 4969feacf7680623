/// Why a ``DeviceIdentity`` cannot be loaded or made: ``kind`` to match on, ``path`` the file or directory at fault,
/// ``description`` a sentence that names the path and says what to run.
///
/// ``DeviceIdentity/loadOrCreate(name:directory:)`` throws it as the `cause` of a
/// ``/ChirpSupport/ChirpError/Code/invalidConfiguration`` error whose message is ``description``. No file is ever
/// overwritten to get past one of these errors.
package struct DeviceIdentityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    package enum Kind: Sendable, Equatable {
        /// The name cannot name an identity directory (the reason says why).
        case invalidName(String)
        /// Neither `XDG_CONFIG_HOME` nor `HOME` says where the default directory is.
        case noConfigurationDirectory
        /// The path exists and is not a directory.
        case notADirectory
        /// The directory belongs to another user (this uid).
        case directoryNotOwned(owner: UInt32)
        /// Other users may write to the directory (its permission bits).
        case directoryTooOpen(mode: UInt32)
        /// The key file belongs to another user (this uid).
        case keyFileNotOwned(owner: UInt32)
        /// Other users may read or write the key file (its permission bits).
        case keyFileTooOpen(mode: UInt32)
        /// The file is larger than an identity file can be (its size in bytes).
        case fileTooLarge(Int)
        /// The file or directory cannot be read (the system's reason).
        case unreadable(String)
        /// The file or directory cannot be made (the system's reason).
        case cannotCreate(String)
        /// The key file is not a P-256 private key in PEM (the parser's reason).
        case keyUnparsable(String)
        /// The certificate file is not an X.509 certificate in PEM (the parser's reason).
        case certificateUnparsable(String)
        /// The certificate's public key is not the key file's.
        case keyAndCertificateDoNotMatch
        /// The directory holds a certificate and no key.
        case certificateWithoutKey
        /// TLS (BoringSSL) does not take the key or the certificate (its reason).
        case unusableForTLS(String)
        /// The trust or pins file belongs to another user (this uid).
        case trustFileNotOwned(owner: UInt32)
        /// Other users may write to the trust or pins file (its permission bits).
        case trustFileTooOpen(mode: UInt32)
        /// The trust or pins file does not parse (the parser's sentence, which names the line).
        case unparsableTrustFile(String)
    }

    /// What is wrong.
    package let kind: Kind
    /// The file or directory at fault.
    package let path: String

    /// An error of `kind` about `path`.
    package init(_ kind: Kind, path: String) {
        self.kind = kind
        self.path = path
    }

    /// The sentence to show: what is wrong with which path, and what to do.
    package var description: String {
        let shown = Self.quoted(path)
        let leftAsItIs = "it was left as it is"
        switch kind {
        case .invalidName(let reason):
            return "cannot use \(Self.quoted(path)) as a device identity name: \(reason)"
        case .noConfigurationDirectory:
            return
                "cannot tell where to keep the device identity: neither XDG_CONFIG_HOME nor HOME is set; give the identity a directory"
        case .notADirectory:
            return "the device identity directory \(shown) is not a directory: give another path"
        case .directoryNotOwned(let owner):
            return
                "the device identity directory \(shown) belongs to user \(owner), not to you (user \(Self.currentUser)): run `chown $(id -un) \(shown)` as root, or give a directory of your own"
        case .directoryTooOpen(let mode):
            return
                "other users can write to the device identity directory \(shown) (mode \(Self.octal(mode))): run `chmod 700 \(shown)`"
        case .keyFileNotOwned(let owner):
            return
                "the device identity key \(shown) belongs to user \(owner), not to you (user \(Self.currentUser)): run `chown $(id -un) \(shown)` as root, or give a directory of your own"
        case .keyFileTooOpen(let mode):
            return
                "other users can read or write the device identity key \(shown) (mode \(Self.octal(mode))): run `chmod 600 \(shown)` (and make a new identity if someone may have copied it)"
        case .fileTooLarge(let size):
            return
                "\(shown) is \(size) bytes, larger than an identity file can be (\(DeviceIdentity.maximumFileSize) bytes); \(leftAsItIs): is it the right file?"
        case .unreadable(let reason):
            return "cannot read \(shown): \(reason)"
        case .cannotCreate(let reason):
            return "cannot create \(shown): \(reason)"
        case .keyUnparsable(let reason):
            return
                "the device identity key \(shown) is not a P-256 private key in PEM (\(reason)); \(leftAsItIs): move it away to make a new identity (devices that trust the old one will have to trust the new one)"
        case .certificateUnparsable(let reason):
            return
                "the device identity certificate \(shown) is not an X.509 certificate in PEM (\(reason)); \(leftAsItIs): move it away and a new one is made from the key, with the same fingerprint"
        case .keyAndCertificateDoNotMatch:
            return
                "the device identity certificate \(shown) is not for the key beside it (its public key differs); \(leftAsItIs): move it away and a new one is made from the key, with the key's fingerprint"
        case .certificateWithoutKey:
            return
                "the device identity directory \(shown) holds a certificate but no \(DeviceIdentity.keyFileName): restore the key, or move the directory away to make a new identity"
        case .unusableForTLS(let reason):
            return "TLS cannot use the device identity in \(shown): \(reason)"
        case .trustFileNotOwned(let owner):
            return
                "the trust file \(shown) belongs to user \(owner), not to you (user \(Self.currentUser)); it was not read: whoever may write it decides who connects; run `chown $(id -un) \(shown)` as root"
        case .trustFileTooOpen(let mode):
            return
                "other users can write to the trust file \(shown) (mode \(Self.octal(mode))); it was not read: whoever may write it decides who connects; run `chmod 600 \(shown)`"
        case .unparsableTrustFile(let sentence):
            return sentence
        }
    }

    /// The path as a shell word: as it is when it has only safe characters, else in single quotes.
    static func quoted(_ path: String) -> String {
        let safe = path.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII
                && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                    || "/._-+,:@%".unicodeScalars
                        .contains(scalar))
        }
        if safe, !path.isEmpty { return path }
        let escaped = path.unicodeScalars.map { scalar -> String in
            if scalar == "'" { return "'\\''" }
            if scalar.properties.generalCategory == .control { return "\\u{\(String(scalar.value, radix: 16))}" }
            return String(scalar)
        }
        return "'" + escaped.joined() + "'"
    }

    /// Permission bits as `chmod` writes them: `0644`.
    static func octal(_ mode: UInt32) -> String {
        let digits = String(mode & 0o7777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// This process's effective user id.
    private static var currentUser: UInt32 { UInt32(IdentityFiles.effectiveUserID) }
}
