import Chirp
import Foundation
import Logging
import Testing

/// A library that prints nothing of its own, and errors that read as sentences wherever they are shown.
@Suite(.timeLimit(.minutes(5))) struct LibraryHygieneTests {
    @Test func withNoLoggerGivenChirpLogsNothing() throws {
        // swift-log's default handler writes to standard output; Chirp's defaults must not reach it.
        #expect(Configuration().logger.handler is SwiftLogNoOpLogHandler)
        // The positive control: a logger the app gives is the one used.
        var configuration = Configuration()
        configuration.logger = Logger(label: "app") { StreamLogHandler.standardError(label: $0) }
        #expect(configuration.logger.handler is StreamLogHandler)
    }

    @Test func aChirpErrorsLocalizedDescriptionIsItsSentence() {
        let peer = Peer(id: "8C0E7F0B-3F0B", name: "alice")
        let errors: [ChirpError] = [
            .notRunning, .peerNotConnected(peer), .noResponder(type: "listr.item.list", peer: peer),
            .invalidServiceType("a_b", reason: "'_' is not allowed")
        ]
        for error in errors {
            #expect(error.localizedDescription == error.description)
            #expect(!error.localizedDescription.contains("The operation could not be completed"))
        }
        #expect(
            (ChirpError.notRunning as any Error).localizedDescription
                == "the transceiver is not running: call start() first")
    }

    @Test func namesFromPeersAreEscapedInErrorsAndPeerDescriptions() {
        let peer = Peer(id: "8C0E7F0B", name: "mallory\n2026 critical FORGED\u{1B}]0;x\u{07}")
        let error = ChirpError.remoteFailure(type: "t", peer: peer, message: "bad\r\nline")
        #expect(!error.description.contains("\n") && !error.description.contains("\u{1B}"))
        #expect(error.description.contains(#"mallory\n2026 critical FORGED\u{1B}]0;x\u{7}"#))
        #expect(error.description.contains(#"bad\r\nline"#))
        #expect(peer.description == #"mallory\n2026 critical FORGED\u{1B}]0;x\u{7} (8C0E7F0B)"#)
        // The positive control: an ordinary name is shown as it is.
        #expect(Peer(id: "1234567890", name: "Zoë's Mac").description == "Zoë's Mac (12345678)")
    }
}
