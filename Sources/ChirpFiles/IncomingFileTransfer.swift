import Chirp
import Foundation
import NIOConcurrencyHelpers

/// A file arriving from a peer, yielded by ``FileTransfers/receive(into:accepting:)``: its progress, its result, and
/// ``cancel(keepingPartialFile:)``.
///
/// ```swift
/// for await incoming in try files.receive(into: "/srv/inbox") {
///     Task { print("saved", try await incoming.result()) }
/// }
/// ```
///
/// The bytes go to a partial file (``FileTransferConfiguration/temporaryDirectory``); when the last one is there
/// and the file's SHA-256 is the sender's, it is moved into the directory under a free name. After a dropped
/// connection the partial file stays, and the sender's next offer resumes from its end.
public final class IncomingFileTransfer: Sendable {
    /// The transfer's id (the sender's ``OutgoingFileTransfer/id``).
    public let id: UUID
    /// The name the sender gave, sanitised: no path, no control characters, no leading dot. The file is saved under
    /// it, or under `NAME (1).EXT`, `NAME (2).EXT`, ... when a file of that name exists.
    public let name: String
    /// The file's size in bytes.
    public let size: Int64
    /// The SHA-256 the sender announced, 64 hexadecimal digits.
    public let sha256: String
    /// The bytes written to disk, each time more are (the newest value when the consumer is slower); finishes when
    /// the transfer ends. One consumer.
    public let progress: AsyncStream<FileTransferProgress>

    struct State {
        var sender: Peer
        var written: Int64 = 0
        var buffered: Int = 0
        var writer: AsyncStream<(Int64, Data)>.Continuation?
        var writerTask: Task<Void, Never>?
        var handle: FileHandle?
        var peakBuffered: Int = 0
        /// The SHA-256 of the bytes before ``hashed``, updated by the writer as it writes (stored when it stops).
        var hasher = RunningSHA256()
        var hashed: Int64 = 0
        /// Bytes of the partial file read back to hash them (a resumption without the hash of what it holds: tests).
        var readBack: Int64 = 0
        /// Set when the transfer starts to end (finished, cancelled, failed): chunks still on their way are dropped.
        var ending = false
    }

    let partialPath: String
    let directory: String
    let state: NIOLockedValueBox<State>
    let outcome = Outcome<String>()
    let progressContinuation: AsyncStream<FileTransferProgress>.Continuation
    let cancelHandler: NIOLockedValueBox<(@Sendable (_ keepingPartialFile: Bool) -> Void)?> = NIOLockedValueBox(nil)

    init(id: UUID, name: String, size: Int64, sha256: String, sender: Peer, partialPath: String, directory: String) {
        self.id = id
        self.name = name
        self.size = size
        self.sha256 = sha256
        self.partialPath = partialPath
        self.directory = directory
        state = NIOLockedValueBox(State(sender: sender))
        (progress, progressContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The peer sending the file (its latest connection's).
    public var sender: Peer { state.withLockedValue { $0.sender } }

    /// The progress now.
    public var currentProgress: FileTransferProgress {
        FileTransferProgress(completedBytes: state.withLockedValue { $0.written }, totalBytes: size)
    }

    /// Waits for the end of the transfer and returns the path of the file received.
    ///
    /// - Throws: ``FileTransferError``: cancelled (by either side), a checksum mismatch (the partial file is
    ///   deleted), or a file that cannot be written.
    public func result() async throws -> String { try await outcome.value() }

    /// Stops the transfer: the sender is told (`chirp.file.cancel`), and ``result()`` throws
    /// ``FileTransferError/Code/cancelled``.
    ///
    /// - Parameter keepingPartialFile: `false` (the default) deletes the partial file; `true` keeps it, so that the
    ///   same file sent again (by this sender or another) resumes from its end: what a receiver that stops for now
    ///   does (`chirp receive-files` on Ctrl-C). Partial files are kept within
    ///   ``FileTransferConfiguration/partialFileRetention``.
    public func cancel(keepingPartialFile: Bool = false) {
        cancelHandler.withLockedValue { $0 }?(keepingPartialFile)
    }

    /// The most chunk bytes received and not written yet at any moment (tests).
    var peakBuffered: Int { state.withLockedValue { $0.peakBuffered } }

    func report(_ written: Int64) {
        progressContinuation.yield(FileTransferProgress(completedBytes: written, totalBytes: size))
    }

    func end(_ result: Result<String, FileTransferError>) {
        if outcome.set(result) { progressContinuation.finish() }
    }
}
