import Foundation
import Testing
import Settee

/// Design-document function sources as CouchDB 3.5 reads them
/// (share/server/60/rewrite_fun.js, share/server/util.js `compileFunction`).
@Suite("Function sources")
struct FunctionSourceTests {
    private let directory = TemporaryDirectory()

    private func database(views: String) throws -> Database {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        _ = try db.loadDesignDocuments(from: directory.file("d.json", contents: #"{"_id": "_design/d", "views": {\#(views)}}"#))
        try db.put(#"{"_id": "a", "n": 1}"#)
        try db.put(#"{"_id": "b", "n": 2}"#)
        return db
    }

    @Test("Helpers and variables declared before the map or reduce function are accepted, as CouchDB's rewrite_fun.js accepts them")
    func helpersBeforeTheFunction() throws {
        let db = try database(views: #"""
            "helper": {"map": "function helper(x){return x*2;}\nfunction(doc){emit(doc._id, helper(doc.n));}",
                       "reduce": "function add(a, b) { return a + b; }\nfunction (keys, values) { return values.reduce(add, 0); }"},
            "variable": {"map": "var k=10; function(doc){ emit(doc._id, k + doc.n); }"}
            """#)
        #expect(try db.query("d/helper", options: ViewQueryOptions(reduce: false)).json
                == #"{"total_rows":2,"offset":0,"rows":[{"id":"a","key":"a","value":2},{"id":"b","key":"b","value":4}]}"#)
        #expect(try db.query("d/helper").json == #"{"rows":[{"key":null,"value":6}]}"#)
        #expect(try db.query("d/variable").json
                == #"{"total_rows":2,"offset":0,"rows":[{"id":"a","key":"a","value":11},{"id":"b","key":"b","value":12}]}"#)
    }

    @Test("A source that is still not a function fails to compile as before")
    func stillBroken() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let file = directory.file("d.json", contents: #"{"_id": "_design/d", "views": {"v": {"map": "var k = 10;\nfunction(doc) { emit(doc._id, k) "}}}"#)
        let error = try #require(throws: (any Error).self) { try db.loadDesignDocuments(from: file) }
        #expect("\(error)".contains("SyntaxError"))
    }
}
