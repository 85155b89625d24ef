import Foundation
import Testing
import Settee
import SetteeServer
import SetteeCore

/// `/_membership`, `/_node/{node}`, `/_node/{node}/_versions` and the
/// configuration API `/_node/{node}/_config`, as CouchDB 3.5 answers them
/// (values checked against CouchDB 3.5.0).
@Suite("settee serve: the configuration API and the node")
struct ServerConfigTests {
    static let admin = ServerSecurityTests.admin

    private static func secured() async throws -> RunningServer {
        try await ServerSecurityTests.secured()
    }

    private static func string(_ text: String) -> Data { Data(JSONValue.string(text).jsonText.utf8) }

    @Test("_membership and _node name the one node; _config, _membership and _node are for server administrators")
    func node() async throws {
        let server = try await Self.secured()
        let membership = try await server.request("GET", "/_membership", user: Self.admin)
        #expect(membership.json == ["all_nodes": ["settee@127.0.0.1"], "cluster_nodes": ["settee@127.0.0.1"]])
        #expect(try await server.request("GET", "/_node/_local", user: Self.admin).json == ["name": "settee@127.0.0.1"])
        #expect(try await server.request("GET", "/_node/settee@127.0.0.1/_config/chttpd/port", user: Self.admin).json
                == .string(String(server.port)))
        let other = try await server.request("GET", "/_node/couchdb@elsewhere/_config", user: Self.admin)
        #expect(other.status == 404)
        #expect(other.json == ["error": "not_found", "reason": "no such node: couchdb@elsewhere"])
        let versions = try await server.request("GET", "/_node/_local/_versions", user: Self.admin).json
        #expect(versions["javascript_engine"] == ["name": "spidermonkey", "version": "102"])
        #expect(versions["collation_driver"]?["name"] == "libicu")
        #expect(versions["collation_driver"]?["library_version"]?.stringValue?.first?.isNumber == true)
        #expect(versions["collation_driver"]?["collator_version"]?.stringValue?.contains(".") == true)
        for path in ["/_membership", "/_node/_local", "/_node/_local/_versions", "/_node/_local/_config", "/_node/_local/_config/chttpd/port"] {
            let anonymous = try await server.request("GET", path)
            #expect(anonymous.status == 401, "\(path)")
            #expect(anonymous.json == ["error": "unauthorized", "reason": "You are not a server admin."], "\(path)")
        }
        // A user who is not an administrator is refused too, writes included.
        _ = try await server.request("PUT", "/_users", user: Self.admin)
        let user: JSONValue = ["name": "bob", "password": "pw", "roles": [], "type": "user"]
        #expect(try await server.request("PUT", "/_users/org.couchdb.user:bob", json: user).status == 201)
        let bob = try await server.request("PUT", "/_node/_local/_config/admins/bob", body: Self.string("pw"), user: ("bob", "pw"))
        #expect(bob.status == 401)
        #expect(try await server.request("GET", "/_node/_local/_config/admins/bob", user: Self.admin).status == 404)
        await server.stop()
    }

    @Test("GET, PUT and DELETE of a key answer CouchDB's values: the previous value, \"\" for none, 404 unknown_config_value")
    func keys() async throws {
        let server = try await Self.secured()
        let url = "/_node/_local/_config/test/foo"
        let first = try await server.request("PUT", url, body: Self.string("bar"), user: Self.admin)
        #expect(first.status == 200)
        #expect(first.json == "")
        #expect(try await server.request("PUT", url, body: Self.string("  baz  "), user: Self.admin).json == "bar")
        #expect(try await server.request("GET", url, user: Self.admin).json == "baz", "trimmed")
        #expect(try await server.request("GET", "/_node/_local/_config/test", user: Self.admin).json == ["foo": "baz"])
        let all = try await server.request("GET", "/_node/_local/_config", user: Self.admin).json
        #expect(all["test"] == ["foo": "baz"])
        #expect(all["couchdb"]?["database_dir"] == .string(server.directory.path))
        #expect(all["chttpd"]?["port"] == .string(String(server.port)))
        #expect(all["admins"]?["admin"]?.stringValue?.hasPrefix("-pbkdf2:sha256-") == true)
        #expect(try await server.request("DELETE", url, user: Self.admin).json == "baz")
        let gone = try await server.request("GET", url, user: Self.admin)
        #expect(gone.status == 404)
        #expect(gone.json == ["error": "not_found", "reason": "unknown_config_value"])
        #expect(try await server.request("DELETE", url, user: Self.admin).status == 404)
        #expect(try await server.request("GET", "/_node/_local/_config/nothing", user: Self.admin).json == [:])

        // Only JSON strings, on one line; locked sections; methods.
        for body in ["true", "11", "{}", #"{"testing": [1, 2, 3]}"#, "not json"] {
            #expect(try await server.request("PUT", "/_node/_local/_config/a/b", body: Data(body.utf8), user: Self.admin).status == 400, "\(body)")
        }
        let multiline = try await server.request("PUT", "/_node/_local/_config/a/b", body: Self.string("a\nb"), user: Self.admin)
        #expect(multiline.json == ["error": "bad_request", "reason": "Invalid configuration value"])
        for section in ["daemons", "external", "httpd_design_handlers", "httpd_db_handlers", "native_query_servers", "os_daemons", "query_servers"] {
            let locked = try await server.request("PUT", "/_node/_local/_config/\(section)/wohali", body: Self.string("rules"), user: Self.admin)
            #expect(locked.status == 403, "\(section)")
            #expect(locked.json == ["error": "forbidden", "reason": "Config section blacklisted for modification over HTTP API."])
        }
        #expect(try await server.request("POST", url, user: Self.admin).status == 405)
        #expect(try await server.request("PUT", "/_node/_local/_config/test", body: Self.string("x"), user: Self.admin).status == 405)
        #expect(try await server.request("GET", url + "/deeper", user: Self.admin).status == 404)
        await server.stop()
    }

    @Test("[chttpd] config_whitelist restricts nothing, as in CouchDB 3.5 (which no longer reads it)")
    func whitelist() async throws {
        let server = try await Self.secured()
        let whitelist = "/_node/_local/_config/chttpd/config_whitelist"
        #expect(try await server.request("PUT", whitelist, body: Self.string("[{chttpd,config_whitelist}, {test,foo}]"), user: Self.admin).status == 200)
        #expect(try await server.request("PUT", "/_node/_local/_config/test/bar", body: Self.string("x"), user: Self.admin).json == "")
        #expect(try await server.request("DELETE", whitelist, user: Self.admin).status == 200)
        await server.stop()
    }

    @Test("Settings apply from the next request: max_document_size, max_http_request_size, the session timeout, the uuid algorithm")
    func settingsApply() async throws {
        let server = try await Self.secured()
        #expect(try await server.request("PUT", "/db", user: Self.admin).status == 201)
        let big: JSONValue = ["text": .string(String(repeating: "x", count: 2_000))]
        #expect(try await server.request("PUT", "/db/a", json: big, user: Self.admin).status == 201)
        #expect(try await server.request("PUT", "/_node/_local/_config/couchdb/max_document_size", body: Self.string("1000"), user: Self.admin).json == "8000000")
        let refused = try await server.request("PUT", "/db/b", json: big, user: Self.admin)
        #expect(refused.status == 413)
        #expect(refused.json["error"] == "document_too_large")
        let invalid = try await server.request("PUT", "/_node/_local/_config/couchdb/max_document_size", body: Self.string("lots"), user: Self.admin)
        #expect(invalid.status == 400)
        #expect(invalid.json["reason"]?.stringValue?.contains("max_document_size") == true)
        #expect(try await server.request("GET", "/_node/_local/_config/couchdb/max_document_size", user: Self.admin).json == "1000", "unchanged")
        #expect(try await server.request("DELETE", "/_node/_local/_config/couchdb/max_document_size", user: Self.admin).status == 200)
        #expect(try await server.request("PUT", "/db/b", json: big, user: Self.admin).status == 201)

        #expect(try await server.request("PUT", "/_node/_local/_config/chttpd/max_http_request_size", body: Self.string("500"), user: Self.admin).status == 200)
        #expect(try await server.request("PUT", "/db/c", json: big, user: Self.admin).status == 413)
        #expect(try await server.request("DELETE", "/_node/_local/_config/chttpd/max_http_request_size", user: Self.admin).status == 200)

        #expect(try await server.request("PUT", "/_node/_local/_config/chttpd_auth/timeout", body: Self.string("77"), user: Self.admin).status == 200)
        let login = try await server.request("POST", "/_session", json: ["name": .string(Self.admin.name), "password": .string(Self.admin.password)])
        #expect(login.header("Set-Cookie")?.contains("Max-Age=77") == true)

        // [uuids] algorithm: sequential by default (CouchDB's), utc_id with its suffix, utc_random, random.
        let sequential = try await server.request("GET", "/_uuids?count=1000").json["uuids"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(sequential.count == 1000 && sequential.allSatisfy { $0.count == 32 })
        #expect(zip(sequential, sequential.dropFirst()).allSatisfy { $0 < $1 } || Set(sequential.map { $0.prefix(26) }).count == 2)
        #expect(try await server.request("PUT", "/_node/_local/_config/uuids/utc_id_suffix", body: Self.string("frog"), user: Self.admin).status == 200)
        #expect(try await server.request("PUT", "/_node/_local/_config/uuids/algorithm", body: Self.string("utc_id"), user: Self.admin).status == 200)
        let stamped = try await server.request("GET", "/_uuids?count=10").json["uuids"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(stamped.count == 10 && stamped.allSatisfy { $0.count == 18 && $0.hasSuffix("frog") })
        #expect(zip(stamped, stamped.dropFirst()).allSatisfy { $0 < $1 })
        let posted = try await server.request("POST", "/db", json: ["x": 1], user: Self.admin).json["id"]?.stringValue
        #expect(posted?.hasSuffix("frog") == true, "a new document's id too")
        #expect(try await server.request("PUT", "/_node/_local/_config/uuids/algorithm", body: Self.string("frog"), user: Self.admin).status == 400)
        let uuids = try await server.request("GET", "/_uuids")
        #expect(uuids.header("Pragma") == "no-cache")
        #expect(uuids.header("Cache-Control") == "no-cache")
        #expect(uuids.header("ETag")?.isEmpty == false)
        await server.stop()
    }

    @Test("Administrators set through [admins] are hashed on write, log in at once, are kept unless X-Couch-Persist: false, and the last one of a server open beyond this machine stays")
    func administrators() async throws {
        let server = try await Self.secured()
        let previous = try await server.request("PUT", "/_node/_local/_config/admins/second", body: Self.string("pw2"), user: Self.admin)
        #expect(previous.json == "")
        let hash = try await server.request("GET", "/_node/_local/_config/admins/second", user: Self.admin).json.stringValue ?? ""
        #expect(hash.hasPrefix("-pbkdf2:sha256-"))
        #expect(!hash.contains("pw2"))
        #expect(try await server.request("GET", "/_all_dbs", user: ("second", "pw2")).status == 200)
        let stored = try String(contentsOf: server.directory.appendingPathComponent("_settee/admins.json"), encoding: .utf8)
        #expect(stored.contains("\"second\":\"-pbkdf2:sha256-"))

        // Not kept: in effect until the restart, never in admins.json.
        #expect(try await server.request("PUT", "/_node/_local/_config/admins/third", body: Self.string("pw3"),
                                         headers: ["X-Couch-Persist": "false"], user: Self.admin).status == 200)
        #expect(try await server.request("GET", "/_all_dbs", user: ("third", "pw3")).status == 200)
        #expect(try String(contentsOf: server.directory.appendingPathComponent("_settee/admins.json"), encoding: .utf8).contains("third") == false)
        // A hash is taken as it is.
        #expect(try await server.request("PUT", "/_node/_local/_config/admins/fourth", body: Self.string(hash), user: Self.admin).status == 200)
        #expect(try await server.request("GET", "/_all_dbs", user: ("fourth", "pw2")).status == 200)
        #expect(try await server.request("PUT", "/_node/_local/_config/admins/fifth", body: Self.string("-pbkdf2-nonsense"), user: Self.admin).status == 400)

        #expect(try await server.request("DELETE", "/_node/_local/_config/admins/second", user: Self.admin).json == .string(hash))
        #expect(try await server.request("GET", "/_all_dbs", user: ("second", "pw2")).status == 401)

        // Kept values are read again at the next start; others are not.
        #expect(try await server.request("PUT", "/_node/_local/_config/test/kept", body: Self.string("yes"), user: Self.admin).status == 200)
        #expect(try await server.request("PUT", "/_node/_local/_config/test/gone", body: Self.string("no"),
                                         headers: ["X-Couch-Persist": "false"], user: Self.admin).status == 200)
        let directory = server.directory
        await server.stopKeepingFolder()
        let again = try await RunningServer(directory: directory) { $0.host = "0.0.0.0" }
        #expect(try await again.request("GET", "/_node/_local/_config/test", user: Self.admin).json == ["kept": "yes"])
        #expect(try await again.request("GET", "/_all_dbs", user: ("third", "pw3")).status == 401)
        #expect(try await again.request("POST", "/_node/_local/_config/_reload", user: Self.admin).json == ["ok": true])
        #expect(try await again.request("DELETE", "/_node/_local/_config/admins/fourth", user: Self.admin).status == 200)
        // Bound beyond this machine: the last administrator cannot be removed.
        let last = try await again.request("DELETE", "/_node/_local/_config/admins/admin", user: Self.admin)
        #expect(last.status == 403)
        #expect(try await again.request("GET", "/_all_dbs").status == 401)
        await again.stop()
    }

    @Test("JSONP when [chttpd] allow_jsonp is true: documents, streamed views and changes, errors; a bad callback name is refused; off, callback is ignored")
    func jsonp() async throws {
        let server = try await Self.secured()
        #expect(try await server.request("PUT", "/db", user: Self.admin).status == 201)
        #expect(try await server.request("PUT", "/db/0", json: ["a": 1], user: Self.admin).status == 201)
        let design: JSONValue = ["views": ["v": ["map": "function(doc) { if (doc.a) emit(null, doc.a); }"]]]
        #expect(try await server.request("PUT", "/db/_design/t", json: design, user: Self.admin).status == 201)
        let off = try await server.request("GET", "/db/0?callback=f", user: Self.admin)
        #expect(off.header("Content-Type") == "application/json")
        #expect(off.json["a"] == 1)

        #expect(try await server.request("PUT", "/_node/_local/_config/chttpd/allow_jsonp", body: Self.string("true"), user: Self.admin).status == 200)
        func call(_ reply: RunningServer.Reply, _ name: String) -> JSONValue? {
            let text = String(decoding: reply.body, as: UTF8.self)
            let prefix = "/* CouchDB */\(name)("
            guard reply.header("Content-Type") == "application/javascript", text.hasPrefix(prefix), text.hasSuffix(");") else { return nil }
            return try? JSONValue(parsing: String(text.dropFirst(prefix.count).dropLast(2)))
        }
        let document = try await server.request("GET", "/db/0?callback=f", user: Self.admin)
        #expect(call(document, "f")?["a"] == 1)
        #expect(call(try await server.request("GET", "/db/_design/t/_view/v?callback=a.b%5B1%5D", user: Self.admin), "a.b[1]")?["total_rows"] == 1)
        #expect(call(try await server.request("GET", "/db/_changes?callback=c", user: Self.admin), "c")?["results"]?.arrayValue?.count == 2)
        let missing = try await server.request("GET", "/db/nope?callback=f", user: Self.admin)
        #expect(missing.status == 404)
        #expect(call(missing, "f") == ["error": "not_found", "reason": "missing"])
        let bad = try await server.request("GET", "/db/0?callback=f%22", user: Self.admin)
        #expect(bad.status == 400)
        #expect(bad.json == ["error": "bad_request", "reason": "invalid_callback"])
        #expect(try await server.request("HEAD", "/db/0?callback=f", user: Self.admin).body.isEmpty)
        await server.stop()
    }

    @Test("[chttpd] decode_plus_to_space: a + in a path is a space (CouchDB's default), or itself when false; %2B is always +")
    func plusInPaths() async throws {
        let server = try await Self.secured()
        #expect(try await server.request("PUT", "/db", user: Self.admin).status == 201)
        #expect(try await server.request("PUT", "/db/test+doc+2", json: [:], user: Self.admin).json["id"] == "test doc 2")
        #expect(try await server.request("PUT", "/db/a%2Bb", json: [:], user: Self.admin).json["id"] == "a+b")
        #expect(try await server.request("PUT", "/_node/_local/_config/chttpd/decode_plus_to_space", body: Self.string("false"), user: Self.admin).json == "true")
        #expect(try await server.request("PUT", "/db/test+doc", json: [:], user: Self.admin).json["id"] == "test+doc")
        #expect(try await server.request("PUT", "/plus+db", user: Self.admin).status == 201)
        #expect(try await server.request("GET", "/plus+db", user: Self.admin).json["db_name"] == "plus+db")
        await server.stop()
    }

    @Test("Location is an absolute URL: from Host, X-Forwarded-Host or the header [chttpd] x_forwarded_host names, https by X-Forwarded-Proto")
    func absoluteLocation() async throws {
        let server = try await Self.secured()
        #expect(try await server.request("PUT", "/db", user: Self.admin).header("Location") == server.base + "/db")
        #expect(try await server.request("PUT", "/db/a", json: [:], user: Self.admin).header("Location") == server.base + "/db/a")
        let forwarded = try await server.request("PUT", "/db/b", json: [:], headers: ["X-Forwarded-Host": "mysite.com"], user: Self.admin)
        #expect(forwarded.header("Location") == "http://mysite.com/db/b")
        let secure = try await server.request("PUT", "/db/c", json: [:], headers: ["X-Forwarded-Host": "mysite.com", "X-Forwarded-Proto": "https"], user: Self.admin)
        #expect(secure.header("Location") == "https://mysite.com/db/c")
        #expect(try await server.request("PUT", "/_node/_local/_config/chttpd/x_forwarded_host", body: Self.string("X-Host"), user: Self.admin).status == 200)
        let custom = try await server.request("PUT", "/db/d", json: [:], headers: ["X-Host": "mysite2.com"], user: Self.admin)
        #expect(custom.header("Location") == "http://mysite2.com/db/d")
        let newline = try await server.request("PUT", "/db/docid%0A/attachment.txt", body: Data("x".utf8), headers: ["Content-Type": "text/plain"], user: Self.admin)
        #expect(newline.header("Location") == server.base + "/db/docid%0A/attachment.txt")
        await server.stop()
    }

    @Test("A users database gets CouchDB's _design/_auth; [chttpd_auth] authentication_db moves logins and the users rules to another database; iterations and password_regexp apply to new passwords")
    func authenticationDatabase() async throws {
        let server = try await Self.secured()
        #expect(try await server.request("PUT", "/_users", user: Self.admin).status == 201)
        let auth = try await server.request("GET", "/_users/_design/_auth", user: Self.admin).json
        #expect(auth["validate_doc_update"]?.stringValue?.contains("Only admins may delete other user docs.") == true)
        #expect(auth["language"] == "javascript")

        // Another database becomes the users database: its users log in, their passwords are hashed on write.
        #expect(try await server.request("PUT", "/people", user: Self.admin).status == 201)
        #expect(try await server.request("PUT", "/_node/_local/_config/chttpd_auth/iterations", body: Self.string("3"), user: Self.admin).status == 200)
        #expect(try await server.request("PUT", "/_node/_local/_config/chttpd_auth/authentication_db", body: Self.string("people"), user: Self.admin).json == "")
        // _design/_auth comes when a users database is next created (CouchDB's auth cache writes it a moment later too).
        let early: JSONValue = ["_id": "org.couchdb.user:early", "name": "early", "roles": [], "password": "x"]
        #expect(try await server.request("POST", "/people", json: early, user: Self.admin).status == 201, "no _design/_auth yet: no type needed, as in CouchDB")
        #expect(try await server.request("GET", "/people/org.couchdb.user:early", user: Self.admin).json["password"] == nil, "hashed all the same")
        #expect(try await server.request("DELETE", "/_users", user: Self.admin).status == 200)
        #expect(try await server.request("PUT", "/_users", user: Self.admin).status == 201)
        #expect(try await server.request("GET", "/people/_design/_auth", user: Self.admin).status == 200)
        let tom: JSONValue = ["_id": "org.couchdb.user:tom", "name": "tom", "roles": [], "type": "user", "password": "cat"]
        #expect(try await server.request("POST", "/people", json: tom, user: Self.admin).status == 201)
        let stored = try await server.request("GET", "/people/org.couchdb.user:tom", user: Self.admin).json
        #expect(stored["password"] == nil)
        #expect(stored["iterations"] == 3)
        let session = try await server.request("GET", "/_session", user: ("tom", "cat")).json
        #expect(session["userCtx"]?["name"] == "tom")
        #expect(session["info"]?["authentication_db"] == "people")
        let wrongType: JSONValue = ["_id": "org.couchdb.user:ann", "name": "ann", "roles": [], "type": "cat", "password": "x"]
        #expect(try await server.request("POST", "/people", json: wrongType, user: Self.admin).json["reason"] == "doc.type must be user")

        // password_regexp: rules in order, the first unmatched one's reason; an unreadable value refuses every password.
        let rules = #"[{".{10,}"}, {"[A-Z]+", "Requirement 2."}, {"[a-z]+", ""}, {"\\d+", "Req 4."}, "[!.,()]+"]"#
        #expect(try await server.request("PUT", "/_node/_local/_config/couch_httpd_auth/password_regexp", body: Self.string(rules), user: Self.admin).status == 200)
        func signUp(_ password: String) async throws -> RunningServer.Reply {
            let jan: JSONValue = ["_id": "org.couchdb.user:jan", "name": "jan", "roles": [], "type": "user", "password": .string(password)]
            return try await server.request("PUT", "/people/org.couchdb.user:jan", json: jan, user: Self.admin)
        }
        for (password, reason) in [("funnybone", "Password does not conform to requirements."),
                                   ("funnnnnybone", "Password does not conform to requirements. Requirement 2."),
                                   ("FUNNNNNYBONE", "Password does not conform to requirements."),
                                   ("funnnnnyBONE", "Password does not conform to requirements. Req 4."),
                                   ("funnnnnyB0N3", "Password does not conform to requirements.")] {
            let refused = try await signUp(password)
            #expect(refused.status == 400, "\(password)")
            #expect(refused.json == ["error": "bad_request", "reason": .string(reason)], "\(password)")
        }
        #expect(try await signUp("funnnnnyB0N3!").status == 201)
        #expect(try await server.request("PUT", "/_node/_local/_config/couch_httpd_auth/password_regexp", body: Self.string(#"[{".{10,}"]"#), user: Self.admin).status == 200)
        let unreadable = try await server.request("PUT", "/people/org.couchdb.user:joe", json: ["name": "joe", "roles": [], "type": "user", "password": "querty"],
                                                 user: Self.admin)
        #expect(unreadable.status == 403)
        #expect(unreadable.json == ["error": "forbidden", "reason": "Server cannot hash passwords at this time."])
        await server.stop()
    }

    @Test("upgrade_hash_on_auth rehashes a password at the configured iterations after a login; a user document in conflict does not log in")
    func userHashesAndConflicts() async throws {
        let server = try await Self.secured()
        #expect(try await server.request("PUT", "/_users", user: Self.admin).status == 201)
        let tom: JSONValue = ["name": "tom", "roles": [], "type": "user", "password": "cat"]
        #expect(try await server.request("PUT", "/_users/org.couchdb.user:tom", json: tom).status == 201)
        #expect(try await server.request("GET", "/_users/org.couchdb.user:tom", user: Self.admin).json["iterations"] == 10)
        #expect(try await server.request("PUT", "/_node/_local/_config/chttpd_auth/iterations", body: Self.string("4"), user: Self.admin).status == 200)
        #expect(try await server.request("GET", "/_session", user: ("tom", "cat")).json["userCtx"]?["name"] == "tom")
        #expect(try await server.request("GET", "/_users/org.couchdb.user:tom", user: Self.admin).json["iterations"] == 10, "not asked to upgrade")
        #expect(try await server.request("PUT", "/_node/_local/_config/chttpd_auth/upgrade_hash_on_auth", body: Self.string("true"), user: Self.admin).status == 200)
        let salt = try await server.request("GET", "/_users/org.couchdb.user:tom", user: Self.admin).json["salt"]
        let login = try await server.request("POST", "/_session", json: ["name": "tom", "password": "cat"])
        let cookie = try #require(login.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        var upgraded: JSONValue = .null
        for _ in 0..<100 {
            upgraded = try await server.request("GET", "/_users/org.couchdb.user:tom", user: Self.admin).json
            if upgraded["iterations"] == 4 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(upgraded["iterations"] == 4)
        #expect(upgraded["password"] == nil)
        #expect(upgraded["salt"] == salt, "the salt kept: the session cookie stays valid")
        #expect(try await server.request("GET", "/_session", headers: ["Cookie": cookie]).json["userCtx"]?["name"] == "tom")
        #expect(try await server.request("GET", "/_session", user: ("tom", "cat")).json["userCtx"]?["name"] == "tom", "the new hash is the password's")

        // A conflicting revision (as a replication brings): no login until it is resolved.
        let rival: JSONValue = ["_id": "org.couchdb.user:tom", "_rev": "1-00000000000000000000000000000001", "name": "tom", "roles": [], "type": "user",
                                "password_scheme": "pbkdf2", "iterations": 4, "derived_key": "00", "salt": "00", "pbkdf2_prf": "sha256"]
        let written = try await server.request("POST", "/_users/_bulk_docs", json: ["docs": [rival], "new_edits": false], user: Self.admin)
        #expect(written.status == 201)
        let refused = try await server.request("GET", "/_session", user: ("tom", "cat"))
        #expect(refused.status == 401)
        #expect(refused.json["reason"]?.stringValue?.contains("conflicts must be resolved") == true)
        await server.stop()
    }
}
