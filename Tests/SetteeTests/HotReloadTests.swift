import Foundation
import Testing
@testable import Settee

private func peopleDesign(byCity: String = "emit(doc.city, doc.name)", byName: String = "emit(doc.name, null)") -> String {
    #"""
    {"_id": "_design/people", "views": {
      "by_city": {"map": "function (doc) { if (doc.type === 'contact') \#(byCity); }"},
      "by_name": {"map": "function (doc) { if (doc.type === 'contact') \#(byName); }", "reduce": "_count"}
    }}
    """#
}

/// A database and a folder of design documents beside it.
private struct WatchedFolder {
    let directory = TemporaryDirectory()
    let folder: URL
    let db: Database

    init() throws {
        folder = directory.url.appendingPathComponent("DesignDocs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var options = Database.Options()
        options.javaScriptWorkers = 1
        db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        try db.put(#"{"_id": "ann", "type": "contact", "city": "Oslo", "name": "Ann"}"#)
        try db.put(#"{"_id": "bob", "type": "contact", "city": "Bergen", "name": "Bob"}"#)
    }

    /// Writes a file in place, as an editor that does not save atomically does.
    @discardableResult
    func write(_ name: String, _ contents: String) throws -> URL {
        let file = folder.appendingPathComponent(name)
        try Data(contents.utf8).write(to: file)
        return file
    }

    func keys(_ view: String) throws -> [String] {
        try db.query(view, options: {
            var options = ViewQueryOptions()
            options.reduce = false
            return options
        }()).rows.map(\.keyJSON)
    }
}

@Suite("Design documents reloaded from a watched folder", .timeLimit(.minutes(1)))
struct HotReloadTests {
    @Test("The first element loads the folder; a good edit swaps in and changes only the edited view's signature")
    func goodEdit() async throws {
        let watched = try WatchedFolder()
        let file = try watched.write("people.json", peopleDesign())
        var reloads = watched.db.watchDesignDocuments(in: watched.folder).makeAsyncIterator()

        let first = try #require(try await reloads.next())
        #expect(first.errors.isEmpty)
        #expect(first.loaded.map(\.file) == [file.path])
        #expect(first.loaded.first?.changedViews == ["by_city", "by_name"])
        #expect(try watched.keys("people/by_city") == [#""Bergen""#, #""Oslo""#])
        let before = try await watched.db.viewInfo()
        let byNameBefore = try #require(before.first { $0.path == "people/by_name" })
        #expect(byNameBefore.rowCount == 2)

        try watched.write("people.json", peopleDesign(byCity: "emit(doc.city.toUpperCase(), doc.name)"))
        let edit = try #require(try await reloads.next())
        #expect(edit.errors.isEmpty)
        #expect(edit.loaded.map(\.designDocument.id) == ["_design/people"])
        #expect(edit.loaded.first?.changedViews == ["by_city"])
        #expect(edit.loaded.first?.removedViews == [])

        // Before any query: by_name keeps its index; by_city has a new, empty one.
        let after = try await watched.db.viewInfo()
        let byNameAfter = try #require(after.first { $0.path == "people/by_name" })
        #expect(byNameAfter.signature == byNameBefore.signature)
        #expect(byNameAfter.indexedSequence == byNameBefore.indexedSequence)
        #expect(byNameAfter.rowCount == 2)
        let byCity = try #require(after.first { $0.path == "people/by_city" })
        #expect(byCity.signature != before.first { $0.path == "people/by_city" }?.signature)
        #expect(byCity.rowCount == 0)
        #expect(try watched.keys("people/by_city") == [#""BERGEN""#, #""OSLO""#])
    }

    @Test("A broken edit is reported with file, view and line, and the previous version stays live")
    func brokenEdit() async throws {
        let watched = try WatchedFolder()
        let file = try watched.write("people.json", peopleDesign())
        var reloads = watched.db.watchDesignDocuments(in: watched.folder).makeAsyncIterator()
        _ = try await reloads.next()
        let revision = try #require(try await watched.db.document("_design/people")).revision

        // A syntax error on the map function's second line.
        try watched.write("people.json", peopleDesign(byCity: #"\n  emit(doc.city doc.name)"#))
        let broken = try #require(try await reloads.next())
        #expect(broken.loaded.isEmpty)
        let error = try #require(broken.errors.first)
        #expect(error.file == file.path)
        #expect(error.designDocument == "_design/people")
        #expect(error.view == "by_city")
        #expect(error.function == "map")
        #expect(error.line == 2)
        #expect(error.fileLine == 2, "the file's line where by_city's map is written")
        #expect(error.description.hasPrefix("\(file.path):2, _design/people, view \"by_city\", map, line 2, column "))
        #expect(try await watched.db.document("_design/people")?.revision == revision, "nothing was stored")
        #expect(try watched.keys("people/by_city") == [#""Bergen""#, #""Oslo""#], "the previous version answers")

        // Not JSON at all: the file's line and column.
        try watched.write("people.json", "{\n  \"_id\": \"_design/people\",\n  \"views\": {\n}")
        let notJSON = try #require(try await reloads.next())
        #expect(notJSON.errors.first?.file == file.path)
        #expect(notJSON.errors.first?.line == 4)
        #expect(notJSON.errors.first?.description.contains("\(file.path), line 4, column 2: invalid JSON") == true)

        // Fixed: it loads.
        try watched.write("people.json", peopleDesign(byCity: "emit(doc.name, doc.city)"))
        let fixed = try #require(try await reloads.next())
        #expect(fixed.errors.isEmpty)
        #expect(fixed.loaded.first?.changedViews == ["by_city"])
        #expect(try watched.keys("people/by_city") == [#""Ann""#, #""Bob""#])
    }

    @Test("Deleting the file deletes its design document and its indexes")
    func deletedFile() async throws {
        let watched = try WatchedFolder()
        let file = try watched.write("people.json", peopleDesign())
        try watched.write("other.json", #"{"_id": "_design/other", "views": {"all": {"map": "function (doc) { emit(doc._id, null); }"}}}"#)
        var reloads = watched.db.watchDesignDocuments(in: watched.folder).makeAsyncIterator()
        #expect(try await reloads.next()?.loaded.count == 2)
        _ = try watched.keys("people/by_city")

        try FileManager.default.removeItem(at: file)
        let removal = try #require(try await reloads.next())
        #expect(removal.removed.map(\.designDocument) == ["_design/people"])
        #expect(removal.removed.map(\.file) == [file.path])
        #expect(try await watched.db.designDocument("people") == nil)
        #expect(try await watched.db.viewInfo().map(\.path) == ["other/all"])
        #expect { try watched.db.query("people/by_city") } throws: { ($0 as? any SetteeError)?.errorCode == .notFound }
    }

    /// `git checkout`, `rm; cp` and some editors replace a file by deleting
    /// it and creating it again: the design document must not be deleted
    /// (and its indexes dropped and rebuilt from nothing) in between.
    @Test("A file deleted and created again with the same content shortly after is no change")
    func fileReplacedByDeleteThenCreate() async throws {
        let watched = try WatchedFolder()
        let file = try watched.write("people.json", peopleDesign())
        // Iterated all along, as `settee watch` does: each change is looked at as it comes.
        let (elements, sink) = AsyncThrowingStream.makeStream(of: DesignDocumentReload.self)
        let watch = watched.db.watchDesignDocuments(in: watched.folder)
        let iteration = Task {
            do {
                for try await reload in watch { sink.yield(reload) }
                sink.finish()
            } catch {
                sink.finish(throwing: error)
            }
        }
        defer { iteration.cancel() }
        var reloads = elements.makeAsyncIterator()
        #expect(try await reloads.next()?.loaded.count == 1)
        _ = try watched.keys("people/by_city")
        let revision = try #require(try await watched.db.document("_design/people")).revision
        let indexes = try await watched.db.viewInfo()

        try FileManager.default.removeItem(at: file)
        // Long enough for the watch to see the folder without the file.
        try await Task.sleep(for: .milliseconds(300))
        // Moved into place whole: a scan never reads it half written.
        try Data(peopleDesign().utf8).write(to: file, options: .atomic)
        // Something else changes, so that the watch has an element to give.
        let other = watched.folder.appendingPathComponent("other.json")
        try Data(#"{"_id": "_design/other", "views": {"all": {"map": "function (doc) { emit(doc._id, null); }"}}}"#.utf8)
            .write(to: other, options: .atomic)
        let next = try #require(try await reloads.next())
        #expect(next.removed.isEmpty)
        #expect(next.loaded.map(\.file) == [other.path], "\(next)")
        #expect(try await watched.db.document("_design/people")?.revision == revision)
        #expect(try await watched.db.viewInfo().filter { $0.path.hasPrefix("people/") } == indexes)
    }

    @Test("A live query on a reloaded view runs again on the new definition")
    func liveQueryFollowsReload() async throws {
        let watched = try WatchedFolder()
        try watched.write("people.json", peopleDesign())
        var reloads = watched.db.watchDesignDocuments(in: watched.folder).makeAsyncIterator()
        _ = try await reloads.next()
        var options = ViewQueryOptions()
        options.reduce = false
        var live = watched.db.liveQuery("people/by_city", options: options).makeAsyncIterator()
        #expect(try await live.next()?.rows.map(\.keyJSON) == [#""Bergen""#, #""Oslo""#])

        try watched.write("people.json", peopleDesign(byCity: "emit(doc.name.length, doc.name)"))
        #expect(try await reloads.next()?.loaded.first?.changedViews == ["by_city"])
        #expect(try await live.next()?.rows.map(\.keyJSON) == ["3", "3"])

        // A broken edit changes nothing the live query sees.
        try watched.write("people.json", peopleDesign(byCity: "emit("))
        #expect(try await reloads.next()?.errors.count == 1)
        try await watched.db.put(#"{"_id": "cid", "type": "contact", "city": "Tromsø", "name": "Cid"}"#)
        #expect(try await live.next()?.rows.map(\.id) == ["ann", "bob", "cid"])
    }

    @Test("Watching a folder that does not exist fails naming it")
    func missingFolder() async throws {
        let watched = try WatchedFolder()
        let missing = watched.directory.url.appendingPathComponent("nowhere")
        var reloads = watched.db.watchDesignDocuments(in: missing).makeAsyncIterator()
        let error = try await #require(throws: DesignDocumentError.self) { try await reloads.next() }
        #expect(error.file == missing.path)
        #expect(error.reason.hasPrefix("cannot watch the folder"))
    }
}
