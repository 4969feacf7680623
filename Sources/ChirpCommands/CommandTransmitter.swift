import Chirp
import Foundation
import Logging

/// The CLI side of the command channel: finds the app, sends it one command, and returns its reply.
///
/// ```swift
/// var configuration = Configuration(serviceType: "listrctl")
/// configuration.interface = .loopback
/// let transmitter = CommandTransmitter(configuration: configuration, timeout: .seconds(5))
/// let reply = try await transmitter.send(AddItem(title: "milk"))
/// if case .text(let text) = reply.response { print(text) }
/// ```
///
/// Each call joins the service with a transceiver of its own, waits for the app(s) to connect (see the settle window
/// in Docs/Commands.md), sends, waits for the reply and leaves. `timeout` bounds the whole call: finding the app and
/// its reply. A connection that drops while a command is in flight is noticed at once, not at the timeout: the command
/// is sent again on the app's next connection when that is safe (see ``ChirpCommand``), else it fails with
/// ``CommandError/connectionLost(app:peer:detail:)``, whose detail says whether the app may have run it.
public struct CommandTransmitter: Sendable {
    /// The transceiver settings: service type, interface, security (the shared secret), logger, message size limit. The
    /// peer name, id and `Configuration.advertises` `= false` are set for each call: a CLI only dials, so it is a
    /// `Peer.Role.tool` to the apps (they answer it, but leave it out of their peers, events and broadcasts), and no
    /// registration costs the daemon's probing.
    public var configuration: Configuration
    /// The longest a call takes: to find the app(s) and to get the reply. Default: 10 s.
    public var timeout: Duration
    /// A fixed settle window instead of the adaptive one (see Docs/Commands.md). Default: `nil`, adaptive.
    public var settleWindow: Duration?

    /// Creates a transmitter.
    public init(configuration: Configuration, timeout: Duration = .seconds(10), settleWindow: Duration? = nil) {
        self.configuration = configuration
        self.timeout = timeout
        self.settleWindow = settleWindow
    }

    /// Sends `command` to one app and returns its reply.
    ///
    /// - Parameters:
    ///   - command: the command; its type's name says which handler of the app runs it.
    ///   - peerName: the app's name, its full peer id, or the start of its id (4 characters or more, any case);
    ///     `nil` for the only app of the service.
    /// - Returns: the reply; a `CommandResponse.failure(_:)` response when the app reported a failure.
    /// - Throws: ``CommandError``: no app found in time, several apps and no name (or a name that several apps
    ///   share), no DNS-SD daemon, every app found refused this CLI
    ///   (``CommandError/Code/refused``: a shared secret missing or wrong, an accept policy; reported
    ///   about a second after discovery, not at the timeout), the connection lost, no reply in time, or a local
    ///   problem.
    public func send<C: ChirpCommand>(_ command: C, to peerName: String? = nil) async throws(CommandError)
        -> CommandReply
    {
        let target: AppFinder.Target = peerName.map { .named($0) } ?? .only
        do {
            return try await withSession { session in
                let app = try await session.find(target)
                let result = await session.exchange(command, with: app)
                return CommandReply(app: app, response: try result.get())
            }
        } catch let error as CommandError {
            throw error
        } catch {
            throw .local("\(error)", cause: error)
        }
    }

    /// Sends `command` to every app of the service found before discovery settles (and within the timeout), and
    /// returns what became of each, sorted by app name.
    ///
    /// Apps that refused this CLI are reported as outcomes with ``CommandError/Code/refused``.
    ///
    /// - Parameter command: the command, sent to each app.
    /// - Throws: ``CommandError`` with ``CommandError/Code/noApp`` when none is found, ``CommandError/Code/refused``
    ///   when every app found refused, or ``CommandError/Code/local`` for a local problem.
    public func sendToAll<C: ChirpCommand>(_ command: C) async throws(CommandError) -> [CommandOutcome] {
        do {
            return try await withSession { session in try await session.broadcast(command) }
        } catch let error as CommandError {
            throw error
        } catch {
            throw .local("\(error)", cause: error)
        }
    }

    /// Runs `body` with a started session, and stops its transceiver whatever happens.
    private func withSession<T: Sendable>(_ body: (CommandSession) async throws -> T) async throws -> T {
        var configuration = self.configuration
        configuration.peerID = UUID().uuidString
        if configuration.peerName == Configuration.defaultPeerName {
            let tool = (CommandLine.arguments.first as NSString?)?.lastPathComponent ?? "cli"
            configuration.peerName = "\(tool)-\(ProcessInfo.processInfo.processIdentifier)"
        }
        configuration.advertises = false
        let session = CommandSession(
            transceiver: Transceiver(configuration: configuration), timeout: timeout, settleWindow: settleWindow)
        do {
            try await session.start()
            let result = try await body(session)
            await session.transceiver.shutdown()
            return result
        } catch {
            await session.transceiver.shutdown()
            if let error = error as? ChirpError { throw CommandError.local(error.description, cause: error) }
            throw error
        }
    }
}
