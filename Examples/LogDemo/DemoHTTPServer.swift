import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A small HTTP server on 127.0.0.1 that the demo calls, so that real HTTP exchanges show up in the log stream:
///
/// - `GET /items`: 200, a JSON list with non-ASCII text
/// - `GET /items/ID`: 200 for IDs 1-3, 404 otherwise
/// - `POST /orders`: 201, echoes the order; 401 without an `Authorization` header
/// - `GET /fail`: 500 with a JSON error
/// - anything else: 404
enum DemoHTTPServer {
    /// Starts the server; returns its channel (close it to stop) and port.
    static func start(group: any EventLoopGroup) async throws -> (channel: any Channel, port: Int) {
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(DemoHandler())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return (channel, channel.localAddress?.port ?? 0)
    }

    static let items =
        #"[{"id":1,"name":"Crème brûlée","city":"Paris"},{"id":2,"name":"寿司","city":"東京"},{"id":3,"name":"Smørrebrød","city":"København","tags":["danish","open sandwich"]}]"#

    /// Status and JSON body for a request.
    static func respond(method: HTTPMethod, uri: String, authorized: Bool, body: String) -> (HTTPResponseStatus, String)
    {
        let path = uri.split(separator: "?").first.map(String.init) ?? uri
        switch (method, path) {
        case (.GET, "/items"):
            return (.ok, items)
        case (.GET, let path) where path.hasPrefix("/items/"):
            let id = path.dropFirst("/items/".count)
            if let number = Int(id), (1...3).contains(number) {
                let names = ["Crème brûlée", "寿司", "Smørrebrød"]
                return (.ok, #"{"id":\#(number),"name":"\#(names[number - 1])","in_stock":true}"#)
            }
            return (.notFound, #"{"error":"no item \#(id)","hint":"try /items"}"#)
        case (.POST, "/orders"):
            guard authorized else { return (.unauthorized, #"{"error":"missing credentials"}"#) }
            let order = body.isEmpty ? "null" : body
            return (
                .created, #"{"status":"accepted","order":\#(order),"message":"Merci, votre commande est confirmée ✓"}"#
            )
        case (.GET, "/fail"):
            return (.internalServerError, #"{"error":"database unavailable","retry_after_ms":250}"#)
        default:
            return (.notFound, #"{"error":"not found"}"#)
        }
    }
}

/// Answers each request once its body is complete. Its state lives on the channel's event loop, like the handler.
final class DemoHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body.clear()
        case .body(var chunk):
            if body.readableBytes < 1024 * 1024 { body.writeBuffer(&chunk) }
        case .end:
            guard let head else { return }
            let text = body.readString(length: body.readableBytes) ?? ""
            let (status, json) = DemoHTTPServer.respond(
                method: head.method, uri: head.uri, authorized: head.headers["authorization"].first != nil, body: text)
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
            headers.add(name: "Content-Length", value: String(json.utf8.count))
            headers.add(name: "Set-Cookie", value: "session=demo-session-cookie; HttpOnly")
            headers.add(name: "X-Request-Id", value: UUID().uuidString.prefix(8).lowercased())
            let keepAlive = head.isKeepAlive
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
                promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: json)))), promise: nil)
            let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !keepAlive {
                let channel = context.channel
                done.whenComplete { _ in channel.close(promise: nil) }
            }
            self.head = nil
        }
    }
}
