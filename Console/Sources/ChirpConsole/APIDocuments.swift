import ChirpLogs
import Foundation
import Logging

/// The JSON documents of the console's API (Docs/Console.md). Every string in them is the sources' text as it came:
/// the page renders it as text, never as markup.
enum APIDocuments {
    struct Record: Encodable {
        var id: Int64
        var source: String
        var sequence: UInt64
        var time: String
        var level: String
        var label: String
        var message: String
        var metadata: JSONValue
        var app: String
        var host: String
        var pid: Int32
        var file: String
        var function: String
        var line: UInt
        var http: StoredExchange?

        init(_ stored: ConsoleRecord) {
            let record = stored.record
            id = stored.id
            source = stored.stream
            sequence = record.sequence
            time = APIDocuments.timeText(record.timestamp)
            level = record.level.rawValue
            label = record.label
            message = record.message
            metadata = .metadata(record.metadata)
            app = record.appName
            host = record.host
            pid = record.processID
            file = record.file
            function = record.function
            line = record.line
            http = record.http.map(StoredExchange.init).map { exchange in
                var exchange = exchange
                exchange.duration = APIDocuments.rounded(exchange.duration, places: 6)  // s, to the microsecond
                exchange.startTime = APIDocuments.rounded(exchange.startTime, places: 6)
                return exchange
            }
        }
    }

    struct Records: Encodable {
        var records: [Record]
        var hasMore: Bool
    }

    struct Source: Encodable {
        var id: String
        var app: String
        var host: String
        var pid: Int32
        var live: Bool
        var records: Int
        var lost: Int
        var lastSequence: UInt64
        var firstSeen: String
        var lastSeen: String
        /// The source's device fingerprint in full (`chirp:...`), when it uses a device identity; absent otherwise.
        var fingerprint: String?
        /// With a fingerprint: whether the console trusts the source (its viewer follows it with its device identity:
        /// `true`; a refusal either way: `false`); absent without a fingerprint or before either happened.
        var trusted: Bool?
    }

    struct Sources: Encodable {
        var sources: [Source]
        /// What the collector is waiting for, if anything (no DNS-SD daemon, a refusal).
        var problem: String?
    }

    struct Endpoint: Encodable {
        var method: String
        var host: String?
        var path: String
        var count: Int
        var errors: Int
        var errorRate: Double
        var p50: Double
        var p90: Double
        var p99: Double
    }

    struct Endpoints: Encodable {
        var endpoints: [Endpoint]
    }

    struct Services: Encodable {
        var services: [String]
    }

    struct PeerEntry: Encodable {
        var name: String
        var id: String?
        var host: String
        var addresses: [String]
        var metadata: [String: String]
        var requiresSecret: Bool
        var connected: Bool
        /// The device fingerprint the instance advertises (TXT `sec=id`, `fp`), in full; absent without one.
        var fingerprint: String?
        /// With a fingerprint: whether the console trusts the instance, when it is a log source the console's viewer
        /// followed (`true`) or was refused by or refused (`false`); absent otherwise.
        var trusted: Bool?
    }

    struct Peers: Encodable {
        var service: String
        var peers: [PeerEntry]
    }

    struct Status: Encodable {
        var records: Int64
        var storedBytes: Int
        var removedRecords: Int
        var removedBytes: Int
        var problem: String?
    }

    struct Failure: Encodable {
        var error: String
    }

    static func timeText(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// The sources document: what the store holds of each source, whether it is followed now (`live`), and the
    /// console's trust in those with a fingerprint (`trust`, per stream).
    static func sources(
        _ stored: [ConsoleSource], live: Set<String>, trust: [String: SourceTrust] = [:], problem: String?
    ) -> Sources {
        Sources(
            sources: stored.map { source in
                Source(
                    id: source.stream, app: source.app, host: source.host, pid: source.pid,
                    live: live.contains(source.stream),
                    records: source.records, lost: source.lost, lastSequence: source.lastSequence,
                    firstSeen: timeText(source.firstSeen), lastSeen: timeText(source.lastSeen),
                    fingerprint: source.fingerprint?.description,
                    trusted: source.fingerprint == nil ? nil : trust[source.stream]?.isTrusted)
            }, problem: problem)
    }

    static func endpoints(_ endpoints: [ConsoleEndpoint]) -> Endpoints {
        Endpoints(
            endpoints: endpoints.map { endpoint in
                Endpoint(
                    method: endpoint.method, host: endpoint.host, path: endpoint.path, count: endpoint.count,
                    errors: endpoint.errors,
                    errorRate: rounded(
                        endpoint.count == 0 ? 0 : Double(endpoint.errors) / Double(endpoint.count), places: 4),
                    p50: rounded(endpoint.p50, places: 3), p90: rounded(endpoint.p90, places: 3),
                    p99: rounded(endpoint.p99, places: 3))
            })
    }

    /// `value` rounded to `places` decimals, so that the JSON says `1.589`, not `1.5893229999999998`: durations in
    /// milliseconds and seconds to the microsecond, rates to 4 decimals. Not a finite number: as it is.
    static func rounded(_ value: Double, places: Int) -> Double {
        guard value.isFinite else { return value }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let result = (value * scale).rounded() / scale
        return result.isFinite ? result : value
    }

    /// The encoder of every document: sorted keys, `/` not escaped.
    static func encode<T: Encodable>(_ document: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(document)
    }
}

/// Query strings as browsers write them (`application/x-www-form-urlencoded`: `+` for a space, percent escapes).
enum QueryString {
    /// The parameters of `query` (the part after `?`); a name given twice keeps its last value.
    static func parse(_ query: String?) -> [String: String] {
        guard let query, !query.isEmpty else { return [:] }
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            parameters[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return parameters
    }
}
