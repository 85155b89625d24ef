import Foundation
import Settee
import SetteeCore
@testable import SetteeServer
import Synchronization
import Testing

@Suite("settee serve's request threads")
struct RequestThreadsTests {
    /// Whether the calling thread is one of `threads`.
    private static func isRequestThread(_ threads: RequestThreads) -> Bool {
        BlockingWork.currentHost === threads
    }

    @Test("A database call made on a request thread runs on that thread; elsewhere on Settee's own threads")
    func databaseCallsRunWhereCalled() async throws {
        let folder = TemporaryDirectory()
        let db = try Database(at: folder.url.appendingPathComponent("db"))
        let threads = RequestThreads(count: 2, name: "test.request")
        defer { threads.shutdown() }
        let onRequestThread = try await Task(executorPreference: threads) {
            try await db.write { _ in Self.isRequestThread(threads) }
        }.value
        let elsewhere = try await db.write { _ in Self.isRequestThread(threads) }
        #expect(onRequestThread)
        #expect(!elsewhere)
        // Named as the system shows them (top -H, debuggers).
        let names = try await Task(executorPreference: threads) {
            try await db.write { _ in NamedThread.currentSystemName }
        }.value
        #expect(names == "test.request")
        let poolName = try await db.write { _ in NamedThread.currentSystemName }
        #expect(poolName == "settee.database")
    }

    @Test("A call that blocks a request thread is replaced while jobs wait; the extra thread ends once it returns")
    func stuckCallsAreReplaced() async throws {
        let threads = RequestThreads(count: 1, name: "test.request", stuckAfter: .milliseconds(5))
        defer { threads.shutdown() }
        let gate = DispatchSemaphore(value: 0)
        let blocked = Atomic<Bool>(false)
        let stuck = Task(executorPreference: threads) {
            threads.runBlocking {
                blocked.store(true, ordering: .sequentiallyConsistent)
                gate.wait()
            }
        }
        while !blocked.load(ordering: .sequentiallyConsistent) { try await Task.sleep(for: .milliseconds(1)) }

        // The only thread is blocked: the job runs on the thread started in its place.
        // (Timed where the job runs: the test's own task may wait for a busy cooperative pool.)
        let started = ContinuousClock.now
        let (onRequestThread, waited) = await Task(executorPreference: threads) {
            (Self.isRequestThread(threads), ContinuousClock.now - started)
        }.value
        #expect(onRequestThread)
        #expect(waited < .seconds(1), "ran after \(waited)")
        #expect(threads.threadCount == 2)

        gate.signal()
        await stuck.value
        // The thread beyond the one asked for ends when it finds no job.
        for _ in 0..<200 where threads.threadCount > 1 {
            _ = await Task(executorPreference: threads) { 0 }.value
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(threads.threadCount == 1)
    }
}
