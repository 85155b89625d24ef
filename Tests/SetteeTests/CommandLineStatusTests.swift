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

extension CommandLineStatusTests {
    @Test("A map function that throws is not silent: query and index say on standard error how many calls threw, and the first documents with their errors; the API's progress carries the same")
    func mapErrorsSummarised() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let documents = directory.file("docs.ndjson", contents: (1...12).map { #"{"_id":"d\#(String(format: "%02d", $0))","n":\#($0)}"# }.joined(separator: "\n"))
        #expect(try settee.run(["--db", db, "import", documents.path], in: directory.url).exitStatus == 0)
        let design = #"{"_id":"_design/shelf","views":{"by_title":{"map":"function (doc) { emit(doc.title.toUpperCase(), 1); }"},"ok":{"map":"function (doc) { emit(doc.n, 1); }"}}}"#
        #expect(try settee.run(["--db", db, "put", design], in: directory.url).exitStatus == 0)
        let query = try settee.run(["--db", db, "query", "shelf/by_title"], in: directory.url)
        #expect(query.exitStatus == 0)
        #expect(query.standardError.contains("12 map function calls threw while indexing"), "\(query.standardError)")
        #expect(query.standardError.contains(#"shelf/by_title, document "d01": TypeError: doc.title is undefined"#), "\(query.standardError)")
        #expect(query.standardError.contains("… and 9 more"), "\(query.standardError)")
        // Up to date: nothing more to say.
        #expect(try settee.run(["--db", db, "index"], in: directory.url).standardError.isEmpty)
        #expect(try settee.run(["--db", db, "put", #"{"_id":"d13"}"#], in: directory.url).exitStatus == 0)
        let index = try settee.run(["--db", db, "index"], in: directory.url)
        #expect(index.standardError.contains("1 map function call threw while indexing"), "\(index.standardError)")
        #expect(index.standardError.contains(#"document "d13""#), "\(index.standardError)")

        // From Swift: the progress of an update carries the count and the first errors.
        let database = try Database(at: URL(fileURLWithPath: db))
        _ = try database.put(#"{"_id":"d14"}"#)
        _ = try database.put(#"{"_id":"d15","title":"fine"}"#)
        var last: IndexProgress?
        try database.updateIndexes { last = $0 }
        #expect(last?.mapErrors == 1)
        #expect(last?.firstMapErrors == [MapError(designDocument: "_design/shelf", view: "by_title", documentID: "d14", message: "TypeError: doc.title is undefined")])
    }
}

extension CommandLineStatusTests {
    @Test("Errors that guide: a bare view name or a misspelt design document suggests the views that exist; a missing database is named once; a conflict says which revision to give")
    func errorsThatGuide() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let design = #"{"_id":"_design/shelf","views":{"by_title":{"map":"function (doc) { emit(doc.title, 1); }"}}}"#
        #expect(try settee.run(["--db", db, "put", design], in: directory.url).exitStatus == 0)
        #expect(try settee.run(["--db", db, "put", #"{"_id":"b1","title":"Kindred"}"#], in: directory.url).exitStatus == 0)
        for view in ["by_title", "shelv/by_title"] {
            let outcome = try settee.run(["--db", db, "query", view], in: directory.url)
            #expect(outcome.exitStatus == 1)
            let report = try JSONValue(parsing: outcome.standardError)
            #expect(report["suggestions"]?[0] == "shelf/by_title", "\(view): \(outcome.standardError)")
            #expect(!outcome.standardError.contains("Database.register"), "\(outcome.standardError)")
        }
        let missing = directory.url.appendingPathComponent("nowhere").path
        let absent = try settee.run(["--db", missing, "info"], in: directory.url)
        #expect(try JSONValue(parsing: absent.standardError)["reason"] == .string("there is no Settee database at \(missing)"))
        let conflict = try settee.run(["--db", db, "put", #"{"_id":"b1","title":"Dawn"}"#], in: directory.url)
        let report = try JSONValue(parsing: conflict.standardError)
        #expect(report["reason"] == "Document update conflict.")
        #expect(report["hint"]?.stringValue?.contains("b1 is at revision 1-") == true, "\(conflict.standardError)")
    }
}

extension CommandLineStatusTests {
    @Test("An import's rejected line says its column, not a line 1 of its own; an attachment's content type comes from its own name first")
    func smallerGuidance() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let file = directory.file("bad.ndjson", contents: #"{"_id":"a"}"# + "\n" + #"{"_id":"b", oops}"# + "\n")
        let report = try JSONValue(parsing: try settee.run(["--db", db, "import", file.path], in: directory.url).standardOutput)
        #expect(report["rejected"]?[0]?["line"] == 2)
        #expect(report["rejected"]?[0]?["reason"] == "invalid JSON: unexpected character 'o' at column 13")
        let bytes = directory.file("upload.bin", contents: "not really a png")
        #expect(try settee.run(["--db", db, "attachment", "put", "art", "cover.png", bytes.path], in: directory.url).exitStatus == 0)
        let stub = try JSONValue(parsing: try settee.run(["--db", db, "get", "art"], in: directory.url).standardOutput)
        #expect(stub["_attachments"]?["cover.png"]?["content_type"] == "image/png")
    }
}
