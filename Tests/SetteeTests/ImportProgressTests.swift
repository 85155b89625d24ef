import Foundation
import Testing
import Settee

@Suite("Import progress", .ownThread)
struct ImportProgressTests {
    @Test("Import progress reports the share of the input committed, not the share read ahead")
    func committedShare() throws {
        let directory = TemporaryDirectory()
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        // Three write transactions of 50,000 documents; all the input fits in one read.
        let count = 150_000
        let input = Data((0..<count).map { String(format: #"{"_id":"d%06d"}"#, $0) + "\n" }.joined().utf8)
        var reports: [ImportProgress] = []
        let report = try db.importDocuments(input) { reports.append($0) }
        #expect(report.imported == count)
        #expect(reports.count >= 2, "\(reports)")
        for progress in reports {
            // Every line is as long as the others: the share of bytes is the share of documents.
            let documents = Double(progress.imported + progress.rejected) / Double(count)
            let bytes = Double(progress.bytesCommitted) / Double(input.count)
            #expect(abs(bytes - documents) < 0.001, "\(progress)")
            #expect(progress.fractionCommitted.map { abs($0 - documents) < 0.001 } == true, "\(progress)")
        }
    }
}
