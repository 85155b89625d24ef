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

extension ServerReplicationFidelityTests {
    @Test("A replicated write keeps the revpos its sender gives new attachment bytes, inline and multipart; an edit gives its own generation")
    func revposKept() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let rev3 = "3-" + String(repeating: "c", count: 32)
        let revisions: JSONValue = ["start": 3, "ids": [.string(String(repeating: "c", count: 32)), .string(String(repeating: "b", count: 32)),
                                                        .string(String(repeating: "a", count: 32))]]
        let inline = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [[
            "_id": "inline", "_rev": .string(rev3), "_revisions": revisions,
            "_attachments": ["a.txt": ["content_type": "text/plain", "revpos": 2, "data": "aGVsbG8="]],
        ]]])
        #expect(inline.status == 201)
        #expect(try await server.request("GET", "/db/inline").json["_attachments"]?["a.txt"]?["revpos"] == 2)
        let json: JSONValue = ["_id": "parts", "_rev": .string(rev3), "_revisions": revisions,
                               "_attachments": ["b.bin": ["content_type": "application/octet-stream", "revpos": 1, "follows": true, "length": 3]]]
        let body = Data("--xyz\r\nContent-Type: application/json\r\n\r\n\(json.jsonText)\r\n--xyz\r\n\r\nabc\r\n--xyz--".utf8)
        let multipart = try await server.request("PUT", "/db/parts?new_edits=false", body: body,
                                                 headers: ["Content-Type": "multipart/related; boundary=\"xyz\""])
        #expect(multipart.status == 201, "\(multipart.json.jsonText)")
        #expect(try await server.request("GET", "/db/parts").json["_attachments"]?["b.bin"]?["revpos"] == 1)
        // An edit of its own: the new generation, whatever revpos it names.
        let edited = try await server.request("PUT", "/db/own", json: ["_attachments": ["c.txt": ["content_type": "text/plain", "revpos": 7, "data": "aGk="]]])
        #expect(edited.status == 201)
        #expect(try await server.request("GET", "/db/own").json["_attachments"]?["c.txt"]?["revpos"] == 1)
    }
}

extension ServerReplicationFidelityTests {
    static let numbers = #""a":9007199254740993,"b":12345678901234567890,"c":1.0,"d":[2.50,-0.0,1e3],"e":{"f":123456789012345678901234567890}"#

    /// Whether `body` holds every number of ``numbers`` as it was sent.
    static func holdsNumbers(_ body: Data) -> Bool {
        String(decoding: body, as: UTF8.self).contains(numbers)
    }

    @Test("Numbers arrive as sent on every HTTP write path and read back so everywhere; revision ids are CouchDB's")
    func numbersExact() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let json = ["Content-Type": "application/json"]
        #expect(try await server.request("PUT", "/db/put", body: Data("{\(Self.numbers)}".utf8), headers: json).status == 201)
        #expect(try await server.request("POST", "/db", body: Data(#"{"_id":"post",\#(Self.numbers)}"#.utf8), headers: json).status == 201)
        #expect(try await server.request("POST", "/db/_bulk_docs", body: Data(#"{"docs":[{"_id":"bulk",\#(Self.numbers)}]}"#.utf8), headers: json).status == 201)
        let replicated = #"{"docs":[{"_id":"replicated","_rev":"1-\#(String(repeating: "a", count: 32))",\#(Self.numbers)}],"new_edits":false}"#
        #expect(try await server.request("POST", "/db/_bulk_docs", body: Data(replicated.utf8), headers: json).status == 201)
        let part = Data("--xyz\r\nContent-Type: application/json\r\n\r\n{\(Self.numbers)}\r\n--xyz--".utf8)
        #expect(try await server.request("PUT", "/db/multipart", body: part, headers: ["Content-Type": "multipart/related; boundary=\"xyz\""]).status == 201)
        for id in ["put", "post", "bulk", "replicated", "multipart"] {
            #expect(Self.holdsNumbers(try await server.request("GET", "/db/\(id)").body), "\(id)")
        }
        for path in ["/db/_all_docs?include_docs=true", "/db/_changes?include_docs=true"] {
            let body = String(decoding: try await server.request("GET", path).body, as: UTF8.self)
            #expect(body.components(separatedBy: Self.numbers).count == 6, "\(path)")
        }
        let found = try await server.request("POST", "/db/_find", body: Data(#"{"selector":{"c":1}}"#.utf8), headers: json)
        #expect(String(decoding: found.body, as: UTF8.self).components(separatedBy: Self.numbers).count == 6)
        // CouchDB's revision id for the same body (its float 1.0 and 2.0 are floats in the revision's term).
        let floats = try await server.request("PUT", "/db/floats", body: Data(#"{"one":1.0,"two":2.0}"#.utf8), headers: json)
        #expect(floats.json["rev"] == "1-13f523a7ba9f5e2a304b41d812e1e755")
    }
}
