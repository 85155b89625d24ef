import Foundation
import Testing
import SetteeViews
@testable import Settee

/// A design document with `count` views, `v<first>`…, each with a map of its
/// own (so each has its own index); the same numbers make the same views.
func manyViews(_ name: String, count: Int, from first: Int = 0) -> String {
    let views = (first..<first + count).map { #""v\#($0)": {"map": "function (doc) { emit(\#($0), null); }"}"# }
    return #"{"_id": "_design/\#(name)", "views": {\#(views.joined(separator: ", "))}}"#
}

@Suite("Views past what the database can index", .timeLimit(.minutes(10)), .ownThread)
struct ViewCountLimitTests {
    private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
        var options = Database.Options()
        options.javaScriptWorkers = 1
        return try Database(at: directory.url.appendingPathComponent("db"), options: options)
    }

    @Test("A design document with more views than the database can index is refused at load and at put; the database keeps working")
    func tooManyViewsRefused() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.put(#"{"_id": "a", "n": 1}"#)
        let file = directory.file("many.json", contents: manyViews("many", count: 1_500))

        #expect { _ = try db.loadDesignDocuments(from: file) } throws: { error in
            guard let errors = error as? DesignDocumentErrors, let first = errors.errors.first else { return false }
            return errors.errorCode == .invalidDesignDocument && first.designDocument == "_design/many"
                && first.file == file.path && first.reason.contains("1500") && first.reason.contains("\(ViewIndexStore.maximumIndexes)")
        }
        #expect(try db.designDocument("many") == nil)
        #expect { _ = try db.put(manyViews("many", count: 1_500)) } throws: { error in
            (error as? DesignDocumentError)?.designDocument == "_design/many"
                && (error as? any SetteeError)?.errorCode == .invalidDesignDocument
        }
        #expect(try db.designDocument("many") == nil)

        // Everything else still works.
        #expect(try db.info().documentCount == 1)
        try db.loadDesignDocuments(from: directory.file("few.json", contents: manyViews("few", count: 3)))
        #expect(try db.query("few/v2").rows.map(\.keyJSON) == ["2"])
        #expect(try db.viewInfo().count == 3)
    }

    @Test("The limit counts the distinct indexes of every design document in the database")
    func limitIsForTheWholeDatabase() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("first.json", contents: manyViews("first", count: 700)))
        // The same 700 views again share the first's indexes.
        try db.loadDesignDocuments(from: directory.file("same.json", contents: manyViews("same", count: 700)))
        // 700 more of their own would need 1,400.
        #expect(throws: DesignDocumentErrors.self) {
            _ = try db.loadDesignDocuments(from: directory.file("second.json", contents: manyViews("second", count: 700, from: 700)))
        }
        #expect(try db.designDocument("second") == nil)
        // Up to the limit exactly is stored.
        let room = ViewIndexStore.maximumIndexes - 700
        try db.loadDesignDocuments(from: directory.file("second.json", contents: manyViews("second", count: room, from: 700)))
        // Replacing a design document counts its new views, not its old ones as well.
        try db.loadDesignDocuments(from: directory.file("second.json", contents: manyViews("second", count: room, from: 5_000)))
        #expect(try db.designDocument("second")?.views.first?.name == "v5000")
    }

    @Test("An import refuses, with its line, a design document past the limit; the other documents are written and the database keeps working")
    func importRefusesTooManyViews() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let input = [#"{"_id": "a"}"#, manyViews("many", count: 1_500), manyViews("few", count: 2), #"{"_id": "b"}"#].joined(separator: "\n")
        let report = try db.importDocuments(Data(input.utf8))
        #expect(report.imported == 3)
        #expect(report.rejected.map(\.line) == [2])
        #expect(report.rejected.first?.error.code == .invalidDesignDocument, "\(report.rejected)")
        #expect(try db.designDocument("many") == nil)
        #expect(try db.info().documentCount == 3)
        #expect(try db.query("few/v1").rows.map(\.keyJSON) == ["1", "1"])
    }
}
