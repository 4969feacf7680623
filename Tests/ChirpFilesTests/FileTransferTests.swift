import Chirp
import ChirpTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import ChirpFiles

/// Files between two transceivers in this process, over the real avahi-daemon and TCP on loopback.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct FileTransferTests {
    @Test("a file of 8 MiB arrives byte-identical, and progress reaches 100% on both sides")
    func arrivesIdentical() async throws {
        let pair = try await FilePair.start()
        let source = try makeFile(size: 8 << 20 + 12345)
        let outgoing = try pair.aliceFiles.send(file: source, to: pair.bobPeer)
        let sendProgress = lastProgress(outgoing.progress)
        let incoming = try await pair.nextIncoming()
        let receiveProgress = lastProgress(incoming.progress)
        #expect(incoming.name == "data.bin")
        #expect(incoming.size == 8 << 20 + 12345)
        let savedAs = try await finished { try await outgoing.result() }
        let path = try await finished { try await incoming.result() }
        #expect(savedAs == "data.bin")
        #expect(path == pair.directory + "/data.bin")
        #expect(try sha256(path) == sha256(source))
        #expect(await sendProgress.value?.fractionCompleted == 1)
        #expect(await receiveProgress.value?.fractionCompleted == 1)
        #expect(pair.partials.isEmpty)
        // Hashed as it was written: nothing was read back.
        #expect(incoming.state.withLockedValue { ($0.readBack, $0.hashed) } == (0, Int64(8 << 20 + 12345)))
        await pair.stop()
    }

    @Test("the receiving app declines an offer: the sender fails with declined, nothing is written; it takes the next")
    func receiverDeclines() async throws {
        let asked = NIOLockedValueBox<[IncomingFileOffer]>([])
        let pair = try await FilePair.start { offer in
            asked.withLockedValue { $0.append(offer) }
            return offer.name != "secret.bin"
        }
        let source = try makeFile(size: 300_000)
        let declined = try pair.aliceFiles.send(file: source, named: "secret.bin", to: pair.bobPeer)
        let error = await transferError { try await declined.result() }
        #expect(error?.code == .declined)
        #expect(error?.reason == "bob declined secret.bin")
        #expect(pair.partials.isEmpty)
        // The positive control: the next offer is taken, and is the first transfer bob's app sees.
        let taken = try pair.aliceFiles.send(file: source, named: "public.bin", to: pair.bobPeer)
        #expect(try await pair.nextIncoming().name == "public.bin")
        #expect(try await finished { try await taken.result() } == "public.bin")
        let offers = asked.withLockedValue { $0 }
        #expect(offers.map(\.name) == ["secret.bin", "public.bin"])
        #expect(offers.allSatisfy { $0.size == 300_000 && $0.sender.name == "alice" })
        await pair.stop()
    }

    @Test("an older sender (no declined field) reads a declined offer as a refusal with its reason")
    func declineIsACompatibleAddition() throws {
        let reply = FileOfferReply(accepted: false, offset: 0, reason: "declined", declined: true)
        let json = try JSONEncoder().encode(reply)
        struct OlderReply: Decodable {
            var accepted: Bool
            var offset: Int64
            var reason: String?
        }
        let older = try JSONDecoder().decode(OlderReply.self, from: json)
        #expect(!older.accepted && older.reason == "declined")
        // And an older receiver's reply, without the field, is a refusal here.
        let fromOlder = try JSONDecoder().decode(
            FileOfferReply.self, from: Data(#"{"accepted":false,"offset":0,"reason":"too large"}"#.utf8))
        #expect(fromOlder.declined == nil)
    }

    @Test("the receiver stops keeping its partial file: the sender is told, and the same file sent again resumes")
    func receiverStopsKeepingThePartial() async throws {
        let pair = try await FilePair.start(holdAcksAfter: 1 << 20)
        let source = try makeFile(size: 4 << 20)
        let first = try pair.aliceFiles.send(file: source, to: pair.bobPeer)
        let stopped = try await pair.nextIncoming()
        try await written(1 << 20, by: stopped)
        stopped.cancel(keepingPartialFile: true)
        #expect(await transferError { try await stopped.result() }?.code == .cancelled)
        let error = await transferError { try await first.result() }
        #expect(error?.code == .cancelledByPeer)
        #expect(error?.reason.contains("kept the partial file") == true, "\(String(describing: error))")
        #expect(pair.partials.count == 1)
        // Sent again (a new transfer of the same file): it resumes from the partial file, read back once to hash it.
        await pair.bobFiles.releaseAcks()
        let again = try pair.aliceFiles.send(file: source, to: pair.bobPeer)
        let resumed = try await pair.nextIncoming()
        #expect(try await finished { try await again.result() } == "data.bin")
        let offset = again.offeredOffsets.withLockedValue { $0.first } ?? 0
        #expect(offset >= 1 << 20, "resumed at \(offset)")
        #expect(resumed.state.withLockedValue { $0.readBack } == offset)
        #expect(try sha256(pair.directory + "/data.bin") == sha256(source))
        #expect(pair.partials.isEmpty)
        await pair.stop()
    }

    @Test("an app that takes files still hears of the messages none of its handlers takes")
    func otherMessagesStayTheApps() async throws {
        let pair = try await FilePair.start()
        let events = pair.bob.makeEvents()
        let stray = RawMessage(typeName: "app.unknown", payload: Data("{}".utf8), isBinary: false)
        try await pair.alice.send(stray, to: pair.bobPeer)
        let typeName = try await withTimeout(.seconds(30), "bob's unhandledMessage event") {
            for await event in events {
                if case .unhandledMessage(let typeName, _) = event { return typeName }
            }
            throw CancellationError()
        }
        #expect(typeName == "app.unknown")
        await pair.stop()
    }

    @Test("a file that exists is not replaced: the new one gets a free name")
    func existingFileIsKept() async throws {
        let pair = try await FilePair.start()
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: pair.directory + "/data.bin"))
        let source = try makeFile(size: 300_000)
        let outgoing = try pair.aliceFiles.send(file: source, to: pair.bobPeer)
        #expect(try await finished { try await outgoing.result() } == "data (1).bin")
        #expect(try String(contentsOfFile: pair.directory + "/data.bin", encoding: .utf8) == "keep me")
        #expect(try sha256(pair.directory + "/data (1).bin") == sha256(source))
        await pair.stop()
    }

    @Test("hostile names stay inside the directory, without control characters or a leading dot")
    func hostileNames() async throws {
        let pair = try await FilePair.start()
        let source = try makeFile(size: 1000)
        let names = [
            "../x": "_x", "/etc/passwd": "_etc_passwd", "a\u{1B}[2Jb\nc": "a_[2Jb_c", "..": "file",
            "..\\..\\win.ini": "_.._win.ini"
        ]
        for (given, expected) in names {
            let outgoing = try pair.aliceFiles.send(file: source, named: given, to: pair.bobPeer)
            #expect(try await finished { try await outgoing.result() } == expected, "\(given.debugDescription)")
        }
        let parent = (pair.directory as NSString).deletingLastPathComponent
        #expect(!FileManager.default.fileExists(atPath: parent + "/x"))
        let inside = Set(try FileManager.default.contentsOfDirectory(atPath: pair.directory))
        #expect(inside == Set(names.values).union([".chirp-partial"]))
        await pair.stop()
    }

    @Test("the sender cancels: the receiver stops and deletes its partial file")
    func senderCancels() async throws {
        let pair = try await FilePair.start(holdAcksAfter: 1 << 20)
        let outgoing = try pair.aliceFiles.send(file: try makeFile(size: 8 << 20), to: pair.bobPeer)
        let incoming = try await pair.nextIncoming()
        try await written(1 << 20, by: incoming)
        #expect(pair.partials.count == 1)  // the positive control: a partial file to delete
        outgoing.cancel()
        #expect(await transferError { try await outgoing.result() }?.code == .cancelled)
        #expect(await transferError { try await incoming.result() }?.code == .cancelledByPeer)
        #expect(pair.partials.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: pair.directory) == [".chirp-partial"])
        await pair.stop()
    }

    @Test("the receiver cancels: the sender stops, and the partial file is deleted")
    func receiverCancels() async throws {
        let pair = try await FilePair.start(holdAcksAfter: 1 << 20)
        let outgoing = try pair.aliceFiles.send(file: try makeFile(size: 8 << 20), to: pair.bobPeer)
        let incoming = try await pair.nextIncoming()
        try await written(1 << 20, by: incoming)
        #expect(pair.partials.count == 1)
        incoming.cancel()
        #expect(await transferError { try await incoming.result() }?.code == .cancelled)
        #expect(await transferError { try await outgoing.result() }?.code == .cancelledByPeer)
        #expect(pair.partials.isEmpty)
        await pair.stop()
    }

    @Test("bytes that change on the way fail the SHA-256 check on both sides, and the partial file is deleted")
    func corruptionFails() async throws {
        let pair = try await FilePair.start(holdAcksAfter: 1 << 20)
        let source = try makeFile(size: 4 << 20)
        let outgoing = try pair.aliceFiles.send(file: source, to: pair.bobPeer)
        let incoming = try await pair.nextIncoming()
        try await written(1 << 20, by: incoming)
        // The sender hashed the file before sending; a byte it has not sent yet changes (as a corrupted chunk).
        let handle = try #require(FileHandle(forUpdatingAtPath: source))
        try handle.seek(toOffset: 3 << 20)
        let original = try #require(try handle.read(upToCount: 1))
        try handle.seek(toOffset: 3 << 20)
        try handle.write(contentsOf: Data([original[original.startIndex] ^ 0xFF]))
        try handle.close()
        await pair.bobFiles.releaseAcks()
        #expect(await transferError { try await outgoing.result() }?.code == .checksumMismatch)
        #expect(await transferError { try await incoming.result() }?.code == .checksumMismatch)
        #expect(pair.partials.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: pair.directory) == [".chirp-partial"])
        await pair.stop()
    }

    @Test("a dropped connection: the sender offers again and the receiver resumes from its partial file")
    func resumesAfterADrop() async throws {
        let type = uniqueServiceType()
        let bobID = UUID().uuidString
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let alice = makeTransceiver("alice", type: type)
        let aliceFiles = try FileTransfers(transceiver: alice)
        try await alice.start()
        let size = 16 << 20
        let source = try makeFile(size: size)
        // The first bob writes 2 MiB and stops acknowledging, then goes away mid-transfer.
        let outgoing: OutgoingFileTransfer
        do {
            let bob = makeTransceiver("bob", type: type, id: bobID)
            let bobFiles = try FileTransfers(transceiver: bob)
            bobFiles.state.withLockedValue { $0.holdAcksAfter = 2 << 20 }
            let offers = try bobFiles.receive(into: directory)
            try await bob.start()
            let bobPeer = try await connectedPeer(alice, id: bobID)
            outgoing = try aliceFiles.send(file: source, to: bobPeer)
            let incoming = try await withTimeout(.seconds(30), "an offer") {
                for await transfer in offers { return transfer }
                throw CancellationError()
            }
            try await written(2 << 20, by: incoming)
            await bob.shutdown()
            // What a process that exits does: its writer ends (the bytes it had are on disk, in the partial file).
            await bobFiles.stopWriter(incoming)
        }
        // The same bob (his id), restarted: the sender offers again, and he asks for the bytes after his own.
        let bob = makeTransceiver("bob", type: type, id: bobID)
        let bobFiles = try FileTransfers(transceiver: bob)
        let offers = try bobFiles.receive(into: directory)
        try await bob.start()
        let incoming = try await withTimeout(.seconds(30), "the second offer") {
            for await transfer in offers { return transfer }
            throw CancellationError()
        }
        #expect(try await finished { try await outgoing.result() } == "data.bin")
        #expect(try await finished { try await incoming.result() } == directory + "/data.bin")
        let offsets = outgoing.offeredOffsets.withLockedValue { $0 }
        #expect(offsets.count == 2)
        #expect(offsets.first == 0)
        #expect((Int64(2 << 20)..<Int64(size)).contains(offsets.last ?? 0), "resumed at \(offsets)")
        // The restarted bob read back what his partial file held, once, to hash it; the rest as it arrived.
        #expect(incoming.state.withLockedValue { $0.readBack } == offsets.last)
        #expect(try sha256(directory + "/data.bin") == sha256(source))
        #expect(outgoing.currentProgress.isComplete)
        await alice.shutdown()
        await bob.shutdown()
    }

    /// A smoke test: on loopback it passes even when the sender ignores its window (the connection drains 64 MiB in
    /// well under the bound); what the window holds is checked by `memoryIsBounded`, and a request's wait behind a
    /// file on a slow link belongs to the netns harness.
    @Test("a small request goes through while a large file is on its way")
    func smallRequestsPassBetweenChunks() async throws {
        let pair = try await FilePair.start()
        try pair.bob.respond(to: Question.self) { question, _ in question.text.uppercased() }
        let source = try makeFile(size: 64 << 20)
        let outgoing = try pair.aliceFiles.send(file: source, to: pair.bobPeer)
        let incoming = try await pair.nextIncoming()
        try await written(1 << 20, by: incoming)
        let started = ContinuousClock.now
        let answer = try await pair.alice.request(Question(text: "ping"), to: pair.bobPeer, as: String.self)
        let elapsed = ContinuousClock.now - started
        let sofar = incoming.currentProgress
        #expect(answer == "PING")
        // The positive control: the file was still on its way when the answer came.
        #expect(!sofar.isComplete, "the transfer ended before the request: \(sofar)")
        #expect(elapsed < .seconds(2), "the request took \(elapsed) behind the file")
        _ = try await finished { try await outgoing.result() }
        await pair.stop()
    }

    @Test("a large file: what the transfer holds stays within its window, and resident memory grows by little")
    func memoryIsBounded() async throws {
        let megabytes = Int(ProcessInfo.processInfo.environment["CHIRP_FILES_MIB"] ?? "") ?? 256
        let size = Int64(megabytes) << 20
        let pair = try await FilePair.start()
        // A sparse file: zeros, read from the page cache, nothing on disk.
        let source = TestSupport.temporaryDirectory() + "/large.bin"
        _ = FileManager.default.createFile(atPath: source, contents: nil)
        let handle = try #require(FileHandle(forWritingAtPath: source))
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()
        defer { try? FileManager.default.removeItem(atPath: source) }
        let before = residentBytes()
        let started = ContinuousClock.now
        let outgoing = try pair.aliceFiles.send(file: source, to: pair.bobPeer)
        let incoming = try await pair.nextIncoming()
        // Resident memory, each time the receiver reports progress.
        let peak = Task {
            var peak = residentBytes()
            for await _ in incoming.progress { peak = max(peak, residentBytes()) }
            return peak
        }
        _ = try await finished { try await outgoing.result() }
        let path = try await finished { try await incoming.result() }
        let elapsed = ContinuousClock.now - started
        let growth = await peak.value - before
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let inFlight = outgoing.peakInFlight.withLockedValue { $0 }
        print(
            "files: \(megabytes) MiB in \(String(format: "%.2f", seconds)) s (hashing both ends included),"
                + " \(String(format: "%.0f", Double(megabytes) / seconds)) MiB/s;"
                + " resident growth \(growth / 1024) KiB; in flight at most \(inFlight / 1024) KiB;"
                + " receiver buffered at most \(incoming.peakBuffered / 1024) KiB")
        let window = Int64(FileTransferConfiguration().window * FileTransferConfiguration().chunkSize)
        #expect(inFlight > 0 && inFlight <= window)
        #expect(incoming.peakBuffered <= Int(window))
        #expect(growth < 24 << 20, "resident memory grew by \(growth / 1024) KiB")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.size] as? NSNumber)?.int64Value == size)
        try? FileManager.default.removeItem(atPath: path)
        await pair.stop()
    }
}

