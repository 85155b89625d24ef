import Synchronization
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import Settee
import SetteeServer
import SetteeCore

@Suite("settee serve: administrators, sessions, _users, _security, limits and lifecycle")
struct ServerSecurityTests {
    static let admin = (name: "admin", password: "s3cret")

    /// A server with one administrator.
    static func secured(_ configure: @escaping (inout SetteeServer.Configuration) -> Void = { _ in }) async throws -> RunningServer {
        try await RunningServer { configuration in
            configuration.administrators = [admin.name: admin.password]
            configure(&configuration)
        }
    }

    @Test("HMAC-SHA-256 and PBKDF2-HMAC-SHA-256 give the RFC 4231 and RFC 7914 test vectors")
    func hashVectors() {
        #expect(HMACSHA256(key: Array("Jefe".utf8)).authenticationCode(Array("what do ya want for nothing?".utf8)).hexString
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(PBKDF2SHA256.derive(password: Array("password".utf8), salt: Array("salt".utf8), iterations: 1).hexString
                == "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b")
        #expect(PBKDF2SHA256.derive(password: Array("password".utf8), salt: Array("salt".utf8), iterations: 2).hexString
                == "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43")
        #expect(PBKDF2SHA256.derive(password: Array("password".utf8), salt: Array("salt".utf8), iterations: 4096).hexString
                == "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a")
        #expect(HMACSHA256.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!HMACSHA256.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!HMACSHA256.constantTimeEqual([1, 2], [1, 2, 3]))
    }

    @Test("Without administrators every request is an administrator's (admin party)")
    func adminParty() async throws {
        let server = try await RunningServer()
        let session = try await server.request("GET", "/_session")
        #expect(session.json == ["ok": true, "userCtx": ["name": nil, "roles": ["_admin"]],
                                 "info": ["authentication_handlers": ["cookie", "default"], "authenticated": "default"]])
        #expect(try await server.request("PUT", "/db").status == 201)
        await server.stop()
    }

    @Test("Administrators are stored hashed as -pbkdf2:sha256-; anonymous and wrong Basic auth get CouchDB's 401 bodies")
    func administratorsAndBasicAuth() async throws {
        let server = try await Self.secured()
        let stored = try String(contentsOf: server.directory.appendingPathComponent("_settee/admins.json"), encoding: .utf8)
        #expect(stored.contains("\"admin\":\"-pbkdf2:sha256-"))
        #expect(stored.hasSuffix(",10\"}"))
        #expect(!stored.contains(Self.admin.password))
        #expect(FileManager.default.fileExists(atPath: server.directory.appendingPathComponent("_settee/secret").path))

        let anonymous = try await server.request("GET", "/_all_dbs")
        #expect(anonymous.status == 401)
        #expect(anonymous.json == ["error": "unauthorized", "reason": "You are not a server admin."])
        #expect(anonymous.header("WWW-Authenticate") == nil)
        let create = try await server.request("PUT", "/db")
        #expect(create.status == 401)
        #expect(create.json == ["error": "unauthorized", "reason": "You are not a server admin."])
        let wrong = try await server.request("PUT", "/db", user: (Self.admin.name, "nope"))
        #expect(wrong.status == 401)
        #expect(wrong.json == ["error": "unauthorized", "reason": "Name or password is incorrect."])
        #expect(try await server.request("PUT", "/db", user: Self.admin).status == 201)
        #expect(try await server.request("GET", "/_all_dbs", user: Self.admin).json == ["db"])
        let session = try await server.request("GET", "/_session", user: Self.admin)
        #expect(session.json["userCtx"] == ["name": "admin", "roles": ["_admin"]])
        #expect(session.json["info"]?["authenticated"] == "default")
        let nobody = try await server.request("GET", "/_session")
        #expect(nobody.json["userCtx"] == ["name": nil, "roles": []])
        #expect(nobody.json["info"] == ["authentication_handlers": ["cookie", "default"]])
        #expect(try await server.request("GET", "/").status == 200)
        #expect(try await server.request("GET", "/_up").status == 200)
        await server.stop()
    }

    @Test("A new database is admin-only: 401 for anonymous, 403 for a user who is not a member, both word for word")
    func defaultSecurityAndMembers() async throws {
        let server = try await Self.secured()
        _ = try await server.request("PUT", "/_users", user: Self.admin)
        _ = try await server.request("PUT", "/db", user: Self.admin)
        let signup = try await server.request("PUT", "/_users/org.couchdb.user:bob",
                                              json: ["name": "bob", "password": "pw", "roles": [], "type": "user"])
        #expect(signup.status == 201)
        let bob = (name: "bob", password: "pw")

        #expect(try await server.request("GET", "/db/_security", user: Self.admin).json
                == ["members": ["roles": ["_admin"]], "admins": ["roles": ["_admin"]]])
        let anonymous = try await server.request("GET", "/db")
        #expect(anonymous.status == 401)
        #expect(anonymous.json == ["error": "unauthorized", "reason": "You are not authorized to access this db."])
        let outsider = try await server.request("GET", "/db", user: bob)
        #expect(outsider.status == 403)
        #expect(outsider.json == ["error": "forbidden", "reason": "You are not allowed to access this db."])

        let security: JSONValue = ["admins": ["names": [], "roles": ["boss"]], "members": ["names": ["bob"], "roles": []]]
        #expect(try await server.request("PUT", "/db/_security", json: security, user: Self.admin).json == ["ok": true])
        #expect(try await server.request("GET", "/db/_security", user: Self.admin).json == security)
        #expect(try await server.request("GET", "/db", user: bob).status == 200)
        #expect(try await server.request("PUT", "/db/note", json: ["text": "hi"], user: bob).status == 201)
        let notAdmin = try await server.request("PUT", "/db/_security", json: ["members": [:]], user: bob)
        #expect(notAdmin.status == 403)
        #expect(notAdmin.json == ["error": "forbidden", "reason": "You are not a db or server admin."])
        let design = try await server.request("PUT", "/db/_design/app", json: ["views": [:]], user: bob)
        #expect(design.status == 403)
        #expect(design.json == ["error": "forbidden", "reason": "You are not a db or server admin."])
        let bulkDesign = try await server.request("POST", "/db/_bulk_docs", json: ["docs": [["_id": "_design/x"]]], user: bob)
        #expect(bulkDesign.json[0]?["error"] == "forbidden")
        #expect(try await server.request("GET", "/db").status == 401)
        let deleteDatabase = try await server.request("DELETE", "/db", user: bob)
        #expect(deleteDatabase.status == 401)
        #expect(deleteDatabase.json == ["error": "unauthorized", "reason": "You are not a server admin."])
        let compact = try await server.request("POST", "/db/_compact", json: [:], user: bob)
        #expect(compact.json == ["error": "unauthorized", "reason": "You are not a server or db admin."])
        await server.stop()
    }

    @Test("_users hashes a password on write, logs its users in with their roles and shows each only their own document")
    func usersDatabase() async throws {
        let server = try await Self.secured()
        _ = try await server.request("PUT", "/_users", user: Self.admin)
        _ = try await server.request("PUT", "/_users/org.couchdb.user:ann",
                                     json: ["name": "ann", "password": "apple", "roles": ["staff"], "type": "user"], user: Self.admin)
        let stored = try await server.request("GET", "/_users/org.couchdb.user:ann", user: Self.admin).json
        #expect(stored["password"] == nil)
        #expect(stored["password_scheme"] == "pbkdf2")
        #expect(stored["pbkdf2_prf"] == "sha256")
        #expect(stored["iterations"] == 10)
        #expect(stored["derived_key"]?.stringValue?.count == 64)
        #expect(stored["salt"]?.stringValue?.count == 32)

        let ann = (name: "ann", password: "apple")
        #expect(try await server.request("GET", "/_session", user: ann).json["userCtx"] == ["name": "ann", "roles": ["staff"]])
        #expect(try await server.request("GET", "/_users/org.couchdb.user:ann", user: ann).status == 200)
        let signup = try await server.request("PUT", "/_users/org.couchdb.user:cat",
                                              json: ["name": "cat", "password": "c", "roles": ["boss"], "type": "user"])
        #expect(signup.status == 403)
        #expect(signup.json == ["error": "forbidden", "reason": "Only _admin may set roles"])
        let badID = try await server.request("PUT", "/_users/org.couchdb.user:dan", json: ["name": "eve", "roles": [], "type": "user"])
        #expect(badID.json == ["error": "forbidden", "reason": "Doc ID must be of the form org.couchdb.user:name"])
        _ = try await server.request("PUT", "/_users/org.couchdb.user:cat", json: ["name": "cat", "password": "c", "roles": [], "type": "user"])
        let other = try await server.request("GET", "/_users/org.couchdb.user:ann", user: (name: "cat", password: "c"))
        #expect(other.status == 404)
        #expect(other.json == ["error": "not_found", "reason": "missing"])
        let overwrite = try await server.request("PUT", "/_users/org.couchdb.user:ann", json: ["name": "ann", "roles": [], "type": "user"],
                                                 user: (name: "cat", password: "c"))
        #expect(overwrite.status == 404)
        // A DELETE without a revision reads whether the document is there: through the read gate,
        // so another user's document and one that never was answer alike.
        for (id, user) in [("ann", Optional((name: "cat", password: "c"))), ("zed", (name: "cat", password: "c")), ("ann", nil), ("zed", nil)] {
            let probe = try await server.request("DELETE", "/_users/org.couchdb.user:" + id, user: user)
            #expect(probe.status == 404 && probe.json == ["error": "not_found", "reason": "missing"], "DELETE \(id) as \(user?.name ?? "anonymous")")
        }
        #expect(try await server.request("DELETE", "/_users/org.couchdb.user:cat", user: (name: "cat", password: "c")).status == 409)
        let listing = try await server.request("GET", "/_users/_all_docs", user: ann)
        #expect(listing.json == ["error": "unauthorized", "reason": "You are not a server admin."])
        #expect(try await server.request("GET", "/_session", user: (name: "ann", password: "pear")).status == 401)
        await server.stop()
    }

    @Test("POST /_session sets CouchDB's AuthSession cookie; GET reads it; a wrong password and DELETE clear it")
    func cookieSessions() async throws {
        // Half a minute: password checks (PBKDF2) take seconds on a loaded machine.
        // The server's clock is the test's: the cookie's refresh comes by moving it, not by waiting.
        let clock = MovableClock()
        let server = try await Self.secured {
            $0.sessionTimeout = 30
            $0.now = { clock.now }
        }
        let form = try await server.request("POST", "/_session", body: Data("name=admin&password=s3cret".utf8),
                                            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(form.status == 200)
        #expect(form.json == ["ok": true, "name": "admin", "roles": ["_admin"]])
        let setCookie = try #require(form.header("Set-Cookie"))
        #expect(setCookie.hasPrefix("AuthSession="))
        #expect(setCookie.contains("; Version=1; Expires="))
        #expect(setCookie.hasSuffix("; Max-Age=30; Path=/; HttpOnly"))
        let cookie = String(setCookie.prefix { $0 != ";" })

        let session = try await server.request("GET", "/_session", headers: ["Cookie": cookie])
        #expect(session.json["userCtx"] == ["name": "admin", "roles": ["_admin"]])
        #expect(session.json["info"]?["authenticated"] == "cookie")
        #expect(try await server.request("PUT", "/db", headers: ["Cookie": cookie]).status == 201)

        let json = try await server.request("POST", "/_session", json: ["name": "admin", "password": "s3cret"])
        #expect(json.status == 200)
        let wrong = try await server.request("POST", "/_session", json: ["name": "admin", "password": "nope"])
        #expect(wrong.status == 401)
        #expect(wrong.json == ["error": "unauthorized", "reason": "Name or password is incorrect."])
        #expect(wrong.header("Set-Cookie")?.hasPrefix("AuthSession=; Version=1;") == true)
        let forged = cookie.dropLast(4) + "AAAA"
        #expect(try await server.request("GET", "/_session", headers: ["Cookie": String(forged)]).json["userCtx"]?["name"] == .null)
        let malformed = try await server.request("GET", "/_session", headers: ["Cookie": "AuthSession=bm9jb2xvbnM"])
        #expect(malformed.json == ["error": "bad_request", "reason": "Malformed AuthSession cookie. Please clear your cookies."])

        // Within a tenth of its lifetime the cookie is kept; past it (in whole seconds), a request with it gets a fresh one.
        clock.advance(by: 2)
        #expect(try await server.request("GET", "/_session", headers: ["Cookie": cookie]).header("Set-Cookie") == nil)
        clock.advance(by: 2.1)
        let refreshed = try await server.request("GET", "/_session", headers: ["Cookie": cookie])
        #expect(refreshed.header("Set-Cookie")?.hasPrefix("AuthSession=") == true)
        #expect(refreshed.header("Set-Cookie")?.hasPrefix(cookie + ";") == false)

        // Past its lifetime the cookie is no session.
        clock.advance(by: 30)
        #expect(try await server.request("GET", "/_session", headers: ["Cookie": cookie]).json["userCtx"]?["name"] == .null)

        let logout = try await server.request("DELETE", "/_session", headers: ["Cookie": cookie])
        #expect(logout.json == ["ok": true])
        #expect(logout.header("Set-Cookie")?.hasPrefix("AuthSession=;") == true)
        let ctype = try await server.request("POST", "/_session", body: Data("x".utf8), headers: ["Content-Type": "text/plain"])
        #expect(ctype.status == 415)
        #expect(ctype.json == ["error": "bad_content_type",
                               "reason": "Content-Type must be 'application/x-www-form-urlencoded' or 'application/json'"])
        await server.stop()
    }

    @Test("validate_doc_update sees the request's userCtx and the database's security object")
    func validationSeesTheUser() async throws {
        let server = try await Self.secured()
        _ = try await server.request("PUT", "/_users", user: Self.admin)
        _ = try await server.request("PUT", "/_users/org.couchdb.user:bob", json: ["name": "bob", "password": "pw", "roles": [], "type": "user"])
        _ = try await server.request("PUT", "/db", user: Self.admin)
        let security: JSONValue = ["admins": ["names": [], "roles": []], "members": ["names": ["bob"], "roles": []]]
        _ = try await server.request("PUT", "/db/_security", json: security, user: Self.admin)
        let validate = """
            function(newDoc, oldDoc, userCtx, secObj) {
              if (newDoc.echo) throw({forbidden: JSON.stringify({user: userCtx, sec: secObj})});
              if (userCtx.name !== 'bob' && userCtx.roles.indexOf('_admin') === -1) throw({unauthorized: 'only bob'});
            }
            """
        #expect(try await server.request("PUT", "/db/_design/v", json: ["validate_doc_update": .string(validate)], user: Self.admin).status == 201)
        let echoed = try await server.request("PUT", "/db/doc", json: ["echo": true], user: (name: "bob", password: "pw"))
        #expect(echoed.status == 403)
        let seen = try JSONValue(parsing: try #require(echoed.json["reason"]?.stringValue))
        #expect(seen["user"] == ["db": "db", "name": "bob", "roles": []])
        #expect(seen["sec"] == security)
        #expect(try await server.request("PUT", "/db/doc", json: ["ok": 1], user: (name: "bob", password: "pw")).status == 201)
        await server.stop()
    }

    @Test("Bodies over max_http_request_size and documents over max_document_size get CouchDB's 413s")
    func limits() async throws {
        let server = try await RunningServer { configuration in
            configuration.limits.maximumRequestBytes = 1000
            configuration.limits.maximumDocumentBytes = 200
        }
        _ = try await server.request("PUT", "/db")
        let huge = try await server.request("PUT", "/db/huge", json: ["text": .string(String(repeating: "x", count: 2000))])
        #expect(huge.status == 413)
        #expect(huge.json == ["error": "too_large", "reason": "the request entity is too large"])
        let big = try await server.request("PUT", "/db/big", json: ["text": .string(String(repeating: "x", count: 300))])
        #expect(big.status == 413)
        #expect(big.json == ["error": "document_too_large", "reason": "big"])
        await server.stop()
    }

    @Test("A client that sends half a header and waits is disconnected after the idle timeout")
    func slowClientIsCutOff() async throws {
        let server = try await RunningServer { $0.idleTimeout = .milliseconds(300) }
        let started = ContinuousClock.now
        let received = try Self.halfHeaderExchange(port: server.port)
        #expect(received == 0)
        #expect(ContinuousClock.now - started < .seconds(4))
        await server.stop()
    }

    /// Connects, sends half a request header, and waits (5 s at most) for
    /// the server: the bytes `recv` returns (0 when it closed the connection).
    static func halfHeaderExchange(port: Int) throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let half = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        _ = half.withCString { send(fd, $0, strlen($0), 0) }
        var buffer = [UInt8](repeating: 0, count: 512)
        return recv(fd, &buffer, buffer.count, 0)
    }

    @Test("Database names that would leave the data folder are refused")
    func traversal() async throws {
        let server = try await RunningServer()
        for path in ["/%2e%2e", "/..%2F..%2Fetc", "/%2Ftmp%2Fx", "/a%2F..%2F..%2Fx", "/_settee", "/.hidden", "/a%00b"] {
            let reply = try await server.request("PUT", path)
            #expect(reply.status == 400, "\(path)")
        }
        #expect(try await server.request("GET", "/_all_dbs").json == [])
        #expect(!FileManager.default.fileExists(atPath: server.directory.deletingLastPathComponent().appendingPathComponent("x").path))
        await server.stop()
    }

    @Test("Without an administrator the server refuses any address but loopback; with one, given or stored, it may bind any")
    func bindSafety() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settee-bind-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        for host in ["0.0.0.0", "::", "192.168.1.10", "example.com"] {
            var configuration = SetteeServer.Configuration(dataDirectory: folder)
            configuration.host = host
            #expect(throws: CouchError.self, "\(host)") { try SetteeServer(configuration: configuration) }
        }
        for host in ["127.0.0.1", "::1", "localhost"] {
            var configuration = SetteeServer.Configuration(dataDirectory: folder)
            configuration.host = host
            #expect(throws: Never.self) { try SetteeServer(configuration: configuration) }
        }
        var configuration = SetteeServer.Configuration(dataDirectory: folder)
        configuration.host = "0.0.0.0"
        configuration.passwordIterations = 10
        configuration.administrators = ["admin": "pw"]
        #expect(throws: Never.self) { try SetteeServer(configuration: configuration) }
        configuration.administrators = [:]   // stored now
        #expect(throws: Never.self) { try SetteeServer(configuration: configuration) }
    }

    @Test("stop() lets the request under way finish, then run returns and the port is closed")
    func gracefulStop() async throws {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        let slow = "function(newDoc) { var start = Date.now(); while (Date.now() - start < 700) {} }"
        _ = try await server.request("PUT", "/db/_design/slow", json: ["validate_doc_update": .string(slow)])
        let write = Task { try await server.request("PUT", "/db/doc", json: ["a": 1]) }
        try await Task.sleep(for: .milliseconds(200))
        await server.stop()
        #expect(try await write.value.status == 201)
        await #expect(throws: (any Error).self) { try await server.request("GET", "/") }
    }
}

/// A wall clock a test moves by hand (``SetteeServer/Configuration/now``).
final class MovableClock: Sendable {
    private let current = Mutex(Date())

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
}
