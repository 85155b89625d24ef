import Foundation
import Testing
import Settee

@Suite("settee serve: shows, lists, updates and rewrites run by the JavaScript engine, as CouchDB 3.5 runs them")
struct ServerDesignFunctionTests {
    static let design: JSONValue = [
        "views": [
            "by_name": ["map": "function (doc) { if (doc.name) emit(doc.name, doc.age); }"],
        ],
        "shows": [
            "hello": "function (doc, req) { return {body: 'Hello ' + (doc ? doc.name : 'nobody') + ' ' + req.query.x, headers: {'X-Test': 'yes'}}; }",
            "request": "function (doc, req) { return {json: {id: req.id, method: req.method, path: req.path, query: req.query, userCtx: req.userCtx, body: req.body, hasInfo: req.info.db_name, uuid: req.uuid.length}}; }",
            "fails": "function (doc, req) { throw new Error('boom'); }",
            "fatal": "function (doc, req) { throw ['fatal', 'gave_up', 'no more']; }",
            "typed": "function (doc, req) { provides('json', function () { return toJSON({name: doc.name}); }); provides('html', function () { return '<p>' + doc.name + '</p>'; }); }",
            "binary": "function (doc, req) { return {base64: 'AAEC', code: 202}; }",
            "revisions": "function (doc, req) { return {json: doc._revisions}; }",
        ],
        "lists": [
            "names": "function (head, req) { start({headers: {'Content-Type': 'text/plain'}}); var row; while ((row = getRow())) { send(row.key + '=' + row.value + '\\n'); } return 'total ' + head.total_rows; }",
        ],
        "updates": [
            "bump": "function (doc, req) { if (!doc) { return [{_id: req.id, count: 1}, 'created ' + req.id]; } doc.count += 1; return [doc, {json: {count: doc.count}}]; }",
            "anonymous": "function (doc, req) { return [{value: 1}, 'no id']; }",
            "echo": "function (doc, req) { return [null, {body: 'echo ' + req.body + ' ' + JSON.stringify(req.form), headers: {'Content-Type': 'text/plain'}}]; }",
        ],
    ]

    static func start() async throws -> RunningServer {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/db")
        _ = try await server.request("PUT", "/db/_design/app", json: design)
        _ = try await server.request("PUT", "/db/ann", json: ["name": "Ann", "age": 31])
        _ = try await server.request("PUT", "/db/bob", json: ["name": "Bob", "age": 42])
        return server
    }

