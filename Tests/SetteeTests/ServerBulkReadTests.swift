import Foundation
import Testing
import Settee
import SetteeServer

@Suite("settee serve: _bulk_get, multiple queries, document read options, COPY, _purge and the database limits")
struct ServerBulkReadTests {
    @Test("_bulk_get answers each id with its document or CouchDB's error, in the order asked")
    func bulkGet() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let a = try await server.request("PUT", "/db/a", json: ["n": 1])
        let rev = try #require(a.json["rev"]?.stringValue)
        let reply = try await server.request("POST", "/db/_bulk_get?revs=true", json: ["docs": [
            ["id": "a"], ["id": "a", "rev": .string(rev)], ["id": "a", "rev": "1-00000000000000000000000000000000"],
            ["id": "zz"], ["rev": "1-abc"],
        ]])
        #expect(reply.status == 200)
        let results = try #require(reply.json["results"]?.arrayValue)
        #expect(results.count == 5)
        #expect(results[0]["id"] == "a")
        #expect(results[0]["docs"]?[0]?["ok"]?["n"] == 1)
        #expect(results[0]["docs"]?[0]?["ok"]?["_revisions"]?["start"] == 1)
        #expect(results[1]["docs"]?[0]?["ok"]?["_rev"] == .string(rev))
        #expect(results[2]["docs"]?[0]?["error"] == ["error": "not_found", "id": "a", "reason": "missing",
                                                      "rev": "1-00000000000000000000000000000000"])
        #expect(results[3]["docs"]?[0]?["error"] == ["error": "not_found", "id": "zz", "reason": "missing", "rev": "undefined"])
        #expect(results[4]["docs"]?[0]?["error"]?["reason"] == "document id missed")
        let bad = try await server.request("POST", "/db/_bulk_get?rev=1-abc", json: ["docs": []])
        #expect(bad.json == ["error": "bad_request", "reason": "\"rev\" query parameter is not acceptable"])
        let noDocs = try await server.request("POST", "/db/_bulk_get", json: [:])
        #expect(noDocs.json == ["error": "bad_request", "reason": "Missing JSON list of 'docs'."])
        await server.stop()
    }

    @Test("_all_docs/queries and a view's /queries answer each query in order")
    func multipleQueries() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        _ = try await server.request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "a", "n": 1], ["_id": "b", "n": 2], ["_id": "c", "n": 3]]])
        _ = try await server.request("PUT", "/db/_design/app", json: ["views": ["by_n": ["map": "function (doc) { if (doc.n) emit(doc.n, null); }"]]])
        let all = try await server.request("POST", "/db/_all_docs/queries", json: ["queries": [["keys": ["b"]], ["limit": 1, "skip": 2]]])
        #expect(all.status == 200)
        #expect(all.json["results"]?[0]?["rows"]?.arrayValue?.map { $0["id"] } == ["b"])
        // `_design/app` sorts first.
        #expect(all.json["results"]?[1]?["rows"]?.arrayValue?.map { $0["id"] } == ["b"])
        let view = try await server.request("POST", "/db/_design/app/_view/by_n/queries",
                                            json: ["queries": [["startkey": 2], ["descending": true, "limit": 1]]])
        #expect(view.json["results"]?[0]?["rows"]?.arrayValue?.map { $0["key"] } == [2, 3])
        #expect(view.json["results"]?[1]?["rows"]?.arrayValue?.map { $0["key"] } == [3])
        let missing = try await server.request("POST", "/db/_all_docs/queries", json: [:])
        #expect(missing.json == ["error": "bad_request", "reason": "POST body must include `queries` parameter."])
        #expect(try await server.request("GET", "/db/_all_docs/queries").status == 405)
        await server.stop()
    }

    @Test("GET with revs, revs_info, local_seq, meta, open_revs and latest")
    func documentReadOptions() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let first = try await server.request("PUT", "/db/a", json: ["n": 1])
        let rev1 = try #require(first.json["rev"]?.stringValue)
        let second = try await server.request("PUT", "/db/a?rev=\(rev1)", json: ["n": 2])
        let rev2 = try #require(second.json["rev"]?.stringValue)
        // Compacted: the first revision's body, kept until then, goes.
        #expect(try await server.request("POST", "/db/_compact", json: [:]).status == 202)

        let revs = try await server.request("GET", "/db/a?revs=true&local_seq=true")
        #expect(revs.json["_revisions"]?["start"] == 2)
        #expect(revs.json["_revisions"]?["ids"]?[0]?.stringValue == String(rev2.dropFirst(2)))
        #expect(revs.json["_local_seq"] == 2)
        let meta = try await server.request("GET", "/db/a?meta=true")
        // The first revision is kept as an id, its body gone (as in CouchDB after compaction).
        #expect(meta.json["_revs_info"] == [["rev": .string(rev2), "status": "available"], ["rev": .string(rev1), "status": "missing"]])
        #expect(revs.json["_revisions"]?["ids"]?[1]?.stringValue == String(rev1.dropFirst(2)))
        #expect(meta.json["_conflicts"] == nil)

        let all = try await server.request("GET", "/db/a?open_revs=all")
        #expect(all.json[0]?["ok"]?["n"] == 2)
        let named = try await server.request("GET", "/db/a?open_revs=%5B%22\(rev2)%22,%22\(rev1)%22%5D")
        #expect(named.json[0]?["ok"]?["_rev"] == .string(rev2))
        #expect(named.json[1] == ["missing": .string(rev1)])
        let latest = try await server.request("GET", "/db/a?open_revs=%5B%22\(rev1)%22%5D&latest=true")
        #expect(latest.json[0]?["ok"]?["_rev"] == .string(rev2))
        #expect(try await server.request("GET", "/db/a?rev=\(rev1)&latest=true").json["n"] == 2)
        #expect(try await server.request("GET", "/db/zz?open_revs=all").json == ["error": "not_found", "reason": "missing"])
        await server.stop()
    }

    @Test("COPY writes the document under the Destination id, over a revision when given")
    func copy() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        _ = try await server.request("PUT", "/db/a", json: ["n": 1])
        let copied = try await server.request("COPY", "/db/a", headers: ["Destination": "b"])
        #expect(copied.status == 201)
        #expect(copied.json["id"] == "b")
        #expect(try await server.request("GET", "/db/b").json["n"] == 1)
        let conflict = try await server.request("COPY", "/db/a", headers: ["Destination": "b"])
        #expect(conflict.status == 409)
        let rev = try #require(copied.json["rev"]?.stringValue)
        let over = try await server.request("COPY", "/db/a", headers: ["Destination": "b?rev=\(rev)"])
        #expect(over.status == 201)
        #expect(over.json["rev"]?.stringValue?.hasPrefix("2-") == true)
        let noDestination = try await server.request("COPY", "/db/a")
        #expect(noDestination.json == ["error": "bad_request", "reason": "Destination header is mandatory for COPY."])
        await server.stop()
    }

    @Test("_purge removes documents and answers CouchDB's shape; the purge shows in the database's purge_seq")
    func purge() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let a = try await server.request("PUT", "/db/a", json: ["n": 1])
        let rev = try #require(a.json["rev"]?.stringValue)
        let reply = try await server.request("POST", "/db/_purge", json: [
            "a": [.string(rev)], "zz": ["1-00000000000000000000000000000000"],
        ])
        #expect(reply.status == 201)
        #expect(reply.json == ["purge_seq": nil, "purged": ["a": [.string(rev)], "zz": []]])
        #expect(try await server.request("GET", "/db/a").status == 404)
        #expect(try await server.request("GET", "/db").json["purge_seq"] == "1")
        let badRev = try await server.request("POST", "/db/_purge", json: ["a": ["nope"]])
        #expect(badRev.json == ["error": "bad_request", "reason": "Invalid rev format"])
        #expect(try await server.request("GET", "/db/_purge").status == 405)
        await server.stop()
    }

    @Test("_revs_limit and _purged_infos_limit are 1000 until set, and stay set across a restart")
    func limits() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        #expect(try await server.request("GET", "/db/_revs_limit").json == 1000)
        #expect(try await server.request("GET", "/db/_purged_infos_limit").json == 1000)
        #expect(try await server.request("PUT", "/db/_revs_limit", body: Data("7".utf8)).json == ["ok": true])
        #expect(try await server.request("PUT", "/db/_purged_infos_limit", body: Data("20".utf8)).json == ["ok": true])
        let bad = try await server.request("PUT", "/db/_purged_infos_limit", body: Data("-1".utf8))
        #expect(bad.json == ["error": "bad_request", "reason": "`purged_infos_limit` must be positive integer"])
        #expect(try await server.request("GET", "/db/_revs_limit").json == 7)

        // A second server over the same folder reads them back.
        await server.stopKeepingFolder()
        let again = try await RunningServer(configure: { $0.dataDirectory = server.directory })
        #expect(try await again.request("GET", "/db/_revs_limit").json == 7)
        #expect(try await again.request("GET", "/db/_purged_infos_limit").json == 20)
        #expect(try await again.request("DELETE", "/db/_revs_limit").status == 405)
        await again.stop()
        await server.stop()
    }
}
