import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers

/// Files larger than memory, sent to a peer and received into a directory, with progress, cancellation on both
/// sides, a SHA-256 check, and resumption after a dropped connection.
///
/// ```swift
/// let files = try FileTransfers(transceiver: transceiver)
/// // Sending:
/// let transfer = try files.send(file: "/tmp/dataset.bin", to: peer)
/// for await progress in transfer.progress { print(progress.completedBytes, "of", progress.totalBytes) }
/// print("saved as", try await transfer.result())
/// // Receiving:
/// for await incoming in try files.receive(into: "/srv/inbox") {
///     Task { print("received", try await incoming.result()) }
/// }
/// ```
///
/// The file travels in `chirp.file.chunk` messages of ``FileTransferConfiguration/chunkSize`` bytes, at most
/// ``FileTransferConfiguration/window`` of them sent and not acknowledged, so neither side holds more than about
/// `window × chunkSize` of it in memory, and the connection's other messages go between the chunks. The messages
/// are documented in Docs/Files.md for peers in other languages.
///
/// One `FileTransfers` per transceiver: it registers handlers for the `chirp.file.*` messages (the chunks' handler
/// takes them as the raw bytes they are); the transceiver's other messages never reach it.
public final class FileTransfers: Sendable {
    /// The service type `chirp send-file` and `chirp receive-files` join by default: `chirp-files`, i.e.
    /// `_chirp-files._tcp`. An app sends and receives files on its own service type.
    public static let defaultServiceType = "chirp-files"

    /// The transceiver the files travel through.
    public let transceiver: Transceiver
    /// The settings, as given.
    public let configuration: FileTransferConfiguration
    let logger: Logger

    struct State {
        var outgoing: [UUID: OutgoingFileTransfer] = [:]
        var incoming: [UUID: IncomingFileTransfer] = [:]
        var receiving: Receiving?
        /// Tests: stop acknowledging a transfer's chunks once this many bytes are written.
        var holdAcksAfter: Int64?
        /// Tests: a transfer sent stops sending chunks at this offset (until it ends).
        var holdSendingAt: Int64?
        /// The time, for the partial files' retention (tests set another).
        var clock: @Sendable () -> Date = { Date() }
    }

    /// Where files are received, and the app's decision on each offer.
    struct Receiving {
        var directory: String
        var partials: String
        var offers: AsyncStream<IncomingFileTransfer>.Continuation
        var decide: @Sendable (IncomingFileOffer) async -> Bool
    }
    let state = NIOLockedValueBox(State())
    private let tokens: [HandlerToken]
    private let events: NIOLockedValueBox<Task<Void, Never>?> = NIOLockedValueBox(nil)

    /// Sends and receives files through `transceiver` (started or not).
    ///
    /// - Throws: what `Transceiver.receive` throws when a `chirp.file.*` type name is taken by another type.
    public init(
        transceiver: Transceiver, configuration: FileTransferConfiguration = FileTransferConfiguration()
    ) throws {
        self.transceiver = transceiver
        self.configuration = configuration
        self.logger = transceiver.configuration.logger
        // Weak: the transceiver's handlers must not keep these transfers alive.
        let box = NIOLockedValueBox(WeakFileTransfers())
        var tokens: [HandlerToken] = []
        tokens.append(
            try transceiver.receive(FileAck.self) { ack, sender in
                box.withLockedValue { $0.value }?.received(ack, from: sender)
            })
        tokens.append(
            try transceiver.receive(FileCancel.self) { cancel, sender in
                box.withLockedValue { $0.value }?.received(cancel, from: sender)
            })
        tokens.append(
            try transceiver.receiveRaw(typeName: FileChunk.typeName) { message, sender in
                box.withLockedValue { $0.value }?.receivedChunk(message.payload, from: sender)
            })
        self.tokens = tokens
        box.withLockedValue { $0.value = self }
        let stream = transceiver.makeEvents()
        events.withLockedValue {
            $0 = Task { [weak self] in
                for await event in stream {
                    guard let self else { return }
                    self.handle(event)
                }
            }
        }
    }