    @Test("A show renders a document with CouchDB's request object; its ETag answers If-None-Match with 304")
    func show() async throws {
        let server = try await Self.start()
        let hello = try await server.request("GET", "/db/_design/app/_show/hello/ann?x=1")
        #expect(hello.status == 200)
        #expect(String(decoding: hello.body, as: UTF8.self) == "Hello Ann 1")
        #expect(hello.header("Content-Type") == "text/html; charset=utf-8")
        #expect(hello.header("X-Test") == "yes")
        #expect(hello.header("Vary") == "Accept")
        let etag = try #require(hello.header("ETag"))
        #expect(try await server.request("GET", "/db/_design/app/_show/hello/ann?x=1", headers: ["If-None-Match": etag]).status == 304)

        let nobody = try await server.request("GET", "/db/_design/app/_show/hello")
        #expect(String(decoding: nobody.body, as: UTF8.self) == "Hello nobody undefined")
        let missingDocument = try await server.request("GET", "/db/_design/app/_show/hello/zed")
        #expect(String(decoding: missingDocument.body, as: UTF8.self) == "Hello nobody undefined")

        let request = try await server.request("GET", "/db/_design/app/_show/request/ann?startkey=%5B1%5D&plain=a")
        #expect(request.header("Content-Type") == "application/json")
        #expect(request.json == [
            "id": "ann", "method": "GET", "path": ["db", "_design", "app", "_show", "request", "ann"],
            "query": ["startkey": [1], "plain": "a"], "userCtx": ["db": "db", "name": .null, "roles": ["_admin"]],
            "body": "undefined", "hasInfo": "db", "uuid": 32,
        ])

        let typed = try await server.request("GET", "/db/_design/app/_show/typed/bob", headers: ["Accept": "application/json"])
        #expect(typed.json == ["name": "Bob"])
        #expect(typed.header("Content-Type") == "application/json")
        let html = try await server.request("GET", "/db/_design/app/_show/typed/bob", headers: ["Accept": "text/html"])
        #expect(String(decoding: html.body, as: UTF8.self) == "<p>Bob</p>")
        #expect(html.header("Content-Type") == "text/html; charset=utf-8")

        let revisions = try await server.request("GET", "/db/_design/app/_show/revisions/bob")
        #expect(revisions.json["start"] == 1)
        #expect(revisions.json["ids"]?.arrayValue?.count == 1)

        let binary = try await server.request("GET", "/db/_design/app/_show/binary")
        #expect(binary.status == 202)
        #expect(binary.body == Data([0, 1, 2]))
        #expect(binary.header("Content-Type") == "application/binary")
        await server.stop()
    }

    @Test("A missing function, design document or path is CouchDB's 404; a throwing function its render_error")
    func showErrors() async throws {
        let server = try await Self.start()
        let missing = try await server.request("GET", "/db/_design/app/_show/nothing/ann")
        #expect(missing.status == 404)
        #expect(missing.json == ["error": "not_found", "reason": "missing json key: nothing"])
        let noDesign = try await server.request("GET", "/db/_design/none/_show/hello")
        #expect(noDesign.status == 404)
        #expect(noDesign.json == ["error": "not_found", "reason": "missing"])
        let noPath = try await server.request("GET", "/db/_design/app/_show")
        #expect(noPath.json == ["error": "show_error", "reason": "Invalid path."])
        let noLists = try await server.request("GET", "/db/_design/app/_update/none")
        #expect(noLists.json == ["error": "not_found", "reason": "missing json key: none"])

        let fails = try await server.request("GET", "/db/_design/app/_show/fails/ann")
        #expect(fails.status == 500)
        #expect(fails.json["error"] == "render_error")
        #expect(fails.json["reason"]?.stringValue?.hasPrefix("function raised error: Error: boom") == true)

        // A fatal error ends that worker's query server, as CouchDB's couchjs exits; the next calls get a new one.
        for _ in 0 ..< 3 {
            let fatal = try await server.request("GET", "/db/_design/app/_show/fatal")
            #expect(fatal.status == 500)
            #expect(fatal.json == ["error": "gave_up", "reason": "no more"])
        }
        let afterwards = try await server.request("GET", "/db/_design/app/_show/hello/ann?x=2")
        #expect(String(decoding: afterwards.body, as: UTF8.self) == "Hello Ann 2")
        await server.stop()
    }

    @Test("Shows run side by side on the workers, each answering its own request")
    func concurrentShows() async throws {
        let server = try await Self.start()
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for number in 0 ..< 24 {
                group.addTask {
                    let reply = try await server.request("GET", "/db/_design/app/_show/hello/\(number % 2 == 0 ? "ann" : "bob")?x=\(number)")
                    return (number, String(decoding: reply.body, as: UTF8.self))
                }
            }
            for try await (number, body) in group {
                #expect(body == "Hello \(number % 2 == 0 ? "Ann" : "Bob") \(number)")
            }
        }
        await server.stop()
    }

    @Test("A list renders a view's rows, of its own design document or another's, with the view's options")
    func list() async throws {
        let server = try await Self.start()
        let names = try await server.request("GET", "/db/_design/app/_list/names/by_name")
        #expect(names.status == 200)
        #expect(String(decoding: names.body, as: UTF8.self) == "Ann=31\nBob=42\ntotal 2")
        #expect(names.header("Content-Type") == "text/plain")

        let limited = try await server.request("GET", "/db/_design/app/_list/names/by_name?descending=true&limit=1")
        #expect(String(decoding: limited.body, as: UTF8.self) == "Bob=42\ntotal 2")

        _ = try await server.request("PUT", "/db/_design/other", json: ["views": ["ages": ["map": "function (doc) { if (doc.age) emit(doc.age, doc.name); }"]]])
        let other = try await server.request("GET", "/db/_design/app/_list/names/other/ages")
        #expect(String(decoding: other.body, as: UTF8.self) == "31=Ann\n42=Bob\ntotal 2")

        let posted = try await server.request("POST", "/db/_design/app/_list/names/by_name", json: ["keys": ["Bob"]])
        #expect(String(decoding: posted.body, as: UTF8.self) == "Bob=42\ntotal 2")

        let notJSON = try await server.request("POST", "/db/_design/app/_list/names/by_name", body: Data("{}".utf8), headers: ["Content-Type": "text/plain"])
        #expect(notJSON.status == 415)
        #expect(notJSON.json == ["error": "bad_content_type", "reason": "Content-Type must be application/json"])

        let allDocs = try await server.request("GET", "/db/_design/app/_list/names/_all_docs?limit=1")
        #expect(allDocs.status == 200)
        #expect(String(decoding: allDocs.body, as: UTF8.self).hasPrefix("_design/app="))

        let missing = try await server.request("GET", "/db/_design/app/_list/nothing/by_name")
        #expect(missing.status == 404)
        #expect(missing.json == ["error": "not_found", "reason": "missing json key: nothing"])
        await server.stop()
    }

    @Test("An update writes the document it returns with X-Couch-Update-NewRev; without one it only answers; GET is refused")
    func update() async throws {
        let server = try await Self.start()
        let created = try await server.request("POST", "/db/_design/app/_update/bump/counter", body: Data())
        #expect(created.status == 201)
        #expect(String(decoding: created.body, as: UTF8.self) == "created counter")
        let rev = try #require(created.header("X-Couch-Update-NewRev"))
        #expect(rev.hasPrefix("1-"))
        #expect(created.header("X-Couch-Id") == "counter")

        let bumped = try await server.request("PUT", "/db/_design/app/_update/bump/counter", body: Data())
        #expect(bumped.status == 201)
        #expect(bumped.json == ["count": 2])
        #expect(try await server.request("GET", "/db/counter").json["count"] == 2)

        let echo = try await server.request("POST", "/db/_design/app/_update/echo", body: Data("a=1&b=two".utf8),
                                            headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(echo.status == 200)
        #expect(String(decoding: echo.body, as: UTF8.self) == #"echo a=1&b=two {"a":"1","b":"two"}"#)

        let anonymous = try await server.request("POST", "/db/_design/app/_update/anonymous", body: Data())
        #expect(anonymous.status == 400)
        #expect(anonymous.json == ["error": "illegal_docid", "reason": "Document id must not be empty"])

        let get = try await server.request("GET", "/db/_design/app/_update/bump/counter")
        #expect(get.status == 405)
        #expect(get.json == ["error": "method_not_allowed", "reason": "Update functions do not allow GET"])
        await server.stop()
    }
}

