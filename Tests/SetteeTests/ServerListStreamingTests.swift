import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
import Settee
@testable import SetteeServer
import Synchronization

@Suite("settee serve: _list streams its output as the function produces it, as CouchDB does", .serialized)
struct ServerListStreamingTests {
    static let rowCount = 100_000

    static let design: JSONValue = [
        "views": [
            "n": ["map": "function (doc) { if (typeof doc.n == 'number') emit(doc.n, null); }"],
            "sum": ["map": "function (doc) { if (doc.kind) emit(doc.kind, doc.v); }", "reduce": "_sum"],
        ],
        "lists": [
            // A marker, then 400 bytes and more for each row: about 41 MB in all.
            "big": """
                function (head, req) {
                  start({headers: {'Content-Type': 'text/plain'}});
                  send('MARKER\\n');
                  var pad = new Array(401).join('x'), row, n = 0;
                  while ((row = getRow())) { send(row.key + pad + '\\n'); n++; }
                  return 'END ' + n + '\\n';
                }
                """,
            "fewRows": "function (head, req) { start({headers: {'Content-Type': 'text/plain'}}); send('first\\n'); getRow(); getRow(); return 'done'; }",
            "failsMidway": """
                function (head, req) {
                  start({headers: {'Content-Type': 'text/plain'}});
                  send('head\\n');
                  var row, n = 0;
                  while ((row = getRow())) { send(row.key + '\\n'); if (++n == 3) throw new Error('boom'); }
                }
                """,
            "failsFirstRow": "function (head, req) { start({code: 201, headers: {'Content-Type': 'text/plain'}}); getRow(); throw new Error('early'); }",
            "failsAfterRows": "function (head, req) { start({headers: {'Content-Type': 'text/plain'}}); while (getRow()) {} throw new Error('late'); }",
            "failsAtOnce": "function (head, req) { throw new Error('before rows'); }",
            "fatalMidway": "function (head, req) { send('a\\n'); getRow(); send('b\\n'); getRow(); throw ['fatal', 'gave_up', 'no more']; }",
            "rows": "function (head, req) { var row, out = []; while ((row = getRow())) { out.push(row); } return JSON.stringify({head: head, rows: out}); }",
        ],
        "shows": ["ping": "function (doc, req) { return 'pong'; }"],
    ]

    /// A server with `rows` documents `{"n": i}`, the design document
    /// `_design/app` and the index of its view `n` built.
    static func start(database: String, rows: Int) async throws -> RunningServer {
        let server = try await RunningServer()
        _ = try await server.request("PUT", "/\(database)")
        _ = try await server.request("PUT", "/\(database)/_design/app", json: design)
        var written = 0
        while written < rows {
            let batch = min(20_000, rows - written)
            let docs = (written ..< written + batch).map { i in JSONValue.object([("_id", .string(String(format: "r%06d", i))), ("n", .number(Double(i)))]) }
            let reply = try await server.request("POST", "/\(database)/_bulk_docs", json: ["docs": .array(docs)])
            #expect(reply.status == 201)
            written += batch
        }
        let built = try await server.request("GET", "/\(database)/_design/app/_view/n?limit=1")
        #expect(built.json["total_rows"] == .number(Double(rows)))
        return server
    }

