import NIOCore

/// A NIO event loop as a Swift concurrency task executor: the jobs of a task that prefers it run on that loop's
/// thread, between its I/O events.
///
/// Written here because swift-nio (2.101) makes an event loop a `SerialExecutor` (for actors) but not a
/// `TaskExecutor`, which is what `withTaskExecutorPreference` takes. A job enqueued from the loop itself is queued
/// without waking it (NIO wakes a loop only for work that comes from another thread), so a task that awaits a reply
/// on this loop is resumed on it, in the same turn, with no thread hand-off.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, *)
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
