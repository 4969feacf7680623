import NIOCore

/// Whether a connection on which no frame arrived for the heartbeat timeout is dead, or alive on a link that loses
/// packets: a pure state machine. Each event is a look at the kernel's TCP (a ``TCPLook``) with the time and when the
/// silence began; each answer is keep or close, with the reason. Owned by the connection's ``PeerChannelHandler``
/// (Docs/Protocol.md section 7, Docs/Reliability.md "Impaired links").
///
/// The heartbeat looks once per timeout `T` while the silence lasts. The rules, in this order:
///
/// 1. Data from the peer arrived in the last `T/2`: keep (**dataArriving**). The peer is sending: a frame is still
///    on its way (a large one on a slow link), or our event loop was too busy to read it.
/// 2. The peer's receive window is closed (nothing of ours in flight, bytes waiting, the window under one segment) and
///    it acknowledged nothing since the previous look (or this is the first look): close (**notReading**). Its kernel
///    still answers our zero-window probes, but its process reads nothing: frozen, or stuck.
/// 3. The silence has lasted ``maximumSilenceFactor`` timeouts: close (**tooLong**), whatever TCP says.
/// 4. Our TCP is resending (segments unacknowledged, and a retransmission timeout pending, a recovery state, or more
///    retransmissions than at the previous look) and the peer makes progress (an acknowledgement in the last `T/2`,
///    or more bytes acknowledged than at the previous look): keep (**retransmitting**). The link loses packets; TCP
///    gets them through. Retransmissions counted before the first look of a silence are not current loss.
/// 5. First look of the silence, and the peer's TCP acknowledged something in the last `T/2`: keep once
///    (**peerAcking**). Its kernel takes our data; its own frames may be the ones the link lost. At the next look,
///    without rule 1 or 4, the connection closes: a peer whose process stopped is dropped after `2 T`.
/// 6. Otherwise: close (**silent**). Nothing came from the peer, or nothing that shows a live exchange. Also when the
///    kernel cannot be asked (not Linux).
///
/// A peer that is gone (its host off, its link cut) sends no acknowledgement: it is closed at the first look, after
/// one timeout, as before these rules.
struct SilenceRule {
    /// The heartbeat timeout `T`.
    let timeout: TimeAmount
    /// Past this many timeouts of silence, rule 3 closes the connection: at the look `4 T` into it.
    static let maximumSilenceFactor: Int64 = 4

    /// The previous look of the current silence, and when that silence began.
    private var previous: (silentSince: NIODeadline, look: TCPLook)?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    /// What to do with the connection.
    enum Verdict: Equatable, Sendable {
        case keep(KeepReason)
        case close(CloseReason)
    }

    /// Why a silent connection stays open.
    enum KeepReason: String, Sendable {
        case dataArriving = "data from the peer arrived lately"
        case retransmitting = "TCP is resending over a lossy link and the peer acknowledges"
        case peerAcking = "the peer's TCP acknowledges our data; its frames get one more timeout"
    }

    /// Why a silent connection is closed.
    enum CloseReason: String, Sendable {
        case notReading = "the peer's receive window stays closed: it reads nothing"
        case tooLong = "silent for the longest time the heartbeat allows"
        case silent = "nothing from the peer shows a live exchange"
    }

    /// A look at the connection's TCP, `look` (`nil` if the kernel could not be asked), at `now`, in a silence that
    /// began at `silentSince` (the last complete frame).
    mutating func look(_ look: TCPLook?, silentSince: NIODeadline, now: NIODeadline) -> Verdict {
        let verdict = decide(look, silentSince: silentSince, now: now)
        if case .keep = verdict, let look {
            previous = (silentSince, look)
        } else {
            previous = nil
        }
        return verdict
    }

    private func decide(_ look: TCPLook?, silentSince: NIODeadline, now: NIODeadline) -> Verdict {
        guard let look else { return .close(.silent) }
        let half = UInt64(max(timeout.nanoseconds, 0) / 2_000_000)
        // The previous look counts only when it belongs to this silence: a frame in between began a new one.
        let before = previous.flatMap { $0.silentSince == silentSince ? $0.look : nil }

        if UInt64(look.lastDataReceivedMs) < half { return .keep(.dataArriving) }

        let windowClosed = look.unacked == 0 && look.notSentBytes > 0 && look.sendWindow < max(look.sendMSS, 1)
        if windowClosed, look.bytesAcked == before?.bytesAcked ?? look.bytesAcked {
            return .close(.notReading)
        }

        if now - silentSince >= timeout * Self.maximumSilenceFactor { return .close(.tooLong) }

        let acksArriving = UInt64(look.lastAckReceivedMs) < half
        let progress = acksArriving || before.map { look.bytesAcked > $0.bytesAcked } == true
        let resending =
            look.unacked > 0
            && (look.retransmits > 0 || look.congestionState >= TCPLook.recovery
                || before.map { look.totalRetransmissions > $0.totalRetransmissions } == true)
        if resending && progress { return .keep(.retransmitting) }

        if before == nil && acksArriving { return .keep(.peerAcking) }
        return .close(.silent)
    }
}
