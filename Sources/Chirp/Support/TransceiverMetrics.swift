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
        let factory = factory ?? MetricsSystem.factory
        let service = [("service", serviceType)]
        func counter(_ label: String, _ extra: [(String, String)] = []) -> Counter {
            Counter(label: label, dimensions: service + extra, factory: factory)
        }
        peersAvailable = Gauge(label: "chirp_peers_available", dimensions: service, factory: factory)
        peersConnected = Gauge(label: "chirp_peers_connected", dimensions: service, factory: factory)
        connects = counter("chirp_connects_total")
        disconnectsGoodbye = counter("chirp_disconnects_total", [("reason", "goodbye")])
        disconnectsRefused = counter("chirp_disconnects_total", [("reason", "refused")])
        disconnectsLost = counter("chirp_disconnects_total", [("reason", "lost")])
        framesOut = counter("chirp_frames_total", [("direction", "out")])
        bytesOut = counter("chirp_bytes_total", [("direction", "out")])
        framesIn = counter("chirp_frames_total", [("direction", "in")])
        bytesIn = counter("chirp_bytes_total", [("direction", "in")])
        framesRefused = counter("chirp_frames_refused_total")
        messagesUnhandled = counter("chirp_messages_unhandled_total")
        outboundLimitHits = counter("chirp_outbound_limit_hits_total")
        handshakeLimitHits = counter("chirp_handshake_limit_hits_total")
        requestsAnswered = counter("chirp_requests_total", [("outcome", "answered")])
        requestsFailed = counter("chirp_requests_total", [("outcome", "failed")])
        requestDuration = Timer(label: "chirp_request_duration_seconds", dimensions: service, factory: factory)
        resolves = counter("chirp_discovery_resolves_total")
        daemonErrors = counter("chirp_discovery_daemon_errors_total")
    }
}

/// What discovery counts goes to the same counters (``DiscoveryMetrics``).
extension TransceiverMetrics: DiscoveryMetrics {}
