import Testing

@testable import Chirp

/// The peer table's rules, one at a time: events in, actions out, time given by the test (Docs/Protocol.md, "One
/// connection per pair"; Docs/Architecture.md, "How peers find each other"). No sockets, no daemon: microseconds each.
@Suite(.timeLimit(.minutes(5))) struct PeerTableTests {
    typealias Table = PeerTable<Int, ContinuousClock.Instant>

    /// A table whose local id is "M": peer "A" has a lower id (it dials us first), peer "Z" a higher one.
    struct Session {
        var table: Table
        let start = ContinuousClock.now
        var elapsed: Duration = .zero

        init(includesTools: Bool = false) {
            table = Table(
                settings: .init(
                    localID: "M", protocolVersion: "1", usesSecret: false, includesTools: includesTools,
                    dialJitter: { 1 }))
        }

        /// Applies `event` at the current time and returns the actions in a short readable form (logs left out).
        mutating func on(_ event: Table.Event) -> [String] {
            let actions = table.handle(event, now: start + elapsed).compactMap(Self.describe)
            // The lookup a send uses agrees with the entries after every event.
            for (id, entry) in table.entries {
                #expect(table.connection(to: id) == entry.slot?.connection, "route of \(id) after \(event)")
            }
            #expect(table.connections.count == table.entries.values.filter { $0.slot != nil }.count, "after \(event)")
            return actions
        }

        mutating func advance(_ duration: Duration) { elapsed += duration }

        var now: ContinuousClock.Instant { start + elapsed }

        /// The generation of the dial last scheduled for `peer` (from the table's entry).
        func generation(_ peer: String) -> UInt64? { table.entries[peer]?.scheduledDial }

        static func describe(_ action: Table.Action) -> String? {
            switch action {
            case .scheduleDial(let id, let delay, _):
                return
                    "dial \(id) in \(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000) ms"
            case .dial(let id, let address, _): return "dial \(id) at \(address.host):\(address.port)"
            case .emit(.peerAdded(let peer)): return "added \(peer.id)"
            case .emit(.peerRemoved(let peer)): return "removed \(peer.id)"
            case .emit(.peerConnected(let peer)): return "connected \(peer.id)"
            case .emit(.peerDisconnected(let peer)): return "disconnected \(peer.id)"
            case .emit(.availablePeersChanged(let peers)): return "peers [\(peers.map(\.id).joined(separator: ","))]"
            case .emit(.connectionRefused(let peer, _)): return "refused \(peer)"
            case .emit(let other): return "event \(other)"
            case .retire(let loser, let holding): return "retire #\(loser)" + (holding.map { " holding #\($0)" } ?? "")
            case .holdOutbound(let winner, let loser): return "hold-out #\(winner) until #\(loser)"
            case .close(let connection): return "close #\(connection)"
            case .lookAtQuiet(let connection, _): return "look #\(connection)"
            case .closeWithGoodbye(let connection): return "goodbye #\(connection)"
            case .instanceConnected(let name): return "resolved-by-connection \(name)"
            case .instanceDisconnected(let name): return "resolve-again \(name)"
            case .resolveAgain(let name, let avoiding):
                return "refresh \(name)" + (avoiding.isEmpty ? "" : " avoiding \(avoiding.joined(separator: ","))")
            case .log: return nil
            }
        }
    }

    static func advert(_ id: String, port: Int = 7000, secret: Bool = false, version: String? = "1") -> Table.Advert {
        Table.Advert(
            instanceName: "\(id) [\(id)]", peerID: id, name: id, protocolVersion: version, usesSecret: secret,
            metadata: [:],
            host: "host.local.", addresses: ["127.0.0.1:\(port)"], dialAddress: .init(host: "127.0.0.1", port: port))
    }

    /// A connection to `id` whose handshake completed: `number` identifies it, `dialer` is who dialed it.
    static func established(_ number: Int, peer id: String, dialer: String, openedAt: ContinuousClock.Instant)
        -> Table.Event
    {
        .established(
            .init(
                connection: number, peer: Peer(id: id, name: id, addresses: ["127.0.0.1:1"], isConnected: true),
                role: dialer == "M" ? .dialer : .acceptor, dialerID: dialer, openedAt: openedAt))
    }

    // MARK: - Dialing

    @Test func aPeerWithAHigherIDIsDialedAtOnce() throws {
        var session = Session()
        _ = session.on(.advertised(true))
        #expect(session.on(.found(Self.advert("Z"))) == ["added Z", "peers [Z]", "dial Z in 0 ms"])
        let generation = try #require(session.generation("Z"))
        #expect(session.on(.dialDue(peerID: "Z", generation: generation)) == ["dial Z at 127.0.0.1:7000"])
    }

    @Test(arguments: [
        // advertised, expected delay: a lower id gets the first dial only once it can have seen us
        (true, "dial A in 1000 ms"),
        (false, "dial A in 0 ms")
    ])
    func aPeerWithALowerIDGetsAHeadStart(advertised: Bool, expected: String) {
        var session = Session()
        _ = session.on(.advertised(advertised))
        #expect(session.on(.found(Self.advert("A"))).last == expected)
    }

    @Test(arguments: [
        // instance name, whether that peer dials us ("8F00BEEF12345678") first
        ("p2 [0000AAAA]", true),  // a lower short id
        ("p2 [FFFF0000]", false),  // a higher one: we dial it
        ("p2 [8F00BEEF]", false),  // our own short id: the whole ids, unknown here, would decide
        ("p2 [8F00BEEE]", true),  // lower in its last character
        ("plain name", false),
        ("p2 []", false)
    ])
    func withOnlyTheInstanceNameALowerShortIDDialsFirst(_ instance: String, _ dialsFirst: Bool) {
        #expect(Table.dialsUsFirst(instanceName: instance, localID: "8F00BEEF12345678") == dialsFirst)
    }

    @Test(arguments: [
        // peer id, local id
        ("0000AAAA-1", "8F00BEEF-2"), ("FFFF0000-1", "8F00BEEF-2"), ("8F00BEEE-9", "8F00BEEF-0"),
        ("8F00BEEF-9", "1F00BEEF-0")
    ])
    func theInstanceNameAndTheWholeIDAgreeWhenTheShortIDsDiffer(_ peerID: String, _ localID: String) {
        let instance = Table.instanceName(name: "p", id: peerID)
        #expect(
            Table.dialsUsFirst(instanceName: instance, localID: localID)
                == Table.dialsFirst(peerID, localID: localID))
        #expect(Table.dialsFirst(peerID, localID: localID) != Table.dialsFirst(localID, localID: peerID))
    }

    @Test func aDueDialOfAnOlderGenerationIsIgnored() throws {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        let first = try #require(session.generation("Z"))
        _ = session.on(.dialDue(peerID: "Z", generation: first))
        _ = session.on(.dialFailed(peerID: "Z", .failed(reason: "timed out", connectionRefused: false)))
        let second = try #require(session.generation("Z"))
        #expect(second != first)
        #expect(session.on(.dialDue(peerID: "Z", generation: first)).isEmpty)  // stale: nothing
        #expect(session.on(.dialDue(peerID: "Z", generation: second)) == ["dial Z at 127.0.0.1:7000"])  // control
    }

    @Test func failedDialsBackOffExponentiallyUpToThirtySeconds() throws {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        var delays: [String] = []
        for _ in 0..<11 {
            _ = session.on(.dialDue(peerID: "Z", generation: try #require(session.generation("Z"))))
            // Nobody there: resolved again, and the dial waits for the answer (the same address here).
            let failed = session.on(.dialFailed(peerID: "Z", .failed(reason: nil, connectionRefused: false)))
            #expect(failed.contains("refresh Z [Z] avoiding 127.0.0.1"))
            delays.append(session.on(.found(Self.advert("Z"))).last ?? "none")
        }
        #expect(
            delays == [
                "dial Z in 100 ms", "dial Z in 200 ms", "dial Z in 400 ms", "dial Z in 800 ms", "dial Z in 1600 ms",
                "dial Z in 3200 ms", "dial Z in 6400 ms", "dial Z in 12800 ms", "dial Z in 25600 ms",
                "dial Z in 30000 ms",
                "dial Z in 30000 ms"
            ])
    }

    @Test func aRefusalWaitsLongBeforeTheNextDial() throws {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(.dialDue(peerID: "Z", generation: try #require(session.generation("Z"))))
        #expect(session.on(.dialFailed(peerID: "Z", .refused)) == ["dial Z in 12800 ms"])
    }

    // MARK: - Stale advertisements

    @Test func anAdvertWhereNothingListensIsHiddenUntilADialSucceeds() throws {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(.dialDue(peerID: "Z", generation: try #require(session.generation("Z"))))
        #expect(
            session.on(.dialFailed(peerID: "Z", .failed(reason: "refused", connectionRefused: true)))
                == ["removed Z", "peers []", "dial Z in 100 ms"])
        #expect(session.table.availablePeers.isEmpty)
        // It was alive after all: the next dial works.
        _ = session.on(.dialDue(peerID: "Z", generation: try #require(session.generation("Z"))))
        #expect(
            session.on(Self.established(1, peer: "Z", dialer: "M", openedAt: session.now))
                == ["added Z", "connected Z", "peers [Z]"])
    }

    @Test func aPeerSeenAgainSoonAfterItWentIsHiddenUntilConfirmed() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        #expect(session.on(.lost(instanceName: "Z [Z]")) == ["removed Z", "peers []"])
        session.advance(.seconds(1))
        // The daemon's cache reports the dead peer's advert again: no "added", but it is still dialed.
        #expect(session.on(.found(Self.advert("Z"))) == ["dial Z in 0 ms"])
        #expect(session.table.availablePeers.isEmpty)
        // Control: after the tombstone's lifetime, the same advert is a peer again.
        _ = session.on(.lost(instanceName: "Z [Z]"))
        session.advance(.seconds(6))
        #expect(session.on(.found(Self.advert("Z"))).prefix(1) == ["added Z"])
    }

    @Test func anAdvertAtANewAddressIsBelievedAgain() throws {
        var session = Session()
        _ = session.on(.found(Self.advert("Z", port: 7000)))
        _ = session.on(.dialDue(peerID: "Z", generation: try #require(session.generation("Z"))))
        _ = session.on(.dialFailed(peerID: "Z", .failed(reason: nil, connectionRefused: true)))
        #expect(session.on(.found(Self.advert("Z", port: 7001))).prefix(2) == ["added Z", "peers [Z]"])
    }

    // MARK: - One connection per pair

    @Test(arguments: [
        // existing dialer, new dialer, local id, remote id, new one kept
        ("M", "Z", "M", "Z", false),  // the lower id's dial is kept, whichever completes first
        ("Z", "M", "M", "Z", true),
        ("A", "M", "M", "A", false),
        ("M", "A", "M", "A", true),
        ("Z", "Z", "M", "Z", true),  // same dialer twice: the peer reconnected, the new one is live
        ("M", "M", "M", "Z", true)
    ])
    func theTieBreakKeepsTheLowerIDsDial(existing: String, new: String, local: String, remote: String, keepsNew: Bool) {
        #expect(
            TieBreak.keepsNew(existingDialer: existing, newDialer: new, localID: local, remoteID: remote) == keepsNew)
    }

    @Test func bothDialedAtOnceTheLoserIsRetiredAndTheWinnerHoldsUntilItIsDone() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        #expect(session.on(Self.established(1, peer: "Z", dialer: "Z", openedAt: session.now)).contains("connected Z"))
        // Our own dial completes second, and wins (M < Z): the first is retired, and what Z sent on it comes first.
        // What we send moves to the winner, which writes nothing until Z has finished on the loser: Z's table may learn
        // of the loser after ours, and holds the winner only from then.
        #expect(
            session.on(Self.established(2, peer: "Z", dialer: "M", openedAt: session.now)) == [
                "hold-out #2 until #1", "retire #1 holding #2"
            ])
        #expect(session.table.connection(to: "Z") == 2)
        // The retired connection closing does not disconnect the peer.
        #expect(session.on(.closed(1, peerID: "Z", peerStopping: false, refusal: nil)).isEmpty)
        #expect(session.table.availablePeers.map(\.isConnected) == [true])
    }

    @Test func bothDialedAtOnceAndTheFirstConnectionWinsOurMessagesStayWhereTheyAre() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        // Our own dial completes first; Z's arrives second and loses (M < Z keeps M's dial). Our messages never moved,
        // so nothing we send waits; what Z sent on the loser still comes first.
        #expect(session.on(Self.established(1, peer: "Z", dialer: "M", openedAt: session.now)).contains("connected Z"))
        #expect(
            session.on(Self.established(2, peer: "Z", dialer: "Z", openedAt: session.now)) == ["retire #2 holding #1"])
        #expect(session.table.connection(to: "Z") == 1)
    }

    /// Z moved (a new address, another interface) and dialed again, while our connection to where it was, which we
    /// dialed (M < Z: the one the tie-break keeps), has brought nothing since: the new one is kept, the old closed.
    @Test func aSecondConnectionFromAPeerWhoseConnectionInUseIsQuietReplacesIt() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "M", openedAt: session.now))
        session.advance(.seconds(5))
        #expect(session.on(Self.established(2, peer: "Z", dialer: "Z", openedAt: session.now)) == ["look #1"])
        #expect(session.table.connection(to: "Z") == 1)
        #expect(session.on(.looked(1, peerID: "Z", quietFor: .seconds(2))) == ["close #1"])
        #expect(session.table.connection(to: "Z") == 2)
        // The old one closing does not disconnect the peer.
        #expect(session.on(.closed(1, peerID: "Z", peerStopping: false, refusal: nil)).isEmpty)
        #expect(session.table.availablePeers.map(\.isConnected) == [true])
    }

    @Test func aSecondConnectionWhileTheOneInUseIsAliveIsRetiredAsTheTieBreakSays() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "M", openedAt: session.now))
        session.advance(.seconds(5))
        #expect(session.on(Self.established(2, peer: "Z", dialer: "Z", openedAt: session.now)) == ["look #1"])
        // The peer sent something 0.2 s ago: alive (its heartbeat sends at least once an interval).
        #expect(session.on(.looked(1, peerID: "Z", quietFor: .milliseconds(200))) == ["retire #2 holding #1"])
        #expect(session.table.connection(to: "Z") == 1)
    }

    @Test func theConnectionInUseEndingWhileASecondWaitsHandsOverWithoutADisconnect() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "M", openedAt: session.now))
        session.advance(.seconds(5))
        #expect(session.on(Self.established(2, peer: "Z", dialer: "Z", openedAt: session.now)) == ["look #1"])
        #expect(session.on(.closed(1, peerID: "Z", peerStopping: false, refusal: nil)).isEmpty)
        #expect(session.table.connection(to: "Z") == 2)
        #expect(session.on(.looked(1, peerID: "Z", quietFor: nil)).isEmpty)
        #expect(session.table.connection(to: "Z") == 2)
    }

    @Test func aSecondConnectionThatClosesWhileItWaitsLeavesTheFirst() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "M", openedAt: session.now))
        session.advance(.seconds(5))
        #expect(session.on(Self.established(2, peer: "Z", dialer: "Z", openedAt: session.now)) == ["look #1"])
        #expect(session.on(.closed(2, peerID: "Z", peerStopping: false, refusal: nil)).isEmpty)
        #expect(session.on(.looked(1, peerID: "Z", quietFor: .seconds(3))).isEmpty)
        #expect(session.table.connection(to: "Z") == 1)
    }

    @Test func aSecondConnectionRightAfterTheFirstIsTheDialRaceAndIsNotLookedAt() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "M", openedAt: session.now))
        session.advance(.milliseconds(300))
        #expect(
            session.on(Self.established(2, peer: "Z", dialer: "Z", openedAt: session.now)) == ["retire #2 holding #1"])
    }

    @Test func aReconnectionFromTheSameDialerReplacesTheStaleConnectionWithoutAHold() {
        var session = Session()
        _ = session.on(Self.established(1, peer: "Z", dialer: "Z", openedAt: session.now))
        #expect(session.on(Self.established(2, peer: "Z", dialer: "Z", openedAt: session.now)) == ["retire #1"])
    }

    // MARK: - Peers that move

    /// Z advertised at `address` (port 7000).
    static func advert(_ id: String, at addresses: [String]) -> Table.Advert {
        var advert = advert(id)
        advert.addresses = addresses.map { "\($0):7000" }
        advert.dialAddress = addresses.first.map { .init(host: $0, port: 7000) }
        return advert
    }

    @Test func aConnectionThatEndsHasItsPeerResolvedAgainBeforeTheRedial() throws {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "M", openedAt: session.now))
        session.advance(.seconds(3))
        #expect(
            session.on(.closed(1, peerID: "Z", peerStopping: false, refusal: nil)) == [
                // The address the connection went to failed: an answer of only that one is not taken, and the dial
                // waits for the answer (up to 1 s).
                "disconnected Z", "peers [Z]", "refresh Z [Z] avoiding 127.0.0.1", "dial Z in 1000 ms"
            ])
        let waiting = session.generation("Z")
        // The answer: Z is elsewhere now. Dialed there at once; the dial that waited does nothing when due.
        #expect(session.on(.found(Self.advert("Z", at: ["10.1.0.2"]))) == ["peers [Z]", "dial Z in 0 ms"])
        let answered = try #require(session.generation("Z"))
        #expect(session.on(.dialDue(peerID: "Z", generation: try #require(waiting))).isEmpty)
        #expect(session.on(.dialDue(peerID: "Z", generation: answered)) == ["dial Z at 10.1.0.2:7000"])
        // Control: a peer that said it stops is not looked for (nor dialed) until it is advertised again.
        _ = session.on(Self.established(2, peer: "Z", dialer: "M", openedAt: session.now))
        #expect(
            !session.on(.closed(2, peerID: "Z", peerStopping: true, refusal: nil)).contains { $0.hasPrefix("refresh") })
    }

    @Test(arguments: [
        // the dial's failure, whether the peer is resolved again
        (Table.DialFailure.failed(reason: "timed out", connectionRefused: false), true),
        (.failed(reason: "refused", connectionRefused: true), false),  // something answered there: not stale
        (.refused, false)
    ])
    func aDialThatFindsNobodyAtTheAddressResolvesThePeerAgain(failure: Table.DialFailure, resolves: Bool) throws {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(.dialDue(peerID: "Z", generation: try #require(session.generation("Z"))))
        // The address dialed is the one to avoid in the answer.
        #expect(session.on(.dialFailed(peerID: "Z", failure)).contains("refresh Z [Z] avoiding 127.0.0.1") == resolves)
    }

    @Test func anAdvertThatNoLongerListsTheAddressOfTheConnectionClosesIt() throws {
        var session = Session()
        _ = session.on(.found(Self.advert("Z", at: ["10.0.0.2"])))
        // Z dialed us from its advertised address (another port).
        _ = session.on(
            .established(
                .init(
                    connection: 1, peer: Peer(id: "Z", name: "Z", addresses: ["10.0.0.2:40000"], isConnected: true),
                    role: .acceptor, dialerID: "Z", openedAt: session.now)))
        // Controls: the same address again, or another one beside it, leaves the connection alone.
        #expect(!session.on(.found(Self.advert("Z", at: ["10.0.0.2"]))).contains("close #1"))
        #expect(!session.on(.found(Self.advert("Z", at: ["10.0.0.2", "10.1.0.2"]))).contains("close #1"))
        // Z moved: its old address is no longer advertised.
        #expect(session.on(.found(Self.advert("Z", at: ["10.1.0.2"]))).contains("close #1"))
        // Its end redials at the new address.
        session.advance(.seconds(3))
        // (once the resolve again answers; the dial waits up to 1 s for it)
        #expect(session.on(.closed(1, peerID: "Z", peerStopping: false, refusal: nil)).last == "dial Z in 1000 ms")
        #expect(session.on(.found(Self.advert("Z", at: ["10.1.0.2"]))).last == "dial Z in 0 ms")
        _ = session.on(.dialDue(peerID: "Z", generation: try #require(session.generation("Z"))))
        #expect(session.table.entries["Z"]?.dialAddress == .init(host: "10.1.0.2", port: 7000))
    }

    @Test func aReportOfOnlyIPv6AddressesLeavesAnIPv4ConnectionAlone() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z", at: ["10.0.0.2"])))
        _ = session.on(
            .established(
                .init(
                    connection: 1, peer: Peer(id: "Z", name: "Z", addresses: ["10.0.0.2:40000"], isConnected: true),
                    role: .acceptor, dialerID: "Z", openedAt: session.now)))
        // Z's link-local address came up after it was resolved; the new answer's IPv4 part was late.
        #expect(!session.on(.found(Self.advert("Z", at: ["fe80::9%eth0"]))).contains("close #1"))
        #expect(session.table.connection(to: "Z") == 1)
    }

    @Test(arguments: [
        // remote, advertised before, advertised now, abandoned
        ("10.0.0.2:40000", ["10.0.0.2:7000"], ["10.0.0.9:7000"], true),
        ("10.0.0.2:7000", ["10.0.0.2:7000", "10.1.0.2:7000"], ["10.1.0.2:7000"], true),
        ("10.0.0.2:40000", ["10.0.0.2:7000"], ["10.0.0.2:7001"], false),  // same address, another port
        ("10.0.0.2:40000", ["10.0.0.2:7000"], [], false),  // no addresses: says nothing
        ("10.5.0.2:40000", ["10.0.0.2:7000"], ["10.0.0.9:7000"], false),  // never advertised: not judged
        ("[fe80::1%eth0]:40000", ["[fe80::1%eth0]:7000"], ["[fe80::2%eth0]:7000"], true),
        ("[fe80::1%eth0]:40000", ["[fe80::1%eth0]:7000"], ["[fe80::1%eth0]:7000", "10.0.0.9:7000"], false),
        // An answer with no address of the connection's kind says nothing about it (a resolve answers one family).
        ("10.0.0.2:40000", ["10.0.0.2:7000"], ["[fe80::9%eth0]:7000"], false),
        ("10.0.0.2:40000", ["10.0.0.2:7000", "[fe80::9%eth0]:7000"], ["[fe80::9%eth0]:7000"], false),
        ("[fe80::1%eth0]:40000", ["[fe80::1%eth0]:7000"], ["10.0.0.9:7000"], false),
        ("[2001:db8::1]:40000", ["[2001:db8::1]:7000"], ["[fe80::1%eth0]:7000"], false),
        ("[2001:db8::1]:40000", ["[2001:db8::1]:7000"], ["[2001:db8::2]:7000", "[fe80::1%eth0]:7000"], true)
    ])
    func aMoveIsAnAdvertisedAddressOfTheConnectionThatIsNoLongerAdvertised(
        remote: String, before: [String], now: [String], abandoned: Bool
    ) {
        #expect(AddressMove.abandons(remote: remote, advertisedBefore: before, advertisedNow: now) == abandoned)
    }

    // MARK: - Stopping peers

    @Test func aPeerThatStoppedWhileItsOtherDialWasInItsHandshakeIsNotConnectedAgain() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "Z", openedAt: session.now))
        let ourDialOpened = session.now + .milliseconds(10)
        session.advance(.milliseconds(50))
        #expect(
            session.on(.closed(1, peerID: "Z", peerStopping: true, refusal: nil)) == ["disconnected Z", "peers [Z]"])
        session.advance(.milliseconds(50))
        // Our dial, opened before Z said goodbye, completes now: it belongs to the run that stopped.
        #expect(session.on(Self.established(2, peer: "Z", dialer: "M", openedAt: ourDialOpened)) == ["close #2"])
        // Control: a connection opened after the goodbye (Z restarted) is a peer again.
        #expect(session.on(Self.established(3, peer: "Z", dialer: "Z", openedAt: session.now)).contains("connected Z"))
    }

    @Test func aStoppedPeerIsNotRedialedUntilItIsAdvertisedAgain() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "Z", openedAt: session.now))
        session.advance(.seconds(3))
        #expect(
            !session.on(.closed(1, peerID: "Z", peerStopping: true, refusal: nil)).contains { $0.hasPrefix("dial") })
        #expect(session.on(.found(Self.advert("Z"))).last == "dial Z in 0 ms")
    }

    @Test(arguments: [
        // how long the connection lasted, the delay of the redial
        (Duration.seconds(1), "dial Z in 100 ms"),
        (Duration.seconds(3), "dial Z in 0 ms")
    ])
    func aShortLivedConnectionCountsAsAFailure(lasted: Duration, expected: String) {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "Z", openedAt: session.now))
        session.advance(lasted)
        #expect(session.on(.closed(1, peerID: "Z", peerStopping: false, refusal: nil)).last == "dial Z in 1000 ms")
        // The answer of the resolve again: the redial's backoff alone.
        #expect(session.on(.found(Self.advert("Z"))).last == expected)
    }

    @Test func aRefusalAfterTheHellosIsReportedAndWaitsLong() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "M", openedAt: session.now))
        let actions = session.on(.closed(1, peerID: "Z", peerStopping: false, refusal: "not on the list"))
        #expect(actions.first?.hasPrefix("refused Z") == true)
        #expect(actions.last == "dial Z in 6400 ms")
    }

    // MARK: - Discovery

    @Test func aPeerWhoseAdvertIsGoneIsForgottenOnlyOnceItsConnectionEnds() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "Z", openedAt: session.now))
        #expect(session.on(.lost(instanceName: "Z [Z]")).isEmpty)
        #expect(
            session.on(.closed(1, peerID: "Z", peerStopping: false, refusal: nil))
                == ["resolve-again Z [Z]", "disconnected Z", "removed Z", "peers []"])
    }

    @Test func aPeerThatDialedUsBeforeWeResolvedItNeedsNoResolveWhileConnected() {
        var session = Session()
        #expect(
            session.on(Self.established(1, peer: "A", dialer: "A", openedAt: session.now)).first
                == "resolved-by-connection A [A]")
        #expect(session.on(.closed(1, peerID: "A", peerStopping: false, refusal: nil)).first == "resolve-again A [A]")
    }

    @Test(arguments: [(true, false), (false, true)])
    func aPeerWithoutTheSameSecretSettingIsReportedOnceAndNotDialed(peerSecret: Bool, ourSecret: Bool) {
        var session = Session()
        session.table = Table(
            settings: .init(localID: "M", protocolVersion: "1", usesSecret: ourSecret, dialJitter: { 1 }))
        let first = session.on(.found(Self.advert("Z", secret: peerSecret)))
        #expect(first.first == "refused Z")
        #expect(!first.contains { $0.hasPrefix("dial") })
        #expect(!session.on(.found(Self.advert("Z", secret: peerSecret))).contains { $0.hasPrefix("refused") })
    }

    @Test func anAdvertOfAnotherProtocolVersionOrOfOurselvesIsIgnored() {
        var session = Session()
        #expect(session.on(.found(Self.advert("Z", version: "2"))).isEmpty)
        #expect(session.on(.found(Self.advert("M"))).isEmpty)
        #expect(session.table.availablePeers.isEmpty)
        #expect(session.on(.found(Self.advert("Z", version: nil))).first == "added Z")  // control: no version given
    }

    // MARK: - Stop

    @Test func stopSaysGoodbyeOnEveryConnectionAndIgnoresWhatFollows() {
        var session = Session()
        _ = session.on(.found(Self.advert("Z")))
        _ = session.on(.found(Self.advert("A")))
        _ = session.on(Self.established(1, peer: "Z", dialer: "Z", openedAt: session.now))
        #expect(session.on(.stop) == ["goodbye #1", "disconnected Z", "peers []"])
        #expect(session.on(.found(Self.advert("Y"))).isEmpty)
        #expect(session.on(Self.established(2, peer: "A", dialer: "A", openedAt: session.now)) == ["retire #2"])
        #expect(session.table.connections.isEmpty)
    }

    // MARK: - Tools

    @Test func aToolIsReachedByNameButNotShownListedOrSentToAll() {
        var session = Session()
        let connected = session.on(
            .established(
                .init(
                    connection: 1,
                    peer: Peer(id: "T", name: "T", addresses: ["127.0.0.1:1"], isConnected: true, role: .tool),
                    role: .acceptor, dialerID: "T", openedAt: session.now)))
        #expect(connected == ["resolved-by-connection T [T]"])
        #expect(session.table.connection(to: "T") == 1)  // its messages are answered, and it is reached by name
        #expect(session.table.recipients.isEmpty && session.table.availablePeers.isEmpty)
        #expect(session.table.counts.available == 0 && session.table.counts.connected == 0)
        #expect(session.on(.closed(1, peerID: "T", peerStopping: false, refusal: nil)) == ["resolve-again T [T]"])
        // An app is shown as ever (the control).
        #expect(
            session.on(Self.established(2, peer: "Z", dialer: "Z", openedAt: session.now)) == [
                "resolved-by-connection Z [Z]", "added Z", "connected Z", "peers [Z]"
            ])
        #expect(session.table.recipients == [2])
    }

    @Test func withToolsIncludedAToolIsAPeerLikeAnyOther() {
        var session = Session(includesTools: true)
        #expect(
            session.on(
                .established(
                    .init(
                        connection: 1,
                        peer: Peer(id: "T", name: "T", addresses: ["127.0.0.1:1"], isConnected: true, role: .tool),
                        role: .acceptor, dialerID: "T", openedAt: session.now)))
                == ["resolved-by-connection T [T]", "added T", "connected T", "peers [T]"])
        #expect(session.table.recipients == [1])
        #expect(session.table.availablePeers.map(\.role) == [.tool])
        #expect(
            session.on(.closed(1, peerID: "T", peerStopping: false, refusal: nil)) == [
                "resolve-again T [T]", "disconnected T", "removed T", "peers []"
            ])
    }
}
