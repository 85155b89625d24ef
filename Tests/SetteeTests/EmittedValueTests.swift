import Foundation
import Testing
import Settee

/// What map functions emit and reduce functions return is written as CouchDB's
/// couchjs writes it: `JSON.stringify` of the `[key, value]` rows and of the
/// reductions (share/server/views.js `mapDoc`, `runReduce`), the emitted value
/// first passed through `error_to_json` (share/server/util.js, called by
/// views.js `emit`).
@Suite("Emitted and returned values")
struct EmittedValueTests {
    private let directory = TemporaryDirectory()

    private func rows(map: String, reduce: String? = nil, reduced: Bool = false) throws -> String {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let view = ["map": JSONValue.string(map)].merging(reduce.map { ["reduce": JSONValue.string($0)] } ?? [:]) { a, _ in a }
        let design = JSONValue.object([(key: "_id", value: "_design/d"),
                                       (key: "views", value: .object([(key: "v", value: .object(view.sorted { $0.key > $1.key }.map { (key: $0.key, value: $0.value) }))]))])
        _ = try db.loadDesignDocuments(from: directory.file("d.json", contents: design.jsonText))
        try db.put(#"{"_id": "a"}"#)
        return try db.query("d/v", options: ViewQueryOptions(reduce: reduced)).json
    }

    @Test("An emitted Error becomes {error, message}, as error_to_json makes it")
    func emittedError() throws {
        #expect(try rows(map: #"function (doc) { emit(1, new Error("boom")); emit(2, new TypeError("bad")); }"#)
                == #"{"total_rows":2,"offset":0,"rows":[{"id":"a","key":1,"value":{"error":"Error","message":"boom"}},{"id":"a","key":2,"value":{"error":"TypeError","message":"bad"}}]}"#)
    }

    @Test("toJSON is passed its key: 0 for the emitted key, 1 for the value, the member's name or index inside")
    func toJSONKeys() throws {
        let map = #"function (doc) { var k = {toJSON: function (key) { return "key=" + key; }}; emit(k, k); emit(2, {a: k, b: [k]}); }"#
        #expect(try rows(map: map)
                == #"{"total_rows":2,"offset":0,"rows":[{"id":"a","key":2,"value":{"a":"key=a","b":["key=0"]}},{"id":"a","key":"key=0","value":"key=1"}]}"#)
    }

    @Test("What toJSON returns is not passed to its own toJSON")
    func toJSONOnce() throws {
        let map = #"function (doc) { emit(1, {toJSON: function () { return {toJSON: function () { return "inner"; }, v: 1}; }}); }"#
        #expect(try rows(map: map) == #"{"total_rows":1,"offset":0,"rows":[{"id":"a","key":1,"value":{"v":1}}]}"#)
    }

    @Test("A reduction is written the same way, its toJSON passed the reduction's index")
    func reductions() throws {
        let reduce = #"function (keys, values) { return {toJSON: function (key) { return {toJSON: function () { return "inner"; }, key: key}; }}; }"#
        #expect(try rows(map: "function (doc) { emit(1, 1); }", reduce: reduce, reduced: true) == #"{"rows":[{"key":null,"value":{"key":"0"}}]}"#)
    }
}
