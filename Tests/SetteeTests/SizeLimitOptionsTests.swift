import Foundation
import Testing
@testable import Settee

@Suite("Document size limits set in Database.Options", .ownThread)
struct SizeLimitOptionsTests {
    @Test("Limits are configurable: documents and design documents each have their own, and imports use them")
    func configuredLimits() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.maximumDocumentBytes = 1000
        options.maximumDesignDocumentBytes = 300
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        let pad = String(repeating: "p", count: 500)
        try db.put(#"{"_id":"fits","pad":"\#(pad)"}"#)
        let error = try #require(throws: DocumentError.self) { try db.put(#"{"_id":"big","pad":"\#(pad + pad)"}"#) }
        #expect(error.errorCode == .documentTooLarge)
        let designError = try #require(throws: DocumentError.self) { try db.put(#"{"_id":"_design/d","pad":"\#(pad)"}"#) }
        #expect(designError.code == .documentTooLarge)
        #expect(designError.reason.contains("maximumDesignDocumentBytes"), "\(designError)")

        let lines = [#"{"_id":"a"}"#, #"{"_id":"b","pad":"\#(pad + pad)"}"#, #"{"_id":"c"}"#, #"{"_id":"_design/e","pad":"\#(pad)"}"#]
        let report = try db.importDocuments(Data(lines.joined(separator: "\n").utf8))
        #expect(report.imported == 2)
        #expect(report.rejected.map(\.line) == [2, 4])
        #expect(report.rejected.allSatisfy { $0.error.code == .documentTooLarge }, "\(report.rejected)")
        // A document over every limit is refused before it is read for its id; a design document once its id is read.
        #expect(report.rejected.map(\.id) == [nil, "_design/e"])
    }

    @Test("A design document stored under a higher limit is refused by queries and left out by updateIndexes once the limit is lower, with its id")
    func storedDesignDocumentOverTheLimit() throws {
        let directory = TemporaryDirectory()
        let url = directory.url.appendingPathComponent("db")
        var generous = Database.Options()
        generous.maximumDesignDocumentBytes = 4_000_000
        do {
            let db = try Database(at: url, options: generous)
            let padding = String(repeating: "p", count: 3_000_000)
            try db.put(#"{"_id":"_design/big","pad":"\#(padding)","views":{"ids":{"map":"function (doc) { emit(doc._id, null); }"}}}"#)
            try db.put(#"{"_id":"_design/small","views":{"ids":{"map":"function (doc) { emit(doc._id, null); }"}}}"#)
            try db.put(#"{"_id":"d1"}"#)
            #expect(try db.query("big/ids").rows.count == 1)
        }
        let db = try Database(at: url)
        let error = try #require(throws: DocumentError.self) { try db.query("big/ids") }
        #expect(error.code == .documentTooLarge)
        #expect(error.id == "_design/big")
        #expect(error.reason.contains("maximumDesignDocumentBytes"), "\(error)")
        #expect(try db.query("small/ids").rows.count == 1)
        let unusable = try #require(throws: DesignDocumentErrors.self) { try db.updateIndexes() }
        #expect(unusable.errors.map(\.designDocument) == ["_design/big"])
        #expect(unusable.description.contains("document_too_large"), "\(unusable)")
    }

    @Test("settee takes the limits as options, and put - refuses an oversized document without reading it whole")
    func commandLineLimits() throws {
        let directory = TemporaryDirectory()
        let settee = try SetteeExecutable.find()
        let db = directory.url.appendingPathComponent("db").path
        let big = #"{"_id":"big","pad":""# + String(repeating: "p", count: 9_000_000) + #""}"#
        let input = directory.file("big.json", contents: big)

        let huge = directory.file("huge.json", contents: #"{"_id":"huge","pad":""# + String(repeating: "p", count: 100_000_000) + #""}"#)
        let refused = try settee.run(["--db", db, "put", "-"], input: huge, in: directory.url)
        #expect(refused.exitStatus == 1)
        #expect(refused.standardError.contains("document_too_large"), "\(refused.standardError)")
        #expect(refused.peakResidentBytes < 64 << 20, "peak \(refused.peakResidentBytes >> 20) MiB")
        let refusedTooLarge = try settee.run(["--db", db, "put", "-"], input: input, in: directory.url)
        #expect(refusedTooLarge.exitStatus == 1)

        let raised = try settee.run(["--db", db, "--max-document-size", "10000000", "put", "-"], input: input, in: directory.url)
        #expect(raised.exitStatus == 0, "\(raised.standardError)")
        let imported = try settee.run(["--db", db, "import", "--max-document-size", "100", input.path], in: directory.url)
        #expect(imported.exitStatus == 2)
        #expect(imported.standardOutput.contains("document_too_large"), "\(imported.standardOutput)")
        let bad = try settee.run(["--db", db, "--max-document-size", "0", "info"], in: directory.url)
        #expect(bad.exitStatus != 0 && bad.exitStatus != 1)
    }
}
