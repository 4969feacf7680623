import Chirp
import Crypto
import Foundation
import Logging

extension FileTransfers {
    /// Starts receiving files into `directory` (which must exist), and returns each transfer as it starts.
    ///
    /// Each offer of a file of at most ``FileTransferConfiguration/maximumFileSize`` is put to `accepting` (its
    /// sanitised name, size and sender): `true` takes the file, `false` declines it and the sender's transfer fails
    /// with ``FileTransferError/Code/declined``. Default: every offer is taken. The decision is asked once per
    /// transfer (not again when it resumes after a dropped connection); the sender waits for it up to its
    /// ``FileTransferConfiguration/offerTimeout`` (2 minutes by default).
    ///
    /// The name a sender gives is sanitised (path separators and control characters become `_`, leading dots are
    /// dropped), and a file that exists is never replaced: the new one is saved as `NAME (1).EXT`, `NAME (2).EXT`,
    /// ... A transfer offered again after a dropped connection (the same file: its SHA-256, size and name) resumes
    /// from what its partial file holds, and is not yielded again while this process still has it. Partial files
    /// untouched for longer than ``FileTransferConfiguration/partialFileRetention``, and the oldest beyond
    /// ``FileTransferConfiguration/maximumPartialBytes``, are deleted first.
    ///
    /// - Throws: ``FileTransferError/Code/fileError`` when `directory` is not a directory or the partial files'
    ///   directory cannot be created; what `Transceiver.respond` throws.
    public func receive(
        into directory: String,
        accepting decide: @escaping @Sendable (IncomingFileOffer) async -> Bool = { _ in true }
    ) throws -> AsyncStream<IncomingFileTransfer> {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
        else { throw FileTransferError(.fileError, "\(directory) is not a directory") }
        let partials =
            configuration.temporaryDirectory ?? (directory as NSString).appendingPathComponent(".chirp-partial")
        do {
            try FileManager.default.createDirectory(atPath: partials, withIntermediateDirectories: true)
        } catch {
            throw FileTransferError(.fileError, "cannot create \(partials): \(error.localizedDescription)")
        }
        let (stream, offers) = AsyncStream.makeStream(of: IncomingFileTransfer.self)
        let busy = state.withLockedValue { state in
            if state.receiving != nil { return true }
            state.receiving = Receiving(directory: directory, partials: partials, offers: offers, decide: decide)
            return false
        }
        if busy { throw FileTransferError(.fileError, "these FileTransfers already receive files") }
        let retention = PartialFileRetention(
            retention: configuration.partialFileRetention, maximumBytes: configuration.maximumPartialBytes)
        let deleted = retention.clean(directory: partials, now: now())
        if !deleted.isEmpty {
            logger.info("file transfer: deleted stale partial files", metadata: ["count": "\(deleted.count)"])
        }
        try transceiver.respond(to: FileOffer.self) { [weak self] offer, sender async -> FileOfferReply in
            guard let self else { return FileOfferReply(accepted: false, offset: 0, reason: "not receiving files") }
            return await self.offered(offer, by: sender)
        }
        try transceiver.respond(to: FileFinish.self) { [weak self] finish, sender async -> FileFinishReply in
            guard let self else { return FileFinishReply(ok: false, reason: "not receiving files") }
            return await self.finish(finish, from: sender)
        }
        return stream
    }

    private static func refusal(_ reason: String) -> FileOfferReply {
        FileOfferReply(accepted: false, offset: 0, reason: reason)
    }

