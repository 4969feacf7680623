import ChirpSupport
import ChirpTrust
import NIOCore

extension Transceiver {
    /// Pairs with `peer`, a device that does not trust this one yet (or trusts another identity under its name):
    /// both sides show the same 6-digit code, a person on `peer`'s side compares it with the one `showingCode` gets
    /// and says yes there, and each side then trusts the other: the peer adds this device to its trust file (or pins
    /// it), this transceiver adds the peer to its own. Ordinary connections follow by themselves.
    ///
    /// The pairing runs on a connection of its own, in mutual TLS 1.3 with both device identities; the peer's
    /// certificate must be the fingerprint it advertised. A relay in the middle makes the codes differ, which is
    /// why the person compares them (Docs/Security.md, "Pairing").
    ///
    /// ```swift
    /// let paired = try await transceiver.pair(with: app) { code in
    ///     print("Code \(code): check that the app shows the same, and confirm there")
    /// }
    /// print("paired with \(paired.name) (\(paired.fingerprint.short))")
    /// ```
    ///
    /// - Parameters:
    ///   - peer: a peer of ``availablePeers``, advertised with a device identity.
    ///   - timeout: how long to wait in all, the person's answer included. Default: 2 minutes.
    ///   - showingCode: called once with the code (`042917`) as soon as this side knows it.
    /// - Returns: the peer's name, its proven fingerprint and the code.
    /// - Throws: ``/ChirpSupport/ChirpError/Code/pairingFailed`` with the reason: declined, the peer takes no pairing
    ///   requests (or is busy with another), its certificate is not the one it advertised, no answer in time, no
    ///   connection. ``/ChirpSupport/ChirpError/Code/invalidConfiguration`` without a device identity,
    ///   ``/ChirpSupport/ChirpError/Code/notRunning`` before `start()`.
    public func pair(
        with peer: Peer, timeout: Duration = .seconds(120), showingCode: @escaping @Sendable (String) -> Void
    ) async throws -> PairingResult {
        guard let engine = currentEngine else { throw ChirpError.notRunning }
        let endpoints = IPAddressText.dialingOrder(peer.addresses.map(IPAddressText.host(ofEndpoint:)))
        guard let host = endpoints.first,
            let endpoint = peer.addresses.first(where: { IPAddressText.host(ofEndpoint: $0) == host }),
            let port = endpoint.split(separator: ":").last.flatMap({ Int($0) })
        else {
            throw ChirpError.pairingFailed(with: peer.description, reason: "it has no known address")
        }
        return try await pair(
            host: host, port: port, advertised: peer.fingerprint, timeout: timeout, showingCode: showingCode,
            engine: engine)
    }

    /// Pairs with whatever listens at `host:port`, which must present `advertised` when given (tests; a relay in
    /// the middle).
    func pair(
        host: String, port: Int, advertised: Fingerprint?, timeout: Duration = .seconds(120),
        showingCode: @escaping @Sendable (String) -> Void, engine: Engine? = nil
    ) async throws -> PairingResult {
        guard let engine = engine ?? currentEngine else { throw ChirpError.notRunning }
        return try await engine.pair(
            host: host, port: port, advertised: advertised, timeout: timeout, showCode: showingCode
        ).get()
    }
}
