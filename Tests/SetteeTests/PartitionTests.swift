import Foundation
import Testing
import Settee

private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
    var options = Database.Options()
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

/// Partitioned databases as CouchDB 3.5 has them: created with
/// `?partitioned=true`, ids `partition:id`, and each partition's documents,
/// indexes and views read apart.
@Suite("Partitioned databases")
struct PartitionTests {
    @Test("A database made partitioned stays so when opened again, and refuses ids without a partition")
    func libraryProperty() throws {
        let directory = TemporaryDirectory()
        do {
            let db = try openDatabase(directory)
            #expect(try db.isPartitioned() == false)
            #expect(try db.properties() == [:])
            try db.put(#"{"_id": "plain"}"#)
            #expect(throws: PartitionError.self) { try db.makePartitioned() }
            #expect(try db.isPartitioned() == false)
        }
        let designed = TemporaryDirectory()
        do {
            let db = try openDatabase(designed)
            try db.put(#"{"_id": "_design/d", "language": "query", "views": {}}"#)
            #expect(throws: PartitionError.self) { try db.makePartitioned() }
        }
        let other = TemporaryDirectory()
        do {
            let db = try openDatabase(other)
            try db.makePartitioned()
            db.close()
        }
        let db = try openDatabase(other)
        #expect(try db.isPartitioned())
        #expect(try db.properties() == ["partitioned": true])
        #expect(throws: PartitionError(error: "illegal_docid", reason: "Doc id must be of form partition:id", id: "plain")) {
            try db.put(#"{"_id": "plain"}"#)
        }
        #expect(throws: PartitionError(error: "illegal_partition", reason: "Partition must not be empty", id: ":x")) {
            try db.put(#"{"_id": ":x"}"#)
        }
        try db.put(#"{"_id": "a:1", "n": 1}"#)
        try db.put(#"{"_id": "a:2", "n": 2}"#)
        try db.put(#"{"_id": "b:1", "n": 3}"#)
        try db.put(#"{"_id": "_design/d", "views": {}}"#)
        try db.put(#"{"_id": "_local/x"}"#)
        // A batch refuses the bad id alone.
        #expect(throws: PartitionError.self) { try db.write { batch in try batch.put(#"{"_id": "nope"}"#) } }
        let a = try db.partitionCounts("a")
        #expect(a.documentCount == 2 && a.deletedDocumentCount == 0 && a.externalBytes > 0)
        #expect(try db.partitionCounts("b").documentCount == 1)
        #expect(try db.partitionCounts("c").documentCount == 0)
        #expect(throws: PartitionError(error: "illegal_partition", reason: "Partition must not start with an underscore")) {
            try db.partitionCounts("_a")
        }
    }

    @Test("PUT /db?partitioned=true creates a partitioned database; GET /db shows its props")
    func creation() async throws {
        let server = try await RunningServer()
        #expect(try await server.request("PUT", "/pdb?partitioned=true").status == 201)
        #expect(try await server.request("PUT", "/plain?partitioned=false").status == 201)
        #expect(try await server.request("GET", "/pdb").json["props"] == ["partitioned": true])
        #expect(try await server.request("GET", "/plain").json["props"] == [:])
        let bad = try await server.request("PUT", "/other?partitioned=yes")
        #expect(bad.status == 400)
        #expect(bad.json == ["error": "bad_request", "reason": "Invalid `partitioned` parameter"])
        #expect(try await server.request("GET", "/other").status == 404)
        let system = try await server.request("PUT", "/_users?partitioned=true")
        #expect(system.json == ["error": "bad_request", "reason": "Cannot partition a system database"])
        await server.stop()
    }

    @Test("Document ids of a partitioned database are partition:id, with CouchDB's errors; design and _local documents are exempt")
    func documentIDs() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/pdb?partitioned=true")
        _ = try await server.request("PUT", "/plain")
        let cases: [(String, String, String)] = [
            ("nocolon", "illegal_docid", "Doc id must be of form partition:id"),
            (":x", "illegal_partition", "Partition must not be empty"),
            ("p:", "illegal_docid", "Document id must not be empty"),
            ("p:_x", "illegal_docid", "Only reserved document ids may start with underscore."),
        ]
        for (id, error, reason) in cases {
            let reply = try await server.request("PUT", "/pdb/\(id)", json: ["a": 1])
            #expect(reply.status == 400, "\(id)")
            #expect(reply.json == ["error": .string(error), "reason": .string(reason)], "\(id)")
            #expect(try await server.request("PUT", "/plain/\(id)", json: ["a": 1]).status != 400 || id.contains("_"), "\(id)")
        }
        let generated = try await server.request("POST", "/pdb", json: ["a": 1])
        #expect(generated.json["error"] == "illegal_docid")
        #expect(try await server.request("PUT", "/pdb/p:1", json: ["a": 1]).status == 201)
        #expect(try await server.request("POST", "/pdb", json: ["_id": "p:2"]).status == 201)
        #expect(try await server.request("PUT", "/pdb/_design/d", json: ["views": [:]]).status == 201)
        #expect(try await server.request("PUT", "/pdb/_local/x", json: ["a": 1]).status == 201)
        // One id not of the form partition:id refuses the whole request, as CouchDB 3.5 does: nothing is written.
        let bulk = try await server.request("POST", "/pdb/_bulk_docs", json: ["docs": [["_id": "q:1"], ["_id": "q1"]]])
        #expect(bulk.status == 400)
        #expect(bulk.json == ["error": "illegal_docid", "reason": "Doc id must be of form partition:id"])
        #expect(try await server.request("GET", "/pdb/q:1").status == 404)
        await server.stop()
    }

    /// A partitioned database `pdb` with partitions a (a:1, a:2, a:3) and b (b:1, b:2 deleted).
    private func partitioned() async throws -> RunningServer {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/pdb?partitioned=true")
        let docs: JSONValue = ["docs": [
            ["_id": "a:1", "n": 1, "tag": "x"], ["_id": "a:2", "n": 2, "tag": "y"], ["_id": "a:3", "n": 3, "tag": "x"],
            ["_id": "b:1", "n": 4, "tag": "x"], ["_id": "b:2", "n": 5, "tag": "y"],
        ]]
        _ = try await server.request("POST", "/pdb/_bulk_docs", json: docs)
        let b2 = try await server.request("GET", "/pdb/b:2")
        _ = try await server.request("DELETE", "/pdb/b:2?rev=\(b2.json["_rev"]?.stringValue ?? "")")
        return server
    }

    @Test("GET /db/_partition/{p} answers the partition's counts; bad partitions and databases are refused as CouchDB refuses them")
    func partitionInfo() async throws {
        let server = try await partitioned()
        let a = try await server.request("GET", "/pdb/_partition/a")
        #expect(a.status == 200)
        #expect(a.json["db_name"] == "pdb" && a.json["partition"] == "a")
        #expect(a.json["doc_count"] == 3 && a.json["doc_del_count"] == 0)
        #expect((a.json["sizes"]?["external"]?.doubleValue ?? 0) > 0 && a.json["sizes"]?["active"] != nil)
        let b = try await server.request("GET", "/pdb/_partition/b")
        #expect(b.json["doc_count"] == 1 && b.json["doc_del_count"] == 1)
        let underscore = try await server.request("GET", "/pdb/_partition/_a")
        #expect(underscore.status == 400)
        #expect(underscore.json == ["error": "illegal_partition", "reason": "Partition must not start with an underscore"])
        #expect(try await server.request("GET", "/pdb/_partition").json == ["error": "bad_request", "reason": "invalid_partition_req"])
        #expect(try await server.request("PUT", "/pdb/_partition/a").status == 405)
        _ = try await server.request("PUT", "/plain")
        let plain = try await server.request("GET", "/plain/_partition/a")
        #expect(plain.json == ["error": "bad_request", "reason": "database is not partitioned"])
        #expect(try await server.request("POST", "/plain/_partition/a/_find", json: ["selector": [:]]).status == 400)
        #expect(try await server.request("GET", "/pdb/_partition/a/_nothing").status == 404)
        await server.stop()
    }

    @Test("_partition/{p}/_all_docs answers the partition's documents only, within the keys asked for")
    func allDocs() async throws {
        let server = try await partitioned()
        func ids(_ path: String) async throws -> [String] {
            try await server.request("GET", path).json["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        #expect(try await ids("/pdb/_partition/a/_all_docs") == ["a:1", "a:2", "a:3"])
        #expect(try await ids("/pdb/_partition/b/_all_docs") == ["b:1"])
        #expect(try await ids("/pdb/_partition/a/_all_docs?descending=true") == ["a:3", "a:2", "a:1"])
        #expect(try await ids("/pdb/_partition/a/_all_docs?startkey=%22a:2%22") == ["a:2", "a:3"])
        #expect(try await ids("/pdb/_partition/a/_all_docs?endkey=%22z%22") == ["a:1", "a:2", "a:3"])
        #expect(try await ids("/pdb/_partition/c/_all_docs") == [])
        #expect(try await ids("/pdb/_all_docs?partition=b") == ["b:1"])
        #expect(try await ids("/pdb/_all_docs").count == 4)
        let conflicting = try await server.request("GET", "/pdb/_partition/a/_all_docs?partition=b")
        #expect(conflicting.json == ["error": "bad_request", "reason": "Conflicting value for `partition` in query string"])
        await server.stop()
    }

    @Test("_partition/{p}/_find finds the partition's documents only, with partitioned indexes; a global _find uses global ones")
    func find() async throws {
        let server = try await partitioned()
        func ids(_ reply: RunningServer.Reply) -> [String] {
            reply.json["docs"]?.arrayValue?.compactMap { $0["_id"]?.stringValue } ?? []
        }
        let scan = try await server.request("POST", "/pdb/_partition/a/_find", json: ["selector": ["tag": "x"]])
        #expect(ids(scan) == ["a:1", "a:3"])
        #expect(ids(try await server.request("POST", "/pdb/_find", json: ["selector": ["tag": "x"]])) == ["a:1", "a:3", "b:1"])

        // An index made in a partitioned database is partitioned unless told otherwise.
        _ = try await server.request("POST", "/pdb/_index", json: ["index": ["fields": ["n"]], "name": "pn", "ddoc": "pn"])
        _ = try await server.request("POST", "/pdb/_index", json: ["index": ["fields": ["n"]], "name": "gn", "ddoc": "gn", "partitioned": false])
        let listed = try await server.request("GET", "/pdb/_index").json["indexes"]?.arrayValue ?? []
        #expect(listed.first { $0["name"] == "pn" }?["partitioned"] == true)
        #expect(listed.first { $0["name"] == "gn" }?["partitioned"] == false)
        #expect(try await server.request("GET", "/pdb/_design/gn").json["options"] == ["partitioned": false])

        let selector: JSONValue = ["n": ["$gt": 1]]
        let inPartition = try await server.request("POST", "/pdb/_partition/a/_find", json: ["selector": selector, "sort": ["n"]])
        #expect(ids(inPartition) == ["a:2", "a:3"])
        let explained = try await server.request("POST", "/pdb/_partition/a/_explain", json: ["selector": selector])
        #expect(explained.json["index"]?["name"] == "pn")
        #expect(explained.json["partitioned"] == true)
        #expect(explained.json["opts"]?["partition"] == "a")
        #expect(explained.json["mrargs"]?["partition"] == "a")
        #expect(explained.json["selector"] == ["n": ["$gt": 1]])
        let outOfScope = explained.json["index_candidates"]?.arrayValue?.first { $0["index"]?["name"] == "gn" }
        #expect(outOfScope?["analysis"]?["reasons"] == [["name": "scope_mismatch"]])
        #expect(outOfScope?["analysis"]?["usable"] == false)

        let global = try await server.request("POST", "/pdb/_explain", json: ["selector": selector])
        #expect(global.json["index"]?["name"] == "gn")
        #expect(global.json["partitioned"] == true)
        #expect(global.json["opts"]?["partition"] == "")
        #expect(global.json["mrargs"]?["partition"] == .null)
        #expect(ids(try await server.request("POST", "/pdb/_find", json: ["selector": selector, "sort": ["n"]])) == ["a:2", "a:3", "b:1"])

        // The partition in the body is the path's, or a conflict.
        #expect(ids(try await server.request("POST", "/pdb/_find", json: ["selector": selector, "partition": "b"])) == ["b:1"])
        #expect(try await server.request("POST", "/pdb/_partition/a/_find", json: ["selector": selector, "partition": "b"]).status == 400)

        // A sort no index in scope serves.
        _ = try await server.request("POST", "/pdb/_index", json: ["index": ["fields": ["tag"]], "name": "gt", "ddoc": "gt", "partitioned": false])
        let unsorted = try await server.request("POST", "/pdb/_partition/a/_find", json: ["selector": ["tag": ["$gt": .null]], "sort": ["tag"]])
        #expect(unsorted.json == ["error": "no_usable_index", "reason": "No partitioned index exists for this sort, try indexing by the sort fields."])
        let sortedGlobally = try await server.request("POST", "/pdb/_find", json: ["selector": ["tag": ["$gt": .null]], "sort": ["tag"]])
        #expect(ids(sortedGlobally).count == 4)
        _ = try await server.request("POST", "/pdb/_index", json: ["index": ["fields": ["n", "tag"]], "name": "pnt", "ddoc": "pnt"])
        let noGlobal = try await server.request("POST", "/pdb/_find", json: ["selector": ["n": ["$gt": .null]], "sort": ["n", "tag"]])
        #expect(noGlobal.json == ["error": "no_usable_index", "reason": "No global index exists for this sort, try indexing by the sort fields."])

        // A design document keeps the option it was made with.
        let mismatch = try await server.request("POST", "/pdb/_index", json: ["index": ["fields": ["tag"]], "name": "other", "ddoc": "gn"])
        #expect(mismatch.json == ["error": "invalid_partitioned_option",
                                  "reason": "Requested partitioned option does not match existing value on design document _design/gn"])
        await server.stop()
    }

    @Test("A partitioned index cannot be made in a database that is not partitioned; a partition query of one is refused")
    func plainDatabase() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/plain")
        let index = try await server.request("POST", "/plain/_index", json: ["index": ["fields": ["n"]], "partitioned": true])
        #expect(index.status == 400)
        #expect(index.json["error"] == "invalid_design_doc")
        let listed = try await server.request("POST", "/plain/_index", json: ["index": ["fields": ["n"]], "name": "n"])
        #expect(listed.status == 200)
        #expect(try await server.request("GET", "/plain/_index").json["indexes"]?[1]?["partitioned"] == false)
        let design = try await server.request("PUT", "/plain/_design/p", json: ["options": ["partitioned": true], "views": [:]])
        #expect(design.status == 400)
        #expect(design.json == ["error": "invalid_design_doc", "reason": "partitioned option cannot be true in a non-partitioned database."])
        #expect(try await server.request("PUT", "/plain/_design/g", json: ["options": ["partitioned": false], "views": [:]]).status == 201)
        let find = try await server.request("POST", "/plain/_find", json: ["selector": [:], "partition": "a"])
        #expect(find.json == ["error": "query_parse_error", "reason": "`partition` parameter is not supported on this db"])
        #expect(try await server.request("POST", "/plain/_explain", json: ["selector": [:]]).json["partitioned"] == false)
        await server.stop()
    }

    @Test("Views of a partitioned database are partitioned unless options.partitioned is false; a partition query reads its documents only")
    func views() async throws {
        let server = try await partitioned()
        let map = "function (doc) { if (doc.n) emit(doc.tag, doc.n); }"
        _ = try await server.request("PUT", "/pdb/_design/p", json: ["views": ["v": ["map": .string(map), "reduce": "_sum"]]])
        _ = try await server.request("PUT", "/pdb/_design/g", json: ["options": ["partitioned": false],
                                                                      "views": ["v": ["map": .string(map), "reduce": "_sum"]]])
        let rows = try await server.request("GET", "/pdb/_partition/a/_design/p/_view/v?reduce=false")
        #expect(rows.json["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["a:1", "a:3", "a:2"])
        let limited = try await server.request("GET", "/pdb/_partition/a/_design/p/_view/v?reduce=false&skip=1&limit=1")
        #expect(limited.json["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["a:3"])
        let reduced = try await server.request("GET", "/pdb/_partition/a/_design/p/_view/v")
        #expect(reduced.json["rows"] == [["key": .null, "value": 6]])
        let grouped = try await server.request("GET", "/pdb/_partition/a/_design/p/_view/v?group=true")
        #expect(grouped.json["rows"] == [["key": "x", "value": 4], ["key": "y", "value": 2]])
        let docs = try await server.request("GET", "/pdb/_partition/b/_design/p/_view/v?reduce=false&include_docs=true")
        #expect(docs.json["rows"]?[0]?["doc"]?["_id"] == "b:1")
        #expect(docs.json["rows"]?.arrayValue?.count == 1)
        // The query string's partition is the same query.
        #expect(try await server.request("GET", "/pdb/_design/p/_view/v?partition=a").json["rows"] == [["key": .null, "value": 6]])

        let mandatory = try await server.request("GET", "/pdb/_design/p/_view/v")
        #expect(mandatory.status == 400)
        #expect(mandatory.json == ["error": "query_parse_error", "reason": "`partition` parameter is mandatory for queries to this view."])
        #expect(try await server.request("GET", "/pdb/_design/g/_view/v").json["rows"] == [["key": .null, "value": 10]])
        let notPartitioned = try await server.request("GET", "/pdb/_partition/a/_design/g/_view/v")
        #expect(notPartitioned.json == ["error": "query_parse_error", "reason": "`partition` parameter is not supported in this design doc"])
        await server.stop()
    }
}
