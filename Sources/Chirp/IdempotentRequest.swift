/// A request that may run twice without harm: its responder reads, or sets something to a value it states (not "add
/// one"). Conforming says so, and lets ``Transceiver/request(_:to:as:timeout:)`` send it again when the connection
/// drops after it was sent.
///
/// ```swift
/// struct ListItems: Codable, Sendable, IdempotentRequest {}
/// ```
///
/// When the connection to the peer closes before the reply, a request is sent again, once, on the peer's next
/// connection (within what is left of its timeout) if the peer cannot have run it (it was still queued, never handed
/// to the socket), or if its type conforms to this protocol. A request of another type that had been sent fails with
/// ``/ChirpSupport/ChirpError/Code/peerDisconnected``, its ``/ChirpSupport/ChirpError/reason`` saying that the peer
/// may have run it: only the caller knows whether to send it again.
public protocol IdempotentRequest {}
