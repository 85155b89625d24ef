import Foundation
import Testing
import Settee
import SetteeCore

/// Document expiration, as Couchbase Lite's `setDocumentExpiration`: past its
/// time a document is purged, and reads as missing until then.
@Suite("Document expiration", .ownThread)
struct ExpirationTests {
    let directory = TemporaryDirectory()

    func open() throws -> Database {
        try Database(at: directory.url.appendingPathComponent("db"))
    }

    static let design = #"""
        {"_id": "_design/app", "views": {"by_n": {"map": "function (doc) { emit(doc.n, doc.n); }", "reduce": "_sum"}}}
        """#

    @Test("an expiration is set, read, listed and cleared")
    func setReadClear() throws {
        let db = try open()
        try db.put(#"{"_id": "a", "n": 1}"#)
        try db.put(#"{"_id": "b", "n": 2}"#)
        let later = Date(timeIntervalSince1970: 4_000_000_000)
        let sooner = Date(timeIntervalSince1970: 3_000_000_000)
        try db.setExpiration(later, for: "a")
        try db.setExpiration(sooner, for: "b")
        #expect(try db.expiration(of: "a") == later)
        #expect(try db.documentsExpiring(before: later).map(\.id) == ["b"])
        #expect(try db.documentsExpiring(before: later.addingTimeInterval(1)).map(\.id) == ["b", "a"])
        try db.setExpiration(nil, for: "a")
        #expect(try db.expiration(of: "a") == nil)
        #expect(try db.documentsExpiring(before: later.addingTimeInterval(1)).map(\.id) == ["b"])
        let missing = try #require(throws: DocumentError.self) { try db.setExpiration(later, for: "nope") }
        #expect(missing.reason == "missing")
        // A purged document's expiration goes with it.
        try db.purge("b")
        #expect(try db.documentsExpiring(before: later).isEmpty)
    }

    @Test("a document past its time is missing for get, views and _all_docs, and purged by the timer within a second")
    func shortTimeToLive() throws {
        let db = try open()
        try db.put(Self.design)
        try db.put(#"{"_id": "a", "n": 1}"#)
        try db.put(#"{"_id": "b", "n": 2}"#)
        #expect(try db.query("app/by_n").rows.first?.value == 3)
        try db.setExpiration(Date().addingTimeInterval(0.3), for: "a")
        #expect(try db.document("a") != nil)
        Thread.sleep(forTimeInterval: 0.4)
        // Past its time: missing, whether or not the purge has run.
        #expect(try db.document("a") == nil)
        #expect(try db.query("app/by_n").rows.first?.value == 2)
        #expect(try db.allDocuments().rows.compactMap(\.id) == ["_design/app", "b"])
        // The timer purges it: gone from the changes feed too.
        Thread.sleep(forTimeInterval: 1.2)
        #expect(try db.changes().map(\.id) == ["_design/app", "b"])
        #expect(try db.purgeSequence() == 1)
        #expect(try db.info().documentCount == 2)
    }

    @Test("the timer purges an expired document that nothing reads; its rows go from the index")
    func timerPurges() throws {
        let db = try open()
        try db.put(Self.design)
        try db.put(#"{"_id": "a", "n": 1}"#)
        #expect(try db.query("app/by_n").rows.first?.value == 1)
        try db.setExpiration(Date().addingTimeInterval(0.2), for: "a")
        Thread.sleep(forTimeInterval: 1.5)
        #expect(try db.changes().map(\.id) == ["_design/app"])
        #expect(try db.query("app/by_n").rows.isEmpty)
    }

    @Test("writing an expired document that is not yet purged writes it anew")
    func writeOverExpired() throws {
        let db = try open()
        try db.put(Self.design)
        try db.put(#"{"_id": "a", "n": 1}"#)
        #expect(try db.query("app/by_n").rows.first?.value == 1)
        // Expired already: the timer has not purged it yet.
        try db.setExpiration(Date().addingTimeInterval(-1), for: "a")
        let written = try db.put(#"{"_id": "a", "n": 5}"#)
        #expect(written.revision.generation == 1)
        #expect(try db.document("a")?.json.contains(#""n":5"#) == true)
        #expect(try db.expiration(of: "a") == nil)
        #expect(try db.purgeSequence() == 1)
        let rows = try db.query("app/by_n").rows
        #expect(try rows.first?.value == 5, "\(rows)")
        let info = try db.info()
        let changes = try db.changes()
        #expect(info.documentCount == 2, "\(info) \(changes)")
        let problems = try db.verify().problems
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test("a write over an expired document that validation refuses leaves it and the counts as they were")
    func refusedWriteOverExpired() throws {
        let db = try open()
        try db.put(#"{"_id": "_design/v", "validate_doc_update": "function (doc) { if (doc.n === 13) throw({forbidden: 'no 13'}); }"}"#)
        try db.put(#"{"_id": "a", "n": 1}"#)
        try db.setExpiration(Date().addingTimeInterval(-1), for: "a")
        // The timer may purge it first: the outcome is the same.
        #expect(throws: (any Error).self) { try db.put(#"{"_id": "a", "n": 13}"#) }
        let problems = try db.verify().problems
        #expect(problems.isEmpty, "\(problems)")
        #expect(try db.document("a") == nil)
    }

    @Test("opening a database purges what expired while it was closed")
    func purgedAtOpen() throws {
        do {
            let db = try open()
            try db.put(#"{"_id": "a", "n": 1}"#)
            try db.setExpiration(Date().addingTimeInterval(0.1), for: "a")
        }
        Thread.sleep(forTimeInterval: 0.2)
        let db = try open()
        #expect(try db.purgeSequence() == 1)
        #expect(try db.changes().isEmpty)
    }

    @Test("settee expire and settee expiring")
    func commandLine() throws {
        let fixture = try CommandLineFixture()
        let at = try fixture.run(["--db", fixture.db, "expire", "n1", "--at", "2096-01-01T00:00:00Z"])
        #expect(at.exitStatus == 0, "\(at.standardError)")
        #expect(at.standardOutput == #"{"ok":true,"id":"n1","expires":"2096-01-01T00:00:00Z"}"# + "\n")
        let inSeconds = try fixture.run(["--db", fixture.db, "expire", "n2", "--in", "3600"])
        #expect(inSeconds.exitStatus == 0, "\(inSeconds.standardError)")
        let listed = try fixture.run(["--db", fixture.db, "expiring", "--before", "2100-01-01T00:00:00Z"])
        let value = try JSONParser.parse(Array(listed.standardOutput.utf8))
        #expect(value["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["n2", "n1"])
        let cleared = try fixture.run(["--db", fixture.db, "expire", "n1", "--clear"])
        #expect(cleared.standardOutput == #"{"ok":true,"id":"n1","expires":null}"# + "\n")
        let after = try fixture.run(["--db", fixture.db, "expiring", "--before", "2100-01-01T00:00:00Z"])
        #expect(!after.standardOutput.contains("n1"))
        let bad = try fixture.run(["--db", fixture.db, "expire", "n1", "--at", "tomorrow"])
        #expect(bad.exitStatus != 0)
        #expect(bad.standardError.contains("tomorrow"))
        let none = try fixture.run(["--db", fixture.db, "expire", "n1"])
        #expect(none.exitStatus != 0)
    }
}
