import NIOCore
import NIOPosix

/// TCP resends a lost segment of a connection that carries little at a steady interval, not a doubling one (Linux
/// `TCP_THIN_LINEAR_TIMEOUTS`, the kernel's "thin streams": fewer than 4 segments in flight).
///
/// A Chirp connection is such a stream most of the time: heartbeats, requests one at a time. On a link that loses 20%
/// of its packets, a segment the link loses four or five times in a row waits 0.2 + 0.4 + 0.8 + 1.6 s (3 s) for its
/// next resend with the doubling timeout; the heartbeat sees a silence of its timeout, and a connection that TCP would
/// have carried through is closed. With steady resends (the first six at the base timeout, ~0.2 s, then doubling as
/// usual) the same silence takes about ten losses in a row. A stream with more in flight (a large message) is not thin
/// and resends as before. Elsewhere than on Linux nothing changes.
enum ThinStreamResends {
    #if os(Linux)
    /// `TCP_THIN_LINEAR_TIMEOUTS` (linux/tcp.h: 16), on every connection since Linux 2.6.34.
    static let option = ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: 16))
    #endif
}

extension ServerBootstrap {
    /// Accepted connections resend steadily while thin (``ThinStreamResends``).
    func resendingThinStreamsSteadily() -> ServerBootstrap {
        #if os(Linux)
        return childChannelOption(ThinStreamResends.option, value: 1)
        #else
        return self
        #endif
    }
}

extension ClientBootstrap {
    /// The connection resends steadily while thin (``ThinStreamResends``).
    func resendingThinStreamsSteadily() -> ClientBootstrap {
        #if os(Linux)
        return channelOption(ThinStreamResends.option, value: 1)
        #else
        return self
        #endif
    }
}
