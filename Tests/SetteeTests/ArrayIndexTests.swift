import Foundation
import Testing
import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// Random documents: `tags` an array of mixed values (or a scalar, or
/// missing), `contacts` an array of contacts whose `phones` are arrays of
/// `{type, number}` (some without a type, some not an array).
private func randomDocuments(count: Int, seed: UInt64) -> [JSONValue] {
    var random = SplitMix64(seed: seed)
    func pick(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
    let values: [JSONValue] = [1, 2, 3, "a", "b", "A", true, nil, [1], ["x": 1]]
    let types: [JSONValue] = ["home", "work", "mobile"]
    var documents: [JSONValue] = []
    for index in 0..<count {
        var members: [(key: String, value: JSONValue)] = [("_id", .string(String(format: "d%03d", index))), ("n", .number(Double(pick(10))))]
        switch pick(6) {
        case 0: break
        case 1: members.append(("tags", values[pick(values.count)]))
        default: members.append(("tags", .array((0..<pick(5)).map { _ in values[pick(values.count)] })))
        }
        if pick(4) != 0 {
            let contacts: [JSONValue] = (0..<pick(3)).map { _ in
                let phones: JSONValue = pick(5) == 0 ? "none" : .array((0..<pick(3)).map { _ in
                    pick(6) == 0 ? ["number": .number(Double(pick(100)))]
                        : ["type": types[pick(types.count)], "number": .number(Double(pick(100)))]
                })
                return ["name": .string("c\(pick(3))"), "phones": phones]
            }
            members.append(("contacts", .array(contacts)))
        }
        documents.append(.object(members))
    }
    return documents
}

private func put(_ documents: [JSONValue], into db: Database) throws {
    try db.write { batch in
        for document in documents { try batch.put(document.jsonText) }
    }
}

private func ids(_ result: FindResult) -> [String] {
    result.documents.compactMap { $0["_id"]?.stringValue }
}

/// What a full scan finds: the documents matching, in `_id` order.
private func scanned(_ documents: [JSONValue], _ selector: JSONValue) throws -> [String] {
    let compiled = try MangoSelector(selector)
    return documents.filter(compiled.matches).compactMap { $0["_id"]?.stringValue }.sorted()
}

/// Every result of `selector`, a page of `limit` at a time, by bookmark.
private func paged(_ db: Database, _ selector: JSONValue, limit: Int) throws -> [String] {
    var request = FindRequest(selector: selector)
    request.limit = limit
    var found: [String] = []
    for _ in 0..<1000 {
        let page = try db.find(request)
        if page.documents.isEmpty { break }
        found += ids(page)
        request.bookmark = page.bookmark
    }
    return found
}

/// The selectors the random documents are queried with, all served by an array index.
private let arraySelectors: [String] = [
    #"{"tags": {"$elemMatch": {"$eq": 2}}}"#,
    #"{"tags": {"$elemMatch": {"$gt": 1, "$lt": "b"}}}"#,
    #"{"tags": {"$elemMatch": {"$in": [1, "a"]}}}"#,
    #"{"tags": {"$in": [1, "a", [1], {"x": 1}]}}"#,
    #"{"tags": {"$in": [true, null]}, "n": {"$gt": 4}}"#,
    #"{"tags": {"$all": [1, 2]}}"#,
    #"{"tags": {"$all": ["a"]}}"#,
    #"{"tags": {"$elemMatch": {"$eq": 3}}, "$or": [{"n": 1}, {"n": 2}]}"#,
    #"{"contacts": {"$elemMatch": {"phones": {"$elemMatch": {"type": "home"}}}}}"#,
    #"{"contacts": {"$elemMatch": {"phones": {"$elemMatch": {"type": {"$gte": "mobile"}, "number": {"$lt": 50}}}}}}"#,
    #"{"contacts": {"$elemMatch": {"name": "c1", "phones": {"$elemMatch": {"type": "work"}}}}}"#,
    #"{"contacts": {"$elemMatch": {"phones": {"$elemMatch": {"type": {"$exists": true}, "number": 7}}}}, "n": {"$lte": 5}}"#,
]

/// The elements at `contacts[].phones` of each document, as `UNNEST` walks them.
private func phones(of document: JSONValue) -> [JSONValue] {
    (document["contacts"]?.arrayValue ?? []).flatMap { $0["phones"]?.arrayValue ?? [] }
}

/// The `MangoError` an async `body` throws, or nil when it throws none.
private func asyncMangoError(_ body: () async throws -> Void) async -> MangoError? {
    do {
        try await body()
        return nil
    } catch let error as MangoError {
        return error
    } catch {
        Issue.record(error)
        return nil
    }
}

@Suite("Array indexes: one entry per array element, as Couchbase Lite's ArrayIndexConfiguration", .ownThread)
struct ArrayIndexTests {
    @Test("find served by an array index returns what a full scan returns, page by page, for random documents")
    func randomDocumentsAsFullScan() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let documents = randomDocuments(count: 300, seed: 26)
        try put(documents, into: db)
        try db.createIndex(ArrayIndex(path: "tags"), name: "tags")
        try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
        for text in arraySelectors {
            let selector = try JSONValue(parsing: text)
            let expected = try scanned(documents, selector)
            var request = FindRequest(selector: selector)
            request.limit = 1000
            request.executionStats = true
            let result = try db.find(request)
            #expect(ids(result) == expected, "\(text)")
            let plan = try db.explain(request)
            #expect(plan["index"]?["type"] == "array", "\(text)")
            #expect(result.warning?.contains("No matching index") != true, "\(text)")
            let examined = result.executionStats?.totalDocsExamined ?? .max
            #expect(examined < documents.count, "\(text): only the documents with an entry in range are read")
            #expect(try paged(db, selector, limit: 7) == expected, "\(text): pages by bookmark")
            request.skip = 3
            request.limit = 4
            #expect(ids(try db.find(request)) == Array(expected.dropFirst(3).prefix(4)), "\(text): skip and limit")
        }
    }

    @Test("Each element is an entry keyed by the expressions; nested a[].b paths are flattened; no JavaScript runs")
    func entriesAndNestedPaths() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.write { batch in
            try batch.put(#"{"_id": "ann", "contacts": [{"name": "x", "phones": [{"type": "home", "number": 1}, {"type": "work", "number": 2}]}, {"phones": [{"type": "home", "number": 3}]}]}"#)
            try batch.put(#"{"_id": "bob", "contacts": [{"phones": [{"number": 4}]}, {"phones": "none"}]}"#)
            try batch.put(#"{"_id": "cat", "contacts": {"phones": [{"type": "home", "number": 5}]}}"#)
            try batch.put(#"{"_id": "dan", "tags": ["red", "red", "blue"]}"#)
        }
        try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
        try db.createIndex(ArrayIndex(path: "tags[]"), name: "tags")
        let phones = try db.query("phones/phones", options: ViewQueryOptions(reduce: false))
        #expect(try phones.rows.map { [$0.id.map(JSONValue.string) ?? nil, try $0.key, try $0.value] } == [
            ["ann", ["home"], 0], ["ann", ["home"], 2], ["ann", ["work"], 1],
        ], "one entry per element with every expression, valued by its position; bob's phone lacks a type, cat's contacts are no array")
        let tags = try db.query("tags/tags", options: ViewQueryOptions(reduce: false))
        #expect(try tags.rows.map { try $0.key } == [["blue"], ["red"], ["red"]], "an entry per element, duplicates included")
        let home = try db.find(try FindRequest(json: #"{"selector": {"contacts": {"$elemMatch": {"phones": {"$elemMatch": {"type": "home"}}}}}, "execution_stats": true}"#))
        #expect(ids(home) == ["ann"], "a document matching through several elements is returned once")
        #expect(home.executionStats?.totalKeysExamined == 2)
        #expect(home.executionStats?.totalDocsExamined == 1)
        #expect(try db.viewInfo().allSatisfy { $0.mapErrors == 0 })
    }

    @Test("An array index follows edits, deletions and purges")
    func incremental() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        var documents = randomDocuments(count: 120, seed: 7)
        try put(documents, into: db)
        try db.createIndex(ArrayIndex(path: "tags"), name: "tags")
        try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
        func check(_ stage: String) throws {
            for text in arraySelectors {
                let selector = try JSONValue(parsing: text)
                var request = FindRequest(selector: selector)
                request.limit = 1000
                #expect(ids(try db.find(request)) == (try scanned(documents, selector)), "\(stage): \(text)")
            }
        }
        try check("built")
        // Edits: new tags and phones.
        let edited = randomDocuments(count: 120, seed: 8)
        for position in stride(from: 0, to: documents.count, by: 5) {
            let id = try #require(documents[position]["_id"]?.stringValue)
            let revision = try #require(try db.document(id)).revision
            guard case .object(var members) = edited[position] else { continue }
            members.insert(("_rev", .string(revision.description)), at: 1)
            try db.put(JSONValue.object(members).jsonText)
            documents[position] = edited[position]
        }
        try check("edited")
        // Deletions.
        for position in stride(from: 1, to: documents.count, by: 7).reversed() {
            let id = try #require(documents[position]["_id"]?.stringValue)
            try db.delete(id, revision: try #require(try db.document(id)).revision)
            documents.remove(at: position)
        }
        try check("deleted")
        // Purges.
        for position in stride(from: 2, to: documents.count, by: 9).reversed() {
            let id = try #require(documents[position]["_id"]?.stringValue)
            try db.purge(id)
            documents.remove(at: position)
        }
        try check("purged")
        try db.updateIndexes()
        let rows = Dictionary(uniqueKeysWithValues: try db.viewInfo().map { ($0.path, $0.rowCount) })
        let expectedTags = documents.reduce(0) { count, document in
            switch document["tags"] {
            case .array(let elements)?: count + elements.count
            case nil: count
            default: count + 1
            }
        }
        #expect(rows["tags/tags"] == expectedTags, "an entry per element, and one per tags value that is no array")
        #expect(rows["phones/phones"] == documents.reduce(0) { $0 + phones(of: $1).filter { $0["type"] != nil }.count })
        #expect(try db.verify().problems.isEmpty)
    }

    @Test("$elemMatch, $in and $all on the path are served by the array index, as explain shows; a sort or missing expressions are not")
    func plannerUse() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.write { batch in
            for index in 0..<30 {
                try batch.put(#"{"_id": "t\#(index)", "n": \#(index), "tags": ["t\#(index % 3)", "u\#(index % 5)"], "items": [{"sku": "s\#(index % 4)", "qty": \#(index)}]}"#)
            }
        }
        try db.createIndex(ArrayIndex(path: "tags"), name: "tags")
        try db.createIndex(ArrayIndex(path: "items", expressions: ["sku", "qty"]), name: "items")
        let inPlan = try db.explain(try FindRequest(json: #"{"selector": {"tags": {"$in": ["t1", "u2"]}}}"#))
        #expect(inPlan["index"] == ["ddoc": "_design/tags", "name": "tags", "type": "array", "partitioned": false,
                                    "def": ["array": "tags", "fields": []]])
        #expect(inPlan["mrargs"]?["keys"] == [["t1"], ["u2"]])
        #expect(inPlan["mrargs"]?["array"]?["operator"] == "$in")
        let allPlan = try db.explain(try FindRequest(json: #"{"selector": {"tags": {"$all": ["t1", "u2"]}}}"#))
        #expect(allPlan["mrargs"]?["array"]?["combine"] == "intersection")
        let all = try db.find(try FindRequest(json: #"{"selector": {"tags": {"$all": ["t1", "u2"]}}, "execution_stats": true}"#))
        #expect(ids(all) == ["t22", "t7"])
        #expect(all.executionStats?.totalDocsExamined == 2, "the intersection of the two values' documents only")
        #expect(all.executionStats?.totalKeysExamined == 16)
        let match = try FindRequest(json: #"{"selector": {"items": {"$elemMatch": {"sku": "s2", "qty": {"$gt": 10}}}}, "execution_stats": true}"#)
        let matchPlan = try db.explain(match)
        #expect(matchPlan["index"]?["name"] == "items")
        #expect(matchPlan["mrargs"]?["start_key"] == ["s2", 10])
        #expect(matchPlan["mrargs"]?["end_key"] == ["s2", "<MAX>"])
        let matched = try db.find(match)
        #expect(ids(matched).sorted() == ["t14", "t18", "t22", "t26"])
        #expect(matched.executionStats?.totalKeysExamined == 5, "from [s2, 10], excluded after reading")
        // Not served: the element conditions lack an expression, a sort, $in with expressions.
        #expect(try db.explain(try FindRequest(json: #"{"selector": {"items": {"$elemMatch": {"qty": 3}}}}"#))["index"]?["type"] == "special")
        #expect(try db.explain(try FindRequest(json: #"{"selector": {"tags": {"$in": ["t1"]}, "n": {"$gt": null}}, "sort": ["n"]}"#))["index"]?["type"] == nil,
                "no index for the sort: the array index's order is by element")
        #expect(try db.explain(try FindRequest(json: #"{"selector": {"tags": {"$all": [["t1", "u1"]]}}}"#))["index"]?["type"] == "special",
                "$all with one array argument also matches an equal array, which no entry is")
        // A JSON index the selector requires is preferred, as CouchDB prefers json indexes.
        try db.createIndex(ValueIndex("n"), name: "n")
        let both = try db.explain(try FindRequest(json: #"{"selector": {"n": {"$gt": 3}, "tags": {"$in": ["t1"]}}}"#))
        #expect(both["index"]?["name"] == "n")
        #expect(both["index_candidates"]?.arrayValue?.first { $0["index"]?["name"] == "tags" }?["analysis"]?["reasons"]?[0]?["name"] == "unfavored_type")
        let named = try db.explain(try FindRequest(json: #"{"selector": {"n": {"$gt": 3}, "tags": {"$in": ["t1"]}}, "use_index": "tags"}"#))
        #expect(named["index"]?["name"] == "tags", "use_index names it")
    }

    @Test("UNNEST: one result per matching element with its document, from the array index or a scan, the same either way")
    func unnest() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let documents = randomDocuments(count: 200, seed: 99)
        try put(documents, into: db)
        let requests: [UnnestRequest] = [
            UnnestRequest(path: "contacts[].phones"),
            UnnestRequest(path: "contacts[].phones", elementSelector: ["type": "home"]),
            UnnestRequest(path: "contacts[].phones", elementSelector: ["type": ["$gt": "home"], "number": ["$lt": 30]], parentSelector: ["n": ["$gte": 5]]),
            UnnestRequest(path: "tags", elementSelector: ["$in": [1, "a"]]),
            UnnestRequest(path: "tags", elementSelector: ["$gt": 1], limit: 9),
        ]
        func expected(_ request: UnnestRequest) throws -> [UnnestedElement] {
            let parent = try MangoSelector(request.parentSelector)
            let element = try MangoSelector(["e": ["$elemMatch": request.elementSelector]])
            var found: [UnnestedElement] = []
            for document in documents.sorted(by: { ($0["_id"]?.stringValue ?? "") < ($1["_id"]?.stringValue ?? "") }) where parent.matches(document) {
                let elements = request.path == "tags" ? (document["tags"]?.arrayValue ?? []) : phones(of: document)
                for (position, value) in elements.enumerated()
                where request.elementSelector == [:] || element.matches(["e": [value]]) {
                    found.append(UnnestedElement(documentID: document["_id"]?.stringValue ?? "", position: position, element: value, document: document))
                }
            }
            return Array(found.prefix(request.limit ?? .max))
        }
        func compared(_ result: UnnestResult) -> [String] {
            result.elements.map { "\($0.documentID)#\($0.position) \($0.element.jsonText)" }
        }
        for request in requests {
            let scan = try db.findElements(request)
            #expect(scan.index.type == "special")
            #expect(compared(scan) == (try expected(request)).map { "\($0.documentID)#\($0.position) \($0.element.jsonText)" }, "\(request.path) \(request.elementSelector.jsonText)")
            #expect(scan.elements.allSatisfy { $0.document["_rev"] != nil && $0.document["_id"]?.stringValue == $0.documentID })
        }
        try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
        try db.createIndex(ArrayIndex(path: "tags"), name: "tags")
        for (position, request) in requests.enumerated() {
            let indexed = try db.findElements(request)
            // Every phone is wanted by the first: the index keyed by type has no entry for a phone without one.
            #expect(indexed.index.type == (position == 0 ? "special" : "array"), "\(request.path) \(request.elementSelector.jsonText)")
            #expect(compared(indexed) == (try expected(request)).map { "\($0.documentID)#\($0.position) \($0.element.jsonText)" }, "\(request.path) \(request.elementSelector.jsonText)")
        }
        var skipped = UnnestRequest(path: "tags", elementSelector: ["$gt": 1], limit: 4)
        skipped.skip = 5
        #expect(compared(try db.findElements(skipped)) == Array(compared(try db.findElements(UnnestRequest(path: "tags", elementSelector: ["$gt": 1]))).dropFirst(5).prefix(4)))
        let narrowed = try db.findElements(UnnestRequest(path: "contacts[].phones", elementSelector: ["type": "work"]))
        #expect(narrowed.executionStats.totalDocsExamined < documents.count, "only the documents with a work phone are read")
        #expect(mangoError { _ = try db.findElements(UnnestRequest(path: "contacts[].")) } == MangoError(error: "invalid_field_name", reason: "Invalid field name: contacts[]."))
        #expect(mangoError { _ = try db.findElements(UnnestRequest(path: "tags", elementSelector: ["$bad": 1])) }?.error == "invalid_operator")
    }

    @Test("ValueIndex and ArrayIndex create indexes by name; listIndexes lists array indexes as type array; deleteIndex(name:) deletes them")
    func configurationAPI() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try await db.put(#"{"_id": "a", "year": 1990, "type": "book", "tags": ["x", "y"]}"#)
        let value = try await db.createIndex(ValueIndex("type", "year", descending: true), name: "type-year")
        #expect(value.json == ["result": "created", "id": "_design/type-year", "name": "type-year"])
        #expect(try await db.createIndex(ValueIndex("type", "year", descending: true), name: "type-year").result == "exists")
        try await db.createIndex(ValueIndex(["year"], partialFilter: ["type": "book"]), name: "book-year")
        let array = try await db.createIndex(ArrayIndex(path: "tags"), name: "tags")
        #expect(array.id == "_design/tags")
        let listed = try await db.listIndexes()
        #expect(listed.map(\.name) == ["_all_docs", "book-year", "tags", "type-year"])
        #expect(listed.first { $0.name == "tags" }?.json == ["ddoc": "_design/tags", "name": "tags", "type": "array", "partitioned": false,
                                                              "def": ["array": "tags", "fields": []]])
        #expect(listed.first { $0.name == "type-year" }?.json["def"] == ["fields": [["type": "desc"], ["year": "desc"]]])
        #expect(listed.first { $0.name == "book-year" }?.partialFilterSelector == ["type": "book"])
        let stored = try #require(try await db.document("_design/tags")).value
        #expect(stored["views"]?["tags"] == [
            "map": ["fields": ["tags": "asc"], "partial_filter_selector": [:], "array": "tags", "expressions": []],
            "reduce": "_count",
            "options": ["def": ["array": "tags", "fields": []]],
        ])
        try await db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
        #expect(try await db.document("_design/phones")?.value["views"]?["phones"]?["map"]?["fields"] == ["contacts": "asc"],
                "CouchDB sees a JSON index on the path's first field")
        try await db.deleteIndex(name: "tags")
        #expect(try await db.document("_design/tags") == nil)
        try await db.deleteIndex(name: "phones")
        #expect(try await db.listIndexes().map(\.name) == ["_all_docs", "book-year", "type-year"])
        #expect(await asyncMangoError { try await db.deleteIndex(name: "tags") } == MangoError(status: 404, error: "not_found", reason: "missing"))
        try await db.createIndex(IndexRequest(json: #"{"index": {"fields": ["year"]}, "ddoc": "other", "name": "book-year"}"#))
        #expect(await asyncMangoError { try await db.deleteIndex(name: "book-year") }?.error == "ambiguous_index")
        #expect(await asyncMangoError { try await db.createIndex(ArrayIndex(path: "a[].[].b"), name: "bad") } == MangoError(error: "invalid_field_name", reason: "Invalid field name: a[].[].b"))
        #expect(await asyncMangoError { try await db.createIndex(ValueIndex("a"), name: "") }?.error == "invalid_empty_string")
        #expect(try await db.find(FindRequest(selector: ["type": "book", "year": ["$gt": 1900]])).documents.count == 1)
    }

    @Test("A partial array index holds the elements of the matching documents only, and serves a query that names it")
    func partial() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.write { batch in
            try batch.put(#"{"_id": "a", "type": "post", "tags": ["x", "y"]}"#)
            try batch.put(#"{"_id": "b", "type": "page", "tags": ["x"]}"#)
        }
        try db.createIndex(ArrayIndex(path: "tags", partialFilter: ["type": "post"]), name: "post-tags")
        try db.updateIndexes()
        #expect(try db.viewInfo().first { $0.path == "post-tags/post-tags" }?.rowCount == 2)
        let request = try FindRequest(json: #"{"selector": {"tags": {"$in": ["x"]}}}"#)
        #expect(ids(try db.find(request)) == ["a", "b"], "not named: a scan")
        var named = request
        named.useIndex = ["post-tags"]
        #expect(try db.explain(named)["index"]?["name"] == "post-tags")
        #expect(ids(try db.find(named)) == ["a"], "named: the documents it holds, as CouchDB's partial indexes answer")
    }

    @Test("An array index request: CouchDB's _index body with type array; its errors")
    func requests() throws {
        let request = try IndexRequest(json: #"{"index": {"array": "contacts[].phones", "fields": ["type"]}, "type": "array", "name": "phones", "ddoc": "p"}"#)
        #expect(request.index.type == "array")
        #expect(request.index.arrayPath == "contacts[].phones")
        #expect(request.index.fields.map(\.field) == ["type"])
        #expect(request.index.designDocument == "_design/p")
        let unnamed = try IndexRequest(json: #"{"index": {"array": "tags"}, "type": "array"}"#)
        #expect(unnamed.index.name.count == 40, "named by a hash of the definition, as JSON indexes are")
        #expect(unnamed.index.name != (try IndexRequest(json: #"{"index": {"fields": ["tags"]}}"#)).index.name)
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"fields": ["type"]}, "type": "array"}"#) }
                == MangoError(error: "missing_required_key", reason: "Missing required key: array"))
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"array": 3}, "type": "array"}"#) }?.reason
                == #"The array of an array index must be a path such as "contacts[].phones", not: 3"#)
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"array": "a", "fields": [{"b": "desc"}]}, "type": "array"}"#) }?.error == "invalid_index")
        #expect(mangoError { _ = try IndexRequest(json: #"{"index": {"array": "a", "colour": 1}, "type": "array"}"#) }
                == MangoError(error: "invalid_key", reason: "Invalid key colour for this request."))
    }

    @Test("A query design document of the array index shape, loaded from disk, defines the index; a broken one is left out")
    func fromDisk() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.write { batch in
            try batch.put(#"{"_id": "ann", "contacts": [{"phones": [{"type": "home", "number": 1}]}]}"#)
            try batch.put(#"{"_id": "bob", "contacts": [{"phones": [{"type": "work", "number": 2}]}]}"#)
        }
        let folder = directory.url.appendingPathComponent("design")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(#"""
            {"_id": "_design/phones", "language": "query", "views": {
              "phones": {"map": {"fields": {"contacts": "asc"}, "partial_filter_selector": {}, "array": "contacts[].phones", "expressions": ["type"]},
                         "reduce": "_count", "options": {"def": {"array": "contacts[].phones", "fields": ["type"]}}},
              "broken": {"map": {"fields": {"contacts": "asc"}, "array": "contacts[]..phones"}, "reduce": "_count", "options": {}}}}
            """#.utf8).write(to: folder.appendingPathComponent("phones.json"))
        try db.loadDesignDocuments(from: folder)
        let indexes = try db.listIndexes()
        #expect(indexes.map(\.name) == ["_all_docs", "phones"])
        #expect(indexes.last?.arrayPath == "contacts[].phones")
        let request = try FindRequest(json: #"{"selector": {"contacts": {"$elemMatch": {"phones": {"$elemMatch": {"type": "work"}}}}}}"#)
        #expect(try db.explain(request)["index"]?["name"] == "phones")
        #expect(ids(try db.find(request)) == ["bob"])
        // The same definition put through the API is the same index: no second build.
        try db.updateIndexes()
        let signature = try db.viewInfo().first { $0.path == "phones/phones" }?.signature
        try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
        #expect(try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones").result == "exists")
        #expect(signature != nil)
        #expect(try db.viewInfo().first { $0.path == "phones/phones" }?.signature == signature, "versioned by a hash of its definition")
        // Another definition is another version.
        try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["number"]), name: "phones")
        #expect(try db.viewInfo().first { $0.path == "phones/phones" }?.signature != signature)
    }

    @Test("settee create-index takes an array index body; list-indexes shows it")
    func commands() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let created = try settee.run(["--db", db, "create-index", #"{"index": {"array": "contacts[].phones", "fields": ["type"]}, "type": "array", "ddoc": "p", "name": "phones"}"#], in: directory.url)
        #expect(created.exitStatus == 0, "\(created.standardError)")
        #expect(try JSONValue(parsing: created.standardOutput) == ["result": "created", "id": "_design/p", "name": "phones"])
        let listed = try settee.run(["--db", db, "list-indexes"], in: directory.url)
        let listing = try JSONValue(parsing: listed.standardOutput)
        #expect(listing["total_rows"] == 2)
        #expect(listing["indexes"]?[1] == ["ddoc": "_design/p", "name": "phones", "type": "array", "partitioned": false,
                                          "def": ["array": "contacts[].phones", "fields": [["type": "asc"]]]])
        let refused = try settee.run(["--db", db, "create-index", #"{"index": {"array": "a[]..b"}, "type": "array"}"#], in: directory.url)
        #expect(refused.exitStatus == 1)
        #expect(try JSONValue(parsing: refused.standardError) == ["error": "invalid_field_name", "reason": "Invalid field name: a[]..b"])
    }
}
