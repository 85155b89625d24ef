import Foundation
import Synchronization
import Testing
import Settee

extension Optional where Wrapped == ViewRow {
    /// The row's value, if there is a row.
    var parsedValue: JSONValue? { get throws { try self.map { try $0.value } } }
    /// The row's key, if there is a row.
    var parsedKey: JSONValue? { get throws { try self.map { try $0.key } } }
}

/// Counts an indexer's map calls (they run on several threads).
private final class MapCalls: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .relaxed) }
    func add() { count.add(1, ordering: .relaxed) }
}

/// The Swift twin of `appDesign`'s `rows` view: `k` with `v`, plus a row per tag.
private struct Rows: Indexer {
    var name = "rows"
    var version = "1"
    var calls = MapCalls()

    func map(_ document: IndexedDocument, _ emit: Emitter) throws {
        calls.add()
        if let key = document["k"] { emit(key, document["v"] ?? nil) }
        if case .array(let tags)? = document["tags"] {
            for tag in tags { emit(tag, .string(document.id)) }
        }
    }
}

/// The Swift twin of `owner`: rows whose value redirects include_docs.
private struct ByOwner: Indexer {
    let name = "by_owner"
    let version = "1"

    func map(_ document: IndexedDocument, _ emit: Emitter) throws {
        guard let owner = document["owner"] else { return }
        emit(owner, ["_id": owner])
    }
}

/// The Swift twin of the `sales_*` views: an array key, a reduce.
private struct Sales: Indexer {
    let name: String
    var version = "1"
    let reduce: ReduceFunction?
    var calls = MapCalls()

    func map(_ document: IndexedDocument, _ emit: Emitter) throws {
        calls.add()
        guard document["type"] == "sale" else { return }
        emit([document["region"] ?? nil, document["year"] ?? nil, document["month"] ?? nil], document["amount"] ?? nil)
    }
}

/// Throws for documents with `"bad": true`, as `failing` does.
private struct Failing: Indexer {
    struct Bad: Error, CustomStringConvertible {
        let id: String
        var description: String { "bad document \(id)" }
    }

    let name = "failing"
    let version = "1"

    func map(_ document: IndexedDocument, _ emit: Emitter) throws {
        emit(.string(document.id), 1)
        if document["bad"] == true { throw Bad(id: document.id) }
    }
}

