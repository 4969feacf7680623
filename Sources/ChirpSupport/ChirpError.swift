import Foundation

/// An error Chirp reports: what went wrong (``code``), a sentence a user can act on (``message``), the ``peer`` and
/// message type concerned when there is one, and the underlying ``cause`` when another library's error led to it.
///
/// It is a struct with an extensible ``Code``, in the style of grpc-swift's `RPCError`, so that a new kind of error
/// does not break a `switch` in your code: match on `code` and keep a `default`.
///
/// ```swift
/// do {
///     let reply = try await transceiver.request(Echo(text: "hi"), to: peer, as: Echo.self)
///     print(reply.text)
/// } catch let error as ChirpError where error.code == .requestTimedOut {
///     print("\(error.peer?.name ?? "?") is slow: \(error.message)")
/// }
/// ```
///
/// `description`, `message` and `localizedDescription` give the same sentence, the one the `chirp` CLI prints. Names
/// and texts that came from another peer (its name, a type name it sent, its responder's message) are shown with
/// their control characters escaped, so printing or logging an error cannot forge a line or drive a terminal.
public struct ChirpError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// What went wrong. New codes may come in later versions: a `switch` over them needs a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Wrapped: String, Hashable, Sendable {
            case invalidServiceType, invalidConfiguration, notRunning, listenFailed, peerNotConnected,
                peerDisconnected, requestTimedOut, noResponder, remoteFailure, decodingFailed, encodingFailed,
                handlerFailed, messageTooLarge, outboundLimitExceeded, protocolViolation, connectionFailed
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The code's name, as in `invalidServiceType`.
        public var description: String { wrapped.rawValue }

        /// The service type breaks the RFC 6763 rules; ``ChirpError/reason`` says which.
        public static let invalidServiceType = Code(.invalidServiceType)
        /// A configuration setting is out of range; ``ChirpError/reason`` says which and why.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The transceiver is not running: call `resume()` or `start()` first.
        public static let notRunning = Code(.notRunning)
        /// The listener could not be opened.
        public static let listenFailed = Code(.listenFailed)
        /// There is no connection to the peer (it disconnected, or was never connected).
        public static let peerNotConnected = Code(.peerNotConnected)
        /// The peer disconnected before it replied.
        public static let peerDisconnected = Code(.peerDisconnected)
        /// The request got no reply within its timeout.
        public static let requestTimedOut = Code(.requestTimedOut)
        /// The peer has no responder for the request's type.
        public static let noResponder = Code(.noResponder)
        /// The peer's responder threw; ``ChirpError/reason`` is its error's description.
        public static let remoteFailure = Code(.remoteFailure)
        /// A message or reply could not be decoded as the expected type.
        public static let decodingFailed = Code(.decodingFailed)
        /// A message could not be encoded.
        public static let encodingFailed = Code(.encodingFailed)
        /// A receive handler threw.
        public static let handlerFailed = Code(.handlerFailed)
        /// The encoded message is larger than ``Configuration/maximumMessageSize``.
        public static let messageTooLarge = Code(.messageTooLarge)
        /// The peer reads slower than we send and its queue reached ``Configuration/outboundLimit``; the message was
        /// not sent.
        public static let outboundLimitExceeded = Code(.outboundLimitExceeded)
        /// A peer sent something that is not valid Chirp protocol; the connection or frame was dropped.
        public static let protocolViolation = Code(.protocolViolation)
        /// ``Transceiver/connect(host:port:)`` could not open a TCP connection; ``ChirpError/reason`` says why.
        public static let connectionFailed = Code(.connectionFailed)
    }

    /// What went wrong.
    public let code: Code
    /// The error as one sentence a user can act on (the same as ``description``).
    public let message: String
    /// The peer concerned, when there is one.
    public let peer: Peer?
    /// The message type concerned (its wire name), when there is one.
    public let messageType: String?
    /// The detail, without the sentence around it: the rule a service type broke, the setting that is wrong, why a
    /// connection failed ("connection refused", "timed out"), the remote responder's message, the decoder's error.
    public let reason: String?
    /// The underlying error, when another library's error led to this one (a `DecodingError`, a NIO socket error).
    public let cause: (any Error)?

    /// Makes an error; Chirp's own are made by the static functions below, one per ``Code``.
    public init(
        code: Code, message: String, peer: Peer? = nil, messageType: String? = nil, reason: String? = nil,
        cause: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.peer = peer
        self.messageType = messageType
        self.reason = reason
        self.cause = cause
    }

    /// The same sentence as ``message``.
    public var description: String { message }

    /// The same sentence as ``message``, so that `localizedDescription` reads as the CLI's message rather than
    /// "The operation could not be completed".
    public var errorDescription: String? { message }

    /// Equal when the code, the sentence, the peer, the message type and the reason are; the cause is not compared.
    public static func == (lhs: ChirpError, rhs: ChirpError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.peer == rhs.peer && lhs.messageType == rhs.messageType
            && lhs.reason == rhs.reason
    }

    /// A string that may have come from another peer, with its control characters escaped.
    private static func shown(_ text: String) -> String { UntrustedText.escaped(text) }
}

// MARK: - Chirp's errors, one function per code

extension ChirpError {
    /// The service type `type` breaks the RFC 6763 rules; `reason` says which.
    public static func invalidServiceType(_ type: String, reason: String) -> ChirpError {
        ChirpError(
            code: .invalidServiceType,
            message:
                "invalid service type '\(shown(type))': \(reason) (RFC 6763: 1-15 letters, digits or hyphens, at least one letter)",
            reason: reason)
    }

