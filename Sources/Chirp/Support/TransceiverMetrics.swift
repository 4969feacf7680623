import ChirpDiscovery
import Metrics

/// The swift-metrics a transceiver reports (names and dimensions in Docs/Metrics.md), made once per run with the
/// configured factory. With no backend bootstrapped, each is swift-metrics' no-op handler; nothing on the path of
/// one message touches them: messages and bytes are counted per write and per read turn, in batches.
struct TransceiverMetrics: Sendable {
    /// Peers discovered or connected, and connected.
    let peersAvailable: Gauge
    let peersConnected: Gauge
    /// Peers that connected.
    let connects: Counter
    /// Peers that disconnected, by reason: `goodbye` (it said it stops), `refused` (its accept policy), `lost`.
    let disconnectsGoodbye: Counter
    let disconnectsRefused: Counter
    let disconnectsLost: Counter
    /// Message, request and reply frames written and read, and their bytes (frame headers included).
    let framesOut: Counter
    let bytesOut: Counter
    let framesIn: Counter
    let bytesIn: Counter
    /// Frames from a peer that could not be parsed (skipped).
    let framesRefused: Counter
    /// Messages that no handler takes (dropped).
    let messagesUnhandled: Counter
    /// Sends refused because a peer's outbound queue was full.
    let outboundLimitHits: Counter
    /// Accepted connections closed at once because `maximumPendingHandshakes` were already in their handshake.
    let handshakeLimitHits: Counter
    /// Requests that got a reply, and those that did not (timed out, failed remotely, peer gone).
    let requestsAnswered: Counter
    let requestsFailed: Counter
    /// Round trip of answered requests.
    let requestDuration: Timer
    /// Service instances resolved, and the times the DNS-SD daemon did not answer.
    let resolves: Counter
    let daemonErrors: Counter

    init(serviceType: String, factory: (any MetricsFactory)?) {
        let metrics = MetricsMaker(dimensions: [("service", serviceType)], factory: factory)
        peersAvailable = metrics.gauge("chirp_peers_available")
        peersConnected = metrics.gauge("chirp_peers_connected")
        connects = metrics.counter("chirp_connects_total")
        disconnectsGoodbye = metrics.counter("chirp_disconnects_total", [("reason", "goodbye")])
        disconnectsRefused = metrics.counter("chirp_disconnects_total", [("reason", "refused")])
        disconnectsLost = metrics.counter("chirp_disconnects_total", [("reason", "lost")])
        framesOut = metrics.counter("chirp_frames_total", [("direction", "out")])
        bytesOut = metrics.counter("chirp_bytes_total", [("direction", "out")])
        framesIn = metrics.counter("chirp_frames_total", [("direction", "in")])
        bytesIn = metrics.counter("chirp_bytes_total", [("direction", "in")])
        framesRefused = metrics.counter("chirp_frames_refused_total")
        messagesUnhandled = metrics.counter("chirp_messages_unhandled_total")
        outboundLimitHits = metrics.counter("chirp_outbound_limit_hits_total")
        handshakeLimitHits = metrics.counter("chirp_handshake_limit_hits_total")
        requestsAnswered = metrics.counter("chirp_requests_total", [("outcome", "answered")])
        requestsFailed = metrics.counter("chirp_requests_total", [("outcome", "failed")])
        requestDuration = metrics.timer("chirp_request_duration_seconds")
        resolves = metrics.counter("chirp_discovery_resolves_total")
        daemonErrors = metrics.counter("chirp_discovery_daemon_errors_total")
    }
}

/// Makes the swift-metrics of one owner (a transceiver, a log source): each with the owner's dimensions (its
/// `service`, its `app`) and the configured factory, or else the one swift-metrics was bootstrapped with.
package struct MetricsMaker: Sendable {
    private let dimensions: [(String, String)]
    private let factory: any MetricsFactory

    package init(dimensions: [(String, String)], factory: (any MetricsFactory)?) {
        self.dimensions = dimensions
        self.factory = factory ?? MetricsSystem.factory
    }

    /// A counter labelled `label`, with the owner's dimensions and `extra` ones (`[("reason", "lost")]`).
    package func counter(_ label: String, _ extra: [(String, String)] = []) -> Counter {
        Counter(label: label, dimensions: dimensions + extra, factory: factory)
    }

    package func gauge(_ label: String) -> Gauge {
        Gauge(label: label, dimensions: dimensions, factory: factory)
    }

    package func timer(_ label: String) -> Timer {
        Timer(label: label, dimensions: dimensions, factory: factory)
    }
}

/// What discovery counts goes to the same counters (``DiscoveryMetrics``).
extension TransceiverMetrics: DiscoveryMetrics {}
