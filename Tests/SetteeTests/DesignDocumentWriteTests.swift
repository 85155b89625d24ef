import Foundation
import Testing
import Settee

/// A design document is checked when it is written, as CouchDB checks it
/// before it stores it (src/couch_mrview/src/couch_mrview.erl `validate/2`,
/// called from couch_db.erl's `validate_doc_update` for `_design/` documents).
@Suite("Design documents written to the database")
struct DesignDocumentWriteTests {
    private let directory = TemporaryDirectory()

    private func open() throws -> Database {
        try Database(at: directory.url.appendingPathComponent("db"))
    }

    private func designError(_ body: () throws -> Void) throws -> DesignDocumentError {
        try #require(throws: DesignDocumentError.self, performing: body)
    }

    @Test("An unsupported built-in reduce is refused by put, with CouchDB's message, and nothing is stored")
    func unsupportedReduce() throws {
        let db = try open()
        let error = try designError {
            try db.put(#"{"_id": "_design/junk", "views": {"v": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "_random_junk"}}}"#)
        }
        #expect(error.reason == "`_random_junk` is not a supported reduce function.")
        #expect(error.designDocument == "_design/junk")
        #expect(error.view == "v")
        #expect(error.errorCode == .invalidDesignDocument)
        #expect(try db.document("_design/junk") == nil)
        #expect(try db.lastSequence() == 0)
    }

    @Test("A bad rank is refused in a write batch and in an import as by put")
    func badRank() throws {
        let db = try open()
        let source = #"{"_id": "_design/rank", "views": {"v": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "_top_500"}}}"#
        let error = try designError { _ = try db.write { (batch: WriteBatch) throws -> WriteResult in try batch.put(source) } }
        #expect(error.reason == "rank value must be between 1 and 100")
        let report = try db.importDocuments(Data(source.utf8))
        #expect(report.imported == 0)
        #expect(report.rejected.count == 1)
        #expect(report.rejected.first?.error.reason.contains("rank value must be between 1 and 100") == true)
        #expect(try db.document("_design/rank") == nil)
    }

    @Test("Supported reducers, design documents without views and other languages are stored as before")
    func accepted() throws {
        let db = try open()
        try db.put(#"{"_id": "_design/ok", "views": {"v": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "_top_5"}}}"#)
        try db.put(#"{"_id": "_design/empty", "views": {}}"#)
        try db.put(#"{"_id": "_design/snake", "language": "python", "views": {"v": {"map": "def fun(doc): pass", "reduce": "_junk"}}}"#)
        #expect(try db.lastSequence() == 3)
    }
}
