import Chirp
import Foundation
import Logging

/// The command line of `chirp-load`: a role, then `--flag value` pairs.
struct Options {
    var role: String
    var values: [String: String] = [:]

    static let usage = """
        usage: chirp-load ROLE [options]
          chirp-load sender   --service T --receivers K [--seconds 60] [--window 4096] [--interface lo|any|IF]
                              [--connect-timeout 120] [--report-timeout 60] [--name sender] [--label TEXT]
          chirp-load receiver --service T [--name recv-1] [--ack-every 256] [--timeout 600] [--interface ...] [--label TEXT]
          chirp-load mesh     --service T --expect N [--count 1] [--name peer-1] [--timeout 600] [--interface ...]
                              [--label TEXT]
        Every role also takes --log-level (trace|debug|info|notice|warning|error|critical; the library's own logs, on
        stderr; the default is the role's own, or the CHIRP_LOAD_LOG_LEVEL environment variable when set).
        Every process prints a human summary on stderr and one JSON summary line on stdout when it ends;
        the mesh role also prints a JSON status line each second. SIGTERM or SIGINT ends a role early (with its summary).
        """

    init(_ arguments: [String]) throws {
        guard let role = arguments.first, !role.hasPrefix("-") else { throw LoadError(Self.usage) }
        self.role = role
        var index = 1
        while index < arguments.count {
            let flag = arguments[index]
            guard flag.hasPrefix("--"), index + 1 < arguments.count else {
                throw LoadError("expected --flag value at '\(flag)'\n\(Self.usage)")
            }
            values[String(flag.dropFirst(2))] = arguments[index + 1]
            index += 2
        }
    }

    func string(_ key: String, default fallback: String? = nil) throws -> String {
        if let value = values[key] { return value }
        if let fallback { return fallback }
        throw LoadError("--\(key) is required\n\(Self.usage)")
    }

    func int(_ key: String, default fallback: Int? = nil) throws -> Int {
        guard let text = values[key] else {
            if let fallback { return fallback }
            throw LoadError("--\(key) is required\n\(Self.usage)")
        }
        guard let value = Int(text), value >= 0 else { throw LoadError("--\(key) needs a whole number, not '\(text)'") }
        return value
    }

    func double(_ key: String, default fallback: Double) throws -> Double {
        guard let text = values[key] else { return fallback }
        guard let value = Double(text), value > 0 else {
            throw LoadError("--\(key) needs a positive number, not '\(text)'")
        }
        return value
    }

    /// The level of the library's logs: `--log-level`, else `CHIRP_LOAD_LOG_LEVEL`, else the role's `fallback`.
    func logLevel(default fallback: Logger.Level) throws -> Logger.Level {
        guard let text = values["log-level"] ?? ProcessInfo.processInfo.environment["CHIRP_LOAD_LOG_LEVEL"],
            !text.isEmpty
        else { return fallback }
        guard let level = Logger.Level(rawValue: text) else {
            throw LoadError(
                "--log-level needs one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not '\(text)'"
            )
        }
        return level
    }

    /// `lo` (the default: loopback only), `any`, or an interface name.
    var interface: Configuration.Interface {
        switch values["interface"] ?? "lo" {
        case "lo", "loopback": return .loopback
        case "any": return .any
        case let name: return .named(name)
        }
    }

    /// Free text copied into the summaries (the runner passes the host's name).
    var label: String { values["label"] ?? "" }
}

/// A usage or run failure, printed on stderr.
struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
