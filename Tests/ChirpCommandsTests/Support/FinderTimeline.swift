import Chirp

@testable import ChirpCommands

/// The clock and the peers of the tests that feed ``AppFinder`` events by hand: times in milliseconds after the
/// suite's `start`, apps and command-line tools by name (their id: `id-NAME`, then the suite's ``idSuffix``).
protocol FinderTimeline {
    var start: ContinuousClock.Instant { get }
    static var idSuffix: String { get }
}

extension FinderTimeline {
    func at(_ milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }
    func app(_ name: String) -> Peer { Peer(id: "id-\(name)\(Self.idSuffix)", name: name, host: "host.local.") }
    func cli(_ name: String) -> Peer {
        Peer(id: "id-\(name)\(Self.idSuffix)", name: name, metadata: ["chirp-role": "cli"])
    }
}
