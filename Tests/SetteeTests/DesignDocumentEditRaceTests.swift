import Foundation
import Testing
import SetteeStorage
@testable import Settee

/// A design document `_design/r` with one view `v` whose map emits `key`.
private func raceDesign(emitting key: String, revision: String? = nil) -> String {
    let rev = revision.map { #""_rev": "\#($0)", "# } ?? ""
    return #"{"_id": "_design/r", \#(rev)"views": {"v": {"map": "function (doc) { if (doc.n !== undefined) emit(\#(key), null); }"}}}"#
}

@Suite("Queries racing an edit of their design document", .timeLimit(.minutes(1)))
struct DesignDocumentEditRaceTests {
    /// Another writer (here: the same database, written to directly, as
    /// another process's `design load` stores it) edits the view while the
    /// query is building its index. The query's clean-up must not remove the
    /// index it has just built and then answer from nothing.
    @Test("A query whose design document is edited mid-build answers with the rows of the version it built")
    func editDuringBuild() throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        for n in 0..<5 { try db.put(#"{"_id": "d\#(n)", "n": \#(n)}"#) }
        try db.loadDesignDocuments(from: directory.file("r.json", contents: raceDesign(emitting: "doc.n")))
        let revision = try #require(try db.document("_design/r")).revision.description

        var edited = false
        let result = try db.query("r/v") { _ in
            guard !edited else { return }
            edited = true
            // Stored as another process would: its own clean-up runs there, not here.
            let edit = raceDesign(emitting: "doc.n * 10", revision: revision)
            _ = try? edit.utf8CString.withUnsafeBytes { bytes in
                try db.store.write(try DocumentEdit(json: UnsafeRawBufferPointer(rebasing: bytes.dropLast())))
            }
        }
        #expect(edited)
        #expect(result.totalRows == 5)
        #expect(result.rows.map(\.keyJSON) == ["0", "1", "2", "3", "4"])
        // The next query answers from the edited version.
        #expect(try db.query("r/v").rows.map(\.keyJSON) == ["0", "10", "20", "30", "40"])
    }

    /// Another process loads the edited design document while the build is
    /// under way: its clean-up removes the index this process has committed
    /// part of. The build must not go on writing the rest into an index that
    /// is gone (a partial index, answered as if complete), nor answer from nothing.
    @Test("A build whose index another process removes mid-way answers in full, from one version or the other")
    func indexRemovedByAnotherProcessDuringBuild() throws {
        let settee = try SetteeExecutable.find()
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("db")
        var options = Database.Options()
        options.javaScriptWorkers = 1
        // Two documents a batch, each batch written at once: the build commits several times.
        options.indexBatchSize = 2
        options.indexBufferBytes = 1
        let db = try Database(at: path, options: options)
        for n in 0..<10 { try db.put(#"{"_id": "d\#(n)", "n": \#(n)}"#) }
        try db.loadDesignDocuments(from: directory.file("r.json", contents: raceDesign(emitting: "doc.n")))
        let revision = try #require(try db.document("_design/r")).revision.description
        let edited = directory.file("edited.json", contents: raceDesign(emitting: "doc.n * 10", revision: revision))

        var calls = 0
        var loadStatus: Int32?
        let result = try db.query("r/v") { _ in
            calls += 1
            guard calls == 3 else { return }
            loadStatus = try? settee.run(["--db", path.path, "design", "load", edited.path], in: directory.url).exitStatus
        }
        #expect(loadStatus == 0)
        let keys = result.rows.map(\.keyJSON)
        let before = (0..<10).map { "\($0)" }
        let after = (0..<10).map { "\($0 * 10)" }
        #expect(keys == before || keys == after, "rows: \(keys)")
        #expect(result.totalRows == 10)
        #expect(try db.query("r/v").rows.map(\.keyJSON) == after)
    }
}