    /// A configuration setting is out of range; `problem` says which and why.
    public static func invalidConfiguration(_ problem: String, cause: (any Error)? = nil) -> ChirpError {
        ChirpError(
            code: .invalidConfiguration, message: "invalid configuration: \(problem)", reason: problem, cause: cause)
    }

    /// The transceiver is not running.
    public static var notRunning: ChirpError {
        ChirpError(code: .notRunning, message: "the transceiver is not running: call resume() first")
    }

    /// The listener could not be opened, for `problem`.
    public static func listenFailed(_ problem: String, cause: (any Error)? = nil) -> ChirpError {
        ChirpError(
            code: .listenFailed, message: "could not listen for connections: \(problem)", reason: problem, cause: cause)
    }

    /// There is no connection to `peer`.
    public static func peerNotConnected(_ peer: Peer) -> ChirpError {
        ChirpError(code: .peerNotConnected, message: "peer \(shown(peer.name)) is not connected", peer: peer)
    }

    /// `peer` disconnected before it replied.
    public static func peerDisconnected(_ peer: Peer) -> ChirpError {
        ChirpError(
            code: .peerDisconnected, message: "peer \(shown(peer.name)) disconnected before it replied", peer: peer)
    }

    /// A request of `type` to `peer` got no reply within `seconds`.
    public static func requestTimedOut(type: String, peer: Peer, seconds: Double) -> ChirpError {
        ChirpError(
            code: .requestTimedOut, message: "no reply to \(shown(type)) from \(shown(peer.name)) within \(seconds) s",
            peer: peer, messageType: type)
    }

    /// `peer` has no responder for requests of `type`.
    public static func noResponder(type: String, peer: Peer) -> ChirpError {
        ChirpError(
            code: .noResponder,
            message: "peer \(shown(peer.name)) does not answer \(shown(type)) requests (no responder registered)",
            peer: peer, messageType: type)
    }

    /// `peer`'s responder for `type` threw; `message` is its error's description.
    public static func remoteFailure(type: String, peer: Peer, message: String) -> ChirpError {
        ChirpError(
            code: .remoteFailure, message: "\(shown(peer.name)) failed: \(shown(message))", peer: peer,
            messageType: type,
            reason: message)
    }

    /// A message or reply of `type` from `peer` could not be decoded.
    public static func decodingFailed(type: String, peer: Peer, reason: String, cause: (any Error)? = nil) -> ChirpError
    {
        ChirpError(
            code: .decodingFailed,
            message: "could not decode \(shown(type)) from \(shown(peer.name)): \(shown(reason))",
            peer: peer, messageType: type, reason: reason, cause: cause)
    }

    /// A message of `type` could not be encoded.
    public static func encodingFailed(type: String, reason: String, cause: (any Error)? = nil) -> ChirpError {
        ChirpError(
            code: .encodingFailed, message: "could not encode \(shown(type)): \(reason)", messageType: type,
            reason: reason,
            cause: cause)
    }

    /// A receive handler for `type` threw on a message from `peer`.
    public static func handlerFailed(type: String, peer: Peer, reason: String, cause: (any Error)? = nil) -> ChirpError
    {
        ChirpError(
            code: .handlerFailed,
            message: "handler for \(shown(type)) from \(shown(peer.name)) threw: \(shown(reason))",
            peer: peer, messageType: type, reason: reason, cause: cause)
    }

    /// A message of `type` encoded to `size` bytes, over `limit`.
    public static func messageTooLarge(type: String, size: Int, limit: Int) -> ChirpError {
        ChirpError(
            code: .messageTooLarge,
            message: "\(shown(type)) message is \(size) bytes, over maximumMessageSize (\(limit) bytes)",
            messageType: type)
    }

    /// `peer`'s outbound queue reached `limit` bytes; the message was not sent.
    public static func outboundLimitExceeded(peer: Peer, limit: Int) -> ChirpError {
        ChirpError(
            code: .outboundLimitExceeded,
            message:
                "\(shown(peer.name)) is not reading fast enough: its queue is full (\(limit) bytes); message not sent",
            peer: peer)
    }

    /// `peer` broke the protocol on an established connection (a malformed frame, an error on its connection);
    /// `cause` is the underlying error.
    public static func protocolViolation(peer: Peer, reason: String, cause: (any Error)? = nil) -> ChirpError {
        ChirpError(
            code: .protocolViolation, message: "protocol violation by \(shown(peer.name)): \(shown(reason))",
            peer: peer, reason: reason, cause: cause)
    }

    /// The peer named or addressed `peer` (before its hello there is no ``Peer``) broke the protocol.
    public static func protocolViolation(peer: String, reason: String) -> ChirpError {
        ChirpError(
            code: .protocolViolation, message: "protocol violation by \(shown(peer)): \(shown(reason))", reason: reason)
    }

    /// A TCP connection to `address` (`host:port`) could not be opened; `reason` says why in words: "connection
    /// refused", "timed out", "host unreachable", "cannot resolve the host name".
    public static func connectionFailed(address: String, reason: String, cause: (any Error)? = nil) -> ChirpError {
        // "connection refused by 127.0.0.1:1" reads best; other reasons follow the address.
        let message =
            reason == "connection refused"
            ? "connection refused by \(shown(address))" : "could not connect to \(shown(address)): \(reason)"
        return ChirpError(code: .connectionFailed, message: message, reason: reason, cause: cause)
    }
}
