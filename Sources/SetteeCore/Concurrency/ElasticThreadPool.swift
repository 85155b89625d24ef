package import Foundation

/// Threads for blocking work (LMDB reads and writes, index builds, full
/// scans, waits on other processes), which Swift's cooperative threads must
/// not do: a job starts at once on an idle thread, or on a new one when every
/// thread is busy (up to ``maximumThreads``); a thread idle for
/// ``idleTimeout`` ends.
///
/// A concurrent `DispatchQueue` is not enough: it runs about as many
/// CPU-bound jobs at once as the machine has cores, so two long queries on a
/// two-core machine held every other call (a document read of a microsecond)
/// until one ended.
package final class ElasticThreadPool: @unchecked Sendable {
    /// The most threads the pool runs; further jobs wait for one to finish.
    package let maximumThreads: Int
    /// How long a thread waits for a job before it ends.
    package let idleTimeout: TimeInterval
    private let name: String
    private let stackSize: Int

    private let lock = NSLock()
    /// Jobs no thread has taken yet (every thread busy), oldest at `head`.
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var threads = 0
    /// Threads waiting for a job, the most recently idle last (it is handed
    /// the next job: its stack and caches are the warmest).
    private var idle: [Worker] = []

    /// One thread's mailbox: the job handed to it, and the semaphore it sleeps on.
    private final class Worker: @unchecked Sendable {
        let wake = DispatchSemaphore(value: 0)
        var job: (@Sendable () -> Void)?
    }

    /// - Parameters:
    ///   - name: The threads' name (seen in debuggers and crash reports).
    ///   - stackSize: Each thread's stack, in bytes (8 MiB: JavaScript and
    ///     deep JSON run on these threads as on a main thread).
    package init(name: String, maximumThreads: Int = 64, idleTimeout: TimeInterval = 10, stackSize: Int = 8 << 20) {
        self.name = name
        self.maximumThreads = maximumThreads
        self.idleTimeout = idleTimeout
        self.stackSize = stackSize
    }

    /// Runs `job` on one of the pool's threads.
    package func run(_ job: @escaping @Sendable () -> Void) {
        lock.lock()
        if let worker = idle.popLast() {
            worker.job = job
            lock.unlock()
            worker.wake.signal()
            return
        }
        if threads < maximumThreads {
            threads += 1
            lock.unlock()
            let worker = Worker()
            worker.job = job
            start(worker)
            return
        }
        jobs.append(job)
        lock.unlock()
    }

    /// Threads running now (busy or idle).
    package var threadCount: Int {
        lock.withLock { threads }
    }

    /// Starts a thread for `worker`, whose first job is in its mailbox (a
    /// thread's closure lives as long as the thread: it must not hold the job).
    private func start(_ worker: Worker) {
        NamedThread.start(name: name, stackSize: stackSize) { [self] in work(worker) }
    }

    /// A thread's life: runs its jobs until none comes for `idleTimeout`.
    private func work(_ worker: Worker) {
        var next = lock.withLock { worker.job.take() }
        while true {
            // Taken out before it runs: a job's closure (and what it holds) goes when it ends.
            if let job = next.take() { job() }
            lock.lock()
            if head < jobs.count {
                next = jobs[head]
                jobs[head] = {}
                head += 1
                if head == jobs.count {
                    jobs.removeAll(keepingCapacity: true)
                    head = 0
                }
                lock.unlock()
                continue
            }
            idle.append(worker)
            lock.unlock()
            if worker.wake.wait(timeout: .now() + idleTimeout) == .timedOut {
                lock.lock()
                if let index = idle.firstIndex(where: { $0 === worker }) {
                    // Not handed a job: the thread ends.
                    idle.remove(at: index)
                    threads -= 1
                    lock.unlock()
                    return
                }
                lock.unlock()
                // Handed a job as the wait timed out: its signal is on the way.
                worker.wake.wait()
            }
            lock.lock()
            next = worker.job.take()
            lock.unlock()
        }
    }
}
