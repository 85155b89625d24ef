import Foundation
import Testing
@testable import SetteeFind
import Settee

private func openDatabase(_ url: URL) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: url, options: options)
}

private func jsonIndex(_ fields: [String], type: String = "json") -> MangoIndex {
    MangoIndex(designDocument: "_design/i", name: "i", type: type, fields: fields.map { FindRequest.SortField($0) })
}

/// Whether the plan `find` makes for `selector` over one JSON index on `fields` is proven by its keys.
private func proven(_ selector: String, fields: [String]) throws -> Bool {
    let request = FindRequest(selector: try JSONValue(parsing: selector))
    let prepared = try PreparedFind(request, indexes: [.allDocuments, jsonIndex(fields)])
    #expect(prepared.plan.index.name == "i", "the JSON index serves \(selector)")
    return prepared.keysProveSelector
}

/// Puts the same 300 documents, whose `v` and `w` (each missing one time in
/// eight) are drawn from `values` (JSON texts), into every database of `databases`.
private func putRandomDocuments(drawingFrom values: [String], into databases: [Database]) throws {
    var generator = SystemRandomNumberGenerator()
    for number in 0..<300 {
        var members = [#""_id": "d\#(number)""#]
        if Int.random(in: 0..<8, using: &generator) > 0 { members.append(#""v": \#(values.randomElement(using: &generator)!)"#) }
        if Int.random(in: 0..<8, using: &generator) > 0 { members.append(#""w": \#(values.randomElement(using: &generator)!)"#) }
        let text = "{" + members.joined(separator: ", ") + "}"
        for db in databases { try db.put(text) }
    }
}

/// `request` (up to 1,000 results) through `indexed`'s indexes, and the
/// ids it finds there and in `scanned`, sorted.
private func idsThroughIndexAndScan(_ request: FindRequest, indexed: Database, scanned: Database) throws
    -> (throughIndex: FindResult, ids: [String], expected: [String]) {
    var request = request
    request.limit = 1000
    let throughIndex = try indexed.find(request)
    func ids(_ result: FindResult) -> [String] { result.documents.compactMap { $0["_id"]?.stringValue }.sorted() }
    return (throughIndex, ids(throughIndex), ids(try scanned.find(request)))
}

@Suite("find skips matching a document its current index key proves")
struct FindKeyProofTests {
    @Test("A selector of one $eq per leading column, or a range on the last of them, and nothing else, is proven by the keys")
    func whichSelectorsAreProven() throws {
        #expect(try proven(#"{"a": "x"}"#, fields: ["a"]))
        #expect(try proven(#"{"a": {"$eq": 1}}"#, fields: ["a"]))
        #expect(try proven(#"{"a": "x", "b": 2}"#, fields: ["a", "b"]))
        #expect(try proven(#"{"$and": [{"b": 2}, {"a": "x"}]}"#, fields: ["a", "b"]))
        #expect(try proven(#"{"a": {"b": null}}"#, fields: ["a.b"]), "a nested field, normalized to a.b")

        // A range on the last column the selector bounds: its rows match but
        // those on an excluded bound, told apart by their encoded keys.
        #expect(try proven(#"{"a": {"$gt": "x"}}"#, fields: ["a"]))
        #expect(try proven(#"{"a": {"$lt": 5}}"#, fields: ["a"]))
        #expect(try proven(#"{"a": {"$gte": 1, "$lt": 9}}"#, fields: ["a"]))
        #expect(try proven(#"{"a": {"$gte": 1, "$lte": 1}}"#, fields: ["a"]), "an equal range written as two bounds")
        #expect(try proven(#"{"a": "x", "b": {"$gt": 1}}"#, fields: ["a", "b"]), "a second column's range after an equality")

        #expect(try !proven(#"{"a": "x", "c": 1}"#, fields: ["a"]), "a condition on a field outside the index")
        #expect(try !proven(#"{"a": {"$gt": 1}, "b": 2}"#, fields: ["a", "b"]), "a column after a range")
        #expect(try !proven(#"{"a": {"$gt": 1}, "b": {"$lt": 2}}"#, fields: ["a", "b"]), "two ranges")
        #expect(try !proven(#"{"$and": [{"a": {"$gt": 1}}, {"a": {"$gte": 2}}]}"#, fields: ["a"]), "two lower bounds")
        #expect(try !proven(#"{"a": {"$gt": 1, "$ne": 3}}"#, fields: ["a"]), "a range and $ne")
        #expect(try !proven(#"{"$and": [{"a": "x"}, {"a": "x"}]}"#, fields: ["a"]), "one column twice")
        #expect(try !proven(#"{"a": {"$in": ["x"]}}"#, fields: ["a"]))
        #expect(try !proven(#"{"_id": "x"}"#, fields: ["_id"]), "$eq on _id compares raw bytes, the index collates")
        #expect(try !proven(#"{"a": {"$ne": "x"}, "b": 1}"#, fields: ["b", "a"]))
    }

    @Test("A request prepared from another of its shape is proven as that one is")
    func shapedPreparations() throws {
        let indexes = [MangoIndex.allDocuments, jsonIndex(["a"])]
        for (template, request, provenAsTemplate) in [(#"{"a": "x"}"#, #"{"a": "y"}"#, true), (#"{"a": {"$gt": 1}}"#, #"{"a": {"$gt": 2}}"#, true),
                                                      (#"{"a": {"$gt": 1}, "c": 2}"#, #"{"a": {"$gt": 2}, "c": 3}"#, false)] {
            let prepared = try PreparedFind(FindRequest(selector: try JSONValue(parsing: template)), indexes: indexes)
            let shaped = try #require(try PreparedFind(FindRequest(selector: try JSONValue(parsing: request)), shapedAs: prepared))
            #expect(prepared.keysProveSelector == provenAsTemplate)
            #expect(shaped.keysProveSelector == provenAsTemplate, "\(request)")
            #expect(shaped.keysProveSelector == shaped.plan.keysProve(shaped.selector.normalized))
        }
    }

    @Test("A document whose indexed field changed after the index was read is matched, not taken on its stale key")
    func staleIndexIsMatched() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory.url.appendingPathComponent("db"))
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["colour"]}, "ddoc": "c", "name": "colour"}"#))
        let first = try db.put(#"{"_id": "a", "colour": "red"}"#)
        try db.put(#"{"_id": "b", "colour": "red"}"#)
        var red = FindRequest(selector: ["colour": "red"])
        #expect(try db.find(red).found.count == 2)
        try db.put(#"{"_id": "a", "_rev": "\#(first.revision)", "colour": "blue"}"#)
        red.update = false
        // The index still keys "a" under red; its document now says blue.
        let found = try db.find(red).documents.compactMap { $0["_id"]?.stringValue }
        #expect(found == ["b"])
        red.update = true
        #expect(try db.find(red).documents.compactMap { $0["_id"]?.stringValue } == ["b"])
    }

    @Test("Equalities read through a current index find what a scan of every document finds, for values that collate equal too")
    func sameAsScan() throws {
        let directory = TemporaryDirectory()
        let indexed = try openDatabase(directory.url.appendingPathComponent("indexed"))
        let scanned = try openDatabase(directory.url.appendingPathComponent("scanned"))
        try indexed.createIndex(IndexRequest(json: #"{"index": {"fields": ["v", "w"]}, "ddoc": "v", "name": "v"}"#))
        let values: [String] = [#""é""#, #""e\u0301""#, #""E""#, #""e""#, "1", "1.0", "-0", "0", "null", "true", "false", "[1]", "[1.0]",
                                #"{"k": 1}"#, #"{}"#, "[]", #""""#]
        try putRandomDocuments(drawingFrom: values, into: [indexed, scanned])
        for v in values {
            for w in values {
                // `$eq` written out: an object value would otherwise name nested fields.
                let text = #"{"v": {"$eq": \#(v)}, "w": {"$eq": \#(w)}}"#
                let (throughIndex, ids, expected) = try idsThroughIndexAndScan(FindRequest(selector: try JSONValue(parsing: text)),
                                                                               indexed: indexed, scanned: scanned)
                #expect(throughIndex.warning == nil, "the index serves \(text)")
                #expect(ids == expected, "\(text)")
            }
        }
    }

    @Test("Ranges read through a current index find what a scan of every document finds, bounds that collate equal left out or in")
    func rangesSameAsScan() throws {
        let directory = TemporaryDirectory()
        let indexed = try openDatabase(directory.url.appendingPathComponent("indexed"))
        let scanned = try openDatabase(directory.url.appendingPathComponent("scanned"))
        try indexed.createIndex(IndexRequest(json: #"{"index": {"fields": ["v"]}, "ddoc": "v", "name": "v"}"#))
        try indexed.createIndex(IndexRequest(json: #"{"index": {"fields": ["v", "w"]}, "ddoc": "vw", "name": "vw"}"#))
        let values: [String] = [#""é""#, #""e\u0301""#, #""E""#, #""e""#, #""f""#, "1", "1.0", "-0", "0", "2", "null", "true", "false", "[1]", "[1.0]",
                                "[1, 2]", #"{"k": 1}"#, #"{}"#, "[]", #""""#]
        try putRandomDocuments(drawingFrom: values, into: [indexed, scanned])
        var selectors: [String] = []
        for a in values {
            for low in ["$gt", "$gte"] { selectors.append(#"{"v": {"\#(low)": \#(a)}}"#) }
            for high in ["$lt", "$lte"] { selectors.append(#"{"v": {"\#(high)": \#(a)}}"#) }
            selectors.append(#"{"v": {"$gt": \#(a), "$lt": "f"}}"#)
            selectors.append(#"{"v": {"$gte": 0, "$lte": \#(a)}}"#)
            selectors.append(#"{"v": {"$eq": "e"}, "w": {"$gt": \#(a)}}"#)
            selectors.append(#"{"v": {"$eq": 1}, "w": {"$lt": \#(a)}}"#)
        }
        for text in selectors {
            let (throughIndex, ids, expected) = try idsThroughIndexAndScan(FindRequest(selector: try JSONValue(parsing: text)),
                                                                           indexed: indexed, scanned: scanned)
            #expect(throughIndex.warning?.contains("No matching index") != true, "an index serves \(text)")
            #expect(ids == expected, "\(text)")
        }
    }

    @Test("Ranges read through a partitioned index leave out the rows on an excluded bound, as a scan of the partition does")
    func partitionedRangesSameAsScan() throws {
        let directory = TemporaryDirectory()
        var databases: [Database] = []
        for name in ["indexed", "scanned"] {
            let db = try openDatabase(directory.url.appendingPathComponent(name))
            try db.makePartitioned()
            try db.write { batch in
                for number in 0..<120 {
                    try batch.put(#"{"_id": "\#(["p", "q"][number % 2]):d\#(number)", "v": \#(number % 7), "w": "\#(["e", "é", "f"][number % 3])"}"#)
                }
            }
            databases.append(db)
        }
        try databases[0].createIndex(IndexRequest(json: #"{"index": {"fields": ["v"]}, "ddoc": "v", "name": "v", "partitioned": true}"#))
        try databases[0].createIndex(IndexRequest(json: #"{"index": {"fields": ["w"]}, "ddoc": "w", "name": "w", "partitioned": true}"#))
        for text in [#"{"v": {"$gt": 3}}"#, #"{"v": {"$lt": 3}}"#, #"{"v": {"$gt": 1, "$lt": 5}}"#, #"{"w": {"$gt": "e"}}"#, #"{"w": {"$lt": "f"}}"#] {
            var request = FindRequest(selector: try JSONValue(parsing: text))
            request.partition = "p"
            let (throughIndex, ids, expected) = try idsThroughIndexAndScan(request, indexed: databases[0], scanned: databases[1])
            #expect(throughIndex.warning == nil, "the index serves \(text)")
            #expect(!expected.isEmpty && ids == expected, "\(text)")
        }
    }
}
