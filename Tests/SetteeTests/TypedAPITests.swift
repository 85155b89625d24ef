import SetteeCore
import Foundation
import Testing
@testable import Settee

private struct Contact: Codable, Equatable, Sendable {
    var _id: String?
    var _rev: String?
    var name: String
    var city: String
    var phones: [String] = []
}

/// The same document read with a type that expects numbers where it holds text.
private struct StrictContact: Decodable {
    var name: String
    var phones: [Int]
}

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

@Suite("Typed documents, batches and error codes")
struct TypedAPITests {
    @Test("A Codable value is stored as a JSON object with _id, and read back")
    func roundTrip() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let written = try db.put(Contact(name: "Ann", city: "Oslo", phones: ["+47 1"]), id: "ann")
        #expect(written.id == "ann")
        let stored = try #require(try db.document("ann"))
        #expect(try stored.value["city"] == "Oslo")
        #expect(try stored.value["_id"] == "ann")
        let read = try #require(try db.get("ann", as: Contact.self))
        #expect(read == Contact(_id: "ann", _rev: written.revision.description, name: "Ann", city: "Oslo", phones: ["+47 1"]))
        #expect(try db.get("nobody", as: Contact.self) == nil)
    }

    @Test("A value carrying its _rev updates; a stale one is a conflict to catch by code")
    func updateAndConflict() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(Contact(name: "Ann", city: "Oslo"), id: "ann")
        var ann = try #require(try db.get("ann", as: Contact.self))
        let stale = ann
        ann.city = "Bergen"
        let second = try db.put(ann, id: "ann")
        #expect(second.revision.generation == 2)
        var caught: SetteeErrorCode?
        do {
            try db.put(stale, id: "ann")
        } catch SetteeErrorCode.conflict {
            caught = .conflict
        }
        #expect(caught == .conflict)
        #expect(try db.get("ann", as: Contact.self)?.city == "Bergen", "the conflicting write lost nothing")
        // Without _rev in the value, the revision is passed alongside.
        let third = try db.put(Contact(name: "Ann", city: "Tromsø"), id: "ann", revision: second.revision)
        #expect(third.revision.generation == 3)
    }

    @Test("A document that does not fit the type names the document and the member")
    func decodingError() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(#"{"_id":"ann","name":"Ann","phones":["+47 1","+47 2"]}"#)
        let error = try #require(throws: CodingError.self) { try db.get("ann", as: StrictContact.self) }
        #expect(error.errorCode == .decodingFailed)
        #expect(error.subject == #"document "ann""#)
        #expect(error.path == "phones[0]")
        #expect(error.description.hasPrefix(#"decoding_failed: decoding document "ann" as StrictContact at phones[0]: expected Int"#))

        try db.put(#"{"_id":"bob","phones":[]}"#)
        let missing = try #require(throws: CodingError.self) { try db.get("bob", as: StrictContact.self) }
        #expect(missing.reason == #"no member "name""#)
    }

    @Test("A value that is not a JSON object is refused before anything is written")
    func encodingError() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let error = try #require(throws: CodingError.self) { try db.put(["not", "an", "object"], id: "list") }
        #expect(error.errorCode == .encodingFailed)
        #expect(error.subject == #"document "list""#)
        let mismatch = try #require(throws: DocumentError.self) { try db.put(Contact(_id: "bob", name: "Bob", city: "Oslo"), id: "ann") }
        #expect(mismatch.errorCode == .badRequest)
        #expect(try db.lastSequence() == 0)
    }

    @Test("View rows decode into the caller's types, and a misfit names the row")
    func decodedRows() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("people.json", contents: #"""
            {"_id": "_design/people", "views": {"by_city": {"map": "function (doc) { emit([doc.city, doc.name], doc.phones.length); }"}}}
            """#))
        try db.put(Contact(name: "Ann", city: "Oslo", phones: ["1", "2"]), id: "ann")
        try db.put(Contact(name: "Bob", city: "Bergen"), id: "bob")
        let result = try db.query("people/by_city")
        let rows = try result.decodedRows(key: [String].self, value: Int.self)
        #expect(rows.map(\.key) == [["Bergen", "Bob"], ["Oslo", "Ann"]])
        #expect(rows.map(\.value) == [0, 2])
        #expect(rows.map(\.id) == ["bob", "ann"])
        let error = try #require(throws: CodingError.self) { try result.decodedRows(key: [String].self, value: String.self) }
        #expect(error.subject == #"value of the row of document "bob" (key ["Bergen","Bob"])"#)
    }

    @Test("A batch commits its writes together and reads its own writes")
    func batchCommits() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(Contact(name: "Old", city: "Oslo"), id: "old")
        let before = try db.lastSequence()
        let count = try db.write { batch in
            try batch.put(Contact(name: "Ann", city: "Oslo"), id: "ann")
            try batch.put(#"{"_id":"bob","name":"Bob","city":"Bergen","phones":[]}"#)
            #expect(try batch.get("ann", as: Contact.self)?.name == "Ann")
            #expect(try db.document("ann") == nil, "other readers see the state before the batch")
            try batch.delete("old", revision: nil)
            #expect(try batch.document("old") == nil)
            return 3
        }
        #expect(count == 3)
        #expect(try db.lastSequence() == before + 3)
        #expect(try db.get("bob", as: Contact.self)?.city == "Bergen")
        #expect(try db.document("old") == nil)
        #expect(try db.changes(since: before).map(\.id) == ["ann", "bob", "old"])
    }

    @Test("A batch that throws rolls every write back", arguments: ["thrown by the closure", "a conflict"])
    func batchRollsBack(cause: String) throws {
        struct Abandon: Error {}
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let first = try db.put(Contact(name: "Ann", city: "Oslo"), id: "ann")
        try db.put(Contact(name: "Ann", city: "Bergen"), id: "ann", revision: first.revision)
        let before = try db.lastSequence()
        #expect(throws: (any Error).self) {
            try db.write { batch in
                try batch.put(Contact(name: "Bob", city: "Oslo"), id: "bob")
                try batch.delete("ann", revision: nil)
                if cause == "a conflict" {
                    try batch.put(Contact(name: "Cid", city: "Oslo"), id: "cid")
                    try batch.put(Contact(name: "Ann", city: "Oslo"), id: "ann", revision: first.revision)
                } else {
                    throw Abandon()
                }
            }
        }
        #expect(try db.lastSequence() == before)
        #expect(try db.document("bob") == nil)
        #expect(try db.document("cid") == nil)
        #expect(try db.get("ann", as: Contact.self)?.city == "Bergen")
    }

    @Test("Every error type has a stable code")
    func errorCodes() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let query = try #require(throws: QueryError.self) { try ViewQueryOptions(parameters: [(name: "limit", value: "-1")]) }
        #expect(query.errorCode == .queryParseError)
        let design = try #require(throws: DesignDocumentErrors.self) {
            try db.loadDesignDocuments(from: directory.file("bad.json", contents: #"{"_id":"_design/bad","views":{"v":{"map":"function (doc) { emit(doc. }"}}}"#))
        }
        #expect(design.errorCode == .invalidDesignDocument)
        #expect { try db.query("missing/view") } throws: { ($0 as? any SetteeError)?.errorCode == .notFound }
        var matched = ""
        do {
            try db.put(#"{"_id": "_bad"}"#)
        } catch let error as any SetteeError {
            switch error.errorCode {
            case .conflict: matched = "conflict"
            case .badRequest: matched = "bad request"
            default: matched = "other"
            }
        }
        #expect(matched == "bad request")
        let json = try #require(throws: JSONParseError.self) { try JSONValue(parsing: "{") }
        #expect(json.errorCode == .invalidJSON)
        #expect(SetteeErrorCode.conflict.rawValue == "conflict")
        #expect(SetteeErrorCode.notFound.rawValue == "not_found")
    }
}

@Suite("Query options from Swift")
struct SwiftQueryOptionsTests {
    @Test("The Swift initializer means what the query-string parameters mean")
    func sameAsParameters() throws {
        #expect(ViewQueryOptions(startKey: "D", limit: 10)
            == (try ViewQueryOptions(parameters: [(name: "startkey", value: #""D""#), (name: "limit", value: "10")])))
        #expect(ViewQueryOptions(keys: [1, "a"], descending: true, reduce: false, includeDocs: true)
            == (try ViewQueryOptions(parameters: [(name: "keys", value: #"[1,"a"]"#), (name: "descending", value: "true"),
                                                  (name: "reduce", value: "false"), (name: "include_docs", value: "true")])))
        #expect(ViewQueryOptions(groupLevel: 2, update: .lazy)
            == (try ViewQueryOptions(parameters: [(name: "group_level", value: "2"), (name: "update", value: "lazy")])))
        #expect(ViewQueryOptions() == ViewQueryOptions(inclusiveEnd: true))
    }
}

@Suite("JSONValue through Codable")
struct JSONValueCodableTests {
    @Test("Any JSON decodes into a JSONValue and encodes back", arguments: [
        "null", "true", "false", "0", "-2.5", #""text""#, "[]", #"[1,"a",null,[true]]"#, "{}", #"{"a":[1,{"b":null}]}"#,
    ])
    func roundTrip(json: String) throws {
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(json.utf8))
        #expect(decoded == (try JSONValue(parsing: json)))
        let encoded = try JSONEncoder().encode(decoded)
        #expect(try JSONValue(parsing: String(decoding: encoded, as: UTF8.self)) == decoded)
    }

    @Test("A document stored as a JSONValue reads back as one")
    func asDocument() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(["title": "Dune", "tags": ["sf", 1965]] as JSONValue, id: "dune")
        let read = try #require(try db.get("dune", as: JSONValue.self))
        #expect(read["tags"] == ["sf", 1965])
        #expect(read["_id"] == "dune")
    }
}
