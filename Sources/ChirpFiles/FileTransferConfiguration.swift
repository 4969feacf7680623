import Foundation

/// How ``FileTransfers`` sends and receives files, with documented defaults.
///
/// ```swift
/// var configuration = FileTransferConfiguration()
/// configuration.maximumFileSize = 4 << 30  // 4 GiB
/// let files = try FileTransfers(transceiver: transceiver, configuration: configuration)
/// ```
public struct FileTransferConfiguration: Sendable {
    /// The most file bytes in one `chirp.file.chunk` message. Default: 128 KiB. At most ``maximumChunkSize``.
    public var chunkSize: Int = 128 * 1024
    /// The most chunks sent and not acknowledged yet: what one transfer holds in memory on either side is at most
    /// about `window × chunkSize` (1 MiB by default). Default: 8.
    public var window: Int = 8
    /// The largest file a receiver accepts; larger offers are refused. Default: 64 GiB.
    public var maximumFileSize: Int64 = 64 << 30
    /// Where a receiver keeps partial files (`NAME.part`, resumed after a dropped connection). Default: `nil`, a
    /// `.chirp-partial` directory inside the directory files are received into (so that a finished file is moved
    /// into place by a rename on the same file system).
    public var temporaryDirectory: String?
    /// How long a receiver keeps a partial file nothing has written to: when it starts receiving
    /// (``FileTransfers/receive(into:accepting:)``), the partial files untouched for longer are deleted. Default: 7
    /// days.
    public var partialFileRetention: Duration = .seconds(7 * 24 * 3600)
    /// The most bytes of partial files a receiver keeps: when it starts receiving, the partial files untouched for
    /// longest are deleted until the others take at most this. Default: 64 GiB.
    public var maximumPartialBytes: Int64 = 64 << 30
    /// How long a sender waits for the receiver to answer an offer (its app may ask a person whether to take the
    /// file). Default: 2 minutes.
    public var offerTimeout: Duration = .seconds(120)
    /// How long a sender waits for the receiver to come back after the connection dropped before the transfer
    /// fails. Default: 60 seconds.
    public var resumeTimeout: Duration = .seconds(60)
    /// How long a sender waits for the receiver to check the file's SHA-256 and move it into place. Default: 10
    /// minutes (the receiver hashes the bytes as they arrive: what is left is a rename).
    public var finishTimeout: Duration = .seconds(600)

    /// The largest ``chunkSize`` a peer may use: 1 MiB. A receiver refuses offers with larger chunks.
    public static let maximumChunkSize = 1 << 20

    /// Chirp's defaults.
    public init() {}
}
