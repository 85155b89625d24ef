import Foundation
import Testing
import Settee

/// `_changes?include_docs=true` with `attachments`, `att_encoding_info` and
/// `conflicts`: each document carries `_conflicts` whatever else is asked, as
/// CouchDB's `couch_changes:maybe_get_changes_doc` opens it (`[deleted,
/// conflicts]`) before `couch_doc:to_json_obj` applies the attachment options.
@Suite("settee serve: _changes document options")
struct ChangesDocumentOptionsTests {
    /// A database whose document `d` has an attachment and a losing branch `2-000…`.
    func conflicted(_ server: RunningServer) async throws -> (winner: String, branch: String) {
        _ = try await server.request("PUT", "/db")
        let first = try await server.request("PUT", "/db/d", json: ["v": 1, "_attachments": [
            "a.txt": ["content_type": "text/plain", "data": "aGVsbG8="]]])
        let rev1 = try #require(first.json["rev"]?.stringValue)
        let second = try await server.request("PUT", "/db/d", json: ["_rev": .string(rev1), "v": 2, "_attachments": [
            "a.txt": ["stub": true]]])
        let winner = try #require(second.json["rev"]?.stringValue)
        let branch = "2-" + String(repeating: "0", count: 32)
        let hash = { (revision: String) in JSONValue.string(String(revision.split(separator: "-")[1])) }
        let reply = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "d", "_rev": .string(branch), "_revisions": ["start": 2, "ids": [hash(branch), hash(rev1)]], "v": "branch"]]])
        #expect(reply.json == [])
        _ = try await server.request("PUT", "/db/plain", json: ["v": 1])
        return (winner, branch)
    }

    @Test("conflicts=true adds _conflicts with attachments=true, att_encoding_info=true, or both")
    func conflictsWithAttachmentOptions() async throws {
        let server = try await RunningServer()
        let (winner, branch) = try await conflicted(server)
        for options in ["attachments=true", "att_encoding_info=true", "attachments=true&att_encoding_info=true", ""] {
            for feed in ["normal", "longpoll", "continuous"] {
                let path = "/db/_changes?feed=\(feed)&timeout=100&include_docs=true&conflicts=true" + (options.isEmpty ? "" : "&" + options)
                let reply = try await server.request("GET", path)
                let rows: [JSONValue] = if feed == "continuous" {
                    reply.body.split(separator: UInt8(ascii: "\n")).compactMap { try? JSONValue(parsing: String(decoding: $0, as: UTF8.self)) }
                        .filter { $0["id"] != nil }
                } else { reply.json["results"]?.arrayValue ?? [] }
                let doc = rows.first { $0["id"] == "d" }?["doc"]
                #expect(doc?["_rev"] == .string(winner), "\(path)")
                #expect(doc?["_conflicts"] == [.string(branch)], "\(path)")
                #expect(rows.first { $0["id"] == "plain" }?["doc"]?["_conflicts"] == nil, "\(path)")
                let attachment = doc?["_attachments"]?["a.txt"]
                if options.contains("attachments=true") {
                    #expect(attachment?["data"] == "aGVsbG8=", "\(path)")
                } else {
                    #expect(attachment?["stub"] == true, "\(path)")
                }
            }
        }
        // Without conflicts=true, none.
        let plain = try await server.request("GET", "/db/_changes?include_docs=true&attachments=true")
        #expect(plain.json["results"]?.arrayValue?.allSatisfy { $0["doc"]?["_conflicts"] == nil } == true)
        #expect(plain.json["results"]?.arrayValue?.first { $0["id"] == "d" }?["doc"]?["_attachments"]?["a.txt"]?["data"] == "aGVsbG8=")
        await server.stop()
    }
}
