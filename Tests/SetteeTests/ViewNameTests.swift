import Foundation
import Testing
@testable import Settee

/// `é` as one code point (NFC) and as `e` with a combining accent (NFD):
/// equal as Swift strings, different bytes, different JSON member names.
private let composed = "\u{E9}"
private let decomposed = "e\u{301}"

/// A design document `_design/names` with the given views: (name, value emitted).
private func namesDesign(_ views: [(name: String, emits: Int)]) -> String {
    let members = views.map { #""\#($0.name)": {"map": "function (doc) { emit(\#($0.emits), null); }"}"# }
    return #"{"_id": "_design/names", "views": {\#(members.joined(separator: ", "))}}"#
}

@Suite("View names compared byte for byte", .timeLimit(.minutes(1)))
struct ViewNameTests {
    private func openDatabase(_ directory: TemporaryDirectory) throws -> Database {
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.put(#"{"_id": "a"}"#)
        return db
    }

    @Test("Views named by the composed and the decomposed é are two views, each queried by its own name")
    func composedAndDecomposedNames() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        try db.loadDesignDocuments(from: directory.file("names.json", contents: namesDesign([(composed, 1), (decomposed, 2)])))
        #expect(try db.query("names/" + composed).rows.map(\.keyJSON) == ["1"])
        #expect(try db.query("names/" + decomposed).rows.map(\.keyJSON) == ["2"])
        #expect(try db.query(designDocument: "names", view: decomposed).rows.map(\.keyJSON) == ["2"])
    }

    @Test("Renaming a view from the composed to the decomposed é is an edit: stored, and the old name is gone")
    func renameBetweenNormalFormsIsStored() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let file = directory.file("names.json", contents: namesDesign([(composed, 1)]))
        try db.loadDesignDocuments(from: file)
        #expect(try db.query("names/" + composed).rows.map(\.keyJSON) == ["1"])
        try Data(namesDesign([(decomposed, 1)]).utf8).write(to: file)
        try db.loadDesignDocuments(from: file)
        #expect(try db.query("names/" + decomposed).rows.map(\.keyJSON) == ["1"])
        #expect { _ = try db.query("names/" + composed) } throws: { ($0 as? any SetteeError)?.errorCode == .notFound }
    }

    @Test("Two views with the same name in one design document are refused at load, naming the view")
    func duplicateNamesRefused() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let file = directory.file("names.json", contents: namesDesign([("twice", 1), ("other", 3), ("twice", 2)]))
        #expect { _ = try db.loadDesignDocuments(from: file) } throws: { error in
            guard let problem = (error as? DesignDocumentErrors)?.errors.first else { return false }
            return problem.view == "twice" && problem.file == file.path && problem.designDocument == "_design/names"
                && problem.reason.contains("more than once")
        }
        #expect(try db.designDocument("names") == nil)
    }

    @Test("A view with an empty name is refused at load")
    func emptyNameRefused() throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let file = directory.file("names.json", contents: namesDesign([("", 1), ("fine", 2)]))
        #expect { _ = try db.loadDesignDocuments(from: file) } throws: { error in
            guard let problem = (error as? DesignDocumentErrors)?.errors.first else { return false }
            return problem.view == "" && problem.reason.contains("empty")
        }
        #expect(try db.designDocument("names") == nil)
    }

    @Test("A watched file renaming a view between normal forms reports the rename")
    func watchReportsRenameBetweenNormalForms() async throws {
        let directory = TemporaryDirectory()
        let db = try openDatabase(directory)
        let folder = directory.url.appendingPathComponent("DesignDocs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("names.json")
        try Data(namesDesign([(composed, 1)]).utf8).write(to: file)
        var reloads = db.watchDesignDocuments(in: folder).makeAsyncIterator()
        #expect(try await reloads.next()?.loaded.first?.changedViews.map { Array($0.utf8) } == [Array(composed.utf8)])
        try Data(namesDesign([(decomposed, 1)]).utf8).write(to: file)
        let rename = try #require(try await reloads.next())
        #expect(rename.loaded.first?.changedViews.map { Array($0.utf8) } == [Array(decomposed.utf8)])
        #expect(rename.loaded.first?.removedViews.map { Array($0.utf8) } == [Array(composed.utf8)])
    }
}

@Suite("Design document ids compared byte for byte", .timeLimit(.minutes(1)))
struct DesignDocumentIDTests {
    @Test("Design documents named by the composed and the decomposed é are two, each queried by its own id")
    func composedAndDecomposedIDs() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.put(#"{"_id": "a"}"#)
        for (index, name) in [composed, decomposed].enumerated() {
            let design = #"{"_id": "_design/\#(name)", "views": {"v": {"map": "function (doc) { emit(\#(index), null); }"}}}"#
            try db.loadDesignDocuments(from: directory.file("\(index).json", contents: design))
        }
        // Each in turn, twice, with no write between: what a query remembers of one is not the other's.
        for _ in 0..<2 {
            #expect(try db.query(composed + "/v").rows.map(\.keyJSON) == ["0"])
            #expect(try db.query(decomposed + "/v").rows.map(\.keyJSON) == ["1"])
        }
    }
}
