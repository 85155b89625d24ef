import Foundation
import Testing
import Settee

/// Documents with `tags` (an array of small values, empty, a scalar or
/// missing) and `items` (objects with a `sku`, some without one).
private func sortDocuments(count: Int, seed: UInt64) -> [JSONValue] {
    var random = SplitMix64(seed: seed)
    func pick(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
    let values: [JSONValue] = [1, 2, 3, 4, "a", "b"]
    var documents: [JSONValue] = []
    for index in 0..<count {
        var members: [(key: String, value: JSONValue)] = [("_id", .string("d\(index * 7919 % count)")), ("n", .number(Double(pick(10))))]
        switch pick(8) {
        case 0: break
        case 1: members.append(("tags", values[pick(values.count)]))
        case 2: members.append(("tags", []))
        default: members.append(("tags", .array((0..<(1 + pick(3))).map { _ in values[pick(values.count)] })))
        }
        if pick(3) != 0 {
            members.append(("items", .array((0..<pick(4)).map { _ in
                pick(5) == 0 ? ["qty": .number(Double(pick(9)))] : ["sku": .string("s\(pick(4))"), "qty": .number(Double(pick(9)))]
            })))
        }
        documents.append(.object(members))
    }
    return documents
}

private func ids(_ result: FindResult) -> [String] {
    result.documents.compactMap { $0["_id"]?.stringValue }
}

/// The ids a full scan finds, in `_id` order (bytes), reversed when `descending`.
private func scanned(_ documents: [JSONValue], _ selector: JSONValue, descending: Bool = false) throws -> [String] {
    let compiled = try MangoSelector(selector)
    let found = documents.filter(compiled.matches).compactMap { $0["_id"]?.stringValue }
        .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    return descending ? found.reversed() : found
}

private func openDatabase(_ directory: TemporaryDirectory, _ documents: [JSONValue]) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
    try db.write { batch in
        for document in documents { try batch.put(document.jsonText) }
    }
    try db.createIndex(ArrayIndex(path: "tags"), name: "tags")
    try db.createIndex(ArrayIndex(path: "items", expressions: ["sku"]), name: "items")
    return db
}

