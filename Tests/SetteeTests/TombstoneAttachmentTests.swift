import Foundation
import Testing
@testable import Settee

/// A deletion written with `_attachments` (`{"_rev": R, "_deleted": true,
/// "_attachments": {"a.txt": {"stub": true}}}`) keeps those attachments on
/// its tombstone, as CouchDB's `couch_db:prep_and_validate_update` merges the
/// stubs into the deleted revision it writes: reading that revision shows
/// them, its attachments' bytes are served, and their bodies are kept while
/// the tombstone refers to them. A plain `DELETE` keeps none.
@Suite("Attachments kept on tombstones")
struct TombstoneAttachmentTests {
    let directory = TemporaryDirectory()

    static let withA = #"{"_id":"d","_attachments":{"a.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#
    /// The revision ids CouchDB gives (see `DeletionAttachmentRevisionTests`).
    static let rev1 = "1-2c13af7bc89e7804203dd6bc778549ac"
    static let tombstone = "2-c107810131e8a7e4b59776f5e465cfa0"

    static func deletion(of id: String = "d") -> String {
        #"{"_id":"\#(id)","_rev":"\#(rev1)","_deleted":true,"_attachments":{"a.txt":{"stub":true,"revpos":1}}}"#
    }

    /// The number of attachment bodies stored.
    static func bodyCount(_ db: Database) throws -> Int {
        guard let bodies = try db.store.attachmentBodies else { return 0 }
        return try db.environment.read { try $0.count(bodies.references) }
    }

    static func attachments(of document: Document?) throws -> JSONValue? {
        try document?.value["_attachments"]
    }

