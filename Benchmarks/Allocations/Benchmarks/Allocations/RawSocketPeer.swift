import Foundation
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The other end of a measured connection: a Chirp peer on plain POSIX sockets, so that nothing it does allocates in
/// this process while the transceiver under test is measured. It says hello (Docs/Protocol.md section 4), then a
/// thread of its own reads and counts everything the transceiver sends into one buffer allocated up front.
///
/// Written by hand rather than with NIO: a NIO channel on this side would allocate in the same process and be counted
/// with the transceiver.
final class RawSocketPeer: Sendable {
    struct SocketError: Error, CustomStringConvertible {
        var description: String
    }

    private let fd: Int32
    private let receivedBytes = NIOLockedValueBox(0)

    /// Listens on 127.0.0.1 (a free port); `accept()` waits for the transceiver's dial.
    static func listen() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 4) == 0 else { throw SocketError(description: "bind/listen: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Accepts one connection on `listener` (then closes the listener).
    static func accept(on listener: Int32) throws -> RawSocketPeer {
        let fd = Glibc.accept(listener, nil, nil)
        Glibc.close(listener)
        guard fd >= 0 else { throw SocketError(description: "accept: \(errno)") }
        return RawSocketPeer(fd: fd)
    }

    /// Dials 127.0.0.1:`port`.
    static func connect(port: Int) throws -> RawSocketPeer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw SocketError(description: "connect: \(errno)") }
        return RawSocketPeer(fd: fd)
    }

    private init(fd: Int32) {
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sends our hello, reads the transceiver's, then starts the thread that reads what the transceiver sends: it
    /// counts the bytes, and with `answers` it also answers each ping with its pong and each request with an ok
    /// response whose message body is `answers` (flags, type name, payload: Docs/Protocol.md section 5).
    func handshake(service: String, answers: [UInt8]? = nil) throws {
        let hello =
            #"{"metadata":{},"name":"raw","peerID":"\#(UUID().uuidString)","protocol":1,"service":"\#(service)"}"#
        try write(Self.frame(kind: 1, Array(hello.utf8)))
        var header = [UInt8](repeating: 0, count: 4)
        try readExactly(&header)
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        var body = [UInt8](repeating: 0, count: length)
        try readExactly(&body)
        guard body.first == 1 else { throw SocketError(description: "expected a hello, got kind \(body.first ?? 0)") }
        let fd = self.fd
        let received = receivedBytes
        Thread.detachNewThread {
            let capacity = 1 << 16
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
            defer { buffer.deallocate() }
            guard let answers else {
                while true {
                    let count = read(fd, buffer, capacity)
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { return }
                    received.withLockedValue { $0 += count }
                }
            }
            var responder = Responder(fd: fd, answers: answers)
            defer { responder.deallocate() }
            var end = 0
            while true {
                let count = read(fd, buffer + end, capacity - end)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { return }
                received.withLockedValue { $0 += count }
                end += count
                let consumed = responder.answerFrames(in: UnsafeRawBufferPointer(start: buffer, count: end))
                guard consumed > 0 else {
                    if end == capacity { return }  // a frame larger than the buffer: not one this benchmark sends
                    continue
                }
                end -= consumed
                if end > 0 { buffer.copyMemory(from: buffer + consumed, byteCount: end) }
            }
        }
    }

    /// Answers pings and requests in the bytes read, writing from memory allocated once.
    private struct Responder {
        let fd: Int32
        let answers: [UInt8]
        let output: UnsafeMutableRawPointer
        let outputCapacity: Int

        init(fd: Int32, answers: [UInt8]) {
            self.fd = fd
            self.answers = answers
            self.outputCapacity = 1 << 16
            self.output = UnsafeMutableRawPointer.allocate(byteCount: outputCapacity, alignment: 8)
        }

        func deallocate() { output.deallocate() }

        /// Answers the whole frames at the start of `bytes`; returns how many bytes they took.
        func answerFrames(in bytes: UnsafeRawBufferPointer) -> Int {
            var offset = 0
            var written = 0
            while bytes.count - offset >= 4 {
                let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).bigEndian)
                guard bytes.count - offset - 4 >= length, length >= 1 else { break }
                let kind = bytes[offset + 4]
                let body = UnsafeRawBufferPointer(rebasing: bytes[(offset + 5)..<(offset + 4 + length)])
                switch kind {
                case 6:  // ping: a pong with the same bytes
                    written += put(kind: 7, body, at: written)
                case 4 where body.count >= 8:  // request: an ok response with its id, then the answer's body
                    written += put(kind: 5, UnsafeRawBufferPointer(rebasing: body[0..<8]), then: answers, at: written)
                default:
                    break
                }
                offset += 4 + length
            }
            if written > 0 { send(written) }
            return offset
        }

        /// Writes one frame into the output at `at`: `head`, then for a response its status (ok) and `tail`; returns
        /// its size.
        private func put(kind: UInt8, _ head: UnsafeRawBufferPointer, then tail: [UInt8]? = nil, at: Int) -> Int {
            let status = tail == nil ? 0 : 1
            let length = 1 + head.count + status + (tail?.count ?? 0)
            guard at + 4 + length <= outputCapacity else { return 0 }
            output.storeBytes(of: UInt32(length).bigEndian, toByteOffset: at, as: UInt32.self)
            output.storeBytes(of: kind, toByteOffset: at + 4, as: UInt8.self)
            (output + at + 5).copyMemory(from: head.baseAddress!, byteCount: head.count)
            guard let tail else { return 4 + length }
            let next = at + 5 + head.count
            output.storeBytes(of: 0, toByteOffset: next, as: UInt8.self)  // status: ok
            if !tail.isEmpty {
                tail.withUnsafeBytes { (output + next + 1).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
            return 4 + length
        }

        private func send(_ count: Int) {
            var offset = 0
            while offset < count {
                let written = Glibc.write(fd, output + offset, count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }

    /// Bytes the transceiver sent since the handshake.
    var received: Int { receivedBytes.withLockedValue { $0 } }

    /// Waits (without allocating) until at least `bytes` were received, or `timeout` seconds passed.
    func waitUntilReceived(_ bytes: Int, timeout: Double = 30) -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
        while received < bytes {
            if DispatchTime.now().uptimeNanoseconds > deadline { return false }
            sched_yield()
        }
        return true
    }

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw SocketError(description: "write: \(errno)")
                }
                offset += written
            }
        }
    }

    private func readExactly(_ bytes: inout [UInt8]) throws {
        var offset = 0
        let count = bytes.count
        try bytes.withUnsafeMutableBytes { raw in
            while offset < count {
                let got = read(fd, raw.baseAddress! + offset, count - offset)
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else { throw SocketError(description: "connection closed during the handshake") }
                offset += got
            }
        }
    }

    func close() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }

    /// A frame: big-endian length of kind + body, the kind byte, the body.
    static func frame(kind: UInt8, _ body: [UInt8]) -> [UInt8] {
        let length = UInt32(body.count + 1)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), kind]
            + body
    }

    /// A message frame of `typeName` with a JSON payload.
    static func messageFrame(typeName: String, json: String) -> [UInt8] {
        frame(kind: 3, messageBody(typeName: typeName, json: json))
    }

    /// A message body (Docs/Protocol.md section 5): flags 0, the type name and its length, the JSON payload.
    static func messageBody(typeName: String, json: String) -> [UInt8] {
        let name = Array(typeName.utf8)
        return [0, UInt8(name.count >> 8), UInt8(name.count & 0xFF)] + name + Array(json.utf8)
    }
}
