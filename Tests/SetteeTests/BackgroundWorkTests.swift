import Foundation
import Synchronization
import Testing
import Settee
import SetteeCore

@Suite("Async calls do not wait behind each other's long work", .ownThread)
struct BackgroundWorkTests {
    @Test("A short async call runs while more long CPU-bound async calls run than the machine has cores")
    func shortCallBesideLongOnes() async throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try await db.put(#"{"_id": "a"}"#)
        // Each long call keeps a thread busy for 3 s (a full scan of a large
        // database, a slow change handler): one more than the cores, and at least 3.
        let long = max(3, ProcessInfo.processInfo.activeProcessorCount + 1)
        let times = Times()
        let longCalls = (0..<long).map { _ in
            Task {
                try await db.forEachChange { _ in
                    times.add(\.longStarts)
                    let until = ContinuousClock.now + .seconds(3)
                    while ContinuousClock.now < until {}
                    times.add(\.longEnds)
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while times.count(\.longStarts) < long, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        // Timed where the work runs, not where the task resumes: Swift's
        // cooperative threads may be busy with other tests.
        let asked = ContinuousClock.now
        try await db.forEachChange { _ in times.add(\.shortStarts) }
        for call in longCalls { try await call.value }
        db.close()

        let (starts, ends, short) = (times.all(\.longStarts), times.all(\.longEnds), times.all(\.shortStarts))
        #expect(starts.count == long && short.count == 1)
        #expect(starts.max()! < ends.min()!, "the long calls ran one after another, not together")
        // Only shown when the test's task asked while the long calls ran (a busy suite can hold the task past them).
        if asked < ends.min()! {
            #expect(short[0] < ends.min()!, "the short call waited for a long one to end")
        }
    }
}

/// When the long and short calls started and ended.
private final class Times: Sendable {
    struct Marks {
        var longStarts: [ContinuousClock.Instant] = []
        var longEnds: [ContinuousClock.Instant] = []
        var shortStarts: [ContinuousClock.Instant] = []
    }
    private let marks = Mutex(Marks())
    func add(_ list: any WritableKeyPath<Marks, [ContinuousClock.Instant]> & Sendable) {
        let now = ContinuousClock.now
        marks.withLock { $0[keyPath: list].append(now) }
    }
    func count(_ list: any KeyPath<Marks, [ContinuousClock.Instant]> & Sendable) -> Int { marks.withLock { $0[keyPath: list].count } }
    func all(_ list: any KeyPath<Marks, [ContinuousClock.Instant]> & Sendable) -> [ContinuousClock.Instant] { marks.withLock { $0[keyPath: list] } }
}


@Suite("ElasticThreadPool", .ownThread)
struct ElasticThreadPoolTests {
    @Test("Jobs run together on as many threads as are busy; idle threads end")
    func growsAndShrinks() throws {
        let pool = ElasticThreadPool(name: "test", maximumThreads: 4, idleTimeout: 0.2)
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), finished = DispatchGroup()
        for _ in 0..<6 {
            finished.enter()
            pool.run {
                started.signal()
                release.wait()
                finished.leave()
            }
        }
        // Four jobs run at once (the maximum); the other two wait for a thread.
        for _ in 0..<4 { #expect(started.wait(timeout: .now() + 5) == .success) }
        #expect(started.wait(timeout: .now() + 0.3) == .timedOut)
        #expect(pool.threadCount == 4)
        for _ in 0..<6 { release.signal() }
        #expect(finished.wait(timeout: .now() + 5) == .success)
        let deadline = Date(timeIntervalSinceNow: 5)
        while pool.threadCount > 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(pool.threadCount == 0)
        // A job after the threads ended starts a new one.
        let again = DispatchSemaphore(value: 0)
        pool.run { again.signal() }
        #expect(again.wait(timeout: .now() + 5) == .success)
    }
}
