import Chirp
import ChirpLogs
import Foundation
import Testing

@testable import ChirpConsole

/// The API's JSON documents as a browser or a script reads them.
@Suite(.timeLimit(.minutes(1))) struct APIDocumentsTests {
    static func object<T: Encodable>(_ document: T) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: APIDocuments.encode(document)) as? [String: Any])
    }

    @Test func durationsAndRatesAreRoundedNotPrintedWithEveryBinaryDigit() throws {
        let endpoint = ConsoleEndpoint(
            method: "GET", host: "shop.local", path: "/items", count: 3, errors: 1, p50: 1.5893229999999998,
            p90: 12.000000000000002, p99: 250)
        let endpoints = try Self.object(APIDocuments.endpoints([endpoint]))["endpoints"] as? [[String: Any]]
        let first = try #require(endpoints?.first)
        // Milliseconds to the microsecond, the error rate to 4 decimals: the JSON says 1.589, not 1.5893229999999998
        // (the shortest text of the number nearest 1.589 is "1.589").
        #expect(first["p50"] as? Double == 1.589, "\(first)")
        #expect(first["p90"] as? Double == 12, "\(first)")
        #expect(first["p99"] as? Double == 250, "\(first)")
        #expect(first["errorRate"] as? Double == 0.3333, "\(first)")

        let exchange = HTTPExchange(
            method: "GET", url: "http://shop.local/items", status: 200,
            startTime: Date(timeIntervalSince1970: 1_764_000_000.123_456_7), duration: 0.001_589_322_999_999_999_8)
        let record = LogRecord(
            sequence: 1, timestamp: Date(timeIntervalSince1970: 1_764_000_000), level: .info, label: "http",
            message: "GET", appName: "shop", host: "alpha", processID: 1, http: exchange)
        let http = try #require(
            try Self.object(APIDocuments.Record(ConsoleRecord(id: 1, stream: "s", record: record)))["http"]
                as? [String: Any])
        // Seconds to the microsecond.
        #expect(http["duration"] as? Double == 0.001589, "\(http)")
        #expect(http["startTime"] as? Double == 1_764_000_000.123457, "\(http)")
    }

    @Test func roundingKeepsWhatIsNotANumberAsItIs() {
        #expect(APIDocuments.rounded(.infinity, places: 3) == .infinity)
        #expect(APIDocuments.rounded(.nan, places: 3).isNaN)
        #expect(APIDocuments.rounded(1e305, places: 6) == 1e305)  // too large to scale: as it is
        #expect(APIDocuments.rounded(-0.0004, places: 3) == 0)
    }

    @Test func aSourceShowsItsFingerprintAndTrustOnlyWhenItUsesADeviceIdentity() throws {
        let fingerprint = Fingerprint(spki: Array("a key".utf8))
        let time = Date(timeIntervalSince1970: 1_800_000_000)
        func source(_ stream: String, _ fingerprint: Fingerprint?) -> ConsoleSource {
            ConsoleSource(
                stream: stream, app: "a", host: "h", pid: 1, firstSeen: time, lastSeen: time, lastSequence: 1,
                records: 1, lost: 0, fingerprint: fingerprint)
        }
        let document = APIDocuments.sources(
            [
                source("trusted", fingerprint), source("refused", fingerprint), source("unknown", fingerprint),
                source("open", nil)
            ],
            live: ["trusted"], trust: ["trusted": .trusted, "refused": .notTrusted, "open": .trusted], problem: nil)
        let sources = try #require(try Self.object(document)["sources"] as? [[String: Any]])
        let byID = Dictionary(uniqueKeysWithValues: sources.map { ($0["id"] as? String ?? "", $0) })
        #expect(byID["trusted"]?["fingerprint"] as? String == fingerprint.description)
        #expect(byID["trusted"]?["trusted"] as? Bool == true)
        #expect(byID["refused"]?["trusted"] as? Bool == false)
        // A fingerprint without a verdict yet: the fingerprint alone.
        #expect(byID["unknown"]?["fingerprint"] as? String == fingerprint.description)
        #expect(byID["unknown"]?["trusted"] == nil)
        // Without a fingerprint, neither key, whatever the collector holds.
        #expect(byID["open"]?["fingerprint"] == nil && byID["open"]?["trusted"] == nil, "\(byID["open"] ?? [:])")
    }
}
