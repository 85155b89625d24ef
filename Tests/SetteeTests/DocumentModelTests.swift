import SetteeCore
import Foundation
import Testing
import Settee

private struct Note: DocumentModel, Equatable, Sendable {
    var id: String?
    var revision: Revision?
    var title: String
    var created = Date(timeIntervalSince1970: 1_795_616_232.4914947)
}

private struct Counter: DocumentModel, Sendable {
    var id: String?
    var revision: Revision?
    var count: Int
}

/// A model of the older style: `_rev` as text, written with an id given alongside.
private struct LegacyContact: Codable, Equatable {
    var _rev: String?
    var name: String
}

private struct Stamped: Codable, Equatable {
    var firstSeen: Date
}

private func openDatabase(_ directory: TemporaryDirectory, _ name: String = "db", coding: DocumentCoding = .standard) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    options.coding = coding
    return try Database(at: directory.url.appendingPathComponent(name), options: options)
}

@Suite("Documents as Swift types with their identity")
struct DocumentModelTests {
    @Test("save assigns an id and keeps the revision; id and revision are stored as _id and _rev only")
    func saveAssignsIdentity() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        var note = Note(title: "Groceries")
        let first = try db.save(&note)
        let id = try #require(note.id)
        #expect(first.id == id && id.count == 32)
        #expect(note.revision == first.revision)
        let stored = try #require(try db.document(id))
        #expect(try stored.value.objectValue?.map(\.key).sorted() == ["_id", "_rev", "created", "title"])

        note.title = "Groceries for Sunday"
        let second = try db.save(&note)
        #expect(second.revision.generation == 2 && note.revision == second.revision)
        #expect(try db.get(id, as: Note.self) == note)

