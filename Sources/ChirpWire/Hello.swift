import ChirpSupport
import Foundation
import NIOCore
import NIOFoundationCompat

/// The handshake both ends send as their first frame: who they are and what they speak. Encoded as a JSON object.
package struct Hello: Codable, Sendable, Equatable {
    /// The wire protocol version; peers with a different version refuse each other.
    package var protocolVersion: Int
    /// The sender's stable peer id.
    package var peerID: String
    /// The sender's display name.
    package var name: String
    /// The service type the sender joined, without underscore or protocol (e.g. `chat`).
    package var service: String
    /// The sender's user metadata (the same as in its TXT record).
    package var metadata: [String: String]
    /// What the sender is: ``toolRole`` for a peer that does not advertise itself; `nil` (the key left out) for an
    /// app. Added in Chirp 1.0 to version 1, whose older peers ignore it (Docs/Protocol.md).
    package var role: String?
    /// What the sender understands beyond the first text of version 1 (``partsFeature``); empty (the key left out)
    /// for a peer older than the key, whose peers then send it nothing new.
    package var features: [String]
    /// The sender asks to pair (a dialer) or agrees to (an acceptor): the connection carries the pairing exchange
    /// (``FrameKind/pair`` frames) instead of messages, then closes. Encoded only when true (the key `pairing`); a
    /// peer older than the key reads the hello as an ordinary one (Docs/Protocol.md section 2).
    package var pairing: Bool

    /// The feature of a peer that reassembles ``FrameKind/part`` frames (Docs/Protocol.md section 3).
    package static let partsFeature = "parts"
    /// The features this build announces.
    package static let currentFeatures = [partsFeature]

    /// Whether the sender reassembles part frames: a large frame may be sent to it in parts.
    package var acceptsParts: Bool { features.contains(Self.partsFeature) }

    /// The ``role`` of a peer that only dials (a command-line tool).
    package static let toolRole = "tool"
    /// The metadata key and value by which command-line tools marked themselves before the hello had a ``role``.
    package static let legacyToolMarker = (key: "chirp-role", value: "cli")

    enum CodingKeys: String, CodingKey {
        case protocolVersion = "protocol"
        case peerID = "peerID"
        case name
        case service
        case metadata
        case role
        case features
        case pairing
    }

    package init(
        protocolVersion: Int = Hello.currentProtocolVersion, peerID: String, name: String, service: String,
        metadata: [String: String], role: String? = nil, features: [String] = [], pairing: Bool = false
    ) {
        self.protocolVersion = protocolVersion
        self.peerID = peerID
        self.name = name
        self.service = service
        self.metadata = metadata
        self.role = role
        self.features = features
        self.pairing = pairing
    }

    /// Whether the sender is a tool: it says so, or, from a tool older than the ``role`` key, its metadata does.
    package var isTool: Bool {
        guard let role else { return metadata[Self.legacyToolMarker.key] == Self.legacyToolMarker.value }
        return role == Self.toolRole
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        protocolVersion = try container.decode(Int.self, forKey: .protocolVersion)
        peerID = try container.decode(String.self, forKey: .peerID)
        name = try container.decode(String.self, forKey: .name)
        service = try container.decode(String.self, forKey: .service)
        metadata = try container.decodeIfPresent([String: String].self, forKey: .metadata) ?? [:]
        // A role this version does not know (a later one's) is read as an app's, the default.
        role = try? container.decodeIfPresent(String.self, forKey: .role)
        // Features are names: one that is not a string, or a list that is not one, counts as none.
        features = (try? container.decodeIfPresent([String].self, forKey: .features)) ?? []
        // Only `true` asks for pairing: any other value is an ordinary hello.
        pairing = (try? container.decodeIfPresent(Bool.self, forKey: .pairing)) ?? false
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(protocolVersion, forKey: .protocolVersion)
        try container.encode(peerID, forKey: .peerID)
        try container.encode(name, forKey: .name)
        try container.encode(service, forKey: .service)
        try container.encode(metadata, forKey: .metadata)
        try container.encodeIfPresent(role, forKey: .role)
        if !features.isEmpty { try container.encode(features, forKey: .features) }
        if pairing { try container.encode(true, forKey: .pairing) }
    }

    /// The protocol version this build speaks.
    package static let currentProtocolVersion = 1

    /// The hello as a complete frame.
    package func frame(allocator: ByteBufferAllocator) throws -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 256)
        try FrameWriter.write(.hello, into: &buffer) { buffer in
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try buffer.writeJSONEncodable(self, encoder: encoder)
        }
        return buffer
    }

    /// Parses a hello frame body. Throws ``HandshakeError/malformedHello(_:)`` for anything that is not a hello object.
    package static func parse(_ body: ByteBuffer) throws -> Hello {
        do {
            let hello = try JSONDecoder().decode(Hello.self, from: body)
            guard !hello.peerID.isEmpty, hello.peerID.utf8.count <= 128 else {
                throw HandshakeError.malformedHello("peer id must be 1-128 bytes")
            }
            return hello
        } catch let error as HandshakeError {
            throw error
        } catch {
            throw HandshakeError.malformedHello("hello is not the expected JSON object (\(error))")
        }
    }

    /// Why a remote hello cannot be accepted by a peer with this identity, or `nil` when it can.
    package func refusal(of remote: Hello) -> HandshakeError? {
        if remote.protocolVersion != protocolVersion {
            return .protocolMismatch(local: protocolVersion, remote: remote.protocolVersion)
        }
        if remote.service != service {
            return .serviceMismatch(local: service, remote: remote.service)
        }
        if remote.peerID == peerID {
            return .connectedToSelf
        }
        return nil
    }
}

