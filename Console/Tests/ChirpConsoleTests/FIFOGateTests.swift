import ChirpTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import ChirpConsole

/// The gate of the store's writer: one at a time, first come first served, and a waiter that is cancelled leaves.
@Suite(.timeLimit(.minutes(1))) struct FIFOGateTests {
    /// A task that waits for its turn at `gate`, notes `id` in `order` when it has it, and leaves.
    static func turn(_ id: Int, at gate: FIFOGate, order: NIOLockedValueBox<[Int]>) -> Task<Void, any Error> {
        Task {
            try await gate.enter()
            order.withLockedValue { $0.append(id) }
            gate.leave()
        }
    }

    @Test func waitersGetTheirTurnsInTheOrderTheyArrived() async throws {
        let gate = FIFOGate()
        let order = NIOLockedValueBox<[Int]>([])
        try await gate.enter()  // open: through at once
        var tasks: [Task<Void, any Error>] = []
        for id in 1...8 {
            tasks.append(Self.turn(id, at: gate, order: order))
            // Each queues before the next starts, so the order they arrived in is known.
            #expect(await eventually(timeout: .seconds(10)) { gate.waiting == id })
        }
        #expect(order.withLockedValue { $0 }.isEmpty)  // none went through while the gate was taken
        gate.leave()
        for task in tasks { try await task.value }
        #expect(order.withLockedValue { $0 } == Array(1...8))
        #expect(gate.waiting == 0)
        try await gate.enter()  // open again once the last left
        gate.leave()
    }

    @Test func aCancelledWaiterLeavesTheQueueAndTheNextGetsItsTurn() async throws {
        let gate = FIFOGate()
        let order = NIOLockedValueBox<[Int]>([])
        try await gate.enter()
        let first = Self.turn(1, at: gate, order: order)
        #expect(await eventually(timeout: .seconds(10)) { gate.waiting == 1 })
        let second = Self.turn(2, at: gate, order: order)
        #expect(await eventually(timeout: .seconds(10)) { gate.waiting == 2 })
        first.cancel()
        await #expect(throws: CancellationError.self) { try await first.value }
        #expect(gate.waiting == 1)
        gate.leave()
        try await second.value
        #expect(order.withLockedValue { $0 } == [2])
        // A task cancelled before it comes to a taken gate does not queue; one that finds it open goes through.
        try await gate.enter()
        let late = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await gate.enter()
        }
        await #expect(throws: CancellationError.self) { try await late.value }
        #expect(gate.waiting == 0)
        gate.leave()
        try await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await gate.enter()
            gate.leave()
        }.value
    }
}
