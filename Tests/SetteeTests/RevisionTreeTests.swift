import Foundation
import Testing
@testable import SetteeStorage
@testable import Settee

/// Revision trees, as CouchDB keeps them: replicated writes (`new_edits:
/// false`) merge revision paths, conflicting leaves, the winner CouchDB
/// picks, edits and deletions of losing leaves, `_revs_limit` and reopening.
@Suite("Revision trees")
struct RevisionTreeTests {
    let directory = TemporaryDirectory()

    func open() throws -> Database {
        try Database(at: directory.url.appendingPathComponent("db"))
    }

    /// A revision `N-` followed by 32 copies of `digit`.
    static func rev(_ generation: Int, _ digit: Character) -> String {
        "\(generation)-" + String(repeating: digit, count: 32)
    }

    /// A replicated document with `_revisions` built from the digits given (newest first).
    static func replicated(_ id: String, _ generation: Int, _ digits: [Character], _ members: String = #""v":1"#,
                           deleted: Bool = false) -> String {
        let ids = digits.map { "\"" + String(repeating: $0, count: 32) + "\"" }.joined(separator: ",")
        return #"{"_id":"\#(id)","_rev":"\#(rev(generation, digits[0]))","_revisions":{"start":\#(generation),"ids":[\#(ids)]}"#
            + (deleted ? #","_deleted":true"# : "") + (members.isEmpty ? "" : "," + members) + "}"
    }

    func write(_ db: Database, _ documents: String...) throws -> [Result<WriteResult?, DocumentError>] {
        try db.putReplicated(documents)
    }

    @Test("a replicated write merges its path: one extending the leaf moves it on, one branching off makes a conflict")
    func mergingPaths() throws {
        let db = try open()
        _ = try write(db, Self.replicated("d", 2, ["b", "a"], #""v":2"#))
        #expect(try db.document("d")?.revision.description == Self.rev(2, "b"))
        // Extends 2-b: no conflict.
        _ = try write(db, Self.replicated("d", 3, ["c", "b", "a"], #""v":3"#))
        var revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.leaves.map(\.revision.description) == [Self.rev(3, "c")])
        #expect(revisions.history(of: Revision(Self.rev(3, "c"))!).map(\.description) == [Self.rev(3, "c"), Self.rev(2, "b"), Self.rev(1, "a")])
        // Branches off 1-a: a conflict that loses (generation 2 < 3).
        _ = try write(db, Self.replicated("d", 2, ["e", "a"], #""v":"e""#))
        revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.winner.revision.description == Self.rev(3, "c"))
        #expect(revisions.conflicts.map(\.description) == [Self.rev(2, "e")])
        #expect(try db.document("d")?.json == #"{"_id":"d","_rev":"\#(Self.rev(3, "c"))","v":3}"#)
        let loser = try #require(try db.document("d", revision: Revision(Self.rev(2, "e"))!))
        #expect(loser.json == #"{"_id":"d","_rev":"\#(Self.rev(2, "e"))","v":"e"}"#)
        // A revision already known writes nothing.
        let before = try db.lastSequence()
        let again = try write(db, Self.replicated("d", 2, ["b", "a"]))
        #expect(try again[0].get() == nil)
        #expect(try db.lastSequence() == before)
        #expect(try db.info().documentCount == 1)
    }

    @Test("the winner: live leaves beat deleted ones, then the higher generation, then the greater revision id")
    func winnerChoice() throws {
        let db = try open()
        _ = try write(db, Self.replicated("d", 1, ["1"]), Self.replicated("d", 1, ["f"]))
        #expect(try db.document("d")?.revision.description == Self.rev(1, "f"))
        // A higher generation on the other branch wins over the greater id.
        _ = try write(db, Self.replicated("d", 2, ["2", "1"]))
        #expect(try db.document("d")?.revision.description == Self.rev(2, "2"))
        #expect(try db.revisions(of: "d")?.conflicts.map(\.description) == [Self.rev(1, "f")])
        // Deleting the winner's branch: the live leaf wins although its generation is lower.
        _ = try write(db, Self.replicated("d", 3, ["3", "2", "1"], "", deleted: true))
        let revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.winner.revision.description == Self.rev(1, "f"))
        #expect(revisions.conflicts.isEmpty)
        #expect(revisions.deletedConflicts.map(\.description) == [Self.rev(3, "3")])
        #expect(try db.document("d") != nil)
        // Every leaf deleted: the document reads as deleted, at the highest deleted leaf.
        _ = try write(db, Self.replicated("d", 2, ["9", "f"], "", deleted: true))
        #expect(try db.document("d") == nil)
        #expect(try db.documentIncludingDeleted("d")?.revision.description == Self.rev(3, "3"))
        #expect(try db.info().documentCount == 0)
    }

    @Test("a normal write may extend a losing leaf; deleting the losing leaves resolves the conflict")
    func updatingAndDeletingALoser() throws {
        let db = try open()
        _ = try write(db, Self.replicated("d", 2, ["b", "a"], #""v":"b""#), Self.replicated("d", 2, ["c", "a"], #""v":"c""#))
        let winner = try #require(try db.document("d"))
        #expect(winner.revision.description == Self.rev(2, "c"))
        // A write that names no leaf is a conflict, as before.
        #expect(throws: DocumentError.self) { try db.put(#"{"_id":"d","_rev":"\#(Self.rev(1, "a"))","v":0}"#) }
        #expect(throws: DocumentError.self) { try db.put(#"{"_id":"d","v":0}"#) }
        // Extending the loser 2-b to generation 3 makes it the winner.
        let extended = try db.put(#"{"_id":"d","_rev":"\#(Self.rev(2, "b"))","v":"b3"}"#)
        #expect(extended.revision.generation == 3)
        #expect(try db.document("d")?.revision == extended.revision)
        #expect(try db.revisions(of: "d")?.conflicts.map(\.description) == [Self.rev(2, "c")])
        // Deleting the losing leaf resolves the conflict; the winner stays.
        let deletion = try db.delete("d", revision: Revision(Self.rev(2, "c"))!)
        #expect(deletion.revision.generation == 3)
        let revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.conflicts.isEmpty)
        #expect(revisions.deletedConflicts == [deletion.revision])
        #expect(try db.document("d")?.json == #"{"_id":"d","_rev":"\#(extended.revision)","v":"b3"}"#)
        // The winner is edited as usual, and the changes feed lists the document once, at its winner.
        let next = try db.put(#"{"_id":"d","_rev":"\#(extended.revision)","v":4}"#)
        #expect(try db.changes().map(\.revision) == [next.revision])
        #expect(try db.info().documentCount == 1)
    }

    @Test("views and find see the winner")
    func viewsSeeTheWinner() throws {
        let db = try open()
        try db.put(#"{"_id":"_design/app","views":{"v":{"map":"function (doc) { emit(doc.v, null); }"}}}"#)
        _ = try write(db, Self.replicated("d", 1, ["a"], #""v":"a""#))
        #expect(try db.query("app/v").rows.map { try $0.key } == [.string("a")])
        _ = try write(db, Self.replicated("d", 1, ["b"], #""v":"b""#))
        #expect(try db.query("app/v").rows.map { try $0.key } == [.string("b")])
        // A losing branch changes nothing the view shows.
        _ = try write(db, Self.replicated("d", 1, ["0"], #""v":"0""#))
        #expect(try db.query("app/v").rows.map { try $0.key } == [.string("b")])
        try db.delete("d", revision: Revision(Self.rev(1, "b"))!)
        #expect(try db.query("app/v").rows.map { try $0.key } == [.string("a")])
    }

    @Test("_revs_limit prunes each branch to that many revisions; the pruned revisions are no longer known")
    func revisionsLimit() throws {
        let db = try open()
        _ = try db.putReplicated([Self.replicated("d", 5, ["5", "4", "3", "2", "1"])], revisionsLimit: 3)
        let revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.history(of: Revision(Self.rev(5, "5"))!).map(\.description) == [Self.rev(5, "5"), Self.rev(4, "4"), Self.rev(3, "3")])
        #expect(!revisions.contains(Revision(Self.rev(2, "2"))!))
        let difference = try db.revisionsDifference([("d", [Revision(Self.rev(4, "4"))!, Revision(Self.rev(2, "2"))!, Revision(Self.rev(6, "6"))!])])
        #expect(difference.first?.difference.missing.map(\.description) == [Self.rev(2, "2"), Self.rev(6, "6")])
        #expect(difference.first?.difference.possibleAncestors.map(\.description) == [Self.rev(5, "5")])
    }

    @Test("trees survive reopening the database")
    func reopen() throws {
        do {
            let db = try open()
            _ = try write(db, Self.replicated("d", 2, ["b", "a"], #""v":"b""#), Self.replicated("d", 2, ["c", "a"], #""v":"c""#))
            db.close()
        }
        let db = try open()
        let revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.leaves.map(\.revision.description) == [Self.rev(2, "c"), Self.rev(2, "b")])
        #expect(try db.document("d", revision: Revision(Self.rev(2, "b"))!)?.json.contains(#""v":"b""#) == true)
    }

    @Test("a document written without replication has no tree; its one revision is its history")
    func plainDocuments() throws {
        let db = try open()
        let written = try db.put(#"{"_id":"p","v":1}"#)
        let revisions = try #require(try db.revisions(of: "p"))
        #expect(revisions.leaves == [DocumentRevisions.Leaf(revision: written.revision, isDeleted: false)])
        #expect(try db.store.environment.read { try $0.get(db.store.revisionTrees!, Array("p".utf8)) } == nil)
        // A replicated revision that extends it keeps its history from there on.
        let next = Revision(generation: 2, hash: Array(repeating: 0xab, count: 16))
        _ = try db.putReplicated([#"{"_id":"p","_rev":"\#(next)","_revisions":{"start":2,"ids":["\#(next.hash.hexString)","\#(written.revision.hash.hexString)"]},"v":2}"#])
        #expect(try db.revisions(of: "p")?.leaves.map(\.revision) == [next])
        #expect(try db.revisions(of: "p")?.history(of: next) == [next, written.revision])
        #expect(try db.revisionsDifference([("p", [written.revision, next])]).isEmpty)
    }

    @Test("purging a losing leaf removes that leaf only; purging every leaf removes the document")
    func purgeALeaf() throws {
        let db = try open()
        _ = try write(db, Self.replicated("d", 2, ["b", "a"], #""v":"b""#), Self.replicated("d", 2, ["c", "a"], #""v":"c""#))
        let result = try db.purge("d", revisions: [Revision(Self.rev(2, "c"))!])
        #expect(result.purged["d"]?.map(\.description) == [Self.rev(2, "c")])
        #expect(try db.document("d")?.revision.description == Self.rev(2, "b"))
        #expect(try db.revisions(of: "d")?.leaves.count == 1)
        try db.purge("d", revisions: [Revision(Self.rev(2, "b"))!])
        #expect(try db.documentIncludingDeleted("d") == nil)
        #expect(try db.info().documentCount == 0)
    }

    @Test("replicated writes with attachments keep each leaf's attachments, and a purge releases them all")
    func attachments() throws {
        let db = try open()
        _ = try write(db, Self.replicated("d", 1, ["a"], #""_attachments":{"x.txt":{"content_type":"text/plain","data":"aGVsbG8="}}"#),
                      Self.replicated("d", 1, ["b"], #""_attachments":{"y.txt":{"content_type":"text/plain","data":"b25seQ=="}}"#))
        #expect(try db.attachment("y.txt", of: "d") != nil)
        #expect(try db.store.attachmentProblems() == [])
        try db.purge("d", revisions: [Revision(Self.rev(1, "b"))!])
        #expect(try db.attachment("x.txt", of: "d") != nil)
        #expect(try db.store.attachmentProblems() == [])
        try db.purge("d")
        #expect(try db.store.attachmentProblems() == [])
    }

    @Test("bad replicated writes are refused with what was wrong")
    func badInput() throws {
        let db = try open()
        let results = try db.putReplicated([#"{"_id":"d","v":1}"#,
                                            #"{"_id":"d","_rev":"\#(Self.rev(2, "a"))","_revisions":{"start":2,"ids":[1]}}"#])
        for result in results {
            guard case .failure(let error) = result else { Issue.record("accepted: \(result)"); continue }
            #expect(error.code == .badRequest)
        }
    }

    @Test("find with conflicts: true adds _conflicts and matches on it, through _all_docs and a JSON index; views see _conflicts")
    func findConflicts() throws {
        let db = try open()
        try db.put(#"{"_id":"plain","v":0}"#)
        _ = try write(db, Self.replicated("d", 1, ["b"], #""v":2"#), Self.replicated("d", 1, ["a"], #""v":1"#))
        var request = FindRequest(selector: ["v": ["$gt": 0]])
        #expect(try db.find(request).found.map { $0.json["_conflicts"] } == [nil])
        request.conflicts = true
        #expect(try db.find(request).found.map { $0.json["_conflicts"] } == [.array([.string(Self.rev(1, "a"))])])
        var onConflicts = FindRequest(selector: ["_conflicts": ["$exists": true]])
        onConflicts.conflicts = true
        #expect(try db.find(onConflicts).found.map { $0.json["_id"] } == ["d"])
        try db.createIndex(IndexRequest(json: #"{"index": {"fields": ["_conflicts"]}}"#))
        let indexed = try db.find(onConflicts)
        #expect(indexed.found.map { $0.json["_id"] } == ["d"])
        #expect(indexed.found.first?.json["_conflicts"] == .array([.string(Self.rev(1, "a"))]))
        #expect(indexed.found.first?.json["_rev"] == .string(Self.rev(1, "b")))
        try db.put(#"{"_id":"_design/app","views":{"c":{"map":"function (doc) { if (doc._conflicts) emit(doc._conflicts, null); }"}}}"#)
        #expect(try db.query("app/c").rows.map(\.id) == ["d"])
        // Resolved: the index and the view no longer list it.
        try db.delete("d", revision: Revision(Self.rev(1, "a"))!)
        #expect(try db.find(onConflicts).found.isEmpty)
        #expect(try db.query("app/c").rows.isEmpty)
    }

    @Test("revision ids are CouchDB's: the same edit gets the same id as in CouchDB 3.5")
    func couchRevisionIDs() throws {
        let db = try open()
        // Revisions CouchDB's own test suites expect for these documents.
        #expect(try db.put(#"{"_id":"doc","a":2}"#).revision.description == "1-3975759ccff3842adf690a5c10caee42")
        #expect(try db.put(#"{"_id":"empty"}"#).revision.description == "1-967a00dff5e02add41819138abb3284d")
        #expect(try db.put(#"{"_id":"p", "partitioned_doc" : true}"#).revision.description == "1-43d86359741cb629c0953a2beb6e9d7a")
        // Integers and floats are different terms; so are a string and its escaped spelling's twin.
        let integer = try db.put(#"{"_id":"i","n":1}"#).revision
        let float = try db.put(#"{"_id":"f","n":1.0}"#).revision
        #expect(integer.hash != float.hash)
        let escaped = try db.put(#"{"_id":"e","s":"\u00e9"}"#).revision
        let plain = try db.put(#"{"_id":"e2","s":"é"}"#).revision
        #expect(escaped.hash == plain.hash)
    }
}
