import Foundation
import Testing
import Settee

/// Collects what a listener is called with, for the test to wait on.
private final class Calls<Element: Sendable>: Sendable {
    let stream: AsyncStream<Element>
    let sink: AsyncStream<Element>.Continuation

    init() {
        (stream, sink) = AsyncStream.makeStream(of: Element.self)
    }

    /// The next call, or nil when none comes within `limit`.
    func next(within limit: Duration = .seconds(10)) async -> Element? {
        let stream = stream
        return await withTaskGroup(of: Element?.self) { group in
            group.addTask {
                var iterator = stream.makeAsyncIterator()
                return await iterator.next()
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
    }
}

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    try Database(at: directory.url.appendingPathComponent("db"))
}

@Suite("Change listeners and document changes", .timeLimit(.minutes(1)))
struct ChangeListenerTests {
    @Test("A document listener is called for its document only, in order, and no more after remove")
    func documentListener() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let calls = Calls<Change>()
        let token = db.addDocumentChangeListener(withID: "ann") { calls.sink.yield($0) }

        try await db.put(#"{"_id": "bob"}"#)
        let ann = try await db.put(#"{"_id": "ann", "n": 1}"#)
        try await db.put(#"{"_id": "carl"}"#)
        let first = await calls.next()
        #expect(first?.id == "ann")
        #expect(first?.revision == ann.revision)
        #expect(first?.sequence == ann.sequence)

        let deleted = try await db.delete("ann", revision: ann.revision)
        let second = await calls.next()
        #expect(second == Change(sequence: deleted.sequence, id: "ann", revision: deleted.revision, isDeleted: true))

        token.remove()
        try await db.put(#"{"_id": "ann", "n": 2}"#)
        // A second listener sees this write: by then the removed one would have been called too.
        let later = Calls<Change>()
        let witness = db.addDocumentChangeListener(withID: "ann") { later.sink.yield($0) }
        defer { witness.remove() }
        let again = try await db.put(#"{"_id": "ann", "_rev": "\#(try #require(try await db.document("ann")).revision)", "n": 3}"#)
        #expect(await later.next()?.sequence == again.sequence)
        #expect(await calls.next(within: .milliseconds(300)) == nil, "nothing after remove()")
    }

    @Test("A database listener is called with every change, on the queue given")
    func databaseListener() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let queue = DispatchQueue(label: "test.listener")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let calls = Calls<(DatabaseChange, Bool)>()
        let token = db.addChangeListener(queue: queue) { change in
            calls.sink.yield((change, DispatchQueue.getSpecific(key: key) == true))
        }
        defer { token.remove() }
        try await db.put(#"{"_id": "a"}"#)
        var ids: [String] = []
        while ids.count < 1, let (change, onQueue) = await calls.next() {
            #expect(onQueue, "called on the queue given")
            ids += change.documentIDs
        }
        try await db.write { batch in
            try batch.put(#"{"_id": "b"}"#)
            try batch.put(#"{"_id": "c"}"#)
        }
        while ids.count < 3, let (change, _) = await calls.next() { ids += change.documentIDs }
        #expect(ids == ["a", "b", "c"])
    }

    @Test("Many document listeners each get their own document's changes, from one commit and from a large import")
    func manyDocumentListeners() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let calls = Calls<Change>()
        let count = 200
        let tokens = (0..<count).map { index in
            db.addDocumentChangeListener(withID: "d\(index)") { change in
                #expect(change.id == "d\(index)")
                calls.sink.yield(change)
            }
        }
        defer { tokens.forEach { $0.remove() } }
        try await db.write { batch in
            for index in 0..<count { try batch.put(#"{"_id": "d\#(index)"}"#) }
            try batch.put(#"{"_id": "other"}"#)
        }
        var seen = Set<String>()
        while seen.count < count, let change = await calls.next() { seen.insert(change.id) }
        #expect(seen.count == count)

        // More changes than listeners: their documents are looked up, not the changes read.
        let lines = (0..<5000).map { #"{"_id": "bulk\#($0)"}"# } + [#"{"_id": "d7", "_rev": "\#(try #require(try await db.document("d7")).revision)", "n": 1}"#]
        _ = try await db.importDocuments(Data(lines.joined(separator: "\n").utf8))
        let change = await calls.next()
        #expect(change?.id == "d7")
        #expect(change?.revision.generation == 2)
        #expect(await calls.next(within: .milliseconds(300)) == nil, "one call, for d7 only")
    }

    @Test("documentChanges yields each change of one document after the sequence given, and nothing for others")
    func documentChangesSequence() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let before = try await db.put(#"{"_id": "ann", "n": 0}"#)
        let since = try await db.lastSequence()
        let calls = Calls<Change>()
        let follower = Task {
            for try await change in db.documentChanges("ann", since: since) { calls.sink.yield(change) }
        }
        defer { follower.cancel() }
        try await db.put(#"{"_id": "bob"}"#)
        let first = try await db.put(#"{"_id": "ann", "_rev": "\#(before.revision)", "n": 1}"#)
        #expect(await calls.next() == Change(sequence: first.sequence, id: "ann", revision: first.revision, isDeleted: false))
        try await db.put(#"{"_id": "carl"}"#)
        let second = try await db.delete("ann", revision: first.revision)
        #expect(await calls.next() == Change(sequence: second.sequence, id: "ann", revision: second.revision, isDeleted: true))
    }

    @Test("Ending a documentChanges loop leaves nothing waiting, and a cancelled one ends")
    func documentChangesEnds() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let waiting = Task {
            for try await _ in db.documentChanges("nobody") {}
            return true
        }
        try await db.put(#"{"_id": "somebody"}"#)
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        #expect(try await waiting.value)
    }
}
