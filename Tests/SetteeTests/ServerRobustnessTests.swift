import Foundation
import Testing
@testable import Settee
import SetteeServer

@Suite("settee serve: leftovers, gone clients, slow heads, request objects, _users in bulk, cookie options")
struct ServerRobustnessTests {
    @Test("Attachment uploads a crash left in DATA/.uploads are removed when the server starts")
    func leftoverUploads() async throws {
        let server = try await RunningServer { configuration in
            let uploads = configuration.dataDirectory.appendingPathComponent(".uploads", isDirectory: true)
            try? FileManager.default.createDirectory(at: uploads, withIntermediateDirectories: true)
            for name in ["one", "two"] {
                _ = FileManager.default.createFile(atPath: uploads.appendingPathComponent(name).path, contents: Data("partial".utf8))
            }
        }
        let uploads = server.directory.appendingPathComponent(".uploads", isDirectory: true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: uploads.path) == [])
        // Uploads still work afterwards.
        _ = try await server.request("PUT", "/db")
        let put = try await server.request("PUT", "/db/doc/note.txt", body: Data("hello".utf8), headers: ["Content-Type": "text/plain"])
        #expect(put.status == 201)
        #expect(try await server.request("GET", "/db/doc/note.txt").body == Data("hello".utf8))
        await server.stop()
    }

    /// The commit waits open on database `db` of `server`.
    private static func waits(_ server: RunningServer) throws -> Int {
        try server.server.databases.database("db").store.commits.waiting
    }

    /// Waits up to `seconds` for `condition`; whether it held.
    private static func eventually(within seconds: Double, _ condition: () throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try condition()
    }

    @Test("A client that leaves a waiting longpoll or continuous feed ends its wait at once, not at the next change or the timeout",
          arguments: ["longpoll", "continuous"])
    func goneClientEndsWait(feed: String) async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let client = try RawConnection(port: server.port)
        client.send("GET /db/_changes?feed=\(feed)&since=now&timeout=60000 HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(try await Self.eventually(within: 10) { try Self.waits(server) == 1 }, "the feed did not wait")
        client.close()
        let ended = try await Self.eventually(within: 2) { try Self.waits(server) == 0 }
        let open = try Self.waits(server)
        #expect(ended, "\(open) waits open 2 s after the client left")
        // The server goes on answering, and feeds still see changes.
        #expect(try await server.request("PUT", "/db/after", json: ["n": 1]).status == 201)
        let changes = try await server.request("GET", "/db/_changes?feed=longpoll&since=0")
        #expect(changes.json["results"]?.arrayValue?.count == 1)
        await server.stop()
    }

    @Test("A request head sent too slowly is cut at the header timeout, not the idle timeout; a kept-alive connection is not")
    func headerTimeout() async throws {
        let server = try await RunningServer { configuration in
            configuration.headerTimeout = .seconds(1)
            configuration.idleTimeout = .seconds(60)
        }
        // Half a head, then a header line every 200 ms: the clock runs from the first byte.
        let slow = try RawConnection(port: server.port)
        slow.send("GET / HTTP/1.1\r\nHost: localhost\r\n")
        let started = Date()
        let trickle = Task.detached {
            for index in 0..<25 {
                guard slow.send("X-Slow-\(index): yes\r\n") else { return }
                usleep(200_000)
            }
        }
        let received = await slow.receive(for: 30)
        trickle.cancel()
        let closed = try #require(received.closedAt, "the connection was still open after 30 s")
        // Cut by the header timeout (1 s), not the idle one (60 s): far sooner than 60 s, however busy the machine.
        #expect(closed.timeIntervalSince(started) < 30)
        #expect(!received.text.contains("200 OK"))

        // A connection idle between requests for longer than the header timeout still serves the next request.
        let kept = try RawConnection(port: server.port)
        kept.send("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let first = await kept.receive(for: 2)
        #expect(first.text.hasPrefix("HTTP/1.1 200"))
        #expect(!first.closed)
        kept.send("GET /_up HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let second = await kept.receive(for: 1)
        #expect(second.text.hasPrefix("HTTP/1.1 200"), "\(second)")
        await server.stop()
    }

    @Test("req.peer is the client's address and req.secObj the database's security object, in shows and in filters")
    func peerAndSecurityObject() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let security: JSONValue = ["admins": ["names": ["boss"], "roles": []], "members": ["names": [], "roles": ["staff", "_admin"]]]
        #expect(try await server.request("PUT", "/db/_security", json: security).status == 200)
        _ = try await server.request("PUT", "/db/_design/app", json: [
            "shows": ["who": "function (doc, req) { return {json: {peer: req.peer, secObj: req.secObj}}; }"],
            "filters": ["from": "function (doc, req) { return req.peer === req.query.peer && req.secObj.admins.names[0] === 'boss'; }"],
        ])
        _ = try await server.request("PUT", "/db/a", json: ["n": 1])

        let client = try RawConnection(port: server.port, from: "127.0.0.7")
        client.send("GET /db/_design/app/_show/who HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        let shown = await client.receive(for: 10)
        let body = try #require(shown.text.range(of: "\r\n\r\n").map { String(shown.text[$0.upperBound...]) })
        let json = try JSONValue(parsing: body)
        #expect(json["peer"] == "127.0.0.7")
        #expect(json["secObj"] == security)

        let filtered = try RawConnection(port: server.port, from: "127.0.0.9")
        filtered.send("GET /db/_changes?filter=app/from&peer=127.0.0.9 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        let changes = await filtered.receive(for: 10)
        #expect(changes.text.contains("\"id\":\"a\""), "\(changes.text)")
        await server.stop()
    }

    @Test("_bulk_docs on _users: a refused document gets its own error row, the others are written")
    func usersBulkRefusals() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/_users")
        let reply = try await server.request("POST", "/_users/_bulk_docs", json: ["docs": [
            ["_id": "org.couchdb.user:ann", "type": "user", "name": "ann", "roles": [], "password": "pear"],
            ["_id": "org.couchdb.user:bob", "type": "user", "name": "bob", "roles": ["_admin"], "password": "x"],
            ["_id": "org.couchdb.user:cy", "type": "person", "name": "cy", "roles": []],
            ["_id": "org.couchdb.user:dee", "type": "user", "name": "dee", "roles": ["staff"], "password": "plum"],
        ]])
        #expect(reply.status == 201)
        let rows = try #require(reply.json.arrayValue)
        #expect(rows.count == 4)
        #expect(rows[0]["ok"] == true)
        #expect(rows[1] == ["id": "org.couchdb.user:bob", "error": "forbidden",
                            "reason": "No system roles (starting with underscore) in users db."])
        #expect(rows[2] == ["id": "org.couchdb.user:cy", "error": "forbidden", "reason": "doc.type must be user"])
        #expect(rows[3]["ok"] == true)
        #expect(try await server.request("GET", "/_users/org.couchdb.user:bob").status == 404)
        let dee = try await server.request("GET", "/_users/org.couchdb.user:dee")
        #expect(dee.json["password_scheme"] == "pbkdf2")
        #expect(dee.json["password"] == nil)
        await server.stop()
    }

    @Test("Session cookies carry Secure and SameSite when configured, in mochiweb's order")
    func cookieOptions() async throws {
        let plain = try await ServerSecurityTests.secured()
        let plainCookie = try #require(try await plain.request("POST", "/_session", json: ["name": "admin", "password": "s3cret"]).header("Set-Cookie"))
        #expect(plainCookie.hasSuffix("; Path=/; HttpOnly"))
        await plain.stop()

        let server = try await ServerSecurityTests.secured { configuration in
            configuration.secureCookies = true
            configuration.cookieSameSite = .lax
        }
        let login = try await server.request("POST", "/_session", json: ["name": "admin", "password": "s3cret"])
        let setCookie = try #require(login.header("Set-Cookie"))
        #expect(setCookie.hasSuffix("; Path=/; Secure; HttpOnly; SameSite=Lax"), "\(setCookie)")
        let logout = try await server.request("DELETE", "/_session")
        #expect(logout.header("Set-Cookie")?.hasSuffix("; Secure; HttpOnly; SameSite=Lax") == true)
        await server.stop()

        #expect(CookieSameSite(configurationValue: "STRICT") == .strict)
        #expect(CookieSameSite(configurationValue: "none") == CookieSameSite.none)
        #expect(CookieSameSite(configurationValue: "sometimes") == nil)
    }

    @Test("settee serve refuses a --same-site it does not know, saying which values it takes")
    func sameSiteOption() throws {
        let directory = TemporaryDirectory()
        let outcome = try SetteeExecutable.find().run(["serve", "--data", directory.url.appendingPathComponent("data").path,
                                                       "--port", "0", "--same-site", "sometimes"], in: directory.url)
        #expect(outcome.exitStatus != 0)
        #expect(outcome.standardError.contains("--same-site takes none, lax or strict"), "\(outcome.standardError)")
    }
}
