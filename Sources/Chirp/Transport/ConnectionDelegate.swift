import NIOCore

/// What a connection's handler reports to the peer table and the router. Called on the connection's event loop.
protocol ConnectionDelegate: AnyObject, Sendable {
    /// The handshake completed. Returns `false` when the connection must not be used (the delegate retires it).
    func connectionEstablished(_ connection: PeerConnection)
    /// An established connection closed.
    func connectionClosed(_ connection: PeerConnection)
    /// A connection closed before its handshake completed; `error` says why when known.
    func handshakeFailed(role: ConnectionRole, remote: String, dialedPeerID: String?, error: (any Error)?)
    /// A message frame arrived.
    func route(_ message: MessageBody, from connection: PeerConnection)
    /// A request frame arrived.
    func handleRequest(_ request: RequestBody, from connection: PeerConnection)
    /// Something went wrong that the user should hear about.
    func report(_ error: ChirpError, logLevel: Logger.Level)
}

import Logging
