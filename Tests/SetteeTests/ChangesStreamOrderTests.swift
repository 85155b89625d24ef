import Foundation
import HTTPTypes
import Hummingbird
import Testing
import Settee
@testable import SetteeServer

/// Collects what a response body writes.
private struct CollectingWriter: ResponseBodyWriter {
    let collected = Collected()

    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var bytes: [UInt8] = []
        func append(_ buffer: ByteBuffer) { lock.withLock { bytes += buffer.readableBytesView } }
        var text: String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }
    }

    mutating func write(_ buffer: ByteBuffer) async throws { collected.append(buffer) }
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

@Suite("settee serve: the order of a changes feed's reads")
struct ChangesStreamOrderTests {
    /// A `_changes` request for `db`, as the router hands it over.
    private static func request(_ pathAndQuery: String) throws -> CouchRequest {
        let head = HTTPRequest(method: .get, scheme: "http", authority: "127.0.0.1", path: pathAndQuery)
        return try CouchRequest(Request(head: head, body: RequestBody(buffer: ByteBuffer())), user: UserContext(), limits: ServerLimits())
    }

    @Test("A write that commits between the feed's first read and the start of its response is in the response")
    func writeBetweenFirstReadAndResponse() async throws {
        let directory = TemporaryDirectory()
        var options = Database.Options()
        options.javaScriptWorkers = 1
        let db = try Database(at: directory.url.appendingPathComponent("db"), options: options)
        for id in ["a", "b", "c"] { try await db.put(#"{"_id": "\#(id)"}"#) }

        // A longpoll feed after the last change, with a short timeout: the test fails in 2 s, not 60.
        let request = try Self.request("/db/_changes?feed=longpoll&since=3&timeout=2000")
        let query = try ChangesQuery(request)
        let filter = try await ChangesFilter(query, request: request, body: nil, database: "db", db: db)
        let stream = ChangesStream(db: db, query: query, filter: filter, start: 3)
        // The endpoint reads the first batch before the response starts; a busy
        // server may start writing the response only after another request's write.
        let first = try await stream.firstBatch()
        try await db.put(#"{"_id": "d"}"#)
        var writer: any ResponseBodyWriter = CollectingWriter()
        let collected = (writer as! CollectingWriter).collected
        try await stream.write(to: &writer, first: first)

        let reply = try JSONValue(parsing: collected.text)
        #expect(reply["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ["d"])
        #expect(reply["last_seq"] == "4")
        db.close()
    }
}
