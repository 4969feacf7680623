import Chirp
import ChirpTestSupport
import Foundation
import Testing

@testable import ChirpFiles

extension ChirpCLITests {
    @Suite(.timeLimit(.minutes(3))) struct Files {
        /// A file of `size` bytes (a repeated pattern) in a directory of its own.
        func makeFile(named name: String = "notes.bin", size: Int) throws -> String {
            let path = TestSupport.temporaryDirectory() + "/" + name
            let pattern = Data((0..<251).map { UInt8($0) })
            var data = Data(capacity: size)
            while data.count < size { data.append(pattern.prefix(size - data.count)) }
            try data.write(to: URL(fileURLWithPath: path))
            return path
        }

        @Test func sendFileToReceiveFiles() async throws {
            let type = uniqueServiceType()
            let inbox = TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: inbox) }
            let receiver = try await startChirp([
                "receive-files", inbox, "--type", type, "--name", "inbox\u{1B}[31m", "--interface", "lo"
            ])
            #expect(await receiver.waitForError(containing: "receiving files into"), "\(receiver.transcript)")
            let source = try makeFile(size: 3 << 20)
            let (status, sender) = try await runChirp(
                [
                    "send-file", source, "--to", "inbox\u{1B}[31m", "--type", type, "--name", "out\u{1B}[2J",
                    "--interface", "lo"
                ],
                timeout: .seconds(60))
            #expect(status == 0, "\(sender.transcript)")
            #expect(
                sender.lines == ["sent notes.bin (3.0 MiB) to inbox\\u{1B}[31m as notes.bin"], "\(sender.transcript)")
            // Not a terminal: plain progress lines, up to 100%.
            #expect(sender.standardError.contains("sending notes.bin 100% 3.0 MiB of 3.0 MiB"), "\(sender.transcript)")
            let line = try await receiver.waitForLine(containing: "received notes.bin")
            #expect(line == "received notes.bin (3.0 MiB) from out\\u{1B}[2J: \(inbox)/notes.bin", "\(line)")
            #expect(
                try Data(contentsOf: URL(fileURLWithPath: inbox + "/notes.bin"))
                    == Data(contentsOf: URL(fileURLWithPath: source)))
            receiver.signal(SIGINT)
            #expect(try await receiver.waitForExit() == 0, "\(receiver.transcript)")
        }

        @Test func ctrlCCancelsTheTransferOnBothSides() async throws {
            let type = uniqueServiceType()
            let inbox = TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: inbox) }
            var configuration = Configuration(serviceType: type)
            configuration.peerName = "slow-inbox"
            configuration.interface = .loopback
            let bob = Transceiver(configuration: configuration)
            let files = try FileTransfers(transceiver: bob)
            // Bob writes 1 MiB, then stops acknowledging: the sender waits, mid-transfer.
            files.state.withLockedValue { $0.holdAcksAfter = 1 << 20 }
            let offers = try files.receive(into: inbox)
            try await bob.start()
            let source = try makeFile(size: 8 << 20)
            let sender = try await startChirp([
                "send-file", source, "--to", "slow-inbox", "--type", type, "--interface", "lo"
            ])
            let incoming = try await withTimeout(.seconds(30), "an offer") {
                for await transfer in offers { return transfer }
                throw CancellationError()
            }
            let progress = incoming.progress
            try await withTimeout(.seconds(30), "1 MiB written") {
                for await value in progress where value.completedBytes >= 1 << 20 { return }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: inbox + "/.chirp-partial").count == 1)
            sender.signal(SIGINT)
            #expect(try await sender.waitForExit() == 130, "\(sender.transcript)")
            do {
                _ = try await withTimeout(.seconds(60), "the end of the transfer") { try await incoming.result() }
                Issue.record("the transfer ended well after the sender's Ctrl-C")
            } catch let error as FileTransferError {
                #expect(error.code == .cancelledByPeer)
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: inbox + "/.chirp-partial").isEmpty)
            await bob.shutdown()
        }

        /// A transceiver of an app (tools left out, the default) named `name` on `type`, with files.
        func makeApp(_ name: String, type: String) throws -> (Transceiver, FileTransfers) {
            var configuration = Configuration(serviceType: type)
            configuration.peerName = name
            configuration.interface = .loopback
            let app = Transceiver(configuration: configuration)
            return (app, try FileTransfers(transceiver: app))
        }

        /// Waits for `app` to have connected to the peer named `name`, on its events.
        func connectedPeer(_ app: Transceiver, named name: String) async throws -> Peer {
            let events = app.makeEvents()
            if let peer = app.connectedPeers.first(where: { $0.name == name }) { return peer }
            return try await withTimeout(.seconds(30), "\(name) among the app's peers") {
                for await event in events {
                    if case .peerConnected(let peer) = event, peer.name == name { return peer }
                }
                throw CancellationError()
            }
        }

        /// An app that leaves tools out still sees `chirp receive-files` (a peer like any other to apps), and
        /// `--from` declines the files of other peers.
        @Test func receiveFilesDeclinesPeersNotFrom() async throws {
            let type = uniqueServiceType()
            let inbox = TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: inbox) }
            let receiver = try await startChirp([
                "receive-files", inbox, "--type", type, "--name", "inbox", "--from", "alice", "--interface", "lo"
            ])
            #expect(await receiver.waitForError(containing: "receiving files into"), "\(receiver.transcript)")
            let (mallory, malloryFiles) = try makeApp("mallory", type: type)
            let (alice, aliceFiles) = try makeApp("alice", type: type)
            try await mallory.start()
            try await alice.start()
            let source = try makeFile(size: 200_000)
            let declined = try malloryFiles.send(file: source, to: try await connectedPeer(mallory, named: "inbox"))
            do {
                _ = try await withTimeout(.seconds(60), "the decline") { try await declined.result() }
                Issue.record("a file from mallory was taken")
            } catch let error as FileTransferError {
                #expect(error.code == .declined)
                #expect(error.reason == "inbox declined notes.bin")
            }
            #expect(
                await receiver.waitForError(
                    containing: "declined notes.bin (195.3 KiB) from mallory: not a --from peer"),
                "\(receiver.transcript)")
            // The positive control: alice's file is taken.
            let taken = try aliceFiles.send(file: source, to: try await connectedPeer(alice, named: "inbox"))
            #expect(try await withTimeout(.seconds(60), "alice's file") { try await taken.result() } == "notes.bin")
            try await receiver.waitForLine(containing: "received notes.bin")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: inbox).sorted() == [".chirp-partial", "notes.bin"])
            receiver.signal(SIGINT)
            #expect(try await receiver.waitForExit() == 0, "\(receiver.transcript)")
            await mallory.shutdown()
            await alice.shutdown()
        }

        /// Ctrl-C on `chirp receive-files` mid-transfer: both sides end, the partial file stays, and the same file
        /// sent to the next `chirp receive-files` into the directory resumes from it.
        @Test func receiveFilesCtrlCKeepsThePartialForAResume() async throws {
            let type = uniqueServiceType()
            let inbox = TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: inbox) }
            let arguments = ["receive-files", inbox, "--type", type, "--name", "inbox", "--interface", "lo"]
            let receiver = try await startChirp(arguments)
            #expect(await receiver.waitForError(containing: "receiving files into"), "\(receiver.transcript)")
            let (alice, files) = try makeApp("alice", type: type)
            try await alice.start()
            // Alice sends 1 MiB, then holds the rest: the receiver waits mid-transfer.
            files.state.withLockedValue { $0.holdSendingAt = 1 << 20 }
            let source = try makeFile(size: 4 << 20)
            let first = try files.send(file: source, to: try await connectedPeer(alice, named: "inbox"))
            let progress = first.progress
            try await withTimeout(.seconds(30), "1 MiB acknowledged") {
                for await value in progress where value.completedBytes >= 1 << 20 { return }
            }
            receiver.signal(SIGINT)
            #expect(try await receiver.waitForExit() == 0, "\(receiver.transcript)")
            #expect(receiver.standardError.contains("notes.bin from alice failed: stopped"), "\(receiver.transcript)")
            do {
                _ = try await withTimeout(.seconds(60), "the end of the transfer") { try await first.result() }
                Issue.record("the transfer ended well after the receiver's Ctrl-C")
            } catch let error as FileTransferError {
                #expect(error.code == .cancelledByPeer)
                #expect(error.reason.contains("kept the partial file"), "\(error)")
            }
            let kept = try FileManager.default.contentsOfDirectory(atPath: inbox + "/.chirp-partial")
            #expect(kept.count == 1)
            // The next receiver into the same directory: the same file resumes where the first one stopped.
            files.state.withLockedValue { $0.holdSendingAt = nil }
            let next = try await startChirp(arguments)
            #expect(await next.waitForError(containing: "receiving files into"), "\(next.transcript)")
            let again = try files.send(file: source, to: try await connectedPeer(alice, named: "inbox"))
            #expect(
                try await withTimeout(.seconds(60), "the second transfer") { try await again.result() } == "notes.bin")
            #expect(again.offeredOffsets.withLockedValue { $0 } == [1 << 20])
            #expect(
                try Data(contentsOf: URL(fileURLWithPath: inbox + "/notes.bin"))
                    == Data(contentsOf: URL(fileURLWithPath: source)))
            next.signal(SIGINT)
            #expect(try await next.waitForExit() == 0, "\(next.transcript)")
            await alice.shutdown()
        }
    }
}
