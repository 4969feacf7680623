/// What Routing needs of a connection's reads: a consumer that is full (a message sequence's buffer, the queue of
/// async responders) stops reading from the connection its elements come from, and lets it read again once it has
/// room. Callable from any thread; `key` names the consumer, and the reads go on only once no key holds them.
///
/// Transport's `LoopBoundGate` (a `ReadGate` reached through its event loop) is the one implementation, so that
/// Routing names nothing of Transport.
protocol ReadPause: Sendable {
    /// Stops reading for `key`.
    func close(for key: ObjectIdentifier)
    /// Reads again for `key`, when no other key keeps the reads stopped.
    func open(for key: ObjectIdentifier)
}