    func offered(_ offer: FileOffer, by sender: Peer) async -> FileOfferReply {
        guard let receiving = state.withLockedValue({ $0.receiving }) else {
            return Self.refusal("not receiving files")
        }
        guard let id = UUID(uuidString: offer.id) else { return Self.refusal("the id is not a UUID") }
        guard offer.size >= 0, offer.size <= configuration.maximumFileSize else {
            return Self.refusal("\(offer.size) bytes is more than the \(configuration.maximumFileSize) accepted")
        }
        guard (1...FileTransferConfiguration.maximumChunkSize).contains(offer.chunkSize) else {
            return Self.refusal(
                "chunks of \(offer.chunkSize) bytes (1...\(FileTransferConfiguration.maximumChunkSize))")
        }
        let sha256 = offer.sha256.lowercased()
        guard FileDigest.isHex64(sha256) else { return Self.refusal("the SHA-256 is not 64 hexadecimal digits") }
        let name = ReceivedFileName.sanitised(offer.name)
        let partial = (receiving.partials as NSString).appendingPathComponent(
            FileDigest.partialName(sha256: sha256, size: offer.size, name: name))
        // An earlier attempt at the same file (this transfer, or the same file sent again): its writer stops first,
        // so that the offset below is where its last byte went.
        let earlier = state.withLockedValue { state in
            state.incoming[id] ?? state.incoming.values.first { $0.partialPath == partial }
        }
        if earlier?.id != id {
            guard await receiving.decide(IncomingFileOffer(name: name, size: offer.size, sender: sender)) else {
                logger.debug("file transfer: declined", metadata: ["id": "\(id)", "from": "\(sender.id)"])
                return FileOfferReply(accepted: false, offset: 0, reason: "declined", declined: true)
            }
        }
        if let earlier {
            guard earlier.sender.id == sender.id else { return Self.refusal("another peer is sending this file") }
            await stopWriter(earlier)
            if earlier.id != id {
                state.withLockedValue { _ = $0.incoming.removeValue(forKey: earlier.id) }
                earlier.end(.failure(FileTransferError(.cancelledByPeer, "\(sender.name) offered the file again")))
            }
        }
        let handle: FileHandle
        let offset: Int64
        do {
            let fileManager = FileManager.default
            var kept = (try? fileManager.attributesOfItem(atPath: partial)[.size] as? NSNumber)?.int64Value ?? 0
            if !fileManager.fileExists(atPath: partial) {
                guard fileManager.createFile(atPath: partial, contents: nil) else {
                    return Self.refusal("cannot create a partial file")
                }
            }
            if kept > offer.size { kept = 0 }
            guard let opened = FileHandle(forWritingAtPath: partial) else {
                return Self.refusal("cannot open a partial file")
            }
            try opened.truncate(atOffset: UInt64(kept))
            try opened.seek(toOffset: UInt64(kept))
            handle = opened
            offset = kept
        } catch {
            logger.warning("file transfer: cannot open a partial file", metadata: ["error": "\(error)"])
            return Self.refusal("cannot write a partial file")
        }
        let transfer =
            earlier?.id == id
            ? earlier
            : IncomingFileTransfer(
                id: id, name: name, size: offer.size, sha256: sha256, sender: sender, partialPath: partial,
                directory: receiving.directory)
        guard let transfer else { return Self.refusal("internal") }
        startWriter(for: transfer, handle: handle, from: offset, sender: sender)
        if earlier?.id != id {
            transfer.cancelHandler.withLockedValue {
                $0 = { [weak self] keeping in
                    guard let self else { return }
                    let reason =
                        keeping
                        ? "the receiver stopped and kept the partial file: the same file sent again resumes from it"
                        : "cancelled by the receiver"
                    Task {
                        try? await self.transceiver.send(
                            FileCancel(id: transfer.id.uuidString, reason: reason), to: transfer.sender)
                        await self.stop(
                            transfer, deleting: !keeping,
                            .failure(
                                FileTransferError(
                                    .cancelled,
                                    keeping
                                        ? "stopped: the partial file is kept for a resumption"
                                        : "the transfer was cancelled")))
                    }
                }
            }
            state.withLockedValue { $0.incoming[id] = transfer }
            receiving.offers.yield(transfer)
        }
        transfer.report(offset)
        return FileOfferReply(accepted: true, offset: offset, reason: nil)
    }

