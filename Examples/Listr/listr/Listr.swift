// listr: a to-do list app that keeps its items in a JSON file and can be driven from a terminal with listrctl.
//
//     listr --store ~/todo.json --name kitchen      # keeps running; Ctrl-C to stop
//     listrctl item add "buy milk"                   # from another terminal, or another host
import ArgumentParser
import Chirp
import ChirpCommands
import Foundation
import ListrCommands
import Logging

@main
struct Listr: AsyncParsableCommand {
    static func main() async { await CommandLineTool.main(Self.self) }

    static let configuration = CommandConfiguration(
        abstract: "A to-do list app, driven from the terminal with listrctl.",
        discussion: """
            Keeps its items in a JSON file (--store): a missing file is an empty list (its directory must exist); \
            a file that is not a valid store is refused at start, and never overwritten. Every change is written \
            atomically before it is answered. While it runs, listr holds a lock on the store (the file \
            .todo.json.lock beside todo.json): a second listr on the same store refuses to start. Serves listrctl's commands \
            on the DNS-SD service type --service; several listr instances are told apart by --name (and by their \
            ids, which listrctl shows, when two share a name: a listr warns when it finds another of its name). \
            Logs what it does on standard error. Stops on SIGINT or SIGTERM.

            EXIT STATUS
              0   stopped by SIGINT or SIGTERM
              1   the store cannot be used (not a valid store, unreadable, in use by
                  another listr) or the port could not be opened
              64  bad input: an invalid option, service type, name or secret, or a
                  --store whose directory does not exist
              69  no DNS-SD daemon answers (start avahi-daemon)

            EXAMPLES
              listr --store todo.json --name kitchen
              listr --store /tmp/test.json --name test --service listr-test --loopback
              listr --store todo.json --secret-file ~/.listr-secret
                (listrctl then needs the same secret)
              listr --store todo.json --identity listr
                (accepts only the devices it trusts: chirp trust add FINGERPRINT
                LABEL --identity listr --perms read; item list and store dump need
                read, store replace admin, the other commands write)

            Without a shared secret (the CHIRP_SECRET environment variable, or --secret-file), anyone who can \
            reach this host can run the commands: use one, or --loopback. See Docs/Security.md.
            """,
        version: ToolVersion.current)

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

    @Flag(
        help: ArgumentHelp(
            "Take pairing requests (listrctl pair --identity NAME): each shows a code here and asks on standard input.",
            discussion: "Needs --identity. Answer y only when listrctl shows the same code: a paired device is "
                + "added to this identity's trusted-peers file with --pair-permissions."))
    var allowPairing = false

    @Option(
        help: ArgumentHelp(
            "What a device paired here may do: read, write, logs, admin, comma-separated.", valueName: "LIST"))
    var pairPermissions: String = "read,write"

    @Option(help: "Log level on standard error: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Flag(help: .hidden)
    var enableDebugCommands = false

    func validate() throws {
        do { _ = try ServiceType(service) } catch { throw ValidationError("--service: \(error)") }
        if let problem = PeerName.problem(with: name) { throw ValidationError("--name: \(problem)") }
        if store.isEmpty { throw ValidationError("--store needs a path") }
        if allowPairing, secret.identity == nil,
            (ProcessInfo.processInfo.environment[SecretOptions.identityVariable] ?? "").isEmpty
        {
            throw ValidationError("--allow-pairing needs a device identity: give --identity NAME as well")
        }
        _ = try Self.permissions(parsing: pairPermissions)
        let directory = URL(fileURLWithPath: store).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw ValidationError("--store \(store): the directory \(directory) does not exist; create it first")
        }
        guard isDirectory.boolValue else {
            throw ValidationError("--store \(store): \(directory) is not a directory")
        }
    }

    /// The permissions of `--pair-permissions`.
    static func permissions(parsing list: String) throws -> Set<Permission> {
        var permissions: Set<Permission> = []
        for word in list.split(separator: ",") {
            guard let permission = Permission(rawValue: word.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError(
                    "--pair-permissions: '\(word)' is not a permission; use read, write, logs or admin")
            }
            permissions.insert(permission)
        }
        return permissions
    }

