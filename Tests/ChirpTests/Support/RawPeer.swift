import Chirp
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A peer played byte by byte over a plain TCP connection (dialed, or accepted by a test's server): it writes exactly
/// the bytes a test gives, and records every byte it receives and when the other side closed. For the tests of
/// Docs/Protocol.md and of the tie-break's switch.
final class RawPeer: Sendable {
    /// One frame as received: its kind and body.
    struct ReceivedFrame: Equatable, Sendable {
        var kind: UInt8
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    let channel: any Channel
    private let received: NIOLockedValueBox<[UInt8]>
    private let closedBox: NIOLockedValueBox<Bool>

    private final class Recorder: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received: NIOLockedValueBox<[UInt8]>
        let closed: NIOLockedValueBox<Bool>
        init(received: NIOLockedValueBox<[UInt8]>, closed: NIOLockedValueBox<Bool>) {
            self.received = received
            self.closed = closed
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            received.withLockedValue { $0 += bytes }
        }
        func channelInactive(context: ChannelHandlerContext) {
            closed.withLockedValue { $0 = true }
        }
    }

    /// Connects to `port` on 127.0.0.1. What the other side sends is recorded from the first byte: the recorder is in
    /// the pipeline before the connection is active (added after, it could miss a hello sent at once).
    init(port: Int) async throws {
        let received = NIOLockedValueBox<[UInt8]>([])
        let closed = NIOLockedValueBox(false)
        self.received = received
        self.closedBox = closed
        channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Recorder(received: received, closed: closed))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
    }

    /// Wraps a connection a test's server accepted; call in its child channel initializer (on its event loop).
    init(accepted channel: any Channel) throws {
        let received = NIOLockedValueBox<[UInt8]>([])
        let closed = NIOLockedValueBox(false)
        self.received = received
        self.closedBox = closed
        self.channel = channel
        try channel.pipeline.syncOperations.addHandler(Recorder(received: received, closed: closed))
    }

    /// Whether the other side closed the connection.
    var isClosed: Bool { closedBox.withLockedValue { $0 } }

    /// Every byte received so far.
    var bytes: [UInt8] { received.withLockedValue { $0 } }

    /// The complete frames received so far, in order (a partial last frame is left out).
    var frames: [ReceivedFrame] {
        var frames: [ReceivedFrame] = []
        var rest = bytes[...]
        while rest.count >= 5 {
            let length = rest.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            guard length >= 1, rest.count >= 4 + length else { break }
            let frame = rest.dropFirst(4).prefix(length)
            frames.append(ReceivedFrame(kind: frame.first ?? 0, body: Array(frame.dropFirst())))
            rest = rest.dropFirst(4 + length)
        }
        return frames
    }

    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    /// Writes `frames` in one write.
    func write(_ frames: [ByteBuffer]) async throws {
        var all = ByteBuffer()
        for var frame in frames { all.writeBuffer(&frame) }
        try await channel.writeAndFlush(all)
    }

    /// Whether the bytes received so far contain `text`.
    func hasReceived(text: String) -> Bool {
        bytes.contains(Array(text.utf8))
    }

    /// Waits until the bytes received contain `text`.
    func waitFor(text: String, timeout: Double = 20) async throws {
        try await withTimeout(.seconds(timeout), "\"\(text)\" on a raw connection") {
            while !self.hasReceived(text: text) { try await Task.sleep(for: .milliseconds(5)) }
        }
    }

    /// Waits until `count` frames have arrived; returns them all.
    @discardableResult
    func waitForFrames(_ count: Int, timeout: Double = 20) async throws -> [ReceivedFrame] {
        try await withTimeout(.seconds(timeout), "\(count) frames (have \(self.frames.map(\.kind)))") {
            while self.frames.count < count { try await Task.sleep(for: .milliseconds(5)) }
            return self.frames
        }
    }

    /// Waits until a frame of `kind` has arrived; returns it.
    func waitForFrame(kind: UInt8, timeout: Double = 20) async throws -> ReceivedFrame {
        try await withTimeout(.seconds(timeout), "a frame of kind \(kind) (have \(self.frames.map(\.kind)))") {
            while true {
                if let frame = self.frames.first(where: { $0.kind == kind }) { return frame }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    /// Waits until the other side closed the connection.
    func waitForClose(timeout: Double = 20) async throws {
        try await withTimeout(.seconds(timeout), "the connection to close (frames: \(self.frames.map(\.kind)))") {
            try await self.channel.closeFuture.get()
        }
    }

    func close() async {
        try? await channel.close()
    }

    // MARK: - Building frames

    static func frame(kind: UInt8, _ body: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(body.count + 1).bigEndian, Array.init) + [kind] + body
    }

    /// A hello; `features` adds the key (`["parts"]`: the peer reassembles part frames), left out by default, as an
    /// older peer's.
    static func hello(
        service: String, id: String = UUID().uuidString, name: String = "raw", protocol version: Int = 1,
        features: [String] = []
    ) -> [UInt8] {
        let featureKey =
            features.isEmpty ? "" : #","features":[\#(features.map { "\"\($0)\"" }.joined(separator: ","))]"#
        return frame(
            kind: 1,
            Array(
                #"{"protocol":\#(version),"peerID":"\#(id)","name":"\#(name)","service":"\#(service)","metadata":{}\#(featureKey)}"#
                    .utf8))
    }

    /// A part frame of stream `stream` (Docs/Protocol.md section 3).
    static func part(stream: UInt32, flags: UInt8, _ bytes: [UInt8]) -> [UInt8] {
        frame(kind: 9, withUnsafeBytes(of: stream.bigEndian, Array.init) + [flags] + bytes)
    }

    /// A message body: flags, type name length, type name, payload.
    static func messageBody(type: String, payload: [UInt8], flags: UInt8 = 0) -> [UInt8] {
        [flags] + withUnsafeBytes(of: UInt16(type.utf8.count).bigEndian, Array.init) + Array(type.utf8) + payload
    }

    static func message(type: String, json: String) -> [UInt8] {
        frame(kind: 3, messageBody(type: type, payload: Array(json.utf8)))
    }

    static func request(id: UInt64, type: String, json: String) -> [UInt8] {
        frame(
            kind: 4, withUnsafeBytes(of: id.bigEndian, Array.init) + messageBody(type: type, payload: Array(json.utf8)))
    }
}

extension RawPeer.ReceivedFrame {
    /// A response frame's parts: request id, status, flags, type name, payload.
    var response: (id: UInt64, status: UInt8, flags: UInt8, type: String, payload: [UInt8])? {
        guard kind == 5, body.count >= 12 else { return nil }
        let id = body.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let message = Array(body.dropFirst(9))
        return (id, body[8], message[0], Self.typeName(message), Self.payload(message))
    }

    /// A message frame's parts: flags, type name, payload.
    var message: (flags: UInt8, type: String, payload: [UInt8])? {
        guard kind == 3, body.count >= 3 else { return nil }
        return (body[0], Self.typeName(body), Self.payload(body))
    }

    private static func typeName(_ message: [UInt8]) -> String {
        let length = Int(message[1]) << 8 | Int(message[2])
        return String(decoding: message.dropFirst(3).prefix(length), as: UTF8.self)
    }

    private static func payload(_ message: [UInt8]) -> [UInt8] {
        let length = Int(message[1]) << 8 | Int(message[2])
        return Array(message.dropFirst(3 + length))
    }
}
