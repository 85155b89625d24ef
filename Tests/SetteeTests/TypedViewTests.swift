import Foundation
import Testing
import Settee

private struct Note: Codable, Equatable, Hashable, Sendable {
    var _id: String?
    var _rev: String?
    var text: String
    var tags: [String]
    var created: Date
    var score: Double = 0
}

/// `by_tag` emits each tag (twice for a tag listed twice); `by_created` the
/// creation date; `by_tag_date` `[tag, date]`; `by_score` the score.
private let notesDesign = #"""
    {"_id": "_design/notes", "views": {
      "by_tag": {"map": "function (doc) { doc.tags.forEach(function (tag) { emit(tag, 1); }); }", "reduce": "_count"},
      "by_created": {"map": "function (doc) { emit(doc.created, doc.text); }"},
      "by_tag_date": {"map": "function (doc) { doc.tags.forEach(function (tag) { emit([tag, doc.created], null); }); }"},
      "by_score": {"map": "function (doc) { emit(doc.score, doc.text); }"}
    }}
    """#

private let day = Date(timeIntervalSince1970: 1_764_000_000)

private func openNotes(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
    try db.loadDesignDocuments(from: directory.file("notes.json", contents: notesDesign))
    try db.put(Note(text: "first", tags: ["swift", "couchdb"], created: day, score: 1.5), id: "n1")
    try db.put(Note(text: "second", tags: ["swift"], created: day.addingTimeInterval(3600), score: 2), id: "n2")
    try db.put(Note(text: "twice", tags: ["lmdb", "lmdb"], created: day.addingTimeInterval(7200), score: -1), id: "n3")
    return db
}

@Suite("Typed views and keys from Swift values")
struct TypedViewTests {
    @Test("A typed view decodes with the database's coding")
    func databaseCoding() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        options.coding = DocumentCoding(encoder: { $0.dateEncodingStrategy = .secondsSince1970 },
                                        decoder: { $0.dateDecodingStrategy = .secondsSince1970 })
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.loadDesignDocuments(from: directory.file("notes.json", contents: notesDesign))
        try db.put(Note(text: "first", tags: ["swift"], created: day), id: "n1")
        #expect(try db.document("n1")?.value["created"] == .number(day.timeIntervalSince1970))
        let byCreated = db.view("notes/by_created", key: Date.self, value: String.self, document: Note.self)
        let rows = try byCreated.query(ViewQueryOptions(includeDocs: true))
        #expect(rows.map(\.key) == [day])
        #expect(rows.first?.document?.created == day)
    }

    @Test("A typed view's rows hold decoded keys, values and documents, and are identified by document, key and occurrence")
    func typedRows() throws {
        let directory = TemporaryDirectory()
        let db = try openNotes(directory)
        let byTag = db.view("notes/by_tag", key: String.self, value: Int.self, document: Note.self)
        let rows = try byTag.query(ViewQueryOptions(reduce: false, includeDocs: true))
        #expect(rows.map(\.key) == ["couchdb", "lmdb", "lmdb", "swift", "swift"])
        #expect(rows.map(\.documentID) == ["n1", "n3", "n3", "n1", "n2"])
        #expect(rows.map(\.value) == [1, 1, 1, 1, 1])
        #expect(rows[0].document?.text == "first" && rows[0].document?.created == day)
        // The same key emitted twice for one document: two rows, told apart.
        #expect(rows[1].id.occurrence == 0 && rows[2].id.occurrence == 1)
        #expect(Set(rows.map(\.id)).count == rows.count)
        #expect(rows[1] != rows[2] && rows[1].key == rows[2].key)
        // Identity and equality hold from one result to the next.
        #expect(try byTag.query(ViewQueryOptions(reduce: false, includeDocs: true)) == rows)
        #expect(Set(rows).count == rows.count)
        // Without include_docs there is no document; JSONValue takes any.
        let plain = try db.view("notes/by_tag", key: String.self, value: Int.self).query(ViewQueryOptions(reduce: false))
        #expect(plain.allSatisfy { $0.document == nil })
        let untyped = try db.view("notes/by_tag", key: JSONValue.self, value: JSONValue.self)
            .query(ViewQueryOptions(limit: 1, reduce: false, includeDocs: true))
        #expect(untyped.first?.document?["text"] == "first")
    }

    @Test("Reduce rows are typed and identified by key; reduce() gives the one reduction")
    func typedReduce() async throws {
        let directory = TemporaryDirectory()
        let db = try openNotes(directory)
        let byTag = db.view("notes/by_tag", key: String.self, value: Int.self)
        let counts = try await byTag.query(ViewQueryOptions(group: true))
        #expect(counts.map(\.key) == ["couchdb", "lmdb", "swift"])
        #expect(counts.map(\.value) == [1, 2, 2])
        #expect(counts.allSatisfy { $0.documentID == nil })
        #expect(counts.map(\.id.keyJSON) == [#""couchdb""#, #""lmdb""#, #""swift""#])
        #expect(try await byTag.reduce() == 5)
        #expect(try await byTag.reduce(ViewQueryOptions(key: "swift")) == 2)
        #expect(try await byTag.reduce(ViewQueryOptions(key: "nothing")) == nil)
        // A value that does not fit names the row.
        let misfit = db.view("notes/by_tag", key: String.self, value: String.self)
        let error = await #expect(throws: CodingError.self) { try await misfit.query(ViewQueryOptions(group: true)) }
        #expect(error?.subject == #"value of the reduce row with key "couchdb""#)
    }

    @Test("A typed live query yields decoded rows, then new rows when a write changes them")
    func typedLiveQuery() async throws {
        let directory = TemporaryDirectory()
        let db = try openNotes(directory)
        let byTag = db.view("notes/by_tag", key: String.self, value: Int.self)
        var iterator = byTag.liveQuery(ViewQueryOptions(key: "swift", reduce: false)).makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.map(\.documentID) == ["n1", "n2"])
        try await db.put(Note(text: "third", tags: ["swift"], created: day, score: 0), id: "n4")
        let second = try #require(try await iterator.next())
        #expect(second.map(\.documentID) == ["n1", "n2", "n4"])
        #expect(Array(second.prefix(2)) == first, "rows that stayed are equal, with the same identity")
    }

    @Test("Keys from Swift values: strings, integers, doubles, dates, arrays and the high key")
    func keysFromValues() async throws {
        let directory = TemporaryDirectory()
        let db = try openNotes(directory)
        let tag = "swift"
        let byTag = db.view("notes/by_tag", key: String.self, value: Int.self)
        #expect(try await byTag.query(ViewQueryOptions(key: tag, reduce: false)).map(\.documentID) == ["n1", "n2"])
        #expect(try await byTag.query(ViewQueryOptions(keys: [tag, "couchdb"], reduce: false)).map(\.documentID) == ["n1", "n2", "n1"])

        let byScore = db.view("notes/by_score", key: Double.self, value: String.self)
        let minimum = 1
        #expect(try await byScore.query(ViewQueryOptions(startKey: minimum)).map(\.value) == ["first", "second"])
        #expect(try await byScore.query(ViewQueryOptions(startKey: -1.0, endKey: 1.5, inclusiveEnd: false)).map(\.value) == ["twice"])

        // Dates encode as documents hold them, so they match the emitted keys.
        let byCreated = db.view("notes/by_created", key: Date.self, value: String.self)
        #expect(try await byCreated.query(ViewQueryOptions(key: day)).map(\.value) == ["first"])
        let later = try await byCreated.query(ViewQueryOptions(startKey: day.addingTimeInterval(1), descending: false))
        #expect(later.map(\.key) == [day.addingTimeInterval(3600), day.addingTimeInterval(7200)])

        // Arrays, and every key starting with some elements.
        struct TagDate: Codable, Equatable, Sendable {
            var tag: String
            var date: Date
            init(from decoder: any Decoder) throws {
                var container = try decoder.unkeyedContainer()
                tag = try container.decode(String.self)
                date = try container.decode(Date.self)
            }
        }
        let byTagDate = db.view("notes/by_tag_date", key: TagDate.self, value: JSONValue.self)
        let exact = try await byTagDate.query(ViewQueryOptions(key: [JSONValue.string(tag), try JSONValue(encoding: day)]))
        #expect(exact.map(\.documentID) == ["n1"])
        let ranged = try await byTagDate.query(ViewQueryOptions(startKey: [tag], endKey: [JSONValue.string(tag), .highest]))
        #expect(ranged.map(\.documentID) == ["n1", "n2"])
        #expect(ranged.map(\.key.date) == [day, day.addingTimeInterval(3600)])
        var prefixed = ViewQueryOptions()
        prefixed.setKeyPrefix([tag])
        #expect(try await byTagDate.query(prefixed).map(\.documentID) == ["n1", "n2"])
        var descending = ViewQueryOptions(descending: true)
        descending.setKeyPrefix([tag])
        #expect(try await byTagDate.query(descending).map(\.documentID) == ["n2", "n1"])
        #expect(try await byTagDate.query(ViewQueryOptions(keyPrefix: [tag], descending: true, limit: 1)).map(\.documentID) == ["n2"])
        // Literals still make JSONValue keys.
        #expect(try await byTag.query(ViewQueryOptions(startKey: "s", endKey: "t", reduce: false)).count == 2)
    }

    @Test("A key that does not encode fails the query, naming it; one not an array is no prefix")
    func keyEncodingFailures() async throws {
        let directory = TemporaryDirectory()
        let db = try openNotes(directory)
        let error = await #expect(throws: QueryError.self) { try await db.query("notes/by_score", options: ViewQueryOptions(key: Double.nan)) }
        #expect(error?.error == "bad_request")
        #expect(error?.reason.contains("`key` does not encode") == true, "\(String(describing: error))")
        var options = ViewQueryOptions()
        options.setKeyPrefix("swift")
        await #expect(throws: QueryError.self) { try await db.query("notes/by_tag", options: options) }
    }

    @Test("JSONValue from Encodable values, dates as documents hold them")
    func jsonValueEncoding() throws {
        struct Point: Encodable { var y = 2; var x = 1 }
        #expect(try JSONValue(encoding: "a") == "a")
        #expect(try JSONValue(encoding: 3) == 3)
        #expect(try JSONValue(encoding: [1.5, 2]) == [1.5, 2])
        #expect(try JSONValue(encoding: Point()).jsonText == #"{"x":1,"y":2}"#)
        #expect(try JSONValue(encoding: Optional<Int>.none) == nil)
        // The same text a stored document holds for the date.
        let directory = TemporaryDirectory()
        let db = try openNotes(directory)
        let stored = try #require(try db.document("n1")?.value["created"])
        #expect(try JSONValue(encoding: day) == stored)
        #expect(throws: CodingError.self) { try JSONValue(encoding: Double.infinity) }
        #expect(JSONValue.highest == [:] && JSONValue.lowest == nil)
    }

    @Test("DecodedViewRow is Equatable and Hashable where its types are")
    func decodedViewRowEquality() throws {
        let directory = TemporaryDirectory()
        let db = try openNotes(directory)
        let result = try db.query("notes/by_tag", options: ViewQueryOptions(reduce: false))
        let rows = try result.decodedRows(key: String.self, value: Int.self)
        #expect(rows == (try result.decodedRows(key: String.self, value: Int.self)))
        #expect(Set(rows).count == rows.count - 1, "the two rows n3 emits for lmdb are alike")
    }
}
