/// How far a request got before its connection closed without its reply: what decides whether it may be sent again
/// (``RequestAttempts``).
enum RequestDelivery: Equatable, Sendable {
    /// Its frame was still in the connection's queue: never handed to the socket, so the peer cannot have run it.
    case notSent
    /// Its frame was handed to the socket: the peer may have received it and run its responder.
    case sent
}
