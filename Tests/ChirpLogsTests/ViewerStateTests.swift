import Foundation
import Testing

@testable import ChirpLogs

/// The viewer's bookkeeping of what each stream delivered, with sequence numbers as a peer may send them.
@Suite struct ViewerStateTests {
    @Test func aLossNoticeIsTrimmedToWhatWasNotDelivered() {
        let state = ViewerState(resumeAfter: ["stream": 10])
        #expect(
            state.acceptLoss(from: 5, through: 20, reason: "buffer full", stream: "stream")
                == LogLoss(from: 11, through: 20, reason: "buffer full"))
        #expect(state.acceptLoss(from: 15, through: 20, reason: "buffer full", stream: "stream") == nil)
    }

    @Test func sequenceNumbersAtTheirMaximumEndTheStreamWithoutOverflowing() {
        let state = ViewerState()
        let (fresh, gap) = state.accept([Self.record(.max)], stream: "stream")
        #expect(fresh.map(\.sequence) == [.max])
        #expect(gap == nil)  // the first batch of a stream sets where it starts
        // Nothing can follow the last number: a later notice or batch is dropped, and the viewer goes on.
        #expect(state.acceptLoss(from: 1, through: .max, reason: "buffer full", stream: "stream") == nil)
        #expect(state.accept([Self.record(.max)], stream: "stream").0.isEmpty)
        #expect(
            ViewerState(resumeAfter: ["stream": .max]).acceptLoss(
                from: .max, through: .max, reason: "spool full", stream: "stream") == nil)
    }

    private static func record(_ sequence: UInt64) -> LogRecord {
        LogRecord(sequence: sequence, timestamp: Date(), level: .info, label: "test", message: "m")
    }
}
