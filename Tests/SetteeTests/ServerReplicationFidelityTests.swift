import Foundation
import Testing
import Settee

/// What CouchDB's replicator sends a target and reads from a source, and
/// what it must find unchanged: checkpoints written again and again,
/// attachments' `revpos`, numbers exactly as sent.
@Suite("settee serve: what replication writes arrives unchanged")
struct ServerReplicationFidelityTests {
    @Test("A replication checkpoint is written again with _revisions {start: 0} (PUT and _bulk_docs new_edits=false), as CouchDB takes it")
    func checkpointsWrittenAgain() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let first = try await server.request("PUT", "/db/_local/cp", json: ["_id": "_local/cp", "session_id": "s1", "source_last_seq": 10])
        #expect(first.status == 201)
        #expect(first.json["rev"] == "0-1")
        // What CouchDB's replicator sends for its second checkpoint.
        let second = try await server.request("PUT", "/db/_local/cp", json: [
            "_id": "_local/cp", "_rev": "0-1", "_revisions": ["start": 0, "ids": ["1"]], "session_id": "s1", "source_last_seq": 20,
        ])
        #expect(second.status == 201, "\(second.json.jsonText)")
        #expect(second.json["rev"] == "0-2")
        #expect(try await server.request("GET", "/db/_local/cp").json["source_last_seq"] == 20)
        // The same through _bulk_docs with new_edits=false: written as it comes.
        let bulk = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "_local/cp", "_rev": "0-2", "_revisions": ["start": 0, "ids": ["2"]], "source_last_seq": 30],
            ["_id": "_local/other", "_rev": "0-7", "source_last_seq": 1],
        ]])
        #expect(bulk.status == 201, "\(bulk.json.jsonText)")
        let checkpoint = try await server.request("GET", "/db/_local/cp")
        #expect(checkpoint.json["source_last_seq"] == 30)
        #expect(checkpoint.json["_rev"] == "0-3")
        #expect(try await server.request("GET", "/db/_local/other").json["source_last_seq"] == 1)
        // Local documents still replicate nowhere: not in _changes or _all_docs.
        #expect(try await server.request("GET", "/db/_all_docs").json["rows"] == [])
        // A plain document's _revisions still start at 1.
        let plain = try await server.request("PUT", "/db/d?new_edits=false", json: [
            "_id": "d", "_rev": .string("1-" + String(repeating: "a", count: 32)), "_revisions": ["start": 0, "ids": ["x"]],
        ])
        #expect(plain.status == 400)
    }
}
