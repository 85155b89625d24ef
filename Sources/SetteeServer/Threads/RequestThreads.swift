import Foundation

/// Threads of a server's own that run its connections and request handlers,
/// as a task executor: the tasks of a running server prefer it, so that the
/// server keeps answering while the process's other tasks hold every thread
/// of Swift's cooperative pool (a long synchronous index build, a JavaScript
/// engine at work, or a test suite running many tests at once).
///
/// Jobs are run first in, first out by whichever thread is free. After
/// ``shutdown()`` the threads finish the jobs already queued and end; a job
/// enqueued later runs on Swift's global concurrent executor.
@available(macOS 15.0, *)
final class RequestThreads: TaskExecutor, @unchecked Sendable {
    // `@unchecked`: every stored property is read and written under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var running = 0
    private var stopping = false

    /// Starts `count` threads (at least one), named `name-1`, `name-2`, ….
    init(count: Int, name: String = "settee.serve") {
        let count = max(1, count)
        running = count
        for index in 1...count {
            let thread = Thread { [self] in work() }
            thread.name = "\(name)-\(index)"
            thread.stackSize = 8 << 20   // as the main thread: request handlers may recurse deeply (JSON, selectors)
            thread.start()
        }
    }

    /// Queues a job for the next free thread.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        guard running > 0 else {
            condition.unlock()
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
            return
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the threads end once the jobs queued are done.
    func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// A thread's loop: takes the oldest job and runs it, until shut down and idle.
    private func work() {
        let executor = asUnownedTaskExecutor()
        while let job = take() {
            job.runSynchronously(on: executor)
        }
    }

    /// The oldest job, waiting for one; `nil` once shut down with none left.
    private func take() -> UnownedJob? {
        condition.lock()
        defer { condition.unlock() }
        while next == jobs.count {
            if stopping {
                running -= 1
                return nil
            }
            condition.wait()
        }
        let job = jobs[next]
        next += 1
        if next == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            next = 0
        } else if next >= 1024 {
            jobs.removeFirst(next)
            next = 0
        }
        return job
    }
}
