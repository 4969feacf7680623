import ServiceLifecycle

/// A transceiver is a service of swift-service-lifecycle's `ServiceGroup`, beside an HTTP server or any other:
///
/// ```swift
/// import Chirp
/// import Logging
/// import ServiceLifecycle
///
/// let transceiver = Transceiver(serviceType: "chat")
/// let group = ServiceGroup(configuration: .init(
///     services: [transceiver], gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "app")))
/// try await group.run()
/// ```
extension Transceiver: Service {
    /// Starts the transceiver (``start()``), runs until the service group shuts down gracefully or the task is
    /// cancelled, then stops it (``shutdown()``: goodbyes to every peer, every socket and DNS-SD reference released).
    ///
    /// A transceiver already started is stopped all the same when `run()` returns.
    /// - Throws: what ``start()`` throws (a configuration error, ``/ChirpSupport/ChirpError/Code/listenFailed``).
    public func run() async throws {
        try await start()
        // Returns on graceful shutdown; throws CancellationError when the task is cancelled: stop either way.
        try? await gracefulShutdown()
        await shutdown()
    }
}
