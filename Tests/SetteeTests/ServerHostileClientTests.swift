import Foundation
import Testing
import Settee
import SetteeCore
@testable import SetteeServer

/// `settee serve` as a hostile client tries it: a case for each way in or
/// down that was found, and every route probed against the two gates.
/// One test at a time: the isolation tests measure waits on the JavaScript
/// workers the process shares, which the looping functions of the others would fill.
@Suite("settee serve against hostile clients: no way in, no way down", .serialized)
struct ServerHostileClientTests {
    static let admin = (name: "admin", password: "s3cret")
    static let alice = (name: "alice", password: "alicepw")
    static let bob = (name: "bob", password: "bobpw")

    /// A server with an administrator, `_users` holding alice and bob, an
    /// admin-only `priv` with a secret, and a public `pub`.
    static func start(_ configure: @escaping (inout SetteeServer.Configuration) -> Void = { _ in }) async throws -> RunningServer {
        let server = try await RunningServer { configuration in
            configuration.administrators = [admin.name: admin.password]
            configure(&configuration)
        }
        for database in ["_users", "_replicator", "priv", "pub"] {
            _ = try await server.request("PUT", "/\(database)", user: admin)
        }
        for user in [alice, bob] {
            let signup = try await server.request("PUT", "/_users/org.couchdb.user:\(user.name)",
                                                  json: ["name": .string(user.name), "password": .string(user.password), "roles": [], "type": "user"])
            #expect(signup.status == 201)
        }
        _ = try await server.request("PUT", "/priv/secretdoc", json: ["secret": "TOPSECRET"], user: admin)
        _ = try await server.request("PUT", "/pub/_security", json: ["members": ["names": [], "roles": []]], user: admin)
        _ = try await server.request("PUT", "/pub/doc1", json: ["text": "public"], user: admin)
        return server
    }

    /// Bob's user document as an administrator reads it.
    static func bobDocument(_ server: RunningServer) async throws -> JSONValue {
        try await server.request("GET", "/_users/org.couchdb.user:bob", user: admin).json
    }

    /// Whether `body` holds any of bob's password fields or the private secret.
    static func leaks(_ body: Data, bob: JSONValue) -> Bool {
        let text = String(decoding: body, as: UTF8.self)
        let secrets = [bob["derived_key"]?.stringValue, bob["salt"]?.stringValue, "TOPSECRET"].compactMap { $0 }
        return secrets.contains { text.contains($0) }
    }

    /// A multipart/related body of one JSON part.
    static func multipart(_ json: JSONValue, boundary: String = "xyz") -> Data {
        Data("--\(boundary)\r\nContent-Type: application/json\r\n\r\n\(json.jsonText)\r\n--\(boundary)--".utf8)
    }

    // MARK: Findings