    @Test("the tombstone keeps the attachments its deletion names: read by revision, with their bytes")
    func tombstoneKeepsStubs() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(Self.withA)
        let deleted = try db.put(Self.deletion())
        #expect(deleted.revision.description == Self.tombstone)
        #expect(try db.document("d") == nil)
        let tombstone = try #require(try db.document("d", revision: deleted.revision))
        #expect(tombstone.isDeleted)
        let stub = try #require(try Self.attachments(of: tombstone)?["a.txt"])
        #expect(stub["stub"] == .bool(true))
        #expect(stub["revpos"] == .number(1))
        #expect(stub["content_type"] == "text/plain")
        #expect(stub["digest"] == "md5-iMaiC8wqiFlD2NjLTemvCQ==")   // text/plain, stored gzip-encoded (CouchDB 3.5.0's digest)
        let inline = try #require(try db.document("d", revision: deleted.revision, attachments: true))
        #expect(inline.isDeleted)
        #expect(try Self.attachments(of: inline)?["a.txt"]?["data"] == "aGVsbG8=")
        #expect(try db.attachment("a.txt", of: "d", revision: deleted.revision)?.data == Data("hello".utf8))
        #expect(try db.attachment("a.txt", of: "d") == nil)
        #expect(try db.attachment("other.txt", of: "d", revision: deleted.revision) == nil)
        #expect(try Self.bodyCount(db) == 1)
        #expect(try db.store.attachmentProblems() == [])
        #expect(try db.verify().isIntact)
    }

    @Test("a plain delete keeps no attachments and frees their bodies")
    func plainDeleteKeepsNone() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let first = try db.put(Self.withA).revision
        let deleted = try db.delete("d", revision: first)
        let tombstone = try #require(try db.document("d", revision: deleted.revision))
        #expect(try Self.attachments(of: tombstone) == nil)
        #expect(try db.attachment("a.txt", of: "d", revision: deleted.revision) == nil)
        #expect(try Self.bodyCount(db) == 0)
        #expect(try db.store.attachmentProblems() == [])
    }

    @Test("a deletion keeping one of two attachments frees the other's body")
    func deletionKeepsSome() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let first = try db.put(#"{"_id":"d","_attachments":{"a.txt":{"content_type":"text/plain","data":"aGVsbG8="},"#
            + #""b.bin":{"content_type":"application/octet-stream","data":"AAE="}}}"#).revision
        let deleted = try db.put(#"{"_id":"d","_rev":"\#(first)","_deleted":true,"_attachments":{"b.bin":{"stub":true}}}"#)
        #expect(deleted.revision.description == "2-14acff87ab8872e66b9eb527a41c557b")
        let tombstone = try #require(try db.document("d", revision: deleted.revision))
        #expect(try Self.attachments(of: tombstone)?["b.bin"]?["stub"] == .bool(true))
        #expect(try Self.attachments(of: tombstone)?["a.txt"] == nil)
        #expect(try Self.bodyCount(db) == 1)
        #expect(try db.store.attachmentProblems() == [])
    }

    @Test("the bodies stay while the tombstone refers to them and go when it is replaced or purged")
    func bodiesFollowTheTombstone() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        // d: re-created without _rev (no stub may be merged from a tombstone then), and its attachments go.
        try db.put(Self.withA)
        try db.put(Self.deletion())
        #expect(throws: DocumentError.self) { try db.put(#"{"_id":"d","_attachments":{"a.txt":{"stub":true}}}"#) }
        #expect(try Self.bodyCount(db) == 1)
        let recreated = try db.put(#"{"_id":"d","v":1}"#)
        #expect(try Self.attachments(of: try db.document("d")) == nil)
        #expect(try Self.bodyCount(db) == 0)
        #expect(try db.store.attachmentProblems() == [])
        // e: an edit that names the tombstone's revision merges its stubs, as CouchDB does.
        try db.put(Self.withA.replacingOccurrences(of: #""d""#, with: #""e""#))
        try db.put(Self.deletion(of: "e"))
        let revived = try db.put(#"{"_id":"e","_rev":"\#(Self.tombstone)","_attachments":{"a.txt":{"stub":true}}}"#)
        #expect(try db.attachment("a.txt", of: "e")?.data == Data("hello".utf8))
        #expect(try Self.bodyCount(db) == 1)
        // f: purged, its tombstone's attachment goes with it (e still holds the shared body).
        try db.put(Self.withA.replacingOccurrences(of: #""d""#, with: #""f""#))
        try db.put(Self.deletion(of: "f"))
        #expect(try db.store.attachmentProblems() == [])
        _ = try db.purge("f")
        #expect(try Self.bodyCount(db) == 1)
        _ = try db.delete("e", revision: revived.revision)
        #expect(try Self.bodyCount(db) == 0)
        #expect(try db.store.attachmentProblems() == [])
        _ = recreated
    }

    @Test("on a document with a conflict, the deleted leaf keeps its attachment; purging the leaf frees it")
    func tombstoneLeafOfATree() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(Self.withA)
        let branch = "1-" + String(repeating: "f", count: 32)
        _ = try db.putReplicated([#"{"_id":"d","_rev":"\#(branch)","v":1}"#])
        let deleted = try db.put(Self.deletion())
        #expect(deleted.revision.description == Self.tombstone)
        let leaf = try #require(try db.document("d", revision: deleted.revision, attachments: true))
        #expect(leaf.isDeleted)
        #expect(try Self.attachments(of: leaf)?["a.txt"]?["data"] == "aGVsbG8=")
        #expect(try db.attachment("a.txt", of: "d", revision: deleted.revision)?.data == Data("hello".utf8))
        #expect(try Self.bodyCount(db) == 1)
        #expect(try db.store.attachmentProblems() == [])
        _ = try db.purge("d", revisions: [deleted.revision])
        #expect(try Self.bodyCount(db) == 0)
        #expect(try db.store.attachmentProblems() == [])
    }

    @Test("a replicated deletion with attachments keeps them, as a replicated write of CouchDB's tombstone")
    func replicatedTombstone() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        try db.put(Self.withA)
        let results = try db.putReplicated([#"{"_id":"d","_rev":"\#(Self.tombstone)","_deleted":true,"#
            + #""_revisions":{"start":2,"ids":["c107810131e8a7e4b59776f5e465cfa0","2c13af7bc89e7804203dd6bc778549ac"]},"#
            + #""_attachments":{"a.txt":{"content_type":"text/plain","revpos":1,"stub":true}}}"#])
        #expect(try results[0].get() != nil)
        let revision = try #require(Revision(Self.tombstone))
        #expect(try db.attachment("a.txt", of: "d", revision: revision)?.data == Data("hello".utf8))
        #expect(try Self.bodyCount(db) == 1)
        #expect(try db.store.attachmentProblems() == [])
        // A tombstone replicated with the bytes inline, on a new document.
        _ = try db.putReplicated([#"{"_id":"n","_rev":"1-\#(String(repeating: "a", count: 32))","_deleted":true,"#
            + #""_attachments":{"b.txt":{"content_type":"text/plain","data":"b25seQ=="}}}"#])
        let replicated = try #require(Revision("1-" + String(repeating: "a", count: 32)))
        #expect(try db.attachment("b.txt", of: "n", revision: replicated)?.data == Data("only".utf8))
        #expect(try db.store.attachmentProblems() == [])
    }

    @Test("over HTTP: GET ?rev=, attachments=true, the attachment itself, open_revs, _bulk_get, _changes, _revs_diff")
    func overHTTP() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let attachment: JSONValue = ["a.txt": ["content_type": "text/plain", "data": "aGVsbG8="]]
        for id in ["d", "e"] {
            #expect(try await server.request("PUT", "/db/\(id)", json: ["_attachments": attachment]).json["rev"] == .string(Self.rev1))
        }
        let put = try await server.request("PUT", "/db/d?rev=\(Self.rev1)",
                                           json: ["_deleted": true, "_attachments": ["a.txt": ["stub": true]]])
        #expect(put.json["rev"] == .string(Self.tombstone))
        let plain = try await server.request("DELETE", "/db/e?rev=\(Self.rev1)")
        let plainRev = try #require(plain.json["rev"]?.stringValue)

        let read = try await server.request("GET", "/db/d?rev=\(Self.tombstone)")
        #expect(read.status == 200)
        #expect(read.json["_deleted"] == .bool(true))
        #expect(read.json["_attachments"]?["a.txt"]?["stub"] == .bool(true))
        #expect(read.json["_attachments"]?["a.txt"]?["digest"] == "md5-iMaiC8wqiFlD2NjLTemvCQ==")
        let inline = try await server.request("GET", "/db/d?rev=\(Self.tombstone)&attachments=true")
        #expect(inline.json["_attachments"]?["a.txt"]?["data"] == "aGVsbG8=")
        #expect(try await server.request("GET", "/db/e?rev=\(plainRev)").json["_attachments"] == nil)

        let bytes = try await server.request("GET", "/db/d/a.txt?rev=\(Self.tombstone)")
        #expect(bytes.status == 200)
        #expect(bytes.body == Data("hello".utf8))
        #expect(bytes.headers["Content-Type"] == "text/plain")
        #expect(try await server.request("GET", "/db/d/a.txt").status == 404)
        let missingAttachment = try await server.request("GET", "/db/e/a.txt?rev=\(plainRev)")
        #expect(missingAttachment.status == 404)
        #expect(missingAttachment.json["reason"] == "Document is missing attachment")
        #expect(try await server.request("GET", "/db/d/a.txt?rev=3-\(String(repeating: "a", count: 32))").status == 404)
        #expect(try await server.request("GET", "/db/d/a.txt?rev=x").status == 400)

        let open = try await server.request("GET", "/db/d?open_revs=all")
        #expect(open.json[0]?["ok"]?["_deleted"] == .bool(true))
        #expect(open.json[0]?["ok"]?["_attachments"]?["a.txt"]?["stub"] == .bool(true))
        let openInline = try await server.request("GET", "/db/d?open_revs=%5B%22\(Self.tombstone)%22%5D&attachments=true&revs=true")
        #expect(openInline.json[0]?["ok"]?["_attachments"]?["a.txt"]?["data"] == "aGVsbG8=")
        #expect(openInline.json[0]?["ok"]?["_revisions"]?["start"] == .number(2))

        let bulk = try await server.request("POST", "/db/_bulk_get?attachments=true",
                                            json: ["docs": [["id": "d", "rev": .string(Self.tombstone)], ["id": "d"]]])
        #expect(bulk.json["results"]?[0]?["docs"]?[0]?["ok"]?["_attachments"]?["a.txt"]?["data"] == "aGVsbG8=")
        #expect(bulk.json["results"]?[1]?["docs"]?[0]?["ok"]?["_attachments"]?["a.txt"]?["data"] == "aGVsbG8=")

        let changes = try await server.request("GET", "/db/_changes?include_docs=true&style=all_docs")
        let row = try #require(changes.json["results"]?.arrayValue?.first { $0["id"] == "d" })
        #expect(row["deleted"] == .bool(true))
        #expect(row["doc"]?["_attachments"]?["a.txt"]?["stub"] == .bool(true))
        let inlineChanges = try await server.request("GET", "/db/_changes?include_docs=true&attachments=true")
        let inlineRow = try #require(inlineChanges.json["results"]?.arrayValue?.first { $0["id"] == "d" })
        #expect(inlineRow["doc"]?["_attachments"]?["a.txt"]?["data"] == "aGVsbG8=")
        // A deleted winner has no live losing leaf: conflicts=true changes nothing in its body.
        let conflictChanges = try await server.request("GET", "/db/_changes?include_docs=true&attachments=true&conflicts=true")
        let conflictRow = try #require(conflictChanges.json["results"]?.arrayValue?.first { $0["id"] == "d" })
        #expect(conflictRow["doc"]?["_attachments"]?["a.txt"]?["data"] == "aGVsbG8=")
        #expect(conflictRow["doc"]?["_deleted"] == .bool(true))
        #expect(conflictRow["doc"]?["_conflicts"] == nil)

        let diff = try await server.request("POST", "/db/_revs_diff", json: ["d": [.string(Self.tombstone)]])
        #expect(diff.json == .object([]))
        await server.stop()
    }
}
