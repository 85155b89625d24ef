import Foundation
import Testing
@testable import SetteeStorage
@testable import Settee

/// Every document keeps its revision path, as CouchDB does: the ids of its
/// earlier revisions, stemmed at `_revs_limit`, for `_revisions`,
/// `_revs_diff` and replicated writes that continue it.
@Suite("Revision histories")
struct RevisionHistoryTests {
    let directory = TemporaryDirectory()

    func open() throws -> Database {
        try Database(at: directory.url.appendingPathComponent("db"))
    }

    /// Writes `d` `count` times (a first write and `count - 1` updates); the revisions, oldest first.
    func update(_ db: Database, _ id: String = "d", times count: Int) throws -> [Revision] {
        var revisions: [Revision] = []
        for value in 1...count {
            let rev = revisions.last.map { #","_rev":"\#($0)""# } ?? ""
            revisions.append(try db.put(#"{"_id":"\#(id)"\#(rev),"v":\#(value)}"#).revision)
        }
        return revisions
    }

    /// The stored record's flags of `id`: whether it has a tree.
    func hasTree(_ db: Database, _ id: String) throws -> Bool {
        try db.store.environment.read { transaction in
            let bytes = try #require(try transaction.get(db.store.docs, Array(id.utf8)))
            return try DocumentRecord(bytes: bytes, id: Array(id.utf8), path: "").hasRevisionTree
        }
    }

    @Test("a document written three times lists its three revisions, newest first; _revs_diff finds none missing")
    func updatedThreeTimes() throws {
        let db = try open()
        let written = try update(db, times: 3)
        let revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.leaves.map(\.revision) == [written[2]])
        #expect(revisions.history(of: written[2]) == written.reversed())
        #expect(revisions.contains(written[0]) && revisions.contains(written[1]))
        #expect(try db.revisionsDifference([("d", written)]).isEmpty)
        // An unknown revision is missing, the leaf its possible ancestor.
        let unknown = Revision(generation: 4, hash: Array(repeating: 0x44, count: 16))
        let difference = try db.revisionsDifference([("d", [written[1], unknown])])
        #expect(difference.first?.difference == RevisionsDifference(missing: [unknown], possibleAncestors: [written[2]]))
        // Plain reads are the leaf as before.
        #expect(try db.document("d")?.json == #"{"_id":"d","_rev":"\#(written[2])","v":3}"#)
        #expect(try !hasTree(db, "d"))
    }

    @Test("a replicated continuation (new_edits false, full _revisions) of a normally written document makes no conflict")
    func replicatedContinuation() throws {
        let db = try open()
        let written = try update(db, times: 2)
        let next = Revision(generation: 3, hash: Array(repeating: 0xcc, count: 16))
        let ids = ([next] + written.reversed()).map { "\"\($0.hash.hexString)\"" }.joined(separator: ",")
        let results = try db.putReplicated([#"{"_id":"d","_rev":"\#(next)","_revisions":{"start":3,"ids":[\#(ids)]},"v":"c"}"#])
        #expect(try results[0].get()?.revision == next)
        let revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.leaves.map(\.revision) == [next])
        #expect(revisions.conflicts.isEmpty && revisions.deletedConflicts.isEmpty)
        #expect(revisions.history(of: next) == [next] + written.reversed())
        #expect(try db.document("d")?.revision == next)
        // One leaf: no tree is kept, and a normal edit goes on from there.
        #expect(try !hasTree(db, "d"))
        let after = try db.put(#"{"_id":"d","_rev":"\#(next)","v":4}"#).revision
        #expect(try db.revisions(of: "d")?.history(of: after) == [after, next] + written.reversed())
        #expect(try db.info().documentCount == 1)
    }

    @Test("a replicated continuation with only the newest ids of _revisions also extends the document")
    func shortPathContinuation() throws {
        let db = try open()
        let written = try update(db, times: 3)
        let next = Revision(generation: 4, hash: Array(repeating: 0xdd, count: 16))
        _ = try db.putReplicated([#"{"_id":"d","_rev":"\#(next)","_revisions":{"start":4,"ids":["\#(next.hash.hexString)","\#(written[2].hash.hexString)"]}}"#])
        let revisions = try #require(try db.revisions(of: "d"))
        #expect(revisions.leaves.map(\.revision) == [next])
        #expect(revisions.history(of: next) == [next] + written.reversed())
    }

    @Test("histories are stemmed at the database's _revs_limit, which outlasts reopening")
    func stemming() throws {
        var written: [Revision] = []
        do {
            let db = try open()
            #expect(try db.revisionsLimit() == 1000)
            try db.setRevisionsLimit(3)
            written = try update(db, times: 5)
            #expect(try db.revisions(of: "d")?.history(of: written[4]) == [written[4], written[3], written[2]])
            let missing = try db.revisionsDifference([("d", written)])
            #expect(missing.first?.difference.missing == [written[0], written[1]])
            #expect(throws: DocumentError.self) { try db.setRevisionsLimit(0) }
            db.close()
        }
        let db = try open()
        #expect(try db.revisionsLimit() == 3)
        let sixth = try db.put(#"{"_id":"d","_rev":"\#(written[4])","v":6}"#).revision
        #expect(try db.revisions(of: "d")?.history(of: sixth) == [sixth, written[4], written[3]])
        // A limit of 1 keeps the leaf alone.
        try db.setRevisionsLimit(1)
        let seventh = try db.put(#"{"_id":"d","_rev":"\#(sixth)","v":7}"#).revision
        #expect(try db.revisions(of: "d")?.history(of: seventh) == [seventh])
        // Raised again, the history grows from what is kept.
        try db.setRevisionsLimit(10)
        let eighth = try db.put(#"{"_id":"d","_rev":"\#(seventh)","v":8}"#).revision
        #expect(try db.revisions(of: "d")?.history(of: eighth) == [eighth, seventh])
    }

    @Test("a deletion continues the history, and so does writing the document again; a purge removes it")
    func deletionAndPurge() throws {
        let db = try open()
        let written = try update(db, times: 2)
        let deleted = try db.delete("d", revision: written[1]).revision
        #expect(try db.revisions(of: "d")?.history(of: deleted) == [deleted] + written.reversed())
        let again = try db.put(#"{"_id":"d","v":"again"}"#).revision
        #expect(again.generation == 4)
        #expect(try db.revisions(of: "d")?.history(of: again) == [again, deleted] + written.reversed())
        try db.purge("d")
        #expect(try db.revisions(of: "d") == nil)
        #expect(try db.store.environment.read { try $0.get(db.store.revisionTrees!, Array("d".utf8)) } == nil)
        // Written anew after the purge: a first revision, with no history.
        let fresh = try db.put(#"{"_id":"d","v":"fresh"}"#).revision
        #expect(fresh.generation == 1)
        #expect(try db.revisions(of: "d")?.history(of: fresh) == [fresh])
        #expect(try db.info().documentCount == 1)
    }

    @Test("a conflict purged down to one leaf goes back to a record and its path, keeping the history")
    func conflictResolvedByPurge() throws {
        let db = try open()
        let written = try update(db, times: 2)
        let branch = Revision(generation: 2, hash: Array(repeating: 0xee, count: 16))
        _ = try db.putReplicated([#"{"_id":"d","_rev":"\#(branch)","_revisions":{"start":2,"ids":["\#(branch.hash.hexString)","\#(written[0].hash.hexString)"]},"v":"e"}"#])
        #expect(try db.revisions(of: "d")?.leaves.count == 2)
        #expect(try hasTree(db, "d"))
        let loser = try #require(try db.revisions(of: "d")?.conflicts.first)
        try db.purge("d", revisions: [loser])
        let winner = try #require(try db.document("d")).revision
        #expect(try !hasTree(db, "d"))
        #expect(try db.revisions(of: "d")?.history(of: winner).count == 2)
        #expect(try db.revisions(of: "d")?.history(of: winner).last == written[0])
        let next = try db.put(#"{"_id":"d","_rev":"\#(winner)","v":3}"#).revision
        #expect(try db.revisions(of: "d")?.history(of: next) == [next, winner, written[0]])
    }

    @Test("a document written before histories were kept has its current revision for history, and goes on from there")
    func documentsWithoutHistory() throws {
        let db = try open()
        let written = try update(db, times: 3)
        // As a Settee that kept no history left it: no path stored.
        try db.store.environment.write { _ = try $0.delete(db.store.revisionTrees!, Array("d".utf8)) }
        #expect(try db.revisions(of: "d")?.history(of: written[2]) == [written[2]])
        #expect(try db.revisionsDifference([("d", written)]).first?.difference.missing == [written[0], written[1]])
        let next = try db.put(#"{"_id":"d","_rev":"\#(written[2])","v":4}"#).revision
        #expect(try db.revisions(of: "d")?.history(of: next) == [next, written[2]])
    }

    @Test("_all_docs with include_docs and conflicts adds _conflicts to the documents that have some")
    func allDocumentsConflicts() throws {
        let db = try open()
        _ = try update(db, "plain", times: 2)
        let written = try update(db, times: 1)
        let branch = Revision(generation: 1, hash: Array(repeating: 0x01, count: 16))
        _ = try db.putReplicated([#"{"_id":"d","_rev":"\#(branch)","v":"branch"}"#])
        let winner = try #require(try db.revisions(of: "d")).winner.revision
        let loser = winner == branch ? written[0] : branch
        var options = ViewQueryOptions()
        options.includeDocs = true
        options.conflicts = true
        let rows = try db.allDocuments(options: options).rows
        #expect(try rows.map { try $0.document?["_conflicts"] } == [.array([.string(loser.description)]), nil])
        options.keys = ["d"]
        #expect(try db.allDocuments(options: options).rows.first?.document?["_conflicts"] == .array([.string(loser.description)]))
        options.conflicts = false
        options.keys = nil
        #expect(try db.allDocuments(options: options).rows.allSatisfy { try $0.document?["_conflicts"] == nil })
        // The changes feed's document with its conflicts.
        #expect(try db.documentIncludingDeletedWithConflicts("d")?.value["_conflicts"] == .array([.string(loser.description)]))
        #expect(try db.documentIncludingDeletedWithConflicts("plain")?.value["_conflicts"] == nil)
    }
}
