import Foundation
import Synchronization
import Testing
import Settee

/// A model that is not `Sendable` (a class with mutable state): async put and
/// get take it all the same.
private final class Note: Codable {
    var _rev: String?
    var text: String
    var tags: [String]

    init(text: String, tags: [String]) {
        self.text = text
        self.tags = tags
    }
}

private let notesDesign = #"""
    {"_id": "_design/notes", "views": {
      "by_tag": {"map": "function (doc) { (doc.tags || []).forEach(function (tag) { emit(tag, 1); }); }", "reduce": "_count"}
    }}
    """#

/// A map function that spins for `doc.spin` milliseconds on each document.
private let slowDesign = #"""
    {"_id": "_design/slow", "views": {
      "by_n": {"map": "function (doc) { var until = Date.now() + (doc.spin || 0); while (Date.now() < until) {} emit(doc.n, doc.n); }"}
    }}
    """#

private func openDatabase(_ directory: TemporaryDirectory, workers: Int = 1, batch: Int? = nil) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = workers
    if let batch { options.indexBatchSize = batch }
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// `count` documents that each take `spin` milliseconds to map with `slowDesign`.
private func slowDocuments(_ count: Int, spin: Int) -> Data {
    Data((0..<count).map { #"{"_id": "d\#(String(format: "%05d", $0))", "n": \#($0), "spin": \#(spin)}"# }.joined(separator: "\n").utf8)
}

/// Progress reports, gathered from the threads that report them.
private final class Reports<T: Sendable>: Sendable {
    private let values = Mutex<[T]>([])
    func add(_ value: T) { values.withLock { $0.append(value) } }
    var all: [T] { values.withLock { $0 } }
}

/// Whether `body` threw `CancellationError`, and how long it took to.
private func awaitCancellation<T: Sendable>(of task: Task<T, any Error>) async -> (cancelled: Bool, error: (any Error)?) {
    do {
        _ = try await task.value
        return (false, nil)
    } catch is CancellationError {
        return (true, nil)
    } catch {
        return (false, error)
    }
}

/// Cancels `task` from a thread of its own after `delay`, and returns when:
/// not from the test's task, which a busy suite's cooperative pool may
/// resume late, so the cancellation arrives while the work runs.
private func cancel<T: Sendable>(_ task: Task<T, any Error>, after delay: Duration) async -> ContinuousClock.Instant {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            let (seconds, attoseconds) = delay.components
            Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
            let at = ContinuousClock.now
            task.cancel()
            continuation.resume(returning: at)
        }
    }
}

/// When a task ended, as it saw it.
private final class EndTime: Sendable {
    private let instant = Mutex<ContinuousClock.Instant?>(nil)
    func mark() { instant.withLock { $0 = ContinuousClock.now } }
    var value: ContinuousClock.Instant? { instant.withLock { $0 } }
}

@Suite("Async forms and cancellation", .ownThread)
struct AsyncAPITests {
    @Test("Documents: put, get (a non-Sendable model), write, delete, changes, info and sequences, awaited")
    func documents() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let first = try await db.put(Note(text: "hello", tags: ["a"]), id: "n1")
        let note = try #require(try await db.get("n1", as: Note.self))
        #expect(note.text == "hello" && note._rev == first.revision.description)
        note.text = "hello again"
        let second = try await db.put(note, id: "n1")
        #expect(second.revision.generation == 2)
        try await db.put(#"{"_id": "n2", "text": "json"}"#)
        let count = try await db.write { batch in
            try batch.put(#"{"_id": "n3", "text": "batch"}"#)
            return 1
        }
        #expect(count == 1)
        #expect(try await db.document("n2")?.id == "n2")
        try await db.delete("n2", revision: nil)
        #expect(try await db.document("n2") == nil)
        #expect(try await db.documentIncludingDeleted("n2")?.isDeleted == true)
        #expect(try await db.lastSequence() == 5)
        #expect(try await db.changes(since: 3).map(\.id) == ["n3", "n2"])
        let streamed = Reports<String>()
        try await db.forEachChange(since: 0) { streamed.add($0.id) }
        #expect(streamed.all == ["n1", "n3", "n2"])
        let info = try await db.info()
        #expect(info.documentCount == 2 && info.deletedDocumentCount == 1 && info.updateSequence == 5)
        #expect(try await db.allDocuments().rows.map(\.id) == ["n1", "n3"])
        let ids = Reports<String>()
        try await db.forEachDocumentRow { ids.add($0.id ?? "") }
        #expect(ids.all == ["n1", "n3"])
        #expect(try await db.verify().isIntact)
    }

    @Test("Imports with progress, from data, a file and a file handle")
    func imports() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let progress = Reports<Int>()
        let fromData = try await db.importDocuments(Data((#"{"_id": "a"}"# + "\n" + #"{"_id": "b"}"#).utf8)) { progress.add($0.imported) }
        #expect(fromData.imported == 2)
        #expect(progress.all.last == 2)
        let file = directory.file("more.ndjson", contents: #"{"_id": "c"}"# + "\n")
        #expect(try await db.importDocuments(from: file) { _ in }.imported == 1)
        let handle = try FileHandle(forReadingFrom: directory.file("last.ndjson", contents: #"[{"_id": "d"}]"#))
        #expect(try await db.importDocuments(from: handle).imported == 1)
        #expect(try await db.info().documentCount == 4)
    }

    @Test("Design documents and views: load, read, query with progress, update indexes, view info")
    func views() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try await db.loadDesignDocuments(from: directory.file("notes.json", contents: notesDesign))
        #expect(try await db.designDocument("notes")?.id == "_design/notes")
        #expect(try await db.designDocuments().map(\.id) == ["_design/notes"])
        for index in 0..<10 { try await db.put(Note(text: "n\(index)", tags: index.isMultiple(of: 2) ? ["even"] : ["odd"]), id: "n\(index)") }
        let progress = Reports<Int>()
        try await db.updateIndexes { progress.add($0.processed) }
        #expect(progress.all.last == 11)
        #expect(try await db.viewInfo().map(\.indexedSequence) == [11])
        let grouped = try await db.query("notes/by_tag", options: ViewQueryOptions(group: true)) { _ in }
        #expect(grouped.rows.map(\.keyJSON) == [#""even""#, #""odd""#])
        let odd = try await db.query(designDocument: "notes", view: "by_tag", options: ViewQueryOptions(key: "odd", reduce: false))
        #expect(odd.rows.count == 5)
        let keys = Reports<String>()
        try await db.forEachRow("notes/by_tag", options: ViewQueryOptions(reduce: false)) { keys.add($0.keyJSON) }
        #expect(keys.all.count == 10)
    }

    @Test("Attachments, purge and expiration, awaited")
    func attachmentsPurgeExpiration() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let put = try await db.putAttachment(Blob(data: Data("bytes".utf8), contentType: "text/plain"), named: "a.txt", of: "doc", revision: nil)
        #expect(try await db.attachment("a.txt", of: "doc")?.data == Data("bytes".utf8))
        let chunks = Reports<Int>()
        try await db.readAttachment("a.txt", of: "doc") { chunks.add($0.count) }
        #expect(chunks.all == [5])
        let copy = directory.url.appendingPathComponent("copy.txt")
        try await db.writeAttachment("a.txt", of: "doc", to: copy)
        #expect(try Data(contentsOf: copy) == Data("bytes".utf8))
        #expect(try await db.document("doc", attachments: true)?.json.contains("Ynl0ZXM=") == true)
        try await db.removeAttachment("a.txt", of: "doc", revision: put.revision)
        #expect(try await db.attachment("a.txt", of: "doc") == nil)

        let when = Date(timeIntervalSince1970: 4_000_000_000)
        try await db.setExpiration(when, for: "doc")
        #expect(try await db.expiration(of: "doc") == when)
        #expect(try await db.documentsExpiring(before: when.addingTimeInterval(1)).map(\.id) == ["doc"])
        #expect(try await db.purgeExpiredDocuments() == nil)
        try await db.put(#"{"_id": "other"}"#)
        #expect(try await db.purge(["other": []]).purged["other"]?.count == 1)
        try await db.purge("doc")
        #expect(try await db.purgeSequence() == 2)
    }

    @Test("Cancelling a query whose map function is slow interrupts it; the database stays usable and the next query is complete")
    func cancelSlowMap() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory, workers: 2, batch: 50)
        try await db.loadDesignDocuments(from: directory.file("slow.json", contents: slowDesign))
        // About 3 s of JavaScript on two workers.
        try await db.importDocuments(slowDocuments(300, spin: 20))
        let started = Reports<Int>()
        let ended = EndTime()
        let query = Task(executorPreference: OwnThreads.shared) {
            defer { ended.mark() }
            return try await db.query("slow/by_n") { started.add($0.processed) }
        }
        let cancelledAt = await cancel(query, after: .milliseconds(300))
        let outcome = await awaitCancellation(of: query)
        #expect(outcome.cancelled, "\(String(describing: outcome.error))")
        // Without the interruption the functions would run on for about 2.7 s.
        #expect(try #require(ended.value) - cancelledAt < .seconds(2), "the running map functions were interrupted")
        #expect(started.all.last ?? 0 < 300)
        // What the update committed stays; the next query completes it.
        let info = try #require(try await db.viewInfo().first)
        #expect(info.indexedSequence < 301)
        let result = try await db.query("slow/by_n")
        #expect(result.rows.count == 300)
        #expect(result.rows.map(\.keyJSON) == (0..<300).map { "\($0)" })
        #expect(try await db.viewInfo().first?.indexedSequence == 301)
        #expect(try await db.verify().isIntact)
    }

    @Test("Cancelling interrupts a map function mid-call, and the next call on that worker runs normally")
    func cancelRunningFunction() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory, workers: 1)
        try await db.loadDesignDocuments(from: directory.file("slow.json", contents: slowDesign))
        // One call of four seconds (under the five-second time limit).
        let slow = try await db.put(#"{"_id": "slow", "n": 1, "spin": 4000}"#)
        let ended = EndTime()
        let query = Task(executorPreference: OwnThreads.shared) {
            defer { ended.mark() }
            return try await db.query("slow/by_n")
        }
        let cancelledAt = await cancel(query, after: .milliseconds(300))
        let outcome = await awaitCancellation(of: query)
        #expect(outcome.cancelled, "\(String(describing: outcome.error))")
        #expect(try #require(ended.value) - cancelledAt < .seconds(2), "interrupted, not run to its end (3.7 s on)")
        try await db.put(#"{"_id": "slow", "_rev": "\#(slow.revision)", "n": 2, "spin": 0}"#)
        #expect(try await db.query("slow/by_n").rows.map(\.keyJSON) == ["2"])
        #expect(try await db.viewInfo().first?.mapErrors == 0, "the interrupted call was no map error")
    }

    @Test("Cancelling a query interrupts a slow reduce function")
    func cancelSlowReduce() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory, workers: 1)
        try await db.loadDesignDocuments(from: directory.file("sum.json", contents: #"""
            {"_id": "_design/sum", "views": {"total": {
              "map": "function (doc) { emit(doc.n, doc.n); }",
              "reduce": "function (keys, values, rereduce) { var until = Date.now() + 4000; while (Date.now() < until) {} return sum(values); }"}}}
            """#))
        try await db.put(#"{"_id": "a", "n": 1}"#)
        let ended = EndTime()
        let query = Task(executorPreference: OwnThreads.shared) {
            defer { ended.mark() }
            return try await db.query("sum/total")
        }
        let cancelledAt = await cancel(query, after: .milliseconds(300))
        let outcome = await awaitCancellation(of: query)
        #expect(outcome.cancelled, "\(String(describing: outcome.error))")
        #expect(try #require(ended.value) - cancelledAt < .seconds(2), "interrupted, not run to its end (3.7 s on)")
        #expect(try await db.allDocuments().rows.count == 2, "the database answers")
    }

    @Test("Cancelling updateIndexes stops it at the next batch; the next update resumes from what it committed")
    func cancelIndexUpdate() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory, workers: 1, batch: 20)
        try await db.loadDesignDocuments(from: directory.file("slow.json", contents: slowDesign))
        // Built once, so that later changes are kept up batch by batch (not one bulk write at the end).
        try await db.importDocuments(slowDocuments(2000, spin: 0))
        try await db.updateIndexes()
        let base = try await db.lastSequence()
        try await db.importDocuments(Data((0..<100).map { #"{"_id": "e\#($0)", "n": \#(2000 + $0), "spin": 20}"# }.joined(separator: "\n").utf8))
        let batches = Reports<Int>()
        let update = Task(executorPreference: OwnThreads.shared) { try await db.updateIndexes { batches.add($0.processed) } }
        // Wait for two batches to be mapped, then cancel.
        while batches.all.count < 2 { try await Task.sleep(for: .milliseconds(10)) }
        update.cancel()
        let outcome = await awaitCancellation(of: update)
        #expect(outcome.cancelled, "\(String(describing: outcome.error))")
        let committed = try #require(try await db.viewInfo().first?.indexedSequence)
        #expect(committed > base, "the batches written before the cancellation stay")
        #expect(committed < base + 100)
        let resumed = Reports<Int>()
        try await db.updateIndexes { resumed.add($0.processed) }
        #expect(resumed.all.last == Int(base + 100 - committed), "the next update maps only what was left")
        #expect(try await db.query("slow/by_n", options: ViewQueryOptions(update: .false)).rows.count == 2100)
    }

    @Test("Cancelling a query that waits for another task's index build stops the wait; the build goes on")
    func cancelWaitingQuery() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory, workers: 1, batch: 20)
        try await db.loadDesignDocuments(from: directory.file("slow.json", contents: slowDesign))
        // About 4 s of JavaScript on the one worker.
        try await db.importDocuments(slowDocuments(200, spin: 20))
        let building = Reports<Int>()
        let build = Task(executorPreference: OwnThreads.shared) { try await db.updateIndexes { building.add($0.processed) } }
        while building.all.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        // The query runs on a thread of its own and notes the build's progress when it ends, so that a
        // busy cooperative pool resuming this test late does not count.
        let ended = EndTime()
        let builtWhenEnded = Mutex<Int?>(nil)
        let waiting = Task(executorPreference: OwnThreads.shared) {
            defer {
                ended.mark()
                builtWhenEnded.withLock { $0 = building.all.last ?? 0 }
            }
            return try await db.query("slow/by_n")
        }
        let cancelledAt = await cancel(waiting, after: .milliseconds(100))
        let outcome = await awaitCancellation(of: waiting)
        #expect(outcome.cancelled, "\(String(describing: outcome.error))")
        #expect(try #require(ended.value) - cancelledAt < .seconds(2))
        #expect(try #require(builtWhenEnded.withLock { $0 }) < 201, "the query stopped waiting before the build ended")
        try await build.value
        #expect(building.all.last == 201, "the design document and the 200 documents")
        #expect(try await db.query("slow/by_n", options: ViewQueryOptions(update: .false)).rows.count == 200)
    }

    @Test("Cancelling a streamed read stops it before the next row")
    func cancelStreamedRows() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try await db.importDocuments(Data((0..<50).map { #"{"_id": "d\#($0)"}"# }.joined(separator: "\n").utf8))
        let seen = Reports<String>()
        let (started, signal) = AsyncStream.makeStream(of: Void.self)
        // The first row waits for the cancellation (however late a busy machine runs the test's task).
        let cancelled = DispatchSemaphore(value: 0)
        let reading = Task(executorPreference: OwnThreads.shared) {
            try await db.forEachDocumentRow { row in
                seen.add(row.id ?? "")
                signal.yield()
                if seen.all.count == 1 { _ = cancelled.wait(timeout: .now() + 30) }
                // A slow consumer: the task is cancelled while it reads.
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
        for await _ in started { break }
        reading.cancel()
        cancelled.signal()
        let outcome = await awaitCancellation(of: reading)
        #expect(outcome.cancelled, "\(String(describing: outcome.error))")
        #expect(seen.all.count < 50)
    }

    @Test("A live query ends when its task is cancelled mid-run")
    func liveQueryCancelled() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory, workers: 1)
        try await db.loadDesignDocuments(from: directory.file("slow.json", contents: slowDesign))
        try await db.importDocuments(slowDocuments(200, spin: 20))
        let live = Task(executorPreference: OwnThreads.shared) {
            var count = 0
            for try await _ in db.liveQuery("slow/by_n") { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(200))
        live.cancel()
        #expect(try await live.value == 0)
    }
}