        var stale = note
        stale.revision = first.revision
        #expect(throws: DocumentError.self) { try db.save(&stale) }
        #expect(stale.revision == first.revision, "a failed save leaves the value as it was")
    }

    @Test("A plain Codable type keeps its own members named id and revision")
    func plainMembersNamedIDStay() throws {
        struct Product: Codable, Equatable { var id: Int; var revision: String; var name: String }
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(Product(id: 7, revision: "B", name: "Lamp"), id: "p7")
        #expect(try db.document("p7")?.value["id"] == 7, "a type that is no DocumentModel keeps its own id member")
        #expect(try db.get("p7", as: Product.self) == Product(id: 7, revision: "B", name: "Lamp"))
    }

    @Test("put of a plain Codable value without an id generates one; with one, uses it")
    func putWithoutID() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let written = try db.put(Stamped(firstSeen: Date(timeIntervalSince1970: 0)))
        #expect(try db.get(written.id, as: Stamped.self) == Stamped(firstSeen: Date(timeIntervalSince1970: 0)))
        let model = try db.put(Note(id: "n1", title: "Given"))
        #expect(model.id == "n1")
        #expect(try db.get("n1", as: Note.self)?.revision == model.revision)
    }

    @Test("A JSON string given with an id is the document with that id")
    func jsonStringWithID() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let written = try db.put(#"{"title":"raw"}"#, id: "raw")
        #expect(written.id == "raw")
        #expect(try db.document("raw")?.json == #"{"_id":"raw","_rev":"\#(written.revision)","title":"raw"}"#)
        try db.put(#"{"title":"raw again"}"#, id: "raw", revision: written.revision)
        #expect(try db.document("raw")?.value["title"] == "raw again")
        let mismatch = try #require(throws: DocumentError.self) { try db.put(#"{"_id":"other"}"#, id: "raw") }
        #expect(mismatch.errorCode == .badRequest)
        #expect(throws: DocumentError.self) { try db.put("not json", id: "bad") }
        try db.write { batch in try batch.put(#"{"n":1}"#, id: "in-batch") }
        #expect(try db.document("in-batch") != nil)
    }

    @Test("update re-reads and retries on conflict, and says so when the attempts run out")
    func updateRetries() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        var counter = Counter(id: "visits", count: 0)
        try db.save(&counter)
        var runs = 0
        let updated = try db.update("visits", as: Counter.self) { value in
            runs += 1
            if runs == 1 { _ = try? db.update("visits", as: Counter.self) { $0.count += 10 } }
            value.count += 1
        }
        #expect(runs == 2, "the first attempt met the concurrent write, the second read it")
        #expect(updated.count == 11)
        #expect(updated.revision?.generation == 3)
        #expect(try db.get("visits", as: Counter.self)?.revision == updated.revision)

        let exhausted = try #require(throws: DocumentError.self) {
            try db.update("visits", as: Counter.self, attempts: 3) { value in
                try db.update("visits", as: Counter.self) { $0.count += 1 }
                value.count = -1
            }
        }
        #expect(exhausted.errorCode == .conflict)
        #expect(exhausted.description.contains("3 times"))
        #expect(try db.get("visits", as: Counter.self)?.count == 14)
        #expect(throws: DocumentError.self) { try db.update("nobody", as: Counter.self) { $0.count = 1 } }

        // A type that carries its _rev as text gets the new one back.
        try db.put(LegacyContact(name: "Ann"), id: "ann")
        let ann = try db.update("ann", as: LegacyContact.self) { $0.name = "Anne" }
        #expect(ann._rev == (try db.document("ann"))?.revision.description)
    }

    @Test("delete takes an id alone, or a model at its revision")
    func deletes() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(#"{"_id":"a"}"#)
        try db.delete("a")
        #expect(try db.document("a") == nil)
        #expect(throws: DocumentError.self) { try db.delete("a") }

        var note = Note(title: "Old")
        try db.save(&note)
        var stale = note
        note.title = "Newer"
        try db.save(&note)
        #expect(try #require(throws: DocumentError.self) { try db.delete(stale) }.errorCode == .conflict)
        stale.id = nil
        #expect(try #require(throws: DocumentError.self) { try db.delete(stale) }.errorCode == .badRequest)
        try db.delete(note)
        #expect(try db.document(note.id!) == nil)
    }

    @Test("A model may hold its revision as Revision, and older _rev-as-String models still work")
    func revisionsAsOneType() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let revision = try #require(Revision("1-0123456789abcdef0123456789abcdef"))
        #expect(String(decoding: try JSONEncoder().encode([revision]), as: UTF8.self) == #"["1-0123456789abcdef0123456789abcdef"]"#)
        #expect(try JSONDecoder().decode([Revision].self, from: Data(#"["1-0123456789abcdef0123456789abcdef"]"#.utf8)) == [revision])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Revision].self, from: Data(#"["one"]"#.utf8)) }

        let first = try db.put(LegacyContact(name: "Ann"), id: "ann")
        var ann = try #require(try db.get("ann", as: LegacyContact.self))
        #expect(ann._rev == first.revision.description)
        ann.name = "Anne"
        #expect(try db.put(ann, id: "ann").revision.generation == 2)
    }

    @Test("A view row's included document decodes as a model with its id and revision")
    func includedDocuments() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("notes.json", contents: #"""
            {"_id": "_design/notes", "views": {"by_title": {"map": "function (doc) { if (doc.title) emit(doc.title, null); }"}}}
            """#))
        var note = Note(title: "Groceries")
        try db.save(&note)
        let row = try #require(try db.query("notes/by_title", options: ViewQueryOptions(includeDocs: true)).rows.first)
        #expect(try row.document(as: Note.self) == note)
        #expect(try row.key(as: String.self) == "Groceries")
    }

    @Test("Batches save, put without an id and delete by id")
    func inBatches() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        var note = Note(title: "In a batch")
        let generated = try db.write { batch in
            try batch.save(&note)
            return try batch.put(Stamped(firstSeen: Date())).id
        }
        #expect(try db.get(note.id!, as: Note.self) == note)
        try db.write { batch in
            try batch.delete(generated)
            try batch.delete(note)
        }
        #expect(try db.info().documentCount == 0)
    }

    @Test("Async forms save, update and delete")
    func asyncForms() async throws {
        // A model that is not Sendable is encoded before the work leaves the task.
        final class Draft: DocumentModel {
            var id: String?
            var revision: Revision?
            var text = "draft"
        }
        let draftsDirectory = TemporaryDirectory()
        let drafts = try openDatabase(draftsDirectory)
        var draft = Draft()
        try await drafts.save(&draft)
        #expect(draft.id != nil && draft.revision?.generation == 1)
        let loose = try await drafts.put(Draft())
        #expect(try await drafts.get(loose.id, as: Draft.self)?.text == "draft")
        try await drafts.delete(draft)
        #expect(try await drafts.document(draft.id!) == nil)

        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        var note = Note(title: "Async")
        try await db.save(&note)
        #expect(note.revision?.generation == 1)
        let updated = try await db.update(note.id!, as: Note.self) { $0.title = "Async, updated" }
        #expect(updated.revision?.generation == 2)
        let plain = try await db.put(Stamped(firstSeen: Date()))
        try await db.delete(plain.id)
        try await db.delete(updated)
        #expect(try await db.info().documentCount == 0)
    }
}

@Suite("Lossless and configurable coding")
struct DocumentCodingTests {
    @Test("A date comes back exactly, written as ISO 8601 with nine fractional digits")
    func datesKeepFractionalSeconds() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let date = Date(timeIntervalSince1970: 1_795_616_232.4914947)
        try db.put(Stamped(firstSeen: date), id: "s")
        #expect(try db.document("s")?.value["firstSeen"] == "2026-11-25T14:17:12.491494700Z")
        let read = try #require(try db.get("s", as: Stamped.self))
        #expect(read.firstSeen == date)
        #expect(read.firstSeen.timeIntervalSince1970 == 1_795_616_232.4914947)
        for interval in [0, -1.5, 1e-9, 86_399.999_999_999, 4_102_444_800.123456, -62_135_596_800] as [TimeInterval] {
            try db.put(Stamped(firstSeen: Date(timeIntervalSince1970: interval)), id: "t")
            #expect(try db.get("t", as: Stamped.self)?.firstSeen == Date(timeIntervalSince1970: interval), "\(interval)")
            try db.delete("t")
        }
    }

    @Test("Dates stored without fractions, with other digit counts or an offset still decode", arguments: [
        ("2026-11-25T14:17:12Z", 1_795_616_232.0),
        ("2026-11-25T14:17:12.491Z", 1_795_616_232.491),
        ("2026-11-25T15:17:12.5+01:00", 1_795_616_232.5),
        ("2026-11-25T09:47:12-0430", 1_795_616_232.0),
        ("2000-02-29T00:00:00.000000000001Z", 951_782_400.0),
    ])
    func olderDatesDecode(text: String, interval: TimeInterval) throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(#"{"_id":"s","firstSeen":"\#(text)"}"#)
        let read = try #require(try db.get("s", as: Stamped.self))
        #expect(abs(read.firstSeen.timeIntervalSince1970 - interval) < 1e-6)
    }

    @Test("Text that is not a date is a decoding error naming the member")
    func badDate() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(#"{"_id":"s","firstSeen":"2026-02-30T00:00:00Z"}"#)
        let error = try #require(throws: CodingError.self) { try db.get("s", as: Stamped.self) }
        #expect(error.path == "firstSeen")
    }

    @Test("A database's coding applies to every typed call, and a call may give its own")
    func customCoding() throws {
        let directory = TemporaryDirectory()
        let seconds = DocumentCoding(
            encoder: { $0.dateEncodingStrategy = .secondsSince1970; $0.keyEncodingStrategy = .convertToSnakeCase },
            decoder: { $0.dateDecodingStrategy = .secondsSince1970; $0.keyDecodingStrategy = .convertFromSnakeCase })
        let db = try openDatabase(directory, coding: seconds)
        try db.put(Stamped(firstSeen: Date(timeIntervalSince1970: 1000.5)), id: "s")
        #expect(try db.document("s")?.value["first_seen"] == 1000.5)
        #expect(try db.get("s", as: Stamped.self)?.firstSeen == Date(timeIntervalSince1970: 1000.5))
        try db.write { batch in
            try batch.put(Stamped(firstSeen: Date(timeIntervalSince1970: 7)), id: "b")
            #expect(try batch.get("b", as: Stamped.self)?.firstSeen == Date(timeIntervalSince1970: 7))
        }
        #expect(try db.document("b")?.value["first_seen"] == 7)

        // One call with the standard coding, on the same database.
        try db.put(Stamped(firstSeen: Date(timeIntervalSince1970: 0)), id: "iso", coding: .standard)
        #expect(try db.document("iso")?.value["firstSeen"] == "1970-01-01T00:00:00.000000000Z")
        #expect(try db.get("iso", as: Stamped.self, coding: .standard)?.firstSeen == Date(timeIntervalSince1970: 0))
        #expect(throws: CodingError.self) { try db.get("iso", as: Stamped.self) }
    }
}

@Suite("A write batch's closure runs once")
struct WriteBatchRunsOnceTests {
    @Test("A batch that fills the map is rolled back with databaseGrew, its closure run once; run again, it lands")
    func fillingTheMap() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.initialMapSize = 256 << 10
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.put(#"{"_id":"before"}"#)
        let mapSize = try db.info().mapSize
        let padding = String(repeating: "p", count: 1000)
        var runs = 0
        var error: (any Error)?
        do {
            try db.write { batch in
                runs += 1
                for index in 0..<1000 { try batch.put(#"{"_id":"doc\#(index)","pad":"\#(padding)"}"#) }
            }
        } catch let thrown {
            error = thrown
        }
        #expect(runs == 1)
        let grew = try #require(error as? StorageError)
        #expect(grew.errorCode == .databaseGrew)
        #expect(grew.description.contains("run it again"))
        #expect(try db.info().mapSize > mapSize)
        #expect(try db.document("doc0") == nil, "nothing of the batch was written")
        #expect(try db.info().documentCount == 1)

        // Run again (the map doubles each time) until it has room: each call runs the closure once.
        var calls = 0
        while true {
            calls += 1
            runs = 0
            do {
                try db.write { batch in
                    runs += 1
                    for index in 0..<1000 { try batch.put(#"{"_id":"doc\#(index)","pad":"\#(padding)"}"#) }
                }
                #expect(runs == 1)
                break
            } catch SetteeErrorCode.databaseGrew {
                #expect(runs == 1)
            }
        }
        #expect(calls < 5)
        #expect(try db.info().documentCount == 1001)
    }

    @Test("A closure that catches the error of the write that filled the map still has its batch rolled back")
    func caughtMapFull() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.initialMapSize = 256 << 10
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        let padding = String(repeating: "p", count: 1000)
        var runs = 0
        #expect(throws: StorageError.self) {
            try db.write { batch in
                runs += 1
                for index in 0..<1000 { _ = try? batch.put(#"{"_id":"doc\#(index)","pad":"\#(padding)"}"#) }
                return "done"
            }
        }
        #expect(runs == 1)
        #expect(try db.info().documentCount == 0)
    }

    @Test("The map is address space: the data file grows only with the pages written")
    func sparseMap() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(#"{"_id":"one"}"#)
        let info = try db.info()
        #expect(info.mapSize == 64 << 30)
        #expect(info.fileSize < 1 << 20)
    }
}

extension DocumentModelTests {
    @Test("find(_:as:) and liveFind(_:as:) give a DocumentModel its id and revision: a found document edited and saved is the same document")
    func foundModelsKeepIdentity() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        var note = Note(title: "Found")
        try await db.save(&note)
        let request = try FindRequest(json: ["selector": ["title": "Found"]])
        var found = try #require(try await db.find(request, as: Note.self).first)
        #expect(found.id == note.id && found.revision == note.revision)
        found.title = "Found and edited"
        try await db.save(&found)
        #expect(try await db.info().documentCount == 1)
        #expect(try await db.get(try #require(note.id), as: Note.self)?.title == "Found and edited")
        var live = db.liveFind(try FindRequest(json: ["selector": ["title": "Found and edited"]]), as: Note.self).makeAsyncIterator()
        let first = try #require(try await live.next()?.first)
        #expect(first.id == note.id && first.revision == found.revision)
        // Fields without _id and _rev: decoded, identity left unset.
        let partial = try await db.find(try FindRequest(json: ["selector": ["title": "Found and edited"], "fields": ["title", "created"]]), as: Note.self)
        #expect(partial.first?.title == "Found and edited" && partial.first?.id == nil)
    }
}
