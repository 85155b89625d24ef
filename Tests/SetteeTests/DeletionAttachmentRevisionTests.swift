import Foundation
import Testing
import Settee

/// A deletion that carries its attachments' stubs (`"_deleted": true` with
/// `_attachments`) gets CouchDB's revision id: `couch_db:new_revid/1` hashes
/// `[Deleted, OldStart, OldRev, Body, Atts]` where `Atts` is the
/// `{Name, Type, Md5}` of each attachment the stubs carry over (listed last
/// first), `Md5` being the digest of the bytes as stored — gzip-encoded for
/// `text/plain`, as CouchDB stores compressible types. The expected ids are
/// those CouchDB 3.5.0 gave the same writes, measured on this machine.
@Suite("Revision ids of deletions with attachments")
struct DeletionAttachmentRevisionTests {
    let directory = TemporaryDirectory()

    static let withA = #"{"_id":"d","_attachments":{"a.txt":{"content_type":"text/plain","data":"aGVsbG8="}}}"#
    static let withAB = #"{"_id":"d","_attachments":{"a.txt":{"content_type":"text/plain","data":"aGVsbG8="},"#
        + #""b.bin":{"content_type":"application/octet-stream","data":"AAE="}}}"#

    @Test("a deletion with its attachment's stub hashes the attachment, as CouchDB does")
    func deletionWithStub() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let first = try db.put(Self.withA).revision
        #expect(first.description == "1-2c13af7bc89e7804203dd6bc778549ac")
        let deletion = try db.put(#"{"_id":"d","_rev":"\#(first)","_deleted":true,"_attachments":{"a.txt":{"stub":true,"revpos":1}}}"#)
        #expect(deletion.revision.description == "2-c107810131e8a7e4b59776f5e465cfa0")
        #expect(try db.document("d") == nil)
        // A deletion without stubs hashes no attachments.
        _ = try db.put(Self.withA.replacingOccurrences(of: #""d""#, with: #""e""#))
        #expect(try db.delete("e", revision: first).revision.description == "2-850b72d198b336dbe46a3b3fa67fb0ef")
    }

    @Test("two attachments, one kept by the deletion: each stub carried over, in the term last first")
    func deletionWithSomeStubs() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let first = try db.put(Self.withAB).revision
        #expect(first.description == "1-cef5f571421061fc97a508bf0d1ba544")
        let both = try db.put(#"{"_id":"d","_rev":"\#(first)","_deleted":true,"_attachments":{"a.txt":{"stub":true},"b.bin":{"stub":true}}}"#)
        #expect(both.revision.description == "2-9f32d5f2f95ce0afc763f15eed8b6a3b")
        _ = try db.put(Self.withAB.replacingOccurrences(of: #""d""#, with: #""e""#))
        let one = try db.put(#"{"_id":"e","_rev":"\#(first)","_deleted":true,"_attachments":{"b.bin":{"stub":true}}}"#)
        #expect(one.revision.description == "2-14acff87ab8872e66b9eb527a41c557b")
    }

    @Test("a deletion's stub of an attachment the document does not have is refused: missing_stub")
    func deletionWithMissingStub() throws {
        let db = try Database(at: directory.url.appendingPathComponent("db"))
        let first = try db.put(Self.withA).revision
        #expect(throws: (any Error).self) {
            try db.put(#"{"_id":"d","_rev":"\#(first)","_deleted":true,"_attachments":{"other.txt":{"stub":true}}}"#)
        }
        #expect(try db.document("d")?.revision == first)
    }

    @Test("over HTTP: PUT and _bulk_docs deletions with stubs, on a plain document and on one with a conflict")
    func overHTTP() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let attachment: JSONValue = ["a.txt": ["content_type": "text/plain", "data": "aGVsbG8="]]
        let stub: JSONValue = ["a.txt": ["stub": true]]
        for id in ["p", "b", "t"] {
            let created = try await server.request("PUT", "/db/\(id)", json: ["_attachments": attachment])
            #expect(created.json["rev"] == "1-2c13af7bc89e7804203dd6bc778549ac")
        }
        let rev1 = "1-2c13af7bc89e7804203dd6bc778549ac"
        // A sibling that wins (1-fff… over 1-09a…) makes t a document with a revision tree.
        let branch = "1-" + String(repeating: "f", count: 32)
        _ = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "t", "_rev": .string(branch), "v": 1]]])
        let put = try await server.request("PUT", "/db/p?rev=\(rev1)", json: ["_deleted": true, "_attachments": stub])
        #expect(put.json["rev"] == "2-c107810131e8a7e4b59776f5e465cfa0")
        let bulk = try await server.request("POST", "/db/_bulk_docs", json: ["docs": [
            ["_id": "b", "_rev": .string(rev1), "_deleted": true, "_attachments": stub],
            ["_id": "t", "_rev": .string(rev1), "_deleted": true, "_attachments": stub]]])
        #expect(bulk.json[0]?["rev"] == "2-c107810131e8a7e4b59776f5e465cfa0")
        #expect(bulk.json[1]?["rev"] == "2-c107810131e8a7e4b59776f5e465cfa0")
        #expect(try await server.request("GET", "/db/p").status == 404)
        #expect(try await server.request("GET", "/db/t").json["_rev"] == .string(branch))
        await server.stop()
    }
}
