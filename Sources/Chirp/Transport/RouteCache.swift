import NIOPosix

/// The connection each thread last sent on with ``Transceiver/send(_:to:)-1sz75``: one per thread (NIO's
/// `ThreadSpecificVariable`), touched only by the thread it belongs to, so no lock is taken.
final class RouteCache {
    // @unchecked below: an instance is only ever reached through `current`, from the thread it belongs to.
    private static let current = ThreadSpecificVariable<RouteCache>()

    /// This thread's route cache.
    static var forThisThread: RouteCache {
        if let cache = current.currentValue { return cache }
        let cache = RouteCache()
        current.currentValue = cache
        return cache
    }

    /// The route, for one transceiver and peer: the next send to the same peer takes no lock to find it (the peer
    /// table's and the transceiver's locks are skipped). Held through its ``SendRoute``, weakly: the route lapses when
    /// the connection retires or closes, and a connection that stops taking frames meanwhile refuses the frame; either
    /// way the send looks the peer up in the table again (``forgetRoute()``). Three fields rather than an optional
    /// struct: copying a struct with a weak reference in it costs two more calls into the runtime per send.
    @exclusivity(unchecked) private var routeOwner: ObjectIdentifier?
    @exclusivity(unchecked) private var routePeerID = ""
    @exclusivity(unchecked) private weak var routeAnchor: SendRoute?

    /// The connection remembered for `peerID` of the transceiver `owner`, if any.
    func route(owner: ObjectIdentifier, peerID: String) -> PeerConnection? {
        guard routeOwner == owner, routePeerID == peerID, let anchor = routeAnchor else { return nil }
        return anchor.connection
    }

    /// Remembers the connection a send to `peerID` of `owner` used (unless it no longer takes new frames).
    func remember(_ connection: PeerConnection, owner: ObjectIdentifier, peerID: String) {
        guard let anchor = connection.sendRoute() else { return forgetRoute() }
        routeOwner = owner
        routePeerID = peerID
        routeAnchor = anchor
    }

    /// The remembered connection refused a frame: the next send looks the peer up again.
    func forgetRoute() {
        routeOwner = nil
        routeAnchor = nil
    }
}

extension RouteCache: @unchecked Sendable {}
