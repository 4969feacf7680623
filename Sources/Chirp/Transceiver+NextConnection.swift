import ChirpSupport

extension Transceiver {
    /// What became of the wait for a peer's next connection (``nextConnection(to:after:until:)``).
    enum NextConnection: Sendable {
        /// The peer is connected again, over this connection.
        case connected(PeerConnection)
        /// It is not, and will not be before the deadline.
        case missed(RequestAttempts.Missed)
    }

    /// Waits until the peer `peerID` is connected over a connection other than `lost` (the one that closed), until
    /// `deadline`; ends at once when the peer is gone (the table forgot it: no longer advertised, or connected to by
    /// address) or this transceiver stops. Woken by the events of the peer table, never by polling.
    func nextConnection(
        to peerID: String, after lost: ObjectIdentifier, until deadline: ContinuousClock.Instant
    ) async -> NextConnection {
        // Subscribed before the first look: what changes after it comes as an event.
        let events = hub.makeStream()
        guard let engine = currentEngine else { return .missed(.stopped) }
        @Sendable func look() -> NextConnection? {
            if let connection = engine.connection(to: peerID), ObjectIdentifier(connection) != lost {
                return .connected(connection)
            }
            return engine.knowsPeer(peerID) ? nil : .missed(.peerGone)
        }
        if let found = look() { return found }
        let seconds = (deadline - .now).seconds
        return await withTaskGroup(of: NextConnection.self) { group in
            group.addTask {
                for await event in events {
                    switch event {
                    case .peerConnected(let peer) where peer.id == peerID,
                        .peerRemoved(let peer) where peer.id == peerID:
                        if let found = look() { return found }
                    case .stopped:
                        return .missed(.stopped)
                    default:
                        continue
                    }
                }
                return .missed(.stopped)  // the stream ends with the transceiver, or the wait was cancelled
            }
            group.addTask {
                // In steps of at most a day: a deadline of "never" (`.seconds(Int64.max)`) is past what a sleep takes.
                while case let left = deadline - .now, left > .zero {
                    do { try await Task.sleep(for: min(left, .seconds(86_400))) } catch { break }
                }
                return .missed(.timedOut(seconds: seconds))
            }
            let first = await group.next() ?? .missed(.stopped)
            group.cancelAll()
            return first
        }
    }
}
