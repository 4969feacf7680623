import NIOCore

/// What the kernel's TCP says about one connection at one moment (Linux `TCP_INFO`): the fields the heartbeat's
/// ``SilenceRule`` weighs before it closes a connection that went quiet.
///
/// Ages are in milliseconds, at the kernel's tick granularity. Read straight from the kernel's `struct tcp_info`
/// (linux/tcp.h) by offset: Glibc's copy of the struct, the one NIO's `getTCPInfo()` returns, stops before the byte
/// counts and the peer's window. A kernel older than a field leaves it zero (NIO zeroes the buffer first): the
/// peer's window (`tcpi_snd_wnd`, Linux 6.2) then reads as closed, which ``SilenceRule`` only believes together with
/// nothing in flight and bytes waiting to be sent.
struct TCPLook: Sendable, Equatable {
    /// How long ago data (not a bare acknowledgement) last arrived from the peer: `tcpi_last_data_recv`.
    var lastDataReceivedMs: UInt32 = 0
    /// How long ago an acknowledgement last arrived from the peer: `tcpi_last_ack_recv`.
    var lastAckReceivedMs: UInt32 = 0
    /// Segments sent and not acknowledged yet: `tcpi_unacked`.
    var unacked: UInt32 = 0
    /// Retransmission timeouts in a row for the oldest unacknowledged segment, now (0 once it is acknowledged):
    /// `tcpi_retransmits`. A zero-window probe is not one (it counts in `tcpi_probes` and `tcpi_backoff`).
    var retransmits: UInt8 = 0
    /// The congestion state, `tcpi_ca_state`: 3 is fast recovery, 4 is loss (after a retransmission timeout).
    var congestionState: UInt8 = 0
    /// Every retransmission over the connection's life: `tcpi_total_retrans`.
    var totalRetransmissions: UInt32 = 0
    /// Bytes the peer acknowledged over the connection's life: `tcpi_bytes_acked`.
    var bytesAcked: UInt64 = 0
    /// Bytes written to the socket and not sent yet: `tcpi_notsent_bytes`.
    var notSentBytes: UInt32 = 0
    /// The peer's receive window, in bytes: `tcpi_snd_wnd` (0 on kernels before 6.2).
    var sendWindow: UInt32 = 0
    /// Our maximum segment size: `tcpi_snd_mss`.
    var sendMSS: UInt32 = 0

    /// The congestion states in which TCP is resending what it lost.
    static let recovery: UInt8 = 3
    static let loss: UInt8 = 4

    /// How many bytes of `struct tcp_info` are read: up to and including `tcpi_snd_wnd`.
    static let rawSize = 232

    /// Decodes the kernel's `struct tcp_info` (native byte order), as far as `bytes` reaches; missing fields stay 0.
    init(raw bytes: UnsafeRawBufferPointer) {
        func load<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            offset + MemoryLayout<T>.size <= bytes.count ? bytes.loadUnaligned(fromByteOffset: offset, as: T.self) : 0
        }
        retransmits = load(2, UInt8.self)
        congestionState = load(1, UInt8.self)
        sendMSS = load(16, UInt32.self)
        unacked = load(24, UInt32.self)
        lastDataReceivedMs = load(52, UInt32.self)
        lastAckReceivedMs = load(56, UInt32.self)
        totalRetransmissions = load(100, UInt32.self)
        bytesAcked = load(120, UInt64.self)
        notSentBytes = load(144, UInt32.self)
        sendWindow = load(228, UInt32.self)
    }

    /// A look made of its fields (tests).
    init(
        lastDataReceivedMs: UInt32 = 0, lastAckReceivedMs: UInt32 = 0, unacked: UInt32 = 0, retransmits: UInt8 = 0,
        congestionState: UInt8 = 0, totalRetransmissions: UInt32 = 0, bytesAcked: UInt64 = 0,
        notSentBytes: UInt32 = 0, sendWindow: UInt32 = 65_535, sendMSS: UInt32 = 1_448
    ) {
        self.lastDataReceivedMs = lastDataReceivedMs
        self.lastAckReceivedMs = lastAckReceivedMs
        self.unacked = unacked
        self.retransmits = retransmits
        self.congestionState = congestionState
        self.totalRetransmissions = totalRetransmissions
        self.bytesAcked = bytesAcked
        self.notSentBytes = notSentBytes
        self.sendWindow = sendWindow
        self.sendMSS = sendMSS
    }

    /// The fields, for a log line.
    var summary: String {
        "data \(lastDataReceivedMs) ms ago, ack \(lastAckReceivedMs) ms ago, unacked \(unacked), "
            + "retransmits \(retransmits), state \(congestionState), total retrans \(totalRetransmissions), "
            + "acked \(bytesAcked) B, not sent \(notSentBytes) B, peer window \(sendWindow) B"
    }

    /// The kernel's view of `channel`'s connection; `nil` where there is none (not Linux, not a TCP socket, or the
    /// kernel would not say).
    static func read(from channel: any Channel) -> EventLoopFuture<TCPLook?> {
        #if os(Linux)
        if let provider = channel as? any SocketOptionProvider {
            return provider.unsafeGetSocketOption(level: NIOBSDSocket.OptionLevel.tcp, name: .tcp_info)
                .map { (raw: RawTCPInfo) -> TCPLook? in withUnsafeBytes(of: raw) { TCPLook(raw: $0) } }
                .recover { _ in nil }
        }
        #endif
        return channel.eventLoop.makeSucceededFuture(nil)
    }
}

/// Room for the kernel's `struct tcp_info` up to ``TCPLook/rawSize`` bytes: 29 eight-byte words (232 bytes, the
/// alignment of its 64-bit fields). Homogeneous tuples are laid out contiguously.
struct RawTCPInfo: Sendable {
    var words:
        (
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
            UInt64, UInt64, UInt64
        ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
}
