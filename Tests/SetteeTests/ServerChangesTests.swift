import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Settee

/// The ids of a normal or longpoll feed's `results`.
private func ids(_ reply: RunningServer.Reply) -> [String] {
    reply.json["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
}

/// The JSON lines of a continuous feed (heartbeat newlines left out).
private func lines(_ reply: RunningServer.Reply) -> [JSONValue] {
    String(decoding: reply.body, as: UTF8.self).split(separator: "\n").compactMap { try? JSONValue(parsing: String($0)) }
}

/// A server with the database `db` holding documents `a`, `b`, `c` (seqs 1, 2, 3).
private func serverWithThreeDocuments() async throws -> RunningServer {
    let server = try await RunningServer()
    _ = try await server.request("PUT", "/db")
    for (id, n) in [("a", 1), ("b", 2), ("c", 3)] {
        _ = try await server.request("PUT", "/db/\(id)", json: ["n": .number(Double(n))])
    }
    return server
}

@Suite("settee serve: the changes feed as CouchDB 3.5 sends it")
struct ServerChangesTests {
    @Test("A normal feed lists each document once at its latest change, with last_seq and pending as strings and numbers")
    func normalFeed() async throws {
        let server = try await serverWithThreeDocuments()
        let a = try await server.request("GET", "/db/a")
        _ = try await server.request("PUT", "/db/a?rev=\(a.json["_rev"]!.stringValue!)", json: ["n": 10])
        let reply = try await server.request("GET", "/db/_changes")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json")
        #expect(ids(reply) == ["b", "c", "a"])
        #expect(reply.json["results"]?[0]?["seq"] == "2")
        #expect(reply.json["results"]?[2]?["changes"]?[0]?["rev"]?.stringValue?.hasPrefix("2-") == true)
        #expect(reply.json["last_seq"] == "4")
        #expect(reply.json["pending"] == 0)
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(text.hasPrefix("{\"results\":[\n{\"seq\":\"2\",\"id\":\"b\",\"changes\":[{\"rev\":"))
        #expect(text.contains("},\r\n{\"seq\":\"3\""))
        #expect(text.hasSuffix("\n],\n\"last_seq\":\"4\",\"pending\":0}\n"))
        await server.stop()
    }

    @Test("since (a number, an opaque N-… sequence, now), limit, descending and pending")
    func sinceLimitDescending() async throws {
        let server = try await serverWithThreeDocuments()
        #expect(ids(try await server.request("GET", "/db/_changes?since=1")) == ["b", "c"])
        #expect(ids(try await server.request("GET", "/db/_changes?since=2-g1AAAAFTeJzLYWBg4MhgTmHgz8tPSTV0MDQy1zMAQsMcoARTIkOS_P___7MymBMZc4EC7EmGKSmJKUnYdGDXn8cCJBkagNR_VOsMsVtnlJKSamhsgl1XFgCUNTH9")) == ["c"])
        #expect(ids(try await server.request("GET", "/db/_changes?since=now")) == [])
        let limited = try await server.request("GET", "/db/_changes?limit=1")
        #expect(ids(limited) == ["a"])
        #expect(limited.json["last_seq"] == "1")
        #expect(limited.json["pending"] == 2)
        let newest = try await server.request("GET", "/db/_changes?descending=true&limit=2")
        #expect(ids(newest) == ["c", "b"])
        #expect(newest.json["last_seq"] == "2")
        #expect(newest.json["pending"] == 1)
        let filteredNewest = try await server.request("GET", "/db/_changes?descending=true&filter=_doc_ids&doc_ids=%5B%22a%22,%22c%22%5D&limit=1")
        #expect(ids(filteredNewest) == ["c"])
        let malformed = try await server.request("GET", "/db/_changes?since=banana")
        #expect(malformed.status == 400)
        #expect(malformed.json == ["error": "bad_request", "reason": "Malformed sequence supplied in 'since' parameter."])
        let feed = try await server.request("GET", "/db/_changes?feed=sideways")
        #expect(feed.json == ["error": "bad_request", "reason": "Supported `feed` types: normal, continuous, live, longpoll, eventsource"])
        await server.stop()
    }

    @Test("include_docs adds each document, deleted ones as tombstones; deletions are marked deleted")
    func includeDocs() async throws {
        let server = try await serverWithThreeDocuments()
        let b = try await server.request("GET", "/db/b")
        _ = try await server.request("DELETE", "/db/b?rev=\(b.json["_rev"]!.stringValue!)")
        let reply = try await server.request("GET", "/db/_changes?include_docs=true&style=all_docs")
        let results = try #require(reply.json["results"]?.arrayValue)
        #expect(results.map { $0["id"] } == ["a", "c", "b"])
        #expect(results[0]["doc"]?["n"] == 1)
        #expect(results[0]["deleted"] == nil)
        #expect(results[2]["deleted"] == true)
        #expect(results[2]["doc"]?["_deleted"] == true)
        await server.stop()
    }

    @Test("A longpoll feed waits for the next write, then answers with it")
    func longpollWakes() async throws {
        // Feeds start after an explicit seq (not `now`), so that a request reaching a busy server late still sees the write.
        let server = try await serverWithThreeDocuments()
        async let waiting = server.request("GET", "/db/_changes?feed=longpoll&since=3")
        try await Task.sleep(for: .milliseconds(300))
        _ = try await server.request("PUT", "/db/d", json: ["n": 4])
        let reply = try await waiting
        #expect(reply.status == 200)
        #expect(ids(reply) == ["d"])
        #expect(reply.json["last_seq"] == "4")
        // Changes already there answer at once.
        #expect(ids(try await server.request("GET", "/db/_changes?feed=longpoll&since=2")) == ["c", "d"])
        await server.stop()
    }

    @Test("A longpoll feed with a timeout and no write ends with no results")
    func longpollTimeout() async throws {
        let server = try await serverWithThreeDocuments()
        let started = ContinuousClock.now
        let reply = try await server.request("GET", "/db/_changes?feed=longpoll&since=now&timeout=200")
        #expect(ContinuousClock.now - started >= .milliseconds(190))
        #expect(ids(reply) == [])
        #expect(reply.json["last_seq"] == "3")
        await server.stop()
    }

    @Test("A continuous feed sends one line per change as writes come, and last_seq at the end")
    func continuousWakes() async throws {
        let server = try await serverWithThreeDocuments()
        async let feed = server.request("GET", "/db/_changes?feed=continuous&since=2&limit=3")
        try await Task.sleep(for: .milliseconds(300))
        _ = try await server.request("PUT", "/db/d", json: ["n": 4])
        try await Task.sleep(for: .milliseconds(100))
        _ = try await server.request("PUT", "/db/e", json: ["n": 5])
        let reply = try await feed
        let json = lines(reply)
        #expect(json.map { $0["id"] } == ["c", "d", "e", nil])
        #expect(json.last == ["last_seq": "5", "pending": 0])
        await server.stop()
    }

    /// Starts `settee serve` over `folder/data` on a free port, waits until it
    /// listens (30 s at most), and creates the database `db`: the child and its base URL.
    private static func serveInChildProcess(_ folder: URL) async throws -> (ChildProcess, String) {
        let child = try SetteeExecutable.find().start(["serve", "--data", folder.appendingPathComponent("data").path, "--port", "0"], in: folder)
        var base: String?
        for _ in 0..<600 where base == nil {
            try await Task.sleep(for: .milliseconds(50))
            let output = (try? String(contentsOf: child.output, encoding: .utf8)) ?? ""
            if let line = output.split(separator: "\n").first, let json = try? JSONValue(parsing: String(line)) {
                base = json["listening"]?.stringValue
            }
        }
        let url = try #require(base, "settee serve printed no address: \((try? String(contentsOf: child.output, encoding: .utf8)) ?? "")")
        var create = URLRequest(url: URL(string: url + "db")!)
        create.httpMethod = "PUT"
        _ = try await URLSession.shared.data(for: create)
        return (child, url)
    }

    @Test("Writes of another process wake a waiting feed")
    func otherProcessWakes() async throws {
        // The server runs as `settee serve`, a process of its own: in this one, the
        // whole suite's tests share two threads, and a busy suite kept the server
        // from answering for a minute.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settee-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let executable = try SetteeExecutable.find()
        let (child, url) = try await Self.serveInChildProcess(folder)
        defer { child.kill(SIGTERM) }
        var longpoll = URLRequest(url: URL(string: url + "db/_changes?feed=longpoll&since=now&timeout=60000")!)
        longpoll.timeoutInterval = 300
        let waiting = Task { try await URLSession.shared.data(for: longpoll) }
        try await Task.sleep(for: .milliseconds(500))
        let arguments = ["--db", folder.appendingPathComponent("data/db").path, "put", #"{"_id":"elsewhere"}"#]
        // The child is waited for on a thread of its own.
        let outcome = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try executable.run(arguments, in: folder) })
            }
        }
        #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
        let (body, _) = try await waiting.value
        let reply = try JSONValue(parsing: String(decoding: body, as: UTF8.self))
        #expect(reply["results"]?.arrayValue?.map { $0["id"] } == ["elsewhere"])
    }

    @Test("heartbeat sends a newline every N ms while a feed waits; a timeout without heartbeat ends a continuous feed")
    func heartbeat() async throws {
        let server = try await serverWithThreeDocuments()
        async let feed = server.request("GET", "/db/_changes?feed=continuous&since=3&heartbeat=100&limit=1")
        // Long enough for heartbeats even when the request and the timers run late on a busy machine:
        // the first newline says the feed waits, the next ones are heartbeats.
        try await Task.sleep(for: .milliseconds(2500))
        _ = try await server.request("PUT", "/db/d", json: ["n": 4])
        let reply = try await feed
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(text.hasPrefix("\n\n"), "\(text.prefix { $0 == "\n" }.count) newlines")
        #expect(lines(reply).map { $0["id"] } == ["d", nil])

        let ended = try await server.request("GET", "/db/_changes?feed=continuous&since=now&timeout=100")
        #expect(String(decoding: ended.body, as: UTF8.self) == "\n{\"last_seq\":\"4\",\"pending\":0}\n")

        let bad = try await server.request("GET", "/db/_changes?feed=continuous&heartbeat=-5")
        #expect(bad.json == ["error": "bad_request", "reason": "The heartbeat value should be a positive integer (in milliseconds)."])
        await server.stop()
    }

    @Test("An eventsource feed sends data: and id: lines")
    func eventSource() async throws {
        let server = try await serverWithThreeDocuments()
        let reply = try await server.request("GET", "/db/_changes?feed=eventsource&since=2&limit=1")
        #expect(reply.header("Content-Type") == "text/event-stream")
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(text.hasPrefix("data: {\"seq\":\"3\",\"id\":\"c\",\"changes\":[{\"rev\":"))
        #expect(text.hasSuffix("}]}\nid: \"3\"\n\n"))
        await server.stop()
    }

    @Test("seq_interval leaves seq null on the rows between")
    func sequenceInterval() async throws {
        let server = try await serverWithThreeDocuments()
        let reply = try await server.request("GET", "/db/_changes?seq_interval=2&limit=3")
        #expect(reply.json["results"]?.arrayValue?.map { $0["seq"] } == [.null, "2", .null])
        #expect(reply.json["last_seq"] == "3")
        await server.stop()
    }

    @Test("_doc_ids (query string or POST body), _design and _selector filters")
    func builtInFilters() async throws {
        let server = try await serverWithThreeDocuments()
        _ = try await server.request("PUT", "/db/_design/app", json: ["views": ["all": ["map": "function (doc) { emit(doc._id); }"]]])
        let byQuery = try await server.request("GET", "/db/_changes?filter=_doc_ids&doc_ids=%5B%22c%22,%22a%22%5D")
        #expect(ids(byQuery) == ["a", "c"])
        let byBody = try await server.request("POST", "/db/_changes?filter=_doc_ids", json: ["doc_ids": ["b"]])
        #expect(ids(byBody) == ["b"])
        #expect(ids(try await server.request("POST", "/db/_changes?filter=_doc_ids&since=1", json: ["doc_ids": ["a", "c", "zz"]])) == ["c"])
        // Looked up by id, then followed: a longpoll feed wakes for a named document only.
        async let named = server.request("POST", "/db/_changes?filter=_doc_ids&feed=longpoll&since=4", json: ["doc_ids": ["new"]])
        try await Task.sleep(for: .milliseconds(300))
        _ = try await server.request("PUT", "/db/other", json: [:])
        _ = try await server.request("PUT", "/db/new", json: [:])
        let woken = try await named
        #expect(ids(woken) == ["new"])
        #expect(woken.json["last_seq"] == "6")
        let notList = try await server.request("POST", "/db/_changes?filter=_doc_ids", json: ["doc_ids": "b"])
        #expect(notList.json == ["error": "bad_request", "reason": "`doc_ids` filter parameter is not a list of doc ids."])
        #expect(ids(try await server.request("GET", "/db/_changes?filter=_design")) == ["_design/app"])
        let selected = try await server.request("POST", "/db/_changes?filter=_selector&include_docs=true",
                                                json: ["selector": ["n": ["$gte": 2]], "fields": ["n"]])
        #expect(ids(selected) == ["b", "c"])
        #expect(selected.json["results"]?[0]?["doc"] == ["n": 2])
        let getSelector = try await server.request("GET", "/db/_changes?filter=_selector")
        #expect(getSelector.json == ["error": "bad_request", "reason": "Selector must be specified in POST payload"])
        let unknown = try await server.request("GET", "/db/_changes?filter=_nope")
        #expect(unknown.json == ["error": "bad_request", "reason": "unknown builtin filter name"])
        await server.stop()
    }

    @Test("filter=ddoc/name runs the design document's filter function with (doc, req); _view passes what the map emits for")
    func javaScriptFilters() async throws {
        let server = try await serverWithThreeDocuments()
        let design: JSONValue = [
            "filters": [
                "big": "function (doc, req) { return doc.n >= Number(req.query.min); }",
                "posted": "function (doc, req) { return req.method === 'POST' && req.body.only === doc._id; }",
            ],
            "views": ["odd": ["map": "function (doc) { if (doc.n % 2 === 1) emit(doc.n, null); }"]],
        ]
        _ = try await server.request("PUT", "/db/_design/app", json: design)
        #expect(ids(try await server.request("GET", "/db/_changes?filter=app/big&min=2")) == ["b", "c"])
        #expect(ids(try await server.request("POST", "/db/_changes?filter=app/posted", json: ["only": "a"])) == ["a"])
        #expect(ids(try await server.request("GET", "/db/_changes?filter=_view&view=app/odd")) == ["a", "c"])

        // A longpoll feed with a filter waits past the changes that do not pass.
        async let waiting = server.request("GET", "/db/_changes?feed=longpoll&since=4&filter=app/big&min=10")
        try await Task.sleep(for: .milliseconds(200))
        _ = try await server.request("PUT", "/db/small", json: ["n": 1])
        _ = try await server.request("PUT", "/db/large", json: ["n": 50])
        #expect(ids(try await waiting) == ["large"])
        await server.stop()
    }

    @Test("A missing filter, design document or view is CouchDB's error word for word")
    func filterErrors() async throws {
        let server = try await serverWithThreeDocuments()
        let noDesign = try await server.request("GET", "/db/_changes?filter=app/big")
        #expect(noDesign.status == 404)
        #expect(noDesign.json == ["error": "not_found", "reason": "missing"])
        _ = try await server.request("PUT", "/db/_design/app", json: ["views": ["v": ["map": "function (doc) {}"]]])
        let noFilters = try await server.request("GET", "/db/_changes?filter=app/big")
        #expect(noFilters.status == 404)
        #expect(noFilters.json == ["error": "not_found", "reason": "missing json key: filters"])
        let noView = try await server.request("GET", "/db/_changes?filter=_view&view=app/missing")
        #expect(noView.json == ["error": "not_found", "reason": "missing json key: missing"])
        let noViewName = try await server.request("GET", "/db/_changes?filter=_view")
        #expect(noViewName.json == ["error": "bad_request", "reason": "`view` filter parameter is not provided."])
        _ = try await server.request("PUT", "/db/_design/bad", json: ["filters": ["boom": "function (doc) { throw new Error('boom'); }"]])
        let throwing = try await server.request("GET", "/db/_changes?filter=bad/boom")
        #expect(throwing.status == 500)
        // The query server's ["error", e.name, e.message], as couchjs answers.
        #expect(throwing.json == ["error": "Error", "reason": "boom"])
        let badName = try await server.request("GET", "/db/_changes?filter=justone")
        #expect(badName.json == ["error": "bad_request", "reason": "`filter` must be of the form `designname/filtername`"])
        await server.stop()
    }

    @Test("SIGTERM stops `settee serve` while a continuous feed with a heartbeat waits")
    func gracefulShutdownEndsFeed() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("settee-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (child, url) = try await Self.serveInChildProcess(folder)
        let feed = Task { try? await URLSession.shared.data(from: URL(string: url + "db/_changes?feed=continuous&heartbeat=100")!) }
        try await Task.sleep(for: .milliseconds(400))
        child.kill(SIGTERM)
        let started = ContinuousClock.now
        let outcome = try await Task.detached { try child.wait() }.value
        #expect(outcome.exitStatus == 0, "\(outcome.standardError)")
        #expect(ContinuousClock.now - started < .seconds(10))
        let body = await feed.value.map { String(decoding: $0.0, as: UTF8.self) }
        #expect(body?.hasSuffix("{\"last_seq\":\"0\",\"pending\":0}\n") == true)
    }

    @Test("Stopping the server ends a feed that is waiting")
    func stopEndsFeed() async throws {
        let server = try await serverWithThreeDocuments()
        let feed = Task { try? await server.request("GET", "/db/_changes?feed=continuous&since=now&heartbeat=50") }
        try await Task.sleep(for: .milliseconds(300))
        let started = ContinuousClock.now
        await server.stop()
        _ = await feed.value
        #expect(ContinuousClock.now - started < .seconds(10))
    }
}
