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
                handlerFailed, messageTooLarge, outboundLimitExceeded, protocolViolation, connectionFailed,
                invalidTypeName, typeNameConflict, pairingFailed
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The code's name, as in `invalidServiceType`.
        public var description: String { wrapped.rawValue }

        /// The service type breaks the RFC 6763 rules; ``ChirpError/reason`` says which.
        public static let invalidServiceType = Code(.invalidServiceType)
        /// A configuration setting is out of range; ``ChirpError/reason`` says which and why.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The transceiver is not running: call `Transceiver.start()` first.
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
        /// The encoded message is larger than `Configuration.maximumMessageSize`.
        public static let messageTooLarge = Code(.messageTooLarge)
        /// The peer reads slower than we send and its queue reached `Configuration.outboundLimit`; the message was
        /// not sent.
        public static let outboundLimitExceeded = Code(.outboundLimitExceeded)
        /// A peer sent something that is not valid Chirp protocol; the connection or frame was dropped.
        public static let protocolViolation = Code(.protocolViolation)
        /// `Transceiver.connect(host:port:)` could not open a TCP connection; ``ChirpError/reason`` says why.
        public static let connectionFailed = Code(.connectionFailed)
        /// A message type's wire name cannot travel (empty, or over 1,024 bytes of UTF-8): refused where a handler
        /// or a responder is registered, and where a message or a request is sent. ``ChirpError/messageType`` is the
        /// name.
        public static let invalidTypeName = Code(.invalidTypeName)
        /// Two Swift types were registered under one wire name (two modules' types with the same
        /// `ChirpMessage.chirpTypeName`): the second registration is refused, naming both.
        public static let typeNameConflict = Code(.typeNameConflict)
        /// A pairing did not complete: the peer declined it or does not accept pairings, its certificate is not the
        /// one it advertised, nobody answered in time, or the connection failed. ``ChirpError/reason`` says which.
        public static let pairingFailed = Code(.pairingFailed)
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
        ChirpError(code: .notRunning, message: "the transceiver is not running: call start() first")
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

    /// `peer` disconnected before it replied to a request of `type`; `reason` says what became of the request: whether
    /// it was sent again on the peer's next connection, and whether the peer may have run it.
    public static func peerDisconnected(_ peer: Peer, type: String, reason: String) -> ChirpError {
        ChirpError(
            code: .peerDisconnected,
            message: "peer \(shown(peer.name)) disconnected before it replied to \(shown(type)): \(reason)", peer: peer,
            messageType: type, reason: reason)
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

    /// This ``Code/messageTooLarge`` error, saying why a message that holds `Data` is larger than it looks.
    package func explainingData() -> ChirpError {
        ChirpError(
            code: code,
            message: message
                + "; it holds Data, which JSON writes as base64 (4/3 of its size), while a bare Data value travels "
                + "as raw bytes: send the data on its own, or raise maximumMessageSize",
            peer: peer, messageType: messageType, reason: "Data inside a JSON message", cause: cause)
    }

    /// The reply from `peer` to a request of `request` is a `received`, which does not decode as `expected`.
    package static func replyDecodingFailed(
        request: String, expected: String, received: String, peer: Peer, reason: String, cause: (any Error)?
    ) -> ChirpError {
        ChirpError(
            code: .decodingFailed,
            message:
                "the reply from \(shown(peer.name)) to \(shown(request)) is a \(shown(received)), which does not decode "
                + "as the type expected, \(expected): \(shown(reason))",
            peer: peer, messageType: received, reason: reason, cause: cause)
    }

    /// `peer`'s outbound queue reached `limit` bytes; the message was not sent.
    public static func outboundLimitExceeded(peer: Peer, limit: Int) -> ChirpError {
        ChirpError(
            code: .outboundLimitExceeded,
            message:
                "\(shown(peer.name)) is not reading fast enough: its queue is full (\(limit) bytes); message not sent "
                + "(`try await send(_:to:)` waits for room instead)",
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

    /// The longest wire name of a message type, in bytes of UTF-8, as ``invalidTypeName(_:swiftType:problem:)``
    /// states it: ChirpWire's `WireFormat.maxTypeNameLength`, which this target cannot import (its frames are linked
    /// alone into the fuzzers). A test in ChirpTests keeps the two equal.
    package static let maxTypeNameLength = 1024

    /// The wire name `name` (of the Swift type `swiftType`, when it is one) cannot travel, because of `problem`
    /// ("it is empty", "it is 1025 bytes long").
    public static func invalidTypeName(_ name: String, swiftType: String?, problem: String) -> ChirpError {
        let shownName = name.utf8.count > 64 ? "\(shown(String(name.prefix(48))))..." : shown(name)
        let subject = swiftType.map { "the wire name of \($0), '\(shownName)'," } ?? "the type name '\(shownName)'"
        let fix = swiftType == nil ? "" : ": give the type a chirpTypeName (ChirpMessage) that is"
        return ChirpError(
            code: .invalidTypeName,
            message:
                "\(subject) cannot travel: \(problem); a type name must be 1-\(maxTypeNameLength) bytes of UTF-8\(fix)",
            messageType: name, reason: problem)
    }

    /// `refused` (a Swift type) cannot be registered under the wire name `name`: `registered` is.
    public static func typeNameConflict(_ name: String, registered: String, refused: String) -> ChirpError {
        ChirpError(
            code: .typeNameConflict,
            message:
                "cannot register \(refused) under the wire name '\(shown(name))': \(registered) is registered under it; "
                + "the messages of one name decode as one type. Give one of them another chirpTypeName (ChirpMessage)",
            messageType: name, reason: "\(registered) is registered under it")
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

    /// Pairing with `peer` (a name or an address) did not complete; `reason` says why.
    public static func pairingFailed(with peer: String, reason: String, cause: (any Error)? = nil) -> ChirpError {
        ChirpError(
            code: .pairingFailed, message: "pairing with \(shown(peer)) failed: \(shown(reason))", reason: reason,
            cause: cause)
    }
}
