/// What a connection's handler reports to the peer table. Called on the connection's event loop.
///
/// Messages and requests on established connections go to the ``MessageDispatcher`` instead.
protocol ConnectionDelegate: AnyObject, Sendable {
    /// The handshake completed.
    func connectionEstablished(_ connection: PeerConnection)
    /// Runs `body` once the events reported so far (a ``TransceiverEvent/peerConnected(_:)`` among them) are
    /// delivered to the app: what the peer sent meanwhile waits for it.
    func afterEventsDelivered(_ body: @escaping @Sendable () -> Void)
    /// An established connection closed: `peerStopping` when the peer's `goodbye(stopping)` closed it, `refusal` when
    /// the peer refused it right after the hellos (its accept policy), with the reason it gave.
    func connectionClosed(_ connection: PeerConnection, peerStopping: Bool, refusal: String?)
    /// A connection closed before its handshake completed; `error` says why when known.
    func handshakeFailed(role: ConnectionRole, remote: String, dialedPeerID: String?, error: (any Error)?)
}
