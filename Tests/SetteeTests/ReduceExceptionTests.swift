import Foundation
import Testing
import Settee

/// A JavaScript reduce function that throws: share/server/views.js
/// `runReduce` catches the exception, `handleViewError` logs it ("function
/// raised exception …") and the reduction is `null`; only `"fatal_error"`,
/// `["fatal", …]` and an InternalError fail the query.
@Suite("Exceptions in JavaScript reduce functions")
struct ReduceExceptionTests {
    @Test("A reduce throwing on keys[0].foo.bar gives null values with group=true and without, as in CouchDB")
    func throwingReduce() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        _ = try db.loadDesignDocuments(from: directory.file("d.json", contents: #"""
            {"_id": "_design/d", "views": {
              "v": {"map": "function (doc) { emit(doc.g, 1); }", "reduce": "function (keys, values, rereduce) { return keys[0].foo.bar; }"},
              "fatal": {"map": "function (doc) { emit(doc.g, 1); }", "reduce": "function (keys, values) { throw 'fatal_error'; }"}}}
            """#))
        for (index, group) in ["a", "b", "b", "c"].enumerated() { try db.put(#"{"_id": "d\#(index)", "g": "\#(group)"}"#) }
        #expect(try db.query("d/v", options: ViewQueryOptions(group: true)).json
                == #"{"rows":[{"key":"a","value":null},{"key":"b","value":null},{"key":"c","value":null}]}"#)
        #expect(try db.query("d/v").json == #"{"rows":[{"key":null,"value":null}]}"#)
        #expect(throws: (any Error).self) { try db.query("d/fatal") }
    }
}
