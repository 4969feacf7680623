import Testing

@testable import Chirp

/// The bookkeeping of a connection's exchanges that any thread touches (``ExchangeTickets``), as a value: events in,
/// results out, in the orders the threads can make them. No lock, no channel: that a reply is counted out as it is
/// queued, and a wait registered as its frame is, is ConnectionOutboundTests' part.
@Suite(.timeLimit(.minutes(1))) struct ExchangeTicketsTests {
    @Test func requestsAndPingsDrawUniqueIDsAndAPingsWaitCountsFromItsID() {
        var tickets = ExchangeTickets()
        let ids = [tickets.makeRequestID(), tickets.makeRequestID()]
        #expect(ids == [1, 2])
        #expect(!tickets.hasUnfinishedExchanges)  // an id alone is no exchange yet
        let ping = tickets.pingStarting()
        #expect(ping == 3)  // from the same ids as the requests: a pong cannot answer a request's id by mistake
        #expect(tickets.hasUnfinishedExchanges && tickets.waitsUnregistered == 1)
        let pingRegistered = tickets.waitRegistered(ping)
        #expect(pingRegistered)
        #expect(!tickets.hasUnfinishedExchanges)
    }

    /// The race of a cancelled task: its cancellation handler runs after it announced its wait but before the event
    /// loop registered it. The wait fails when the loop gets to it, without being sent; the others are sent.
    @Test func aWaitCancelledBeforeTheLoopRegistersItFailsWithoutBeingSent() {
        var tickets = ExchangeTickets()
        let cancelled = tickets.makeRequestID()
        tickets.waitStarting()
        let other = tickets.pingStarting()
        tickets.waitCancelled(cancelled)
        #expect(tickets.hasUnfinishedExchanges)  // two waits on their way: a retired connection stays open
        let registered = tickets.waitRegistered(cancelled)
        #expect(registered == false, "its frame is not queued")
        #expect(tickets.hasUnfinishedExchanges)  // the other is still on its way
        // The control: the wait of a task not cancelled is registered, in the same state.
        let otherRegistered = tickets.waitRegistered(other)
        #expect(otherRegistered)
        #expect(!tickets.hasUnfinishedExchanges)
        #expect(tickets.cancelledBeforeRegistration.isEmpty)
    }

    /// A cancellation that comes once the wait is registered is the channel handler's (it fails the waiter it holds):
    /// the tickets note nothing then, and forget what they noted once no wait is left to ask for it.
    @Test func aCancellationAfterTheWaitIsRegisteredIsNotNotedAndStaleOnesAreForgotten() {
        var tickets = ExchangeTickets()
        let first = tickets.makeRequestID()
        tickets.waitStarting()
        let firstRegistered = tickets.waitRegistered(first)
        #expect(firstRegistered)
        tickets.waitCancelled(first)
        #expect(tickets.cancelledBeforeRegistration.isEmpty)  // no wait unregistered: it cannot be one of them
        // Noted while another wait is on its way (it could have been that one's), then forgotten when that one is
        // registered: nothing will ask for it.
        let second = tickets.makeRequestID()
        let third = tickets.makeRequestID()
        tickets.waitStarting()
        tickets.waitStarting()
        let secondRegistered = tickets.waitRegistered(second)
        #expect(secondRegistered)
        tickets.waitCancelled(second)
        #expect(tickets.cancelledBeforeRegistration == [second])
        let thirdRegistered = tickets.waitRegistered(third)
        #expect(thirdRegistered)
        #expect(tickets.cancelledBeforeRegistration.isEmpty)
        #expect(!tickets.hasUnfinishedExchanges)
    }

    @Test func aReplyOwedKeepsTheConnectionBusyUntilItIsQueuedOrDropped() {
        var tickets = ExchangeTickets()
        tickets.owesReply()
        tickets.owesReply()
        #expect(tickets.hasUnfinishedExchanges && tickets.repliesOwed == 2)
        tickets.replyEnded()  // queued
        #expect(tickets.hasUnfinishedExchanges)
        tickets.replyEnded()  // dropped: the connection closed
        #expect(!tickets.hasUnfinishedExchanges)
        // A reply not counted as owed (nothing is) does not make the count go below zero: the next one owed counts.
        tickets.replyEnded()
        tickets.owesReply()
        #expect(tickets.hasUnfinishedExchanges && tickets.repliesOwed == 1)
    }
}
