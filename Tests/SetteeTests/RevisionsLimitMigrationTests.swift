import Foundation
import Testing
import Settee
@testable import SetteeServer

/// A `_revs_limit` kept by older Settee versions in a database folder's
/// `couchdb-limits.json` moves into the database the first time the server
/// opens it, and leaves the file.
@Suite("settee serve: _revs_limit from couchdb-limits.json")
struct RevisionsLimitMigrationTests {
    func limitsFile(_ server: RunningServer, _ name: String) throws -> URL {
        let folder = try server.server.databases.directory(of: name)
        return folder.appendingPathComponent("couchdb-limits.json")
    }

    func stored(_ file: URL) throws -> JSONValue {
        try JSONValue(parsing: String(decoding: try Data(contentsOf: file), as: UTF8.self))
    }

    @Test("an older folder's _revs_limit is reported, stems histories, is moved into the database once, and the file keeps the rest")
    func migratesOnce() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let first = try await server.request("PUT", "/db/d", json: ["v": 1])
        var revision = try #require(first.json["rev"]?.stringValue)
        let file = try limitsFile(server, "db")
        await server.stopKeepingFolder()
        // As an older version left it: both limits in the file, none in the database.
        try Data(#"{"purged_infos_limit":20,"revs_limit":3}"#.utf8).write(to: file)

        let again = try await RunningServer(configure: { $0.dataDirectory = server.directory })
        #expect(try await again.request("GET", "/db/_revs_limit").json == 3)
        #expect(try await again.request("GET", "/db/_purged_infos_limit").json == 20)
        #expect(try stored(file) == ["purged_infos_limit": 20])
        // The limit is the database's: histories are stemmed to it.
        for value in 2...6 {
            let written = try await again.request("PUT", "/db/d", json: ["_rev": .string(revision), "v": .number(Double(value))])
            revision = try #require(written.json["rev"]?.stringValue)
        }
        #expect(try await again.request("GET", "/db/d?revs=true").json["_revisions"]?["ids"]?.arrayValue?.count == 3)
        // Set anew, it is not taken back from the file at the next start.
        #expect(try await again.request("PUT", "/db/_revs_limit", body: Data("5".utf8)).status == 200)
        await again.stopKeepingFolder()
        let third = try await RunningServer(configure: { $0.dataDirectory = server.directory })
        #expect(try await third.request("GET", "/db/_revs_limit").json == 5)
        #expect(try await third.request("GET", "/db/_purged_infos_limit").json == 20)
        await third.stop()
        await again.stop()
        await server.stop()
    }

    @Test("a file holding only _revs_limit is removed once it is moved")
    func removesEmptiedFile() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let file = try limitsFile(server, "db")
        await server.stopKeepingFolder()
        try Data(#"{"revs_limit":12}"#.utf8).write(to: file)
        let again = try await RunningServer(configure: { $0.dataDirectory = server.directory })
        #expect(try await again.request("GET", "/db/_revs_limit").json == 12)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(try await again.request("GET", "/db/_purged_infos_limit").json == 1000)
        await again.stop()
        await server.stop()
    }
}