    deinit {
        for token in tokens { token.cancel() }
        events.withLockedValue { $0 }?.cancel()
    }

    // MARK: - Sending

    /// Starts sending the file at `path` to `peer`, under `name` (the file's own name when `nil`).
    ///
    /// The file is hashed first (SHA-256, read once), then offered; the receiver answers from which byte it needs
    /// it (0, or the end of what it kept of an earlier attempt). When the connection drops, the transfer waits up to
    /// ``FileTransferConfiguration/resumeTimeout`` for the peer and offers again.
    ///
    /// - Throws: ``FileTransferError/Code/fileError`` when `path` is not a readable regular file.
    public func send(file path: String, named name: String? = nil, to peer: Peer) throws -> OutgoingFileTransfer {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try FileManager.default.attributesOfItem(atPath: path)
        } catch {
            throw FileTransferError(.fileError, "cannot read \(path): \(error.localizedDescription)")
        }
        guard (attributes[.type] as? FileAttributeType) == .typeRegular,
            let size = (attributes[.size] as? NSNumber)?.int64Value
        else { throw FileTransferError(.fileError, "\(path) is not a regular file") }
        let transfer = OutgoingFileTransfer(
            path: path, name: name ?? (path as NSString).lastPathComponent, size: size, peer: peer)
        let hold = state.withLockedValue { state in
            state.outgoing[transfer.id] = transfer
            return state.holdSendingAt
        }
        transfer.holdSendingAt.withLockedValue { $0 = hold }
        let sender = FileSender(
            transfer: transfer, transceiver: transceiver, configuration: configuration, logger: logger)
        transfer.task.withLockedValue {
            $0 = Task { [weak self] in
                await sender.run()
                _ = self?.state.withLockedValue { $0.outgoing.removeValue(forKey: transfer.id) }
            }
        }
        return transfer
    }

    /// The time now, by the clock tests may set.
    func now() -> Date { state.withLockedValue { $0.clock }() }

    // MARK: - Routing what arrives

    private func handle(_ event: TransceiverEvent) {
        let signal: (Peer, OutgoingFileTransfer.Signal)
        switch event {
        case .peerConnected(let peer): signal = (peer, .peerBack)
        case .peerDisconnected(let peer): signal = (peer, .peerLost)
        default: return
        }
        let transfers = state.withLockedValue { Array($0.outgoing.values) }
        for transfer in transfers where transfer.peer.id == signal.0.id { transfer.signal.yield(signal.1) }
    }

    private func received(_ ack: FileAck, from sender: Peer) {
        guard let id = UUID(uuidString: ack.id),
            let transfer = state.withLockedValue({ $0.outgoing[id] }), transfer.peer.id == sender.id
        else {
            logger.debug("file transfer: an ack for no transfer of ours", metadata: ["from": "\(sender.id)"])
            return
        }
        transfer.signal.yield(.ack(ack.offset))
    }

    private func received(_ cancel: FileCancel, from sender: Peer) {
        guard let id = UUID(uuidString: cancel.id) else { return }
        let (outgoing, incoming) = state.withLockedValue { ($0.outgoing[id], $0.incoming[id]) }
        let reason = "\(sender.name): \(cancel.reason)"
        if let outgoing, outgoing.peer.id == sender.id {
            outgoing.signal.yield(.cancelledByPeer(reason))
        } else if let incoming, incoming.sender.id == sender.id {
            Task { await self.stop(incoming, deleting: true, .failure(FileTransferError(.cancelledByPeer, reason))) }
        } else {
            logger.debug("file transfer: a cancel for no transfer of ours", metadata: ["from": "\(sender.id)"])
        }
    }
}

struct WeakFileTransfers {
    weak var value: FileTransfers?
}
