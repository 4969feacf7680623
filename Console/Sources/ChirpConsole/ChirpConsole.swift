import Chirp
import ChirpLogs
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// Either way the server stops gracefully: the live streams end, the requests under way are answered (for 5 s at
    /// most), then the store closes.
    ///
    /// - Parameters:
    ///   - handlesSignals: whether SIGINT and SIGTERM end the run (as `chirp-console` does); default: no.
    ///   - onListening: called with the port once the server listens.
    /// - Throws: ``ConsoleConfigurationError``, ``ConsoleStoreError``, ``ConsoleListenError`` (the port is in use, or
    ///   the address is not this machine's), or what else the server threw.
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
        let peers = PeerDirectory(interface: configuration.viewer.transceiver.interface)
        peers.start()
        let collector = ConsoleCollector(
            store: store, viewer: configuration.viewer, notifier: notifier, logger: logger)
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
                    } catch is CancellationError {
                        break  // the console stops (retention waited for the store's writer)
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

        let listening = NIOLockedValueBox(false)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { channel in
                listening.withLockedValue { $0 = true }
                await onListening(channel.localAddress?.port ?? 0)
            },
            logger: logger)
        // Services stop in reverse order: the live streams end first (the server's graceful shutdown waits for every
        // response under way, and a stream's never ends by itself), then the server.
        var group = ServiceGroupConfiguration(
            services: [app, LiveStreamsEnd(notifier: notifier)],
            gracefulShutdownSignals: handlesSignals ? [.sigterm, .sigint] : [], logger: logger)
        group.maximumGracefulShutdownDuration = .seconds(5)
        do {
            try await Self.runStoppingGracefully(ServiceGroup(configuration: group))
        } catch {
            collecting.cancel()
            await collecting.value
            guard !listening.withLockedValue({ $0 }) else { throw error }
            throw ConsoleListenError(error, host: configuration.host, port: configuration.port) ?? error
        }
        collecting.cancel()
        await collecting.value  // no insert runs once the store closes
    }

    /// Runs `group` until it ends; a cancellation of the calling task becomes a graceful shutdown. The group runs in a
    /// task of its own, which the cancellation does not reach: cancelled, Hummingbird's server would close its channel
    /// and then also shut down gracefully, which fails on the closed channel ("Server shutdown error: Already
    /// closed", logged as an error) on an ordinary stop.
    private static func runStoppingGracefully(_ group: ServiceGroup) async throws {
        let running = Task { try await group.run() }
        try await withTaskCancellationHandler {
            try await running.value
        } onCancel: {
            Task { await group.triggerGracefulShutdown() }
        }
    }
}

/// Ends the live streams once the console shuts down gracefully (they would hold the server's shutdown forever).
private struct LiveStreamsEnd: Service {
    let notifier: ChangeNotifier

    func run() async throws {
        try? await gracefulShutdown()
        notifier.finish()
    }
}

/// The console's web server could not listen on its address: the port is in use, the address is not one of this
/// machine's, or the system refused (a port below 1024 without the privilege).
public struct ConsoleListenError: Error, CustomStringConvertible, Sendable {
    /// The host the server was to listen on.
    public var host: String
    /// The port it was to listen on.
    public var port: Int
    /// Why, in words ("the port is in use").
    public var reason: String
    /// Whether another program already listens on the port.
    public var portInUse: Bool

    public var description: String {
        "cannot listen on \(host.contains(":") ? "[\(host)]" : host):\(port): \(reason)"
    }

    /// The listening error that `error` is, or `nil` when it is not one.
    init?(_ error: any Error, host: String, port: Int) {
        self.host = host
        self.port = port
        portInUse = false
        if let error = error as? IOError {
            switch error.errnoCode {
            case EADDRINUSE:
                reason = "the port is in use (another program listens on it)"
                portInUse = true
            case EADDRNOTAVAIL: reason = "the address is not one of this machine's"
            case EACCES: reason = "permission denied (a port below 1024 needs privileges)"
            default: return nil
            }
        } else if error is SocketAddressError {
            reason = "no such address (\(error))"
        } else {
            return nil
        }
    }
}

/// The page's files, shipped as package resources and read once at start. Only the files named here are served (by
/// their name alone: `/assets/NAME`), so no request reaches another file.
struct ConsoleAssets: Sendable {
    private let files: [String: (contentType: String, data: Data)]

    /// The page's script: `console.js`, its entry point, and the ES modules it imports (`import ... from "./NAME.js"`,
    /// which the browser asks for as `/assets/NAME.js`).
    static let scripts = [
        "console.js", "activity.js", "api.js", "details.js", "dom.js", "endpoints.js", "feed.js", "filters.js",
        "format.js", "highlight.js", "http.js", "keyboard.js", "live.js", "logs.js", "peers.js", "sources.js",
        "state.js", "tabs.js", "theme.js", "vlist.js"
    ]

    static let names: [String: String] = Dictionary(
        uniqueKeysWithValues: [
            ("index.html", "text/html; charset=utf-8"),
            ("console.css", "text/css; charset=utf-8")
        ] + scripts.map { ($0, "text/javascript; charset=utf-8") })

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
