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
        let factory = factory ?? MetricsSystem.factory
        let app = [("app", appName)]
        logged = Counter(label: "chirp_log_records_total", dimensions: app, factory: factory)
        droppedForViewers = Counter(
            label: "chirp_log_records_dropped_total", dimensions: app + [("where", "viewers")], factory: factory)
        droppedForSpool = Counter(
            label: "chirp_log_records_dropped_total", dimensions: app + [("where", "spool")], factory: factory)
        droppedForSubscribers = Counter(
            label: "chirp_log_records_dropped_total", dimensions: app + [("where", "subscribers")], factory: factory)
        spooled = Counter(label: "chirp_log_records_spooled_total", dimensions: app, factory: factory)
    }
}
