import ServiceLifecycle

/// A log source is a service of swift-service-lifecycle's `ServiceGroup`: it serves viewers while the group runs,
/// and on graceful shutdown writes what was logged to its spool before it stops.
///
/// ```swift
/// import ChirpLogs
/// import Logging
/// import ServiceLifecycle
///
/// let source = try LogSource(configuration: LogSourceConfiguration(appName: "orders"))
/// LoggingSystem.bootstrap { source.handler(label: $0) }
/// let group = ServiceGroup(configuration: .init(
///     services: [source], gracefulShutdownSignals: [.sigterm], logger: Logger(label: "orders")))
/// try await group.run()
/// ```
extension LogSource: Service {
    /// Starts serving viewers (``start()``), runs until the service group shuts down gracefully or the task is
    /// cancelled, then writes every record logged so far to the spool (when there is one) and stops (``stop()``).
    /// - Throws: what ``start()`` throws.
    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        await flushToSpool()
        await stop()
    }

    /// Writes every record logged so far to the spool, now rather than at the next pass (which may be up to
    /// ``LogSourceConfiguration/flushInterval`` away). Does nothing without a spool.
    public func flushToSpool() async {
        await pump.spoolEverything()
    }
}
