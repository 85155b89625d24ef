import Foundation
import Testing
import SetteeCore
import SetteeStorage
@testable import Settee

/// The document counts a database keeps (`doc_count`, `doc_del_count`, and
/// `_all_docs`' `total_rows`), compared with the documents themselves.
@Suite("Kept document counts")
struct DocumentCountTests {
    let directory = TemporaryDirectory()

    func open() throws -> Database {
        try Database(at: directory.url.appendingPathComponent("db"))
    }

    /// The counts as the changes feed has them: each document once, deleted or not.
    func countedFromChanges(_ db: Database) throws -> (live: Int, deleted: Int) {
        let changes = try db.changes()
        let deleted = changes.filter(\.isDeleted).count
        return (changes.count - deleted, deleted)
    }

    /// The record under `counts` in the table `settee`, parsed.
    func keptRecord(_ db: Database) throws -> (live: Int, deleted: Int, sequence: UInt64)? {
        let table = try db.environment.openDatabases([DatabaseFormat.table])[0]
        let bytes = try db.environment.read { try $0.get(table, Array("counts".utf8)).map(Array.init) }
        guard let bytes else { return nil }
        let value = try JSONParser.parse(bytes)
        return (Int(try #require(value["doc_count"]?.doubleValue)), Int(try #require(value["doc_del_count"]?.doubleValue)),
                UInt64(try #require(value["update_seq"]?.doubleValue)))
    }

    func writeRecord(_ db: Database, _ json: String?) throws {
        let table = try db.environment.openDatabases([DatabaseFormat.table])[0]
        try db.environment.write { transaction in
            if let json { try transaction.put(table, Array("counts".utf8), Array(json.utf8)) } else { try transaction.delete(table, Array("counts".utf8)) }
        }
    }

    /// Checks the kept record, `info` and `_all_docs` against the changes feed.
    func expectExact(_ db: Database, _ step: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expected = try countedFromChanges(db)
        let kept = try #require(try keptRecord(db), "\(step): no counts record", sourceLocation: sourceLocation)
        #expect(kept.live == expected.live && kept.deleted == expected.deleted, "\(step): kept \(kept), documents \(expected)", sourceLocation: sourceLocation)
        #expect(kept.sequence == (try db.lastSequence()), "\(step)", sourceLocation: sourceLocation)
        let info = try db.info()
        #expect(info.documentCount == expected.live && info.deletedDocumentCount == expected.deleted, "\(step): info \(info)", sourceLocation: sourceLocation)
        var firstRow = ViewQueryOptions()
        firstRow.limit = 1
        #expect(try db.allDocuments(options: firstRow).totalRows == expected.live, "\(step)", sourceLocation: sourceLocation)
    }

    @Test("Counts stay exact through puts, updates, deletes, re-creations, design documents, batches and imports")
    func exactThroughWrites() throws {
        let db = try open()
        try expectExact(db, "new database")
        var revisions: [String: Revision] = [:]
        for n in 0..<10 { revisions["d\(n)"] = try db.put(#"{"_id": "d\#(n)", "n": \#(n)}"#).revision }
        try expectExact(db, "ten puts")
        revisions["d0"] = try db.put(#"{"_id": "d0", "_rev": "\#(revisions["d0"]!)", "n": 100}"#).revision
        try expectExact(db, "an update")
        revisions["d1"] = try db.delete("d1", revision: revisions["d1"]).revision
        revisions["d2"] = try db.put(#"{"_id": "d2", "_rev": "\#(revisions["d2"]!)", "_deleted": true}"#).revision
        try expectExact(db, "two deletes")
        #expect(try db.info().deletedDocumentCount == 2)
        _ = try db.put(#"{"_id": "d1", "back": true}"#)
        try expectExact(db, "a deleted document re-created")
        #expect(try db.info().documentCount == 9)
        #expect(throws: DocumentError.self) { try db.put(#"{"_id": "d3", "n": 3}"#) }
        try expectExact(db, "a refused conflict")
        try db.loadDesignDocuments(from: directory.file("app.json", contents: #"""
            {"_id": "_design/app", "views": {"by_n": {"map": "function (doc) { emit(doc.n, null); }"}}}
            """#))
        try expectExact(db, "a design document")
        #expect(try db.info().documentCount == 10, "design documents count as documents, as in CouchDB")

        try db.write { batch in
            try batch.put(#"{"_id": "b1"}"#)
            try batch.put(#"{"_id": "b2"}"#)
            try batch.delete("d4", revision: nil)
            try batch.delete("b2", revision: nil)
            try batch.put(#"{"_id": "d2"}"#)
        }
        try expectExact(db, "a batch")

        let report = try db.importDocuments(Data("""
            {"_id": "i1"}
            {"_id": "i2"}
            {"_id": "d5"}
            not json
            {"_id": "d6", "_rev": "\(revisions["d6"]!)", "_deleted": true}
            {"_id": "i3", "_deleted": true}
            {"_id": "b2"}
            """.utf8))
        #expect(report.imported == 4, "\(report.rejected)")
        try expectExact(db, "an import with refused lines")
    }

    @Test("A batch that is rolled back leaves the counts as they were")
    func rolledBackBatch() throws {
        let db = try open()
        for n in 0..<5 { try db.put(#"{"_id": "d\#(n)"}"#) }
        try db.delete("d0", revision: nil)
        let before = try db.info()
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try db.write { batch in
                try batch.put(#"{"_id": "new"}"#)
                try batch.delete("d1", revision: nil)
                try batch.put(#"{"_id": "d0"}"#)
                throw Stop()
            }
        }
        #expect(try db.info() == before)
        try expectExact(db, "after the rollback")
    }

    @Test("A database without the counts record (an earlier Settee's) is counted once, at open, and kept from then on")
    func databaseWithoutRecord() throws {
        do {
            let db = try open()
            for n in 0..<6 { try db.put(#"{"_id": "d\#(n)"}"#) }
            try db.delete("d5", revision: nil)
            try writeRecord(db, nil)
            #expect(try keptRecord(db) == nil)
            #expect(try db.info().documentCount == 5 && db.info().deletedDocumentCount == 1, "counted by a scan meanwhile")
            var firstRow = ViewQueryOptions()
            firstRow.limit = 1
            #expect(try db.allDocuments(options: firstRow).totalRows == 5)
            try db.put(#"{"_id": "d6"}"#)
            try expectExact(db, "the first write after the record went missing")
            try writeRecord(db, nil)
        }
        do {
            var readOnly = Database.Options()
            readOnly.readOnly = true
            let db = try Database(at: directory.url.appendingPathComponent("db"), options: readOnly)
            #expect(try db.info().documentCount == 6 && db.info().deletedDocumentCount == 1, "read-only: counted by a scan")
            #expect(try keptRecord(db) == nil, "read-only: nothing written")
        }
        let db = try open()
        try expectExact(db, "reopened without the record")
    }

    @Test("Counts an earlier Settee left behind (it wrote documents without them) are taken as unknown and counted again")
    func staleRecord() throws {
        let db = try open()
        for n in 0..<4 { try db.put(#"{"_id": "d\#(n)"}"#) }
        // As after writes the counts did not see: recorded at an earlier sequence.
        try writeRecord(db, #"{"doc_count":1,"doc_del_count":7,"update_seq":2}"#)
        #expect(try db.info().documentCount == 4 && db.info().deletedDocumentCount == 0)
        #expect(try db.verify().isIntact)
        try db.delete("d0", revision: nil)
        try expectExact(db, "the next write")
    }

    @Test("info and _all_docs take the kept counts without reading the documents; verify reports counts that disagree with them")
    func verifyReportsWrongCounts() throws {
        let db = try open()
        for n in 0..<5 { try db.put(#"{"_id": "d\#(n)"}"#) }
        try db.delete("d1", revision: nil)
        #expect(try db.verify().isIntact)
        let sequence = try db.lastSequence()
        try writeRecord(db, #"{"doc_count":40,"doc_del_count":3,"update_seq":\#(sequence)}"#)
        #expect(try db.info().documentCount == 40 && db.info().deletedDocumentCount == 3)
        #expect(try db.allDocuments().totalRows == 40)
        let report = try db.verify()
        #expect(!report.isIntact)
        #expect(report.problems.contains { $0.contains("40") && $0.contains("4 live") && $0.contains("1 deleted") }, "\(report.problems)")

        try writeRecord(db, "not json")
        #expect(try db.info().documentCount == 4, "a record that does not decode is not used")
        let undecodable = try db.verify()
        #expect(undecodable.problems.contains { $0.contains("counts") && $0.contains("not json") }, "\(undecodable.problems)")
    }

    @Test("_all_docs offset counts live documents before the start key, in either direction; total_rows all of them")
    func allDocumentsOffset() throws {
        let db = try open()
        for id in ["a", "b", "c", "d", "e", "f"] { try db.put(#"{"_id": "\#(id)"}"#) }
        try db.delete("b", revision: nil)
        try db.delete("e", revision: nil)
        var options = ViewQueryOptions()
        options.startKey = "d"
        var result = try db.allDocuments(options: options)
        #expect(result.totalRows == 4 && result.offset == 2 && result.rows.map(\.id) == ["d", "f"])
        options.descending = true
        result = try db.allDocuments(options: options)
        #expect(result.totalRows == 4 && result.offset == 1 && result.rows.map(\.id) == ["d", "c", "a"])
        options.startKey = "e"
        options.skip = 1
        result = try db.allDocuments(options: options)
        #expect(result.totalRows == 4 && result.offset == 2 && result.rows.map(\.id) == ["c", "a"])
        options = ViewQueryOptions()
        options.keys = ["a", "b", "zz"]
        result = try db.allDocuments(options: options)
        #expect(result.totalRows == 4 && result.rows.count == 3)
    }
}
