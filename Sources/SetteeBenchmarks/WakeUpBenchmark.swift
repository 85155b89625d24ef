import Foundation
import Synchronization
import Settee
import SetteeStorage

/// How soon a change feed of this process sees a put of another process, and
/// what watching costs: the CPU of a process that only waits, and the rate
/// of one-put commits while the database is watched.
enum WakeUpBenchmark {
    /// The child process's part (`--put-and-report DB ID`): opens the
    /// database, writes one document, prints the monotonic times the put
    /// began and returned.
    static func putAndReport(database: String, id: String) throws {
        let db = try Database(at: URL(fileURLWithPath: database))
        let began = monotonicNanoseconds()
        try db.put(#"{"_id": "\#(id)", "from": "another process"}"#)
        print(began, monotonicNanoseconds())
    }

    static func run(in directory: URL, idleSeconds: Int, into table: inout Table) throws {
        for mode in [CommitWatch.Mode.automatic, .polling(every: CommitWatch.pollingInterval)] {
            let path = directory.appendingPathComponent("wake-\(mode == .automatic ? "events" : "polling")")
            let db = try Database(at: path)
            db.watchOtherProcesses(mode: mode)
            let name = db.commitWatchMode == .automatic ? "inotify on data.mdb" : "polling the last transaction id every 50 ms"
            let seen = ChangeTimes()
            let since = try db.lastSequence()
            let feed = Task {
                for try await change in db.continuousChanges(since: since) { seen.add(change.sequence) }
            }
            defer { feed.cancel() }

            // Idle: nothing is written, the feed waits.
            let before = Benchmark.cpuSeconds()
            Thread.sleep(forTimeInterval: Double(idleSeconds))
            let idleCPU = Benchmark.cpuSeconds() - before
            table.add("watching another process's writes, idle (\(name))",
                      String(format: "%.2f ms CPU per second (%.3f%% of a core, %d s measured)",
                             idleCPU * 1000 / Double(idleSeconds), idleCPU * 100 / Double(idleSeconds), idleSeconds))

            var latencies: [Double] = []
            var fromReturn: [Double] = []
            for round in 0..<20 {
                let (began, returned) = try putFromChild(database: path.path, id: "w\(round)")
                let expected = UInt64(round + 1)
                let deadline = monotonicNanoseconds() + 5_000_000_000
                var yielded: UInt64?
                while yielded == nil && monotonicNanoseconds() < deadline {
                    yielded = seen.time(of: expected)
                    if yielded == nil { usleep(200) }
                }
                guard let yielded else {
                    table.add("wake-up for another process's put (\(name))", "not seen within 5 s")
                    return
                }
                latencies.append(Double(Int64(yielded) - Int64(began)) / 1_000_000)
                fromReturn.append(Double(Int64(yielded) - Int64(returned)) / 1_000_000)
            }
            latencies.sort()
            fromReturn.sort()
            // From the put's start, an upper bound (it includes the writer's fsyncs); from its
            // return, the feed may be earlier (negative): it wakes on the meta page's write, before its fsync.
            table.add("wake-up of a change feed for another process's put (\(name))",
                      String(format: "from the put's start p50 %.2f ms, max %.2f ms; from its return p50 %.2f ms, max %.2f ms  (%d puts)",
                             latencies[latencies.count / 2], latencies.last ?? 0,
                             fromReturn[fromReturn.count / 2], fromReturn.last ?? 0, latencies.count))
        }

        // The put path: one put per commit, with and without a process watching,
        // in alternating rounds (the disk's fsync time drifts during a run).
        let puts = 2000, rounds = 8
        let plain = try Database(at: directory.appendingPathComponent("puts-unwatched"))
        let watched = try Database(at: directory.appendingPathComponent("puts-watched"))
        watched.watchOtherProcesses(mode: .automatic)
        var totals: [(time: Duration, cpu: Double)] = [(.zero, 0), (.zero, 0)]
        for round in 0..<rounds {
            for (which, db) in [plain, watched].enumerated() {
                let (time, cpu) = try Benchmark.measureCPU {
                    for index in 0..<(puts / rounds) { try db.put(#"{"_id": "p\#(round)-\#(index)"}"#) }
                }
                totals[which].time += time
                totals[which].cpu += cpu
            }
        }
        table.add("put, one per commit, nothing watches", Benchmark.rate(puts, totals[0].time, cpu: totals[0].cpu))
        table.add("put, one per commit, this process watches (inotify)", Benchmark.rate(puts, totals[1].time, cpu: totals[1].cpu))

        // Document listeners: what a commit costs with 1,000 of them, one of which it concerns.
        let listened = try Database(at: directory.appendingPathComponent("listeners"))
        let calls = Mutex(0)
        let tokens = (0..<1000).map { index in
            listened.addDocumentChangeListener(withID: "l\(index)") { _ in calls.withLock { $0 += 1 } }
        }
        defer { tokens.forEach { $0.remove() } }
        let listenedPuts = 500
        let (time, cpu) = try Benchmark.measureCPU {
            for index in 0..<listenedPuts { try listened.put(#"{"_id": "l\#(index)"}"#) }
            let deadline = ContinuousClock.now + .seconds(10)
            while calls.withLock({ $0 }) < listenedPuts && ContinuousClock.now < deadline { usleep(1000) }
        }
        table.add("put, one per commit, 1,000 document listeners (each put calls one)",
                  Benchmark.rate(listenedPuts, time, cpu: cpu) + "  (\(calls.withLock { $0 }) calls)")
    }

    /// Runs this benchmark as a child process that puts `id`; the monotonic times its put began and returned.
    private static func putFromChild(database: String, id: String) throws -> (began: UInt64, returned: UInt64) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        process.arguments = ["--put-and-report", database, id]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let times = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { UInt64($0) }
        guard times.count == 2 else { throw CocoaError(.fileReadCorruptFile) }
        return (times[0], times[1])
    }

    /// CLOCK_MONOTONIC, which both processes share.
    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

/// When the feed yielded each sequence (monotonic nanoseconds).
final class ChangeTimes: Sendable {
    private let times = Mutex<[UInt64: UInt64]>([:])

    func add(_ sequence: UInt64) {
        let now = WakeUpBenchmark.monotonicNanoseconds()
        times.withLock { $0[sequence] = now }
    }

    func time(of sequence: UInt64) -> UInt64? {
        times.withLock { $0[sequence] }
    }
}
