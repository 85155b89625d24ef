import Foundation
import Testing
import SetteeViews
@testable import Settee

/// CouchDB 3.5's `_first`, `_last`, `_top_N` and `_bottom_N`
/// (src/couch/src/couch_query_servers.erl `builtin_first_last/3`,
/// `builtin_rank_n/4`; src/couch_mrview/src/couch_mrview.erl `check_rank/1`;
/// docs src/docs/src/ddocs/ddocs.rst).
@Suite("The ranking reducers")
struct RankReducerTests {
    @Test("their names are matched as CouchDB's validate/2 matches them", arguments: [
        ("_first", BuiltinReducer.first), ("_first\n", .first), ("_firstly", .first), ("_last", .last), ("_last // x", .last),
        ("_top_1", .top(1)), ("_top_100", .top(100)), ("_top_+5", .top(5)), ("_top_007", .top(7)),
        ("_bottom_3", .bottom(3)),
    ])
    func names(source: String, expected: BuiltinReducer) throws {
        #expect(try BuiltinReducer(source: source) == expected)
    }

    @Test("a rank outside 1...100 or not an integer is refused with CouchDB's message", arguments: [
        ("_top_0", "rank value must be between 1 and 100"), ("_top_101", "rank value must be between 1 and 100"),
        ("_bottom_-2", "rank value must be between 1 and 100"), ("_top_99999999999999999999", "rank value must be between 1 and 100"),
        ("_top_", "invalid rank reducer"), ("_top_5\n", "invalid rank reducer"), ("_bottom_x", "invalid rank reducer"),
        ("_top_1.5", "invalid rank reducer"),
    ])
    func badRanks(source: String, reason: String) {
        #expect(throws: ReduceDefinitionError(reason: reason)) { try BuiltinReducer(source: source) }
    }

    @Test("_top_N and _bottom_N keep N distinct values by collation, rereduce merging them")
    func ranked() {
        let values: [JSONValue] = [3, "b", 1, 3, nil, [1], "a", 2]
        #expect(BuiltinReducer.top(3).reduce(keys: [], values: values) == [[1], "b", "a"])
        #expect(BuiltinReducer.bottom(4).reduce(keys: [], values: values) == [nil, 1, 2, 3])
        #expect(BuiltinReducer.top(100).reduce(keys: [], values: [1, 1, 1]) == [1])
        let partials = [BuiltinReducer.top(2).reduce(keys: [], values: [5, 1]), BuiltinReducer.top(2).reduce(keys: [], values: [4, 5, 9])]
        #expect(BuiltinReducer.top(2).rereduce(partials) == [9, 5])
    }

    @Test("_first and _last keep the row with the lowest and highest key, then doc id, and show its value")
    func firstAndLast() {
        let keys: [JSONValue] = [["a", 2], ["a", 1], ["b", 0], ["a", 1]]
        let ids = ["d1", "d3", "d2", "d2"]
        let values: [JSONValue] = ["x", "y", "z", "w"]
        let first = BuiltinReducer.first.reduce(keys: keys, ids: ids, values: values)
        #expect(first == [["a", 1], "d2", "w"])
        #expect(BuiltinReducer.first.finalValue(first) == "w")
        let last = BuiltinReducer.last.reduce(keys: keys, ids: ids, values: values)
        #expect(BuiltinReducer.last.finalValue(last) == "z")
        let split = [BuiltinReducer.last.reduce(keys: Array(keys[2...]), ids: Array(ids[2...]), values: Array(values[2...])),
                     BuiltinReducer.last.reduce(keys: Array(keys[..<2]), ids: Array(ids[..<2]), values: Array(values[..<2]))]
        #expect(BuiltinReducer.last.rereduce(split) == last)
    }

    @Test("views reduce with them, from stored chunks as from every row, grouped or not")
    func views() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        let map = "function (doc) { emit([doc.device, doc.t], doc.v); }"
        _ = try db.loadDesignDocuments(from: directory.file("r.json", contents: #"""
            {"_id": "_design/r", "views": {
              "first": {"map": "\#(map)", "reduce": "_first"}, "last": {"map": "\#(map)", "reduce": "_last"},
              "top": {"map": "\#(map)", "reduce": "_top_3"}, "bottom": {"map": "\#(map)", "reduce": "_bottom_2"}}}
            """#))
        var random = SplitMix64(seed: 35)
        var rows: [(device: Int, t: Int, id: String, v: Int)] = []
        var lines: [String] = []
        for index in 0..<3000 {
            let row = (device: Int(random.next() % 4), t: Int(random.next() % 500), id: String(format: "d%05d", index), v: Int(random.next() % 10_000))
            rows.append(row)
            lines.append(#"{"_id": "\#(row.id)", "device": \#(row.device), "t": \#(row.t), "v": \#(row.v)}"#)
        }
        _ = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
        rows.sort { ($0.device, $0.t, $0.id) < ($1.device, $1.t, $1.id) }

        func query(_ view: String, _ parameters: [(String, String)], stored: Bool) throws -> String {
            let options = try ViewQueryOptions(parameters: parameters.map { (name: $0.0, value: $0.1) })
            return try db.query(designDocument: "r", view: view, options: options, progress: { _ in }, storedReductions: stored).json
        }
        func expected(_ groups: [[(device: Int, t: Int, id: String, v: Int)]], key: (Int) -> String,
                      _ value: ([(device: Int, t: Int, id: String, v: Int)]) -> String) -> String {
            let rowsText = groups.map { #"{"key":\#(key($0[0].device)),"value":\#(value($0))}"# }
            return #"{"rows":["# + rowsText.joined(separator: ",") + "]}"
        }
        let grouped = Dictionary(grouping: rows, by: \.device).sorted { $0.key < $1.key }.map(\.value)
        let values: [String: ([(device: Int, t: Int, id: String, v: Int)]) -> String] = [
            "first": { "\($0.first!.v)" },
            "last": { "\($0.last!.v)" },
            "top": { "[" + Array(Set($0.map(\.v))).sorted(by: >).prefix(3).map(String.init).joined(separator: ",") + "]" },
            "bottom": { "[" + Array(Set($0.map(\.v))).sorted().prefix(2).map(String.init).joined(separator: ",") + "]" },
        ]
        for (view, value) in values {
            for stored in [true, false] {
                #expect(try query(view, [("group_level", "1")], stored: stored) == expected(grouped, key: { "[\($0)]" }, value), "\(view)")
                #expect(try query(view, [], stored: stored) == expected([rows], key: { _ in "null" }, value), "\(view)")
                #expect(try query(view, [("startkey", "[1]"), ("endkey", "[2,{}]")], stored: stored)
                        == expected([rows.filter { (1...2).contains($0.device) }], key: { _ in "null" }, value), "\(view)")
            }
        }
    }
}
