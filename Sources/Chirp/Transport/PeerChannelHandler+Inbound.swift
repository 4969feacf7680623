import ChirpWire
import NIOCore

/// What the peer sends: each frame to its owner (messages and requests to the ``MessageDispatcher``, answers to our
/// exchanges, goodbyes and refusals to the ``ConnectionLifecycle``), in order, within ``deliveryBudget`` per turn of the
/// event loop, and held while something must come first (``InboundHolds``).
extension PeerChannelHandler {
    /// Runs the handlers of what arrived, in order, for at most ``deliveryBudget`` per turn of the event loop.
    ///
    /// A synchronous handler that takes its time (a millisecond per message, say, as an app that writes each one to
    /// a slow pipe) would otherwise hold the event loop for as long as the frames of a read take: seconds, during
    /// which this side sends no heartbeat, and the peer closes the connection with everything it had queued. Past the
    /// budget, the rest is handled in a task of its own, so that timers (the heartbeat's ping) run in between, and the
    /// connection is not read meanwhile (its read gate is closed): TCP slows the sender instead of this side
    /// buffering. The check reads the clock once every 16 frames.
    func deliverInbox(context: ChannelHandlerContext) {
        guard let connection else { return }
        delivering = true
        let start = turnStart ?? NIODeadline.now()
        turnStart = start
        while let frame = inbox.popFirst() {
            handle(frame, on: connection, context: context)
            handledThisTurn += 1
            if handledThisTurn % 16 == 0, NIODeadline.now() - start > Self.deliveryBudget {
                // The budget of this turn is spent: the rest, and what this read still brings in, in a task of its
                // own; reading waits until it is done. What the handlers queued goes out now.
                readGate?.close(for: ObjectIdentifier(self))
                if drainAfterDelivery {
                    drainAfterDelivery = false
                    drain()
                }
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                context.eventLoop.execute {
                    let (handler, context) = loopBound.value
                    handler.startTurn()
                    handler.deliverInbox(context: context)
                }
                return
            }
        }
        delivering = false
        if drainAfterDelivery {
            drainAfterDelivery = false
            drain()
        }
        readGate?.open(for: ObjectIdentifier(self))
    }

    /// A new turn of the event loop: the handlers get a new budget.
    func startTurn() {
        turnStart = nil
        handledThisTurn = 0
    }

    /// How long handlers may run in one turn of the event loop before the rest waits for the next turn.
    static let deliveryBudget: TimeAmount = .milliseconds(50)

    /// Why what a peer sends on a connection waits (``inboundHolds``).
    struct InboundHolds: OptionSet {
        let rawValue: UInt8
        /// Until the events of the handshake (`peerConnected`) reached the app.
        static let untilConnectedEvent = InboundHolds(rawValue: 1 << 0)
        /// Until the peer's other connection, which lost a tie-break, delivered everything.
        static let untilPredecessorFinished = InboundHolds(rawValue: 1 << 1)
    }

    /// Starts holding what the peer sends until its other connection finished; `false` when already holding for
    /// that, or closed.
    func startHold() -> Bool {
        guard !inboundHolds.contains(.untilPredecessorFinished), context != nil, connection != nil else { return false }
        inboundHolds.insert(.untilPredecessorFinished)
        return true
    }

    /// Ends the hold until the peer's other connection finished.
    func releaseHold() {
        releaseHold(.untilPredecessorFinished)
    }

    /// Ends the holds `reasons`; once none is left, delivers what was held, in order, after what arrived before it.
    func releaseHold(_ reasons: InboundHolds) {
        guard !inboundHolds.isDisjoint(with: reasons), closedWhileHolding || context != nil else { return }
        inboundHolds.subtract(reasons)
        guard inboundHolds.isEmpty else { return }
        if closedWhileHolding {
            closedWhileHolding = false
            if let connection { finishClosed(connection, context: context) }
        } else if let context {
            moveHeldToInbox()
            if !delivering { deliverInbox(context: context) }
        }
    }

