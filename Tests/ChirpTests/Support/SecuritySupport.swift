import Chirp
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A loopback configuration for tests whose logs go to `capture`, with a shared secret when `secret` is given.
func secureConfiguration(
    _ name: String, serviceType: String, secret: String?, capture: LogCapture? = nil
) throws -> Configuration {
    var configuration = testConfiguration(name, serviceType: serviceType)
    if let capture { configuration.logger = capture.logger(name) }
    if let secret { configuration.security = .sharedSecret(try SharedSecret(secret)) }
    return configuration
}

/// A transceiver made with ``secureConfiguration(_:serviceType:secret:capture:)``.
func secureTransceiver(_ name: String, serviceType: String, secret: String?, capture: LogCapture? = nil) throws
    -> Transceiver
{
    Transceiver(
        configuration: try secureConfiguration(name, serviceType: serviceType, secret: secret, capture: capture))
}

/// A random secret for one test, so that no two tests share one and a leak is easy to search for.
func randomSecret() -> String {
    "s3cret-" + UUID().uuidString
}

/// Everything one transceiver's events said about refused connections: `peer: reason` per refusal.
func refusals(in events: [TransceiverEvent]) -> [String] {
    events.compactMap { event in
        if case .connectionRefused(let peer, let reason) = event { return "\(peer): \(reason)" }
        return nil
    }
}

/// Every text an event carries (names, reasons, error descriptions), to check that no secret is in any of them.
func eventTexts(_ events: [TransceiverEvent]) -> String {
    events.map { "\($0)" }.joined(separator: "\n")
}

/// A TCP relay on 127.0.0.1 that forwards every connection to `127.0.0.1:target` and records every byte it carries,
/// both ways: what someone sniffing the loopback interface would see.
final class Relay: Sendable {
    let port: Int
    private let channel: any Channel
    private let bytes: NIOLockedValueBox<[UInt8]>
    private let ports: NIOLockedValueBox<Set<Int>>

    /// What went through, both directions, in arrival order.
    var captured: [UInt8] { bytes.withLockedValue { $0 } }

    /// The local ports of the relay's connections to the target: how the target sees relayed connections.
    var outboundPorts: Set<Int> { ports.withLockedValue { $0 } }

    /// Whether `needle` occurs anywhere in what went through.
    func capturedContains(_ needle: String) -> Bool {
        let haystack = captured
        let pattern = Array(needle.utf8)
        guard !pattern.isEmpty, haystack.count >= pattern.count else { return false }
        for start in 0...(haystack.count - pattern.count) where haystack[start] == pattern[0] {
            if Array(haystack[start..<(start + pattern.count)]) == pattern { return true }
        }
        return false
    }

    static func start(forwardingTo target: Int) async throws -> Relay {
        let bytes = NIOLockedValueBox<[UInt8]>([])
        let ports = NIOLockedValueBox<Set<Int>>([])
        let record: @Sendable (ByteBuffer) -> Void = { buffer in
            bytes.withLockedValue { $0.append(contentsOf: buffer.readableBytesView) }
        }
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                let toTarget = Forwarder(record: record)
                let fromTarget = Forwarder(record: record)
                return ClientBootstrap(group: inbound.eventLoop)
                    .channelInitializer { outbound in outbound.pipeline.addHandler(fromTarget) }
                    .connect(host: "127.0.0.1", port: target)
                    .flatMap { outbound in
                        toTarget.partner = outbound
                        fromTarget.partner = inbound
                        if let port = outbound.localAddress?.port { ports.withLockedValue { _ = $0.insert(port) } }
                        return inbound.pipeline.addHandler(toTarget).flatMap {
                            inbound.setOption(.autoRead, value: true)
                        }
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = channel.localAddress?.port else { throw RelayError(message: "the relay's socket has no port") }
        return Relay(port: port, channel: channel, bytes: bytes, ports: ports)
    }

    private init(port: Int, channel: any Channel, bytes: NIOLockedValueBox<[UInt8]>, ports: NIOLockedValueBox<Set<Int>>)
    {
        self.port = port
        self.channel = channel
        self.bytes = bytes
        self.ports = ports
    }

    func close() async {
        try? await channel.close()
    }

    /// Copies what one side sends to the other side, recording it. Both channels of a pair share one event loop.
    private final class Forwarder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer

        let record: @Sendable (ByteBuffer) -> Void
        var partner: (any Channel)?

        init(record: @escaping @Sendable (ByteBuffer) -> Void) {
            self.record = record
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            record(buffer)
            partner?.writeAndFlush(buffer, promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            partner?.close(promise: nil)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}

/// The port of an `address:port` text (as ``ConnectionCandidate/address`` gives it).
func port(of address: String) -> Int? {
    address.split(separator: ":").last.flatMap { Int($0) }
}

/// The relay could not be set up.
struct RelayError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
