import ChirpTrust

/// How a transceiver with a ``DeviceIdentity`` answers devices that ask to pair with it
/// (``Configuration/pairing``): a person compares a 6-digit code and says yes or no.
///
/// Pairing is how two devices that do not know each other yet come to trust each other without a shared secret, as
/// Bluetooth's numeric comparison does: the device that asks (``Transceiver/pair(with:timeout:showingCode:)``, as
/// `listrctl pair` does) and this one each compute a code from both certificates and a nonce each; a relay in the
/// middle makes the two codes differ. Every request reaches ``confirm``; until it answers, the connection carries
/// nothing but the pairing (no message reaches a handler), and other requests are refused ("busy"). Only a yes adds
/// the device to the trust file (trusted peers) or pins it (trust on first use).
///
/// ```swift
/// configuration.pairing = PairingPolicy { request in
///     print("Pair with \(request.name) (\(request.fingerprint.short))? Code \(request.code)")
///     return await askTheOwner() ? .accept(Permission.defaults) : .decline
/// }
/// ```
public struct PairingPolicy: Sendable {
    /// Asks a person whether to pair, showing them ``PairingRequest/code``: they say yes only when the asking
    /// device shows the same code. Called once per request, one at a time, off the event loops.
    public var confirm: @Sendable (PairingRequest) async -> PairingAnswer
    /// At most this many requests reach ``confirm`` in any minute; more are refused with a sentence that says when
    /// to try again. Default: 6.
    public var maximumRequestsPerMinute: Int
    /// How long a pairing may take in all, the person's answer included; the asking side then gives up. Default:
    /// 2 minutes.
    public var timeout: Duration

    /// A policy that asks `confirm` about each request.
    public init(
        maximumRequestsPerMinute: Int = 6, timeout: Duration = .seconds(120),
        confirm: @escaping @Sendable (PairingRequest) async -> PairingAnswer
    ) {
        self.confirm = confirm
        self.maximumRequestsPerMinute = maximumRequestsPerMinute
        self.timeout = timeout
    }
}

/// A device asks to pair (``PairingPolicy/confirm``).
public struct PairingRequest: Sendable, Equatable {
    /// The name of the device's identity, from its certificate (`chirp id NAME`'s NAME), or, when it has none, the
    /// name it gave in its hello. It labels the device in the trust file. Untrusted text: escape it before printing
    /// it to a terminal.
    public let name: String
    /// The peer name the device gave in its hello (a command-line tool's is its host's name). Untrusted text.
    public let peerName: String
    /// The fingerprint of the device's certificate, proven by TLS.
    public let fingerprint: Fingerprint
    /// The 6 digits to compare with what the device shows, as in `042917`.
    public let code: String
    /// The device's address, as in `192.168.1.20:51234`.
    public let address: String
}

/// A person's answer to a ``PairingRequest``.
public enum PairingAnswer: Sendable, Equatable {
    /// Pair: trust the device from now on, with these permissions (in trusted-peers mode; in trust on first use, the
    /// mode's own).
    case accept(Set<Permission>)
    /// Do not pair: the device is told so and nothing is written.
    case decline
}

/// A pairing that completed (``Transceiver/pair(with:timeout:showingCode:)``).
public struct PairingResult: Sendable, Equatable {
    /// The name the other device gave in its hello.
    public let name: String
    /// The other device's fingerprint, proven by TLS: now in this transceiver's trust file (or pinned).
    public let fingerprint: Fingerprint
    /// The code both sides showed.
    public let code: String
}
