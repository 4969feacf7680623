import Chirp
import ChirpLogsURLSession
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@testable import ChirpLogs

#if canImport(FoundationNetworking)
import FoundationNetworking
import ChirpTestSupport
#endif

/// A source and a viewer in this process, over the real avahi-daemon and TCP on loopback.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct StreamingTests {
    func source(_ service: String, _ configure: (inout LogSourceConfiguration) -> Void = { _ in }) throws -> LogSource {
        var configuration = LogSourceConfiguration(appName: "inproc")
        configuration.serviceType = service
        configuration.transceiver.interface = .loopback
        configure(&configuration)
        return try LogSource(configuration: configuration)
    }

    func viewerConfiguration(_ service: String) -> LogViewerConfiguration {
        var configuration = LogViewerConfiguration()
        configuration.serviceType = service
        configuration.transceiver.interface = .loopback
        return configuration
    }

    @Test("a viewer without follow gets exactly the history the source keeps, then finishes")
    func noFollowHistory() async throws {
        let service = uniqueServiceType()
        let logs = try source(service) { $0.history = 300 }
        let logger = Logger(label: "h") { logs.handler(label: $0) }
        for n in 1...1000 { logger.info("n \(n)") }
        try await logs.start()
        var configuration = viewerConfiguration(service)
        configuration.follow = false
        configuration.discoveryTime = .seconds(2)
        let collected = Collected<UInt64>()
        try await LogViewer(configuration: configuration).run { event in
            if case .records(let records, _) = event { collected.append(contentsOf: records.map(\.sequence)) }
        }
        #expect(collected.values == Array(701...1000))
        await logs.stop()
    }

    @Test("a record damaged in an app's spool costs that record only: the viewer gets the others, told it was lost")
    func damagedSpoolRecord() async throws {
        let service = uniqueServiceType()
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // An app spools ten records and stops.
        do {
            let logs = try source(service) { $0.spool = LogSpoolConfiguration(directory: directory) }
            let logger = Logger(label: "d") { logs.handler(label: $0) }
            try await logs.start()
            for n in 1...10 { logger.info("n \(n)") }
            _ = await eventually(timeout: .seconds(30)) { logs.statistics.unacknowledgedInSpool >= 10 }
            #expect(logs.statistics.unacknowledgedInSpool == 10)
            await logs.stop()
        }
        // On disk, record 5's level byte becomes one no version knows.
        let name = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasPrefix("seg-") })
        let path = directory + "/" + name
        var file = ByteBuffer(data: try Data(contentsOf: URL(fileURLWithPath: path)))
        file.moveReaderIndex(forwardBy: LogSpool.magic.count)
        while let (sequence, length) = RecordCoding.peekEntry(file), sequence < 5 {
            file.moveReaderIndex(forwardBy: length)
        }
        #expect(RecordCoding.peekEntry(file)?.sequence == 5)
        file.setInteger(UInt8(9), at: file.readerIndex + 4 + 8 + 8)  // length, sequence, time, then the level
        file.moveReaderIndex(to: 0)
        try Data(file.readableBytesView).write(to: URL(fileURLWithPath: path))

        // The app starts again on its spool; a viewer reads the history.
        let logs = try source(service) { $0.spool = LogSpoolConfiguration(directory: directory) }
        try await logs.start()
        var configuration = viewerConfiguration(service)
        configuration.follow = false
        configuration.discoveryTime = .seconds(2)
        let collected = Collected<UInt64>()
        let losses = Collected<String>()
        let problems = Collected<String>()
        try await LogViewer(configuration: configuration).run { event in
            switch event {
            case .records(let records, _): collected.append(contentsOf: records.map(\.sequence))
            case .lost(let loss, _): losses.append("\(loss.from)...\(loss.through) \(loss.reason)")
            case .problem(let text): problems.append(text)
            default: break
            }
        }
        #expect(collected.values == [1, 2, 3, 4, 6, 7, 8, 9, 10])
        #expect(losses.values == ["5...5 undecodable"])
        #expect(problems.values.count == 1)
        #expect(
            problems.values.first?.hasSuffix("record 5 does not decode: unknown level 9") == true, "\(problems.values)")
        await logs.stop()
    }

    @Test("without any source, a viewer without follow says so")
    func noSource() async throws {
        var configuration = viewerConfiguration(uniqueServiceType())
        configuration.follow = false
        configuration.discoveryTime = .milliseconds(500)
        await #expect {
            try await LogViewer(configuration: configuration).run { _ in }
        } throws: { error in
            (error as? LogViewerError)?.code == .noSourceFound
        }
    }

    @Test("URLSession traffic is captured with one line, redacted, and reaches subscribers")
    func urlSessionCapture() async throws {
        let logs = try source(uniqueServiceType())
        let server = try await EchoServer.start()
        let stream = logs.subscribe()
        let session = URLSession(configuration: logs.capturingHTTP(.ephemeral))
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(server.port)/hello?x=1")))
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"name":"Zoë"}"#.utf8)
        request.setValue("Bearer top-secret", forHTTPHeaderField: "Authorization")
        let (data, response) = try await session.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == #"{"echo":"POST /hello?x=1"}"#)

        logs.isHTTPCaptureEnabled = false
        let (_, second) = try await session.data(from: try #require(URL(string: "http://127.0.0.1:\(server.port)/off")))
        #expect((second as? HTTPURLResponse)?.statusCode == 200, "with capture off, requests still work")
        logs.isHTTPCaptureEnabled = true
        _ = try await session.data(from: try #require(URL(string: "http://127.0.0.1:\(server.port)/missing")))

        var exchanges: [HTTPExchange] = []
        for await event in stream {
            if case .record(let record) = event, let exchange = record.http { exchanges.append(exchange) }
            if exchanges.count == 2 { break }
        }
        #expect(exchanges.map(\.path) == ["/hello", "/missing"])
        #expect(exchanges[0].method == "POST")
        #expect(exchanges[0].requestHeader("Authorization") == HTTPLogPolicy.redactedValue)
        #expect(exchanges[0].requestBody?.text == #"{"name":"Zoë"}"#)
        #expect(exchanges[0].responseBody?.text == #"{"echo":"POST /hello?x=1"}"#)
        #expect(exchanges[0].status == 200 && exchanges[1].status == 404)
        #expect(exchanges[0].duration > 0)
        try await server.channel.close()
    }
}

/// An HTTP server on 127.0.0.1 that answers `{"echo":"METHOD URI"}` (404 for /missing).
enum EchoServer {
    static func start() async throws -> (channel: any Channel, port: Int) {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(EchoHandler()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return (channel, channel.localAddress?.port ?? 0)
    }

    final class EchoHandler: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .head(let head) = unwrapInboundIn(data) else { return }
            let body = #"{"echo":"\#(head.method.rawValue) \#(head.uri)"}"#
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.utf8.count))
            let status: HTTPResponseStatus = head.uri == "/missing" ? .notFound : .ok
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
