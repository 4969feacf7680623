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
    /// `deadline`. Woken by the peer table's events, never by polling.
    ///
    /// It ends early when this transceiver stops, or when the peer is gone: the table forgot it after it had seen it
    /// advertise itself (its DNS-SD record was withdrawn). A peer the table forgets when its connection closes because
    /// it had never resolved it (the peer dialed us first) is waited for: it dials again, or discovery finds it now.
    func nextConnection(
        to peerID: String, after lost: ObjectIdentifier, until deadline: ContinuousClock.Instant
    ) async -> NextConnection {
        // Subscribed before the first look: what changes after it comes as an event.
        let events = hub.makeStream()
        guard let engine = currentEngine else { return .missed(.stopped) }
        let seconds = (deadline - .now).seconds
        return await withTaskGroup(of: NextConnection.self) { group in
            group.addTask {
                var sawAdvertised = false
                /// The table's answer, or `nil` to wait for its next event about the peer.
                func look() -> NextConnection? {
                    if let connection = engine.connection(to: peerID), ObjectIdentifier(connection) != lost {
                        return .connected(connection)
                    }
                    switch engine.peerIsAdvertised(peerID) {
                    case true?: sawAdvertised = true
                    case false?: break
                    case nil: if sawAdvertised { return .missed(.peerGone) }
                    }
                    return nil
                }
                if let found = look() { return found }
                for await event in events {
                    switch event {
                    case .peerConnected(let peer) where peer.id == peerID,
                        .peerAdded(let peer) where peer.id == peerID,
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
