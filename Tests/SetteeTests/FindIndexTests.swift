import Foundation
import Testing
import Settee
@testable import SetteeFind
import SetteeViews

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}


@Suite("find's JSON indexes: CouchDB's _index requests and query design documents")
struct FindIndexTests {
    @Test("An index is kept in a query design document in CouchDB's shape; the same request again exists")
    func createAndList() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let created = try db.createIndex(IndexRequest(json: #"{"index": {"fields": [{"type": "desc"}, {"year": "desc"}]}, "name": "type-year", "ddoc": "books"}"#))
        #expect(created.json == ["result": "created", "id": "_design/books", "name": "type-year"])
        let stored = try #require(try db.document("_design/books")).value
        #expect(stored["language"] == "query")
        #expect(stored["views"]?["type-year"] == [
            "map": ["fields": ["type": "desc", "year": "desc"], "partial_filter_selector": [:]],
            "reduce": "_count",
            "options": ["def": ["fields": [["type": "desc"], ["year": "desc"]]]],
        ])
        #expect(try db.createIndex(IndexRequest(json: #"{"index": {"fields": [{"type": "desc"}, {"year": "desc"}]}, "name": "type-year", "ddoc": "books"}"#)).result == "exists")

        let partial = try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["city"], "partial_filter_selector": {"type": "contact"}}, "ddoc": "_design/books", "name": "city"}"#))
        #expect(partial.result == "created")
        let automatic = try IndexRequest(json: #"{"index": {"fields": ["name"]}}"#)
        #expect(try IndexRequest(json: #"{"index": {"fields": ["name"]}}"#) == automatic, "a request without names names its index the same way each time")
        try db.createIndex(automatic)

        let listed = try db.listIndexes()
        #expect(listed.count == 4)
        #expect(listed.map(\.designDocument) == [nil, automatic.index.designDocument, "_design/books", "_design/books"].sorted { ($0 ?? "") < ($1 ?? "") })
        #expect(listed.first?.json == ["ddoc": nil, "name": "_all_docs", "type": "special", "def": ["fields": [["_id": "asc"]]]])
        let city = try #require(listed.first { $0.name == "city" })
        #expect(city.json == ["ddoc": "_design/books", "name": "city", "type": "json", "partitioned": false,
                              "def": ["fields": [["city": "asc"]], "partial_filter_selector": ["type": "contact"]]])
        #expect(listed.filter { $0.designDocument == "_design/books" }.map(\.name) == ["city", "type-year"])
        // Each index is a view of its design document, mapped without JavaScript, built like any view.
        try db.updateIndexes()
        #expect(try db.viewInfo().map(\.path).sorted() == ["books/city", "books/type-year", "\(automatic.index.designDocument!.dropFirst(8))/\(automatic.index.name)"].sorted())
    }

    @Test("Deleting an index rewrites its design document; its last index deletes it")
    func delete() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["a"]}, "ddoc": "d", "name": "a"}"#))
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["b"]}, "ddoc": "d", "name": "b"}"#))
        try db.deleteIndex(designDocument: "d", name: "a")
        #expect(try db.document("_design/d")?.value["views"]?["a"] == nil)
        #expect(try db.listIndexes().map(\.name) == ["_all_docs", "b"])
        try db.deleteIndex(designDocument: "_design/d", name: "b")
        #expect(try db.document("_design/d") == nil)
        #expect(mangoError { try db.deleteIndex(designDocument: "d", name: "b") } == MangoError(status: 404, error: "not_found", reason: "missing"))
    }

    @Test("A query design document put or loaded from disk defines its indexes")
    func fromDesignDocuments() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let folder = directory.url.appendingPathComponent("design")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(#"""
            {"_id": "_design/q", "language": "query", "views": {
              "by-x": {"map": {"fields": {"x": "asc"}, "partial_filter_selector": {}}, "reduce": "_count", "options": {"def": {"fields": ["x"]}}},
              "broken": {"map": {"fields": {"y": "sideways"}}, "reduce": "_count", "options": {}}}}
            """#.utf8).write(to: folder.appendingPathComponent("q.json"))
        try db.loadDesignDocuments(from: folder)
        #expect(try db.listIndexes().map(\.name) == ["_all_docs", "by-x"], "a view that is no index is left out, as CouchDB leaves it out")
        // A JavaScript design document is not a place for an index.
        try db.put(#"{"_id": "_design/js", "views": {"v": {"map": "function (doc) { emit(doc._id, null); }"}}}"#)
        #expect(mangoError { try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["a"]}, "ddoc": "js"}"#)) }
                == MangoError(error: "invalid_index", reason: "Invalid design document query language."))
    }

    @Test("A request CouchDB refuses is refused with its error and reason")
    func requestErrors() throws {
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"fields": ["a", {"b": "desc"}]}}"#) }?.error == "unsupported_mixed_sort")
        #expect(mangoError { _ = try IndexRequest(json: #"{"name": "x"}"#) } == MangoError(error: "missing_required_key", reason: "Missing required key: index"))
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {}}"#) } == MangoError(error: "missing_required_key", reason: "Missing required key: fields"))
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"fields": []}}"#) } == MangoError(error: "invalid_index", reason: "Index is missing its definition."))
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": 3}"#) } == MangoError(error: "invalid_index", reason: "JSON indexes must be an object, not: 3"))
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"fields": ["a"]}, "type": "geo"}"#) } == MangoError(error: "invalid_index", reason: "Invalid type for index: geo"))
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"fields": ["a"]}, "type": "text"}"#) }?.status == 503)
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"fields": ["a"]}, "name": ""}"#) }
                == MangoError(error: "invalid_empty_string", reason: "Index name or ddoc cannot be empty string"))
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"fields": ["a"], "partial_filter_selector": {"b": {"$bad": 1}}}}"#) }?.error == "invalid_operator")
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"fields": ["a"]}, "colour": "red"}"#) }
                == MangoError(error: "invalid_key", reason: "Invalid key colour for this request."))
    }

    @Test("settee create-index, list-indexes and delete-index")
    func commands() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let created = try settee.run(["--db", db, "create-index", #"{"index": {"fields": ["type"]}, "ddoc": "t", "name": "type"}"#], in: directory.url)
        #expect(created.exitStatus == 0, "\(created.standardError)")
        #expect(try JSONValue(parsing: created.standardOutput) == ["result": "created", "id": "_design/t", "name": "type"])
        let listed = try settee.run(["--db", db, "list-indexes"], in: directory.url)
        let listing = try JSONValue(parsing: listed.standardOutput)
        #expect(listing["total_rows"] == 2)
        #expect(listing["indexes"]?[1]?["name"] == "type")
        let deleted = try settee.run(["--db", db, "delete-index", "t", "type"], in: directory.url)
        #expect(try JSONValue(parsing: deleted.standardOutput) == ["ok": true])
        let again = try settee.run(["--db", db, "delete-index", "t", "type"], in: directory.url)
        #expect(again.exitStatus == 1)
        #expect(try JSONValue(parsing: again.standardError) == ["error": "not_found", "reason": "missing"])
    }
}

@Suite("find with JSON indexes")
struct FindWithIndexTests {
    @Test("A sort by indexed fields returns the indexed documents in the index's order and pages through them")
    func sortedByIndex() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.write { batch in
            for (id, age) in [("a", 30), ("b", 25), ("c", 35), ("d", 25), ("e", 40)] {
                try batch.put(#"{"_id": "\#(id)", "type": "person", "age": \#(age)}"#)
            }
            try batch.put(#"{"_id": "f", "type": "person"}"#)
        }
        let sortError = mangoError { _ = try db.find(try FindRequest(json: #"{"selector": {"age": {"$gt": 0}}, "sort": ["age"]}"#)) }
        #expect(sortError?.error == "no_usable_index")
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "people", "name": "age"}"#))
        let ascending = try db.find(try FindRequest(json: #"{"selector": {"age": {"$gt": 0}}, "sort": ["age"], "fields": ["_id"]}"#))
        #expect(ascending.documents.map { $0["_id"]?.stringValue } == ["b", "d", "a", "c", "e"], "ties by document id")
        #expect(ascending.warning == nil)
        var request = try FindRequest(json: #"{"selector": {"age": {"$gte": 25}}, "sort": [{"age": "desc"}], "limit": 2, "fields": ["_id"]}"#)
        var pages: [[String]] = []
        for _ in 0..<5 {
            let page = try db.find(request)
            if page.documents.isEmpty { break }
            pages.append(page.documents.compactMap { $0["_id"]?.stringValue })
            request.bookmark = page.bookmark
        }
        #expect(pages == [["e", "c"], ["a", "d"], ["b"]])
        // A document without the indexed field is not in the index, as in CouchDB.
        let all = try db.find(try FindRequest(json: #"{"selector": {"type": "person"}, "use_index": "people"}"#))
        #expect(all.documents.count == 6, "the index cannot serve a selector that does not require its field: _all_docs does")
        #expect(all.warning?.contains("_design/people was not used") == true)
    }
}

@Suite("explain")
struct ExplainTests {
    @Test("explain shows the index chosen, the key range, the options and why the other indexes were not chosen")
    func explain() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "a", "name": "age"}"#))
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age", "name"]}, "ddoc": "b", "name": "age-name"}"#))
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["city"]}, "ddoc": "c", "name": "city"}"#))
        let plan = try db.explain(try FindRequest(json: #"{"selector": {"age": {"$gt": 20}}, "fields": ["_id", "age"]}"#))
        #expect(plan["dbname"] == "db")
        #expect(plan["index"]?["name"] == "age")
        #expect(plan["selector"] == ["age": ["$gt": 20]])
        let both = try db.explain(try FindRequest(json: #"{"selector": {"age": {"$gt": 20}, "name": {"$exists": true}}}"#))
        #expect(both["index"]?["name"] == "age-name", "the index covering more of the selector's ranges")
        #expect(both["covering"] == false, "without fields, whole documents are read")
        #expect(both["index_candidates"]?.arrayValue?.first { $0["index"]?["name"] == "age" }?["analysis"]?["reasons"]?[0]?["name"] == "less_overlap")
        #expect(plan["opts"]?["bookmark"] == "nil")
        #expect(plan["opts"]?["sort"] == [:])
        #expect(plan["mrargs"]?["start_key"] == [20])
        #expect(plan["mrargs"]?["end_key"] == ["<MAX>"])
        #expect(plan["mrargs"]?["direction"] == "fwd")
        #expect(plan["covering"] == true, "_id and age are both in the index's key")
        #expect(plan["mrargs"]?["include_docs"] == false)
        #expect(plan["selector_hints"] == [["type": "json", "indexable_fields": ["age"], "unindexable_fields": []]])
        let candidates = plan["index_candidates"]?.arrayValue ?? []
        func reason(_ name: String) -> JSONValue? {
            candidates.first { $0["index"]?["name"]?.stringValue == name }?["analysis"]?["reasons"]?[0]?["name"]
        }
        #expect(reason("age-name") == "field_mismatch", "it needs name too")
        #expect(reason("city") == "field_mismatch")
        #expect(reason("_all_docs") == "unfavored_type")
        #expect(candidates.count == 3)

        let scan = try db.explain(try FindRequest(json: #"{"selector": {"name": "x"}, "sort": [{"_id": "desc"}], "use_index": "c"}"#.replacingOccurrences(of: #""sort": [{"_id": "desc"}], "#, with: "")))
        #expect(scan["index"]?["type"] == "special")
        #expect(scan["mrargs"]?["start_key"] == nil || scan["mrargs"]?["start_key"] == .null)
        #expect(scan["mrargs"]?["end_key"] == "<MAX>")
        #expect(scan["opts"]?["use_index"] == ["c"])
        let empty = try db.explain(try FindRequest(json: #"{"selector": {"$or": []}}"#))
        #expect(empty["mrargs"]?["start_key"] == .null && empty["mrargs"]?["end_key"] == .null)
    }
}

@Suite("JSON indexes built and read")
struct StoredJSONIndexTests {
    @Test("A JSON index holds the documents with every field that match its partial filter, reads only its key range, and follows writes")
    func builtAndRead() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.write { batch in
            for index in 0..<40 {
                try batch.put(#"{"_id": "p\#(index)", "type": "\#(index % 2 == 0 ? "person" : "robot")", "age": \#(20 + index)}"#)
            }
            try batch.put(#"{"_id": "ageless", "type": "person"}"#)
        }
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"]}, "ddoc": "ix", "name": "age"}"#))
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["age"], "partial_filter_selector": {"type": "person"}}, "ddoc": "ix", "name": "person-age"}"#))
        let old = try db.find(try FindRequest(json: #"{"selector": {"age": {"$gt": 55}}, "fields": ["_id"], "execution_stats": true}"#))
        #expect(old.documents.compactMap { $0["_id"]?.stringValue }.sorted() == ["p36", "p37", "p38", "p39"])
        #expect(old.executionStats?.totalKeysExamined == 5, "only the key range is read, from 55 (excluded after reading, as CouchDB does)")
        #expect(old.warning == nil)
        try db.updateIndexes()
        let rows = Dictionary(uniqueKeysWithValues: try db.viewInfo().map { ($0.path, $0.rowCount) })
        #expect(rows["ix/age"] == 40, "the document without an age is not in the index")
        #expect(rows["ix/person-age"] == 20, "the partial index holds the people only")
        // The index is a view: CouchDB's row shape, [values] keys.
        let view = try db.query("ix/age", options: ViewQueryOptions(limit: 1, reduce: false))
        #expect(try view.rows.first?.key == [20])
        // Writes reach the index on the next find.
        try db.put(#"{"_id": "elder", "type": "person", "age": 99}"#)
        let again = try db.find(try FindRequest(json: #"{"selector": {"age": {"$gt": 90}}, "fields": ["_id"]}"#))
        #expect(again.documents == [["_id": "elder"]])
        // The partial index, when named, answers for the people only.
        let people = try db.find(try FindRequest(json: #"{"selector": {"age": {"$gt": 55}}, "use_index": ["ix", "person-age"], "fields": ["_id"]}"#))
        #expect(people.documents.compactMap { $0["_id"]?.stringValue } == ["p36", "p38", "elder"])
    }

    @Test("Indexes of the same fields in other orders keep rows of their own, built together or one after the other")
    func fieldOrderIsTheIndex() throws {
        for together in [true, false] {
            let directory = TemporaryDirectory()
            let db = try openDatabase(directory)
            try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["a", "b"]}, "ddoc": "x", "name": "ab"}"#))
            if !together { _ = try db.find(FindRequest(selector: ["a": 1])) }
            try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["b", {"a": "asc"}]}, "ddoc": "x", "name": "ba"}"#))
            try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["b", "a"]}, "ddoc": "y", "name": "ba"}"#))
            try db.write { batch in
                try batch.put(#"{"_id": "one", "a": 1, "b": 2}"#)
                try batch.put(#"{"_id": "two", "a": 2, "b": 1}"#)
            }
            let views = try db.viewInfo().filter { ["x/ab", "x/ba", "y/ba"].contains($0.path) }
            #expect(Set(views.map(\.signature)).count == 2, "ab apart from ba (the same in x and y): \(views.map { ($0.path, $0.signature) })")
            for index in [["x", "ab"], ["x", "ba"], ["y", "ba"]] {
                var request = FindRequest(selector: ["a": 2, "b": ["$gt": 0]])
                request.useIndex = index
                let result = try db.find(request)
                #expect(result.warning == nil, "\(index) serves the request")
                #expect(result.documents.compactMap { $0["_id"]?.stringValue } == ["two"], "\(index), built \(together ? "together" : "apart")")
                // Read in key order: (a, b) for ab, (b, a) for ba.
                var sorted = FindRequest(selector: ["a": ["$gt": 0], "b": ["$gt": 0]])
                sorted.useIndex = index
                sorted.sort = index[1] == "ab" ? [.init("a"), .init("b")] : [.init("b"), .init("a")]
                #expect(try db.find(sorted).documents.compactMap { $0["_id"]?.stringValue } == (index[1] == "ab" ? ["one", "two"] : ["two", "one"]),
                        "\(index) sorted, built \(together ? "together" : "apart")")
            }
        }
    }

    @Test("An index's version holds its fields' order and how its keys write numbers: one versioned by its map alone is built again")
    func versionHoldsOrderAndNumbers() throws {
        var signatures: Set<String> = []
        for fields in [["a"], ["b.c"], ["a", "b"], ["a", "b.c", "d"], ["b", "a"]] {
            let index = MangoIndex(designDocument: "_design/x", name: "i", type: "json", fields: fields.map { FindRequest.SortField($0) })
            let versioned = try #require(index.viewDefinition)
            let unordered = ViewDefinition(designDocument: "_design/x", name: "i", queryIndexer: try MangoIndexer(index), definition: try #require(index.view["map"]))
            #expect(versioned.signature != unordered.signature, "\(fields)")
            signatures.insert(versioned.signature)
        }
        #expect(signatures.count == 5, "each list of fields, in each order, its own version")
    }

    @Test("Deleting an index removes its stored index on the next clean-up")
    func deletedIndexGoes() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(#"{"_id": "a", "n": 1}"#)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["n"]}, "ddoc": "d", "name": "n"}"#))
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["m"]}, "ddoc": "d", "name": "m"}"#))
        try db.updateIndexes()
        #expect(try db.viewInfo().map(\.path).sorted() == ["d/m", "d/n"])
        try db.deleteIndex(designDocument: "d", name: "n")
        #expect(try db.viewInfo().map(\.path) == ["d/m"])
        #expect(try db.verify().problems.isEmpty)
    }
}
