import Foundation
import Testing
@testable import SetteeFind
import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

private func jsonIndex(_ name: String, _ fields: [String], partial: JSONValue? = nil, partitioned: Bool? = nil) -> MangoIndex {
    var index = MangoIndex(designDocument: "_design/" + name, name: name, type: "json",
                           fields: fields.map { FindRequest.SortField($0) }, partialFilterSelector: partial)
    index.partitioned = partitioned
    return index
}

/// A selector with `$1`, `$2`… replaced by these values' JSON.
private func selector(_ template: String, _ values: [JSONValue]) throws -> JSONValue {
    var text = template
    for (position, value) in values.enumerated().reversed() { text = text.replacingOccurrences(of: "$\(position + 1)", with: value.jsonText) }
    return try JSONValue(parsing: text)
}

/// Every list of `count` values, each from `pool`.
private func combinations(_ pool: [JSONValue], count: Int) -> [[JSONValue]] {
    guard count > 0 else { return [[]] }
    return combinations(pool, count: count - 1).flatMap { rest in pool.map { rest + [$0] } }
}

@Suite("find's plans kept per selector shape: a request whose selector differs only in its strings and numbers reuses the plan", .ownThread)
struct FindPlanShapeTests {
    /// Selectors with placeholders, and the values they take (one type per
    /// placeholder: a string and a number are two shapes).
    static let shapes: [(template: String, pool: [JSONValue])] = [
        (#"{"a": $1}"#, [1, 5, 9]),
        (#"{"a": $1}"#, ["m", "a", ""]),
        (#"{"a": $1, "b": $2}"#, [1, 5, 9]),
        (#"{"b": $1, "a": $2, "c": $3}"#, ["x", "é", "e\u{301}"]),
        (#"{"c": $1, "b": $2}"#, [1, 5]),
        (#"{"_id": $1}"#, ["a", "m"]),
        (#"{"a.b": $1, "a": $2}"#, [1, 5]),
        (#"{"a": {"$gt": $1}}"#, [1, 5, 9]),
        (#"{"a": {"$gt": $1, "$lt": $2}}"#, [1, 5, 9]),
        (#"{"a": {"$gte": $1, "$lte": $2}, "b": {"$gt": $3, "$lt": $4}}"#, [1, 5, 9]),
        (#"{"a": $1, "b": {"$gt": $2, "$lte": $3}}"#, [1, 5]),
        (#"{"b": {"$gt": $1}, "c": {"$lt": $2}}"#, [1, 5, 9]),
        (#"{"a": {"$beginsWith": $1}, "b": {"$lt": $2}}"#, ["", "x", "\u{FFFF}"]),
        (#"{"$or": [{"a": $1}, {"b": $2}]}"#, [1, 5]),
        (#"{"a": {"$in": [$1, $2]}, "b": {"$ne": $3}}"#, [1, 5]),
        (#"{"a": {"$eq": $1}, "$and": [{"b": {"$gt": $2}}, {"b": {"$lt": $3}}]}"#, [1, 5, 9]),
        (#"{"_id": {"$gt": $1, "$lt": $2}}"#, ["a", "m", "z"]),
        (#"{"_id": $1, "a": {"$gt": $2}}"#, ["a", "m"]),
        (#"{"a": {"$not": {"$gt": $1}}, "b": {"$exists": true}}"#, [1, 5]),
        (#"{"a": {"$size": $1}, "b": {"$mod": [$2, 1]}}"#, [2, 3]),
    ]

    static let indexes: [MangoIndex] = [
        .allDocuments, jsonIndex("a", ["a"]), jsonIndex("b", ["b"]), jsonIndex("ab", ["a", "b"]),
        jsonIndex("ba", ["b", "a"]), jsonIndex("abc", ["a", "b", "c"]), jsonIndex("partial", ["b"], partial: ["b": ["$gt": 4]]),
    ]

    /// The parts of a plan that decide a read.
    static func summary(_ prepared: PreparedFind) -> String {
        let plan = prepared.plan
        return "\(plan.index.name) \(plan.ranges) \(plan.ranked.map { "\($0.index.name):\($0.unusedRanges)" }) "
            + "\(plan.unusable.map { "\($0.index.name):\($0.reasons)" }) \(plan.ignoredUseIndex) \(prepared.selector.normalized.jsonText) "
            + "\(prepared.keysProveSelector)"
    }

    @Test("Every pair of selectors of a shape: the plan reused is the plan made, or none is reused")
    func reusedPlansAreThePlansMade() throws {
        var reusedCount = 0
        var refused = 0
        let requestKinds: [(sort: [FindRequest.SortField], useIndex: [String], partition: String?, partitioned: Bool)] = [
            ([], [], nil, false), ([.init("a")], [], nil, false), ([], ["partial"], nil, false), ([], ["b"], nil, false),
            ([], [], "p", true), ([], [], nil, true),
        ]
        for kind in requestKinds {
            let indexes = kind.partitioned ? Self.indexes.map { $0.resolvingPartitioned(default: $0.name != "b") } : Self.indexes
            for (template, pool) in Self.shapes {
                let placeholders = (1...9).filter { template.contains("$\($0)") }.count
                let all = combinations(pool, count: placeholders)
                for first in all {
                    var request = FindRequest(selector: try selector(template, first))
                    request.sort = kind.sort
                    request.useIndex = kind.useIndex
                    request.partition = kind.partition
                    guard let made = try? PreparedFind(request, indexes: indexes, databaseIsPartitioned: kind.partitioned),
                          made.isReusable(over: indexes) else { continue }
                    for second in all {
                        var other = request
                        other.selector = try selector(template, second)
                        let fresh = try PreparedFind(other, indexes: indexes, databaseIsPartitioned: kind.partitioned)
                        guard let reused = try PreparedFind(other, shapedAs: made, databaseIsPartitioned: kind.partitioned) else {
                            refused += 1
                            continue
                        }
                        reusedCount += 1
                        #expect(Self.summary(reused) == Self.summary(fresh), "\(template) \(first) then \(second), \(kind)")
                    }
                }
            }
        }
        #expect(reusedCount > 1000)
        #expect(refused > 0, "some values allow nothing: planned anew")
    }

    @Test("A plan is not kept for its shape when values decide it: an empty range, an empty $or, an array index")
    func valuesThatDecideThePlan() throws {
        let indexes = Self.indexes
        func prepared(_ text: String, _ indexes: [MangoIndex] = Self.indexes) throws -> PreparedFind {
            try PreparedFind(FindRequest(selector: try JSONValue(parsing: text)), indexes: indexes)
        }
        #expect(try prepared(#"{"a": {"$gt": 5}, "b": 1}"#).isReusable(over: indexes))
        #expect(try !prepared(#"{"a": {"$gt": 5, "$lt": 1}, "b": 1}"#).isReusable(over: indexes), "a range that allows nothing")
        #expect(try !prepared(#"{"$or": []}"#).isReusable(over: indexes))
        #expect(try !prepared(#"{"$and": []}"#).isReusable(over: indexes))
        #expect(try prepared(#"{"a": {"$in": []}}"#).isReusable(over: indexes), "no values: the same plan for its whole shape")
        let array = MangoIndex(designDocument: "_design/t", name: "t", type: "array", fields: [], arrayPath: "tags[]")
        #expect(try !prepared(#"{"a": 1}"#, indexes + [array]).isReusable(over: indexes + [array]), "array indexes read by value")

        // An index ranked first by an empty range of its field: the template's plan is not reused.
        let template = try prepared(#"{"a": {"$gt": 1, "$lt": 9}, "b": {"$gt": 1, "$lt": 9}}"#)
        #expect(template.plan.index.name == "ab")
        let other = FindRequest(selector: try JSONValue(parsing: #"{"a": {"$gt": 1, "$lt": 9}, "b": {"$gt": 9, "$lt": 1}}"#))
        #expect(try PreparedFind(other, shapedAs: template) == nil)
        #expect(try PreparedFind(other, indexes: indexes).plan.ranges == [.empty])
    }

    @Test("find answers each request of a shape as a Database that kept no plan does")
    func sameShapeOtherValues() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        for i in 0..<30 { try db.put(#"{"_id": "d\#(i < 10 ? "0" : "")\#(i)", "n": \#(i), "m": \#(i % 7), "s": "s\#(i % 5)"}"#) }
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["n"]}, "ddoc": "by-n", "name": "n"}"#))
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["m", "n"]}, "ddoc": "by-m", "name": "m"}"#))
        let templates = [#"{"n": $1}"#, #"{"n": {"$gt": $1, "$lte": $2}}"#, #"{"m": $1, "n": {"$gte": $2}}"#,
                         #"{"m": {"$gt": $1, "$lt": $2}, "n": {"$gt": $1}}"#, #"{"s": {"$gt": "s1"}, "n": {"$lt": $1}}"#]
        let pool: [JSONValue] = [0, 3, 6, 12, 29, 40]
        for template in templates {
            let placeholders = (1...9).filter { template.contains("$\($0)") }.count
            for values in combinations(pool, count: placeholders) {
                var request = FindRequest(selector: try selector(template, values))
                request.executionStats = true
                let fresh = try openDatabase(directory)
                let answer = try db.find(request)
                let expected = try fresh.find(request)
                #expect(answer.found == expected.found, "\(request.selector.jsonText)")
                #expect(answer.warning == expected.warning)
                #expect(answer.executionStats?.totalKeysExamined == expected.executionStats?.totalKeysExamined, "\(request.selector.jsonText)")
                #expect(answer.executionStats?.totalDocsExamined == expected.executionStats?.totalDocsExamined)
            }
        }
    }

    @Test("A shape planned before an index is created or deleted is planned again")
    func shapeAfterIndexChange() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        for i in 0..<20 { try db.put(#"{"_id": "d\#(i < 10 ? "0" : "")\#(i)", "n": \#(i)}"#) }
        var request = FindRequest(selector: ["n": 3])
        request.executionStats = true
        #expect(try db.find(request).executionStats?.totalDocsExamined == 20)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["n"]}, "ddoc": "by-n", "name": "n"}"#))
        request.selector = ["n": 4]
        let indexed = try db.find(request)
        #expect(indexed.warning == nil)
        #expect(indexed.executionStats?.totalDocsExamined == 1)
        #expect(indexed.documents.map { $0["_id"] } == ["d04"])
        try db.deleteIndex(designDocument: "by-n", name: "n")
        request.selector = ["n": 5]
        let scanned = try db.find(request)
        #expect(scanned.executionStats?.totalDocsExamined == 20)
        #expect(scanned.documents.map { $0["_id"] } == ["d05"])
    }

    @Test("Selectors of different shapes never share a plan: types, operators, true and false, array lengths")
    func differentShapes() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        for i in 0..<10 { try db.put(#"{"_id": "d\#(i)", "n": \#(i), "t": "\#(i)", "b": \#(i % 2 == 0)}"#) }
        try db.put(#"{"_id": "x"}"#)
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["n"]}, "ddoc": "by-n", "name": "n"}"#))
        #expect(try db.find(FindRequest(selector: ["n": 3])).documents.map { $0["_id"] } == ["d3"])
        #expect(try db.find(FindRequest(selector: ["n": "3"])).documents.isEmpty)
        #expect(try db.find(FindRequest(selector: ["t": "3"])).documents.map { $0["_id"] } == ["d3"])
        #expect(try db.find(FindRequest(selector: ["n": ["$exists": true]])).found.count == 10)
        #expect(try db.find(FindRequest(selector: ["n": ["$exists": false]])).documents.map { $0["_id"] } == ["x"])
        #expect(try db.find(FindRequest(selector: ["b": true])).found.count == 5)
        #expect(try db.find(FindRequest(selector: ["b": false])).found.count == 5)
        #expect(try db.find(FindRequest(selector: ["n": ["$in": [1, 2]]])).found.count == 2)
        #expect(try db.find(FindRequest(selector: ["n": ["$in": [1, 2, 3]]])).found.count == 3)
        #expect(try db.find(FindRequest(selector: ["n": ["$in": []]])).found.isEmpty)
        #expect(try db.find(FindRequest(selector: ["n": ["$gt": 2, "$lt": 1]])).found.isEmpty)
        #expect(try db.find(FindRequest(selector: ["n": ["$gt": 1, "$lt": 4]])).found.count == 2)
    }
}