@Suite("settee serve: _rewrite, CouchDB 3.5's rules and functions")
struct ServerRewriteTests {
    @Test("Array rules bind path variables and query values and route the request again, relative to the design document")
    func rules() async throws {
        let server = try await ServerDesignFunctionTests.start()
        _ = try await server.request("PUT", "/db/_design/site", json: [
            "shows": ["who": "function (doc, req) { return 'who ' + doc.name + ' ' + req.query.greeting + ' ' + JSON.stringify(req.requested_path); }"],
            "rewrites": [
                ["from": "/people/:id", "to": "_show/who/:id", "query": ["greeting": ":hello"]],
                ["from": "/docs/*", "to": "../../*"],
                ["from": "/names", "to": "../app/_view/by_name", "query": ["descending": "true"]],
                ["from": "/only-post", "to": "../../bob", "method": "POST"],
            ],
        ])
        let who = try await server.request("GET", "/db/_design/site/_rewrite/people/ann?hello=hi")
        #expect(who.status == 200)
        #expect(String(decoding: who.body, as: UTF8.self) == #"who Ann hi ["db","_design","site","_rewrite","people","ann"]"#)

        let document = try await server.request("GET", "/db/_design/site/_rewrite/docs/bob")
        #expect(document.json["name"] == "Bob")
        let view = try await server.request("GET", "/db/_design/site/_rewrite/names")
        #expect(view.json["rows"]?[0]?["key"] == "Bob")

        let unmatched = try await server.request("GET", "/db/_design/site/_rewrite/only-post")
        #expect(unmatched.status == 404)
        #expect(unmatched.json == ["error": "not_found", "reason": "missing"])
        let none = try await server.request("GET", "/db/_design/app/_rewrite/anything")
        #expect(none.status == 404)
        #expect(none.json == ["error": "rewrite_error", "reason": "Invalid path."])
        await server.stop()
    }

    @Test("A rewrite function gives the new path, query and method, or a response of its own; null is no rule")
    func function() async throws {
        let server = try await ServerDesignFunctionTests.start()
        _ = try await server.request("PUT", "/db/_design/fn", json: [
            "rewrites": """
            function (req) {
              var rest = req.path.slice(4);
              if (rest[0] === 'doc') return {path: '../../' + rest[1]};
              if (rest[0] === 'view') return {path: '../app/_view/by_name', query: {limit: '1', descending: 'true'}};
              if (rest[0] === 'teapot') return {code: 418, body: 'short and stout', headers: {'X-Pot': 'tea'}};
              if (rest[0] === 'string') return '../../ann';
              return null;
            }
            """,
        ])
        let document = try await server.request("GET", "/db/_design/fn/_rewrite/doc/ann")
        #expect(document.json["name"] == "Ann")
        let view = try await server.request("GET", "/db/_design/fn/_rewrite/view")
        #expect(view.json["rows"]?.arrayValue?.count == 1)
        #expect(view.json["rows"]?[0]?["key"] == "Bob")
        let teapot = try await server.request("GET", "/db/_design/fn/_rewrite/teapot")
        #expect(teapot.status == 418)
        #expect(String(decoding: teapot.body, as: UTF8.self) == "short and stout")
        #expect(teapot.header("X-Pot") == "tea")
        let string = try await server.request("GET", "/db/_design/fn/_rewrite/string")
        #expect(string.json["name"] == "Ann")
        let none = try await server.request("GET", "/db/_design/fn/_rewrite/other")
        #expect(none.status == 404)
        #expect(none.json == ["error": "rewrite_error", "reason": "Invalid path."])
        await server.stop()
    }
}
