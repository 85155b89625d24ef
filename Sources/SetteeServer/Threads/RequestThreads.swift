import Foundation
import SetteeCore
import Synchronization
#if canImport(CDispatch)
import CDispatch  // Linux: where Foundation's C types (`stat`, …) are declared
#endif

/// Threads of a server's own that run its connections and request handlers,
/// as a task executor: the tasks of a running server prefer it, so that the
/// server keeps answering while the process's other tasks hold every thread
/// of Swift's cooperative pool (a long synchronous index build, a JavaScript
/// engine at work, or a test suite running many tests at once).
///
/// The threads may block: a database call a handler makes runs on the
/// handler's thread (``BlockingWorkHost``), not on another thread the handler
/// would wait for, which saves two thread switches per call. A call that
/// runs longer than ``stuckAfter`` (an index build, a full scan, a write
/// waiting for another process) no longer counts as one of the ``target``
/// threads: while jobs wait, a watcher starts another thread in its place
/// (up to ``maximumThreads``), so long calls never hold the short ones back
/// for more than a few milliseconds. Threads beyond ``target`` end once idle.
///
/// Jobs are run first in, first out by whichever thread is free. After
/// ``shutdown()`` the threads finish the jobs already queued and end; a job
/// enqueued later runs on Swift's global concurrent executor.
@available(macOS 15.0, *)
final class RequestThreads: TaskExecutor, BlockingWorkHost, @unchecked Sendable {
    /// How many threads run jobs when no call is stuck.
    let target: Int
    /// The most threads, stuck ones included.
    let maximumThreads: Int
    /// How long a call runs before its thread is replaced while jobs wait.
    let stuckAfter: Duration
    private let name: String

    /// A thread's call under way: when it started (nanoseconds of the
    /// monotonic clock), 0 when none, ``stuck`` once the watcher replaced it.
    private final class Slot: Sendable {
        static let stuck = UInt64.max
        let started = Atomic<UInt64>(0)
    }

    // `@unchecked`: every stored property below is read and written under `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0
    /// Threads started and not ended.
    private var threads = 0
    /// Threads waiting for a job.
    private var waiting = 0
    /// Threads whose call the watcher found stuck, and that have not returned from it.
    private var stuck = 0
    private var slots: [Slot] = []
    private var stopping = false
    /// Whether the watcher is looking (jobs were waiting with no thread free).
    private var watching = false
    private let watcherWake = DispatchSemaphore(value: 0)

    /// Starts `count` threads (at least one), named `name`, and the watcher.
    init(count: Int, name: String = "settee.serve", maximumThreads: Int = 64, stuckAfter: Duration = .milliseconds(5)) {
        target = max(1, count)
        self.maximumThreads = max(target, maximumThreads)
        self.stuckAfter = stuckAfter
        self.name = name
        condition.lock()
        for _ in 0..<target { startThread() }
        condition.unlock()
        NamedThread.start(name: String("\(name).watch".prefix(15)), stackSize: 1 << 20) { [self] in watch() }
    }

    /// Queues a job for the next free thread.
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        guard threads > 0 else {
            condition.unlock()
            globalConcurrentExecutor.enqueue(ExecutorJob(job))
            return
        }
        jobs.append(job)
        if waiting > 0 {
            condition.signal()
            condition.unlock()
        } else if !watching, !stopping {
            // Every thread busy: the watcher looks for stuck ones until the queue empties.
            watching = true
            condition.unlock()
            watcherWake.signal()
        } else {
            condition.unlock()
        }
    }

    /// Runs `body` on the calling thread (one of these threads), where the
    /// watcher can see how long it runs.
    func runBlocking<T>(_ body: () throws -> T) rethrows -> T {
        guard let slot = Self.currentSlot else { return try body() }
        let outer = slot.started.load(ordering: .relaxed)
        if outer != 0 { return try body() }   // a call within a call: timed as one
        slot.started.store(Self.now(), ordering: .relaxed)
        defer {
            if slot.started.exchange(0, ordering: .relaxed) == Slot.stuck {
                condition.lock()
                stuck -= 1
                condition.unlock()
            }
        }
        return try body()
    }

    /// Lets the threads end once the jobs queued are done.
    func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        watcherWake.signal()
    }

    /// Threads running now (busy, stuck or waiting).
    var threadCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return threads
    }

    // MARK: Threads

    /// The calling thread's slot, if it is one of these threads.
    private static let slotKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            if let pointer { Unmanaged<Slot>.fromOpaque(pointer).release() }
        }
        return key
    }()

    private static var currentSlot: Slot? {
        guard let pointer = pthread_getspecific(slotKey) else { return nil }
        return Unmanaged<Slot>.fromOpaque(pointer).takeUnretainedValue()
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec) + 1   // never 0
    }

    /// Starts a thread. Under `condition`.
    private func startThread() {
        threads += 1
        let slot = Slot()
        slots.append(slot)
        // 8 MiB, as the main thread's: request handlers may recurse deeply (JSON, selectors).
        NamedThread.start(name: name) { [self] in work(slot) }
    }

    /// A thread's loop: takes the oldest job and runs it, until shut down
    /// and idle, or idle while more than ``target`` threads are free of stuck calls.
    private func work(_ slot: Slot) {
        pthread_setspecific(Self.slotKey, Unmanaged.passRetained(slot).toOpaque())
        BlockingWork.setHost(self)
        let executor = asUnownedTaskExecutor()
        while let job = take(slot) {
            job.runSynchronously(on: executor)
        }
    }

    /// The oldest job, waiting for one; `nil` when the thread is to end.
    private func take(_ slot: Slot) -> UnownedJob? {
        condition.lock()
        defer { condition.unlock() }
        while next == jobs.count {
            if stopping || threads - stuck > target {
                threads -= 1
                slots.removeAll { $0 === slot }
                return nil
            }
            waiting += 1
            condition.wait()
            waiting -= 1
        }
        let job = jobs[next]
        next += 1
        if next < jobs.count, waiting == 0, !watching, !stopping {
            // More jobs and no thread free: the watcher looks for stuck calls.
            watching = true
            watcherWake.signal()
        }
        if next == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            next = 0
        } else if next >= 1024 {
            jobs.removeFirst(next)
            next = 0
        }
        return job
    }

    // MARK: Watcher

    /// The watcher's loop: sleeps until jobs wait with every thread busy,
    /// then every ``stuckAfter``/2 marks calls that ran longer than
    /// ``stuckAfter`` as stuck and starts threads in their place, until the
    /// queue is empty.
    private func watch() {
        let (seconds, attoseconds) = stuckAfter.components
        let limit = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
        let tick = max(limit / 2, 100_000)
        while true {
            watcherWake.wait()
            var pending = true
            while pending {
                var pause = timespec(tv_sec: Int(tick / 1_000_000_000), tv_nsec: Int(tick % 1_000_000_000))
                nanosleep(&pause, nil)
                condition.lock()
                if stopping {
                    condition.unlock()
                    return
                }
                let now = Self.now()
                for slot in slots {
                    let started = slot.started.load(ordering: .relaxed)
                    if started != 0, started != Slot.stuck, now &- started > limit,
                       slot.started.compareExchange(expected: started, desired: Slot.stuck, ordering: .relaxed).exchanged {
                        stuck += 1
                    }
                }
                while next < jobs.count, threads - stuck < target, threads < maximumThreads {
                    startThread()
                }
                pending = next < jobs.count && waiting == 0
                if !pending { watching = false }
                condition.unlock()
            }
        }
    }
}