    private func startWriter(for transfer: IncomingFileTransfer, handle: FileHandle, from offset: Int64, sender: Peer) {
        let (chunks, writer) = AsyncStream.makeStream(of: (Int64, Data).self)
        // The SHA-256 of the bytes before `offset`: the one this transfer computed as it wrote them (a resumption in
        // this process), or read back from the partial file once (a resumption after a restart, another transfer of
        // the same file). From there each byte is hashed as it is written, in order, and never read again.
        let carried = transfer.state.withLockedValue { $0.hashed == offset ? $0.hasher : nil }
        let task = Task { [weak self] in
            var hasher = carried?.hasher ?? SHA256()
            var hashed: Int64 = carried == nil ? 0 : offset
            defer {
                transfer.state.withLockedValue { [hasher, hashed] state in
                    state.hasher = RunningSHA256(hasher: hasher)
                    state.hashed = hashed
                }
            }
            if carried == nil {
                do {
                    try FileDigest.update(&hasher, withFileAt: transfer.partialPath, count: offset)
                    hashed = offset
                    transfer.state.withLockedValue { $0.readBack += offset }
                } catch {
                    self?.fail(transfer, "cannot read the partial file back: \(error)")
                    return
                }
            }
            // Chunks that arrived ahead of one sent before them: a chunk whose frame is over 128 KiB travels in parts
            // and is delivered once whole, so a shorter one sent after it (the file's last) may come first
            // (Docs/Protocol.md section 3). Held until the bytes before them are written; they count in `buffered`
            // meanwhile, so the window's bound holds for them too.
            var early: [Int64: Data] = [:]
            for await (offset, bytes) in chunks {
                guard let self else { return }
                let expected = transfer.state.withLockedValue { $0.written }
                guard offset >= expected, offset + Int64(bytes.count) <= transfer.size, early[offset] == nil else {
                    self.fail(transfer, "a chunk at byte \(offset) of \(bytes.count) bytes; expected byte \(expected)")
                    return
                }
                early[offset] = bytes
                var next = expected
                while let ready = early.removeValue(forKey: next), !ready.isEmpty {
                    do {
                        try handle.write(contentsOf: ready)
                    } catch {
                        self.fail(transfer, "cannot write the file: \(error.localizedDescription)")
                        return
                    }
                    hasher.update(data: ready)
                    next += Int64(ready.count)
                    hashed = next
                }
                guard next > expected else { continue }
                let written = transfer.state.withLockedValue { state in
                    state.buffered -= Int(next - state.written)
                    state.written = next
                    return next
                }
                transfer.report(written)
                if let hold = self.state.withLockedValue({ $0.holdAcksAfter }), written >= hold { continue }
                try? await self.transceiver.send(FileAck(id: transfer.id.uuidString, offset: written), to: sender)
            }
        }
        transfer.state.withLockedValue { state in
            state.sender = sender
            state.written = offset
            state.buffered = 0
            state.writer = writer
            state.writerTask = task
            state.handle = handle
        }
    }

    /// Ends `transfer` for a reason the sender must hear: it is told, the partial file is deleted.
    private func fail(_ transfer: IncomingFileTransfer, _ reason: String) {
        // Nothing more reaches the writer (its task ends on its own, or already has).
        transfer.state.withLockedValue { state in
            state.writer?.finish()
            state.writer = nil
        }
        logger.warning("file transfer failed", metadata: ["id": "\(transfer.id)", "reason": "\(reason)"])
        try? transceiver.send(FileCancel(id: transfer.id.uuidString, reason: reason), to: transfer.sender)
        Task { await self.stop(transfer, deleting: true, .failure(FileTransferError(.cancelledByPeer, reason))) }
    }

    /// A chunk, on the connection's event loop: handed to its transfer's writer, within the memory bound.
    func receivedChunk(_ payload: Data, from sender: Peer) {
        guard let (id, offset, bytes) = FileChunk.decode(payload) else {
            logger.debug("file transfer: a chunk shorter than its header", metadata: ["from": "\(sender.id)"])
            return
        }
        guard let transfer = state.withLockedValue({ $0.incoming[id] }), transfer.sender.id == sender.id else {
            logger.debug("file transfer: a chunk of no transfer of ours", metadata: ["from": "\(sender.id)"])
            return
        }
        // A sender that keeps its window holds at most window × chunk bytes here; one that does not is stopped
        // before it holds more than this.
        let limit = max(configuration.window, 1) * FileTransferConfiguration.maximumChunkSize
        // No writer: the transfer is ending, or between two offers; what was in flight is dropped.
        let verdict = transfer.state.withLockedValue { state -> Bool? in
            guard let writer = state.writer, !state.ending else { return nil }
            guard state.buffered + bytes.count <= limit else { return false }
            state.buffered += bytes.count
            state.peakBuffered = max(state.peakBuffered, state.buffered)
            writer.yield((offset, bytes))
            return true
        }
        if verdict == false { fail(transfer, "more than \(limit) bytes sent ahead of the acknowledgements") }
    }

