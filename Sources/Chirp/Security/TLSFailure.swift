import ChirpWire
import NIOSSL

/// Why a TLS handshake with a shared secret failed, in the terms a user can act on.
enum TLSFailure: Equatable, CustomStringConvertible {
    /// The records do not decrypt: the two secrets differ.
    case keysDiffer
    /// The peer answered with something that is not TLS: it has no secret.
    case peerDoesNotSpeakTLS
    /// No cipher or pre-shared key in common.
    case noCommonCipherOrKey
    /// Another failure, with BoringSSL's reason.
    case other(String)

    var description: String {
        switch self {
        case .keysDiffer: return "the keys differ"
        case .peerDoesNotSpeakTLS: return "the peer does not speak TLS"
        case .noCommonCipherOrKey: return "no common cipher or key"
        case .other(let reason): return String(reason.prefix(200))
        }
    }

    /// The failure behind a swift-nio-ssl error, or `nil` when `error` is not one.
    ///
    /// swift-nio-ssl keeps BoringSSL's numeric error codes private: each ``BoringSSLInternalError`` shows them only as
    /// `ERR_error_string_n`'s text (`error:…:SSL routines:OPENSSL_internal:REASON at file:line`). The REASON field is
    /// BoringSSL's stable name for the reason code, so it is compared whole, never searched for.
    init?(_ error: any Error) {
        guard error is NIOSSLError || error is BoringSSLError else { return nil }
        let reasons = Self.reasons(of: error)
        if reasons.contains(where: { Self.decryptionReasons.contains($0) }) {
            self = .keysDiffer
        } else if reasons.contains(where: { Self.notTLSReasons.contains($0) }) {
            self = .peerDoesNotSpeakTLS
        } else if reasons.contains(where: { Self.noCommonReasons.contains($0) }) {
            self = .noCommonCipherOrKey
        } else {
            self = .other(reasons.first.map(String.init) ?? "\(error)")
        }
    }

    private static let decryptionReasons: Set<Substring> = [
        "DECRYPTION_FAILED_OR_BAD_RECORD_MAC", "BAD_RECORD_MAC", "BAD_DECRYPT", "DECRYPT_ERROR",
        "TLSV1_ALERT_DECRYPT_ERROR", "SSLV3_ALERT_BAD_RECORD_MAC", "TLSV1_ALERT_BAD_RECORD_MAC"
    ]
    private static let notTLSReasons: Set<Substring> = [
        "WRONG_VERSION_NUMBER", "HTTP_REQUEST", "HTTPS_PROXY_REQUEST", "UNEXPECTED_RECORD", "UNEXPECTED_MESSAGE",
        "RECORD_TOO_LARGE"
    ]
    private static let noCommonReasons: Set<Substring> = [
        "NO_SHARED_CIPHER", "SSLV3_ALERT_HANDSHAKE_FAILURE", "HANDSHAKE_FAILURE_ON_CLIENT_HELLO",
        "PSK_IDENTITY_NOT_FOUND", "TLSV1_ALERT_UNKNOWN_PSK_IDENTITY"
    ]

    /// BoringSSL's reason names in `error` (a failed handshake or shutdown, or BoringSSL's own error), in order; empty
    /// when it has none.
    private static func reasons(of error: any Error) -> [Substring] {
        let boring: BoringSSLError
        switch error {
        case NIOSSLError.handshakeFailed(let inner), NIOSSLError.shutdownFailed(let inner): boring = inner
        case let inner as BoringSSLError: boring = inner
        default: return []
        }
        return (stack(of: boring) ?? []).map { reasonName(of: "\($0)") }
    }

    private static func stack(of error: BoringSSLError) -> NIOBoringSSLErrorStack? {
        switch error {
        case .sslError(let stack), .unknownError(let stack), .invalidSNIName(let stack), .failedToSetALPN(let stack):
            return stack
        default: return nil
        }
    }

    /// The REASON field of `Error: CODE error:HEX:LIBRARY:FUNCTION:REASON at FILE:LINE`.
    static func reasonName(of text: String) -> Substring {
        let message = text.split(separator: " at ", maxSplits: 1).first ?? Substring(text)
        return message.split(separator: ":").last ?? message
    }
}

extension HandshakeError {
    /// The handshake failure that `error` stands for, as both sides log it; `nil` when it says nothing of the peer.
    static func explaining(_ error: any Error, withSecret: Bool, withIdentity: Bool = false) -> HandshakeError? {
        if let error = error as? HandshakeError { return error }
        if let error = error as? FrameDecodingError, error.reason == .tlsRecord { return .remoteRequiresSecret }
        if withSecret, let failure = TLSFailure(error) { return .secretMismatch(detail: failure.description) }
        if withIdentity, let cause = TLSFailure.identityCause(of: error) { return .identityTLSFailed(detail: cause) }
        return nil
    }
}

extension TLSFailure {
    /// Why a mutual TLS 1.3 handshake between device identities failed, as a sentence a user can act on (after
    /// "TLS handshake failed: "), or `nil` when `error` is not swift-nio-ssl's. The reasons are BoringSSL's names, as
    /// each side sees them (`IdentityTLSTests` shows which side sees which).
    static func identityCause(of error: any Error) -> String? {
        guard let failure = TLSFailure(error) else { return nil }
        let reasons = Self.reasons(of: error)
        if reasons.contains(where: { Self.noCertificateReasons.contains($0) }) {
            return "the peer presented no certificate: it uses no device identity (set one with --identity)"
        }
        if reasons.contains(where: { Self.oldVersionReasons.contains($0) }) {
            return "the peer does not speak TLS 1.3, which device identities need: it uses a shared secret (TLS 1.2), "
                + "or an older TLS library"
        }
        if reasons.contains("EXCESSIVE_MESSAGE_SIZE") {
            return "the peer's certificate is larger than TLS takes here (100 KiB in all)"
        }
        if reasons.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the peer's certificate was not accepted here"
        }
        if reasons.contains(where: { Self.certificateRefusedReasons.contains($0) }) {
            return "the peer did not accept our certificate: it does not trust this device"
        }
        switch failure {
        case .peerDoesNotSpeakTLS:
            return "the peer does not speak TLS: it uses no device identity and no shared secret"
        case .noCommonCipherOrKey:
            return "the peer uses a shared secret, and we a device identity"
        case .keysDiffer:
            return "records that do not decrypt: something between the peers changes them"
        case .other(let reason):
            return "\(reason), with a device identity (mutual TLS 1.3) here"
        }
    }

    private static let noCertificateReasons: Set<Substring> = [
        "PEER_DID_NOT_RETURN_A_CERTIFICATE", "TLSV13_ALERT_CERTIFICATE_REQUIRED", "CERTIFICATE_REQUIRED"
    ]
    private static let certificateRefusedReasons: Set<Substring> = [
        "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "TLSV1_ALERT_UNKNOWN_CA",
        "TLSV1_ALERT_ACCESS_DENIED", "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE"
    ]
    private static let oldVersionReasons: Set<Substring> = [
        "UNSUPPORTED_PROTOCOL", "TLSV1_ALERT_PROTOCOL_VERSION", "WRONG_SSL_VERSION"
    ]
}
