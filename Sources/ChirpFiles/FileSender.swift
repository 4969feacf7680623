import Chirp
import Foundation
import Logging

/// What an ``OutgoingFileTransfer`` does: hash, offer, send chunks within the window of acknowledgements, and after
/// a dropped connection wait for the peer and offer again from where the receiver is.
struct FileSender {
    let transfer: OutgoingFileTransfer
    let transceiver: Transceiver
    let configuration: FileTransferConfiguration
    let logger: Logger

    private enum Stop: Error {
        case connectionLost
    }

    func run() async {
        do {
            let name = try await send()
            transfer.end(.success(name))
        } catch let error as FileTransferError {
            transfer.end(.failure(error))
        } catch {
            if error is CancellationError || Task.isCancelled {
                tellPeerCancelled()
                transfer.end(.failure(FileTransferError(.cancelled, "the transfer was cancelled")))
            } else {
                transfer.end(.failure(FileTransferError(.fileError, "\(error)")))
            }
        }
    }

    /// Best effort, queued at once (the task is cancelled: an `await` would throw): a receiver that does not hear it
    /// keeps a partial file the same file can resume from.
    private func tellPeerCancelled() {
        try? transceiver.send(
            FileCancel(id: transfer.id.uuidString, reason: "cancelled by the sender"), to: transfer.peer)
    }

    private func send() async throws -> String {
        let sha256 = try FileDigest.sha256(ofFileAt: transfer.path)
        try Task.checkCancellation()
        let offer = FileOffer(
            id: transfer.id.uuidString, name: transfer.name, size: transfer.size, sha256: sha256,
            chunkSize: min(max(configuration.chunkSize, 1), FileTransferConfiguration.maximumChunkSize))
        var signals = transfer.signals.makeAsyncIterator()
        var deadlineGeneration = 0
        while true {
            try Task.checkCancellation()
            if !isConnected {
                deadlineGeneration += 1
                try await waitForPeer(&signals, generation: deadlineGeneration)
            }
            do {
                let reply = try await transceiver.request(
                    offer, to: transfer.peer, as: FileOfferReply.self, timeout: configuration.offerTimeout)
                if !reply.accepted && reply.declined == true {
                    throw FileTransferError(.declined, "\(transfer.peer.name) declined \(transfer.name)")
                }
                guard reply.accepted else {
                    throw FileTransferError(.refused, "\(transfer.peer.name) refused the file: \(reply.reason ?? "")")
                }
                guard (0...transfer.size).contains(reply.offset) else {
                    throw FileTransferError(.refused, "\(transfer.peer.name) asked for offset \(reply.offset)")
                }
                transfer.offeredOffsets.withLockedValue { $0.append(reply.offset) }
                try await pump(from: reply.offset, chunkSize: offer.chunkSize, signals: &signals)
                let finish = try await transceiver.request(
                    FileFinish(id: offer.id), to: transfer.peer, as: FileFinishReply.self,
                    timeout: configuration.finishTimeout)
                guard finish.ok else {
                    let reason = finish.reason ?? "the receiver could not keep the file"
                    let code: FileTransferError.Code = reason.contains("SHA-256") ? .checksumMismatch : .fileError
                    throw FileTransferError(code, "\(transfer.peer.name): \(reason)")
                }
                return finish.name ?? transfer.name
            } catch let error as ChirpError where Self.isConnectionLoss(error) {
                logger.debug("file transfer: connection lost, waiting to resume", metadata: ["id": "\(offer.id)"])
                continue
            } catch Stop.connectionLost {
                continue
            } catch let error as ChirpError where error.code == .noResponder {
                throw FileTransferError(.refused, "\(transfer.peer.name) does not receive files")
            }
        }
    }

    private var isConnected: Bool { transceiver.connectedPeers.contains { $0.id == transfer.peer.id } }

    private static func isConnectionLoss(_ error: ChirpError) -> Bool {
        let codes: [ChirpError.Code] = [.peerDisconnected, .peerNotConnected, .requestTimedOut]
        return codes.contains(error.code)
    }

    /// Waits for the peer to connect again, within the resume timeout.
    private func waitForPeer(
        _ signals: inout AsyncStream<OutgoingFileTransfer.Signal>.Iterator, generation: Int
    ) async throws {
        let timeout = configuration.resumeTimeout
        let signal = transfer.signal
        let deadline = Task {
            try await Task.sleep(for: timeout)
            signal.yield(.resumeDeadline(generation))
        }
        defer { deadline.cancel() }
        while !isConnected {
            guard let next = await signals.next() else { throw CancellationError() }
            try Task.checkCancellation()
            switch next {
            case .peerBack: continue
            case .cancelledByPeer(let reason): throw FileTransferError(.cancelledByPeer, reason)
            case .resumeDeadline(let which) where which == generation:
                throw FileTransferError(
                    .peerGone, "\(transfer.peer.name) did not come back within \(timeout) after the connection dropped")
            case .ack, .peerLost, .resumeDeadline: continue
            }
        }
    }

    /// Sends the file from `offset`, at most `window` chunks ahead of the receiver's acknowledgements, until every
    /// byte is acknowledged.
    private func pump(
        from offset: Int64, chunkSize: Int, signals: inout AsyncStream<OutgoingFileTransfer.Signal>.Iterator
    ) async throws {
        guard let handle = FileHandle(forReadingAtPath: transfer.path) else {
            throw FileTransferError(.fileError, "cannot open \(transfer.path)")
        }
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        var window = SendWindow(
            size: transfer.size, limit: Int64(max(configuration.window, 1) * chunkSize), from: offset)
        transfer.report(offset)
        while !window.isComplete {
            while let (chunkOffset, count) = window.nextChunk(chunkSize: chunkSize) {
                try Task.checkCancellation()
                if let hold = transfer.holdSendingAt.withLockedValue({ $0 }), chunkOffset >= hold { break }
                let bytes = try handle.read(upToCount: count) ?? Data()
                guard bytes.count == count else {
                    throw FileTransferError(.fileError, "\(transfer.path) changed while it was sent")
                }
                let chunk = RawMessage(
                    typeName: FileChunk.typeName,
                    payload: FileChunk.encode(id: transfer.id, offset: chunkOffset, bytes: bytes), isBinary: true)
                try await transceiver.send(chunk, to: transfer.peer)
                window.didSend(count)
                let inFlight = window.inFlight
                transfer.peakInFlight.withLockedValue { $0 = max($0, inFlight) }
            }
            guard let next = await signals.next() else { throw CancellationError() }
            try Task.checkCancellation()
            switch next {
            case .ack(let value):
                if window.acknowledge(value) { transfer.report(window.acknowledged) }
            case .cancelledByPeer(let reason): throw FileTransferError(.cancelledByPeer, reason)
            case .peerLost: throw Stop.connectionLost
            case .peerBack, .resumeDeadline: continue
            }
        }
    }
}
