import Foundation
import Testing
import Settee
import SetteeServer
import SetteeCore

/// `/{db}/_design_docs` and `/{db}/_local_docs`, as CouchDB 3.5.0 answers them.
@Suite("settee serve: _design_docs and _local_docs")
struct ServerDesignDocsTests {
    @Test("_design_docs is _all_docs within the design documents: ranges kept inside, other keys left out, total_rows their count")
    func designDocs() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        for id in ["A", "a", "z", "_design/x", "_design/y", "_design/z"] {
            #expect(try await server.request("PUT", "/db/\(id)", json: [:]).status == 201)
        }
        func ids(_ path: String, method: String = "GET", body: JSONValue? = nil) async throws -> (ids: [String], total: JSONValue?) {
            let reply = if let body { try await server.request(method, path, json: body) } else { try await server.request(method, path) }
            #expect(reply.status == 200, "\(path)")
            return (reply.json["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [], reply.json["total_rows"])
        }
        let all = try await ids("/db/_design_docs")
        #expect(all.ids == ["_design/x", "_design/y", "_design/z"])
        #expect(all.total == 3)
        #expect(try await ids("/db/_design_docs?descending=true").ids == ["_design/z", "_design/y", "_design/x"])
        #expect(try await ids("/db/_design_docs?start_key=%22_design/y%22").ids == ["_design/y", "_design/z"])
        #expect(try await ids("/db/_design_docs?end_key=%22_design/y%22&inclusive_end=false").ids == ["_design/x"])
        #expect(try await ids("/db/_design_docs?end_key=%22_design/y%22&inclusive_end=false&descending=true").ids == ["_design/z"])
        #expect(try await ids("/db/_design_docs?descending=true&end_key=%22_design/y%22").ids == ["_design/z", "_design/y"])
        #expect(try await ids("/db/_design_docs?limit=1&skip=1").ids == ["_design/y"])
        #expect(try await ids("/db/_design_docs?start_key=%22a%22").ids == [], "past the design documents")
        #expect(try await ids("/db/_design_docs?key=%22a%22").ids == [])
        let posted = try await ids("/db/_design_docs", method: "POST", body: ["keys": ["_design/y", "a", "_design/nope"]])
        #expect(posted.ids == ["_design/y"])
        #expect(posted.total == 3)
        let update = try await server.request("GET", "/db/_design_docs?update_seq=true")
        #expect(update.json["update_seq"] != nil)
    }

    @Test("_local_docs lists the local documents as _all_docs lists documents, total_rows and offset null; numbers as written")
    func localDocs() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        #expect(try await server.request("PUT", "/db/plain", json: [:]).status == 201)
        for id in ["l2", "l1", "l3"] {
            #expect(try await server.request("PUT", "/db/_local/\(id)", body: Data(#"{"big":9007199254740993}"#.utf8)).status == 201)
        }
        func ids(_ query: String) async throws -> [String] {
            try await server.request("GET", "/db/_local_docs" + query).json["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        let all = try await server.request("GET", "/db/_local_docs")
        #expect(all.json["total_rows"] == .null && all.json["offset"] == .null)
        #expect(all.json["rows"]?[0] == ["id": "_local/l1", "key": "_local/l1", "value": ["rev": "0-1"]])
        #expect(try await ids("") == ["_local/l1", "_local/l2", "_local/l3"])
        #expect(try await ids("?descending=true&limit=2") == ["_local/l3", "_local/l2"])
        #expect(try await ids("?startkey=%22_local/l2%22") == ["_local/l2", "_local/l3"])
        #expect(try await ids("?endkey=%22_local/l2%22&inclusive_end=false") == ["_local/l1"])
        #expect(try await ids("?skip=1") == ["_local/l2", "_local/l3"])
        let withDocs = try await server.request("GET", "/db/_local_docs?include_docs=true&limit=1")
        #expect(String(decoding: withDocs.body, as: UTF8.self).contains(#""doc":{"_id":"_local/l1","_rev":"0-1","big":9007199254740993}"#))
        let keyed = try await server.request("POST", "/db/_local_docs", json: ["keys": ["_local/l3", "_local/nope"]])
        #expect(keyed.json["rows"] == [["id": "_local/l3", "key": "_local/l3", "value": ["rev": "0-1"]], ["key": "_local/nope", "error": "not_found"]])
        let limited = try await server.request("POST", "/db/_local_docs", json: ["keys": ["_local/l3", "_local/l1"], "limit": 1])
        #expect(limited.json["rows"]?.arrayValue?.count == 1, "limit applies to keys too")
    }

    @Test("A POST query's query-string parameters win over its body's: _all_docs, _design_docs, _local_docs and views")
    func queryStringWins() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        for id in ["a", "b", "_design/x", "_design/y", "_local/l1", "_local/l2"] {
            #expect(try await server.request("PUT", "/db/\(id)", json: ["views": ["v": ["map": "function(doc) { emit(doc._id, 1); }"]]]).status == 201)
        }
        for (path, keys) in [("_all_docs", ["a", "b"]), ("_design_docs", ["_design/x", "_design/y"]), ("_local_docs", ["_local/l1", "_local/l2"]),
                             ("_design/x/_view/v", ["a", "b"])] {
            let one = try await server.request("POST", "/db/\(path)?limit=1", json: ["keys": .array(keys.map(JSONValue.string)), "limit": 2])
            #expect(one.json["rows"]?.arrayValue?.count == 1, "\(path)")
            let none = try await server.request("POST", "/db/\(path)?limit=0", json: ["keys": .array(keys.map(JSONValue.string)), "limit": 2])
            #expect(none.json["rows"] == [], "\(path)")
            let body = try await server.request("POST", "/db/\(path)", json: ["keys": .array(keys.map(JSONValue.string)), "limit": 1])
            #expect(body.json["rows"]?.arrayValue?.count == 1, "\(path): the body's own limit")
        }
    }
}