    /// Runs `callback` once the peer can send nothing more on this connection.
    func whenInboundFinished(_ callback: @escaping @Sendable () -> Void) {
        if inboundFinished { callback() } else { inboundFinishedCallbacks.append(callback) }
    }

    /// Queues the frames held while the connection waited for the peer's other connection after what arrived before.
    private func moveHeldToInbox() {
        while let frame = held.popFirst() { inbox.append(frame) }
        heldBytes = 0
    }

    /// Handles one frame. `context` is `nil` once the channel is gone (``finishClosed(_:context:)``): nothing is
    /// written then.
    private func handle(_ frame: Frame, on connection: PeerConnection, context: ChannelHandlerContext?) {
        do {
            switch frame.knownKind {
            case .message:
                dispatcher.route(try FrameParser.message(frame.body, names: &typeNames), from: connection)
            case .request:
                dispatcher.handleRequest(try FrameParser.request(frame.body, names: &typeNames), from: connection)
            case .response:
                let response = try FrameParser.response(frame.body, names: &typeNames)
                answered(exchanges.responseArrived(response.requestID)) { $0.succeed(response) }
            case .ping:
                guard let context else { return }  // closed: nobody to answer
                // Built in the memory of the last pong, which the socket has taken by now as a rule (when it has
                // not, `clear()` copies on write: the bytes NIO still holds stay as they are).
                var pong = sparePong.take() ?? context.channel.allocator.buffer(capacity: 16)
                pong.clear()
                FrameWriter.write(.pong, into: &pong) { $0.writeImmutableBuffer(frame.body) }
                context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
                if pong.capacity <= 1024 { sparePong = pong }  // not a large one a peer's odd ping made
            case .pong:
                // A heartbeat's pong is empty; a ping's carries its id.
                guard let id = frame.body.getInteger(at: frame.body.readerIndex, as: UInt64.self) else { return }
                answered(exchanges.pongArrived(id)) { $0.succeed(()) }
            case .goodbye:
                let reason =
                    frame.body.getString(at: frame.body.readerIndex, length: min(frame.body.readableBytes, 256)) ?? ""
                perform(lifecycle.receivedGoodbye(reason: reason, exchangesInFlight: exchangesInFlight))
            case .refuse:
                // The peer's accept policy refused us after it said hello (we dialed it): not established after all.
                let reason = frame.body.getString(
                    at: frame.body.readerIndex, length: min(frame.body.readableBytes, 1024))
                perform(lifecycle.receivedRefusal(reason: reason ?? "no reason given"))
            case .part:
                guard let whole = try parts.add(frame.body) else { return }
                handle(whole, on: connection, context: context)
            case .hello:
                logger.debug("ignoring a repeated handshake frame", metadata: ["peer": "\(connection.peer)"])
            case .pair:
                // Pairing travels only on a connection whose hellos asked for it, which never gets here.
                logger.debug("ignoring a pairing frame outside a pairing", metadata: ["peer": "\(connection.peer)"])
            case nil:
                logger.debug(
                    "skipping a frame of unknown kind",
                    metadata: ["peer": "\(connection.peer)", "kind": "\(frame.kind)"])
            }
        } catch let error as PartError {
            // The stream of parts is out of step: what follows cannot be trusted to reassemble. Closed, and said why.
            dispatcher.metrics.framesRefused.increment()
            dispatcher.report(
                .protocolViolation(peer: connection.peer, reason: "\(error)", cause: error), logLevel: .warning)
            context?.close(promise: nil)
        } catch {
            // A malformed frame is skipped; the stream stays in sync thanks to the length prefix.
            dispatcher.metrics.framesRefused.increment()
            dispatcher.report(
                .protocolViolation(peer: connection.peer, reason: "\(error)", cause: error), logLevel: .warning)
        }
    }

    /// The channel closed and nothing holds what the peer sent any more: what arrived is delivered, in order.
    func deliverEverythingLeft(on connection: PeerConnection, context: ChannelHandlerContext?) {
        inboundHolds = []
        moveHeldToInbox()
        while let frame = inbox.popFirst() { handle(frame, on: connection, context: context) }
    }
}
