import Foundation
import Testing
@testable import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// What a live find did on one run: the sequence it reflected, whether it yielded.
private struct Run: Sendable, Equatable {
    var sequence: UInt64
    var yielded: Bool
}

/// Iterates a live find in a task, passing each result and each run on to the test.
private final class LiveFindConsumer: Sendable {
    let results: AsyncStream<FindResult>
    let runs: AsyncStream<Run>
    let task: Task<Int, any Error>

    init(_ query: LiveFind) {
        let (results, resultSink) = AsyncStream.makeStream(of: FindResult.self)
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

    /// The run that reflected `sequence` (or a later one).
    func run(reflecting sequence: UInt64, in runs: inout AsyncStream<Run>.Iterator) async -> Run? {
        var run = await runs.next()
        while let current = run, current.sequence < sequence { run = await runs.next() }
        return run
    }
}

private func ids(_ result: FindResult?) -> [String] {
    (result?.documents ?? []).compactMap { $0["_id"]?.stringValue }
}

@Suite("Live find: a find query that answers again when its result changes", .timeLimit(.minutes(1)))
struct LiveFindTests {
    @Test("A live find yields its result, then only when a write changes the documents it returns", arguments: [false, true])
    func yieldsOnRelevantChanges(indexed: Bool) async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        if indexed { try await db.createIndex(IndexRequest(json: #"{"index": {"fields": ["city"]}, "ddoc": "c", "name": "city"}"#)) }
        try await db.put(#"{"_id": "ann", "type": "contact", "city": "Oslo"}"#)
        let consumer = LiveFindConsumer(db.liveFind(FindRequest(selector: ["city": "Oslo"])))
        var results = consumer.results.makeAsyncIterator()
        var runs = consumer.runs.makeAsyncIterator()
        let first = await results.next()
        #expect(ids(first) == ["ann"])
        #expect((first?.warning == nil) == indexed)
        #expect(await runs.next()?.yielded == true)

        // A document that does not match: the query runs again and yields nothing.
        let note = try await db.put(#"{"_id": "note", "type": "note", "city": "Lyon"}"#)
        #expect(await consumer.run(reflecting: note.sequence, in: &runs) == Run(sequence: note.sequence, yielded: false))

        // A match: a new result.
        try await db.put(#"{"_id": "bob", "type": "contact", "city": "Oslo"}"#)
        #expect(ids(await results.next()) == ["ann", "bob"])

        // A returned document rewritten: its new text is a new result.
        let ann = try #require(try await db.document("ann"))
        try await db.put(#"{"_id": "ann", "_rev": "\#(ann.revision)", "type": "contact", "city": "Oslo", "phone": "1"}"#)
        let rewritten = await results.next()
        #expect(rewritten?.documents.first?["phone"] == "1")
        consumer.task.cancel()
        #expect(try await consumer.task.value == 3)
        #expect(try db.store.commits.waiting == 0)
    }

    @Test("With fields, a change to a field not asked for yields nothing; the typed form decodes each result")
    func fieldsAndTyped() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try await db.put(#"{"_id": "ann", "city": "Oslo", "age": 30}"#)
        var request = FindRequest(selector: ["city": "Oslo"])
        request.fields = ["_id", "city"]
        let consumer = LiveFindConsumer(db.liveFind(request))
        var results = consumer.results.makeAsyncIterator()
        var runs = consumer.runs.makeAsyncIterator()
        #expect(await results.next()?.found.map(\.jsonText) == [#"{"_id":"ann","city":"Oslo"}"#])
        #expect(await runs.next()?.yielded == true)
        let ann = try #require(try await db.document("ann"))
        let older = try await db.put(#"{"_id": "ann", "_rev": "\#(ann.revision)", "city": "Oslo", "age": 31}"#)
        #expect(await consumer.run(reflecting: older.sequence, in: &runs) == Run(sequence: older.sequence, yielded: false))
        consumer.task.cancel()
        _ = try await consumer.task.value

        struct Person: Decodable, Equatable { var _id: String; var age: Int }
        var seen: [[Person]] = []
        for try await people in db.liveFind(FindRequest(selector: ["city": "Oslo"]), as: Person.self) {
            seen.append(people)
            if seen.count == 1 {
                try await db.put(#"{"_id": "bob", "city": "Oslo", "age": 40}"#)
            } else {
                break
            }
        }
        #expect(seen == [[Person(_id: "ann", age: 31)], [Person(_id: "ann", age: 31), Person(_id: "bob", age: 40)]])
        #expect(try db.store.commits.waiting == 0)
    }

    @Test("A live find whose query finds the database closed ends, as one waiting for a write does")
    func endsWhenItsQueryFindsTheDatabaseClosed() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try await db.put(#"{"_id": "ann", "city": "Oslo"}"#)
        var iterator = db.liveFind(FindRequest(selector: ["city": "Oslo"])).makeAsyncIterator()
        db.close()
        #expect(try await iterator.next() == nil)

        let again = try openDatabase(directory)
        var next = again.liveFind(FindRequest(selector: ["city": "Oslo"])).makeAsyncIterator()
        #expect(ids(try await next.next()) == ["ann"])
        again.close()
        #expect(try await next.next() == nil, "closed before it waits for a write")
    }

    @Test("A live find follows an index created after it started, and ends when the database closes")
    func followsIndexesAndEndsOnClose() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try await db.put(#"{"_id": "ann", "city": "Oslo"}"#)
        let consumer = LiveFindConsumer(db.liveFind(FindRequest(selector: ["city": "Oslo"])))
        var results = consumer.results.makeAsyncIterator()
        #expect(await results.next()?.warning?.hasPrefix("No matching index found") == true)
        // The same documents, and the warning gone: a new result.
        try await db.createIndex(IndexRequest(json: #"{"index": {"fields": ["city"]}, "ddoc": "c", "name": "city"}"#))
        let indexed = await results.next()
        #expect(indexed?.warning == nil)
        #expect(ids(indexed) == ["ann"])
        db.close()
        #expect(try await consumer.task.value == 2, "the iteration ended with the database")
    }
}
