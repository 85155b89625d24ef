import Foundation
import Testing
import Settee

/// Earlier revisions' bodies kept until compaction, as CouchDB keeps them
/// (`Database.Options.keepsEarlierRevisions`; on in `settee serve`).
@Suite("Earlier revisions kept until compaction")
struct EarlierRevisionTests {
    static func open(_ directory: TemporaryDirectory, keeping: Bool = true) throws -> Database {
        var options = Database.Options()
        options.keepsEarlierRevisions = keeping
        return try Database(at: directory.url.appendingPathComponent("db"), options: options)
    }

    @Test("Earlier revisions and their attachments read by revision until compact() removes them; verify agrees throughout")
    func keptUntilCompaction() throws {
        let directory = TemporaryDirectory()
        let db = try Self.open(directory)
        let first = try db.put(#"{"_id":"d","v":1,"_attachments":{"a.txt":{"content_type":"text/plain","data":"b25l"}}}"#)
        let second = try db.put(#"{"_id":"d","_rev":"\#(first.revision)","v":2,"_attachments":{"a.txt":{"content_type":"text/plain","data":"dHdv"}}}"#)
        let third = try db.put(#"{"_id":"d","_rev":"\#(second.revision)","v":3}"#)
        #expect(try db.document("d", revision: first.revision)?.value["v"] == 1)
        #expect(try db.document("d", revision: second.revision)?.value["v"] == 2)
        #expect(try db.document("d", revision: third.revision)?.value["v"] == 3)
        #expect(try db.attachment("a.txt", of: "d", revision: first.revision)?.data == Data("one".utf8))
        #expect(try db.attachment("a.txt", of: "d", revision: second.revision)?.data == Data("two".utf8))
        #expect(try db.document("d", revision: first.revision, attachments: true)?.value["_attachments"]?["a.txt"]?["data"] == "b25l")
        #expect(try db.verify().problems.isEmpty)
        #expect(try db.compact() == 2)
        #expect(try db.document("d", revision: first.revision) == nil)
        #expect(try db.document("d", revision: second.revision) == nil)
        #expect(try db.document("d")?.value["v"] == 3)
        #expect(try db.revisions(of: "d")?.history(of: third.revision).count == 3)   // the ids stay
        #expect(try db.verify().problems.isEmpty)
        #expect(try db.compact() == 0)
    }

    @Test("Without the option an edit keeps only the new revision, as before")
    func notKeptByDefault() throws {
        let directory = TemporaryDirectory()
        let db = try Self.open(directory, keeping: false)
        let first = try db.put(#"{"_id":"d","v":1}"#)
        _ = try db.put(#"{"_id":"d","_rev":"\#(first.revision)","v":2}"#)
        #expect(try db.document("d", revision: first.revision) == nil)
        #expect(try db.compact() == 0)
    }

    @Test("A conflicted document's replaced leaf is kept; a purge takes a document's earlier revisions and their attachments")
    func treesAndPurges() throws {
        let directory = TemporaryDirectory()
        let db = try Self.open(directory)
        let a = "1-" + String(repeating: "a", count: 32), b = "1-" + String(repeating: "b", count: 32)
        _ = try db.putReplicated([#"{"_id":"c","_rev":"\#(a)","side":"a","_attachments":{"x.bin":{"content_type":"application/octet-stream","data":"AAE="}}}"#,
                                  #"{"_id":"c","_rev":"\#(b)","side":"b"}"#])
        let edited = try db.put(#"{"_id":"c","_rev":"\#(a)","side":"a2"}"#)
        #expect(try db.document("c", revision: try #require(Revision(a)))?.value["side"] == "a")
        #expect(try db.document("c", revision: edited.revision)?.value["side"] == "a2")
        #expect(try db.attachment("x.bin", of: "c", revision: try #require(Revision(a)))?.data == Data([0, 1]))
        #expect(try db.verify().problems.isEmpty)
        _ = try db.purge("c")
        #expect(try db.document("c", revision: try #require(Revision(a))) == nil)
        #expect(try db.verify().problems.isEmpty)
        #expect(try db.compact() == 0)
    }

    @Test("include_docs of an emitted {_id, _rev} gives that revision while it is kept, null once compacted")
    func includeDocsOfARevision() throws {
        let directory = TemporaryDirectory()
        let db = try Self.open(directory)
        let first = try db.put(#"{"_id":"target","v":1}"#)
        _ = try db.put(#"{"_id":"target","_rev":"\#(first.revision)","v":2}"#)
        _ = try db.put(#"{"_id":"link","to":"target","rev":"\#(first.revision)"}"#)
        _ = try db.put(#"{"_id":"_design/l","views":{"v":{"map":"function (doc) { if (doc.to) emit(1, {_id: doc.to, _rev: doc.rev}); }"}}}"#)
        let options = ViewQueryOptions(includeDocs: true)
        #expect(try db.query("l/v", options: options).json.contains(#""doc":{"_id":"target","_rev":"\#(first.revision)","v":1}"#))
        try db.compact()
        #expect(try db.query("l/v", options: options).json.contains(#""doc":null"#))
    }
}

@Suite("settee serve: earlier revisions until _compact")
struct ServerEarlierRevisionTests {
    @Test("GET ?rev= of an earlier revision and its attachment answer until POST _compact; open_revs with latest answers the leaf")
    func untilCompact() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let first = try #require(try await server.request("PUT", "/db/d", json: ["v": 1]).json["rev"]?.stringValue)
        let put = try await server.request("PUT", "/db/d/a.txt?rev=\(first)", body: Data("one".utf8), headers: ["Content-Type": "text/plain"])
        let second = try #require(put.json["rev"]?.stringValue)
        let third = try #require(try await server.request("PUT", "/db/d", json: ["_rev": .string(second), "v": 3]).json["rev"]?.stringValue)
        let old = try await server.request("GET", "/db/d?rev=\(first)")
        #expect(old.status == 200)
        #expect(old.json["v"] == 1)
        #expect(String(decoding: try await server.request("GET", "/db/d/a.txt?rev=\(second)").body, as: UTF8.self) == "one")
        let latest = try await server.request("GET", "/db/d?open_revs=%5B%22\(first)%22%5D&latest=true", headers: ["Accept": "application/json"])
        #expect(latest.json[0]?["ok"]?["_rev"] == .string(third))
        let named = try await server.request("GET", "/db/d?open_revs=%5B%22\(first)%22%5D", headers: ["Accept": "application/json"])
        #expect(named.json[0]?["ok"]?["v"] == 1)
        let info = try await server.request("GET", "/db/d?revs_info=true").json["_revs_info"]
        #expect(info == [["rev": .string(third), "status": "available"], ["rev": .string(second), "status": "available"],
                         ["rev": .string(first), "status": "available"]])
        #expect(try await server.request("POST", "/db/_compact", json: [:]).status == 202)
        #expect(try await server.request("GET", "/db/d?rev=\(first)").status == 404)
        #expect(try await server.request("GET", "/db/d/a.txt?rev=\(second)").status == 404)
        #expect(try await server.request("GET", "/db/d").json["v"] == 3)
        #expect(try await server.request("GET", "/db/d?revs_info=true").json["_revs_info"]?[2]?["status"] == "missing")
    }
}
