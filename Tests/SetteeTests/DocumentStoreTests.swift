import Foundation
import Testing
import SetteeStorage
@testable import Settee

@Suite("Document store", .ownThread)
struct DocumentStoreTests {
    let directory = TemporaryDirectory()

    func open() throws -> Database {
        try Database(at: directory.url.appendingPathComponent("db"))
    }

    func documentError(_ body: () throws -> Void) throws -> DocumentError {
        try #require(throws: DocumentError.self, performing: body)
    }

    @Test("put then get returns the document with _id and _rev first")
    func putAndGet() throws {
        let db = try open()
        let result = try db.put(#"{"name": "Ann", "_id": "a1", "tags": ["x"]}"#)
        #expect(result.id == "a1")
        #expect(result.revision.generation == 1)
        #expect(result.revision.description.count == 2 + 32)
        #expect(result.sequence == 1)
        let document = try #require(try db.document("a1"))
        #expect(document.json == #"{"_id":"a1","_rev":"\#(result.revision)","name":"Ann","tags":["x"]}"#)
        #expect(try db.document("nobody") == nil)
    }

    @Test("A document without _id gets a generated 32-hex-digit id")
    func generatedID() throws {
        let db = try open()
        let first = try db.put(#"{"n": 1}"#)
        let second = try db.put(#"{"n": 2}"#)
        #expect(first.id.count == 32)
        #expect(first.id.allSatisfy { $0.isHexDigit })
        #expect(first.id != second.id)
        #expect(first.id < second.id, "sequential ids grow")
        #expect(try db.document(first.id) != nil)
    }

    @Test("Updates need the current _rev; stale or missing revs are conflicts")
    func revisionsAndConflicts() throws {
        let db = try open()
        let first = try db.put(#"{"_id": "d", "v": 1}"#)
        let second = try db.put(#"{"_id": "d", "_rev": "\#(first.revision)", "v": 2}"#)
        #expect(second.revision.generation == 2)
        #expect(second.revision != first.revision)

        let stale = try documentError { try db.put(#"{"_id": "d", "_rev": "\#(first.revision)", "v": 3}"#) }
        #expect(stale == DocumentError(.conflict, "Document update conflict.", id: "d"))
        let missing = try documentError { try db.put(#"{"_id": "d", "v": 3}"#) }
        #expect(missing.code == .conflict)
        let onNew = try documentError { try db.put(#"{"_id": "new", "_rev": "\#(first.revision)"}"#) }
        #expect(onNew.code == .conflict)
        #expect(try db.document("d")?.json.contains(#""v":2"#) == true)
    }

    @Test("Reserved members and bad ids are refused with CouchDB's messages")
    func reservedMembers() throws {
        let db = try open()
        #expect(try documentError { try db.put(#"{"_id": "x", "_foo": 1}"#) } == DocumentError(.documentValidation, "Bad special document member: _foo", id: "x"))
        #expect(try documentError { try db.put(#"{"_id": 12}"#) }.reason == "Document id must be a string")
        #expect(try documentError { try db.put(#"{"_id": ""}"#) }.reason == "Document id must not be empty")
        #expect(try documentError { try db.put(#"{"_id": "_secret"}"#) }.reason == "Only reserved document ids may start with underscore.")
        #expect(try documentError { try db.put(#"{"_id": "x", "_rev": "banana"}"#) }.reason == "Invalid rev format")
        #expect(try documentError { try db.put("[1, 2]") }.reason == "Document must be a JSON object")
        #expect(try documentError { try db.put(#"{"a": }"#) }.code == .badRequest)
        #expect(try db.put(#"{"_id": "_design/app", "views": {}}"#).id == "_design/app")
        #expect(try db.lastSequence() == 1, "refused writes take no sequence number")
    }

    @Test("Delete leaves a tombstone in the changes feed; the id can be re-created")
    func deleteAndRecreate() throws {
        let db = try open()
        let first = try db.put(#"{"_id": "d", "v": 1}"#)
        try db.put(#"{"_id": "other"}"#)
        let deleted = try db.delete("d", revision: first.revision)
        #expect(deleted.revision.generation == 2)
        #expect(try db.document("d") == nil)
        let changes = try db.changes()
        #expect(changes.map(\.id) == ["other", "d"])
        #expect(changes.last?.isDeleted == true)
        #expect(changes.last?.sequence == 3)
        #expect(try documentError { try db.delete("d", revision: nil) } == DocumentError(.notFound, "deleted", id: "d"))
        #expect(try documentError { try db.delete("ghost", revision: nil) } == DocumentError(.notFound, "missing", id: "ghost"))

        let recreated = try db.put(#"{"_id": "d", "v": 9}"#)
        #expect(recreated.revision.generation == 3)
        #expect(try db.document("d")?.json.contains(#""v":9"#) == true)
    }

    @Test("_deleted: true in a put deletes")
    func deletedMember() throws {
        let db = try open()
        let first = try db.put(#"{"_id": "d"}"#)
        try db.put(#"{"_id": "d", "_rev": "\#(first.revision)", "_deleted": true}"#)
        #expect(try db.document("d") == nil)
        #expect(try db.changes().last?.isDeleted == true)
    }

    @Test("changes(since:) lists each document once, at its latest write")
    func changesSince() throws {
        let db = try open()
        let a = try db.put(#"{"_id": "a"}"#)
        try db.put(#"{"_id": "b"}"#)
        try db.put(#"{"_id": "c"}"#)
        try db.put(#"{"_id": "a", "_rev": "\#(a.revision)", "edited": true}"#)
        #expect(try db.changes().map(\.id) == ["b", "c", "a"])
        #expect(try db.changes().map(\.sequence) == [2, 3, 4])
        #expect(try db.changes(since: 2).map(\.id) == ["c", "a"])
        #expect(try db.changes(since: 4).isEmpty)
        #expect(try db.changes(since: 0, limit: 2).map(\.id) == ["b", "c"])
    }

    @Test("Reopening a database keeps everything")
    func reopen() throws {
        let path = directory.url.appendingPathComponent("db")
        var revision: Revision?
        do {
            let db = try Database(at: path)
            revision = try db.put(#"{"_id": "kept", "n": 1}"#).revision
            try db.put(#"{"_id": "gone"}"#)
            try db.delete("gone", revision: nil)
        }
        let db = try Database(at: path)
        #expect(try db.document("kept")?.revision == revision)
        #expect(try db.document("gone") == nil)
        #expect(try db.lastSequence() == 3)
        let info = try db.info()
        #expect(info.documentCount == 1)
        #expect(info.deletedDocumentCount == 1)
        #expect(try db.put(#"{"_id": "next"}"#).sequence == 4)
    }

    @Test("NDJSON import reports bad lines by number and keeps the good ones")
    func importWithBadLines() throws {
        let db = try open()
        let input = """
            {"_id": "a", "n": 1}
            {"_id": "b", "n": 2
            [1, 2, 3]

            {"_id": 7}
            {"_id": "c", "_bogus": true}
            {"n": "no id"}
            {"_id": "a", "n": "duplicate"}
            {"_id": "_nope"}
            {"_id": "d", "n": 4}
            """
        let report = try db.importDocuments(Data(input.utf8))
        #expect(report.imported == 3)
        #expect(report.rejected.map(\.line) == [2, 3, 5, 6, 8, 9])
        #expect(report.rejected.map(\.error.code) == [.badRequest, .badRequest, .badRequest, .documentValidation, .conflict, .badRequest])
        #expect(report.rejected[1].error.reason == "Document must be a JSON object")
        #expect(report.rejected[3].id == "c")
        #expect(report.rejected[4].id == "a")
        #expect(try db.document("a")?.json.contains(#""n":1"#) == true)
        #expect(try db.document("d") != nil)
        #expect(try db.info().documentCount == 3)
    }

    @Test("A JSON array of documents imports too, with line numbers")
    func importArray() throws {
        let db = try open()
        let input = """
            [
              {"_id": "a", "s": "with ] and , inside"},
              {"_id": "b", "nested": {"x": [1, {"y": 2}]}},
              "not an object",
              {"_id": "c"}
            ]
            """
        let report = try db.importDocuments(Data(input.utf8))
        #expect(report.imported == 3)
        #expect(report.rejected.map(\.line) == [4])
        #expect(try db.document("a")?.json.contains("with ] and , inside") == true)
    }

    @Test("Import streams in small chunks and many transactions")
    func importInChunks() throws {
        let db = try open()
        let lines = (0..<5000).map { #"{"_id": "doc\#($0)", "text": "\#(String(repeating: "x", count: $0 % 97))"}"# }
        let file = directory.file("docs.ndjson", contents: lines.joined(separator: "\n") + "\n")
        let handle = try FileHandle(forReadingFrom: file)
        let report = try DocumentImporter(store: db.store, batchDocuments: 700, batchBytes: 1 << 20, chunkBytes: 1000)
            .run(totalBytes: nil, read: { try handle.read(upToCount: 1000) }, progress: { _ in })
        #expect(report.imported == 5000)
        #expect(report.rejected.isEmpty)
        #expect(try db.lastSequence() == 5000)
        #expect(try db.document("doc4999")?.json.contains(String(repeating: "x", count: 4999 % 97)) == true)
    }

    @Test("The memory map grows when it fills; a size cap is a clear error that loses nothing")
    func mapGrowth() throws {
        var options = Database.Options()
        options.initialMapSize = 256 << 10
        let db = try Database(at: directory.url.appendingPathComponent("growing"), options: options)
        let lines = (0..<20000).map { #"{"_id": "doc\#($0)", "pad": "\#(String(repeating: "p", count: 100))"}"# }
        let report = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
        #expect(report.imported == 20000)
        #expect(try db.info().mapSize > 256 << 10)

        options.maximumSize = 512 << 10
        let capped = try Database(at: directory.url.appendingPathComponent("capped"), options: options)
        try capped.put(#"{"_id": "first"}"#)
        let error = try #require(throws: StorageError.self) {
            _ = try capped.importDocuments(Data(lines.joined(separator: "\n").utf8))
        }
        #expect(error.isFull)
        #expect(error.description.contains("size limit"))
        #expect(try capped.document("first") != nil)
        try capped.put(#"{"_id": "still-writable"}"#)
    }
}
