// logdemo: an app that streams its logs with ChirpLogs. It logs varied records at a steady rate and makes real HTTP
// calls (successes, 404s, 500s, JSON bodies with non-ASCII text, an Authorization header that gets redacted) to a
// small HTTP server it runs itself on 127.0.0.1. Watch it with `chirp logs logdemo`, or `chirp logs --http --detail`.
//
//     logdemo --name shop            # in one terminal
//     chirp logs shop                # in another, or on another host of the network
//
// With a shared secret (CHIRP_SECRET or --secret-file PATH), only viewers that hold the same one get the logs.
import ArgumentParser
import Chirp
import ChirpCommands
import ChirpLogs
import ChirpLogsURLSession
import Foundation
import Logging
import NIOPosix

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@main
struct LogDemo: AsyncParsableCommand {
    static func main() async { await CommandLineTool.main(Self.self) }

    static let configuration = CommandConfiguration(
        commandName: "logdemo",
        abstract: "Emits varied logs and real HTTP calls, streamed to `chirp logs` viewers.",
        discussion: """
            Prints one line on standard output when it is ready (here on two):
              logdemo NAME: streaming logs on port PORT (_SERVICE._tcp),
              HTTP demo server on 127.0.0.1:PORT

            EXIT STATUS
              0   --duration elapsed
              1   any other failure (e.g. the port or the spool could not be opened)
              64  bad input: an invalid option, name, service type or secret
              69  no DNS-SD daemon answers (start avahi-daemon): viewers could not
                  find it

            EXAMPLES
              logdemo --name shop --rate 20
              logdemo --name shop --spool /tmp/shop-spool
                (records survive a crash until a viewer has them)
              logdemo --name shop --secret-file ~/.shop-secret
                (only viewers with the same secret get the logs)
            """,
        version: ToolVersion.current)

    @Option(help: "The app name viewers see.")
    var name: String = "logdemo"

    @Option(help: "Log records per second.")
    var rate: Double = 20

    @Option(help: "Seconds between HTTP calls to the demo server (0: none).")
    var httpInterval: Double = 0.5

    @Flag(help: "Only numbered 'tick N' records at info level, no HTTP calls (for tests and benchmarks).")
    var plain = false

    @Flag(
        help: "Also log, every 50 records, one whose message and label are HTML markup: viewers must show it as text.")
    var markupSample = false

    @Option(help: "Stop logging after this many records (keeps serving viewers).")
    var count: Int?

    @Option(help: "Exit after this many seconds.")
    var duration: Double?

    @Option(
        help: ArgumentHelp(
            "Keep unacknowledged records in this directory across crashes and restarts.", valueName: "dir"))
    var spool: String?

    @Option(help: "Records of history for late viewers.")
    var history: Int = 1000

    @Option(help: "Records kept in memory.")
    var buffer: Int = 16_384

    @Option(help: ArgumentHelp("Advanced: the service type to advertise.", valueName: "type"))
    var service: String = LogSourceConfiguration.defaultServiceType

    @Option(help: ArgumentHelp("Network interface (lo: this machine only).", valueName: "name"))
    var interface: String?

    @Option(help: "TCP port for viewers (0: any free port).")
    var port: Int = 0

    @Flag(help: "Also print the logs on standard error.")
    var echo = false

    /// `--secret-file PATH` or `CHIRP_SECRET`: viewers need the same secret. `--secret VALUE` is refused.
    @OptionGroup(title: "Security") var secret: SecretOptions

