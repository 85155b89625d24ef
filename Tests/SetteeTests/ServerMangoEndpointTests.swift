import Foundation
import Testing
import Settee

/// What CouchDB's own Mango suite (`src/mango/test`) asks of `_index` and
/// `_find`, path by path, as `mango_httpd.erl` answers.
@Suite("settee serve: _index and _find as CouchDB's Mango suite drives them")
struct ServerMangoEndpointTests {
    @Test("_index answers 404 for paths it does not have and 405 for a method a path does not take")
    func indexPathsAndMethods() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        for path in ["a", "a/b", "a/b/c/d", "a/b/c/d/e", "a/b/c/d/e/f"] {
            for method in ["GET", "PUT", "POST", "DELETE"] {
                #expect(try await server.request(method, "/db/_index/\(path)").status == 404, "\(method) _index/\(path)")
            }
        }
        let bulkGet = try await server.request("GET", "/db/_index/_bulk_delete")
        #expect(bulkGet.status == 405)
        #expect(bulkGet.json == ["error": "method_not_allowed", "reason": "Only POST allowed"])
        let created = try await server.request("POST", "/db/_index", json: ["index": ["fields": ["foo"]], "name": "idx", "ddoc": "dd"])
        #expect(created.json == ["result": "created", "id": "_design/dd", "name": "idx"])
        for path in ["dd/json/idx", "_design/dd/json/idx"] {
            #expect(try await server.request("GET", "/db/_index/\(path)").status == 405)
            #expect(try await server.request("PUT", "/db/_index/\(path)").status == 405)
        }
        await server.stop()
    }

    @Test("An index is deleted by its design document's name or id, escaped or not; a missing one or type is 404")
    func deleteIndex() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        for (name, path) in [("a", "_design%2Fdd/json/a"), ("b", "_design/dd/json/b"), ("c", "dd/json/c")] {
            _ = try await server.request("POST", "/db/_index", json: ["index": ["fields": [.string(name)]], "name": .string(name), "ddoc": "dd"])
            let deleted = try await server.request("DELETE", "/db/_index/\(path)")
            #expect(deleted.status == 200, "\(path)")
            #expect(deleted.json == ["ok": true])
        }
        #expect(try await server.request("GET", "/db/_index").json["total_rows"] == 1)
        _ = try await server.request("POST", "/db/_index", json: ["index": ["fields": ["x"]], "name": "x", "ddoc": "dd"])
        #expect(try await server.request("DELETE", "/db/_index/nothing/json/x").status == 404)
        #expect(try await server.request("DELETE", "/db/_index/dd/json/nothing").status == 404)
        let badType = try await server.request("DELETE", "/db/_index/dd/not_a_real_type/x")
        #expect(badType.status == 404)
        #expect(badType.json == ["error": "not_found", "reason": "missing"])
        await server.stop()
    }

    @Test("GET _index pages with limit and skip (also split by ';'); limit 0 or a negative skip is a 500 as in CouchDB")
    func listIndexesPaging() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        for n in 1...5 {
            _ = try await server.request("POST", "/db/_index", json: ["index": ["fields": [.string("f\(n)")]], "name": .string("idx_0\(n)")])
        }
        #expect(try await server.request("GET", "/db/_index?limit=2;").json["indexes"]?.arrayValue?.count == 2)
        #expect(try await server.request("GET", "/db/_index?limit=5;skip=4").json["indexes"]?.arrayValue?.count == 2)
        #expect(try await server.request("GET", "/db/_index?;skip=6").json["indexes"]?.arrayValue?.count == 0)
        #expect(try await server.request("GET", "/db/_index?;skip=100").json["indexes"]?.arrayValue?.count == 0)
        #expect(try await server.request("GET", "/db/_index?limit=10000000;").json["indexes"]?.arrayValue?.count == 6)
        let invalid: JSONValue = ["error": "invalid_list_index_params", "reason": "Index parameter ranges: limit > 1, skip > 0"]
        for query in ["limit=0", "skip=-1"] {
            let reply = try await server.request("GET", "/db/_index?\(query)")
            #expect(reply.status == 500, "\(query)")
            #expect(reply.json == invalid, "\(query)")
        }
        await server.stop()
    }

    @Test("_index/_bulk_delete deletes each design document's indexes and names the ones it could not")
    func bulkDelete() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        for n in 1...3 {
            _ = try await server.request("POST", "/db/_index", json: ["index": ["fields": [.string("f\(n)")]], "ddoc": .string("d\(n)")])
        }
        let reply = try await server.request("POST", "/db/_index/_bulk_delete",
                                             json: ["docids": ["_design/d1", "d2", "_design/d3", "_design/this_is_not_an_index_name"]])
        #expect(reply.status == 200)
        #expect(reply.json["success"]?.arrayValue?.count == 3)
        #expect(reply.json["success"]?.arrayValue?.first == ["id": "_design/d1", "ok": true])
        #expect(reply.json["fail"] == [["id": "_design/this_is_not_an_index_name", "error": "not_found"]])
        #expect(try await server.request("GET", "/db/_index").json["total_rows"] == 1)
        await server.stop()
    }

    @Test("A _find selector naming a field twice uses the last, as CouchDB reads JSON bodies")
    func repeatedSelectorField() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        _ = try await server.request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "1", "city": "London"], ["_id": "2", "city": "Paris"]]])
        let body = #"{"selector": {"city": {"$regex": "^L"}, "city": {"$exists": true}}}"#
        let reply = try await server.request("POST", "/db/_find", body: Data(body.utf8), headers: ["Content-Type": "application/json"])
        #expect(reply.status == 200)
        #expect(reply.json["docs"]?.arrayValue?.count == 2)
        await server.stop()
    }
}
