import ChirpSupport

/// MultipeerKit's names, for code ported from it (Docs/MigratingFromMultipeerKit.md): each is one of Chirp's own
/// calls under the name MultipeerKit gave it. New code uses ``Transceiver/start()``, ``Transceiver/shutdown()``,
/// ``Transceiver/send(_:to:)-1sz75`` with `.all`, the two-argument `receive` and ``Transceiver/makeEvents()``.
extension Transceiver {
    /// Starts listening, advertising and browsing, and returns at once; does nothing if already running.
    ///
    /// MultipeerKit's `resume()`. ``start()`` does the same and returns once the listener is open (or throws if it
    /// could not open).
    ///
    /// ```swift
    /// let transceiver = Transceiver(serviceType: "notes")
    /// try transceiver.resume()
    /// ```
    /// - Throws: ``/ChirpSupport/ChirpError/Code/invalidServiceType`` or
    ///   ``/ChirpSupport/ChirpError/Code/invalidConfiguration`` when the configuration is not valid. Problems found
    ///   later (no DNS-SD daemon, a port in use) are logged and reported as events.
    public func resume() throws {
        _ = try startEngine()
    }

    /// Says goodbye to every peer and releases every socket, DNS-SD reference and timer; returns at once, the release
    /// completes in the background.
    ///
    /// MultipeerKit's `stop()`. ``shutdown()`` does the same and returns once everything is released.
    ///
    /// ```swift
    /// transceiver.stop()
    /// ```
    public func stop() {
        _ = stopEngine()
    }

    /// Sends `value` to every app connected: MultipeerKit's `broadcast(_:)`, the same as
    /// `try send(value, to: .all)`.
    ///
    /// ```swift
    /// try transceiver.broadcast(Note(text: "hi"))
    /// ```
    /// - Throws: what ``send(_:to:)-1sz75`` throws.
    public func broadcast<T: Encodable>(_ value: T) throws {
        try send(value, to: .all)
    }

    /// Calls `handler` for every message of type `T`: MultipeerKit's one-argument form of
    /// ``receive(_:handler:)-(_,(T,Peer)->Void)``, without the sender.
    ///
    /// ```swift
    /// try transceiver.receive(Note.self) { note in print(note.text) }
    /// ```
    /// - Throws: what ``receive(_:handler:)-(_,(T,Peer)->Void)`` throws.
    @discardableResult
    public func receive<T: Decodable & Sendable>(
        _ type: T.Type, handler: @escaping @Sendable (_ payload: T) throws -> Void
    ) throws -> HandlerToken {
        try receive(type) { payload, _ in try handler(payload) }
    }

    /// Called (on an internal serial queue) with the new list whenever the available peers change: MultipeerKit's
    /// callback. The same lists arrive as ``TransceiverEvent/availablePeersChanged(_:)`` on ``makeEvents()``,
    /// with every other event.
    ///
    /// ```swift
    /// transceiver.availablePeersDidChange = { peers in print(peers.map(\.name)) }
    /// ```
    public var availablePeersDidChange: (@Sendable ([Peer]) -> Void)? {
        get { hub.availablePeersDidChange }
        set { hub.setAvailablePeersDidChange(newValue) }
    }
}
