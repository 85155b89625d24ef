import Foundation
import Testing
import Settee
import SetteeServer
import SetteeCore

/// Document ids a request names, checked before anything is written, as
/// CouchDB 3.5 checks them (values from CouchDB 3.5.0).
@Suite("settee serve: document ids in _bulk_docs and _purge")
struct ServerDocumentIDTests {
    @Test("A _bulk_docs with one id CouchDB refuses is refused whole (400 illegal_docid), with or without new_edits; nothing is written")
    func bulkDocsRefusedWhole() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        for (docs, newEdits, reason) in [
            ([["_id": "ok1"], ["_id": "_foo"]] as JSONValue, true, "Only reserved document ids may start with underscore."),
            ([["_id": ""]], true, "Document id must not be empty"),
            ([["_id": "_foo", "_rev": "1-abc"]], false, "Only reserved document ids may start with underscore."),
        ] {
            let reply = try await server.request("POST", "/db/_bulk_docs", json: ["docs": docs, "new_edits": .bool(newEdits)])
            #expect(reply.status == 400)
            #expect(reply.json == ["error": "illegal_docid", "reason": .string(reason)])
        }
        #expect(try await server.request("GET", "/db/ok1").status == 404, "nothing written")

        // A partitioned database: every id is partition:id.
        #expect(try await server.request("PUT", "/parts?partitioned=true").status == 201)
        for (id, reason) in [("foo1", "Doc id must be of form partition:id"), ("_foo:1", "Only reserved document ids may start with underscore."),
                             ("foo:", "Document id must not be empty")] {
            let reply = try await server.request("POST", "/parts/_bulk_docs", json: ["docs": [["_id": .string(id)]]])
            #expect(reply.status == 400, "\(id)")
            #expect(reply.json == ["error": "illegal_docid", "reason": .string(reason)], "\(id)")
        }
        #expect(try await server.request("POST", "/parts/_bulk_docs", json: ["docs": [["_id": "p:1"], ["_id": "_design/x"]]]).status == 201)
        let purge = try await server.request("POST", "/parts/_purge", json: ["no_partition": ["1-967a00dff5e02add41819138abb3284d"]])
        #expect(purge.status == 400)
        #expect(purge.json == ["error": "illegal_docid", "reason": "Doc id must be of form partition:id"])
    }
}