/// Every result, `limit` at a time, by bookmark.
private func paged(_ db: Database, _ request: FindRequest, limit: Int) throws -> [String] {
    var request = request
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

@Suite("Array indexes serve $allMatch and sorts on _id")
struct ArrayIndexSortTests {
    static let allMatchSelectors = [
        #"{"tags": {"$allMatch": {"$gt": 1}}}"#,
        #"{"tags": {"$allMatch": {"$in": [1, 2, "a"]}}}"#,
        #"{"tags": {"$allMatch": {"$gte": 2, "$lt": "b"}}, "n": {"$gt": 2}}"#,
        #"{"items": {"$allMatch": {"sku": {"$in": ["s1", "s2"]}}}}"#,
        #"{"items": {"$allMatch": {"sku": {"$gt": "s0"}, "qty": {"$lt": 6}}}}"#,
    ]

    @Test("$allMatch on the path is served by the array index and finds what a full scan finds; empty arrays match no $allMatch, as in CouchDB")
    func allMatch() throws {
        let directory = TemporaryDirectory()
        let documents = sortDocuments(count: 400, seed: 5)
        let db = try openDatabase(directory, documents)
        for text in Self.allMatchSelectors {
            let selector = try JSONValue(parsing: text)
            let expected = try scanned(documents, selector)
            #expect(!expected.isEmpty, "\(text)")
            var request = FindRequest(selector: selector)
            request.limit = 1000
            request.executionStats = true
            let plan = try db.explain(request)
            #expect(plan["index"]?["type"] == "array", "\(text)")
            #expect(plan["mrargs"]?["array"]?["operator"] == "$allMatch", "\(text)")
            let result = try db.find(request)
            #expect(ids(result) == expected, "\(text)")
            #expect((result.executionStats?.totalDocsExamined ?? .max) < documents.count, "\(text): only the documents with an entry are read")
            #expect(try paged(db, request, limit: 6) == expected, "\(text): by bookmark")
        }
        // Every element of an empty array meets any condition, yet CouchDB's $allMatch is false for it.
        let empty = try FindRequest(json: #"{"selector": {"tags": {"$allMatch": {"$exists": true}}, "_id": {"$gt": null}}, "use_index": "_all_docs"}"#)
        let withEmpty = documents.filter { $0["tags"] == [] }.compactMap { $0["_id"]?.stringValue }
        #expect(!withEmpty.isEmpty)
        #expect(Set(ids(try db.find(empty))).isDisjoint(with: withEmpty))
        // A condition without the expressions: not served, and explain says why.
        let noSku = try FindRequest(json: #"{"selector": {"items": {"$allMatch": {"qty": {"$gt": 2}}}}, "limit": 1000}"#)
        let plan = try db.explain(noSku)
        #expect(plan["index"]?["type"] == "special")
        let reasons = plan["index_candidates"]?.arrayValue?.first { $0["index"]?["name"] == "items" }?["analysis"]?["reasons"]
        #expect(reasons == [["name": "field_mismatch"]])
        #expect(ids(try db.find(noSku)) == (try scanned(documents, noSku.selector)))
    }

    @Test("$allMatch through a nested path: a[].b with $allMatch or $elemMatch on the way")
    func nestedAllMatch() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        let documents: [JSONValue] = [
            ["_id": "a", "contacts": [["phones": [["type": "home"], ["type": "work"]]], ["phones": [["type": "home"]]]]],
            ["_id": "b", "contacts": [["phones": [["type": "home"]]], ["phones": []]]],
            ["_id": "c", "contacts": [["phones": [["type": "home"]]]]],
            ["_id": "d", "contacts": []],
            ["_id": "e", "contacts": [["phones": [["type": "work"]]]]],
        ]
        try db.write { batch in
            for document in documents { try batch.put(document.jsonText) }
        }
        try db.createIndex(ArrayIndex(path: "contacts[].phones", expressions: ["type"]), name: "phones")
        let cases: [(String, [String])] = [
            (#"{"contacts": {"$allMatch": {"phones": {"$elemMatch": {"type": "home"}}}}}"#, ["a", "c"]),
            (#"{"contacts": {"$elemMatch": {"phones": {"$allMatch": {"type": "home"}}}}}"#, ["a", "b", "c"]),
            (#"{"contacts": {"$allMatch": {"phones": {"$allMatch": {"type": "home"}}}}}"#, ["c"]),
        ]
        for (text, expected) in cases {
            let request = FindRequest(selector: try JSONValue(parsing: text))
            #expect(try db.explain(request)["index"]?["name"] == "phones", "\(text)")
            #expect(ids(try db.find(request)) == expected, "\(text)")
            #expect(try scanned(documents, request.selector) == expected, "\(text): as a full scan")
        }
    }

    @Test("A sort on _id, either way, is served by the array index in _id order, page by page; any other sort is not")
    func sortByID() throws {
        let directory = TemporaryDirectory()
        let documents = sortDocuments(count: 300, seed: 11)
        let db = try openDatabase(directory, documents)
        let selectors = [
            #"{"tags": {"$elemMatch": {"$gte": 2}}}"#,
            #"{"tags": {"$in": [1, "b"]}}"#,
            #"{"tags": {"$all": [1, 2]}}"#,
            #"{"items": {"$elemMatch": {"sku": "s3"}}, "n": {"$lt": 7}}"#,
            #"{"items": {"$allMatch": {"sku": {"$gte": "s1"}}}}"#,
        ]
        for text in selectors {
            for descending in [false, true] {
                let selector = try JSONValue(parsing: text)
                let expected = try scanned(documents, selector, descending: descending)
                var request = FindRequest(selector: selector)
                request.sort = [FindRequest.SortField("_id", descending: descending)]
                request.limit = 1000
                let plan = try db.explain(request)
                #expect(plan["index"]?["type"] == "array", "\(text)")
                #expect(plan["mrargs"]?["direction"] == "fwd", "the entries are read forwards, the documents then sorted")
                #expect(plan["mrargs"]?["array"]?["order"] == (descending ? "_id desc" : "_id"))
                #expect(ids(try db.find(request)) == expected, "\(text) descending: \(descending)")
                #expect(try paged(db, request, limit: 7) == expected, "\(text) descending: \(descending), by bookmark")
                request.skip = 2
                request.limit = 5
                #expect(ids(try db.find(request)) == Array(expected.dropFirst(2).prefix(5)), "\(text) descending: \(descending), skip and limit")
                // The same order as _all_docs gives it.
                var scan = FindRequest(selector: ["$and": [selector, ["_id": ["$gt": nil]]]])
                scan.sort = request.sort
                scan.useIndex = ["_all_docs"]
                scan.limit = 1000
                #expect(ids(try db.find(scan)) == expected, "\(text) descending: \(descending), through _all_docs")
            }
        }
        // A sort on another field, or on the array itself: the array index's order is not the sort's.
        for sort in ["n", "tags"] {
            var request = FindRequest(selector: try JSONValue(parsing: #"{"tags": {"$elemMatch": {"$gte": 2}}}"#))
            request.sort = [FindRequest.SortField(sort)]
            #expect(mangoError { _ = try db.find(request) }
                    == MangoError(error: "no_usable_index", reason: "No index exists for this sort, try indexing by the sort fields."))
            let plan = try db.explain(request)
            let reasons = plan["index_candidates"]?.arrayValue?.first { $0["index"]?["name"] == "tags" }?["analysis"]?["reasons"]
            #expect(reasons == [["name": "sort_order_mismatch"]], "sort on \(sort)")
        }
    }
}
