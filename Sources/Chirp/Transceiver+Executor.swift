import ChirpSupport
import NIOCore

extension Transceiver {
    /// The executor of the event loop that `peer`'s connection runs on, for `withTaskExecutorPreference`.
    ///
    /// A request, a ping or a send made from a task that prefers this executor runs on the connection's event loop:
    /// the frame is written without waking the loop from another thread, and the task resumes on the loop when the
    /// reply arrives. A round trip then crosses no thread inside this process; from a task on the global executor it
    /// crosses two (the caller's task to the loop, and the loop back to a thread of the global executor), which on a
    /// machine whose idle cores sleep deeply is most of a round trip's time (Docs/Performance.md, "Round trip").
    ///
    /// ```swift
    /// let executor = try transceiver.taskExecutor(for: peer)
    /// let total = try await withTaskExecutorPreference(executor) {
    ///     var total = 0
    ///     for item in items { total += try await transceiver.request(Price(of: item), to: peer, as: Int.self) }
    ///     return total
    /// }
    /// ```
    ///
    /// What such a task does between its awaits runs on the event loop, between the loop's reads and writes, as a
    /// synchronous `receive` handler does: keep it short, or hand longer work to a task of its own.
    /// The executor stays valid after the connection closes (its loop belongs to the event loop group); requests to
    /// a peer whose connection moved to another loop still work, with the hand-offs again.
    /// - Throws: ``/ChirpSupport/ChirpError/Code/notRunning``, or ``/ChirpSupport/ChirpError/Code/peerNotConnected``
    ///   when `peer` is not connected.
    @available(macOS 15, iOS 18, tvOS 18, watchOS 11, *)
    public func taskExecutor(for peer: Peer) throws -> any TaskExecutor {
        EventLoopTaskExecutor(try connection(to: peer).eventLoop)
    }
}
