import Foundation
import Testing
import Settee

@Suite("settee serve: the server, databases and documents over HTTP")
struct ServerBasicsTests {
    @Test("GET / welcomes as CouchDB does; a database is created, listed, read and deleted")
    func databaseLifecycle() async throws {
        let server = try await RunningServer()
        let welcome = try await server.request("GET", "/")
        #expect(welcome.status == 200)
        #expect(welcome.json["couchdb"] == "Welcome")
        #expect(welcome.header("Content-Type") == "application/json")

        #expect(try await server.request("PUT", "/books").status == 201)
        let again = try await server.request("PUT", "/books")
        #expect(again.status == 412)
        #expect(again.json["error"] == "file_exists")
        let bad = try await server.request("PUT", "/Books")
        #expect(bad.status == 400)
        #expect(bad.json["error"] == "illegal_database_name")
        let traversal = try await server.request("PUT", "/..%2F..%2Fetc")
        #expect(traversal.status == 400)

        #expect(try await server.request("GET", "/_all_dbs").json == ["books"])
        let info = try await server.request("GET", "/books")
        #expect(info.json["db_name"] == "books")
        #expect(info.json["doc_count"] == 0)
        #expect(try await server.request("DELETE", "/books").status == 200)
        let gone = try await server.request("GET", "/books")
        #expect(gone.status == 404)
        #expect(gone.json == ["error": "not_found", "reason": "Database does not exist."])
        await server.stop()
    }

    @Test("Documents are written, read, updated with their revision and deleted; a stale revision conflicts")
    func documents() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let created = try await server.request("PUT", "/db/ann", json: ["name": "Ann"])
        #expect(created.status == 201)
        let rev = try #require(created.json["rev"]?.stringValue)
        #expect(created.header("ETag") == "\"\(rev)\"")

        let read = try await server.request("GET", "/db/ann")
        #expect(read.json == ["_id": "ann", "_rev": .string(rev), "name": "Ann"])

        let stale = try await server.request("PUT", "/db/ann", json: ["name": "Ann B"])
        #expect(stale.status == 409)
        #expect(stale.json == ["error": "conflict", "reason": "Document update conflict."])

        let updated = try await server.request("PUT", "/db/ann?rev=\(rev)", json: ["name": "Ann B"])
        #expect(updated.status == 201)
        let rev2 = try #require(updated.json["rev"]?.stringValue)
        #expect(try await server.request("DELETE", "/db/ann?rev=\(rev2)").status == 200)
        let deleted = try await server.request("GET", "/db/ann")
        #expect(deleted.status == 404)
        #expect(deleted.json == ["error": "not_found", "reason": "deleted"])

