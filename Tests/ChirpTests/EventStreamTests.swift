import Testing

@testable import Chirp

/// What ``Transceiver/makeEvents()`` promises about its streams.
@Suite(.timeLimit(.minutes(1))) struct EventStreamTests {
    /// A task that iterates the events of a transceiver the app let go of ends, instead of waiting forever for
    /// events that cannot come (ChirpLogs' log source relies on it).
    @Test func anEventStreamEndsWhenItsTransceiverIsGone() async throws {
        var transceiver: Transceiver? = Transceiver(configuration: Configuration(serviceType: "test"))
        let events = try #require(transceiver).makeEvents()
        let ended = Task {
            for await _ in events {}
            return true
        }
        transceiver = nil
        #expect(try await withTimeout(.seconds(20), "the event stream to end") { await ended.value })
    }
}
