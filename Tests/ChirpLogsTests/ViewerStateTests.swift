import Foundation
import Testing

@testable import ChirpLogs

/// The viewer's bookkeeping of what each stream delivered, with sequence numbers as a peer may send them.
@Suite(.timeLimit(.minutes(5))) struct ViewerStateTests {
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

    /// An entry that did not decode is lost in its place: after the gap before it, if the source skipped numbers;
    /// not at all if its number was delivered already.
    @Test func anUndecodableEntryIsLostInItsPlace() {
        let cases: [(delivered: UInt64?, entry: UInt64, losses: [String])] = [
            (nil, 7, ["7...7 undecodable"]),  // the first of a stream: no gap before it can be known
            (4, 5, ["5...5 undecodable"]),
            (4, 8, ["5...7 missing", "8...8 undecodable"]),
            (9, 8, []),
            (9, 9, []),
            (.max - 1, .max, ["\(UInt64.max)...\(UInt64.max) undecodable"]),
            (.max, .max, [])
        ]
        for (delivered, entry, expected) in cases {
            let state = ViewerState(resumeAfter: delivered.map { ["stream": $0] } ?? [:])
            let losses = state.acceptUndecodable(entry, stream: "stream").map {
                "\($0.from)...\($0.through) \($0.reason)"
            }
            #expect(losses == expected, "delivered through \(String(describing: delivered)), entry \(entry)")
        }
        // And the stream goes on after it, without reporting it again as a gap.
        let state = ViewerState(resumeAfter: ["stream": 4])
        _ = state.acceptUndecodable(5, stream: "stream")
        let (fresh, gap) = state.accept([Self.record(6)], stream: "stream")
        #expect(fresh.map(\.sequence) == [6] && gap == nil)
    }

    private static func record(_ sequence: UInt64) -> LogRecord {
        LogRecord(sequence: sequence, timestamp: Date(), level: .info, label: "test", message: "m")
    }
}