    /// What the warning about an open command channel tells the user to do, in listr's options.
    static let openAccessRemedy = """
        Start listr with --loopback to accept commands from this machine only, or give it a shared secret with \
        the CHIRP_SECRET environment variable or --secret-file PATH (listrctl then needs the same one).
        """

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

        // The store: locked first, so that a second listr on it stops before reading what the first may change.
        let lock: StoreLock
        let todo: TodoStore
        do {
            lock = try StoreLock(storePath: store)
            todo = try TodoStore(path: store)
        } catch {
            StandardStreams.error("\(error)")
            throw ExitCode.failure
        }

        var configuration = Configuration(serviceType: service)
        configuration.peerName = name
        configuration.interface = loopback ? .loopback : .any
        configuration.logger = logger
        configuration.security = try secret.security(trust: .trustedPeers())
        switch configuration.security {
        case .identity(let identity, _):
            let trusted = "\(identity.directory)/trusted-peers (chirp trust add --identity \(identity.name))"
            logger.info(
                "using the device identity \(identity.name) (\(identity.fingerprint)): accepting the devices of \(trusted)"
            )
        case .sharedSecret:
            if let source = secret.source() { logger.info("requiring a shared secret (from \(source))") }
        case .none:
            break
        }
        if allowPairing {
            let prompt = PairingPrompt(permissions: try Self.permissions(parsing: pairPermissions))
            configuration.pairing = PairingPolicy { request in await prompt.ask(request) }
            logger.info("taking pairing requests: each is asked on standard input")
        }
        let transceiver = Transceiver(configuration: configuration)
        let receiver = CommandReceiver(
            transceiver: transceiver, logger: logger, openAccessRemedy: Self.openAccessRemedy)
        try ListrService.register(on: receiver, store: todo, logger: logger, debugCommands: enableDebugCommands)

        let events = transceiver.makeEvents()
        let signals = TerminationSignals.stream()
        try await transceiver.start()
        let path = store
        let serviceType = service
        let appName = name
        /// Why listr stops: a signal, or no DNS-SD daemon at start (its report).
        enum Stop: Sendable {
            case signal
            case noDaemon(String)
        }
        let stop: Stop? = await withTaskGroup(of: Stop?.self) { group in
            group.addTask {
                var advertised = false
                var warned: Set<String> = []
                for await event in events {
                    switch event {
                    case .advertised:
                        advertised = true
                        let count = await todo.items.count
                        logger.info("ready: serving \(count) items from \(path) on service \(serviceType)")
                    case .discoveryUnavailable(let detail) where !advertised:
                        // Nobody could find this app: say so and stop, rather than serve no one.
                        return .noDaemon(detail)
                    case .peerAdded(let peer)
                    where peer.name == appName && !peer.isCommandLineTool && warned.insert(peer.id).inserted:
                        StandardStreams.warning(
                            "another app is named '\(appName)' on service '\(serviceType)': \(peer.identifiedLabel); "
                                + "listrctl --peer \(appName) cannot choose between them: give this one another --name, "
                                + "or choose by id (listrctl --peer ID, at least its first 4 characters)")
                    default:
                        break
                    }
                }
                return nil
            }
            group.addTask {
                for await signal in signals {
                    logger.info("stopping (signal \(signal))")
                    return .signal
                }
                return nil
            }
            var stop: Stop?
            while let next = await group.next() {
                if let next {
                    stop = next
                    break
                }
            }
            group.cancelAll()
            return stop
        }
        await transceiver.shutdown()
        withExtendedLifetime(lock) {}
        if case .noDaemon(let detail) = stop {
            StandardStreams.error(DNSSDDaemon.unavailableMessage(detail), hint: DNSSDDaemon.hint)
            throw ExitCode(DNSSDDaemon.exitStatus)
        }
    }
}

// swift-format-ignore: AvoidRetroactiveConformances
// --log-level takes swift-log's levels; neither package declares this conformance, so the app does.
extension Logger.Level: @retroactive ExpressibleByArgument {}