        let bulk = try await server.request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "a"], ["_id": "b", "_rev": "1-0123456789abcdef0123456789abcdef"]]])
        #expect(bulk.status == 201)
        #expect(bulk.json[0]?["ok"] == true)
        #expect(bulk.json[1]?["error"] == "conflict")
        let all = try await server.request("GET", "/db/_all_docs")
        #expect(all.json["rows"]?.arrayValue?.map { $0["id"] } == ["a"])
        await server.stop()
    }

    @Test("find, explain and _index answer as CouchDB's Mango does")
    func find() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        _ = try await server.request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "a", "n": 1], ["_id": "b", "n": 2], ["_id": "c", "n": 3]]])
        let index = try await server.request("POST", "/db/_index", json: ["index": ["fields": ["n"]], "name": "by-n", "ddoc": "n"])
        #expect(index.json == ["result": "created", "id": "_design/n", "name": "by-n"])
        let found = try await server.request("POST", "/db/_find", json: ["selector": ["n": ["$gte": 2]], "fields": ["_id"]])
        #expect(found.json["docs"] == [["_id": "b"], ["_id": "c"]])
        let explained = try await server.request("POST", "/db/_explain", json: ["selector": ["n": 2]])
        #expect(explained.json["index"]?["name"] == "by-n")
        let bad = try await server.request("POST", "/db/_find", json: ["selector": ["n": ["$bad": 1]]])
        #expect(bad.status == 400)
        #expect(bad.json["error"] == "invalid_operator")
        let listed = try await server.request("GET", "/db/_index")
        #expect(listed.json["total_rows"] == 2)
        #expect(try await server.request("DELETE", "/db/_index/n/json/by-n").status == 200)
        #expect(try await server.request("GET", "/db/_index").json["total_rows"] == 1)
        await server.stop()
    }

    @Test("CouchDB's answers word for word: DELETE without a revision of a missing, deleted or live document; a body that is not an object; bad special members; ?rev= on a database")
    func couchDBAnswers() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let missing = try await server.request("DELETE", "/db/doc-does-not-exist")
        #expect(missing.status == 404 && missing.json == ["error": "not_found", "reason": "missing"])
        let written = try await server.request("PUT", "/db/d", json: ["v": 1])
        let live = try await server.request("DELETE", "/db/d")
        #expect(live.status == 409 && live.json == ["error": "conflict", "reason": "Document update conflict."])
        _ = try await server.request("DELETE", "/db/d?rev=\(written.json["rev"]!.stringValue!)")
        let deleted = try await server.request("DELETE", "/db/d")
        #expect(deleted.status == 404 && deleted.json == ["error": "not_found", "reason": "deleted"])

        for (method, path) in [("PUT", "/db/bar"), ("POST", "/db")] {
            let array = try await server.request(method, path, body: Data("[]".utf8), headers: ["Content-Type": "application/json"])
            #expect(array.status == 400 && array.json == ["error": "bad_request", "reason": "Document must be a JSON object"])
            let special = try await server.request(method, path == "/db" ? path : "/db/goldfish", json: ["_zing": 4])
            #expect(special.status == 400 && special.json == ["error": "doc_validation", "reason": "Bad special document member: _zing"])
        }
        let notObject = try await server.request("POST", "/db/_all_docs", body: Data("[]".utf8), headers: ["Content-Type": "application/json"])
        #expect(notObject.status == 400 && notObject.json == ["error": "bad_request", "reason": "Request body must be a JSON object"])
        let keys = try await server.request("POST", "/db/_all_docs", json: ["keys": 1])
        #expect(keys.status == 400 && keys.json == ["error": "bad_request", "reason": "`keys` body member must be an array."])
        let databaseRev = try await server.request("DELETE", "/db?rev=1-abc")
        #expect(databaseRev.json["reason"] == "You tried to DELETE a database with a ?=rev parameter. Did you mean to DELETE a document instead?")
        await server.stop()
    }

    @Test("_all_dbs with start_key, end_key, inclusive_end, descending, skip and limit; X-Couch-Request-ID echoed or made")
    func allDatabasesAndHeaders() async throws {
        let server = try await RunningServer()
        for name in ["a1", "b2", "c3", "d4"] { _ = try await server.request("PUT", "/" + name) }
        #expect(try await server.request("GET", "/_all_dbs?start_key=%22b2%22&limit=1").json == ["b2"])
        #expect(try await server.request("GET", "/_all_dbs?startkey=%22b%22&endkey=%22c3%22").json == ["b2", "c3"])
        #expect(try await server.request("GET", "/_all_dbs?start_key=%22b%22&end_key=%22c3%22&inclusive_end=false").json == ["b2"])
        #expect(try await server.request("GET", "/_all_dbs?descending=true&start_key=%22c3%22&skip=1").json == ["b2", "a1"])
        #expect(try await server.request("GET", "/_all_dbs?start_key=b2").status == 400)

        let given = try await server.request("GET", "/", headers: ["X-Couch-Request-ID": "E7498DE1-B661-42FA-943D-17F890143068"])
        #expect(given.header("X-Couch-Request-ID") == "E7498DE1-B661-42FA-943D-17F890143068")
        let made = try #require(try await server.request("GET", "/", headers: ["X-Couch-Request-ID": "not valid!"]).header("X-Couch-Request-ID"))
        #expect(made.count == 10 && made.allSatisfy(\.isHexDigit))
        #expect(try await server.request("GET", "/nodb").header("X-Couch-Request-ID")?.count == 10)

        let written = try await server.request("PUT", "/a1/foo", json: ["v": 1])
        let etag = "\"" + written.json["rev"]!.stringValue! + "\""
        let cached = try await server.request("GET", "/a1/foo", headers: ["If-None-Match": etag])
        // (CouchDB also sends Content-Length: 0; SwiftNIO's encoder drops framing headers from a 304.)
        #expect(cached.status == 304 && cached.body.isEmpty)
        await server.stop()
    }
}
