import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import Settee

/// `/{db}/_design/{ddoc}/_list/{list}/{view}` (and `…/{list}/{other ddoc}/{view}`,
/// `…/_all_docs`): a list function run over a view's rows, its output
/// streamed as CouchDB's `couch_mrview_show` streams it.
///
/// The view is read as the function asks for rows (``ListPipe``), on its
/// JavaScript worker's thread. The response starts with the first text the
/// function sends (its `start()` headers and code with it) or at its end;
/// each later batch of text (what it sent between two `getRow()` calls) is
/// a chunk of a chunked response. An error of the function before it asked
/// for a row (or after its rows ended, nothing sent) answers with the error's
/// status and JSON; otherwise CouchDB's `send_chunked_error`:
/// `\n{"code":…,"error":…,"reason":…}\n` after what was sent (with the
/// error's status, when nothing was).
extension CouchAPI {
    func list(_ design: DesignFunctionCall, rest: [String], _ request: inout CouchRequest) async throws -> Response {
        try allow(request, "GET,POST,HEAD")
        guard rest.count == 3 || rest.count == 4 else { throw CouchError(.notFound, "list_error", "Invalid path.") }
        let function = rest[1]
        try design.requireFunction("lists", function)
        let viewDesign = rest.count == 4 ? rest[2] : String(design.document.id.dropFirst("_design/".count))
        let view = rest[rest.count - 1]
        var body: JSONValue?
        if request.method == .post {
            // couch_httpd:validate_ctype
            guard request.header(.contentType)?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) == "application/json" else {
                throw CouchError(.unsupportedMediaType, "bad_content_type", "Content-Type must be application/json")
            }
            body = try await request.jsonObjectBody()
        }
        let options = try Self.viewOptions(request.parameters, body: body)
        let pipe = ListPipe(database: design.database)
        Self.readRows(design.db, view == "_all_docs" ? nil : "\(viewDesign)/\(view)", options: options, into: pipe)
        let started: ListStart
        do {
            let head = try await Self.listHead(pipe.header())
            let req = try await designRequestObject(&request, design, id: nil, body: body.map { Array($0.jsonText.utf8) })
            Task {
                do {
                    pipe.finish(.success(try await design.stream(["lists", function], arguments: [head, req], pipe: pipe)))
                } catch {
                    pipe.finish(.failure(error))
                }
            }
            started = try await Self.listStart(pipe)
        } catch {
            pipe.close(because: "the list did not start: \(error)")
            throw error
        }
        if let connection = request.connection { ConnectionWatch.whenClientGone(connection) { [weak pipe] in pipe?.close(because: "the client went") } }
        return try Self.listResponse(started, pipe: pipe, connection: request.connection)
    }

    /// Reads the rows of `view` (`DDOC/VIEW`; nil: `_all_docs`) into `pipe`,
    /// each as the line `["list_row", ROW]`, on a task of its own.
    private static func readRows(_ db: Database, _ view: String?, options: ViewQueryOptions, into pipe: ListPipe) {
        Task {
            let header: @Sendable (ViewResultHeader) -> Void = { pipe.deliver(header: $0) }
            let row: @Sendable (ViewRow) throws -> Void = { row in
                var line = Array(#"["list_row","#.utf8)
                row.writeJSON(into: &line)
                line.append(UInt8(ascii: "]"))
                try pipe.put(rowLine: line)
            }
            do {
                if let view {
                    try await db.forEachRow(view, options: options, header: header, row)
                } else {
                    try await db.forEachDocumentRow(options: options, header: header, row)
                }
                pipe.endRows(error: nil)
            } catch {
                pipe.endRows(error: error)
            }
        }
    }

    /// The list function's `head`: the view result's members but its rows.
    private static func listHead(_ header: ViewResultHeader) throws -> JSONValue {
        var bytes: [UInt8] = []
        header.writeJSONOpening(into: &bytes)
        ViewResultHeader.writeJSONClosing(into: &bytes)
        guard case .object(let members) = try JSONValue(parsing: String(decoding: bytes, as: UTF8.self)) else { return [:] }
        return .object(members.filter { $0.key != "rows" })
    }

    /// How a list's response begins: what it answered until its first text
    /// (or its end, or an error after it asked for a row).
    private struct ListStart {
        /// The response object of `start()` (code, headers), as last given.
        var response: JSONValue = [:]
        /// Whether the function asked for a row (answered `["start", …]`).
        var askedForRows = false
        /// Text to send first.
        var text = ""
        /// The list ended (`["end", …]`).
        var ended = false
        /// The error that ended it.
        var error: CouchError?
    }

    /// Reads the function's answers until its response can start.
    ///
    /// - Throws: Its error, when it failed before asking for a row.
    private static func listStart(_ pipe: ListPipe) async throws -> ListStart {
        var start = ListStart()
        while start.text.isEmpty, !start.ended, start.error == nil {
            guard let event = await pipe.next() else { throw CancellationError() }
            switch event {
            case .answer(let answer):
                guard case .array(let parts) = answer, let kind = parts.first?.stringValue else { continue }
                switch kind {
                case "start", "chunks", "end":
                    start.text += listText(parts)
                    if parts.count > 2 { start.response = parts[2] }
                    if kind == "start" { start.askedForRows = true }
                    if kind == "end" { start.ended = true }
                case "error" where parts.count == 3:
                    start.error = DesignFunctionRunner.error(type: parts[1], reason: parts[2])
                default:
                    continue
                }
            case .finished(let result):
                start.error = listFailure(result)
            }
            // Before the function asked for a row, or after its rows ended with
            // nothing sent (CouchDB's list_cb(complete) lets the error through): the usual error.
            if let error = start.error, !start.askedForRows || pipe.functionSawEnd { throw error }
        }
        if start.ended, let error = pipe.readError {
            start.ended = false
            start.error = CouchError(from: error)
        }
        return start
    }

    /// The response: `start`'s status and headers, its text, then the
    /// function's further text as it comes.
    private static func listResponse(_ start: ListStart, pipe: ListPipe, connection: (any Channel)?) throws -> Response {
        var response = try externalResponse(start.response, defaultContentType: "application/json", csp: false)
        response.headers[.contentLength] = nil
        if let error = start.error, start.text.isEmpty {
            response.status = error.status
        }
        let closer = PipeCloser(pipe)
        response.body = ResponseBody { writer in
            defer { closer.close() }
            // A graceful shutdown waits for the requests under way: a list ends then, its
            // connection closed so that a write waiting for a client that stopped reading ends too.
            try await withGracefulShutdownHandler {
                try await writeRest(start, pipe: pipe, to: &writer)
            } onGracefulShutdown: {
                pipe.close(because: "the server is shutting down")
                connection?.close(promise: nil)
            }
        }
        return response
    }

    /// Writes what follows `start`: the function's text as it comes, then
    /// the end of the response (with the error that ended the list, if one did).
    private static func writeRest(_ start: ListStart, pipe: ListPipe, to writer: inout any ResponseBodyWriter) async throws {
        if !start.text.isEmpty { try await writer.write(ByteBuffer(string: start.text)) }
        var error = start.error
        var ended = start.ended
        // What the function sent while the last write went out leaves in one chunk.
        var buffer = ByteBuffer()
        while !ended, error == nil {
            let event: ListPipe.Event
            if let ready = pipe.ready() {
                event = ready
            } else {
                if buffer.readableBytes > 0 {
                    try await writer.write(buffer)
                    buffer = ByteBuffer()
                }
                guard let next = await pipe.next() else { throw CancellationError() }
                event = next
            }
            switch event {
            case .answer(let answer):
                guard case .array(let parts) = answer, let kind = parts.first?.stringValue else { continue }
                switch kind {
                case "chunks", "end":
                    buffer.writeString(listText(parts))
                    if buffer.readableBytes >= 1 << 16 {
                        try await writer.write(buffer)
                        buffer = ByteBuffer()
                    }
                    ended = kind == "end"
                case "error" where parts.count == 3:
                    error = DesignFunctionRunner.error(type: parts[1], reason: parts[2])
                default:
                    continue
                }
            case .finished(let result):
                error = listFailure(result)
            }
            if ended, let readError = pipe.readError { error = CouchError(from: readError) }
        }
        if let error { buffer.writeString(chunkedError(error)) }
        if buffer.readableBytes > 0 { try await writer.write(buffer) }
        try await writer.finish(nil)
    }

    /// The text of a `start`, `chunks` or `end` answer.
    private static func listText(_ parts: [JSONValue]) -> String {
        guard parts.count > 1, case .array(let chunks) = parts[1] else { return "" }
        var text = ""
        for chunk in chunks { text += chunk.stringValue ?? chunk.jsonText }
        return text
    }

    /// The error of a call that ended without its list's end.
    private static func listFailure(_ result: Result<[JSONValue], any Error>) -> CouchError {
        switch result {
        case .success(let answers): badAnswer(answers, from: "list")
        case .failure(let error): CouchError(from: error)
        }
    }

    /// An error after a list's response began, as CouchDB's `chttpd:send_chunked_error` writes it.
    static func chunkedError(_ error: CouchError) -> String {
        let json: JSONValue = .object([("code", .number(Double(error.status.code))), ("error", .string(error.error)),
                                       ("reason", .string(error.reason))])
        return "\n" + json.jsonText + "\n"
    }
}

/// Closes a list's pipe when its response body ends, or is dropped unwritten.
private final class PipeCloser: Sendable {
    let pipe: ListPipe

    init(_ pipe: ListPipe) {
        self.pipe = pipe
    }

    deinit { pipe.close(because: "the response was released unwritten") }

    func close() { pipe.close(because: "the response ended") }
}

extension DesignFunctionCall {
    /// Runs `path` with `arguments` on the shared runner, its rows read from
    /// `pipe` and its answers written there as they come (a streamed list).
    func stream(_ path: [String], arguments: JSONValue, pipe: ListPipe) async throws -> [JSONValue] {
        let key = "\(db.url.path)/\(document.id)@\(document.revision)"
        return try await DesignFunctionRunner.lists.call(key: key, designDocument: String(decoding: document.jsonBytes, as: UTF8.self),
                                                          path: path, arguments: arguments, pipe: pipe)
    }
}
