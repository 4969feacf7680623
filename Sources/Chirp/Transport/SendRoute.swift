/// What a sending thread remembers of the connection it sent on last (``RouteCache``): that thread holds
/// it weakly, the connection's queue strongly until the connection retires or closes, and then the route lapses.
///
/// The thread does not hold the ``PeerConnection`` itself weakly: the Swift runtime gives an object that is ever
/// referenced weakly a side table, and from then on every retain and release of that object takes the runtime's
/// slow path. A connection is retained and released several times per message, on the sender and on the receiver;
/// with a weak reference to it, those slow paths and the weak loads took about a tenth of both sides' CPU in the
/// `oneway.small` benchmark (`perf`, Docs/Performance.md). This anchor takes the side table instead, and it is
/// touched once per send.
final class SendRoute: Sendable {
    /// The connection the route leads to. The anchor keeps it alive; the queue lets the anchor go when the connection
    /// retires or closes (``OutboundQueue/retire()``, ``OutboundQueue/close()``), which ends that cycle.
    let connection: PeerConnection

    init(connection: PeerConnection) {
        self.connection = connection
    }
}
