import Chirp

/// A file a peer offers, as the receiving app sees it before taking it: the decision of
/// ``FileTransfers/receive(into:accepting:)``.
///
/// ```swift
/// let offers = try files.receive(into: "/srv/inbox") { offer in
///     offer.size <= 1 << 30 && offer.sender.name.hasPrefix("lab-")
/// }
/// ```
public struct IncomingFileOffer: Sendable {
    /// The name the file would be saved under (the sender's, sanitised as ``IncomingFileTransfer/name`` is).
    public var name: String
    /// The file's size in bytes (at most ``FileTransferConfiguration/maximumFileSize``: larger offers are refused
    /// before they are asked about).
    public var size: Int64
    /// The peer offering it.
    public var sender: Peer
}
