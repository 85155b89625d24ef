import Foundation
import Testing
import SetteeViews
@testable import Settee

/// The limit on a database's distinct indexes counts a partitioned view and
/// the same view kept globally (`options.partitioned: false`) as two: each
/// has its own index, as CouchDB's `couch_mrview_index:set_partitioned/2`
/// makes a partitioned view another index of the design document.
@Suite("Partitioned views and the index limit", .timeLimit(.minutes(2)))
struct PartitionedViewLimitTests {
    /// `manyViews` with the design document's `options.partitioned` set.
    func views(_ name: String, count: Int, partitioned: Bool?) -> String {
        var text = manyViews(name, count: count)
        if let partitioned {
            text = String(text.dropLast()) + #", "options": {"partitioned": \#(partitioned)}}"#
        }
        return text
    }

    func partitionedDatabase(_ directory: TemporaryDirectory) throws -> Database {
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.makePartitioned()
        return db
    }

    @Test("an import counts a partitioned view beside the same global view as two indexes")
    func importCountsPartitionedAndGlobalApart() throws {
        let directory = TemporaryDirectory()
        let db = try partitionedDatabase(directory)
        let full = ViewIndexStore.maximumIndexes
        let first = try db.importDocuments(Data(views("global", count: full, partitioned: false).utf8))
        #expect(first.imported == 1, "\(first.rejected)")
        // The same view, partitioned (the database's default): one index more than the database holds.
        let report = try db.importDocuments(Data(views("part", count: 1, partitioned: nil).utf8))
        #expect(report.imported == 0)
        #expect(report.rejected.first?.error.code == .invalidDesignDocument, "\(report.rejected)")
        #expect(try db.designDocument("part") == nil)
        // As a put refuses it.
        #expect(throws: (any Error).self) { try db.put(views("part", count: 1, partitioned: nil)) }
    }

    @Test("an import counts a partitioned view that another design document has too as one index")
    func importSharesPartitionedIndexes() throws {
        let directory = TemporaryDirectory()
        let db = try partitionedDatabase(directory)
        let full = ViewIndexStore.maximumIndexes
        let first = try db.importDocuments(Data(views("part", count: full, partitioned: nil).utf8))
        #expect(first.imported == 1, "\(first.rejected)")
        // The same partitioned view shares the index: nothing more to build.
        let report = try db.importDocuments(Data(views("again", count: 1, partitioned: true).utf8))
        #expect(report.imported == 1, "\(report.rejected)")
        #expect(try db.designDocument("again") != nil)
        // As a put stores it.
        try db.put(views("more", count: 1, partitioned: nil))
    }
}
