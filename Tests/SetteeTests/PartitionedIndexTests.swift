import Foundation
import Testing
@testable import Settee
@_spi(LMDB) import SetteeStorage
import SetteeViews
import SetteeServer

/// A partitioned database whose documents interleave two partitions in key
/// order: `a:i` has n = 2i - 1 and `b:i` has n = 2i, so that every range of
/// keys holds rows of both.
private func interleaved(count: Int = 10, limit: Int? = nil) throws -> (TemporaryDirectory, Database) {
    let directory = TemporaryDirectory()
    var options = Database.Options()
    options.javaScriptWorkers = 1
    options.partitionQueryLimit = limit
    let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
    try db.makePartitioned()
    try db.write { batch in
        for i in 1...count {
            try batch.put(#"{"_id": "a:\#(i)", "n": \#(2 * i - 1), "g": \#(i % 2)}"#)
            try batch.put(#"{"_id": "b:\#(i)", "n": \#(2 * i), "g": \#(i % 2)}"#)
        }
    }
    try db.put(#"""
        {"_id": "_design/p", "views": {
          "n": {"map": "function (doc) { emit(doc.n, doc.n); }", "reduce": "_sum"},
          "g": {"map": "function (doc) { emit([doc.g, doc.n], 1); }", "reduce": "_count"}}}
        """#)
    try db.put(#"""
        {"_id": "_design/g", "options": {"partitioned": false}, "views": {
          "n": {"map": "function (doc) { emit(doc.n, doc.n); }", "reduce": "_sum"}}}
        """#)
    return (directory, db)
}

/// The ids of the rows of a view's index in the order they are stored.
private func storedIDs(_ db: Database, design: String, view: String) throws -> [String] {
    let signature = try #require(try db.designDocument(design)?.view(view)).signature
    let tables = try db.indexes.tables(for: signature)
    return try db.environment.read { transaction in
        try transaction.withCursor(tables.rows) { cursor in
            var ids: [String] = []
            var entry = try cursor.first()
            while let (key, value) = entry {
                ids.append(try IndexRow(storedKey: key, value: value).id)
                entry = try cursor.next()
            }
            return ids
        }
    }
}

private func ids(_ result: ViewResult) -> [String] { result.rows.compactMap(\.id) }

/// A reduce row as JSON.
private func row(_ key: JSONValue, _ value: JSONValue) -> JSONValue { .object([("key", key), ("value", value)]) }

@Suite("Partitioned indexes")
struct PartitionedIndexTests {
    @Test("A partitioned view keeps each partition's rows together, in key order; a global view of the same source is another index")
    func storedByPartition() throws {
        let (_, db) = try interleaved(count: 3)
        var options = ViewQueryOptions(reduce: false)
        options.partition = "a"
        #expect(ids(try db.query("p/n", options: options)) == ["a:1", "a:2", "a:3"])
        _ = try db.query("g/n", options: ViewQueryOptions(reduce: false))
        #expect(try storedIDs(db, design: "p", view: "n") == ["a:1", "a:2", "a:3", "b:1", "b:2", "b:3"])
        #expect(try storedIDs(db, design: "g", view: "n") == ["a:1", "b:1", "a:2", "b:2", "a:3", "b:3"])
        let partitioned = try #require(try db.designDocument("p")?.view("n"))
        let global = try #require(try db.designDocument("g")?.view("n"))
        #expect(partitioned.partitioned && !global.partitioned)
        #expect(partitioned.signature != global.signature)
        // The same view in a database that is not partitioned keeps the global layout and signature.
        let plain = try DesignDocument(json: try JSONValue(parsing: #"{"_id": "_design/g", "views": {"n": {"map": "function (doc) { emit(doc.n, doc.n); }", "reduce": "_sum"}}}"#))
        #expect(plain.view("n")?.signature == global.signature)
    }

    @Test("A partition query's skip, limit, ranges, doc ids and descending order see its partition's rows only")
    func mapQueries() throws {
        let (_, db) = try interleaved()
        func query(_ partition: String, _ options: ViewQueryOptions) throws -> ViewResult {
            var options = options
            options.partition = partition
            return try db.query("p/n", options: options)
        }
        #expect(ids(try query("a", ViewQueryOptions(limit: 3, skip: 2, reduce: false))) == ["a:3", "a:4", "a:5"])
        #expect(ids(try query("b", ViewQueryOptions(descending: true, limit: 2, reduce: false))) == ["b:10", "b:9"])
        #expect(ids(try query("a", ViewQueryOptions(startKey: 4, endKey: 9, reduce: false))) == ["a:3", "a:4", "a:5"])
        #expect(ids(try query("b", ViewQueryOptions(startKey: 9, endKey: 4, descending: true, reduce: false))) == ["b:4", "b:3", "b:2"])
        #expect(ids(try query("b", ViewQueryOptions(startKey: 4, endKey: 8, inclusiveEnd: false, reduce: false))) == ["b:2", "b:3"])
        #expect(ids(try query("a", ViewQueryOptions(keys: [2, 3, 19, 20], reduce: false))) == ["a:2", "a:10"])
        #expect(ids(try query("a", ViewQueryOptions(key: 4, reduce: false))) == [])
        #expect(ids(try query("c", ViewQueryOptions(reduce: false))) == [])
        var docID = ViewQueryOptions(startKey: 5, reduce: false)
        docID.startKeyDocID = "a:3"
        #expect(ids(try query("a", docID)).first == "a:3")
        docID.startKeyDocID = "a:4"
        #expect(ids(try query("a", docID)).first == "a:4")
        // include_docs reads the partition's documents.
        let docs = try query("b", ViewQueryOptions(limit: 1, reduce: false, includeDocs: true))
        #expect(try docs.rows.first?.document?["_id"] == "b:1")
        // total_rows is the index's, as CouchDB's couch_mrview counts it; the offset counts the rows stored before.
        let b = try query("b", ViewQueryOptions(limit: 1, reduce: false))
        #expect(b.totalRows == 20)
        #expect(b.offset == 10)
    }

    @Test("Reduce, group and group_level of a partition query reduce that partition's rows only, from stored chunks too")
    func reduceQueries() throws {
        let (_, db) = try interleaved(count: 600)
        func query(_ view: String, _ partition: String, _ options: ViewQueryOptions) throws -> [JSONValue] {
            var options = options
            options.partition = partition
            let rows = try db.query(view, options: options).rows
            return try rows.map { .object([("key", try $0.key), ("value", try $0.value)]) }
        }
        // a holds the odd numbers 1…1199, b the even 2…1200.
        #expect(try query("p/n", "a", ViewQueryOptions()) == [row(.null, 360_000)])
        #expect(try query("p/n", "b", ViewQueryOptions()) == [row(.null, 360_600)])
        #expect(try query("p/n", "b", ViewQueryOptions(startKey: 11, endKey: 20)) == [row(.null, 80)])
        #expect(try query("p/n", "a", ViewQueryOptions(limit: 2, group: true)) == [row(1, 1), row(3, 3)])
        #expect(try query("p/n", "b", ViewQueryOptions(descending: true, limit: 1, group: true)) == [row(1200, 1200)])
        #expect(try query("p/g", "a", ViewQueryOptions(groupLevel: 1)) == [row([0], 300), row([1], 300)])
        #expect(try query("p/g", "b", ViewQueryOptions(skip: 1, groupLevel: 1)) == [row([1], 300)])
        let expected: [JSONValue] = [row([1, 1], 1), row([1, 5], 1), row([1, 9], 1)]
        let levelTwo = try query("p/g", "a", ViewQueryOptions(startKey: [1], endKey: [1, 10], groupLevel: 2))
        #expect(levelTwo == expected)
        // The same answers again, once the index's chunk counts are kept.
        for _ in 0..<3 { #expect(try query("p/n", "a", ViewQueryOptions()) == [row(.null, 360_000)]) }
        #expect(try query("p/n", "c", ViewQueryOptions()) == [])
        // The global view reduces every partition.
        let global: [JSONValue] = try db.query("g/n").rows.map { try $0.value }
        #expect(global == [720_600])
    }

    @Test("Updates and deletions move and remove a document's rows within its partition")
    func incremental() throws {
        let (_, db) = try interleaved(count: 3)
        var options = ViewQueryOptions(reduce: false)
        options.partition = "a"
        #expect(ids(try db.query("p/n", options: options)) == ["a:1", "a:2", "a:3"])
        let a1 = try #require(try db.document("a:1"))
        try db.put(#"{"_id": "a:1", "_rev": "\#(a1.revision)", "n": 100}"#)
        let a2 = try #require(try db.document("a:2"))
        try db.delete("a:2", revision: a2.revision)
        try db.put(#"{"_id": "a:4", "n": 0}"#)
        try db.put(#"{"_id": "b:4", "n": -1}"#)
        #expect(ids(try db.query("p/n", options: options)) == ["a:4", "a:3", "a:1"])
        var reduced = ViewQueryOptions()
        reduced.partition = "a"
        func values() throws -> [JSONValue] { try db.query("p/n", options: reduced).rows.map { try $0.value } }
        #expect(try values() == [105])
        reduced.partition = "b"
        #expect(try values() == [11])
        #expect(try storedIDs(db, design: "p", view: "n") == ["a:4", "a:3", "a:1", "b:4", "b:1", "b:2", "b:3"])
    }

    @Test("A global query of a partitioned view is refused with CouchDB's words")
    func globalQueryRefused() throws {
        let (_, db) = try interleaved(count: 1)
        #expect(throws: QueryError.queryParse("`partition` parameter is mandatory for queries to this view.")) {
            try db.query("p/n")
        }
        var options = ViewQueryOptions()
        options.partition = "a"
        #expect(throws: QueryError.queryParse("`partition` parameter is not supported in this design doc")) {
            try db.query("g/n", options: options)
        }
    }

    @Test("A partition find reads its partition's index rows only (total_keys_examined), descending too")
    func findExaminesItsPartition() throws {
        let (_, db) = try interleaved()
        _ = try db.createIndex(try IndexRequest(json: ["index": ["fields": ["n"]], "name": "by-n", "ddoc": "by-n"]))
        var request = FindRequest(selector: ["n": ["$gt": 4]])
        request.partition = "a"
        request.executionStats = true
        var result = try db.find(request)
        #expect(result.documents.compactMap { $0["_id"]?.stringValue } == ["a:3", "a:4", "a:5", "a:6", "a:7", "a:8", "a:9", "a:10"])
        #expect(result.executionStats?.totalKeysExamined == 8)
        request.sort = [FindRequest.SortField("n", descending: true)]
        request.limit = 2
        result = try db.find(request)
        #expect(result.documents.compactMap { $0["_id"]?.stringValue } == ["a:10", "a:9"])
        #expect((result.executionStats?.totalKeysExamined ?? 0) <= 3)
        request.partition = "b"
        request.sort = []
        request.limit = 25
        request.selector = ["n": ["$lte": 6]]
        result = try db.find(request)
        #expect(result.documents.compactMap { $0["_id"]?.stringValue } == ["b:1", "b:2", "b:3"])
        #expect(result.executionStats?.totalKeysExamined == 3)
    }

    @Test("The partition query limit refuses a larger limit and caps a query that gives none; find is not limited")
    func partitionQueryLimit() throws {
        let (_, db) = try interleaved(count: 5, limit: 3)
        var options = ViewQueryOptions(reduce: false)
        options.partition = "a"
        #expect(ids(try db.query("p/n", options: options)) == ["a:1", "a:2", "a:3"])
        options.limit = 4
        #expect(throws: QueryError.queryParse("Limit is too large, must not exceed 3")) { try db.query("p/n", options: options) }
        options.limit = 2
        #expect(ids(try db.query("p/n", options: options)) == ["a:1", "a:2"])
        var all = ViewQueryOptions()
        all.partition = "b"
        #expect(try db.allDocuments(options: all).rows.compactMap(\.id) == ["b:1", "b:2", "b:3"])
        all.limit = 10
        #expect(throws: QueryError.queryParse("Limit is too large, must not exceed 3")) { try db.allDocuments(options: all) }
        // Global queries keep CouchDB's query_limit.
        #expect(try db.query("g/n", options: ViewQueryOptions(limit: 10, reduce: false)).rows.count == 10)
        #expect(try db.allDocuments(options: ViewQueryOptions(limit: 10)).rows.count == 10)
        _ = try db.createIndex(try IndexRequest(json: ["index": ["fields": ["n"]], "name": "by-n", "ddoc": "by-n"]))
        var request = FindRequest(selector: ["n": ["$gt": 0]])
        request.partition = "a"
        request.limit = 5
        #expect(try db.find(request).documents.count == 5)
    }
}

@Suite("Partition endpoints and command line")
struct PartitionEndpointTests {
    @Test("Under /_partition/{p}/, a design document's other functions and _index answer as the database's; anything else is not_found")
    func designFunctions() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/pdb?partitioned=true")
        _ = try await server.request("PUT", "/pdb/a:1", json: ["n": 1])
        _ = try await server.request("PUT", "/pdb/_design/p", json: [
            "views": ["n": ["map": "function (doc) { emit(doc.n, null); }"]],
            "shows": ["s": "function (doc, req) { return (doc ? doc._id : 'none') + ' ' + req.query.partition; }"],
            "lists": ["l": "function (head, req) { var row, ids = []; while ((row = getRow())) { ids.push(row.id); } return ids.join(','); }"],
        ])
        _ = try await server.request("PUT", "/pdb/b:1", json: ["n": 0])
        _ = try await server.request("PUT", "/pdb/a:2", json: ["n": 2])
        let list = try await server.request("GET", "/pdb/_partition/a/_design/p/_list/l/n")
        #expect(list.status == 200)
        #expect(String(decoding: list.body, as: UTF8.self) == "a:1,a:2")
        let info = try await server.request("GET", "/pdb/_partition/a/_design/p/_info")
        #expect(info.status == 200)
        #expect(info.json["name"] == "p")
        #expect(info.json["view_index"] != nil)
        let show = try await server.request("GET", "/pdb/_partition/a/_design/p/_show/s/a:1")
        #expect(show.status == 200)
        #expect(String(decoding: show.body, as: UTF8.self) == "a:1 a")
        #expect(try await server.request("GET", "/pdb/_partition/a/_index").json["indexes"]?.arrayValue?.count == 1)
        for path in ["/pdb/_partition/a/a:1", "/pdb/_partition/a/_design/p", "/pdb/_partition/a/_changes", "/pdb/_partition/a/_local_docs"] {
            let reply = try await server.request("GET", path)
            #expect(reply.status == 404, "\(path)")
            #expect(reply.json["error"] == "not_found", "\(path)")
        }
        await server.stop()
    }

    @Test("With a partition query limit, the server refuses a larger limit on a partition's views and _all_docs with CouchDB's words")
    func partitionQueryLimit() async throws {
        let server = try await RunningServer { $0.databaseOptions.partitionQueryLimit = 2 }
        _ = try await server.request("PUT", "/pdb?partitioned=true")
        _ = try await server.request("POST", "/pdb/_bulk_docs", json: ["docs": [["_id": "a:1"], ["_id": "a:2"], ["_id": "a:3"]]])
        _ = try await server.request("PUT", "/pdb/_design/p", json: ["views": ["v": ["map": "function (doc) { emit(doc._id, null); }"]]])
        for path in ["/pdb/_partition/a/_design/p/_view/v", "/pdb/_partition/a/_all_docs"] {
            #expect(try await server.request("GET", path).json["rows"]?.arrayValue?.count == 2, "\(path)")
            let refused = try await server.request("GET", path + "?limit=3")
            #expect(refused.status == 400, "\(path)")
            #expect(refused.json == ["error": "query_parse_error", "reason": "Limit is too large, must not exceed 2"], "\(path)")
        }
        #expect(try await server.request("GET", "/pdb/_all_docs?limit=3").json["rows"]?.arrayValue?.count == 3)
        let found = try await server.request("POST", "/pdb/_partition/a/_find", json: ["selector": [:], "limit": 3])
        #expect(found.json["docs"]?.arrayValue?.count == 3, "\(found.json)")
        await server.stop()
    }

    @Test("settee create --partitioned makes a partitioned database; query, all-docs, find and explain take --partition")
    func commandLine() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        func run(_ arguments: [String]) throws -> ChildProcess.Outcome { try settee.run(arguments, in: directory.url) }
        let created = try run(["create", "--db", db, "--partitioned"])
        #expect(created.exitStatus == 0, "\(created.standardError)")
        #expect(created.standardOutput == #"{"ok":true}"# + "\n")
        let again = try run(["create", "--db", db])
        #expect(again.exitStatus == 1)
        #expect(try JSONValue(parsing: again.standardError)["error"] == "file_exists")
        let refused = try run(["put", "--db", db, #"{"_id": "plain"}"#])
        #expect(refused.exitStatus == 1)
        #expect(refused.standardError.contains("illegal_docid"), "\(refused.standardError)")
        for document in [#"{"_id": "a:1", "n": 1}"#, #"{"_id": "b:1", "n": 2}"#, #"{"_id": "a:2", "n": 3}"#,
                         #"{"_id": "_design/p", "views": {"n": {"map": "function (doc) { emit(doc.n, null); }"}}}"#] {
            let put = try run(["put", "--db", db, document])
            #expect(put.exitStatus == 0, "\(put.standardError)")
        }
        func ids(_ outcome: ChildProcess.Outcome, _ member: String = "rows", _ field: String = "id") throws -> [String] {
            #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
            return try JSONValue(parsing: outcome.standardOutput)[member]?.arrayValue?.compactMap { $0[field]?.stringValue } ?? []
        }
        #expect(try ids(run(["query", "--db", db, "p/n", "--partition", "a"])) == ["a:1", "a:2"])
        #expect(try ids(run(["query", "--db", db, "p/n", "--partition", "b"])) == ["b:1"])
        let global = try run(["query", "--db", db, "p/n"])
        #expect(global.exitStatus == 1)
        #expect(try JSONValue(parsing: global.standardError)["reason"] == "`partition` parameter is mandatory for queries to this view.")
        #expect(try ids(run(["all-docs", "--db", db, "--partition", "a"])) == ["a:1", "a:2"])
        #expect(try ids(run(["find", "--db", db, #"{"selector": {"n": {"$gt": 0}}}"#, "--partition", "b"]), "docs", "_id") == ["b:1"])
        let conflicting = try run(["find", "--db", db, #"{"selector": {}, "partition": "a"}"#, "--partition", "b"])
        #expect(conflicting.exitStatus == 1)
        let explained = try run(["explain", "--db", db, #"{"selector": {"n": {"$gt": 0}}}"#, "--partition", "a"])
        #expect(explained.exitStatus == 0, "\(explained.standardError)")
        #expect(try JSONValue(parsing: explained.standardOutput)["mrargs"]?["partition"] == "a")
        let bad = try run(["all-docs", "--db", db, "--partition", "_x"])
        #expect(bad.exitStatus == 1)
        #expect(try JSONValue(parsing: bad.standardError)["error"] == "illegal_partition")
    }
}
