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
    }
}
