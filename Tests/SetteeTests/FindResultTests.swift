import Foundation
import Testing
import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

private func books(_ db: Database) throws {
    try db.write { batch in
        try batch.put(#"{"_id": "b1", "type": "book", "title": "Ulysses", "year": 1922, "tags": ["novel"], "note": "caf\u00e9 \"quoted\""}"#)
        try batch.put(#"{"_id": "b2", "type": "book", "title": "Dubliners", "year": 1914, "price": 12.5}"#)
        try batch.put(#"{"_id": "b3", "type": "book", "title": "Finnegans Wake", "year": 1939}"#)
        try batch.put(#"{"_id": "n1", "type": "note"}"#)
    }
}

@Suite("find results: the stored JSON text, parsed only when read")
struct FindResultTests {
    @Test("Each whole document found is its stored text, byte for byte, scanned or read through an index")
    func storedText() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try books(db)
        let stored = try ["b1", "b2", "b3"].map { try #require(try db.document($0)).json }
        let scanned = try db.find(FindRequest(selector: ["type": "book"]))
        #expect(scanned.found.map(\.jsonText) == stored)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["type"]}, "ddoc": "t", "name": "type"}"#))
        let indexed = try db.find(FindRequest(selector: ["type": "book"]))
        #expect(indexed.warning == nil, "the index served it")
        #expect(indexed.found.map(\.jsonText) == stored)
        #expect(indexed.found == scanned.found)
        // Read as values, they are the documents parsed.
        #expect(indexed.documents == stored.map { try! JSONValue(parsing: $0) })
        #expect(indexed.found[1].json == (try JSONValue(parsing: stored[1])))
    }

    @Test("The response text copies the documents into CouchDB's _find body, the same as the parsed body written out")
    func responseText() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try books(db)
        var request = try FindRequest(json: #"{"selector": {"type": "book"}, "limit": 2, "execution_stats": true}"#)
        let page = try db.find(request)
        // The stored text keeps the escapes the document was written with (`caf\u00e9`): the same value.
        #expect(try JSONValue(parsing: page.jsonText) == page.json)
        #expect(page.jsonText.contains(#""note":"caf\u00e9 \"quoted\"""#))
        #expect(try JSONValue(parsing: page.jsonText)["docs"]?.arrayValue?.count == 2)
        #expect(page.jsonText.hasPrefix(#"{"docs":[{"_id":"b1","_rev":"1-"#))
        var bytes = Array("HTTP body: ".utf8)
        page.writeJSON(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "HTTP body: " + page.jsonText)

        request.executionStats = false
        request.bookmark = page.bookmark
        let last = try db.find(request)
        #expect(last.jsonText == last.json.jsonText)
        let none = try db.find(FindRequest(selector: ["type": "robot"]))
        #expect(none.jsonText == #"{"docs":[],"bookmark":"nil","warning":"No matching index found, create an index to optimize query time."}"#)
        #expect(none.jsonText == none.json.jsonText)
    }

    @Test("With fields, each result is the fields asked for; documents decode from their text")
    func fieldsAndDecoding() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try books(db)
        let fields = try db.find(FindRequest(json: #"{"selector": {"year": {"$lt": 1930}}, "fields": ["title", "_id"]}"#))
        #expect(fields.found.map(\.jsonText) == [#"{"title":"Ulysses","_id":"b1"}"#, #"{"title":"Dubliners","_id":"b2"}"#])
        #expect(fields.jsonText == fields.json.jsonText)

        struct Book: Decodable, Equatable { var _id: String; var year: Int; var note: String? }
        let found = try db.find(FindRequest(selector: ["type": "book"]))
        #expect(try found.found[0].decoded(as: Book.self) == Book(_id: "b1", year: 1922, note: "café \"quoted\""))
        #expect(try found.decoded(as: Book.self).map(\.year) == [1922, 1914, 1939])
        #expect(try db.find(FindRequest(selector: ["type": "book"]), as: Book.self).count == 3)
    }

    @Test("A bookmark is CouchDB's term of [{startkey_docid, Id}, {startkey, Key}] in base64url without padding; padded, standard-alphabet and Settee's earlier [key, id] JSON forms are read too")
    func bookmarks() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        // Ids of each length modulo 3, and one whose JSON has bytes that base64 writes as + and /.
        let ids = ["a", "ab", "abc", "abcd", "é>?~"]
        try db.write { batch in for id in ids { try batch.put(#"{"_id": "\#(id)", "type": "t"}"#) } }
        for id in ids {
            var request = FindRequest(selector: ["_id": .string(id)])
            request.limit = 1
            let bookmark = try db.find(request).bookmark
            // _all_docs keys a row by its id: both are the id's binary.
            let binary: [UInt8] = [109, 0, 0, 0, UInt8(id.utf8.count)] + Array(id.utf8)
            let term: [UInt8] = [131, 108, 0, 0, 0, 2, 104, 2, 100, 0, 14] + Array("startkey_docid".utf8) + binary
                + [104, 2, 100, 0, 8] + Array("startkey".utf8) + binary + [106]
            func base64URL(_ bytes: [UInt8]) -> String {
                Data(bytes).base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
            #expect(bookmark == base64URL(term))
            let padded = bookmark + String(repeating: "=", count: (4 - bookmark.count % 4) % 4)
            let standard = padded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            let earlier = base64URL(Array(JSONValue.array([.string(id), .string(id)]).jsonText.utf8))
            for form in [bookmark, padded, standard, earlier] {
                var next = FindRequest(selector: ["type": "t"])
                next.bookmark = form
                next.limit = 100
                let after = try db.find(next).documents.compactMap { $0["_id"]?.stringValue }
                #expect(after == Array(ids.drop { $0 != id }.dropFirst()), "\(form)")
            }
        }
        for bad in ["a", "WyJi=MiJd", "Wy!i", "WyJhIiwiYSJd==="] {
            var request = FindRequest(selector: ["type": "t"])
            request.bookmark = bad
            #expect(mangoError { _ = try db.find(request) }?.error == "invalid_bookmark", "\(bad)")
        }
    }

    @Test("find(_:as:) and the typed live find decode with the database's coding, as Swift values are put")
    func decodesWithTheDatabaseCoding() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        struct Event: Codable, Equatable { var kind: String; var at: Date }
        let event = Event(kind: "launch", at: Date(timeIntervalSince1970: 1_700_000_000.25))
        try await db.put(event, id: "e1")
        let request = FindRequest(selector: ["kind": "launch"])
        #expect(try await db.find(request, as: Event.self) == [event])
        for try await events in db.liveFind(request, as: Event.self) {
            #expect(events == [event])
            break
        }
    }

    @Test("Results made in Swift hold their documents as values; setting documents replaces what was found")
    func madeAndChanged() throws {
        var result = FindResult(documents: [["_id": "x", "n": 1]], bookmark: "nil")
        #expect(result.found.map(\.jsonText) == [#"{"_id":"x","n":1}"#])
        #expect(result.documents == [["_id": "x", "n": 1]])
        result.documents.append(["_id": "y"])
        #expect(result.found.count == 2)
        #expect(result.jsonText == #"{"docs":[{"_id":"x","n":1},{"_id":"y"}],"bookmark":"nil"}"#)
        result.found = [FoundDocument(["_id": "z"])]
        #expect(result.documents == [["_id": "z"]], "the parsed documents follow a change of what was found")
    }

    @Test("The response text is the bytes writeJSON writes: stored texts with characters beyond ASCII, values, warning and statistics")
    func responseTextIsTheWrittenBytes() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.write { batch in
            try batch.put(#"{"_id": "z1", "city": "Zürich", "note": "日本語 🙂", "n": 1}"#)
            try batch.put(#"{"_id": "z2", "city": "Kraków", "n": 2}"#)
            try batch.put(#"{"_id": "z3", "city": "Oslo", "n": 3}"#)
        }
        func expectSameText(_ result: FindResult, _ comment: Comment) {
            var bytes: [UInt8] = []
            result.writeJSON(into: &bytes)
            #expect(Array(result.jsonText.utf8) == bytes, comment)
            #expect((try? JSONValue(parsing: result.jsonText)) == result.json, comment)
        }
        // Scanned (a warning), with statistics; then through an index (none); with fields (values).
        let scanned = try db.find(FindRequest(json: #"{"selector": {"n": {"$gt": 0}}, "execution_stats": true}"#))
        #expect(scanned.warning != nil && scanned.found.count == 3)
        #expect(scanned.jsonText.contains("日本語 🙂"))
        expectSameText(scanned, "scanned")
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["n"]}, "name": "n"}"#))
        let indexed = try db.find(FindRequest(json: #"{"selector": {"n": {"$gt": 0}}, "limit": 2}"#))
        #expect(indexed.warning == nil && indexed.found.count == 2)
        expectSameText(indexed, "indexed")
        let fields = try db.find(FindRequest(json: #"{"selector": {"n": {"$gt": 0}}, "fields": ["city"]}"#))
        #expect(fields.jsonText.hasPrefix(#"{"docs":[{"city":"Zürich"},{"city":"Kraków"},{"city":"Oslo"}],"bookmark":""#))
        expectSameText(fields, "fields")
        expectSameText(try db.find(FindRequest(selector: ["n": 4])), "nothing found")
    }
}

@Suite("find's index list: read once per change of the design documents")
struct FindIndexListTests {
    @Test("An index created, edited or deleted is seen by the next find, through this database or another one of the same directory")
    func followsDesignDocumentWrites() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try books(db)
        let request = FindRequest(selector: ["year": ["$gt": 1900]])
        #expect(try db.find(request).warning?.hasPrefix("No matching index found") == true)
        #expect(try db.listIndexes().count == 1)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["year"]}, "ddoc": "y", "name": "year"}"#))
        #expect(try db.find(request).warning == nil)
        #expect(try db.explain(request)["index"]?["name"] == "year")
        // Document writes leave the list as it was.
        try db.put(#"{"_id": "b4", "type": "book", "year": 1907}"#)
        #expect(try db.listIndexes().map(\.name) == ["_all_docs", "year"])

        // Another Database of the directory writes the design documents.
        let other = try openDatabase(directory)
        try other.createIndex(IndexRequest(json: #"{"index": {"fields": ["year"]}, "ddoc": "a", "name": "year2"}"#))
        #expect(try db.listIndexes().map(\.name) == ["_all_docs", "year2", "year"])
        try other.deleteIndex(designDocument: "y", name: "year")
        #expect(try db.listIndexes().map(\.name) == ["_all_docs", "year2"])
        #expect(try db.explain(request)["index"]?["name"] == "year2")
        try other.deleteIndex(designDocument: "a", name: "year2")
        #expect(try db.find(request).warning?.hasPrefix("No matching index found") == true)
    }

    @Test("An index created by another process is used by the next find here")
    func followsOtherProcesses() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try books(db)
        let request = FindRequest(selector: ["year": ["$gt": 1900]])
        #expect(try db.find(request).warning != nil)
        let settee = try SetteeExecutable.find()
        let path = directory.url.appendingPathComponent("db").path
        let created = try settee.run(["--db", path, "create-index", #"{"index": {"fields": ["year"]}, "ddoc": "y", "name": "year"}"#], in: directory.url)
        #expect(created.exitStatus == 0, "\(created.standardError)")
        let found = try db.find(request)
        #expect(found.warning == nil)
        #expect(found.documents.count == 3)
        let deleted = try settee.run(["--db", path, "delete-index", "y", "year"], in: directory.url)
        #expect(deleted.exitStatus == 0, "\(deleted.standardError)")
        #expect(try db.listIndexes().map(\.name) == ["_all_docs"])
    }
}
