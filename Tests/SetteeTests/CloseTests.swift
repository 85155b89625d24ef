import Foundation
import Testing
import Settee

@Suite("Closing a database")
struct CloseTests {
    @Test("After close every call throws closed; closing twice is fine; the directory opens again")
    func closedDatabase() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        let db = try Database(at: url)
        try db.put(#"{"_id":"a","n":1}"#)
        try db.loadDesignDocuments(from: directory.file("d.json", contents: #"{"_id":"_design/d","views":{"n":{"map":"function (doc) { emit(doc.n, null); }"}}}"#))
        db.close()
        db.close()
        #expect { try db.document("a") } throws: { ($0 as? any SetteeError)?.errorCode == .closed }
        #expect { try db.put(#"{"_id":"b"}"#) } throws: { ($0 as? any SetteeError)?.errorCode == .closed }
        #expect { try db.write { try $0.put(#"{"_id":"c"}"#) } } throws: { ($0 as? any SetteeError)?.errorCode == .closed }
        #expect { try db.query("d/n") } throws: { ($0 as? any SetteeError)?.errorCode == .closed }
        let error = try #require(throws: StorageError.self) { try db.info() }
        #expect(error.description.contains("closed"))

        // The environment was let go: the directory may be opened read-only, which a process holding it for writing may not.
        var options = Database.Options()
        options.readOnly = true
        let reader = try Database(at: url, options: options)
        #expect(try reader.document("a") != nil)
    }

    @Test("Closing one Database of a directory leaves another of the same directory working")
    func sharedStorage() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        let first = try Database(at: url)
        let second = try Database(at: url)
        try first.put(#"{"_id":"a"}"#)
        first.close()
        #expect { try first.document("a") } throws: { ($0 as? any SetteeError)?.errorCode == .closed }
        #expect(try second.document("a") != nil)
        try second.put(#"{"_id":"b"}"#)
        #expect(try second.info().documentCount == 2)
        second.close()
        #expect { try second.document("a") } throws: { ($0 as? any SetteeError)?.errorCode == .closed }
        let third = try Database(at: url)
        #expect(try third.info().documentCount == 2)
    }

    @Test("A continuous feed waiting for writes ends when the database closes; listeners of a reopened one hear its writes")
    func feedsEnd() async throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        let db = try Database(at: url)
        try await db.put(#"{"_id":"a"}"#)
        let delivered = Heard()
        let feed = Task {
            var seen = 0
            for try await change in db.continuousChanges(since: 0) {
                seen += 1
                delivered.add(change.id)
            }
            return seen
        }
        // Close once the feed has had the one change and waits for more, however loaded the machine.
        for _ in 0..<1000 where delivered.ids.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(50))
        db.close()
        #expect(try await feed.value == 1)

        let reopened = try Database(at: url)
        let heard = Heard()
        let token = reopened.addDocumentChangeListener(withID: "b") { heard.add($0.id) }
        try await reopened.put(#"{"_id":"b"}"#)
        for _ in 0..<200 where heard.ids.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        #expect(heard.ids == ["b"])
        token.remove()
    }

    @Test("A live query and a continuous feed end when the database is closed before they wait or read, as when closed while they wait")
    func liveSequencesEndOnClose() async throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        let db = try Database(at: url)
        try await db.put(#"{"_id":"a","n":1}"#)
        _ = try await db.loadDesignDocuments(from: directory.file("d.json", contents: #"{"_id":"_design/d","views":{"n":{"map":"function (doc) { emit(doc.n, null); }"}}}"#))
        var query = db.liveQuery("d/n").makeAsyncIterator()
        #expect(try await query.next()?.rows.count == 1)
        var feed = db.continuousChanges(since: 0).makeAsyncIterator()
        #expect(try await feed.next() != nil)
        #expect(try await feed.next() != nil)
        db.close()
        #expect(try await query.next() == nil, "closed before it waits for a write")
        #expect(try await feed.next() == nil, "closed before it reads again")

        let again = try Database(at: url)
        var neverRun = again.liveQuery("d/n").makeAsyncIterator()
        var neverRead = again.continuousChanges(since: 0).makeAsyncIterator()
        again.close()
        #expect(try await neverRun.next() == nil, "closed before its first run")
        #expect(try await neverRead.next() == nil, "closed before its first read")
    }

    @Test("Async calls after close throw closed")
    func asyncAfterClose() async throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        var note = ClosingNote(title: "x")
        try await db.save(&note)
        db.close()
        await #expect { try await db.document(note.id!) } throws: { ($0 as? any SetteeError)?.errorCode == .closed }
        await #expect { try await db.save(&note) } throws: { ($0 as? any SetteeError)?.errorCode == .closed }
    }
}

private struct ClosingNote: DocumentModel, Sendable {
    var id: String?
    var revision: Revision?
    var title: String
}

private final class Heard: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [String] = []
    func add(_ id: String) { lock.withLock { seen.append(id) } }
    var ids: [String] { lock.withLock { seen } }
}
