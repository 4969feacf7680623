import Chirp
import Foundation

#if os(Linux)
/// The small message of the throughput figures: about 70 bytes of JSON.
struct Small: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "bench.small"
    var seq: Int
    var from: String
    var text: String
    var urgent: Bool

    static func sample(_ seq: Int) -> Small {
        Small(seq: 100_000 + seq % 900_000, from: "bench-main", text: "quick brown fox", urgent: false)
    }
}

/// The request of the round-trip figure (about 70 bytes of JSON), and its answer (about as long).
struct Query: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "bench.query"
    var seq: Int
    var from: String
    var text: String
    var urgent: Bool
}

struct Answer: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "bench.answer"
    var seq: Int
    var from: String
    var text: String
    var done: Bool
}

/// Sent before a burst: the sink counts `count` messages from now on, then answers with an ``Ack``.
struct Start: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "bench.start"
    var count: Int
}

/// A sink's answer to a burst: how many messages and payload bytes it received, and the CPU time and read system
/// calls it used meanwhile.
struct Ack: Codable, Sendable, ChirpMessage {
    static let chirpTypeName = "bench.ack"
    var count: Int
    var bytes: Int
    var cpuNanos: UInt64
    /// Read system calls (recvmsg, read, ...) the sink made meanwhile.
    var readSyscalls: UInt64
}

/// The shared secret of the `-secret` figures (a benchmark's own, on a fresh service type over loopback).
let benchSecret = "chirp-bench: a shared secret for the benchmarks"

extension Configuration {
    /// The configuration every benchmark transceiver uses: loopback, logging off. With `CHIRP_BENCH_PROFILE=1`
    /// (set when running under valgrind, which slows everything down some 50 times) the timers are relaxed so that
    /// heartbeats and handshakes do not time out.
    ///
    /// With `secure`, the peers share ``benchSecret`` (TLS 1.2 with a pre-shared key, as `Docs/Security.md` describes).
    static func bench(serviceType: String, name: String, secure: Bool = false) throws -> Configuration {
        var configuration = Configuration(serviceType: serviceType)
        configuration.interface = .loopback
        configuration.peerName = name
        configuration.logger = PeerRoles.quietLogger
        if secure { configuration.security = .sharedSecret(try SharedSecret(benchSecret)) }
        if ProcessInfo.processInfo.environment["CHIRP_BENCH_PROFILE"] == "1" {
            configuration.heartbeatInterval = .seconds(5)
            configuration.heartbeatTimeout = .seconds(120)
            configuration.handshakeTimeout = .seconds(60)
            configuration.connectTimeout = .seconds(60)
            configuration.requestTimeout = .seconds(120)
        }
        return configuration
    }
}
#endif
