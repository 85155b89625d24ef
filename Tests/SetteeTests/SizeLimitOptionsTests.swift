import Foundation
import Testing
@testable import Settee

@Suite("Document size limits set in Database.Options")
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
}
