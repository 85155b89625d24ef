import Foundation
import Synchronization
import Testing
import SetteeCore

/// Threads of their own for the tasks preferring them: a task measured
/// there resumes on time even while other suites' synchronous tests hold
/// every thread of the cooperative pool (two on a two-core machine). A job
/// that finds every thread busy gets a new one, so tasks here never wait
/// for each other.
final class OwnThreads: TaskExecutor {
    /// The threads every test shares.
    static let shared = OwnThreads()

    private let pool = ElasticThreadPool(name: "test-own-thread", maximumThreads: 256, idleTimeout: 5)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pool.run { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// Runs each test (of a suite, when given to the suite) on ``OwnThreads``
/// rather than on the cooperative pool, as many at once as the machine has
/// cores: for tests that keep a thread busy for long (processes waited for,
/// large builds, JavaScript that spins). Swift Testing runs synchronous tests
/// on the cooperative pool, two threads on a two-core machine; two such tests
/// there held it for seconds, and every async test and async call of the
/// suite waited that long to resume. A test's time limit counts its wait
/// for a turn: give such suites minutes to spare.
struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        guard testCase != nil else { return try await function() }
        await OwnThreadTurns.shared.take()
        defer { OwnThreadTurns.shared.give() }
        try await withTaskExecutorPreference(OwnThreads.shared) { try await function() }
    }
}

/// How many tests run on ``OwnThreads`` at once; the rest wait their turn
/// without holding a thread.
private final class OwnThreadTurns: Sendable {
    static let shared = OwnThreadTurns(count: ProcessInfo.processInfo.activeProcessorCount)

    private let state: Mutex<(free: Int, waiting: [CheckedContinuation<Void, Never>])>

    init(count: Int) {
        state = Mutex((free: max(1, count), waiting: []))
    }

    func take() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func give() {
        let next = state.withLock { state in
            if state.waiting.isEmpty {
                state.free += 1
                return nil as CheckedContinuation<Void, Never>?
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test on a thread of its own, off the cooperative pool (see ``OwnThreadTrait``).
    static var ownThread: Self { OwnThreadTrait() }
}

@Suite("Tests with threads of their own", .ownThread)
struct OwnThreadTests {
    @Test("A test given .ownThread resumes on time while synchronous work holds every thread of the cooperative pool")
    func resumesWhilePoolIsHeld() async throws {
        let holders = ProcessInfo.processInfo.activeProcessorCount * 2
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        for _ in 0..<holders {
            Task.detached {
                held.signal()
                _ = release.wait(timeout: .now() + 1.5)
            }
        }
        defer { for _ in 0..<holders { release.signal() } }
        // At least as many holders as the pool has threads have started.
        for _ in 0..<ProcessInfo.processInfo.activeProcessorCount { held.wait() }
        // Resumed from a thread of its own (Task.sleep's timer may itself wait for the pool).
        let started = ContinuousClock.now
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: 0.05)
                continuation.resume()
            }
        }
        #expect(ContinuousClock.now - started < .milliseconds(1000), "resumed while the pool was held")
    }

    @Test("A synchronous test given .ownThread runs on a thread of its own, not on the cooperative pool")
    func synchronousTestRunsOnItsOwnThread() throws {
        let name = try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        #expect(name.trimmingCharacters(in: .whitespacesAndNewlines) == "test-own-thread")
    }
}
