import Foundation
import Testing
import Settee

/// `_local/` documents as CouchDB keeps them: revisions `0-1`, `0-2`, …, and
/// nowhere but where they are asked for by id (not in the changes feed,
/// `_all_docs`, views or the counts).
@Suite("Local documents")
struct LocalDocumentTests {
    let directory = TemporaryDirectory()

    func open() throws -> Database {
        try Database(at: directory.url.appendingPathComponent("db"))
    }

    @Test("a local document is written, read, updated and deleted with revisions 0-1, 0-2")
    func roundTrip() throws {
        let db = try open()
        let first = try db.put(#"{"_id": "_local/checkpoint", "seq": 1}"#)
        #expect(first.revision.description == "0-1")
        let read = try #require(try db.document("_local/checkpoint"))
        #expect(read.json == #"{"_id":"_local/checkpoint","_rev":"0-1","seq":1}"#)
        let second = try db.put(#"{"_id": "_local/checkpoint", "_rev": "0-1", "seq": 2}"#)
        #expect(second.revision.description == "0-2")
        #expect(try db.document("_local/checkpoint")?.json == #"{"_id":"_local/checkpoint","_rev":"0-2","seq":2}"#)
        // A stale or missing revision conflicts, as for any document.
        #expect(throws: DocumentError.self) { try db.put(#"{"_id": "_local/checkpoint", "_rev": "0-1", "seq": 3}"#) }
        #expect(throws: DocumentError.self) { try db.put(#"{"_id": "_local/checkpoint", "seq": 3}"#) }
        try db.delete("_local/checkpoint", revision: Revision("0-2"))
        #expect(try db.document("_local/checkpoint") == nil)
        #expect(try db.documentIncludingDeleted("_local/checkpoint") == nil)
        // Deleted, it starts again at 0-1.
        #expect(try db.put(#"{"_id": "_local/checkpoint", "seq": 4}"#).revision.description == "0-1")
    }

    @Test("local documents are not in the changes feed, _all_docs, views or the counts")
    func invisibleElsewhere() throws {
        let db = try open()
        try db.put(#"{"_id": "_design/all", "views": {"ids": {"map": "function (doc) { emit(doc._id, null); }", "reduce": "_count"}}}"#)
        try db.put(#"{"_id": "a", "n": 1}"#)
        let sequence = try db.lastSequence()
        try db.put(#"{"_id": "_local/x", "n": 2}"#)
        try db.put(#"{"_id": "_local/x", "_rev": "0-1", "n": 3}"#)
        #expect(try db.lastSequence() == sequence)
        #expect(try db.changes().map(\.id) == ["_design/all", "a"])
        #expect(try db.allDocuments().rows.compactMap(\.id) == ["_design/all", "a"])
        var noReduce = ViewQueryOptions()
        noReduce.reduce = false
        #expect(try db.query("all/ids", options: noReduce).rows.compactMap(\.id) == ["a"])
        #expect(try db.info().documentCount == 2)
        // In a write batch too.
        try db.write { batch in
            try batch.put(#"{"_id": "_local/y", "n": 1}"#)
            try batch.put(#"{"_id": "b", "n": 1}"#)
        }
        #expect(try db.changes().map(\.id) == ["_design/all", "a", "b"])
        #expect(try db.changes().map(\.sequence) == [1, 2, 3])
        #expect(try db.info().documentCount == 3)
    }

    @Test("an import writes local documents to their own table")
    func imported() throws {
        let db = try open()
        let report = try db.importDocuments(Data("{\"_id\": \"a\"}\n{\"_id\": \"_local/x\", \"v\": 1}\n{\"_id\": \"b\"}\n".utf8))
        #expect(report.rejected.isEmpty)
        #expect(try db.document("_local/x")?.revision.description == "0-1")
        #expect(try db.changes().map(\.id) == ["a", "b"])
        #expect(try db.changes().map(\.sequence) == [1, 2])
        #expect(try db.info().documentCount == 2)
        #expect(try db.verify().problems.isEmpty)
    }

    @Test("validate_doc_update does not run on local documents")
    func notValidated() throws {
        let db = try open()
        try db.put(#"{"_id": "_design/strict", "validate_doc_update": "function (doc) { throw({forbidden: 'no'}); }"}"#)
        #expect(throws: (any Error).self) { try db.put(#"{"_id": "a"}"#) }
        #expect(try db.put(#"{"_id": "_local/a"}"#).revision.description == "0-1")
    }

    @Test("`_local/` alone is not a document id")
    func emptyLocalID() throws {
        let db = try open()
        let error = try #require(throws: DocumentError.self) { try db.put(#"{"_id": "_local/"}"#) }
        #expect(error.reason == "Illegal document id `_local/`")
    }

    @Test("settee put, get and delete take local documents")
    func commandLine() throws {
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("cli").path
        let put = try settee.run(["--db", db, "put", #"{"_id":"_local/x","a":1}"#], in: directory.url)
        #expect(put.exitStatus == 0, "\(put.standardError)")
        #expect(put.standardOutput.contains(#""rev":"0-1""#))
        let get = try settee.run(["--db", db, "get", "_local/x"], in: directory.url)
        #expect(get.standardOutput == #"{"_id":"_local/x","_rev":"0-1","a":1}"# + "\n")
        let delete = try settee.run(["--db", db, "delete", "_local/x", "--rev", "0-1"], in: directory.url)
        #expect(delete.exitStatus == 0, "\(delete.standardError)")
        let gone = try settee.run(["--db", db, "get", "_local/x"], in: directory.url)
        #expect(gone.exitStatus != 0)
        #expect(gone.standardError.contains("not_found"))
    }
}
