import Foundation

#if os(Linux)
/// Plain blocking POSIX TCP sockets over loopback: the reference the Chirp figures are compared with.
enum RawSocket {
    /// Listens on 127.0.0.1 on a free port; returns the socket and the port.
    static func listen() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: \(errnoText())") }
        var address = loopbackAddress(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 16) == 0 else { throw BenchError("bind/listen: \(errnoText())") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    static func accept(_ listener: Int32) throws -> Int32 {
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { throw BenchError("accept: \(errnoText())") }
        setNoDelay(fd)
        return fd
    }

    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: \(errnoText())") }
        var address = loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw BenchError("connect: \(errnoText())") }
        setNoDelay(fd)
        return fd
    }

    /// TCP_NODELAY, as Chirp sets it on its connections.
    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw BenchError("write: \(errnoText())")
            }
            offset += written
        }
    }

    /// Reads exactly `bytes.count` bytes; `false` at EOF.
    static func readExactly(_ fd: Int32, _ bytes: UnsafeMutableRawBufferPointer) throws -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = read(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if count < 0 {
                if errno == EINTR { continue }
                throw BenchError("read: \(errnoText())")
            }
            if count == 0 { return false }
            offset += count
        }
        return true
    }

    private static func loopbackAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return address
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}

/// What the raw sink is asked to do next: one byte of mode, then a little-endian count.
enum RawMode: UInt8 {
    /// Read `count` bytes, then answer one byte.
    case bulk = 0x62  // b
    /// Read `count` length-prefixed frames (4-byte big-endian length), then answer one byte.
    case frames = 0x73  // s
    /// `count` times: read one frame and write it back.
    case pingPong = 0x70  // p

    static let headerSize = 9
}
#endif
