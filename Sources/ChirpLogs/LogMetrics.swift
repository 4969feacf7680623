import Chirp
import Metrics

/// The swift-metrics a log source reports (Docs/Metrics.md), with the factory of its transceiver's configuration.
/// Counted from the source's statistics at the end of each pass of its sender queue, never in a log call.
struct LogMetrics: Sendable {
    /// Records logged.
    let logged: Counter
    /// Records lost, by where: `viewers` (overwritten or evicted before they could be sent), `spool` (overwritten in
    /// memory before they were written to the spool, or evicted from a full spool), `subscribers` (in-process
    /// subscribers too slow).
    let droppedForViewers: Counter
    let droppedForSpool: Counter
    let droppedForSubscribers: Counter
    /// Records written to the spool.
    let spooled: Counter

    init(appName: String, factory: (any MetricsFactory)?) {
        let metrics = MetricsMaker(dimensions: [("app", appName)], factory: factory)
        logged = metrics.counter("chirp_log_records_total")
        droppedForViewers = metrics.counter("chirp_log_records_dropped_total", [("where", "viewers")])
        droppedForSpool = metrics.counter("chirp_log_records_dropped_total", [("where", "spool")])
        droppedForSubscribers = metrics.counter("chirp_log_records_dropped_total", [("where", "subscribers")])
        spooled = metrics.counter("chirp_log_records_spooled_total")
    }
}
