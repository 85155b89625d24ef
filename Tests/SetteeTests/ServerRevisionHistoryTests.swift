import Foundation
import Testing
import Settee

/// `settee serve` keeps every document's revision path, as CouchDB 3.5:
/// `revs=true`, `revs_info`, `_revs_diff`, `_missing_revs` and replication
/// (to and from Settee) see a normally written document's earlier revisions;
/// `_all_docs` and `_changes` show `_conflicts` with `include_docs` and
/// `conflicts=true`.
@Suite("settee serve: revision histories")
struct ServerRevisionHistoryTests {
    /// Writes `/db/id` `count` times; the revisions, oldest first.
    func write(_ server: RunningServer, _ id: String, in db: String = "db", times count: Int) async throws -> [String] {
        var revisions: [String] = []
        for value in 1...count {
            var body: [(String, JSONValue)] = [("v", .number(Double(value)))]
            if let last = revisions.last { body.append(("_rev", .string(last))) }
            let reply = try await server.request("PUT", "/\(db)/\(id)", json: .object(body))
            #expect(reply.status == 201)
            revisions.append(try #require(reply.json["rev"]?.stringValue))
        }
        return revisions
    }

    static func hash(_ revision: String) -> JSONValue { .string(String(revision.split(separator: "-")[1])) }

    @Test("revs=true, revs_info, _revs_diff and _missing_revs see every revision of a document written three times")
    func historyOverHTTP() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let revs = try await write(server, "d", times: 3)
        let read = try await server.request("GET", "/db/d?revs=true&revs_info=true")
        #expect(read.json["_revisions"] == ["start": 3, "ids": .array(revs.reversed().map(Self.hash))])
        // Earlier revisions' bodies are kept until compaction, as in CouchDB: available, then missing.
        #expect(read.json["_revs_info"] == .array([
            ["rev": .string(revs[2]), "status": "available"], ["rev": .string(revs[1]), "status": "available"],
            ["rev": .string(revs[0]), "status": "available"]]))
        #expect(try await server.request("POST", "/db/_compact", json: [:]).status == 202)
        #expect(try await server.request("GET", "/db/d?revs_info=true").json["_revs_info"] == .array([
            ["rev": .string(revs[2]), "status": "available"], ["rev": .string(revs[1]), "status": "missing"],
            ["rev": .string(revs[0]), "status": "missing"]]))
        let diff = try await server.request("POST", "/db/_revs_diff", json: ["d": .array(revs.map { JSONValue.string($0) })])
        #expect(diff.json == [:])
        let unknown = JSONValue.string("4-" + String(repeating: "4", count: 32))
        let missing = try await server.request("POST", "/db/_missing_revs", json: ["d": [.string(revs[0]), unknown]])
        #expect(missing.json == ["missing_revs": ["d": [unknown]]])
        let bulkGet = try await server.request("POST", "/db/_bulk_get?revs=true", json: ["docs": [["id": "d"]]])
        #expect(bulkGet.json["results"]?[0]?["docs"]?[0]?["ok"]?["_revisions"]?["ids"]?.arrayValue?.count == 3)
        let open = try await server.request("GET", "/db/d?open_revs=all&revs=true", headers: ["Accept": "application/json"])
        #expect(open.json[0]?["ok"]?["_revisions"]?["ids"] == .array(revs.reversed().map(Self.hash)))
        // latest=true from an ancestor finds the leaf.
        let latest = try await server.request("GET", "/db/d?open_revs=%5B%22\(revs[0])%22%5D&latest=true", headers: ["Accept": "application/json"])
        #expect(latest.json[0]?["ok"]?["_rev"] == .string(revs[2]))
        await server.stop()
    }

    @Test("_revs_limit stems the histories of normal writes")
    func revisionsLimit() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        #expect(try await server.request("PUT", "/db/_revs_limit", body: Data("2".utf8)).json == ["ok": true])
        #expect(try await server.request("GET", "/db/_revs_limit").json == 2)
        let revs = try await write(server, "d", times: 4)
        let read = try await server.request("GET", "/db/d?revs=true")
        #expect(read.json["_revisions"] == ["start": 4, "ids": [Self.hash(revs[3]), Self.hash(revs[2])]])
        await server.stop()
    }

    /// Replicates `source` to `target` as a replicator does: the changes
    /// (every leaf), `_revs_diff` on the target, the missing revisions read
    /// with `open_revs` and `revs=true`, written with `new_edits=false`.
    /// Returns how many revisions were written.
    func replicate(_ server: RunningServer, from source: String, to target: String) async throws -> Int {
        let changes = try await server.request("GET", "/\(source)/_changes?style=all_docs")
        var asked: [(String, JSONValue)] = []
        for row in changes.json["results"]?.arrayValue ?? [] {
            let id = try #require(row["id"]?.stringValue)
            asked.append((id, .array((row["changes"]?.arrayValue ?? []).compactMap { $0["rev"] })))
        }
        let diff = try await server.request("POST", "/\(target)/_revs_diff", json: .object(asked))
        var documents: [JSONValue] = []
        for (id, entry) in diff.json.objectValue ?? [] {
            let revs = try #require(entry["missing"]).jsonText.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            let open = try await server.request("GET", "/\(source)/\(id)?revs=true&open_revs=\(revs)", headers: ["Accept": "application/json"])
            documents += (open.json.arrayValue ?? []).compactMap { $0["ok"] }
        }
        if !documents.isEmpty {
            let written = try await server.request("POST", "/\(target)/_bulk_docs", json: ["new_edits": false, "docs": .array(documents)])
            #expect(written.status == 201)
            #expect(written.json == [])
        }
        return documents.count
    }

    @Test("replicating Settee to Settee by hand, twice with updates in between, leaves no conflicts")
    func roundTrip() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/source")
        _ = try await server.request("PUT", "/target")
        let a = try await write(server, "a", in: "source", times: 2)
        _ = try await write(server, "b", in: "source", times: 1)
        #expect(try await replicate(server, from: "source", to: "target") == 2)
        // Updates on the source: a continues, b is deleted, c is new.
        let a3 = try await server.request("PUT", "/source/a", json: ["_rev": .string(a[1]), "v": 3]).json["rev"]
        let b = try await server.request("GET", "/source/b").json["_rev"]?.stringValue ?? ""
        #expect(try await server.request("DELETE", "/source/b?rev=\(b)").status == 200)
        _ = try await write(server, "c", in: "source", times: 1)
        #expect(try await replicate(server, from: "source", to: "target") == 3)
        // Nothing left to replicate.
        #expect(try await replicate(server, from: "source", to: "target") == 0)
        let target = try await server.request("GET", "/target/a?conflicts=true&deleted_conflicts=true&revs=true")
        #expect(target.json["_rev"] == a3)
        #expect(target.json["_conflicts"] == nil)
        #expect(target.json["_deleted_conflicts"] == nil)
        #expect(target.json["_revisions"]?["ids"]?.arrayValue?.count == 3)
        #expect(target.json["v"] == 3)
        #expect(try await server.request("GET", "/target/b").status == 404)
        let changes = try await server.request("GET", "/target/_changes?style=all_docs")
        #expect(changes.json["results"]?.arrayValue?.allSatisfy { $0["changes"]?.arrayValue?.count == 1 } == true)
        #expect(try await server.request("GET", "/target").json["doc_count"] == 2)
        // And back: the source already has everything.
        #expect(try await replicate(server, from: "target", to: "source") == 0)
        await server.stop()
    }

    @Test("_all_docs and _changes with include_docs and conflicts=true add _conflicts")
    func conflictsInListings() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let revs = try await write(server, "d", times: 2)
        _ = try await write(server, "plain", times: 1)
        let branch = "2-" + String(repeating: "0", count: 32)
        let reply = try await server.request("POST", "/db/_bulk_docs", json: ["new_edits": false, "docs": [
            ["_id": "d", "_rev": .string(branch), "_revisions": ["start": 2, "ids": [Self.hash(branch), Self.hash(revs[0])]], "v": "branch"]]])
        #expect(reply.json == [])
        // 2-000… loses to the normally written 2-….
        let allDocs = try await server.request("GET", "/db/_all_docs?include_docs=true&conflicts=true")
        #expect(allDocs.json["rows"]?[0]?["doc"]?["_conflicts"] == [.string(branch)])
        #expect(allDocs.json["rows"]?[0]?["doc"]?["_rev"] == .string(revs[1]))
        #expect(allDocs.json["rows"]?[1]?["doc"]?["_conflicts"] == nil)
        let withoutConflicts = try await server.request("GET", "/db/_all_docs?include_docs=true")
        #expect(withoutConflicts.json["rows"]?[0]?["doc"]?["_conflicts"] == nil)
        let changes = try await server.request("GET", "/db/_changes?include_docs=true&conflicts=true")
        let rows = changes.json["results"]?.arrayValue ?? []
        #expect(rows.first { $0["id"] == "d" }?["doc"]?["_conflicts"] == [.string(branch)])
        #expect(rows.first { $0["id"] == "plain" }?["doc"]?["_conflicts"] == nil)
        let plainChanges = try await server.request("GET", "/db/_changes?include_docs=true")
        #expect(plainChanges.json["results"]?.arrayValue?.allSatisfy { $0["doc"]?["_conflicts"] == nil } == true)
        await server.stop()
    }
}
