import Foundation
import Testing
import Settee

/// Purge, as CouchDB's `_purge`: a document removed completely (its record,
/// its place in the changes feed, the counts), and every view index dropping
/// its rows on its next update.
@Suite("Purge")
struct PurgeTests {
    let directory = TemporaryDirectory()

    func open() throws -> Database {
        try Database(at: directory.url.appendingPathComponent("db"))
    }

    static let design = #"""
        {"_id": "_design/app", "views": {
          "by_n": {"map": "function (doc) { if (typeof doc.n === 'number') emit(doc.n, doc.n); }", "reduce": "_sum"},
          "count": {"map": "function (doc) { emit(doc._id, 1); }", "reduce": "_count"},
          "js": {"map": "function (doc) { if (doc.n) emit(null, doc.n); }", "reduce": "function (keys, values) { return sum(values); }"}}}
        """#

    func value(_ db: Database, _ view: String) throws -> JSONValue? {
        try db.query(view).rows.first?.value
    }

    func ids(_ db: Database, _ view: String) throws -> [String] {
        var options = ViewQueryOptions()
        options.reduce = false
        return try db.query(view, options: options).rows.compactMap(\.id)
    }

    @Test("a purged document is gone from the document store, the changes feed, _all_docs and the counts")
    func purgedEverywhere() throws {
        let db = try open()
        let a = try db.put(#"{"_id": "a", "n": 1}"#)
        try db.put(#"{"_id": "b", "n": 2}"#)
        try db.put(#"{"_id": "c", "n": 3}"#)
        try db.delete("c", revision: nil)
        let before = try db.lastSequence()
        let result = try db.purge("a")
        #expect(result.purged == ["a": [a.revision]])
        #expect(result.purgeSequence == 1)
        // The purge moves the update sequence on, as in CouchDB.
        #expect(try db.lastSequence() > before)
        #expect(try db.document("a") == nil)
        #expect(try db.documentIncludingDeleted("a") == nil)
        #expect(try db.changes().map(\.id) == ["b", "c"])
        #expect(try db.allDocuments().rows.compactMap(\.id) == ["b"])
        #expect(try db.info().documentCount == 1)
        #expect(try db.info().deletedDocumentCount == 1)
        // A tombstone is purged too, and leaves the deleted count.
        #expect(try db.purge("c").purged.keys.sorted() == ["c"])
        #expect(try db.info().deletedDocumentCount == 0)
        #expect(try db.changes().map(\.id) == ["b"])
        #expect(try db.purgeSequence() == 2)
        // The id may be written again, as new.
        #expect(try db.put(#"{"_id": "a", "n": 5}"#).revision.generation == 1)
        #expect(try db.verify().problems.isEmpty)
    }

    @Test("purging names the current revision or all; another revision or a missing document purges nothing")
    func revisions() throws {
        let db = try open()
        let first = try db.put(#"{"_id": "a", "n": 1}"#)
        let second = try db.put(#"{"_id": "a", "_rev": "\#(first.revision)", "n": 2}"#)
        let stale = try db.purge(["a": [first.revision], "missing": []])
        #expect(stale.purged == ["a": [], "missing": []])
        #expect(try db.document("a") != nil)
        #expect(try db.purge(["a": [first.revision, second.revision]]).purged == ["a": [second.revision]])
        #expect(try db.document("a") == nil)
    }

    @Test("an existing index drops a purged document's rows on its next (incremental) update, reduce values too")
    func incrementalIndexPurge() throws {
        let db = try open()
        try db.put(Self.design)
        for n in 1...200 { try db.put(#"{"_id": "d\#(n)", "n": \#(n)}"#) }
        #expect(try value(db, "app/by_n") == 20100)
        #expect(try value(db, "app/count") == 200)
        #expect(try value(db, "app/js") == 20100)
        try db.purge("d7")
        try db.purge("d100")
        #expect(try value(db, "app/by_n") == .number(Double(20100 - 107)))
        #expect(try value(db, "app/count") == 198)
        #expect(try value(db, "app/js") == .number(Double(20100 - 107)))
        #expect(try !ids(db, "app/by_n").contains("d7"))
        #expect(try ids(db, "app/count").count == 198)
        // Purges and writes between two updates.
        try db.put(#"{"_id": "d7", "n": 1000}"#)
        try db.purge("d8")
        try db.put(#"{"_id": "d8", "n": 2000}"#)
        try db.purge("d9")
        #expect(try value(db, "app/by_n") == .number(Double(20100 - 107 + 1000 - 8 + 2000 - 9)))
        #expect(try value(db, "app/count") == 198)
        #expect(try db.verify().problems.isEmpty)
    }

    @Test("purges among many writes (an update that rebuilds the reductions) leave the reduce values right")
    func purgeInBulkUpdate() throws {
        let db = try open()
        try db.put(Self.design)
        for n in 1...200 { try db.put(#"{"_id": "d\#(n)", "n": \#(n)}"#) }
        #expect(try value(db, "app/by_n") == 20100)
        var expected = 20100
        for n in stride(from: 1, through: 200, by: 4) {
            try db.purge("d\(n)")
            expected -= n
        }
        for n in 201...300 { try db.put(#"{"_id": "d\#(n)", "n": \#(n)}"#) }
        expected += (201...300).reduce(0, +)
        #expect(try value(db, "app/by_n") == .number(Double(expected)))
        #expect(try value(db, "app/js") == .number(Double(expected)))
        #expect(try value(db, "app/count") == 250)
        #expect(try db.verify().problems.isEmpty)
    }

    @Test("an index made after a purge starts at the purge sequence; a reopened database keeps the log")
    func newIndexAfterPurge() throws {
        do {
            let db = try open()
            for n in 1...5 { try db.put(#"{"_id": "d\#(n)", "n": \#(n)}"#) }
            try db.purge("d1")
            try db.put(Self.design)
            #expect(try value(db, "app/by_n") == 14)
            try db.purge("d2")
        }
        let db = try open()
        #expect(try db.purgeSequence() == 2)
        #expect(try value(db, "app/by_n") == 12)
    }

    @Test("purge and setExpiration have async forms")
    func asyncForms() async throws {
        let db = try open()
        try await db.put(#"{"_id": "a"}"#)
        try await db.put(#"{"_id": "b"}"#)
        #expect(try await db.purge("a").purged.keys.sorted() == ["a"])
        try await db.setExpiration(Date(timeIntervalSince1970: 4_000_000_000), for: "b")
        #expect(try await db.expiration(of: "b") == Date(timeIntervalSince1970: 4_000_000_000))
    }

    @Test("a local document is not purged")
    func localNotPurged() throws {
        let db = try open()
        try db.put(#"{"_id": "_local/a"}"#)
        let error = try #require(throws: DocumentError.self) { try db.purge("_local/a") }
        #expect(error.reason.contains("_local"))
    }

    @Test("settee purge DOCID prints CouchDB's _purge response")
    func commandLine() throws {
        let fixture = try CommandLineFixture()
        let rev = try #require(try Database(at: URL(fileURLWithPath: fixture.db)).document("n1")?.revision)
        let purged = try fixture.run(["--db", fixture.db, "purge", "n1"])
        #expect(purged.exitStatus == 0, "\(purged.standardError)")
        #expect(purged.standardOutput == #"{"purge_seq":1,"purged":{"n1":["\#(rev)"]}}"# + "\n")
        let info = try fixture.run(["--db", fixture.db, "info"])
        #expect(info.standardOutput.contains(#""purge_seq":1"#))
        let query = try fixture.run(["--db", fixture.db, "query", "numbers/by_n"])
        #expect(!query.standardOutput.contains(#""n1""#))
        let missing = try fixture.run(["--db", fixture.db, "purge", "nope", "--rev", "\(rev)"])
        #expect(missing.standardOutput == #"{"purge_seq":1,"purged":{"nope":[]}}"# + "\n")
    }
}