    /// Tests: acknowledges what was held back by `holdAcksAfter`, and holds nothing from now on.
    func releaseAcks() async {
        let transfers = state.withLockedValue { state in
            state.holdAcksAfter = nil
            return Array(state.incoming.values)
        }
        for transfer in transfers {
            let (written, sender) = transfer.state.withLockedValue { ($0.written, $0.sender) }
            try? await transceiver.send(FileAck(id: transfer.id.uuidString, offset: written), to: sender)
        }
    }

    /// Stops `transfer`'s writer and closes its file, keeping the partial file (a resume, a finish).
    func stopWriter(_ transfer: IncomingFileTransfer) async {
        let (writer, task, handle) = transfer.state.withLockedValue { state in
            defer {
                state.writer = nil
                state.writerTask = nil
                state.handle = nil
            }
            return (state.writer, state.writerTask, state.handle)
        }
        writer?.finish()
        await task?.value
        try? handle?.close()
    }

    /// Ends `transfer` with `result`, deleting its partial file when `deleting`.
    func stop(_ transfer: IncomingFileTransfer, deleting: Bool, _ result: Result<String, FileTransferError>) async {
        // The first reason to end is the one reported (a cancel, and a chunk that arrives as it is carried out).
        let first = transfer.state.withLockedValue { state in
            defer { state.ending = true }
            return !state.ending
        }
        guard first else { return }
        await stopWriter(transfer)
        if deleting { unlink(transfer.partialPath) }
        state.withLockedValue { _ = $0.incoming.removeValue(forKey: transfer.id) }
        transfer.end(result)
    }

    func finish(_ finish: FileFinish, from sender: Peer) async -> FileFinishReply {
        guard let id = UUID(uuidString: finish.id),
            let transfer = state.withLockedValue({ $0.incoming[id] }), transfer.sender.id == sender.id
        else { return FileFinishReply(ok: false, reason: "no such transfer") }
        let written = transfer.state.withLockedValue { $0.written }
        guard written == transfer.size else {
            return FileFinishReply(ok: false, reason: "only \(written) of \(transfer.size) bytes arrived")
        }
        await stopWriter(transfer)
        // Every byte was hashed as it was written (the writer has stopped: its hasher is in the state).
        let (hasher, hashed) = transfer.state.withLockedValue { ($0.hasher, $0.hashed) }
        guard hashed == transfer.size else {
            let reason = "only \(hashed) of \(transfer.size) bytes were hashed"
            await stop(transfer, deleting: true, .failure(FileTransferError(.fileError, reason)))
            return FileFinishReply(ok: false, reason: reason)
        }
        guard FileDigest.hex(hasher.hasher.finalize()) == transfer.sha256 else {
            let reason = "the file's SHA-256 is not the sender's: the partial file was deleted"
            await stop(transfer, deleting: true, .failure(FileTransferError(.checksumMismatch, reason)))
            return FileFinishReply(ok: false, reason: reason)
        }
        do {
            let saved = try ReceivedFileName.moveIntoPlace(
                transfer.partialPath, directory: transfer.directory, name: transfer.name)
            await stop(
                transfer, deleting: false, .success((transfer.directory as NSString).appendingPathComponent(saved)))
            return FileFinishReply(ok: true, name: saved, reason: nil)
        } catch let error as FileTransferError {
            await stop(transfer, deleting: true, .failure(error))
            return FileFinishReply(ok: false, reason: error.reason)
        } catch {
            let failure = FileTransferError(.fileError, "\(error)")
            await stop(transfer, deleting: true, .failure(failure))
            return FileFinishReply(ok: false, reason: failure.reason)
        }
    }
}
