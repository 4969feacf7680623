/// Why a file transfer failed.
public struct FileTransferError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: Sendable, Equatable {
        /// The receiver refused the offer (too large, a bad name, no room, ...): ``reason`` says why.
        case refused
        /// The receiving app declined the file (its decision in ``FileTransfers/receive(into:accepting:)``).
        case declined
        /// This side cancelled the transfer.
        case cancelled
        /// The other side cancelled the transfer, or stopped it (``reason`` says why).
        case cancelledByPeer
        /// The file received does not have the sender's SHA-256: the partial file was deleted.
        case checksumMismatch
        /// The peer did not come back within ``FileTransferConfiguration/resumeTimeout``.
        case peerGone
        /// Reading or writing a file failed.
        case fileError
    }

    /// The kind of failure.
    public var code: Code
    /// What happened, for a person.
    public var reason: String

    /// Creates an error.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason }
}
