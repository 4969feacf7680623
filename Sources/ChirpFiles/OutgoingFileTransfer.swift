import Chirp
import Foundation
import NIOConcurrencyHelpers

/// A file on its way to a peer, returned by ``FileTransfers/send(file:named:to:)``: its progress, its result, and
/// ``cancel()``.
///
/// ```swift
/// let transfer = try files.send(file: "/tmp/report.pdf", to: peer)
/// for await progress in transfer.progress { print(Int(progress.fractionCompleted * 100), "%") }
/// let savedAs = try await transfer.result()
/// ```
public final class OutgoingFileTransfer: Sendable {
    /// The transfer's id (the same on the receiving side: ``IncomingFileTransfer/id``).
    public let id: UUID
    /// The name the file is offered under.
    public let name: String
    /// The receiving peer.
    public let peer: Peer
    /// The file's size in bytes.
    public let size: Int64
    /// The bytes the receiver has written, each time it acknowledges more (the newest value when the consumer is
    /// slower); finishes when the transfer ends. One consumer.
    public let progress: AsyncStream<FileTransferProgress>

    enum Signal: Sendable {
        case ack(Int64)
        case cancelledByPeer(String)
        case peerLost
        case peerBack
        case resumeDeadline(Int)
    }

    let path: String
    let signals: AsyncStream<Signal>
    let signal: AsyncStream<Signal>.Continuation
    let progressContinuation: AsyncStream<FileTransferProgress>.Continuation
    let outcome = Outcome<String>()
    let task = NIOLockedValueBox<Task<Void, Never>?>(nil)
    let latest: NIOLockedValueBox<FileTransferProgress>
    /// The most bytes sent and not acknowledged at any moment: what the transfer held in flight (tests).
    let peakInFlight = NIOLockedValueBox<Int64>(0)
    /// Tests: no chunk is sent from this offset on (the transfer waits, until it ends).
    let holdSendingAt = NIOLockedValueBox<Int64?>(nil)
    /// The offsets the receiver gave in its offer replies, in order (tests: a resume's offset).
    let offeredOffsets = NIOLockedValueBox<[Int64]>([])

    init(path: String, name: String, size: Int64, peer: Peer) {
        self.id = UUID()
        self.path = path
        self.name = name
        self.size = size
        self.peer = peer
        (progress, progressContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        (signals, signal) = AsyncStream.makeStream()
        latest = NIOLockedValueBox(FileTransferProgress(completedBytes: 0, totalBytes: size))
    }

    /// The progress now.
    public var currentProgress: FileTransferProgress { latest.withLockedValue { $0 } }

    /// Waits for the end of the transfer and returns the name the receiver saved the file under (which may differ
    /// from ``name``: it is sanitised, and never replaces a file).
    ///
    /// - Throws: ``FileTransferError``: refused, cancelled (by either side), a checksum mismatch, the peer gone for
    ///   longer than ``FileTransferConfiguration/resumeTimeout``, or a file that cannot be read.
    public func result() async throws -> String { try await outcome.value() }

    /// Stops the transfer: the receiver is told (`chirp.file.cancel`) and deletes its partial file; ``result()``
    /// throws ``FileTransferError/Code/cancelled``.
    public func cancel() {
        task.withLockedValue { $0 }?.cancel()
    }

    func report(_ completed: Int64) {
        let value = FileTransferProgress(completedBytes: completed, totalBytes: size)
        latest.withLockedValue { $0 = value }
        progressContinuation.yield(value)
    }

    func end(_ result: Result<String, FileTransferError>) {
        outcome.set(result)
        progressContinuation.finish()
        signal.finish()
    }
}
