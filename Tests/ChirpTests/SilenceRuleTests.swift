import NIOCore
import Testing

@testable import Chirp

/// The heartbeat's decision on a silent connection, as a value: looks at TCP in, keep or close out, the time given by
/// the test. A 2.5 s timeout, so "lately" is under 1,250 ms; looks come once per timeout.
@Suite(.timeLimit(.minutes(1))) struct SilenceRuleTests {
    static let timeout = TimeAmount.milliseconds(2500)
    static let since = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// The time of the `n`th look of a silence that began at ``since`` (the first is one timeout in).
    static func look(_ n: Int64) -> NIODeadline { since + timeout * n }

    /// A peer that went away: nothing from it for the whole timeout, our ping unacknowledged.
    static let gone = TCPLook(lastDataReceivedMs: 2500, lastAckReceivedMs: 2400, unacked: 1, retransmits: 3)

    @Test func dataArrivingLatelyKeepsTheConnection() {
        var rule = SilenceRule(timeout: Self.timeout)
        #expect(
            rule.look(TCPLook(lastDataReceivedMs: 300), silentSince: Self.since, now: Self.look(1))
                == .keep(.dataArriving))
        // At half the timeout it no longer counts as lately.
        var other = SilenceRule(timeout: Self.timeout)
        #expect(
            other.look(
                TCPLook(lastDataReceivedMs: 1250, lastAckReceivedMs: 2500), silentSince: Self.since, now: Self.look(1))
                == .close(.silent))
    }

    @Test func dataArrivingKeepsEvenPastTheBound() {
        // A large frame on a slow link: the peer is sending all along.
        var rule = SilenceRule(timeout: Self.timeout)
        #expect(
            rule.look(TCPLook(lastDataReceivedMs: 10), silentSince: Self.since, now: Self.look(10))
                == .keep(.dataArriving))
    }

    @Test func aPeerThatIsGoneIsClosedAtTheFirstLook() {
        var rule = SilenceRule(timeout: Self.timeout)
        #expect(rule.look(Self.gone, silentSince: Self.since, now: Self.look(1)) == .close(.silent))
    }

    @Test func noKernelViewClosesAsBefore() {
        var rule = SilenceRule(timeout: Self.timeout)
        #expect(rule.look(nil, silentSince: Self.since, now: Self.look(1)) == .close(.silent))
    }

    @Test func aClosedWindowIsClosedAtTheFirstLookThoughItsKernelAcknowledges() {
        // A frozen peer we flood: its kernel answers our zero-window probes (acks lately; backoff is not a
        // retransmission), nothing of ours in flight, bytes wait.
        var rule = SilenceRule(timeout: Self.timeout)
        let frozen = TCPLook(
            lastDataReceivedMs: 2500, lastAckReceivedMs: 200, unacked: 0, bytesAcked: 4 << 20, notSentBytes: 1 << 20,
            sendWindow: 0)
        #expect(rule.look(frozen, silentSince: Self.since, now: Self.look(1)) == .close(.notReading))
    }

    @Test func aWindowThatStaysClosedAfterAKeepIsClosedAndOneThatMovedIsNot() {
        // Kept at the first look (a frame on its way), then the window closes with nothing acknowledged since.
        var rule = SilenceRule(timeout: Self.timeout)
        let sending = TCPLook(lastDataReceivedMs: 100, bytesAcked: 1000)
        #expect(rule.look(sending, silentSince: Self.since, now: Self.look(1)) == .keep(.dataArriving))
        var stuck = TCPLook(
            lastDataReceivedMs: 2000, lastAckReceivedMs: 100, bytesAcked: 1000, notSentBytes: 10, sendWindow: 0)
        var copy = rule
        #expect(copy.look(stuck, silentSince: Self.since, now: Self.look(2)) == .close(.notReading))
        // The same closed window, but the peer acknowledged more since the previous look: it reads, slowly.
        stuck.bytesAcked = 5000
        #expect(rule.look(stuck, silentSince: Self.since, now: Self.look(2)) != .close(.notReading))
    }

    @Test func resendingWithAcknowledgementsIsKeptUntilTheBound() {
        var rule = SilenceRule(timeout: Self.timeout)
        var lossy = TCPLook(
            lastDataReceivedMs: 2500, lastAckReceivedMs: 400, unacked: 3, retransmits: 2, totalRetransmissions: 7,
            bytesAcked: 1000)
        #expect(rule.look(lossy, silentSince: Self.since, now: Self.look(1)) == .keep(.retransmitting))
        lossy.bytesAcked = 3000
        lossy.lastAckReceivedMs = 2000
        lossy.retransmits = 0
        lossy.totalRetransmissions = 9
        // No timeout pending now, but more retransmissions and more acknowledged than at the previous look.
        #expect(rule.look(lossy, silentSince: Self.since, now: Self.look(2)) == .keep(.retransmitting))
        lossy.bytesAcked = 5000
        lossy.totalRetransmissions = 11
        #expect(rule.look(lossy, silentSince: Self.since, now: Self.look(3)) == .keep(.retransmitting))
        lossy.bytesAcked = 7000
        #expect(rule.look(lossy, silentSince: Self.since, now: Self.look(4)) == .close(.tooLong))
    }

    @Test func resendingWithoutProgressIsClosed() {
        var rule = SilenceRule(timeout: Self.timeout)
        var lossy = TCPLook(
            lastDataReceivedMs: 2500, lastAckReceivedMs: 400, unacked: 3, retransmits: 2, totalRetransmissions: 7,
            bytesAcked: 1000)
        #expect(rule.look(lossy, silentSince: Self.since, now: Self.look(1)) == .keep(.retransmitting))
        // Still resending, but nothing acknowledged since: the link died under it.
        lossy.lastAckReceivedMs = 2900
        lossy.retransmits = 4
        lossy.totalRetransmissions = 9
        #expect(rule.look(lossy, silentSince: Self.since, now: Self.look(2)) == .close(.silent))
    }

    @Test func retransmissionsBeforeTheFirstLookAreNotCurrentLoss() {
        // Many retransmissions over the connection's life, none pending now; the peer's kernel acknowledges, its
        // process sends nothing: one more timeout (peerAcking), not a loss keep, and then closed.
        var rule = SilenceRule(timeout: Self.timeout)
        let old = TCPLook(
            lastDataReceivedMs: 2500, lastAckReceivedMs: 300, unacked: 1, totalRetransmissions: 40, bytesAcked: 100)
        #expect(rule.look(old, silentSince: Self.since, now: Self.look(1)) == .keep(.peerAcking))
        var next = old
        next.bytesAcked = 200
        #expect(rule.look(next, silentSince: Self.since, now: Self.look(2)) == .close(.silent))
    }

    @Test func aPeerWhoseKernelAcknowledgesGetsOneMoreTimeout() {
        // Its pings may be what the link lost; a process that stopped (SIGSTOP) looks the same and goes at 2 T.
        var rule = SilenceRule(timeout: Self.timeout)
        let acking = TCPLook(lastDataReceivedMs: 2500, lastAckReceivedMs: 300, bytesAcked: 100)
        #expect(rule.look(acking, silentSince: Self.since, now: Self.look(1)) == .keep(.peerAcking))
        #expect(rule.look(acking, silentSince: Self.since, now: Self.look(2)) == .close(.silent))
    }

    @Test func aFrameBetweenLooksStartsANewSilence() {
        var rule = SilenceRule(timeout: Self.timeout)
        let acking = TCPLook(lastDataReceivedMs: 2500, lastAckReceivedMs: 300, bytesAcked: 100)
        #expect(rule.look(acking, silentSince: Self.since, now: Self.look(1)) == .keep(.peerAcking))
        // A frame arrived at look(1) + 1 s: the next silence is judged afresh.
        let later = Self.look(1) + .seconds(1)
        #expect(rule.look(acking, silentSince: later, now: later + Self.timeout) == .keep(.peerAcking))
    }

    @Test func theRawStructIsReadAtTheKernelsOffsets() {
        var bytes = [UInt8](repeating: 0, count: TCPLook.rawSize)
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value) { for (index, byte) in $0.enumerated() { bytes[offset + index] = byte } }
        }
        put(UInt8(4), at: 1)
        put(UInt8(2), at: 2)
        put(UInt32(1448), at: 16)
        put(UInt32(3), at: 24)
        put(UInt32(1700), at: 52)
        put(UInt32(60), at: 56)
        put(UInt32(12), at: 100)
        put(UInt64(123_456_789_012), at: 120)
        put(UInt32(999), at: 144)
        put(UInt32(65_000), at: 228)
        let look = bytes.withUnsafeBytes { TCPLook(raw: $0) }
        #expect(
            look
                == TCPLook(
                    lastDataReceivedMs: 1700, lastAckReceivedMs: 60, unacked: 3, retransmits: 2, congestionState: 4,
                    totalRetransmissions: 12, bytesAcked: 123_456_789_012, notSentBytes: 999, sendWindow: 65_000,
                    sendMSS: 1448))
        // A shorter struct (an older kernel) leaves the later fields zero.
        let short = bytes.withUnsafeBytes { TCPLook(raw: UnsafeRawBufferPointer(rebasing: $0[0..<104])) }
        #expect(short.bytesAcked == 0 && short.sendWindow == 0 && short.totalRetransmissions == 12)
    }
}
