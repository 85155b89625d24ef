import Foundation
import Synchronization
import Testing
@testable import Settee

/// A sum whose every call busy-waits 1.2 s once its values reach a million:
/// the initial build (small values) is quick, and every chunk that holds the
/// one large row added afterwards (at every level) is slow to reduce.
private let slowReduceDesign = #"""
    {"_id": "_design/slow", "views": {
      "total": {"map": "function (doc) { emit(doc.n, doc.n); }",
                "reduce": "function (keys, values, rereduce) { var total = sum(values); if (total >= 1000000) { var end = Date.now() + 1200; while (Date.now() < end) {} } return total; }"}}}
    """#

/// What the test's threads report.
private final class PutProgress: Sendable {
    private let done = Atomic<Bool>(false)
    var updateDone: Bool { done.load(ordering: .relaxed) }
    func setUpdateDone() { done.store(true, ordering: .relaxed) }
    let threadPut = Mutex<Duration?>(nil)
}

@Suite("The writer lock and JavaScript", .ownThread)
struct WriterLockTests {
    @Test("Puts from another thread and another process commit at once while an index update runs a slow JavaScript reduce")
    func putsDoNotWaitForJavaScriptReduce() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        var options = Database.Options()
        options.javaScriptWorkers = 1
        options.javaScript.timeout = .seconds(20)
        let db = try Database(at: url, options: options)
        let lines = (0..<300).map { #"{"_id": "d\#(String(format: "%04d", $0))", "n": \#($0)}"# }.joined(separator: "\n")
        _ = try db.importDocuments(Data(lines.utf8))
        try db.loadDesignDocuments(from: directory.file("slow.json", contents: slowReduceDesign))
        try db.updateIndexes()

        /// The quicker of two `settee put` processes started together, start to
        /// exit: a process starting on a busy machine can lose a time slice,
        /// but two waiting for the writer lock both wait.
        func quickestProcessPut(_ name: String) throws -> Duration {
            let start = ContinuousClock.now
            let children = try (0..<2).map { run in
                try settee.start(["put", #"{"_id": "\#(name)\#(run)"}"#, "--db", url.path], in: directory.url)
            }
            // Each one's end, as it comes (waiting for one in turn would time the other late).
            var ends: [pid_t: Duration] = [:]
            while ends.count < children.count && ContinuousClock.now - start < .seconds(60) {
                for child in children where ends[child.pid] == nil {
                    var status: Int32 = 0
                    if waitpid(child.pid, &status, WNOHANG) == child.pid {
                        ends[child.pid] = ContinuousClock.now - start
                        #expect(status == 0, "settee put exited with status \(status)")
                    }
                }
                usleep(1000)
            }
            return try #require(ends.values.min())
        }
        // A baseline for the process: what a `settee put` takes with nothing running.
        let idle = try quickestProcessPut("idle")

        // A small update whose chunks all need the slow reduce.
        _ = try db.put(#"{"_id": "large", "n": 1000000}"#)
        let progress = PutProgress()
        let updateStart = ContinuousClock.now
        let updater = Thread {
            try? db.updateIndexes()
            progress.setUpdateDone()
        }
        updater.start()
        // Mapping one document takes milliseconds: by now the reduce runs.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!progress.updateDone)

                let putter = Thread {
            let start = ContinuousClock.now
            if (try? db.put(#"{"_id": "thread", "n": 1}"#)) != nil { progress.threadPut.withLock { $0 = ContinuousClock.now - start } }
        }
        putter.start()
        let processStart = ContinuousClock.now
        // A loaded machine (the rest of the suite runs alongside) can delay a
        // process start by more than the bound: a pair that lost time slices
        // is tried again while the reduce still runs (each call takes seconds,
        // so a put waiting for the writer lock would wait that long every time).
        var processPut = try quickestProcessPut("process")
        while progress.threadPut.withLock({ $0 }) == nil && ContinuousClock.now - processStart < .seconds(30) { Thread.sleep(forTimeInterval: 0.01) }
        // Both puts finished while the update was still reducing.
        #expect(!progress.updateDone)
        for attempt in 1..<4 where processPut - idle >= .milliseconds(100) && !progress.updateDone {
            let again = try quickestProcessPut("process\(attempt)-")
            if !progress.updateDone { processPut = min(processPut, again) }
        }
        // Meanwhile a query not waiting for the update reduces exactly: from the
        // chunks before the update, or by walking the rows while they are stale.
        let before = (0..<300).reduce(0, +)
        let meanwhile = try db.query("slow/total", options: ViewQueryOptions(parameters: [("stale", "ok")]))
        #expect([.number(Double(before)), .number(Double(before + 1_000_000))].contains(try meanwhile.rows.first?.value))
        while !progress.updateDone { Thread.sleep(forTimeInterval: 0.01) }
        let update = ContinuousClock.now - updateStart

        let threadLatency = try #require(progress.threadPut.withLock { $0 })
        #expect(update > .seconds(2), "the update should have spent seconds in the reduce (took \(update))")
        #expect(threadLatency < .milliseconds(100), "a put from another thread took \(threadLatency) (update \(update))")
        #expect(processPut - idle < .milliseconds(100), "a settee put took \(processPut), \(idle) when idle (update \(update))")

        // The reduction is still exact (the stored chunks are current again).
        let result = try db.query("slow/total", options: ViewQueryOptions(parameters: [("stale", "ok")]))
        #expect(try result.rows.first?.value == .number(Double(before + 1_000_000)))
    }

    @Test("A slow validate_doc_update holds no writer: a put from another thread and another process commit while it runs")
    func putsDoNotWaitForValidation() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        var options = Database.Options()
        options.javaScriptWorkers = 2
        let db = try Database(at: url, options: options)
        _ = try db.put(#"{"_id": "_design/checks", "validate_doc_update": "function (newDoc) { if (newDoc.slow) { var end = Date.now() + 1500; while (Date.now() < end) {} } if (newDoc.refused) { throw({forbidden: 'refused'}); } }"}"#)
        func processPut(_ id: String) throws -> Duration {
            let start = ContinuousClock.now
            let child = try settee.start(["put", #"{"_id": "\#(id)"}"#, "--db", url.path], in: directory.url)
            var status: Int32 = 0
            waitpid(child.pid, &status, 0)
            #expect(status == 0, "settee put exited with status \(status)")
            return ContinuousClock.now - start
        }
        let idle = try processPut("idle")
        let progress = PutProgress()
        let slow = Thread {
            _ = try? db.put(#"{"_id": "slow", "slow": true}"#)
            progress.setUpdateDone()
        }
        slow.start()
        Thread.sleep(forTimeInterval: 0.3)
        let threadStart = ContinuousClock.now
        _ = try db.put(#"{"_id": "thread"}"#)
        let threadPut = ContinuousClock.now - threadStart
        let processed = try processPut("process")
        // Both committed while the slow validation still ran (1.5 s from its start).
        let slowEnded = progress.updateDone
        #expect(!slowEnded, "the slow validation ended before the other puts were timed")
        #expect(threadPut < .milliseconds(500), "a put from another thread took \(threadPut)")
        #expect(processed - idle < .milliseconds(500), "a settee put took \(processed), \(idle) when idle")
        while !progress.updateDone { Thread.sleep(forTimeInterval: 0.01) }
        #expect(try db.document("slow") != nil)
    }

    @Test("An edit checked ahead is checked again in its transaction when the validation functions changed meanwhile")
    func validationChangedMeanwhile() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 2
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        let slowCheck = #"function (newDoc) { if (newDoc.slow) { var end = Date.now() + 1000; while (Date.now() < end) {} } }"#
        let design = try db.put(#"{"_id": "_design/checks", "validate_doc_update": \#(JSONValue.string(slowCheck).jsonText)}"#)
        let outcome = Mutex<Result<WriteResult, any Error>?>(nil)
        let slow = Thread {
            let result = Result { try db.put(#"{"_id": "slow", "slow": true}"#) }
            outcome.withLock { $0 = result }
        }
        slow.start()
        Thread.sleep(forTimeInterval: 0.3)
        // While the first check runs, the design document changes to refuse everything.
        _ = try db.put(#"{"_id": "_design/checks", "_rev": "\#(design.revision)", "validate_doc_update": "function () { throw({forbidden: 'closed'}); }"}"#)
        while outcome.withLock({ $0 }) == nil { Thread.sleep(forTimeInterval: 0.01) }
        let result = try #require(outcome.withLock { $0 })
        #expect(throws: DocumentError.self) { try result.get() }
        #expect(try db.document("slow") == nil)
    }
}