@Suite(.timeLimit(.minutes(1)))
struct FilePartsTests {
    @Test("the send window: never more than its limit in flight, old and excessive acknowledgements clamped")
    func sendWindow() {
        var window = SendWindow(size: 1000, limit: 300, from: 100)
        var sent: [Int64] = []
        while let (offset, count) = window.nextChunk(chunkSize: 128) {
            sent.append(offset)
            window.didSend(count)
        }
        #expect(sent == [100, 228, 356])
        #expect(window.inFlight == 300)
        #expect(window.nextChunk(chunkSize: 128) == nil)
        let old = window.acknowledge(50)  // from before the resumption
        #expect(!old)
        let moved = window.acknowledge(228)
        #expect(moved)
        #expect(window.nextChunk(chunkSize: 128)?.offset == 400)
        let past = window.acknowledge(5000)  // past what was sent: counts up to it
        #expect(past)
        #expect(window.acknowledged == 400)
        while let (_, count) = window.nextChunk(chunkSize: 128) { window.didSend(count) }
        #expect(window.sent == 700)  // the window again: 300 past the acknowledgement
        let more = window.acknowledge(700)
        #expect(more)
        while let (_, count) = window.nextChunk(chunkSize: 128) { window.didSend(count) }
        #expect(window.sent == 1000 && !window.isComplete)
        let all = window.acknowledge(1000)
        #expect(all)
        #expect(window.isComplete)
        #expect(window.nextChunk(chunkSize: 128) == nil)
    }