private let appDesign = #"""
    {"_id": "_design/app", "views": {
      "rows": {"map": "function (doc) { if (doc.k !== undefined) emit(doc.k, doc.v); if (Array.isArray(doc.tags)) doc.tags.forEach(function (t) { emit(t, doc._id); }); }"},
      "owner": {"map": "function (doc) { if (doc.owner !== undefined) emit(doc.owner, {_id: doc.owner}); }"},
      "sales_sum": {"map": "function (doc) { if (doc.type === 'sale') emit([doc.region, doc.year, doc.month], doc.amount); }", "reduce": "_sum"},
      "sales_count": {"map": "function (doc) { if (doc.type === 'sale') emit([doc.region, doc.year, doc.month], doc.amount); }", "reduce": "_count"},
      "sales_stats": {"map": "function (doc) { if (doc.type === 'sale') emit([doc.region, doc.year, doc.month], doc.amount); }", "reduce": "_stats"},
      "sales_js": {"map": "function (doc) { if (doc.type === 'sale') emit([doc.region, doc.year, doc.month], doc.amount); }",
                   "reduce": "function (keys, values, rereduce) { return sum(values); }"},
      "failing": {"map": "function (doc) { emit(doc._id, 1); if (doc.bad) throw new Error('bad document ' + doc._id); }"}
    }}
    """#

/// The Swift reduce twin of `sales_js`: the sum of the values, keys checked.
private let swiftSum = ReduceFunction.swift { keys, values, rereduce in
    if !rereduce, keys?.count != values.count { throw CocoaError(.coderInvalidValue) }
    return .number(values.reduce(0) { $0 + ($1.doubleValue ?? 0) })
}

private func openDatabase(_ directory: TemporaryDirectory, workers: Int = 2) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = workers
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// Documents with keys of every JSON type (collation across types), some
/// emitting several rows under one key, and sales over regions and months.
private func fill(_ db: Database, sales: Int = 2500) throws {
    let keys: [String] = ["null", "false", "true", "-3", "0", "2.5", "1e3", #""a""#, #""B""#, #""b""#, #""é""#, #""""#,
                          "[]", #"["a",1]"#, #"["a"]"#, "[1,[2]]", "{}", #"{"x":1}"#, #"{"a":[1]}"#]
    try db.write { batch in
        for (index, key) in keys.enumerated() {
            try batch.put(#"{"_id":"k\#(String(format: "%03d", index))","k":\#(key),"v":\#(index % 3 == 0 ? "null" : "\(index)"),"tags":["t\#(index % 4)","same"]}"#)
        }
        // Equal keys within one document: ordered by value, then emit order.
        try batch.put(#"{"_id":"dup","tags":["same","same"],"k":"same","v":[2]}"#)
        for index in 0..<20 {
            try batch.put(#"{"_id":"p\#(index)","name":"person \#(index)"}"#)
            try batch.put(#"{"_id":"o\#(index)","owner":"p\#(index % 7)"}"#)
        }
        try batch.put(#"{"_id":"o-missing","owner":"nobody"}"#)
        for index in 0..<sales {
            let region = ["north", "south", "east", "west"][index % 4]
            try batch.put(#"{"_id":"s\#(index)","type":"sale","region":"\#(region)","year":\#(2020 + index % 3),"month":\#(1 + index % 12),"amount":\#(Double(index % 50) + 0.25)}"#)
        }
        try batch.put(#"{"_id":"bad1","bad":true}"#)
        try batch.put(#"{"_id":"bad2","bad":true}"#)
    }
}

private func expectSameResults(_ db: Database, _ javaScript: String, _ swift: String, _ options: [ViewQueryOptions],
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
    for option in options {
        let expected = try db.query(javaScript, options: option)
        let actual = try db.query(swift, options: option)
        #expect(actual.rows == expected.rows, "\(option)", sourceLocation: sourceLocation)
        #expect(actual.totalRows == expected.totalRows, sourceLocation: sourceLocation)
        #expect(actual.offset == expected.offset, sourceLocation: sourceLocation)
    }
}

@Suite("Views written in Swift (Indexer)", .ownThread)
struct SwiftViewTests {
    @Test("A Swift view's rows equal the JavaScript view's: keys of every type in collation order, values, ids, ranges")
    func sameRowsAsJavaScript() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("app.json", contents: appDesign))
        try db.register(Rows())
        try fill(db, sales: 10)
        let all = try db.query("rows")
        #expect(all.rows.count == 60)
        #expect(all.rows.first?.keyJSON == "null")
        try expectSameResults(db, "app/rows", "rows", [
            ViewQueryOptions(),
            ViewQueryOptions(descending: true),
            ViewQueryOptions(startKey: "a", endKey: ["z"]),
            ViewQueryOptions(startKey: 0, endKey: "b", inclusiveEnd: false, limit: 5, skip: 2),
            ViewQueryOptions(key: "same"),
            ViewQueryOptions(key: "same", descending: true),
            ViewQueryOptions(keys: ["same", 2.5, ["a", 1], "missing", nil]),
            ViewQueryOptions(startKey: "t1", endKey: "t2", includeDocs: true),
            ViewQueryOptions(startKey: [], includeDocs: true, update: .false),
        ])
    }

    @Test("A {_id} value makes include_docs read that document, as in JavaScript")
    func redirectedIncludeDocs() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("app.json", contents: appDesign))
        try db.register(ByOwner())
        try fill(db, sales: 0)
        try expectSameResults(db, "app/owner", "by_owner", [ViewQueryOptions(includeDocs: true), ViewQueryOptions(descending: true, includeDocs: true)])
        let rows = try db.query("by_owner", options: ViewQueryOptions(key: "p3", includeDocs: true)).rows
        #expect(rows.map(\.id) == ["o10", "o17", "o3"])
        #expect(try rows.allSatisfy { try $0.document?["_id"] == "p3" && $0.document?["name"] == "person 3" })
        #expect(try db.query("by_owner", options: ViewQueryOptions(key: "nobody", includeDocs: true)).rows.first?.documentJSON == "null")
    }

    @Test("Reduce: built-ins and a Swift function equal the JavaScript view's, grouped, by level, over ranges")
    func reduceLikeJavaScript() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("app.json", contents: appDesign))
        for (name, reduce) in [("sales_sum", ReduceFunction.sum), ("sales_count", .count), ("sales_stats", .stats), ("sales_swift", swiftSum)] {
            try db.register(Sales(name: name, reduce: reduce))
        }
        try fill(db)
        let options = [
            ViewQueryOptions(),
            ViewQueryOptions(group: true),
            ViewQueryOptions(groupLevel: 1),
            ViewQueryOptions(descending: true, groupLevel: 2),
            ViewQueryOptions(startKey: ["north", 2021], endKey: ["south"], groupLevel: 2),
            ViewQueryOptions(startKey: ["east"], endKey: ["north", 2021, 5], limit: 7, skip: 3, group: true),
            ViewQueryOptions(limit: 10, reduce: false),
        ]
        try expectSameResults(db, "app/sales_sum", "sales_sum", options)
        try expectSameResults(db, "app/sales_count", "sales_count", options)
        try expectSameResults(db, "app/sales_stats", "sales_stats", options)
        try expectSameResults(db, "app/sales_js", "sales_swift", options)
        let total = try db.query("sales_swift").rows.first.parsedValue
        var sum = 0.0
        for index in 0..<2500 { sum += Double(index % 50) + 0.25 }
        #expect(total == .number(sum))
    }

    @Test("Puts and deletes update a Swift view's index incrementally, with its reductions")
    func incrementalUpdates() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("app.json", contents: appDesign))
        let sales = Sales(name: "sales_swift", reduce: swiftSum)
        try db.register(sales)
        try db.register(Rows())
        try fill(db)
        _ = try db.query("sales_swift")
        let mapped = sales.calls.value
        let s7 = try #require(try db.document("s7")).revision
        let changed = try db.put(#"{"_id":"s7","_rev":"\#(s7)","type":"sale","region":"north","year":2030,"month":1,"amount":1000}"#)
        _ = try db.put(#"{"_id":"new","type":"sale","region":"zz","year":2031,"month":2,"amount":5}"#)
        _ = try db.put(#"{"_id":"k900","k":"fresh","v":1}"#)
        let deleted = try #require(try db.document("s8"))
        _ = try db.delete("s8", revision: deleted.revision)
        _ = try db.delete("k001", revision: try #require(try db.document("k001")).revision)
        #expect(changed.sequence > 0)
        try expectSameResults(db, "app/sales_js", "sales_swift", [ViewQueryOptions(), ViewQueryOptions(groupLevel: 2)])
        try expectSameResults(db, "app/sales_sum", "sales_swift", [ViewQueryOptions(reduce: false)])
        try expectSameResults(db, "app/rows", "rows", [ViewQueryOptions()])
        // Only the changed documents were mapped again.
        #expect(sales.calls.value - mapped == 3)
        #expect(try db.query("sales_swift", options: ViewQueryOptions(key: ["zz", 2031, 2])).rows.first.parsedValue == 5)
    }

    @Test("A new version rebuilds that view's index alone; the others are neither remapped nor moved")
    func versionRebuildsOnlyThatView() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("app.json", contents: appDesign))
        let first = Sales(name: "sales_swift", reduce: .sum)
        let other = Rows()
        try db.register(first)
        try db.register(other)
        try fill(db, sales: 300)
        try db.updateIndexes()
        let before = try db.viewInfo()
        let otherCalls = other.calls.value
        #expect(before.contains { $0.path == "rows" && $0.rowCount > 0 })

        #expect(db.unregister("sales_swift"))
        let second = Sales(name: "sales_swift", version: "2", reduce: .sum)
        try db.register(second)
        #expect(try db.query("sales_swift", options: ViewQueryOptions(reduce: false)).rows.count == 300)
        #expect(second.calls.value >= 300)
        #expect(other.calls.value == otherCalls)
        let after = try db.viewInfo()
        func info(_ path: String, in infos: [ViewInfo]) -> ViewInfo? { infos.first { $0.path == path } }
        #expect(info("sales_swift", in: after)?.signature != info("sales_swift", in: before)?.signature)
        for path in ["rows", "app/rows", "app/sales_sum"] {
            #expect(info(path, in: after) == info(path, in: before), "\(path)")
        }

        // Registering the same version afresh (as a later process would) maps nothing again.
        #expect(db.unregister("sales_swift"))
        let again = Sales(name: "sales_swift", version: "2", reduce: .sum)
        try db.register(again)
        #expect(try db.query("sales_swift").rows.first.parsedValue != nil)
        #expect(again.calls.value == 0)
    }

    @Test("A database that does not register a Swift view keeps its index through design document edits")
    func unregisteredIndexSurvivesOtherWriters() throws {
        let directory = TemporaryDirectory()
        let sales = Sales(name: "sales_swift", reduce: .count)
        do {
            let db = try openDatabase(directory)
            try db.register(sales)
            try fill(db, sales: 100)
            #expect(try db.query("sales_swift").rows.first.parsedValue == 100)
        }
        let mapped = sales.calls.value
        // Another instance, without the registration, adds a design document and builds its index.
        do {
            let other = try openDatabase(directory)
            try other.loadDesignDocuments(from: directory.file("app.json", contents: appDesign))
            _ = try other.query("app/sales_sum")
            try other.updateIndexes()
            #expect(throws: DocumentError.self) { try other.query("sales_swift") }
        }
        let db = try openDatabase(directory)
        let again = Sales(name: "sales_swift", reduce: .count)
        try db.register(again)
        #expect(try db.query("sales_swift").rows.first.parsedValue == 100)
        #expect(again.calls.value == 0 && sales.calls.value == mapped)
        // Cleaning up explicitly removes the index of a view not registered.
        #expect(db.unregister("sales_swift"))
        try db.removeUnregisteredIndexes()
        try db.register(again)
        #expect(try db.query("sales_swift").rows.first.parsedValue == 100)
        #expect(again.calls.value > 100)
    }

    @Test("A Swift map that throws gives that document no rows and counts a map error, as JavaScript does")
    func throwingMap() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("app.json", contents: appDesign))
        try db.register(Failing())
        try fill(db, sales: 5)
        try expectSameResults(db, "app/failing", "failing", [ViewQueryOptions()])
        #expect(try db.query("failing", options: ViewQueryOptions(key: "bad1")).rows.isEmpty)
        let infos = try db.viewInfo()
        #expect(infos.first { $0.path == "failing" }?.mapErrors == 2)
        #expect(infos.first { $0.path == "app/failing" }?.mapErrors == 2)
    }

    @Test("A live query of a Swift view yields again after a put it emits for")
    func liveQuery() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory, workers: 1)
        try db.register(Sales(name: "sales_swift", reduce: .count))
        _ = try await db.put(#"{"_id":"a","type":"sale","region":"n","year":1,"month":1,"amount":1}"#)
        var iterator = db.liveQuery("sales_swift").makeAsyncIterator()
        let first = try #require(await iterator.next())
        #expect(try first.rows.first.parsedValue == 1)
        _ = try await db.put(#"{"_id":"b","type":"sale","region":"n","year":1,"month":2,"amount":1}"#)
        let second = try #require(await iterator.next())
        #expect(try second.rows.first.parsedValue == 2)
    }

    @Test("viewInfo lists registered Swift views by name; registering and querying bad names are clear errors")
    func namesAndErrors() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("app.json", contents: appDesign))
        try db.register(Rows())
        _ = try db.put(#"{"_id":"x","k":1}"#)
        let info = try #require(try db.viewInfo().first { $0.path == "rows" })
        #expect(info.rowCount == 0 && info.indexedSequence == 0)
        _ = try db.query("rows")
        #expect(try db.viewInfo().first { $0.path == "rows" }?.indexedSequence == 2)
        #expect(db.registeredViews.map(\.name) == ["rows"])
        #expect(db.registeredViews.first?.indexer is Rows)

        func code(_ body: () throws -> Void) -> DocumentError.Code? {
            do { try body() } catch let error as DocumentError { return error.code } catch { return nil }
            return nil
        }
        #expect(code { try db.register(Rows()) } == .conflict)
        #expect(code { try db.register(Rows(name: "app/rows")) } == .badRequest)
        #expect(code { try db.register(Rows(name: "")) } == .badRequest)
        #expect(code { try db.register(Sales(name: "s", reduce: .builtin("_frob"))) } == .badRequest)
        #expect(code { try db.register(Sales(name: "s", reduce: .builtin("sum"))) } == .badRequest)
        do {
            _ = try db.query("row")
            Issue.record("an unknown name was answered")
        } catch let error as DocumentError {
            #expect(error.code == .notFound)
            #expect(error.suggestions.first == "rows")
            #expect(error.description.contains("registered"))
        }
        // The design document's view of the same name is another view.
        #expect(try db.query("app/rows").rows.count == 1)
        #expect(db.unregister("rows"))
        #expect(!db.unregister("rows"))
        #expect(code { _ = try db.query("rows") } == .notFound)
    }

    @Test("IndexedDocument reads members lazily: id, revision, escaped and repeated names, Decodable")
    func indexedDocument() throws {
        struct Reader: Indexer {
            struct Shape: Decodable { let _id: String; let n: Int }
            let name = "reader"
            let version = "1"
            func map(_ document: IndexedDocument, _ emit: Emitter) throws {
                let shape = try document.decode(Shape.self)
                emit([.string(document.id), .string(document.revision), document["a\"b"] ?? nil, document["twice"] ?? nil,
                      document["missing"] ?? "none", .number(Double(shape.n))], .number(Double(document.sequence)))
                try emit(encoding: ["x": 1], [shape.n])
            }
        }
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.register(Reader())
        let written = try db.put(#"{"_id":"d","a\"b":{"c":[1,2]},"twice":1,"n":7,"twice":2}"#)
        let rows = try db.query("reader").rows
        #expect(rows.count == 2)
        // Arrays collate before objects.
        let expectedKey: JSONValue = ["d", .string(written.revision.description), ["c": [1, 2]], 2, "none", 7]
        #expect(try rows.first.parsedKey == expectedKey)
        #expect(try rows.first.parsedValue == .number(Double(written.sequence)))
        let objectKey: JSONValue = ["x": 1]
        let arrayValue: JSONValue = [7]
        #expect(try rows.last.parsedKey == objectKey)
        #expect(try rows.last.parsedValue == arrayValue)
    }
}
