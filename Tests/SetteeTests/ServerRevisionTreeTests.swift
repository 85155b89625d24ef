import Foundation
import Testing
import Settee

/// `settee serve` as a replication target: `new_edits=false` writes,
/// conflicts, `open_revs`, `_revs_diff`, `_bulk_get` of losing leaves and
/// `_changes?style=all_docs`, as CouchDB 3.5 answers them.
@Suite("settee serve: revision trees and replication")
struct ServerRevisionTreeTests {
    static func rev(_ generation: Int, _ digit: Character) -> String {
        "\(generation)-" + String(repeating: digit, count: 32)
    }

    static func hash(_ digit: Character) -> JSONValue { .string(String(repeating: digit, count: 32)) }

    /// A server with database `db` holding `d` with two leaves: 2-b (`v: "b"`) and 2-c (`v: "c"`, the winner).
    func conflicted() async throws -> RunningServer {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let reply = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "d", "_rev": .string(Self.rev(2, "b")), "_revisions": ["start": 2, "ids": [Self.hash("b"), Self.hash("a")]], "v": "b"],
            ["_id": "d", "_rev": .string(Self.rev(2, "c")), "_revisions": ["start": 2, "ids": [Self.hash("c"), Self.hash("a")]], "v": "c"],
        ]])
        #expect(reply.status == 201)
        #expect(reply.json == [])
        return server
    }

    @Test("_bulk_docs new_edits=false makes a conflict; conflicts=true, deleted_conflicts, meta and rev= of the loser read it")
    func bulkDocsConflict() async throws {
        let server = try await conflicted()
        let plain = try await server.request("GET", "/db/d")
        #expect(plain.json == ["_id": "d", "_rev": .string(Self.rev(2, "c")), "v": "c"])
        let withConflicts = try await server.request("GET", "/db/d?conflicts=true")
        #expect(withConflicts.json == ["_id": "d", "_rev": .string(Self.rev(2, "c")), "v": "c", "_conflicts": [.string(Self.rev(2, "b"))]])
        let loser = try await server.request("GET", "/db/d?rev=\(Self.rev(2, "b"))")
        #expect(loser.json == ["_id": "d", "_rev": .string(Self.rev(2, "b")), "v": "b"])
        let revs = try await server.request("GET", "/db/d?revs=true")
        #expect(revs.json["_revisions"] == ["start": 2, "ids": [Self.hash("c"), Self.hash("a")]])
        let meta = try await server.request("GET", "/db/d?meta=true")
        #expect(meta.json["_conflicts"] == [.string(Self.rev(2, "b"))])
        #expect(meta.json["_revs_info"] == [["rev": .string(Self.rev(2, "c")), "status": "available"],
                                            ["rev": .string(Self.rev(1, "a")), "status": "missing"]])
        #expect(try await server.request("GET", "/db/d?rev=\(Self.rev(1, "a"))").status == 404)
        // The same revisions again change nothing.
        let again = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "d", "_rev": .string(Self.rev(2, "b")), "v": "b"]]])
        #expect(again.json == [])
        await server.stop()
    }

    @Test("open_revs=all returns every leaf, open_revs=[…] the ones named, and _bulk_get a losing leaf")
    func openRevisions() async throws {
        let server = try await conflicted()
        let all = try await server.request("GET", "/db/d?open_revs=all", headers: ["Accept": "application/json"])
        #expect(all.json.arrayValue?.compactMap { $0["ok"]?["_rev"] } == [.string(Self.rev(2, "c")), .string(Self.rev(2, "b"))])
        let named = try await server.request("GET", "/db/d?open_revs=[\"\(Self.rev(2, "b"))\",\"\(Self.rev(3, "e"))\"]&revs=true",
                                             headers: ["Accept": "application/json"])
        #expect(named.json[0]?["ok"]?["v"] == "b")
        #expect(named.json[0]?["ok"]?["_revisions"] == ["start": 2, "ids": [Self.hash("b"), Self.hash("a")]])
        #expect(named.json[1]?["missing"] == .string(Self.rev(3, "e")))
        let bulk = try await server.request("POST", "/db/_bulk_get?revs=true", json: ["docs": [["id": "d", "rev": .string(Self.rev(2, "b"))]]])
        #expect(bulk.json["results"]?[0]?["docs"]?[0]?["ok"]?["v"] == "b")
        await server.stop()
    }

    @Test("_revs_diff answers the revisions the database lacks, with possible ancestors")
    func revsDiff() async throws {
        let server = try await conflicted()
        let reply = try await server.request("POST", "/db/_revs_diff", json: [
            "d": [.string(Self.rev(2, "b")), .string(Self.rev(1, "a")), .string(Self.rev(3, "e"))],
            "new": [.string(Self.rev(1, "a"))],
        ])
        #expect(reply.status == 200)
        #expect(reply.json["d"]?["missing"] == [.string(Self.rev(3, "e"))])
        #expect(reply.json["d"]?["possible_ancestors"] == [.string(Self.rev(2, "c")), .string(Self.rev(2, "b"))])
        #expect(reply.json["new"] == ["missing": [.string(Self.rev(1, "a"))]])
        let bad = try await server.request("POST", "/db/_revs_diff", json: ["d": ["nope"]])
        #expect(bad.status == 400)
        await server.stop()
    }

    @Test("deleting the losing leaf resolves the conflict; _changes style=all_docs lists every leaf")
    func resolveAndChanges() async throws {
        let server = try await conflicted()
        let allDocs = try await server.request("GET", "/db/_changes?style=all_docs")
        #expect(allDocs.json["results"]?[0]?["changes"] == [["rev": .string(Self.rev(2, "c"))], ["rev": .string(Self.rev(2, "b"))]])
        let main = try await server.request("GET", "/db/_changes")
        #expect(main.json["results"]?[0]?["changes"] == [["rev": .string(Self.rev(2, "c"))]])
        let deleted = try await server.request("DELETE", "/db/d?rev=\(Self.rev(2, "b"))")
        #expect(deleted.status == 200)
        let resolved = try await server.request("GET", "/db/d?conflicts=true&deleted_conflicts=true")
        #expect(resolved.json["_conflicts"] == nil)
        #expect(resolved.json["_deleted_conflicts"]?.arrayValue?.count == 1)
        #expect(resolved.json["v"] == "c")
        await server.stop()
    }

    @Test("PUT ?new_edits=false writes the revision given, and a losing leaf can be updated by its rev")
    func putNewEditsFalse() async throws {
        let server = try await conflicted()
        let put = try await server.request("PUT", "/db/d?new_edits=false", json: [
            "_rev": .string(Self.rev(3, "f")), "_revisions": ["start": 3, "ids": [Self.hash("f"), Self.hash("b"), Self.hash("a")]], "v": "f"])
        #expect(put.status == 201)
        #expect(put.json["rev"] == .string(Self.rev(3, "f")))
        #expect(try await server.request("GET", "/db/d").json["v"] == "f")
        let update = try await server.request("PUT", "/db/d?rev=\(Self.rev(2, "c"))", json: ["v": "c3"])
        #expect(update.status == 201)
        let conflicts = try await server.request("GET", "/db/d?conflicts=true")
        // Two generation-3 leaves: the greater id wins.
        let leaves = [Self.rev(3, "f"), update.json["rev"]!.stringValue!].sorted()
        #expect(conflicts.json["_rev"] == .string(leaves[1]))
        #expect(conflicts.json["_conflicts"] == [.string(leaves[0])])
        let missingRev = try await server.request("PUT", "/db/d?new_edits=false", json: ["v": 1])
        #expect(missingRev.status == 400)
        await server.stop()
    }

    @Test("a multipart/related PUT ?new_edits=false (how a replicator sends attachments) writes a conflicting leaf with its attachment")
    func multipartReplicatedPut() async throws {
        let server = try await conflicted()
        let boundary = "xyz"
        var body = Data("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8)
        body += Data(#"{"_rev":"\#(Self.rev(2, "0"))","_revisions":{"start":2,"ids":["\#(String(repeating: "0", count: 32))","\#(String(repeating: "a", count: 32))"]},"v":"0","_attachments":{"a.txt":{"follows":true,"content_type":"text/plain","length":5}}}"#.utf8)
        body += Data("\r\n--\(boundary)\r\n\r\n".utf8)
        body += Data("hello".utf8)
        body += Data("\r\n--\(boundary)--".utf8)
        let put = try await server.request("PUT", "/db/d?new_edits=false", body: body,
                                           headers: ["Content-Type": "multipart/related; boundary=\"\(boundary)\""])
        #expect(put.status == 201)
        let loser = try await server.request("GET", "/db/d?rev=\(Self.rev(2, "0"))")
        #expect(loser.json["_attachments"]?["a.txt"]?["length"] == 5)
        #expect(try await server.request("GET", "/db/d?conflicts=true").json["_conflicts"] == [.string(Self.rev(2, "b")), .string(Self.rev(2, "0"))])
        await server.stop()
    }

    @Test("revision ids that are not hex (3-cc) are written, read, diffed and edited; revisions named twice must agree, as in CouchDB")
    func textRevisionIDs() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let written = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "d", "_rev": "3-cc", "_revisions": ["start": 3, "ids": ["cc", "bb", "aa"]], "v": 3]]])
        #expect(written.status == 201 && written.json == [])
        #expect(try await server.request("GET", "/db/d?revs=true").json
            == ["_id": "d", "_rev": "3-cc", "v": 3, "_revisions": ["start": 3, "ids": ["cc", "bb", "aa"]]])
        #expect(try await server.request("POST", "/db/_revs_diff", json: ["d": ["3-cc", "4-dd"]]).json
            == ["d": ["missing": ["4-dd"], "possible_ancestors": ["3-cc"]]])
        let edited = try await server.request("PUT", "/db/d", json: ["_rev": "3-cc", "v": 4])
        #expect(edited.json["rev"] == "4-077020dd301e5d14cb5f3e1d3e223271")
        // A deleted document is written again without a _rev; any other _rev conflicts.
        _ = try await server.request("DELETE", "/db/d?rev=4-077020dd301e5d14cb5f3e1d3e223271")
        let stale = try await server.request("PUT", "/db/d", json: ["_rev": "1-asfafasdf"])
        #expect(stale.status == 409 && stale.json["error"] == "conflict")
        // The query string and the body name different revisions.
        let twice = try await server.request("PUT", "/db/x?rev=1-foobar", json: ["_rev": "1-barfoo"])
        #expect(twice.status == 400)
        #expect(twice.json["reason"] == "Document rev from request body and query string have different values")
        let etag = try await server.request("PUT", "/db/x?rev=1-foobar", json: ["v": 1], headers: ["If-Match": "\"1-barfoo\""])
        #expect(etag.status == 400 && etag.json["reason"] == "Document rev and etag have different values")
        let bodyAndEtag = try await server.request("PUT", "/db/x", json: ["_rev": "1-barfoo"], headers: ["If-Match": "1-foobar"])
        #expect(bodyAndEtag.status == 400 && bodyAndEtag.json["reason"] == "Document rev and etag have different values")
        #expect(try await server.request("PUT", "/db/x?rev=1-" + String(repeating: "z", count: 32), json: ["v": 1]).json["reason"]
            == "Invalid rev format")
        await server.stop()
    }
}
