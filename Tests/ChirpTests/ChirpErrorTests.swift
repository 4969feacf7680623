import Chirp
import Foundation
import Testing

/// `ChirpError`: one struct with an extensible code, the sentence users read, and what it is about.
@Suite(.timeLimit(.minutes(5))) struct ChirpErrorTests {
    let peer = Peer(id: "B0B", name: "bob", metadata: [:])

    @Test func aRequestThatTimedOutSaysWhoAndWhatAndMatchesByCode() {
        let error = ChirpError.requestTimedOut(type: "app.Echo", peer: peer, seconds: 0.3)
        #expect(error.code == .requestTimedOut)
        #expect(error.peer == peer)
        #expect(error.messageType == "app.Echo")
        #expect(error.message == "no reply to app.Echo from bob within 0.3 s")
        #expect(error.description == error.message)
        #expect(error.localizedDescription == error.message)
        #expect("\(error.code)" == "requestTimedOut")
    }

    @Test func aSwitchOverCodesKeepsADefaultAndStillMatchesEachCode() {
        func kind(_ error: ChirpError) -> String {
            switch error.code {
            case .peerNotConnected, .peerDisconnected: "gone"
            case .requestTimedOut: "slow"
            default: "other"
            }
        }
        #expect(kind(.peerDisconnected(peer)) == "gone")
        #expect(kind(.requestTimedOut(type: "t", peer: peer, seconds: 1)) == "slow")
        #expect(kind(.notRunning) == "other")
    }

    @Test func theCauseIsKeptButNotCompared() {
        struct Underlying: Error {}
        let withCause = ChirpError.connectionFailed(
            address: "127.0.0.1:1", reason: "connection refused", cause: Underlying())
        let without = ChirpError.connectionFailed(address: "127.0.0.1:1", reason: "connection refused")
        #expect(withCause.cause is Underlying)
        #expect(without.cause == nil)
        #expect(withCause == without)
        #expect(withCause.message == "connection refused by 127.0.0.1:1")
        #expect(withCause.reason == "connection refused")
        #expect(withCause != ChirpError.connectionFailed(address: "127.0.0.1:1", reason: "timed out"))
    }

    @Test func textFromAPeerIsEscapedInTheMessageAndKeptAsSentInTheReason() {
        let error = ChirpError.remoteFailure(
            type: "t", peer: Peer(id: "X", name: "evil\u{1B}]0;x\u{07}", metadata: [:]),
            message: "line\nforged")
        #expect(!error.message.contains("\n") && !error.message.contains("\u{1B}"))
        #expect(error.reason == "line\nforged")
    }

    @Test func anAppCanMakeItsOwnWithACode() {
        let error = ChirpError(code: .invalidConfiguration, message: "invalid configuration: no", reason: "no")
        #expect(error == .invalidConfiguration("no"))
    }

    // MARK: - Errors say what to do

    @Test func notRunningSaysToCallStart() {
        #expect(ChirpError.notRunning.message == "the transceiver is not running: call start() first")
    }

    @Test func aFullQueueSaysHowToWaitForRoom() {
        let error = ChirpError.outboundLimitExceeded(peer: peer, limit: 1024)
        #expect(
            error.message
                == "bob is not reading fast enough: its queue is full (1024 bytes); message not sent "
                + "(`try await send(_:to:)` waits for room instead)")
    }
}
