import Foundation
import Testing
import Settee
import SetteeServer
import SetteeCore

/// `/{db}/_design_docs`, as CouchDB 3.5.0 answers it.
@Suite("settee serve: _design_docs")
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
}
