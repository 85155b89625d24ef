import SetteeCore
import Foundation
import Testing
import Settee

private let validatingDesign = #"""
    {"_id": "_design/rules", "validate_doc_update": "function (newDoc, oldDoc, userCtx, secObj) { if (newDoc.bad) throw {forbidden: 'bad documents are refused: ' + newDoc._id}; if (newDoc.owner && userCtx.name !== newDoc.owner) throw {unauthorized: 'only ' + newDoc.owner + ' may write this'}; if (oldDoc && oldDoc.locked && !newDoc._deleted) throw {forbidden: 'locked'}; if (newDoc._deleted && oldDoc && oldDoc.keep) throw {forbidden: 'kept'}; if (newDoc.broken) newDoc.x.y = 1; }"}
    """#

private func openDatabase(_ directory: TemporaryDirectory, user: UserContext = .administrator) throws -> Database {
    var options = Database.Options()
    options.userContext = user
    options.javaScriptWorkers = 1
    return try Database(at: directory.url.appendingPathComponent("db"), options: options)
}

@Suite("validate_doc_update")
struct UpdateValidationTests {
    @Test("A thrown {forbidden: …} refuses put with CouchDB's forbidden error and its reason; other documents are written")
    func forbidden() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(validatingDesign)
        #expect(throws: DocumentError(.forbidden, "bad documents are refused: b1", id: "b1")) {
            try db.put(#"{"_id": "b1", "bad": true}"#)
        }
        #expect(try db.document("b1") == nil)
        try db.put(#"{"_id": "g1"}"#)
        #expect(try db.document("g1") != nil)
    }

    @Test("userCtx carries the caller's user context: {unauthorized: …} for another user")
    func unauthorized() throws {
        let directory = TemporaryDirectory()
        do {
            let db = try openDatabase(directory)
            try db.put(validatingDesign)
        }
        let bob = try openDatabase(directory, user: UserContext(name: "bob", roles: []))
        do {
            try bob.put(#"{"_id": "a1", "owner": "alice"}"#)
            Issue.record("the write of alice's document by bob was accepted")
        } catch SetteeErrorCode.unauthorized {
        }
        try bob.put(#"{"_id": "b1", "owner": "bob"}"#)
    }

    @Test("oldDoc is the stored revision; deletions are validated with _deleted set")
    func oldDocumentAndDeletion() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let locked = try db.put(#"{"_id": "l1", "locked": true}"#)
        let kept = try db.put(#"{"_id": "k1", "keep": true}"#)
        try db.put(validatingDesign)
        #expect(throws: DocumentError(.forbidden, "locked", id: "l1")) {
            try db.put(#"{"_id": "l1", "_rev": "\#(locked.revision)", "locked": false}"#)
        }
        #expect(throws: DocumentError(.forbidden, "kept", id: "k1")) {
            try db.delete("k1", revision: kept.revision)
        }
        try db.delete("l1", revision: locked.revision)
    }

    @Test("A validation function that fails (not a forbidden or unauthorized object) refuses the write with its error")
    func failingFunction() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(validatingDesign)
        do {
            try db.put(#"{"_id": "x1", "broken": true}"#)
            Issue.record("a write whose validation threw a TypeError was accepted")
        } catch let error as JavaScriptError {
            #expect(error.message.contains("_design/rules validate_doc_update"), "\(error)")
        }
        #expect(try db.document("x1") == nil)
    }

    @Test("Batches and imports are validated too: refused documents are reported, the others written")
    func batchesAndImports() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(validatingDesign)
        #expect(throws: DocumentError(.forbidden, "bad documents are refused: w2", id: "w2")) {
            try db.write { batch in
                try batch.put(#"{"_id": "w1"}"#)
                try batch.put(#"{"_id": "w2", "bad": true}"#)
            }
        }
        #expect(try db.document("w1") == nil, "the batch is all or nothing")
        let report = try db.importDocuments(Data("{\"_id\": \"i1\"}\n{\"_id\": \"i2\", \"bad\": true}\n{\"_id\": \"i3\"}\n".utf8))
        #expect(try db.document("i1") != nil)
        #expect(try db.document("i2") == nil)
        #expect(try db.document("i3") != nil)
        #expect(report.rejected.count == 1 && report.rejected.first?.error.reason.contains("bad documents are refused") == true,
                "\(report.rejected)")
    }

    @Test("Design documents are not validated, and a validation function that does not compile is refused at load")
    func designDocuments() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(validatingDesign)
        try db.put(#"{"_id": "_design/other", "bad": true}"#)
        let file = directory.file("broken.json", contents: #"{"_id": "_design/broken", "validate_doc_update": "function (newDoc) { if ( }"}"#)
        #expect(throws: (any Error).self) { try db.loadDesignDocuments(from: file) }
        #expect(try db.document("_design/broken") == nil)
    }

    @Test("The settee tool's put is validated: a refused document exits non-zero with forbidden and its reason")
    func commandLine() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        #expect(try settee.run(["--db", db, "put", validatingDesign], in: directory.url).exitStatus == 0)
        let refused = try settee.run(["--db", db, "put", #"{"_id": "b9", "bad": true}"#], in: directory.url)
        #expect(refused.exitStatus != 0)
        #expect(refused.standardError.contains("forbidden") && refused.standardError.contains("bad documents are refused: b9"),
                "\(refused.standardError)")
        #expect(try settee.run(["--db", db, "get", "b9"], in: directory.url).exitStatus != 0)
    }

    @Test("A batch rolled back leaves none of its validation functions behind; a batch is checked with the functions it started with")
    func rolledBackBatch() throws {
        struct Abandon: Error {}
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        #expect(throws: Abandon.self) {
            try db.write { batch in
                try batch.put(validatingDesign)
                try batch.put(#"{"_id": "w1", "bad": true}"#)
                throw Abandon()
            }
        }
        #expect(try db.designDocument("rules") == nil)
        try db.put(#"{"_id": "after", "bad": true}"#)
        #expect(try db.document("after") != nil)
    }
}
