import Testing

@testable import Chirp
@testable import ChirpDiscovery

/// The pure part of resolving many peers: who is resolved when (Docs/Reliability.md, "64 peers").
@Suite(.timeLimit(.minutes(5))) struct ResolveSchedulerTests {
    /// Starts whatever the scheduler lets run now.
    private func drain(_ scheduler: inout ResolveScheduler) -> [String] {
        var started: [String] = []
        while let name = scheduler.next() { started.append(name) }
        return started
    }

    @Test func resolvesAtMostTheLimitAtOnceInTheOrderSighted() {
        var scheduler = ResolveScheduler(maximum: 2)
        for name in ["a", "b", "c", "d"] { scheduler.enqueue(name) }
        #expect(drain(&scheduler) == ["a", "b"])
        scheduler.finished("a", succeeded: true)
        #expect(drain(&scheduler) == ["c"])
        scheduler.finished("b", succeeded: false)
        scheduler.finished("c", succeeded: true)
        #expect(drain(&scheduler) == ["d"])
        #expect(scheduler.next() == nil)
    }

    @Test func anInstanceIsInLineOnceWhateverTheNumberOfSightings() {
        var scheduler = ResolveScheduler(maximum: 4)
        scheduler.enqueue("a")
        scheduler.enqueue("a")
        scheduler.enqueue("a", later: true)
        #expect(drain(&scheduler) == ["a"])
        scheduler.enqueue("a")  // running: not queued again
        #expect(drain(&scheduler).isEmpty)
    }

    @Test func peersThatDialUsWaitBehindTheOthers() {
        var scheduler = ResolveScheduler(maximum: 1)
        scheduler.enqueue("lower-1", later: true)
        scheduler.enqueue("higher-1")
        scheduler.enqueue("lower-2", later: true)
        scheduler.enqueue("higher-2")
        var order: [String] = []
        while let name = scheduler.next() {
            order.append(name)
            scheduler.finished(name, succeeded: true)
        }
        #expect(order == ["higher-1", "higher-2", "lower-1", "lower-2"])
    }

    @Test func aRefusalPausesHalvesTheSlotsAndPutsTheInstanceFirst() {
        var scheduler = ResolveScheduler(maximum: 4)
        for name in ["a", "b", "c", "d", "e", "f"] { scheduler.enqueue(name) }
        #expect(drain(&scheduler) == ["a", "b", "c", "d"])
        let pause = scheduler.refused("d", jitter: 1)
        #expect(pause == 0.25)
        #expect(scheduler.limit == 2)
        #expect(scheduler.isPaused)
        #expect(scheduler.waiting.first == "d")
        // Further refusals during the pause start no second pause.
        #expect(scheduler.refused("c", jitter: 1) == nil)
        #expect(scheduler.waiting.prefix(2) == ["c", "d"])
        scheduler.finished("a", succeeded: false)
        scheduler.finished("b", succeeded: false)
        #expect(scheduler.next() == nil)  // paused
        scheduler.resume()
        #expect(drain(&scheduler) == ["c", "d"])  // two slots now
    }

    @Test func theBackoffDoublesUpToFiveSecondsAndASuccessResetsIt() {
        var scheduler = ResolveScheduler(maximum: 2)
        scheduler.enqueue("a")
        var pauses: [Double] = []
        for _ in 0..<7 {
            #expect(scheduler.next() == "a")
            pauses.append(scheduler.refused("a", jitter: 1) ?? -1)
            scheduler.resume()
        }
        #expect(pauses == [0.25, 0.5, 1, 2, 4, 5, 5])
        #expect(scheduler.limit == 1)
        #expect(scheduler.next() == "a")
        scheduler.finished("a", succeeded: true)
        #expect(scheduler.limit == 2)
        scheduler.enqueue("b")
        #expect(scheduler.next() == "b")
        #expect(scheduler.refused("b", jitter: 1) == 0.25)
    }

    @Test func aGoneInstanceLeavesTheLineAndItsSlot() {
        var scheduler = ResolveScheduler(maximum: 1)
        scheduler.enqueue("a")
        scheduler.enqueue("b")
        scheduler.enqueue("c", later: true)
        #expect(scheduler.next() == "a")
        scheduler.remove("a")
        scheduler.remove("c")
        #expect(drain(&scheduler) == ["b"])
        #expect(!scheduler.contains("a") && !scheduler.contains("c"))
        scheduler.reset()
        #expect(!scheduler.contains("b"))
        #expect(scheduler.limit == 1)
    }
}
