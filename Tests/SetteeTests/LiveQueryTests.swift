import Foundation
import Testing
@testable import Settee

private let peopleDesign = #"""
    {"_id": "_design/people", "views": {
      "by_city": {"map": "function (doc) { if (doc.type === 'contact') emit(doc.city, doc.name); }"}
    }}
    """#

private func openPeople(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
    try db.loadDesignDocuments(from: directory.file("people.json", contents: peopleDesign))
    return db
}

/// What a live query did on one run: the sequence it reflected, whether it yielded.
private struct Run: Sendable, Equatable {
    var sequence: UInt64
    var yielded: Bool
}

/// Iterates a live query in a task, passing each result and each run on to the test.
private final class LiveQueryConsumer: Sendable {
    let results: AsyncStream<ViewResult>
    let runs: AsyncStream<Run>
    let task: Task<Int, any Error>

    init(_ query: LiveQuery) {
        let (results, resultSink) = AsyncStream.makeStream(of: ViewResult.self)
        let (runs, runSink) = AsyncStream.makeStream(of: Run.self)
        self.results = results
        self.runs = runs
        var query = query
        query.runObserver = { sequence, yielded in runSink.yield(Run(sequence: sequence, yielded: yielded)) }
        task = Task {
            defer {
                resultSink.finish()
                runSink.finish()
            }
            var count = 0
            for try await result in query {
                count += 1
                resultSink.yield(result)
            }
            return count
        }
    }
}

private func names(_ result: ViewResult?) -> [String] {
    (result?.rows ?? []).compactMap { try? $0.value(as: String.self) }
}

@Suite("Live queries and the continuous changes feed", .timeLimit(.minutes(1)))
struct LiveQueryTests {
    @Test("A live query yields its result, then only when a write changes its rows")
    func yieldsOnRelevantChanges() async throws {
        let directory = TemporaryDirectory()
        let db = try openPeople(directory)
        try await db.put(#"{"_id": "ann", "type": "contact", "city": "Oslo", "name": "Ann"}"#)
        let consumer = LiveQueryConsumer(db.liveQuery("people/by_city"))
        var results = consumer.results.makeAsyncIterator()
        var runs = consumer.runs.makeAsyncIterator()

        #expect(names(await results.next()) == ["Ann"])
        #expect(await runs.next()?.yielded == true)

        // A document the view does not emit for: the query runs again and yields nothing.
        let note = try await db.put(#"{"_id": "note", "type": "note", "text": "call Ann"}"#)
        var run = await runs.next()
        while let current = run, current.sequence < note.sequence { run = await runs.next() }
        #expect(run == Run(sequence: note.sequence, yielded: false))

        // The same rows rewritten (a new revision emitting the same row): nothing either.
        let ann = try #require(try await db.document("ann"))
        let rewrite = try await db.put(#"{"_id": "ann", "_rev": "\#(ann.revision)", "type": "contact", "city": "Oslo", "name": "Ann", "phone": "1"}"#)
        run = await runs.next()
        while let current = run, current.sequence < rewrite.sequence { run = await runs.next() }
        #expect(run == Run(sequence: rewrite.sequence, yielded: false))

        // A contact: a new result.
        try await db.put(#"{"_id": "bob", "type": "contact", "city": "Bergen", "name": "Bob"}"#)
        #expect(names(await results.next()) == ["Bob", "Ann"])
        consumer.task.cancel()
        #expect(try await consumer.task.value == 2, "two results, for the first run and for Bob")
    }

    @Test("Cancelling the iterating task ends the live query and leaves nothing waiting")
    func endsOnCancel() async throws {
        let directory = TemporaryDirectory()
        let db = try openPeople(directory)
        let consumer = LiveQueryConsumer(db.liveQuery("people/by_city"))
        var results = consumer.results.makeAsyncIterator()
        #expect(names(await results.next()) == [])
        consumer.task.cancel()
        #expect(try await consumer.task.value == 1)
        #expect(await results.next() == nil, "the iteration ended")
        #expect(try db.store.commits.waiting == 0)
        try await db.put(#"{"_id": "ann", "type": "contact", "city": "Oslo", "name": "Ann"}"#)
        #expect(try db.store.commits.waiting == 0)
    }

    @Test("Breaking out of the loop ends the live query")
    func endsOnBreak() async throws {
        let directory = TemporaryDirectory()
        let db = try openPeople(directory)
        try await db.put(#"{"_id": "ann", "type": "contact", "city": "Oslo", "name": "Ann"}"#)
        var seen: [[String]] = []
        for try await result in db.liveQuery("people/by_city") {
            seen.append(names(result))
            if seen.count == 1 {
                try await db.put(#"{"_id": "bob", "type": "contact", "city": "Bergen", "name": "Bob"}"#)
            } else {
                break
            }
        }
        #expect(seen == [["Ann"], ["Bob", "Ann"]])
        #expect(try db.store.commits.waiting == 0)
    }

    @Test("A live query re-runs on a new definition when its design document is reloaded")
    func survivesDesignDocumentReload() async throws {
        let directory = TemporaryDirectory()
        let db = try openPeople(directory)
        try await db.put(#"{"_id": "ann", "type": "contact", "city": "Oslo", "name": "Ann"}"#)
        let consumer = LiveQueryConsumer(db.liveQuery("people/by_city"))
        var results = consumer.results.makeAsyncIterator()
        #expect(try await results.next()?.rows.map { try $0.key(as: String.self) } == ["Oslo"])

        let edited = peopleDesign.replacingOccurrences(of: "emit(doc.city, doc.name)", with: "emit(doc.city.toUpperCase(), doc.name)")
        try await db.loadDesignDocuments(from: directory.file("people.json", contents: edited))
        #expect(try await results.next()?.rows.map { try $0.key(as: String.self) } == ["OSLO"])

        try await db.put(#"{"_id": "bob", "type": "contact", "city": "Bergen", "name": "Bob"}"#)
        #expect(try await results.next()?.rows.map { try $0.key(as: String.self) } == ["BERGEN", "OSLO"])
        consumer.task.cancel()
        _ = try await consumer.task.value
    }

    @Test("The continuous changes feed yields past changes, then new ones as they commit")
    func continuousChanges() async throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try await db.put(#"{"_id": "a"}"#)
        let b = try await db.put(#"{"_id": "b"}"#)
        let collector = Task {
            var seen: [String] = []
            for try await change in db.continuousChanges(since: 0) {
                seen.append("\(change.id)@\(change.sequence)")
                if seen.count == 2 {
                    // The feed has caught up: the next write happens while it waits.
                    try await db.delete("a", revision: nil)
                }
                if seen.count == 3 { break }
            }
            return seen
        }
        #expect(try await collector.value == ["a@1", "b@\(b.sequence)", "a@3"])

        // From a later sequence, in batches larger than one read of the feed.
        let many = (0..<(ChangeFeed.batchSize + 10)).map { #"{"_id": "m\#($0)"}"# }.joined(separator: "\n")
        _ = try await db.importDocuments(Data(many.utf8))
        var count = 0
        for try await change in db.continuousChanges(since: 3) {
            count += 1
            if change.id == "m\(ChangeFeed.batchSize + 9)" { break }
        }
        #expect(count == ChangeFeed.batchSize + 10)
        #expect(try db.store.commits.waiting == 0)
    }

    @Test("A cancelled changes feed ends while waiting")
    func changesFeedEndsOnCancel() async throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let (started, startedSink) = AsyncStream.makeStream(of: Void.self)
        let feed = Task {
            var count = 0
            for try await _ in db.continuousChanges(since: 0) {
                count += 1
                startedSink.yield()
            }
            return count
        }
        try await db.put(#"{"_id": "a"}"#)
        var iterator = started.makeAsyncIterator()
        await iterator.next()
        feed.cancel()
        #expect(try await feed.value == 1)
        #expect(try db.store.commits.waiting == 0)
    }
}
