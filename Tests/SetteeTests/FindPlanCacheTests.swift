import Foundation
import Testing
import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// Twenty documents `{"n": i}`, ids `d00`…`d19`.
private func putNumbers(_ db: Database) throws {
    for i in 0..<20 { try db.put(#"{"_id": "d\#(i < 10 ? "0" : "")\#(i)", "n": \#(i)}"#) }
}

private func greaterThanFive() -> FindRequest {
    var request = FindRequest(selector: ["n": ["$gt": 5]])
    request.executionStats = true
    return request
}

private let noIndexWarning = "No matching index found, create an index to optimize query time."

@Suite("find's prepared requests: a plan is kept per request and index list, never used for another")
struct FindPlanCacheTests {
    @Test("A request asked again after an index is created or deleted is planned again")
    func indexCreatedAndDeleted() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try putNumbers(db)
        let request = greaterThanFive()

        let scanned = try db.find(request)
        #expect(scanned.warning == noIndexWarning)
        #expect(scanned.executionStats?.totalDocsExamined == 20)
        #expect(try db.find(request).warning == noIndexWarning, "the same request, asked again")

        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["n"]}, "ddoc": "by-n", "name": "n"}"#))
        let indexed = try db.find(request)
        #expect(indexed.warning == nil, "the new index serves it")
        #expect(indexed.executionStats?.totalDocsExamined == 15, "the rows from 5 on")
        #expect(indexed.found.count == 14)

        try db.deleteIndex(designDocument: "by-n", name: "n")
        let again = try db.find(request)
        #expect(again.warning == noIndexWarning, "the deleted index is not read")
        #expect(again.executionStats?.totalDocsExamined == 20)
        #expect(again.found.count == 14)
    }

    @Test("An index created or deleted by another Database on the same folder ends the plans kept")
    func indexChangedElsewhere() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let other = try openDatabase(directory)
        try putNumbers(db)
        let request = greaterThanFive()
        #expect(try db.find(request).warning == noIndexWarning)

        try other.createIndex(IndexRequest(json: #"{"index": {"fields": ["n"]}, "ddoc": "by-n", "name": "n"}"#))
        let indexed = try db.find(request)
        #expect(indexed.warning == nil)
        #expect(indexed.executionStats?.totalDocsExamined == 15)

        // Named, without fallback: usable only while the index exists.
        var named = request
        named.useIndex = ["by-n", "n"]
        named.allowFallback = false
        #expect(try db.find(named).found.count == 14)
        try other.deleteIndex(designDocument: "by-n", name: "n")
        #expect(mangoError { _ = try db.find(named) }?.error == "invalid_index")
        #expect(try db.find(request).warning == noIndexWarning)

        // A document write (no index change) leaves the answers as they were.
        try other.put(#"{"_id": "d20", "n": 20}"#)
        #expect(try db.find(request).found.count == 15)
    }

    @Test("Two different requests never share a plan: values, text, sort, fields and use_index each count")
    func differentRequests() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try putNumbers(db)
        try db.put(#"{"_id": "\#u{E9}", "n": 100}"#)
        try db.put(#"{"_id": "e\#u{301}", "n": 101}"#)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["n"]}, "ddoc": "by-n", "name": "n"}"#))

        #expect(try db.find(FindRequest(selector: ["n": 3])).documents.map { $0["_id"] } == ["d03"])
        #expect(try db.find(FindRequest(selector: ["n": 4])).documents.map { $0["_id"] } == ["d04"])
        #expect(try db.find(FindRequest(selector: ["n": ["$gte": 18]])).found.count == 4)
        #expect(try db.find(FindRequest(selector: ["n": ["$lte": 18]])).found.count == 19)

        // Equal as Swift strings (canonically equivalent), different bytes: each answered as
        // a Database that has kept no plan answers it.
        for id in ["\u{E9}", "e\u{301}"] {
            let request = FindRequest(selector: ["_id": .string(id), "n": ["$gte": 100]])
            let fresh = try openDatabase(directory)
            #expect(try db.find(request).found == fresh.find(request).found, "\(Array(id.utf8))")
            #expect(try db.explain(request) == fresh.explain(request))
        }

        // The same selector with fields, then a sort no index serves, then another index named.
        var request = FindRequest(selector: ["n": ["$lt": 3]])
        #expect(try db.find(request).documents.map { $0["_id"] } == ["d00", "d01", "d02"])
        request.fields = ["n"]
        #expect(try db.find(request).documents == [["n": 0], ["n": 1], ["n": 2]])
        request.sort = [.init("_id", descending: true)]
        #expect(mangoError { _ = try db.find(request) }?.error == "no_usable_index")
        request.sort = []
        request.fields = []
        request.useIndex = ["missing"]
        let fallback = try db.find(request)
        #expect(fallback.warning?.contains("_design/missing was not used") == true)
        request.allowFallback = false
        #expect(mangoError { _ = try db.find(request) }?.error == "invalid_index")
        request.useIndex = []
        request.allowFallback = true
        #expect(try db.find(request).warning == nil)
    }
}
