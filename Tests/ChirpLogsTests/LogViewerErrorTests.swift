import ChirpLogs
import Foundation
import Testing

/// `LogViewerError`: one struct with an extensible code and the sentence `chirp logs` prints, word for word as before
/// it was a struct.
@Suite(.timeLimit(.minutes(5))) struct LogViewerErrorTests {
    let refusals = [
        LogSourceRefusal(source: "shop[42]@box", info: nil, reason: "the peer requires a shared secret"),
        LogSourceRefusal(source: "cart[7]@box", info: nil, reason: "boom")
    ]

    @Test func eachFunctionKeepsItsSentenceAndItsData() {
        let none = LogViewerError.noSourceFound("app=shop")
        #expect(none.code == .noSourceFound)
        #expect(none.message == "no log source found (app=shop)")
        #expect(none.selector == "app=shop" && none.refusals.isEmpty)

        let refused = LogViewerError.refused(refusals)
        #expect(refused.code == .refused)
        #expect(
            refused.message
                == "refused: this app (shop[42]@box) requires a shared secret, and this viewer has none; "
                + "cart[7]@box refused the connection: boom")
        #expect(refused.refusals.map(\.kind) == [.secretRequired, .other] && refused.selector == nil)
    }

    @Test func descriptionAndLocalizedDescriptionAreTheMessage() {
        let error = LogViewerError.noSourceFound("any")
        #expect(error.description == "no log source found (any)")
        #expect(error.errorDescription == error.message)
        #expect(error.localizedDescription == error.message)
        #expect("\(error.code)" == "noSourceFound")
    }

    @Test func aSwitchOverCodesKeepsADefault() {
        func kind(_ error: LogViewerError) -> String {
            switch error.code {
            case .refused: "refused"
            default: "other"
            }
        }
        #expect(kind(.refused(refusals)) == "refused")
        #expect(kind(.noSourceFound("any")) == "other")
    }

    @Test func theCauseIsKeptButNotCompared() {
        struct Underlying: Error {}
        let withCause = LogViewerError(
            code: .noSourceFound, message: "no log source found (any)", selector: "any", cause: Underlying())
        #expect(withCause.cause is Underlying)
        #expect(withCause == .noSourceFound("any"))
        #expect(withCause != .noSourceFound("app=shop"))
        #expect(LogViewerError.refused(refusals) != .refused(Array(refusals.prefix(1))))
    }
}
