// listr: a to-do list app that keeps its items in a JSON file and can be driven from a terminal with listrctl.
//
//     listr --store ~/todo.json --name kitchen      # keeps running; Ctrl-C to stop
//     listrctl item add "buy milk"                   # from another terminal, or another host
import ArgumentParser
import Chirp
import ChirpCommands
import ListrCommands
import Logging

@main
struct Listr: AsyncParsableCommand {
    static func main() async { await CommandLineTool.main(Self.self) }

    static let configuration = CommandConfiguration(
        abstract: "A to-do list app, driven from the terminal with listrctl.",
        discussion: """
            Keeps its items in a JSON file (--store): a missing file is an empty list; a file that is not a valid \
            store is refused at start, and never overwritten. Every change is written atomically before it is \
            answered. Serves listrctl's commands on the DNS-SD service type --service; several listr instances \
            are told apart by --name. Logs what it does on standard error. Stops on SIGINT or SIGTERM.

            EXAMPLES
              listr --store todo.json --name kitchen
              listr --store /tmp/test.json --name test --service listr-test --loopback
              listr --store todo.json --secret-file ~/.listr-secret
                (listrctl then needs the same secret)

            Without a shared secret (the CHIRP_SECRET environment variable, or --secret-file), anyone who can \
            reach this host can run the commands: use one, or --loopback. See Docs/Security.md.
            """)

    @Option(help: ArgumentHelp("The JSON file the items are kept in.", valueName: "PATH"))
    var store: String = "listr.json"

    @Option(help: ArgumentHelp("The name listrctl knows this instance by (--peer).", valueName: "NAME"))
    var name: String = Configuration.defaultPeerName

    @Option(help: ArgumentHelp("The DNS-SD service type to serve commands on.", valueName: "TYPE"))
    var service: String = ListrChannel.defaultServiceType

    @Flag(help: "Accept commands from this machine only (advertise and listen on the loopback interface).")
    var loopback = false

    @OptionGroup(title: "Security")
    var secret: SecretOptions

    @Option(help: "Log level on standard error: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Flag(help: .hidden)
    var enableDebugCommands = false

    func validate() throws {
        do { _ = try ServiceType(service) } catch { throw ValidationError("--service: \(error)") }
        if store.isEmpty { throw ValidationError("--store needs a path") }
    }

    func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger: Logger = {
            var logger = Logger(label: "listr")
            logger[metadataKey: "name"] = "\(name)"
            return logger
        }()

        let todo: TodoStore
        do {
            todo = try TodoStore(path: store)
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode.failure
        }

        var configuration = Configuration(serviceType: service)
        configuration.peerName = name
        configuration.interface = loopback ? .loopback : .any
        configuration.logger = logger
        configuration.security = try secret.security()
        if let source = secret.source() { logger.info("requiring a shared secret (from \(source))") }
        let transceiver = Transceiver(configuration: configuration)
        let receiver = CommandReceiver(transceiver: transceiver, logger: logger)
        try ListrService.register(on: receiver, store: todo, logger: logger, debugCommands: enableDebugCommands)

        let events = transceiver.makeEvents()
        let signals = TerminationSignals.stream()
        try await transceiver.start()
        let path = store
        let serviceType = service
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    if case .advertised = event {
                        let count = await todo.items.count
                        logger.info("ready: serving \(count) items from \(path) on service \(serviceType)")
                    }
                }
            }
            for await signal in signals {
                logger.info("stopping (signal \(signal))")
                break
            }
            group.cancelAll()
        }
        await transceiver.shutdown()
    }
}

// swift-format-ignore: AvoidRetroactiveConformances
// --log-level takes swift-log's levels; neither package declares this conformance, so the app does.
extension Logger.Level: @retroactive ExpressibleByArgument {}
