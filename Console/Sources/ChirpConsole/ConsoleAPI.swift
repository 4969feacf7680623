import Chirp
import ChirpLogs
import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore

/// The handlers of the JSON API and the live stream (Docs/Console.md).
struct ConsoleAPI: Sendable {
    let store: ConsoleStore
    let collector: ConsoleCollector
    let peers: PeerDirectory
    let notifier: ChangeNotifier
    let streams: NIOLockedValueBox<Int>
    let configuration: ConsoleConfiguration

    func sources() async throws -> Response {
        ConsoleHTTP.document(
            APIDocuments.sources(
                try await store.sources(), live: collector.liveStreams, trust: collector.trust,
                problem: collector.problem))
    }

    func records(_ parameters: [String: String]) async -> Response {
        await answering {
            let filter = try RecordFilter(parameters: parameters)
            let (page, limit) = try RecordPage.parse(parameters)
            let (records, hasMore) = try await store.records(matching: filter, page: page, limit: limit)
            return ConsoleHTTP.document(
                APIDocuments.Records(records: records.map(APIDocuments.Record.init), hasMore: hasMore))
        }
    }

    func endpoints(_ parameters: [String: String]) async -> Response {
        await answering {
            let filter = try RecordFilter(parameters: parameters)
            return ConsoleHTTP.document(APIDocuments.endpoints(try await store.endpoints(matching: filter)))
        }
    }

    func services() -> Response {
        var types = Set(peers.serviceTypes)
        types.insert(configuration.defaultPeerService)
        return ConsoleHTTP.document(APIDocuments.Services(services: types.sorted()))
    }

    func peers(_ parameters: [String: String]) async -> Response {
        await answering {
            let name = parameters["service"].flatMap { $0.isEmpty ? nil : $0 } ?? configuration.defaultPeerService
            let type: ServiceType
            do {
                type = try ServiceType(name)
            } catch {
                throw ConsoleRequestError("service: \(error)")
            }
            let instances = await peers.instances(of: type)
            return ConsoleHTTP.document(
                APIDocuments.Peers(
                    service: type.registrationType,
                    peers: instances.map { instance in
                        APIDocuments.PeerEntry(
                            name: instance.name, id: instance.id, host: instance.host, addresses: instance.addresses,
                            metadata: instance.metadata, requiresSecret: instance.requiresSecret, connected: false,
                            fingerprint: instance.fingerprint?.description,
                            trusted: instance.fingerprint == nil
                                ? nil : instance.id.flatMap { collector.trust(ofPeer: $0) }?.isTrusted)
                    }))
        }
    }

    func status() async -> Response {
        let (stored, removedRecords, removedBytes) = await store.statistics()
        return ConsoleHTTP.document(
            APIDocuments.Status(
                records: store.latestID, storedBytes: stored, removedRecords: removedRecords,
                removedBytes: removedBytes, problem: collector.problem))
    }

    /// Server-Sent Events: the records that match the filters as they are stored (`event: records`), the sources when
    /// they change (`event: sources`), and a comment every 15 s. Each stream asks the store for what is new after the
    /// last id it sent, so it repeats and skips nothing, and a slow reader makes the console hold nothing for it.
    func stream(_ parameters: [String: String]) -> Response {
        let filter: RecordFilter
        let startID: Int64
        do {
            filter = try RecordFilter(parameters: parameters)
            switch try RecordPage.parse(parameters).0 {
            case .after(let id): startID = id
            case .latest, .before: startID = store.latestID
            }
        } catch let error as ConsoleRequestError {
            return ConsoleHTTP.failure(.badRequest, error.message)
        } catch {
            return ConsoleHTTP.failure(.badRequest, "\(error)")
        }
        guard let slot = LiveStreamSlot(among: streams, maximum: configuration.maximumLiveStreams) else {
            return ConsoleHTTP.failure(
                .serviceUnavailable, "too many live streams (\(configuration.maximumLiveStreams)); close some pages")
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream; charset=utf-8"
        let changes = notifier.subscribe()
        let (store, collector) = (self.store, self.collector)
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer { slot.release() }
                var lastID = startID
                try await writer.write(ByteBuffer(string: "retry: 2000\n: connected\n\n"))
                // Records stored between the page's last request and this stream's start come first.
                lastID = try await Self.sendNew(after: lastID, filter: filter, store: store, writer: &writer)
                for await change in changes {
                    switch change {
                    case .records:
                        lastID = try await Self.sendNew(after: lastID, filter: filter, store: store, writer: &writer)
                    case .sources:
                        let document = APIDocuments.sources(
                            try await store.sources(), live: collector.liveStreams, trust: collector.trust,
                            problem: collector.problem)
                        try await writer.write(Self.event("sources", try APIDocuments.encode(document)))
                    case .tick:
                        try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    }
                }
                try await writer.finish(nil)
            })
    }

    private static func sendNew(
        after lastID: Int64, filter: RecordFilter, store: ConsoleStore, writer: inout any ResponseBodyWriter
    ) async throws -> Int64 {
        var lastID = lastID
        while true {
            let (records, hasMore) = try await store.records(matching: filter, page: .after(lastID), limit: 500)
            guard let last = records.last else { return lastID }
            let document = APIDocuments.Records(records: records.map(APIDocuments.Record.init), hasMore: hasMore)
            try await writer.write(event("records", try APIDocuments.encode(document)))
            lastID = last.id
            if !hasMore { return lastID }
        }
    }

    private static func event(_ name: String, _ data: Data) -> ByteBuffer {
        // JSON from the encoder holds no raw line breaks (they are escaped in strings), so one data line suffices.
        var buffer = ByteBuffer(string: "event: \(name)\ndata: ")
        buffer.writeBytes(data)
        buffer.writeString("\n\n")
        return buffer
    }

    /// Runs `body`; a refused request becomes a 400 with its reason, a store failure a 500.
    private func answering(_ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch let error as ConsoleRequestError {
            return ConsoleHTTP.failure(error.status == 401 ? .unauthorized : .badRequest, error.message)
        } catch {
            return ConsoleHTTP.failure(.internalServerError, "the store failed: \(error)")
        }
    }
}

/// A live stream's place among ``ConsoleConfiguration/maximumLiveStreams``, given back exactly once: when the stream
/// ends, or when its response is dropped without its body ever running (the client left before the head was written:
/// Hummingbird then never calls the body), so no place is lost for good.
final class LiveStreamSlot: Sendable {
    private let streams: NIOLockedValueBox<Int>
    private let held = NIOLockedValueBox(true)

    /// Takes a place, or `nil` when all `maximum` are taken.
    init?(among streams: NIOLockedValueBox<Int>, maximum: Int) {
        let admitted = streams.withLockedValue { count -> Bool in
            guard count < maximum else { return false }
            count += 1
            return true
        }
        guard admitted else { return nil }
        self.streams = streams
    }

    /// Gives the place back; later calls do nothing.
    func release() {
        let wasHeld = held.withLockedValue { held in
            defer { held = false }
            return held
        }
        if wasHeld { streams.withLockedValue { $0 -= 1 } }
    }

    deinit { release() }
}
