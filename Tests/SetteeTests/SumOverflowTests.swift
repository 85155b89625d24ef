import Foundation
import Testing
import SetteeViews
@testable import Settee

/// `_sum`'s own reduce limit: `check_sum_overflow/3` in
/// src/couch/src/couch_query_servers.erl (sizes are `?term_size`,
/// src/couch/include/couch_db.hrl: `erlang:external_size(T, [{minor_version, 1}])`).
@Suite("_sum overflow")
struct SumOverflowTests {
    /// `{"<prefix>000": 1, …}` with `count` members of 4-character names.
    private func object(_ prefix: String, _ count: Int) -> JSONValue {
        .object((0..<count).map { (key: prefix + String(format: "%03d", $0), value: .number(1)) })
    }

    @Test("A sum of objects that keeps growing becomes builtin_reduce_error, with the sizes as CouchDB measures them")
    func growingObjects() {
        // Each member is 13 bytes as an Erlang term, each object 2 + 5 + 400 × 13 + 1 = 5208,
        // each rereduce row [[], V] 7 more; the list adds 1 + 5 + 1, the sum's term 1.
        let result = BuiltinReducer.sum.rereduce([object("k", 400), object("m", 400)])
        #expect(result == .object([
            (key: "error", value: "builtin_reduce_error"),
            (key: "reason", value: "Reduce output must shrink more rapidly: input size: 10437 output size: 10409"),
        ]))
        // Later rereduces pass the error on, as any _sum error.
        #expect(BuiltinReducer.sum.rereduce([result, object("z", 1)]) == result)
    }

    @Test("Sums that shrink, and small ones, are left alone")
    func shrinking() {
        // The same members summed: the output is half the input, not more.
        let same = BuiltinReducer.sum.rereduce([object("k", 400), object("k", 400)])
        #expect(same.objectValue?.count == 400)
        let small = BuiltinReducer.sum.rereduce([object("k", 10), object("m", 10)])
        #expect(small.objectValue?.count == 20)
        #expect(BuiltinReducer.sum.reduce(keys: [], values: [1, 2, 3]) == 6)
    }

    @Test("A view whose _sum keeps growing answers the error as its value, from stored chunks as from every row")
    func view() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        _ = try db.loadDesignDocuments(from: directory.file("d.json", contents: #"""
            {"_id": "_design/d", "views": {"v": {"map": "function (doc) { var v = {}; v['k' + doc.n] = 1; emit(doc.n % 2, v); }", "reduce": "_sum"}}}
            """#))
        let lines = (0..<3000).map { #"{"_id": "d\#($0)", "n": \#($0)}"# }
        _ = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
        for stored in [true, false] {
            let result = try db.query(designDocument: "d", view: "v", options: ViewQueryOptions(), progress: { _ in }, storedReductions: stored)
            let value = try #require(try JSONValue(parsing: result.json)["rows"]?[0]?["value"])
            #expect(value["error"] == "builtin_reduce_error")
            #expect(value["reason"]?.stringValue?.hasPrefix("Reduce output must shrink more rapidly: input size: ") == true)
        }
    }
}