    @Test("A list over 100,000 rows: the first text arrives while the function runs; a client that stops reading stops it, holding little")
    func streamsWithBackpressure() async throws {
        let database = "stream"
        let server = try await Self.start(database: database, rows: Self.rowCount)
        let client = try StreamingClient(port: server.port)
        client.send("GET /\(database)/_design/app/_list/big/n HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")

        // The marker the function sends before its first getRow() arrives while it has read few rows.
        let marker = await client.read(until: { Self.contains($0, "MARKER") }, timeout: 60)
        #expect(marker)
        let pipe = try #require(ListPipe.latest(database: database))
        let head = client.text
        #expect(head.hasPrefix("HTTP/1.1 200"))
        #expect(head.lowercased().contains("transfer-encoding: chunked"))
        #expect(head.lowercased().contains("content-type: text/plain"))
        #expect(!head.contains("END "))

        // Not read, the response waits: the function does not run to its end, and the
        // rows read ahead and text not yet written stay within the pipe's budgets.
        try await Task.sleep(for: .seconds(2))
        let stalled = pipe.statistics
        #expect(stalled.rowsHandedOver < Self.rowCount)
        try await Task.sleep(for: .seconds(1))
        #expect(pipe.statistics.rowsHandedOver == stalled.rowsHandedOver)
        #expect(stalled.peakBytes <= ListPipe.rowBudget + ListPipe.outputBudget + 4096)

        // Read, it goes on to the end: every row, then the function's tail and the last chunk.
        let ended = await client.read(until: { $0.count >= 7 && $0.suffix(7).elementsEqual("\r\n0\r\n\r\n".utf8) }, timeout: 300)
        #expect(ended)
        let body = try #require(StreamingClient.dechunk(client.text))
        let lines = body.split(separator: "\n", omittingEmptySubsequences: false)
        try #require(lines.count == Self.rowCount + 3, "the body ends: \(body.suffix(600)); the pipe: \(pipe.statistics)")
        #expect(lines.first == "MARKER")
        #expect(lines[1] == "0" + String(repeating: "x", count: 400))
        #expect(lines[Self.rowCount] == "\(Self.rowCount - 1)" + String(repeating: "x", count: 400))
        #expect(lines[Self.rowCount + 1] == "END \(Self.rowCount)")
        let final = pipe.statistics
        #expect(final.rowsHandedOver == Self.rowCount)
        #expect(final.peakBytes <= ListPipe.rowBudget + ListPipe.outputBudget + 4096)
        await server.stop()
    }