    func validate() throws {
        if let problem = PeerName.problem(with: name) { throw ValidationError("--name: \(problem)") }
        do {
            _ = try ServiceType(service)
        } catch {
            throw ValidationError("--service: \(error)")
        }
        guard rate.isFinite, rate > 0, rate <= 1_000_000 else {
            throw ValidationError("--rate must be greater than 0 and at most 1000000 records a second, got \(rate)")
        }
        guard httpInterval.isFinite, (0...3600).contains(httpInterval) else {
            throw ValidationError("--http-interval must be 0 (no calls) to 3600 seconds, got \(httpInterval)")
        }
        if let duration, !(duration.isFinite && duration > 0 && duration <= 31_536_000) {
            throw ValidationError(
                "--duration must be greater than 0 and at most 31536000 seconds (a year), got \(duration)")
        }
        if let count, count < 0 { throw ValidationError("--count cannot be negative, got \(count)") }
        guard (1...LogSourceConfiguration.maximumBufferCapacity).contains(buffer) else {
            throw ValidationError(
                "--buffer must be 1 to \(LogSourceConfiguration.maximumBufferCapacity) records, got \(buffer)")
        }
        guard history >= 0 else { throw ValidationError("--history cannot be negative, got \(history)") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535, got \(port)") }
    }

    func run() async throws {
        var configuration = LogSourceConfiguration(appName: name)
        configuration.serviceType = service
        configuration.history = history
        configuration.bufferCapacity = buffer
        configuration.logLevel = .trace
        configuration.transceiver.port = port
        if let interface { configuration.transceiver.interface = interface == "lo" ? .loopback : .named(interface) }
        if let spool { configuration.spool = LogSpoolConfiguration(directory: spool) }
        configuration.security = try secret.security()
        let logs = try LogSource(configuration: configuration)
        let events = logs.transceiver.makeEvents()
        let echo = echo
        LoggingSystem.bootstrap { label in
            var handlers: [any LogHandler] = [logs.handler(label: label)]
            if echo {
                var stderr = StreamLogHandler.standardError(label: label)
                stderr.logLevel = .info
                handlers.append(stderr)
            }
            return MultiplexLogHandler(handlers)
        }
        try await logs.start()

        let server = try await DemoHTTPServer.start(group: MultiThreadedEventLoopGroup.singleton)
        let protection = secret.source().map { ", shared secret from \($0)" } ?? ""
        let banner =
            "logdemo \(name): streaming logs on port \(logs.port ?? 0) (_\(service)._tcp\(protection)), HTTP demo server on 127.0.0.1:\(server.port)\n"
        FileHandle.standardOutput.write(Data(banner.utf8))

        let session = URLSession(configuration: logs.capturingHTTP(.ephemeral))
        let base = "http://127.0.0.1:\(server.port)"
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await Self.watchDiscovery(events) }
                group.addTask { try await emitLogs() }
                if !plain && httpInterval > 0 {
                    group.addTask { await callServer(session: session, base: base) }
                }
                if let duration {
                    group.addTask { try await Task.sleep(for: .milliseconds(Int(duration * 1000))) }
                    try await group.next()
                    group.cancelAll()
                } else {
                    while try await group.next() != nil {}  // until a task throws (waitForAll() would wait for all)
                }
            }
        } catch let error as NoDaemon {
            try? await server.channel.close()
            await logs.stop()
            StandardStreams.error(DNSSDDaemon.unavailableMessage(error.detail), hint: DNSSDDaemon.hint)
            throw ExitCode(DNSSDDaemon.exitStatus)
        }
        try? await server.channel.close()
        await logs.stop()
    }

    /// No DNS-SD daemon answered before the app was advertised: `chirp logs` could not find it.
    struct NoDaemon: Error {
        var detail: String
    }

    /// Throws ``NoDaemon`` when no DNS-SD daemon answers before the app is advertised; otherwise reads the events
    /// until they end (a daemon that goes away later is waited for: the library keeps retrying).
    static func watchDiscovery(_ events: AsyncStream<TransceiverEvent>) async throws {
        var advertised = false
        for await event in events {
            switch event {
            case .advertised: advertised = true
            case .discoveryUnavailable(let detail) where !advertised: throw NoDaemon(detail: detail)
            default: break
            }
        }
    }

    /// Logs `rate` records per second, in ticks of 10 ms.
    func emitLogs() async throws {
        let loggers = ["demo.orders", "demo.cache", "demo.payments", "demo.auth"].map { Logger(label: $0) }
        let plainLogger = Logger(label: "demo.ticks")
        let markupLogger = Logger(label: "<b>demo.markup</b>")
        let clock = ContinuousClock()
        let start = clock.now
        var emitted = 0
        while !Task.isCancelled {
            if let count, emitted >= count {
                try await Task.sleep(for: .seconds(3600))
                continue
            }
            let elapsed = clock.now - start
            let due =
                Int(rate * (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)) + 1
            var target = max(due, emitted)
            if let count { target = min(target, count) }
            while emitted < target {
                emitted += 1
                if markupSample && emitted % 50 == 1 {
                    markupLogger.warning(
                        #"<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> markup from an app"#)
                }
                if plain {
                    plainLogger.info("tick \(emitted)", metadata: ["n": "\(emitted)"])
                } else {
                    DemoRecords.log(emitted, loggers: loggers)
                }
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Calls the demo server in a cycle of scenarios.
    func callServer(session: URLSession, base: String) async {
        let logger = Logger(label: "demo.client")
        var step = 0
        while !Task.isCancelled {
            let scenario = DemoRecords.scenarios[step % DemoRecords.scenarios.count]
            step += 1
            guard let url = URL(string: base + scenario.path) else { continue }
            var request = URLRequest(url: url)
            request.httpMethod = scenario.method
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            if scenario.authorized {
                request.setValue("Bearer demo-secret-token-42", forHTTPHeaderField: "Authorization")
            }
            if let body = scenario.body {
                request.httpBody = Data(body.utf8)
                request.setValue("application/json; charset=utf-8", forHTTPHeaderField: "Content-Type")
            }
            do {
                let (_, response) = try await session.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                logger.debug("called \(scenario.method) \(scenario.path)", metadata: ["status": "\(status)"])
            } catch {
                logger.error("call failed", metadata: ["path": "\(scenario.path)", "error": "\(error)"])
            }
            try? await Task.sleep(for: .milliseconds(Int(httpInterval * 1000)))
        }
    }
}
