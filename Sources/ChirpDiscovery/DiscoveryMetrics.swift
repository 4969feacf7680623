import Metrics

/// The counters ``ServiceDiscovery`` reports to: the transceiver's (Docs/Metrics.md) when a transceiver runs it.
package protocol DiscoveryMetrics: Sendable {
    /// Service instances resolved.
    var resolves: Counter { get }
    /// The times the DNS-SD daemon did not answer.
    var daemonErrors: Counter { get }
}
