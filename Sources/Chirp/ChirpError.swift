import Foundation

/// Errors Chirp reports, each with a message a user can act on.
///
/// `description` and `localizedDescription` give the same sentence, the one the `chirp` CLI prints. Names and texts
/// that came from another peer (its name, a type name it sent, its responder's message) are shown with their control
/// characters escaped, so printing or logging an error cannot forge a line or drive a terminal.
public enum ChirpError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The service type breaks the RFC 6763 rules; `reason` says which.
    case invalidServiceType(String, reason: String)
    /// A configuration setting is out of range; the message says which and why.
    case invalidConfiguration(String)
    /// The transceiver is not running: call `resume()` first.
    case notRunning
    /// The listener could not be opened.
    case listenFailed(String)
    /// There is no connection to this peer (it disconnected, or was never connected).
    case peerNotConnected(Peer)
    /// The peer disconnected before it replied.
    case peerDisconnected(Peer)
    /// The request got no reply within the timeout.
    case requestTimedOut(type: String, peer: Peer, seconds: Double)
    /// The peer has no responder for this request type.
    case noResponder(type: String, peer: Peer)
    /// The peer's responder threw; `message` is its error's description.
    case remoteFailure(type: String, peer: Peer, message: String)
    /// A message or reply could not be decoded as the expected type.
    case decodingFailed(type: String, peer: Peer, reason: String)
    /// A message could not be encoded.
    case encodingFailed(type: String, reason: String)
    /// A receive handler threw.
    case handlerFailed(type: String, peer: Peer, reason: String)
    /// The encoded message is larger than ``Configuration/maximumMessageSize``.
    case messageTooLarge(type: String, size: Int, limit: Int)
    /// The peer reads slower than we send and its queue reached ``Configuration/outboundLimit``; the message was not sent.
    case outboundLimitExceeded(peer: Peer, limit: Int)
    /// A peer sent something that is not valid Chirp protocol; the connection or frame was dropped.
    case protocolViolation(peer: String, reason: String)
    /// ``Transceiver/connect(host:port:)`` could not open a TCP connection to `address` (`host:port`); `reason` says
    /// why in words: "connection refused", "timed out", "host unreachable", "cannot resolve the host name".
    case connectionFailed(address: String, reason: String)

    /// The error as one sentence a user can act on.
    public var description: String {
        switch self {
        case .invalidServiceType(let type, let reason):
            return "invalid service type '\(Self.shown(type))': \(reason) (RFC 6763: 1-15 letters, digits or hyphens, at least one letter)"
        case .invalidConfiguration(let message):
            return "invalid configuration: \(message)"
        case .notRunning:
            return "the transceiver is not running: call resume() first"
        case .listenFailed(let message):
            return "could not listen for connections: \(message)"
        case .peerNotConnected(let peer):
            return "peer \(Self.shown(peer.name)) is not connected"
        case .peerDisconnected(let peer):
            return "peer \(Self.shown(peer.name)) disconnected before it replied"
        case .requestTimedOut(let type, let peer, let seconds):
            return "no reply to \(Self.shown(type)) from \(Self.shown(peer.name)) within \(seconds) s"
        case .noResponder(let type, let peer):
            return "peer \(Self.shown(peer.name)) does not answer \(Self.shown(type)) requests (no responder registered)"
        case .remoteFailure(_, let peer, let message):
            return "\(Self.shown(peer.name)) failed: \(Self.shown(message))"
        case .decodingFailed(let type, let peer, let reason):
            return "could not decode \(Self.shown(type)) from \(Self.shown(peer.name)): \(Self.shown(reason))"
        case .encodingFailed(let type, let reason):
            return "could not encode \(Self.shown(type)): \(reason)"
        case .handlerFailed(let type, let peer, let reason):
            return "handler for \(Self.shown(type)) from \(Self.shown(peer.name)) threw: \(Self.shown(reason))"
        case .messageTooLarge(let type, let size, let limit):
            return "\(Self.shown(type)) message is \(size) bytes, over maximumMessageSize (\(limit) bytes)"
        case .outboundLimitExceeded(let peer, let limit):
            return "\(Self.shown(peer.name)) is not reading fast enough: its queue is full (\(limit) bytes); message not sent"
        case .protocolViolation(let peer, let reason):
            return "protocol violation by \(Self.shown(peer)): \(Self.shown(reason))"
        case .connectionFailed(let address, let reason):
            // "connection refused by 127.0.0.1:1" reads best; other reasons follow the address.
            return reason == "connection refused"
                ? "connection refused by \(Self.shown(address))" : "could not connect to \(Self.shown(address)): \(reason)"
        }
    }

    /// The same sentence as ``description``, so that `localizedDescription` reads as the CLI's message rather than
    /// "The operation could not be completed".
    public var errorDescription: String? { description }

    /// A string that may have come from another peer, with its control characters escaped.
    private static func shown(_ text: String) -> String { UntrustedText.escaped(text) }
}
