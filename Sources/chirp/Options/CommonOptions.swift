import ArgumentParser
import Chirp
import ChirpCommands
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Options every subcommand takes: how long to wait, on which interface, how much to log.
struct CommonOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long to wait before giving up.",
            discussion: """
                What is waited for depends on the command: a peer, then its reply (send, ping; default 10); results \
                (browse --once; default 3); sources (logs --no-follow; default 3); the end of the run (browse, \
                listen, logs; default: run until interrupted).
                """,
            valueName: "seconds"))
    var timeout: Double?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The network interface to advertise, browse and listen on.",
            discussion: "'lo' keeps everything on this machine (loopback only); 'any' uses every interface.",
            valueName: "name"))
    var interface: String = "any"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How much the Chirp library logs on standard error.",
            valueName: "level"))
    var logLevel: LogLevel = .off

    func validate() throws {
        if let timeout, !(timeout > 0 && timeout.isFinite && timeout <= 86_400) {
            throw ValidationError(
                "--timeout must be greater than 0 and at most 86400 seconds, got \(formatSeconds(timeout))")
        }
        if interface != "any" && interface != "lo" {
            guard if_nametoindex(interface) != 0 else {
                throw ValidationError("no network interface named '\(interface)' (see `ip link`); use 'lo' or 'any'")
            }
        }
    }

    /// The interface as the core names it.
    var chirpInterface: Configuration.Interface {
        switch interface {
        case "any": return .any
        case "lo": return .loopback
        default: return .named(interface)
        }
    }

    /// `--interface` when it names one interface (not `any`).
    var namedInterface: String? { interface == "any" ? nil : interface }

    /// Warns on standard error when the interface named with `--interface` is down or has no address: nothing can be
    /// found or advertised on it (the command still runs: it may come up).
    func warnIfInterfaceIsUnusable() {
        guard let name = namedInterface, let problem = InterfaceDiagnosis.problem(with: name) else { return }
        Terminal.warning("\(problem): no peer can be found or reached on it")
    }

    /// `--timeout`, or `fallback` seconds when it was not given.
    func timeout(default fallback: Double) -> Duration {
        .milliseconds(Int64(((timeout ?? fallback) * 1000).rounded()))
    }

    /// Sets up logging to standard error at `--log-level` and returns the logger to hand to the library.
    func makeLogger() -> Logger {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            guard let level = level.level else { return SwiftLogNoOpLogHandler() }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "chirp")
    }
}

/// `--log-level` values: swift-log's levels plus `off`.
enum LogLevel: String, CaseIterable, ExpressibleByArgument, Sendable {
    case off, trace, debug, info, notice, warning, error, critical

    var level: Logger.Level? {
        self == .off ? nil : Logger.Level(rawValue: rawValue)
    }
}

/// Checks a service-type argument with the core's RFC 6763 rules, and returns it in lower case: DNS-SD service types
/// are case-insensitive (`chirp send CHAT` finds the peers `chirp browse CHAT` lists), while a Chirp hello names the
/// type exactly, so every command uses one spelling, the usual lower-case one.
func validateServiceType(_ type: String) throws -> ServiceType {
    do {
        _ = try ServiceType(type)  // the error quotes what was typed
        return try ServiceType(type.lowercased())
    } catch let error as ChirpError {
        throw ValidationError(error.description)
    }
}