    @Test("partial files: those untouched beyond the retention go, then the oldest beyond the size bound")
    func retention() {
        let now = Date(timeIntervalSince1970: 1_000_000_000)
        let day: TimeInterval = 86_400
        let retention = PartialFileRetention(retention: .seconds(7 * 86_400), maximumBytes: 100)
        let files = [
            PartialFileRetention.File(name: "old.part", size: 1, modified: now - 8 * day),
            PartialFileRetention.File(name: "week.part", size: 10, modified: now - 7 * day + 1),
            PartialFileRetention.File(name: "b.part", size: 60, modified: now - 2 * day),
            PartialFileRetention.File(name: "a.part", size: 40, modified: now - day)
        ]
        // 110 bytes within the week: the oldest of them (week.part) goes, then 100 are left.
        #expect(retention.expired(files, now: now) == ["old.part", "week.part"])
        #expect(retention.expired(Array(files.suffix(2)), now: now).isEmpty)
        let tight = PartialFileRetention(retention: .seconds(7 * 86_400), maximumBytes: 50)
        #expect(tight.expired(files, now: now) == ["old.part", "week.part", "b.part"])
        #expect(retention.expired(files, now: now + 30 * day).count == 4)
    }

    @Test("receiving starts by deleting stale partial files (by their dates, on the injected clock), not the others")
    func stalepartialsAreDeleted() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let partials = directory + "/.chirp-partial"
        try FileManager.default.createDirectory(atPath: partials, withIntermediateDirectories: true)
        let now = Date(timeIntervalSince1970: 2_000_000_000)
        let ages: [String: TimeInterval] = ["stale.part": 8 * 86_400, "fresh.part": 3600, "notes.txt": 30 * 86_400]
        for (name, age) in ages {
            let path = partials + "/" + name
            #expect(FileManager.default.createFile(atPath: path, contents: Data(count: 10)))
            try FileManager.default.setAttributes([.modificationDate: now - age], ofItemAtPath: path)
        }
        var configuration = Configuration(serviceType: uniqueServiceType())
        configuration.interface = .loopback
        let files = try FileTransfers(transceiver: Transceiver(configuration: configuration))
        files.state.withLockedValue { $0.clock = { now } }
        _ = try files.receive(into: directory)
        // Only partial files are candidates; the fresh one is kept (the positive control).
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: partials)) == ["fresh.part", "notes.txt"])
    }

    @Test func sanitised() {
        #expect(ReceivedFileName.sanitised("report.pdf") == "report.pdf")
        #expect(ReceivedFileName.sanitised("../../etc/passwd") == "_.._etc_passwd")
        #expect(ReceivedFileName.sanitised("") == "file")
        #expect(ReceivedFileName.sanitised(".hidden") == "hidden")
        #expect(ReceivedFileName.sanitised("a\u{202E}b") == "a_b")
        #expect(ReceivedFileName.sanitised(String(repeating: "é", count: 300)).utf8.count <= 200)
    }

    @Test func candidates() {
        #expect(Array(ReceivedFileName.candidates(for: "a.tar.gz").prefix(2)) == ["a.tar.gz", "a.tar (1).gz"])
        #expect(Array(ReceivedFileName.candidates(for: "README").prefix(2)) == ["README", "README (1)"])
    }

    @Test func chunkHeader() throws {
        let id = UUID()
        let encoded = FileChunk.encode(id: id, offset: 0x0102_0304_0506, bytes: Data([9, 8, 7]))
        let decoded = try #require(FileChunk.decode(encoded))
        #expect(decoded.id == id)
        #expect(decoded.offset == 0x0102_0304_0506)
        #expect(Array(decoded.bytes) == [9, 8, 7])
        #expect(FileChunk.decode(Data(count: 23)) == nil)
    }
}

struct Question: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "test.files.question"
    var text: String
}