    @Test("A client that leaves mid-list ends it: the view read and the function stop, the workers are free again")
    func clientLeaves() async throws {
        let database = "leaving"
        let server = try await Self.start(database: database, rows: 20_000)
        for _ in 0 ..< 2 {
            let client = try StreamingClient(port: server.port)
            client.send("GET /\(database)/_design/app/_list/big/n HTTP/1.1\r\nHost: localhost\r\n\r\n")
            #expect(await client.read(until: { Self.contains($0, "MARKER") }, timeout: 60))
            weak let pipe = ListPipe.latest(database: database)
            #expect(pipe != nil)
            client.close()
            // Nothing holds the pipe once the function and the view read have ended.
            #expect(try await Self.eventually { pipe == nil })
        }
        // Lists side by side, on both workers, answer.
        let answered = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0 ..< 4 {
                group.addTask {
                    let reply = try await server.request("GET", "/\(database)/_design/app/_list/fewRows/n")
                    return String(decoding: reply.body, as: UTF8.self) == "first\ndone"
                }
            }
            var all = true
            for _ in 0 ..< 4 { all = try await group.next() == true && all }
            return all
        }
        #expect(answered)
        await server.stop()
    }

    @Test("Lists whose clients stopped reading, more than the list workers, do not hold up the next list: another worker starts for it, as CouchDB starts another couchjs")
    func stalledListsDoNotHoldOthers() async throws {
        let database = "stalled"
        let server = try await Self.start(database: database, rows: 20_000)
        var stalled: [StreamingClient] = []
        for number in 0 ..< DesignFunctionRunner.lists.steadyWorkers + 1 {
            let client = try StreamingClient(port: server.port)
            client.send("GET /\(database)/_design/app/_list/big/n HTTP/1.1\r\nHost: localhost\r\n\r\n")
            // Each list starts at once, though every steady worker runs a list whose client reads nothing.
            #expect(await client.read(until: { Self.contains($0, "MARKER") }, timeout: 20), "list \(number + 1) started")
            stalled.append(client)
        }
        let other = try StreamingClient(port: server.port)
        other.send("GET /\(database)/_design/app/_list/fewRows/n HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        #expect(await other.read(until: { Self.contains($0, "done") }, timeout: 20), "the next list answered")
        #expect(DesignFunctionRunner.lists.extraWorkersRunning > 0)
        // Their clients gone, the lists end, and so do the workers started for them.
        for client in stalled { client.close() }
        #expect(try await Self.eventually { DesignFunctionRunner.lists.extraWorkersRunning == 0 })
        await server.stop()
    }

    @Test("Stopping the server ends a list whose client stopped reading")
    func shutdownEndsStalledList() async throws {
        let database = "stopping"
        let server = try await Self.start(database: database, rows: 20_000)
        let client = try StreamingClient(port: server.port)
        client.send("GET /\(database)/_design/app/_list/big/n HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(await client.read(until: { Self.contains($0, "MARKER") }, timeout: 60))
        try await Task.sleep(for: .milliseconds(500))
        let stopped = Mutex(false)
        Task {
            await server.stop()
            stopped.withLock { $0 = true }
        }
        for _ in 0 ..< 300 where !stopped.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(100)) }
        #expect(stopped.withLock { $0 })
        #expect(!client.text.contains("END "))
    }

    @Test("A list that stops asking for rows ends with them unread")
    func stopsEarly() async throws {
        let server = try await Self.start(database: "early", rows: 20_000)
        let reply = try await server.request("GET", "/early/_design/app/_list/fewRows/n")
        #expect(reply.status == 200)
        #expect(String(decoding: reply.body, as: UTF8.self) == "first\ndone")
        // The view read stopped: nothing holds the list's pipe any more.
        #expect(try await Self.eventually(tries: 100) { ListPipe.latest(database: "early") == nil })
        await server.stop()
    }

    @Test("An error after the list's text began ends the response with CouchDB's chunked error; before its first row it is the usual error")
    func errors() async throws {
        let server = try await Self.start(database: "errors", rows: 10)
        let midway = try await server.request("GET", "/errors/_design/app/_list/failsMidway/n")
        #expect(midway.status == 200)
        #expect(midway.header("Content-Type") == "text/plain")
        let text = String(decoding: midway.body, as: UTF8.self)
        // What the function sent after its last getRow() is lost with it, as in CouchDB.
        #expect(text.hasPrefix("head\n0\n1\n\n{\"code\":500,\"error\":\"render_error\",\"reason\":\"function raised error: Error: boom"))
        #expect(text.hasSuffix("}\n"))
        let error = JSONValue.parsingOrNull(text.dropFirst("head\n0\n1\n".count))
        #expect(error["code"] == 500)
        #expect(error["error"] == "render_error")

        // After the first getRow(), nothing sent: the error's status, the list's headers, the chunked error.
        let firstRow = try await server.request("GET", "/errors/_design/app/_list/failsFirstRow/n")
        #expect(firstRow.status == 500)
        #expect(firstRow.header("Content-Type") == "text/plain")
        let firstText = String(decoding: firstRow.body, as: UTF8.self)
        #expect(firstText.hasPrefix("\n{\"code\":500,\"error\":\"render_error\",\"reason\":\"function raised error: Error: early"))

        // Before any row: the error's status and JSON, as a show's.
        let atOnce = try await server.request("GET", "/errors/_design/app/_list/failsAtOnce/n")
        #expect(atOnce.status == 500)
        #expect(atOnce.json["error"] == "render_error")
        #expect(atOnce.json["reason"]?.stringValue?.hasPrefix("function raised error: Error: before rows") == true)

        // After the rows ended, nothing sent: the usual error too (CouchDB's list_cb(complete) does not catch it).
        let afterRows = try await server.request("GET", "/errors/_design/app/_list/failsAfterRows/n")
        #expect(afterRows.status == 500)
        #expect(afterRows.json["error"] == "render_error")
        #expect(afterRows.json["reason"]?.stringValue?.hasPrefix("function raised error: Error: late") == true)

        // A fatal error mid-list: appended, and the next call gets a new query server.
        let fatal = try await server.request("GET", "/errors/_design/app/_list/fatalMidway/n")
        #expect(fatal.status == 200)
        #expect(String(decoding: fatal.body, as: UTF8.self) == "a\nb\n\n{\"code\":500,\"error\":\"gave_up\",\"reason\":\"no more\"}\n")
        for _ in 0 ..< 3 {
            let ping = try await server.request("GET", "/errors/_design/app/_show/ping")
            #expect(String(decoding: ping.body, as: UTF8.self) == "pong")
        }

        // A bad view option is the view's error, before anything runs.
        let badOption = try await server.request("GET", "/errors/_design/app/_list/big/n?limit=nope")
        #expect(badOption.status == 400)
        #expect(badOption.json["error"] == "query_parse_error")
        let missingView = try await server.request("GET", "/errors/_design/app/_list/big/nothing")
        #expect(missingView.status == 404)
        await server.stop()
    }

    @Test("A list gets a reduce view's rows, include_docs' documents and _all_docs' rows, with their heads")
    func rowKinds() async throws {
        let server = try await Self.start(database: "kinds", rows: 3)
        _ = try await server.request("PUT", "/kinds/a", json: ["kind": "x", "v": 2])
        _ = try await server.request("PUT", "/kinds/b", json: ["kind": "x", "v": 3])
        _ = try await server.request("PUT", "/kinds/c", json: ["kind": "y", "v": 5])

        let reduced = try await server.request("GET", "/kinds/_design/app/_list/rows/sum?group=true")
        #expect(reduced.status == 200)
        #expect(reduced.json == ["head": [:], "rows": [["key": "x", "value": 5], ["key": "y", "value": 5]]])

        let docs = try await server.request("GET", "/kinds/_design/app/_list/rows/n?include_docs=true&limit=1&skip=1")
        #expect(docs.json["head"] == ["total_rows": 3, "offset": 1])
        #expect(docs.json["rows"]?[0]?["doc"]?["_id"] == "r000001")
        #expect(docs.json["rows"]?[0]?["doc"]?["n"] == 1)

        let allDocs = try await server.request("GET", "/kinds/_design/app/_list/rows/_all_docs?limit=2")
        #expect(allDocs.json["head"] == ["total_rows": 7, "offset": 0])
        #expect(allDocs.json["rows"]?[0]?["id"] == "_design/app")
        #expect(allDocs.json["rows"]?[1]?["id"] == "a")
        await server.stop()
    }
}

