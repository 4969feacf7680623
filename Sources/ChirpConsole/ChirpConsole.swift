import Chirp
import ChirpLogs
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Chirp Console: collects the records of every log source on the network into its store and serves them to a
/// browser: the page, a JSON API and a live stream (Docs/Console.md).
///
/// ```swift
/// var configuration = ConsoleConfiguration(dataDirectory: "/var/lib/chirp-console")
/// configuration.port = 7777
/// try await ChirpConsole(configuration: configuration).run { port in print("http://127.0.0.1:\(port)/") }
/// ```
public final class ChirpConsole: Sendable {
    /// The settings the console was created with.
    public let configuration: ConsoleConfiguration
    private let logger: Logger

    /// A console; nothing happens until `run(onListening:)`. `logger` gets what the console does (the library never
    /// sets up logging itself).
    public init(configuration: ConsoleConfiguration, logger: Logger = Logger(label: "chirp.console")) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Opens the store, collects, and serves until the task is cancelled (or SIGINT/SIGTERM when `handlesSignals`).
    ///
    /// - Parameters:
    ///   - handlesSignals: whether SIGINT and SIGTERM end the run (as `chirp-console` does); default: no.
    ///   - onListening: called with the port once the server listens.
    /// - Throws: ``ConsoleConfigurationError``, ``ConsoleStoreError``, or the server's error (the port is taken).
    public func run(handlesSignals: Bool = false, onListening: @escaping @Sendable (Int) async -> Void = { _ in })
        async throws
    {
        try configuration.validate()
        do {
            try FileManager.default.createDirectory(
                atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw ConsoleStoreError(
                "cannot create the data directory \(configuration.dataDirectory): \(error.localizedDescription)")
        }
        let assets = try ConsoleAssets.load()
        let store = try await ConsoleStore.open(
            path: configuration.storePath, retention: configuration.retention, logger: logger)
        do {
            try await serve(store: store, assets: assets, handlesSignals: handlesSignals, onListening: onListening)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    private func serve(
        store: ConsoleStore, assets: ConsoleAssets, handlesSignals: Bool,
        onListening: @escaping @Sendable (Int) async -> Void
    ) async throws {
        let notifier = ChangeNotifier()
        let collector = ConsoleCollector(store: store, viewer: configuration.viewer, notifier: notifier, logger: logger)
        let peers = PeerDirectory(interface: configuration.viewer.transceiver.interface)
        peers.start()
        let streams = NIOLockedValueBox(0)

        let collecting = Task { await collector.run() }
        let maintaining = Task { [logger] in
            // Keep-alive ticks for the live streams, and retention every 30 s.
            var ticks = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(15))
                notifier.notify(.tick)
                ticks += 1
                if ticks % 2 == 0 {
                    do {
                        let report = try await store.enforceRetention()
                        if report.removedRecords > 0 {
                            logger.info(
                                "retention removed records",
                                metadata: ["records": "\(report.removedRecords)", "bytes": "\(report.removedBytes)"])
                        }
                    } catch {
                        logger.error("retention failed", metadata: ["error": "\(error)"])
                    }
                }
            }
        }
        defer {
            collecting.cancel()
            maintaining.cancel()
            peers.stop()
            notifier.finish()
        }
        // Retention once at start: a store opened after a long pause may hold records past its age limit.
        _ = try? await store.enforceRetention()

        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: ConsoleGate(token: configuration.token))
        let api = ConsoleAPI(
            store: store, collector: collector, peers: peers, notifier: notifier, streams: streams,
            configuration: configuration)
        router.get("/") { _, _ in assets.response(for: "index.html") }
        router.get("/assets/:file") { _, context in assets.response(for: context.parameters.get("file") ?? "") }
        router.get("/api/sources") { _, _ in try await api.sources() }
        router.get("/api/records") { request, _ in await api.records(QueryString.parse(request.uri.query)) }
        router.get("/api/endpoints") { request, _ in await api.endpoints(QueryString.parse(request.uri.query)) }
        router.get("/api/services") { _, _ in api.services() }
        router.get("/api/peers") { request, _ in await api.peers(QueryString.parse(request.uri.query)) }
        router.get("/api/status") { _, _ in await api.status() }
        router.get("/api/stream") { request, _ in api.stream(QueryString.parse(request.uri.query)) }

        let app = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        do {
            if handlesSignals {
                try await app.runService()
            } else {
                try await app.runService(gracefulShutdownSignals: [])
            }
        } catch {
            collecting.cancel()
            await collecting.value
            throw error
        }
        collecting.cancel()
        await collecting.value  // no insert runs once the store closes
    }
}

/// The page's files, shipped as package resources and read once at start.
struct ConsoleAssets: Sendable {
    private let files: [String: (contentType: String, data: Data)]

    static let names: [String: String] = [
        "index.html": "text/html; charset=utf-8",
        "console.js": "text/javascript; charset=utf-8",
        "console.css": "text/css; charset=utf-8"
    ]

    static func load() throws -> ConsoleAssets {
        var files: [String: (String, Data)] = [:]
        for (name, type) in names {
            let base = (name as NSString).deletingPathExtension
            let ext = (name as NSString).pathExtension
            guard let url = Bundle.module.url(forResource: base, withExtension: ext, subdirectory: "Resources"),
                let data = try? Data(contentsOf: url)
            else {
                throw ConsoleStoreError("the console's page file \(name) is missing from its resources")
            }
            files[name] = (type, data)
        }
        return ConsoleAssets(files: files)
    }

    func response(for name: String) -> Response {
        guard let file = files[name] else { return ConsoleHTTP.failure(.notFound, "no such file") }
        var headers = HTTPFields()
        headers[.contentType] = file.contentType
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: file.data)))
    }
}