    @Test("1. A multipart/related PUT to _users cannot give its author the _admin role")
    func multipartAdminEscalation() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let mallory: JSONValue = ["name": "mallory", "type": "user", "roles": ["_admin"], "password_scheme": "pbkdf2",
                                  "pbkdf2_prf": "sha256", "iterations": 10, "salt": "00",
                                  "derived_key": "0000000000000000000000000000000000000000000000000000000000000000"]
        let put = try await server.request("PUT", "/_users/org.couchdb.user:mallory", body: Self.multipart(mallory),
                                           headers: ["Content-Type": "multipart/related; boundary=\"xyz\""])
        #expect(put.status == 403)
        #expect(try await server.request("GET", "/_users/org.couchdb.user:mallory", user: Self.admin).status == 404)
        // The same through every other write: bulk, replicated, POST.
        let bulk = try await server.request("POST", "/_users/_bulk_docs",
                                            json: ["docs": [JSONValue.object([("_id", "org.couchdb.user:mallory")] + (mallory.objectValue ?? []))]])
        #expect(bulk.json[0]?["error"] == "forbidden")
        let replicated = try await server.request("POST", "/_users/_bulk_docs", json: [
            "new_edits": false,
            "docs": [JSONValue.object([("_id", "org.couchdb.user:mallory"), ("_rev", "1-0123456789abcdef0123456789abcdef")] + (mallory.objectValue ?? []))],
        ])
        #expect(replicated.json[0]?["error"] == "forbidden")
        #expect(try await server.request("GET", "/_users/org.couchdb.user:mallory", user: Self.admin).status == 404)
    }

    @Test("2. A rewrite cannot leave its database, and the request it makes is authorized again as itself")
    func rewriteEscape() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let design: JSONValue = ["rewrites": [["from": "doc/:id", "to": "../../:id"],
                                              ["from": "security", "to": "../../_security", "method": "PUT"], ["from": "*", "to": "*"]]]
        #expect(try await server.request("PUT", "/pub/_design/app", json: design, user: Self.admin).status == 201)
        let bob = try await Self.bobDocument(server)
        for path in ["%2E%2E/%2E%2E/%2E%2E/priv/secretdoc", "%2E%2E/%2E%2E/%2E%2E/_users/_all_docs?include_docs=true",
                     "%2E%2E/%2E%2E/%2E%2E/_users/org.couchdb.user:bob", "../../../priv/secretdoc"] {
            let reply = try await server.request("GET", "/pub/_design/app/_rewrite/" + path)
            #expect(reply.status != 200, "\(path)")
            #expect(!Self.leaks(reply.body, bob: bob), "\(path)")
        }
        for (method, path) in [("PUT", "%2E%2E/%2E%2E/%2E%2E/priv/_security"), ("PUT", "%2E%2E/%2E%2E/%2E%2E/newdb"),
                               ("DELETE", "%2E%2E/%2E%2E/%2E%2E/priv")] {
            let reply = try await server.request(method, "/pub/_design/app/_rewrite/" + path, json: ["members": [:]])
            #expect(reply.status >= 400, "\(method) \(path)")
        }
        #expect(try await server.request("GET", "/priv/secretdoc", user: Self.admin).status == 200)
        #expect(try await server.request("GET", "/newdb", user: Self.admin).status == 404)
        // Inside its database a rewrite still works, and what it reaches is authorized as itself.
        #expect(try await server.request("GET", "/pub/_design/app/_rewrite/doc/doc1").json["text"] == "public")
        let security = try await server.request("PUT", "/pub/_design/app/_rewrite/security", json: ["members": ["names": ["x"]]])
        #expect(security.status == 401)
        #expect(try await server.request("GET", "/pub/_security", user: Self.admin).json["members"]?["names"] == [])

        // The function form: a path out of the database is refused too.
        let function = "function (req) { return {path: '../../../priv/secretdoc'}; }"
        _ = try await server.request("PUT", "/pub/_design/fn", json: ["rewrites": .string(function)], user: Self.admin)
        let escaped = try await server.request("GET", "/pub/_design/fn/_rewrite/anything")
        #expect(escaped.status == 500)
        #expect(escaped.json["error"] == "insecure_rewrite_rule")
        #expect(!Self.leaks(escaped.body, bob: bob))
    }

    @Test("3. Nobody but an administrator reads _users through _find, _bulk_get, COPY or _local")
    func usersReads() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let bob = try await Self.bobDocument(server)
        #expect(bob["derived_key"]?.stringValue != nil)
        for user in [nil, Self.alice] as [(name: String, password: String)?] {
            let find = try await server.request("POST", "/_users/_find", json: ["selector": [:]], user: user)
            let bulkGet = try await server.request("POST", "/_users/_bulk_get", json: ["docs": [["id": "org.couchdb.user:bob"]]], user: user)
            let copy = try await server.request("COPY", "/_users/org.couchdb.user:bob", headers: ["Destination": "_local/leak"], user: user)
            let local = try await server.request("GET", "/_users/_local/leak", user: user)
            let allDocs = try await server.request("GET", "/_users/_all_docs?include_docs=true", user: user)
            for reply in [find, bulkGet, copy, local, allDocs] {
                #expect([401, 403, 404].contains(reply.status), "\(reply.status) \(reply.json.jsonText)")
                #expect(!Self.leaks(reply.body, bob: bob))
            }
        }
        #expect(try await server.request("GET", "/_users/_local/leak", user: Self.admin).status == 404)
        // Their own document, users still read.
        #expect(try await server.request("GET", "/_users/org.couchdb.user:alice", user: Self.alice).status == 200)
    }

    @Test("4. Nobody takes over another account: COPY over a user document, attachments on one, a delete of one")
    func accountTakeover() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let bob = try await Self.bobDocument(server)
        let rev = try #require(bob["_rev"]?.stringValue)
        let copy = try await server.request("COPY", "/_users/org.couchdb.user:alice",
                                            headers: ["Destination": "org.couchdb.user:bob?rev=\(rev)"], user: Self.alice)
        #expect(copy.status == 403)
        #expect(try await server.request("GET", "/_session", user: (name: "bob", password: Self.alice.password)).status == 401)
        let attachment = try await server.request("PUT", "/_users/org.couchdb.user:bob/x.txt?rev=\(rev)", body: Data("x".utf8),
                                                  headers: ["Content-Type": "text/plain"])
        #expect(attachment.status == 401)
        let delete = try await server.request("DELETE", "/_users/org.couchdb.user:bob?rev=\(rev)", user: Self.alice)
        #expect(delete.status == 404)
        #expect(try await Self.bobDocument(server) == bob)
        #expect(try await server.request("GET", "/_session", user: Self.bob).json["userCtx"]?["name"] == "bob")
    }

    @Test("5. A session cookie with a time past any clock is no session, not a crash")
    func cookieTimeOverflow() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        for time in ["7FFFFFFFFFFFFFFF", "FFFFFFFFFFFFFFFF", "-8000000000000000", "0"] {
            let raw = Array("admin:\(time):".utf8) + [UInt8](repeating: 0x41, count: 32)
            let cookie = Data(raw).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let reply = try await server.request("GET", "/_session", headers: ["Cookie": "AuthSession=\(cookie)"])
            #expect(reply.status == 200)
            #expect(reply.json["userCtx"]?["name"] == .null)
        }
        #expect(try await server.request("GET", "/_up").status == 200)
    }

    @Test("6 and 12. A user document's hash parameters are checked on write and bounded; logins lock out after five failures")
    func passwordParameters() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        for iterations: JSONValue in [1e300, 2_000_000, 0, 1.5, "10"] {
            let planted = try await server.request("PUT", "/_users/org.couchdb.user:carol", json: [
                "name": "carol", "type": "user", "roles": [], "password_scheme": "pbkdf2", "iterations": iterations,
                "derived_key": "abcd", "salt": "00",
            ])
            #expect(planted.status == 403, "iterations \(iterations.jsonText)")
        }
        let noScheme = try await server.request("PUT", "/_users/org.couchdb.user:carol",
                                                json: ["name": "carol", "type": "user", "roles": [], "iterations": 1e300])
        #expect(noScheme.status == 403)
        #expect(try await server.request("GET", "/_session", user: (name: "carol", password: "x")).status == 401)

        // A hash stored before these checks (written past the server) refuses its logins; the server stays up.
        let users = try server.server.databases.database("_users")
        _ = try await users.put(#"{"_id":"org.couchdb.user:dave","name":"dave","type":"user","roles":[],"password_scheme":"pbkdf2","pbkdf2_prf":"sha256","iterations":1e300,"derived_key":"ab","salt":"cd"}"#)
        let dave = try await server.request("GET", "/_session", user: (name: "dave", password: "x"))
        #expect(dave.status == 403)
        #expect(dave.json["reason"] == "Iteration count is too high for this server")
        #expect(try await server.request("GET", "/_up").status == 200)

        // Five wrong passwords lock the name out from this address, the right one included.
        for _ in 1...5 {
            #expect(try await server.request("GET", "/_session", user: (name: "bob", password: "wrong")).status == 401)
        }
        let locked = try await server.request("GET", "/_session", user: Self.bob)
        #expect(locked.status == 403)
        #expect(locked.json == ["error": "forbidden", "reason": "Account is temporarily locked due to multiple authentication failures"])
        let form = try await server.request("POST", "/_session", body: Data("name=bob&password=bobpw".utf8),
                                            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(form.status == 403)
        #expect(try await server.request("GET", "/_session", user: Self.alice).json["userCtx"]?["name"] == "alice")
    }

    @Test("7. A show, list or update answering a status outside 200–599 gets CouchDB's error, and the server stays up")
    func designFunctionStatusCodes() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let codes = ["1000", "999999", "-5", "1e300", "50", "0", "101", "200.5"]
        var shows: [(String, JSONValue)] = []
        for (index, code) in codes.enumerated() {
            shows.append(("s\(index)", .string("function (doc, req) { return {code: \(code), body: 'x'}; }")))
        }
        let design: JSONValue = [
            "shows": .object(shows),
            "updates": ["u": "function (doc, req) { return [null, {code: 1000, body: 'x'}]; }"],
            "lists": ["l": "function (head, req) { start({code: 1e300}); send('x'); }"],
            "views": ["v": ["map": "function (doc) { emit(doc._id, 1); }"]],
        ]
        #expect(try await server.request("PUT", "/pub/_design/codes", json: design, user: Self.admin).status == 201)
        for index in codes.indices {
            let reply = try await server.request("GET", "/pub/_design/codes/_show/s\(index)")
            #expect(reply.status == 500, "code \(codes[index])")
            #expect(reply.json["error"] == "external_response_error", "code \(codes[index])")
        }
        #expect(try await server.request("POST", "/pub/_design/codes/_update/u").status == 500)
        #expect(try await server.request("GET", "/pub/_design/codes/_list/l/v").status == 500)
        #expect(try await server.request("GET", "/_up").status == 200)
    }

    @Test("11. One database's looping shows wait behind each other, not in front of another database's show")
    func showsOfDatabasesAreIsolated() async throws {
        let server = try await Self.start { $0.shutdownTimeout = .seconds(1) }
        defer { Task { await server.stop() } }
        let loop: JSONValue = ["shows": ["loop": "function (doc, req) { while (true) {} }"]]
        let fine: JSONValue = ["shows": ["fine": "function (doc, req) { return 'fine'; }"]]
        #expect(try await server.request("PUT", "/pub/_design/loop", json: loop, user: Self.admin).status == 201)
        #expect(try await server.request("PUT", "/priv/_design/fine", json: fine, user: Self.admin).status == 201)
        // Warm the other database's show first, so that what is timed below is waiting, not compiling.
        #expect(try await server.request("GET", "/priv/_design/fine/_show/fine", user: Self.admin).status == 200)
        // Four: two hold the workers, two wait behind them (and the client keeps connections for all).
        let looping = (0..<4).map { _ in Task { try await server.request("GET", "/pub/_design/loop/_show/loop") } }
        try await Task.sleep(for: .milliseconds(500))
        let clock = ContinuousClock()
        var reply: RunningServer.Reply?
        let waited = try await clock.measure { reply = try await server.request("GET", "/priv/_design/fine/_show/fine", user: Self.admin) }
        #expect(reply.map { String(decoding: $0.body, as: UTF8.self) } == "fine")
        // Each looping call runs until its 5 s timeout: behind them, this show would wait at least that long.
        #expect(waited < .seconds(3), "the other database's show waited \(waited)")
        for task in looping { task.cancel() }
    }

    @Test("11. One database's looping filters wait behind each other, not in front of another database's filter")
    func filtersOfDatabasesAreIsolated() async throws {
        let server = try await Self.start { $0.shutdownTimeout = .seconds(1) }
        defer { Task { await server.stop() } }
        let loop: JSONValue = ["filters": ["f": "function (doc, req) { while (true) {} }"]]
        let fine: JSONValue = ["filters": ["f": "function (doc, req) { return true; }"]]
        #expect(try await server.request("PUT", "/pub/_design/loop", json: loop, user: Self.admin).status == 201)
        #expect(try await server.request("PUT", "/priv/_design/fine", json: fine, user: Self.admin).status == 201)
        #expect(try await server.request("GET", "/priv/_changes?filter=fine/f", user: Self.admin).status == 200)
        // Ten, each on a connection of its own: more than the runner's two workers and six extra ones together.
        let looping = try (0..<10).map { _ in try RawConnection(port: server.port) }
        defer { for connection in looping { connection.close() } }
        for connection in looping { _ = connection.send("GET /pub/_changes?filter=loop/f HTTP/1.1\r\nHost: x\r\n\r\n") }
        try await Task.sleep(for: .milliseconds(800))
        let clock = ContinuousClock()
        var reply: RunningServer.Reply?
        let waited = try await clock.measure { reply = try await server.request("GET", "/priv/_changes?filter=fine/f", user: Self.admin) }
        #expect(reply?.json["results"]?.arrayValue?.isEmpty == false)
        #expect(waited < .seconds(3), "the other database's filter waited \(waited)")
    }

    @Test("11. Long native operations in a show (a 512 MiB string, a million-deep JSON.parse) answer, and the server goes on")
    func longNativeOperations() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let design: JSONValue = ["shows": [
            "repeat": "function (doc, req) { var s = 'x'.repeat(Math.pow(2, 29)); return s.indexOf('y') + ''; }",
            "deep": "function (doc, req) { var t = '['.repeat(1000000) + ']'.repeat(1000000); return JSON.stringify(JSON.parse(t)).length + ''; }",
        ]]
        #expect(try await server.request("PUT", "/pub/_design/native", json: design, user: Self.admin).status == 201)
        let clock = ContinuousClock()
        for show in ["repeat", "deep"] {
            var reply: RunningServer.Reply?
            let took = try await clock.measure { reply = try await server.request("GET", "/pub/_design/native/_show/\(show)") }
            // They answer (0.35 s and 1.8 s on an idle machine); the bound is far above that, for a busy one.
            #expect(took < .seconds(60), "\(show) answered after \(took)")
            // Answered (the engine may finish within its heap, or stop for memory or depth), never late.
            #expect(reply?.status == 200 || reply?.status == 500, "\(show): \(reply.map { String(decoding: $0.body, as: UTF8.self) } ?? "")")
        }
        #expect(try await server.request("GET", "/_up").status == 200)
    }

    @Test("17. A show that allocates without end answers an out-of-memory error; the next show runs")
    func showOutOfMemory() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let design: JSONValue = ["shows": [
            "bomb": "function (doc, req) { var kept = []; while (true) kept.push(new Array(1 << 20).fill(1.5)); }",
            "fine": "function (doc, req) { return 'fine'; }",
        ]]
        #expect(try await server.request("PUT", "/pub/_design/mem", json: design, user: Self.admin).status == 201)
        let bomb = try await server.request("GET", "/pub/_design/mem/_show/bomb")
        #expect(bomb.status == 500)
        // Stopped by the engine's heap limit (or, on a machine too busy to reach it in time, by the timeout):
        // either way said as such, never as an answer "not understood".
        let stoppedForMemory = bomb.json["reason"]?.stringValue?.hasPrefix("out of memory") == true
        #expect(stoppedForMemory || bomb.json["error"] == "timeout", "\(bomb.json.jsonText)")
        #expect(String(decoding: try await server.request("GET", "/pub/_design/mem/_show/fine").body, as: UTF8.self) == "fine")
    }

    @Test("13 and 17. A login form is bounded before it is read; a login redirects only within the server")
    func sessionBounds() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let big = Data("name=bob&password=".utf8) + Data(repeating: UInt8(ascii: "%"), count: 2 << 20)
        let reply = try await server.request("POST", "/_session", body: big, headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(reply.status == 413)
        for next in ["https://elsewhere.example/", "//elsewhere.example/", "/\\elsewhere.example"] {
            let escaped = next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? next
            let login = try await server.request("POST", "/_session?next=\(escaped)", json: ["name": "bob", "password": "bobpw"])
            #expect(login.status == 400, "\(next)")
            #expect(login.header("Location") == nil)
        }
        // Within the server, the redirect is followed (by the client) to the document.
        let inside = try await server.request("POST", "/_session?next=%2Fpub%2Fdoc1", json: ["name": "bob", "password": "bobpw"])
        #expect(inside.json["text"] == "public")
    }

    @Test("17. Range headers past the attachment or past any integer get 416; suffixes past the start clamp; nothing traps")
    func rangeBounds() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        // A type stored as it is (a compressible one is stored gzip-encoded and answers ranges with the whole, as CouchDB does).
        let put = try await server.request("PUT", "/pub/att/a.txt", body: Data("0123456789".utf8), headers: ["Content-Type": "application/octet-stream"],
                                           user: Self.admin)
        #expect(put.status == 201)
        for range in ["bytes=99999999999999999999-", "bytes=10-20", "bytes=5-99999999999999999999999,99999999999999999999-", "bytes=-0"] {
            let reply = try await server.request("GET", "/pub/att/a.txt", headers: ["Range": range])
            #expect(reply.status == 416, "\(range)")
        }
        let clamped = try await server.request("GET", "/pub/att/a.txt", headers: ["Range": "bytes=5-99999999999999999999999"])
        #expect(clamped.status == 206)
        #expect(String(decoding: clamped.body, as: UTF8.self) == "56789")
        let suffix = try await server.request("GET", "/pub/att/a.txt", headers: ["Range": "bytes=-99999999999999999999"])
        #expect(String(decoding: suffix.body, as: UTF8.self) == "0123456789")
        // A header that does not parse is ignored, as mochiweb ignores it: the whole body.
        #expect(try await server.request("GET", "/pub/att/a.txt", headers: ["Range": "bytes=--9223372036854775808"]).status == 200)
        #expect(try await server.request("GET", "/_up").status == 200)
    }

    @Test("17. A chunk size past any integer is the client's error: 400, not 500")
    func oversizedChunk() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let connection = try RawConnection(port: server.port)
        defer { connection.close() }
        connection.send("PUT /pub/x HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "FFFFFFFFFFFFFFFFFFFF\r\n{}\r\n0\r\n\r\n")
        let received = await connection.receive(for: 3)
        #expect(received.text.hasPrefix("HTTP/1.1 400"), "\(received.text.prefix(80))")
        #expect(try await server.request("GET", "/pub/x", user: Self.admin).status == 404)
    }

    @Test("15. Invalid UTF-8 in a document is refused with 400, on every write path")
    func invalidUTF8() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let bad = Data(#"{"text":""#.utf8) + Data([0xFF, 0xFE, 0x41]) + Data(#""}"#.utf8)
        let bulk = Data(#"{"docs":[{"_id":"b","text":""#.utf8) + Data([0xC3]) + Data(#""}]}"#.utf8)
        for (method, path, body) in [("PUT", "/pub/a", bad), ("POST", "/pub", bad), ("POST", "/pub/_bulk_docs", bulk)] {
            let reply = try await server.request(method, path, body: body, user: Self.admin)
            #expect(reply.status == 400, "\(method) \(path)")
            #expect(reply.json == ["error": "bad_request", "reason": "invalid UTF-8 JSON"], "\(method) \(path)")
        }
        let part = try await server.request("PUT", "/pub/m", body: Data("--xyz\r\nContent-Type: application/json\r\n\r\n".utf8) + bad + Data("\r\n--xyz--".utf8),
                                            headers: ["Content-Type": "multipart/related; boundary=\"xyz\""], user: Self.admin)
        #expect(part.status == 400)
        for id in ["a", "b", "m"] {
            #expect(try await server.request("GET", "/pub/\(id)", user: Self.admin).status == 404)
        }
    }

    @Test("17. A gzip-encoded JSON body is inflated as CouchDB inflates it, held to the same limits inflated; others are refused")
    func gzipBodies() async throws {
        let server = try await Self.start { $0.limits.maximumDocumentBytes = 100_000 }
        defer { Task { await server.stop() } }
        let gzip = ["Content-Encoding": "gzip", "Content-Type": "application/json"]
        let document = Data(Gzip.compress(Array(#"{"text":"inflated"}"#.utf8)))
        #expect(try await server.request("PUT", "/pub/z", body: document, headers: gzip, user: Self.admin).status == 201)
        #expect(try await server.request("GET", "/pub/z", user: Self.admin).json["text"] == "inflated")
        let bulk = Data(Gzip.compress(Array(#"{"docs":[{"_id":"zb","n":1}]}"#.utf8)))
        #expect(try await server.request("POST", "/pub/_bulk_docs", body: bulk, headers: gzip, user: Self.admin).status == 201)
        let find = Data(Gzip.compress(Array(#"{"selector":{"n":1}}"#.utf8)))
        let found = try await server.request("POST", "/pub/_find", body: find, headers: gzip, user: Self.admin)
        #expect(found.json["docs"]?[0]?["_id"] == "zb")
        // 20 KB that inflate past max_document_size: 413 before the whole is held.
        let bomb = Data(Gzip.compress(Array(#"{"a":""#.utf8) + [UInt8](repeating: 0x61, count: 20_000_000) + Array(#""}"#.utf8), level: 9))
        #expect(bomb.count < 100_000)
        let refused = try await server.request("PUT", "/pub/bomb", body: bomb, headers: gzip, user: Self.admin)
        #expect(refused.status == 413)
        #expect(refused.json["error"] == "document_too_large")
        let broken = try await server.request("PUT", "/pub/broken", body: Data("not gzip".utf8), headers: gzip, user: Self.admin)
        #expect(broken.status == 400)
        #expect(broken.json == ["error": "bad_request", "reason": "Request body is not properly gzipped."])
        let other = try await server.request("PUT", "/pub/other", body: Data(#"{}"#.utf8),
                                             headers: ["Content-Encoding": "br", "Content-Type": "application/json"], user: Self.admin)
        #expect(other.status == 415)
        #expect(other.json["error"] == "bad_content_type")
        for id in ["bomb", "broken", "other"] {
            #expect(try await server.request("GET", "/pub/\(id)", user: Self.admin).status == 404)
        }
    }

    @Test("16. _replicator: owners write their own documents, others read them without credentials, anonymous clients nothing")
    func replicatorOwnership() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let job: JSONValue = ["source": "http://alice:hunter2@remote.example/a", "target": ["url": "http://remote.example/b",
                                                                                        "headers": ["Authorization": "Basic c2VjcmV0"]]]
        #expect(try await server.request("PUT", "/_replicator/anon", json: job).status == 401)
        let put = try await server.request("PUT", "/_replicator/job", json: job, user: Self.alice)
        #expect(put.status == 201)
        let own = try await server.request("GET", "/_replicator/job", user: Self.alice).json
        #expect(own["owner"] == "alice")
        #expect(own["source"] == "http://alice:hunter2@remote.example/a")
        let other = try await server.request("GET", "/_replicator/job", user: Self.bob)
        #expect(other.json["source"] == "http://remote.example/a")
        #expect(other.json["target"] == ["url": "http://remote.example/b"])
        #expect(!String(decoding: other.body, as: UTF8.self).contains("hunter2"))
        let rev = try #require(own["_rev"]?.stringValue)
        let takeover = try await server.request("PUT", "/_replicator/job?rev=\(rev)", json: ["source": "x", "target": "y", "owner": "bob"],
                                                user: Self.bob)
        #expect(takeover.status == 403)
        #expect(takeover.json["reason"] == "Can't update replication documents from other users.")
        #expect(try await server.request("DELETE", "/_replicator/job?rev=\(rev)", user: Self.bob).status == 403)
        for (method, path) in [("GET", "/_replicator/anon"), ("POST", "/_replicator/_find"), ("GET", "/_replicator/_all_docs"),
                               ("GET", "/_replicator/job?open_revs=all")] {
            let user = path.hasSuffix("anon") ? nil : Self.bob
            let reply = method == "POST" ? try await server.request(method, path, json: ["selector": [:]], user: user)
                : try await server.request(method, path, user: user)
            #expect(reply.status >= 400, "\(method) \(path)")
            #expect(!String(decoding: reply.body, as: UTF8.self).contains("hunter2"), "\(method) \(path)")
        }
        #expect(try await server.request("GET", "/_replicator/job", user: Self.admin).json["source"] == "http://alice:hunter2@remote.example/a")
    }

    @Test("8. A database that cannot be made on a full disk answers storage_full and leaves no folder behind",
          .enabled(if: SmallFileSystem.available, "mounting a tmpfs needs root"))
    func createOnFullDisk() async throws {
        let disk = try #require(SmallFileSystem(megabytes: 8))
        let server = try await RunningServer { $0.dataDirectory = disk.url.appendingPathComponent("data") }
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db1").status == 201)
        for left in [4096, 12288, 24576] {
            try disk.fill(leaving: left)
            let reply = try await server.request("PUT", "/db2")
            #expect(reply.json["error"] == "storage_full", "\(left) bytes left: \(reply.json.jsonText)")
            try disk.removeFiller()
            #expect(!FileManager.default.fileExists(atPath: disk.url.appendingPathComponent("data/db2").path), "\(left) bytes left")
            #expect(try await server.request("GET", "/db2").status == 404)
        }
        let made = try await server.request("PUT", "/db2")
        #expect(made.status == 201, "\(made.json.jsonText)")
        #expect(try await server.request("PUT", "/db2/doc", json: ["a": 1]).status == 201)
    }

    /// A database of `count` documents and a `_find` body whose `$or` of
    /// `clauses` conditions matches none of them: a query that examines
    /// every document against every clause, for many seconds.
    static func slowFind(_ server: RunningServer, documents count: Int = 20_000, clauses: Int = 4_000) async throws -> String {
        _ = try await server.request("PUT", "/big")
        for start in stride(from: 0, to: count, by: 5_000) {
            let docs = (start..<min(start + 5_000, count)).map { JSONValue.object([("n", .number(Double($0)))]) }
            _ = try await server.request("POST", "/big/_bulk_docs", json: ["docs": .array(docs)])
        }
        let or = (0..<clauses).map { JSONValue.object([("f\($0)", .number(Double($0)))]) }
        return JSONValue.object([("selector", ["$or": .array(or)]), ("limit", 1)]).jsonText
    }

    @Test("14. A query stops when its client leaves: the server's stop does not wait for it")
    func workStopsWithItsClient() async throws {
        let server = try await RunningServer { $0.shutdownTimeout = .seconds(120) }
        let body = try await Self.slowFind(server)
        let connection = try RawConnection(port: server.port)
        #expect(connection.send("POST /big/_find HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"))
        try await Task.sleep(for: .milliseconds(500))
        connection.close()
        try await Task.sleep(for: .milliseconds(200))
        // Were the query still running, the stop would wait for it (up to the 120 s shutdown timeout).
        let clock = ContinuousClock()
        let stopped = await clock.measure { await server.stop() }
        #expect(stopped < .seconds(30), "stop took \(stopped)")
    }

    @Test("14. A stop cancels the requests still under way after its timeout, and their database work stops")
    func stopIsBounded() async throws {
        let server = try await RunningServer { $0.shutdownTimeout = .seconds(1) }
        let body = try await Self.slowFind(server)
        let connection = try RawConnection(port: server.port)
        defer { connection.close() }
        #expect(connection.send("POST /big/_find HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"))
        try await Task.sleep(for: .milliseconds(500))
        let clock = ContinuousClock()
        let stopped = await clock.measure { await server.stop() }
        #expect(stopped < .seconds(30), "stop took \(stopped)")
    }

    @Test("17. An attachment upload on a full disk answers storage_full and leaves no upload behind",
          .enabled(if: SmallFileSystem.available, "mounting a tmpfs needs root"))
    func uploadOnFullDisk() async throws {
        let disk = try #require(SmallFileSystem(megabytes: 8))
        let server = try await RunningServer { $0.dataDirectory = disk.url.appendingPathComponent("data") }
        defer { Task { await server.stop() } }
        #expect(try await server.request("PUT", "/db").status == 201)
        let rev = try #require(try await server.request("PUT", "/db/doc", json: ["a": 1]).json["rev"]?.stringValue)
        try disk.fill(leaving: 16384)
        let reply = try await server.request("PUT", "/db/doc/big.bin?rev=\(rev)", body: Data(count: 1 << 20),
                                             headers: ["Content-Type": "application/octet-stream"])
        #expect(reply.json["error"] == "storage_full", "\(reply.json.jsonText)")
        try disk.removeFiller()
        let uploads = (try? FileManager.default.contentsOfDirectory(atPath: UploadFolder.url(in: disk.url.appendingPathComponent("data")).path)) ?? []
        #expect(uploads.isEmpty)
        #expect(try await server.request("GET", "/db/doc", user: nil).json["_rev"]?.stringValue == rev)
    }

    @Test("10. A data folder is served by one server at a time")
    func oneServerPerFolder() async throws {
        let server = try await RunningServer()
        defer { Task { await server.stop() } }
        var configuration = SetteeServer.Configuration(dataDirectory: server.directory)
        configuration.port = 0
        let second = try SetteeServer(configuration: configuration)
        await #expect { try await second.run() } throws: { error in (error as? CouchError)?.error == "data_folder_in_use" }
        #expect(try await server.request("PUT", "/db").status == 201)
    }

    @Test("10b. A stopped server gives its folder up at once, while something still holds it")
    func stoppedServerGivesFolderUp() async throws {
        let first = try await RunningServer()
        await first.stopKeepingFolder()
        // `first` (and its SetteeServer) is still referenced below: the folder is free all the same.
        let second = try await RunningServer(directory: first.directory)
        #expect(try await second.request("PUT", "/db").status == 201)
        #expect(first.server.configuration.dataDirectory == second.directory)
        await second.stop()
    }

    @Test("17. Only addresses of this machine count as loopback: a name that starts with 127. is not one")
    func loopbackAddresses() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settee-bind-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        for host in ["127.0.0.1", "127.1.2.3", "::1", "localhost"] {
            var configuration = SetteeServer.Configuration(dataDirectory: folder)
            configuration.host = host
            #expect(throws: Never.self) { _ = try SetteeServer(configuration: configuration) }
        }
        for host in ["127.evil.example", "127.0.0.1.example", "0.0.0.0", "::"] {
            var configuration = SetteeServer.Configuration(dataDirectory: folder)
            configuration.host = host
            #expect(throws: CouchError.self, "\(host)") { _ = try SetteeServer(configuration: configuration) }
        }
    }

    // MARK: The two gates, route by route

    @Test("Every route the router answers, every method, as an anonymous client and as a user: no secret read, no user, account or private document changed")
    func everyRoutePassesBothGates() async throws {
        let server = try await Self.start()
        defer { Task { await server.stop() } }
        let design: JSONValue = ["views": ["v": ["map": "function (doc) { emit(doc._id, doc); }"]],
                                 "shows": ["f": "function (doc, req) { return {json: doc}; }"],
                                 "lists": ["f": "function (head, req) { var r; while ((r = getRow())) send(toJSON(r)); }"],
                                 "updates": ["f": "function (doc, req) { return [doc, toJSON(doc)]; }"],
                                 "rewrites": [["from": "*", "to": "../../*"]]]
        for database in ["_users", "priv"] {
            #expect(try await server.request("PUT", "/\(database)/_design/ddoc", json: design, user: Self.admin).status == 201)
        }
        let bob = try await Self.bobDocument(server)
        let priv = try await server.request("GET", "/priv/_all_docs?include_docs=true", user: Self.admin).json
        // One body that every endpoint reads its part of: documents to write, a selector, keys, a user document.
        let hostile: JSONValue = [
            "_id": "org.couchdb.user:bob", "name": "bob", "type": "user", "roles": ["_admin"], "password": "mine",
            "docs": [["_id": "org.couchdb.user:bob", "_rev": bob["_rev"] ?? .null, "name": "bob", "type": "user", "roles": ["_admin"],
                      "password": "mine"], ["id": "org.couchdb.user:bob"], ["_id": "secretdoc", "secret": "changed"]],
            "selector": [:], "keys": ["org.couchdb.user:bob", "secretdoc"], "queries": [["include_docs": true]],
            "org.couchdb.user:bob": [bob["_rev"] ?? .null], "secretdoc": ["1-0123456789abcdef0123456789abcdef"],
            "index": ["fields": ["name"]], "members": ["names": []], "admins": ["names": ["mallory"]],
        ]
        var probes = 0
        for database in ["_users", "priv"] {
            let id = database == "_users" ? "org.couchdb.user:bob" : "secretdoc"
            for path in CouchRoutes.examplePaths(database: database, document: id) {
                for method in ["GET", "HEAD", "POST", "PUT", "DELETE", "COPY"] {
                    for user in [nil, Self.alice] as [(name: String, password: String)?] {
                        let query = path.contains("?") ? "&" : "?"
                        let target = method == "GET" ? path + query + "include_docs=true&attachments=true&revs=true" : path
                        let body = method == "GET" || method == "HEAD" ? nil : Data(hostile.jsonText.utf8)
                        let reply = try await server.request(method, target, body: body,
                                                             headers: method == "COPY" ? ["Destination": "_local/leak"] : [:], user: user)
                        probes += 1
                        #expect(!Self.leaks(reply.body, bob: bob), "\(method) \(target) as \(user?.name ?? "anonymous"): \(reply.status)")
                    }
                }
            }
        }
        #expect(probes > 400)
        #expect(try await Self.bobDocument(server) == bob)
        #expect(try await server.request("GET", "/priv/_all_docs?include_docs=true", user: Self.admin).json == priv)
        #expect(try await server.request("GET", "/_session", user: Self.alice).json["userCtx"] == ["name": "alice", "roles": []])
        #expect(try await server.request("GET", "/_users/_local/leak", user: Self.admin).status == 404)
        #expect(try await server.request("GET", "/priv/_local/leak", user: Self.admin).status == 404)
        #expect(try await server.request("GET", "/_all_dbs", user: Self.admin).json == ["_replicator", "_users", "priv", "pub"])
    }
}