extension ServerListStreamingTests {
    /// Whether `condition` holds within `tries` checks 100 ms apart.
    static func eventually(tries: Int = 200, _ condition: () -> Bool) async throws -> Bool {
        for _ in 0 ..< tries {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return condition()
    }

    static func contains(_ bytes: [UInt8], _ text: String) -> Bool {
        bytes.firstRange(of: Array(text.utf8)) != nil
    }
}

extension JSONValue {
    fileprivate static func parsingOrNull(_ text: Substring) -> JSONValue {
        (try? JSONValue(parsing: String(text))) ?? .null
    }
}

/// An HTTP/1.1 client over a socket that reads only when told to, so that a
/// test sees a response as it arrives, and can stop reading it.
private final class StreamingClient: @unchecked Sendable {
    private let socket: Int32
    private let received = NSLock()
    private var bytes: [UInt8] = []

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { Glibc.close(socket); throw POSIXError(.ECONNREFUSED) }
    }

    deinit { Glibc.close(socket) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    func close() {
        shutdown(socket, Int32(SHUT_RDWR))
    }

    /// Everything received so far, as text.
    var text: String {
        received.lock()
        defer { received.unlock() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads, on a thread of its own, until `done` holds for the bytes
    /// received so far (true), or the connection closes or `timeout` seconds pass (false).
    func read(until test: @escaping @Sendable ([UInt8]) -> Bool, timeout: Double) async -> Bool {
        let done: @Sendable () -> Bool = { [self] in
            received.lock()
            defer { received.unlock() }
            return test(bytes)
        }
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in
                let deadline = Date().addingTimeInterval(timeout)
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                while true {
                    if done() { return continuation.resume(returning: true) }
                    let left = deadline.timeIntervalSinceNow
                    if left <= 0 { return continuation.resume(returning: false) }
                    var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                    guard poll(&descriptor, 1, Int32(min(left, 1) * 1000) + 1) > 0 else { continue }
                    let count = recv(socket, &buffer, buffer.count, 0)
                    if count <= 0 { return continuation.resume(returning: done()) }
                    received.lock()
                    bytes += buffer[0 ..< count]
                    received.unlock()
                }
            }
        }
    }

    /// The body of a chunked HTTP response (its head included in `response`); nil when malformed.
    static func dechunk(_ response: String) -> String? {
        guard let split = response.range(of: "\r\n\r\n") else { return nil }
        var rest = Substring(response[split.upperBound...]).utf8
        var body: [UInt8] = []
        while true {
            guard let lineEnd = rest.firstRange(of: "\r\n".utf8) else { return nil }
            guard let size = Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self), radix: 16) else { return nil }
            rest = rest[lineEnd.upperBound...]
            if size == 0 { return String(decoding: body, as: UTF8.self) }
            guard rest.count >= size + 2 else { return nil }
            body += rest.prefix(size)
            rest = rest.dropFirst(size + 2)
        }
    }
}
