import Foundation
import Testing
@testable import Settee

@Suite("What the settee tool reports when it refuses part of its input")
struct CommandLineStatusTests {
    @Test("settee import exits 2 when documents were rejected, after writing the others and printing the report; 0 when all were written")
    func importExitStatus() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let mixed = directory.file("mixed.ndjson", contents: #"{"_id":"a"}"# + "\n" + "not json\n" + #"{"_id":"b"}"# + "\n")
        let outcome = try settee.run(["--db", db, "import", mixed.path], in: directory.url)
        #expect(outcome.exitStatus == 2, "\(outcome.standardError)")
        let report = try JSONValue(parsing: outcome.standardOutput)
        #expect(report["ok"] == .bool(false))
        #expect(report["imported"] == .number(2))
        #expect(report["rejected"]?.arrayValue?.first?["line"] == .number(2))
        // One JSON object on standard error, naming each rejected document by its line.
        let refusal = try JSONValue(parsing: outcome.standardError)
        #expect(refusal["error"] == "documents_rejected", "\(outcome.standardError)")
        #expect(refusal["rejected"]?.arrayValue?.first?["line"] == .number(2), "\(outcome.standardError)")
        #expect(try settee.run(["--db", db, "get", "b"], in: directory.url).exitStatus == 0)

        let clean = directory.file("clean.ndjson", contents: #"{"_id":"c"}"# + "\n")
        let cleanOutcome = try settee.run(["--db", db, "import", clean.path], in: directory.url)
        #expect(cleanOutcome.exitStatus == 0, "\(cleanOutcome.standardError)")
        #expect(try JSONValue(parsing: cleanOutcome.standardOutput)["ok"] == .bool(true))
    }

    @Test("settee index: a stored design document it cannot use (language python, written with put) is named on standard error with the reason; the others are indexed; exit status 2")
    func indexReportsUnusableDesignDocuments() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let good = #"{"_id":"_design/good","views":{"ids":{"map":"function (doc) { emit(doc._id, null); }"}}}"#
        let python = #"{"_id":"_design/snake","language":"python","views":{"v":{"map":"def fun(doc): yield doc['_id'], None"}}}"#
        for document in [good, python, #"{"_id":"d1"}"#] {
            #expect(try settee.run(["--db", db, "put", document], in: directory.url).exitStatus == 0)
        }
        let outcome = try settee.run(["--db", db, "index"], in: directory.url)
        #expect(outcome.exitStatus == 2, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("_design/snake"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("python"), "\(outcome.standardError)")
        let report = try JSONValue(parsing: outcome.standardOutput)
        #expect(report["ok"] == .bool(false))
        #expect(report["skipped"]?.arrayValue?.first?["id"] == .string("_design/snake"), "\(outcome.standardOutput)")
        #expect(report["views"]?.arrayValue?.first?["rows"] == .number(1), "\(outcome.standardOutput)")
    }

    @Test("updateIndexes indexes the usable design documents, then throws naming each one it left out and why")
    func updateIndexesNamesUnusable() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(#"{"_id":"_design/good","views":{"ids":{"map":"function (doc) { emit(doc._id, null); }"}}}"#)
        try db.put(#"{"_id":"_design/snake","language":"python","views":{"v":{"map":"def fun(doc): pass"}}}"#)
        try db.put(#"{"_id":"_design/broken","views":{"v":{"map":"function (doc) { emit(doc._id"}}}"#)
        try db.put(#"{"_id":"d1"}"#)
        let error = try #require(throws: DesignDocumentErrors.self) { try db.updateIndexes() }
        #expect(error.errors.map(\.designDocument) == ["_design/broken", "_design/snake"], "\(error)")
        #expect(error.errors.last?.reason.contains("python") == true, "\(error)")
        #expect(try db.viewInfo().first { $0.path == "good/ids" }?.rowCount == 1, "d1: map functions do not see design documents")
    }
}