/// Why a handshake failed; the description is what both sides log.
package enum HandshakeError: Error, Equatable, CustomStringConvertible {
    case malformedHello(String)
    case unexpectedFrame(kind: UInt8)
    case protocolMismatch(local: Int, remote: Int)
    case serviceMismatch(local: String, remote: String)
    case connectedToSelf
    case refusedByRemote(reason: String)
    case timedOut(seconds: Double)
    /// The TLS handshake failed while we use a shared secret.
    case secretMismatch(detail: String)
    /// The remote speaks TLS but we have no shared secret.
    case remoteRequiresSecret
    /// The accept policy said no.
    case notAccepted(name: String)
    /// The peer's device identity is not trusted (device-identity mode): `local` says why, for this side's log (it
    /// names files and what to run); `remote` is what the refused peer is told.
    case notTrusted(local: String, remote: String)
    /// The TLS handshake failed in device-identity mode; `detail` says why, as a sentence (the peer presented no
    /// certificate, speaks no TLS 1.3, uses a shared secret...).
    case identityTLSFailed(detail: String)
    /// A pairing request this side cannot take: no pairing policy, no device identity, or the gate said no (busy,
    /// too many); the sentence is for both sides.
    case pairingRefused(String)

    package var description: String {
        switch self {
        case .malformedHello(let problem): return "malformed hello: \(UntrustedText.escaped(problem))"
        case .unexpectedFrame(let kind): return "expected a hello frame first, got kind 0x\(String(kind, radix: 16))"
        case .protocolMismatch(let local, let remote):
            return "protocol version mismatch: we speak \(local), the peer speaks \(remote)"
        case .serviceMismatch(let local, let remote):
            return "service type mismatch: we joined '\(local)', the peer joined '\(UntrustedText.escaped(remote))'"
        case .connectedToSelf: return "connected to itself"
        case .refusedByRemote(let reason): return "the peer refused the connection: \(UntrustedText.escaped(reason))"
        case .timedOut(let seconds): return "no handshake within \(seconds) s"
        case .secretMismatch(let detail):
            return "shared secret does not match, or the peer does not use one (TLS handshake failed: \(detail))"
        case .remoteRequiresSecret:
            return "the peer requires a shared secret: set CHIRP_SECRET or use --secret-file"
        case .notAccepted(let name): return "\(UntrustedText.escaped(name)) was not accepted by the accept policy"
        case .notTrusted(let local, _): return local
        case .identityTLSFailed(let cause): return "TLS handshake failed: \(cause)"
        case .pairingRefused(let reason): return "pairing refused: \(reason)"
        }
    }

    /// What the remote is told in the `refuse` frame: the description, except for ``notTrusted(local:remote:)``
    /// whose local sentence names this side's files.
    package var remoteDescription: String {
        if case .notTrusted(_, let remote) = self { return remote }
        return description
    }
}
