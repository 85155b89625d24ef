import Foundation
import Testing
import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// 40 people: p00…p39, ages 20…59, every third one in Oslo.
private func people(_ db: Database) throws {
    try db.write { batch in
        for index in 0..<40 {
            let city = index % 3 == 0 ? "Oslo" : "Lyon"
            try batch.put(String(format: #"{"_id": "p%02d", "type": "person", "age": %d, "city": "%@", "tags": ["t%d"], "address": {"zip": "%04d"}}"#,
                                 index, 20 + index, city, index % 4, index))
        }
        try batch.put(#"{"_id": "note", "type": "note", "text": "hi"}"#)
    }
}

private func find(_ db: Database, _ body: String) throws -> FindResult {
    try db.find(try FindRequest(json: body))
}

private func ids(_ result: FindResult) -> [String] {
    result.documents.compactMap { $0["_id"]?.stringValue }
}


@Suite("find: CouchDB's _find without an index (a scan of _all_docs)")
struct FindTests {
    @Test("A selector finds the matching documents in _id order, 25 at most by default, with CouchDB's warning")
    func basics() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try people(db)
        let all = try find(db, #"{"selector": {"type": "person"}}"#)
        #expect(ids(all) == (0..<25).map { String(format: "p%02d", $0) })
        #expect(all.warning == "No matching index found, create an index to optimize query time.")
        #expect(all.documents.first?["_rev"]?.stringValue?.hasPrefix("1-") == true)

        let oslo = try find(db, #"{"selector": {"city": "Oslo", "age": {"$gte": 50}}, "limit": 100}"#)
        #expect(ids(oslo) == ["p30", "p33", "p36", "p39"])
        let json = oslo.json
        #expect(json["docs"]?.arrayValue?.count == 4)
        #expect(json["bookmark"]?.stringValue == oslo.bookmark)

        let none = try find(db, #"{"selector": {"type": "robot"}}"#)
        #expect(none.documents.isEmpty)
        #expect(none.bookmark == "nil")
        #expect(none.warning?.contains("The number of documents examined is high") == true)
    }

    @Test("Design documents are not found; an empty $or finds nothing, as CouchDB's planner reads nothing for it")
    func designDocumentsAndEmptyOperators() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try people(db)
        try db.put(#"{"_id": "_design/d", "views": {}}"#)
        #expect(ids(try find(db, #"{"selector": {"_id": {"$gte": null}}, "limit": 100}"#)).count == 41)
        #expect(try find(db, #"{"selector": {"$or": []}}"#).documents.isEmpty)
        #expect(ids(try find(db, #"{"selector": {"age": 22, "$or": []}}"#)) == ["p02"])
        #expect(try find(db, #"{"selector": {"age": 22, "city": {"$in": []}}}"#).documents.isEmpty)
        #expect(ids(try find(db, #"{"selector": {"age": 22, "$and": []}}"#)) == ["p02"])
        #expect(try find(db, #"{"selector": {"tags": {"$nin": []}}, "limit": 100}"#).documents.count == 40)
    }

    @Test("fields returns the paths asked for; deleted documents are not found")
    func fieldsAndDeletions() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try people(db)
        let rev = try #require(try db.document("p01")).revision
        try db.delete("p01", revision: rev)
        let result = try find(db, #"{"selector": {"age": {"$lt": 23}}, "fields": ["_id", "address.zip", "missing", "tags.0"]}"#)
        // As mango_doc:set_field/3 builds it: a path into an array becomes an object member.
        #expect(result.documents.map(\.jsonText) == [
            #"{"_id":"p00","address":{"zip":"0000"},"tags":{"0":"t0"}}"#,
            #"{"_id":"p02","address":{"zip":"0002"},"tags":{"0":"t2"}}"#,
        ])
    }

    @Test("skip, limit and bookmarks page through every match once")
    func paging() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try people(db)
        var request = try FindRequest(json: #"{"selector": {"type": "person"}, "limit": 7}"#)
        var seen: [String] = []
        for _ in 0..<10 {
            let page = try db.find(request)
            if page.documents.isEmpty { break }
            seen += ids(page)
            request.bookmark = page.bookmark
        }
        #expect(seen == (0..<40).map { String(format: "p%02d", $0) })
        let skipped = try find(db, #"{"selector": {"type": "person"}, "skip": 38}"#)
        #expect(ids(skipped) == ["p38", "p39"])
        #expect(try find(db, #"{"selector": {"type": "person"}, "limit": 0}"#).documents.isEmpty)
        #expect(mangoError { _ = try find(db, #"{"selector": {}, "bookmark": "not a bookmark"}"#) }?.error == "invalid_bookmark")
    }

    @Test("execution_stats carry the query's time when asked for; without them there are none")
    func executionTime() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try people(db)
        // A regular expression over every document: a query that takes measurable time.
        let timed = try find(db, #"{"selector": {"city": {"$regex": "^(O|L)(s|y)(l|o)+.*$"}}, "limit": 100, "execution_stats": true}"#)
        let stats = try #require(timed.executionStats)
        #expect(stats.executionTimeMilliseconds > 0)
        #expect(stats.totalDocsExamined == 41)
        #expect(stats.resultsReturned == 40)
        #expect(timed.jsonText.contains(#""execution_time_ms":"#))
        let untimed = try find(db, #"{"selector": {"city": {"$regex": "^O"}}}"#)
        #expect(untimed.executionStats == nil)
        #expect(!untimed.jsonText.contains("execution_stats"))
    }

    @Test("Conditions on _id narrow the scan; a sort by _id needs one, any other sort an index")
    func idRangesAndSort() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try people(db)
        let ranged = try find(db, #"{"selector": {"_id": {"$gt": "p10", "$lte": "p14"}}, "execution_stats": true}"#)
        #expect(ids(ranged) == ["p11", "p12", "p13", "p14"])
        #expect(ranged.executionStats?.totalDocsExamined == 4, "only the ids in range are read")
        #expect(ranged.executionStats?.resultsReturned == 4)

        let descending = try find(db, #"{"selector": {"_id": {"$gt": null}, "type": "person"}, "sort": [{"_id": "desc"}], "limit": 3}"#)
        #expect(ids(descending) == ["p39", "p38", "p37"])
        var next = try FindRequest(json: #"{"selector": {"_id": {"$gt": null}, "type": "person"}, "sort": [{"_id": "desc"}], "limit": 3}"#)
        next.bookmark = descending.bookmark
        #expect(ids(try db.find(next)) == ["p36", "p35", "p34"])
        let descendingRange = try find(db, #"{"selector": {"_id": {"$gte": "p05", "$lt": "p08"}}, "sort": [{"_id": "desc"}]}"#)
        #expect(ids(descendingRange) == ["p07", "p06", "p05"])

        let noIndex = MangoError(error: "no_usable_index", reason: "No index exists for this sort, try indexing by the sort fields.")
        #expect(mangoError { _ = try find(db, #"{"selector": {"type": "person"}, "sort": ["age"]}"#) } == noIndex)
        #expect(mangoError { _ = try find(db, #"{"selector": {"type": "person"}, "sort": ["_id"]}"#) } == noIndex)
    }

    @Test("use_index naming no index: a warning, or with allow_fallback false CouchDB's error")
    func useIndex() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try people(db)
        let warned = try find(db, #"{"selector": {"type": "note"}, "use_index": "_design/nope"}"#)
        #expect(ids(warned) == ["note"])
        #expect(warned.warning?.hasPrefix("_design/nope was not used because it does not contain a valid index for this query.\n") == true)
        let pair = try find(db, #"{"selector": {"type": "note"}, "use_index": ["nope", "by_x"]}"#)
        #expect(pair.warning?.hasPrefix("_design/nope, by_x was not used because it is not a valid index for this query.") == true)
        #expect(mangoError { _ = try find(db, #"{"selector": {"type": "note"}, "use_index": "nope", "allow_fallback": false}"#) }
                == MangoError(error: "invalid_index", reason: "_design/nope specified by `use_index` could not be found or it is not suitable."))
    }

    @Test("A request CouchDB refuses is refused with its error and reason")
    func requestErrors() throws {
        #expect(mangoError { _ = try FindRequest(json: #"{"selector": {}, "limt": 3}"#) }
                == MangoError(error: "invalid_key", reason: "Invalid key limt for this request."))
        #expect(mangoError { _ = try FindRequest(json: #"{"limit": 3}"#) }
                == MangoError(error: "missing_required_key", reason: "Missing required key: selector"))
        #expect(mangoError { _ = try FindRequest(json: #"{"selector": {}, "limit": -1}"#) }
                == MangoError(error: "invalid_non_neg_integer", reason: "-1 is not an integer greater than or equal to zero"))
        #expect(mangoError { _ = try FindRequest(json: #"{"selector": {}, "sort": ["a", {"b": "desc"}]}"#) }
                == MangoError(error: "unsupported_mixed_sort", reason: "Sorts currently only support a single direction for all fields."))
        #expect(mangoError { _ = try FindRequest(json: #"{"selector": {}, "sort": [{"a": "up"}]}"#) }?.error == "invalid_sort_field")
        #expect(mangoError { _ = try FindRequest(json: #"{"selector": {}, "fields": "a"}"#) }?.error == "invalid_fields")
        #expect(mangoError { _ = try FindRequest(json: #"{"selector": {}, "use_index": "a/b/c"}"#) }?.error == "invalid_index_name")
        #expect(mangoError { _ = try FindRequest(json: #"{"selector": {}, "update": "yes"}"#) }
                == MangoError(error: "invalid_boolean", reason: "Invalid boolean value: <<121,101,115>>"))
        #expect(mangoError { _ = try FindRequest(json: #"{"selector": 3}"#) }?.error == "invalid_selector_json")
    }

    @Test("Typed find decodes the documents")
    func typed() throws {
        struct Person: Decodable, Equatable {
            var _id: String
            var age: Int
        }
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try people(db)
        var request = FindRequest(selector: ["age": ["$in": [21, 22]]])
        request.fields = ["_id", "age"]
        #expect(try db.find(request, as: Person.self) == [Person(_id: "p01", age: 21), Person(_id: "p02", age: 22)])
    }
}

@Suite("settee find")
struct FindCommandTests {
    @Test("settee find prints CouchDB's _find response, reads the body from standard input, and reports a bad selector as CouchDB does")
    func findCommand() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        for document in [#"{"_id":"a","n":1}"#, #"{"_id":"b","n":2}"#, #"{"_id":"c","n":3}"#] {
            #expect(try settee.run(["--db", db, "put", document], in: directory.url).exitStatus == 0)
        }
        let found = try settee.run(["--db", db, "find", #"{"selector": {"n": {"$gte": 2}}, "fields": ["_id"]}"#], in: directory.url)
        #expect(found.exitStatus == 0, "\(found.standardError)")
        let response = try JSONValue(parsing: found.standardOutput)
        #expect(response["docs"] == [["_id": "b"], ["_id": "c"]])
        #expect(response["warning"]?.stringValue == "No matching index found, create an index to optimize query time.")

        let body = directory.url.appendingPathComponent("body.json")
        try Data(#"{"selector": {"n": 1}}"#.utf8).write(to: body)
        let piped = try settee.run(["--db", db, "find", "-"], input: body, in: directory.url)
        #expect(try JSONValue(parsing: piped.standardOutput)["docs"]?[0]?["_id"] == "a")

        let bad = try settee.run(["--db", db, "find", #"{"selector": {"n": {"$foo": 1}}}"#], in: directory.url)
        #expect(bad.exitStatus == 1)
        #expect(try JSONValue(parsing: bad.standardError) == ["error": "invalid_operator", "reason": "Invalid operator: $foo"])
    }
}
