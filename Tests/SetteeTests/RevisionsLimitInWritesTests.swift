import Foundation
import Testing
@testable import SetteeStorage
@testable import Settee

/// The `_revs_limit` a write transaction stems histories to is read once per
/// transaction: every update of a batch is stemmed to it, and a limit set
/// between two writes (after a batch rolled back too) holds for the next.
@Suite("_revs_limit within and between write transactions")
struct RevisionsLimitInWritesTests {
    let directory = TemporaryDirectory()

    struct Rollback: Error {}

    /// Puts `{"v": value}` over each document's current revision in one batch.
    func updateAll(_ db: Database, _ revisions: inout [String: Revision], value: Int) throws {
        try db.write { batch in
            for id in revisions.keys.sorted() {
                revisions[id] = try batch.put(#"{"_id":"\#(id)","_rev":"\#(revisions[id]!)","v":\#(value)}"#).revision
            }
        }
    }

    func historyLength(_ db: Database, _ revisions: [String: Revision]) throws -> [Int] {
        try revisions.keys.sorted().map { try db.revisions(of: $0)?.history(of: revisions[$0]!).count ?? 0 }
    }

    @Test("a batch stems each document it updates; a limit set after a rolled-back batch holds for the next write")
    func limitPerTransaction() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.setRevisionsLimit(2)
        var revisions: [String: Revision] = [:]
        for id in ["a", "b", "c"] { revisions[id] = try db.put(#"{"_id":"\#(id)","v":0}"#).revision }
        for value in 1...3 { try updateAll(db, &revisions, value: value) }
        #expect(try historyLength(db, revisions) == [2, 2, 2])
        // A batch that reads the limit, then is rolled back.
        #expect(throws: Rollback.self) {
            try db.write { batch in
                _ = try batch.put(#"{"_id":"a","_rev":"\#(revisions["a"]!)","v":"lost"}"#)
                throw Rollback()
            }
        }
        try db.setRevisionsLimit(4)
        for value in 4...7 { try updateAll(db, &revisions, value: value) }
        #expect(try historyLength(db, revisions) == [4, 4, 4])
        try db.setRevisionsLimit(1)
        try updateAll(db, &revisions, value: 8)
        #expect(try historyLength(db, revisions) == [1, 1, 1])
    }
}
