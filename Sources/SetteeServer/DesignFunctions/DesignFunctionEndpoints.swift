import Foundation
import HTTPTypes
import Hummingbird
import Settee
import SetteeCore

/// `/{db}/_design/{ddoc}/_show`, `_list`, `_update` and `_rewrite`: design
/// functions run by the JavaScript engine with CouchDB's request object, their
/// answers turned into responses as `chttpd_show` and `chttpd_external` do.
extension CouchAPI {
    func designFunctionEndpoint(_ name: String, _ db: Database, designName: String, rest: [String],
                                _ request: inout CouchRequest) async throws -> Response {
        let id = "_design/" + designName
        guard let designDocument = try await db.document(id) else { throw CouchError.missing }
        let design = DesignFunctionCall(database: name, db: db, document: designDocument)
        switch rest[0] {
        case "_show":
            return try await show(design, rest: rest, &request)
        case "_list":
            return try await list(design, rest: rest, &request)
        case "_update":
            return try await update(design, rest: rest, &request)
        default:
            return try await rewrite(design, rest: rest, &request)
        }
    }

    // MARK: _show

    private func show(_ design: DesignFunctionCall, rest: [String], _ request: inout CouchRequest) async throws -> Response {
        guard rest.count >= 2 else { throw CouchError(.notFound, "show_error", "Invalid path.") }
        let function = rest[1]
        try design.requireFunction("shows", function)
        let documentID = rest.count > 2 ? rest.dropFirst(2).joined(separator: "/") : nil
        let document = try await documentID.asyncMap { try await design.db.document($0) } ?? nil
        let etag = Self.showETag(design.document, document, accept: request.header(.accept), roles: request.user.roles)
        if Self.etagMatches(request.header(.ifNoneMatch), etag) {
            return Response(status: .notModified, headers: [.eTag: etag])
        }
        let req = try await designRequestObject(&request, design, id: documentID)
        let answers = try await design.call(["shows", function], arguments: [document.map(Self.functionDocumentJSON) ?? .null, req])
        guard case .array(let parts)? = answers.last, parts.count == 2, parts[0] == "resp" else {
            throw Self.badAnswer(answers, from: "show")
        }
        return try Self.externalResponse(parts[1], headers: [("ETag", etag), ("Vary", "Accept")])
    }

    /// A show's `ETag`: the MD5, in hexadecimal, of what its answer depends on
    /// (the design document's and document's revisions, `Accept`, the user's
    /// roles), as `chttpd_show:show_etag`.
    static func showETag(_ design: Document, _ document: Document?, accept: String?, roles: [String]) -> String {
        let parts: JSONValue = [.string(design.revision.description), document.map { .string($0.revision.description) } ?? .null,
                                accept.map(JSONValue.string) ?? .null, .array(roles.map(JSONValue.string))]
        let bytes = Array(parts.jsonText.utf8)
        let digest = bytes.withUnsafeBytes { MD5.hash($0) }
        return "\"" + digest.map { String(format: "%02x", $0) }.joined() + "\""
    }

    // MARK: _update

    private func update(_ design: DesignFunctionCall, rest: [String], _ request: inout CouchRequest) async throws -> Response {
        guard rest.count >= 2 else { throw CouchError(.notFound, "update_error", "Invalid path.") }
        let function = rest[1]
        try design.requireFunction("updates", function)
        let documentID = rest.count > 2 ? rest.dropFirst(2).joined(separator: "/") : nil
        let document = try await documentID.asyncMap { try await design.db.document($0) } ?? nil
        let req = try await designRequestObject(&request, design, id: documentID)
        let answers = try await design.call(["updates", function], arguments: [document.map(Self.functionDocumentJSON) ?? .null, req])
        guard case .array(let parts)? = answers.last, parts.count == 3, parts[0] == "up" else {
            throw Self.badAnswer(answers, from: "update")
        }
        guard case .object(let members) = parts[1] else {
            return try Self.externalResponse(Self.withCode(200, parts[2]))
        }
        guard members.contains(where: { $0.key == "_id" && $0.value.stringValue?.isEmpty == false }) else {
            throw CouchError(.badRequest, "illegal_docid", "Document id must not be empty")
        }
        // `_revisions` came in with the document; the one revision kept is `_rev`.
        let updated = try await preparedForWrite(.object(members.filter { $0.key != "_revisions" }), database: design.database,
                                                 request: request)
        let written = try await design.db.put(updated.jsonText)
        return try Self.externalResponse(Self.withCode(201, parts[2]), headers: [
            ("X-Couch-Update-NewRev", written.revision.description),
            ("X-Couch-Id", Self.escapePath(written.id)),
        ])
    }

    /// `response` with `code` first (a code the function gave still wins), as `chttpd_show` sends it.
    static func withCode(_ code: Int, _ response: JSONValue) -> JSONValue {
        guard case .object(let members) = response else { return response }
        return .object([("code", .number(Double(code)))] + members)
    }

    // MARK: Responses

    /// A design function's response object (`code`, `headers`, `body`,
    /// `base64`, `json`) as an HTTP response, as `chttpd_external:send_external_response`;
    /// `headers` replace the function's of the same name.
    static func externalResponse(_ object: JSONValue, headers extra: [(String, String)] = [],
                                 defaultContentType: String = "application/json", csp: Bool = true) throws -> Response {
        guard case .object(let members) = object else {
            throw CouchError(.internalServerError, "external_response_error", "Invalid data from external server: \(object.jsonText)")
        }
        var code = 200
        var json: JSONValue?
        var data: [UInt8] = []
        var contentType = defaultContentType
        var headers: [(String, String)] = []
        for (key, value) in members {
            switch key {
            case "code":
                guard let number = value.doubleValue else { continue }
                // A final response's status: 1xx are interim, 600 and over no HTTP status at all.
                guard number.isFinite, number == number.rounded(), number >= 200, number < 600 else {
                    throw CouchError(.internalServerError, "external_response_error",
                                     "Invalid data from external server: code \(value.jsonText) is not an HTTP status from 200 to 599")
                }
                code = Int(number)
            case "stop":
                continue
            case "json":
                json = value
                contentType = "application/json"
            case "body":
                data = Array((value.stringValue ?? value.jsonText).utf8)
                contentType = "text/html; charset=utf-8"
            case "base64":
                data = Array(Data(base64Encoded: value.stringValue ?? "") ?? Data())
                contentType = "application/binary"
            case "headers":
                guard case .object(let fields) = value else { continue }
                headers = fields.map { ($0.key, $0.value.stringValue ?? $0.value.jsonText) }
            default:
                throw CouchError(.internalServerError, "external_response_error",
                                 "Invalid data from external server: {<<\"\(key)\">>,\(value.jsonText)}")
            }
        }
        for (name, value) in extra {
            headers.removeAll { $0.0.lowercased() == name.lowercased() }
            headers.append((name, value))
        }
        var fields = HTTPFields()
        if json == nil, csp { fields[.contentSecurityPolicy] = "sandbox" }
        if !headers.contains(where: { $0.0.lowercased() == "content-type" }) { fields[.contentType] = contentType }
        for (name, value) in headers {
            guard let field = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: field, value: value))
        }
        let status = HTTPResponse.Status(code: code)
        if let json {
            var response = CouchResponse.json(status, json)
            for field in fields where field.name != .contentType || headers.contains(where: { $0.0.lowercased() == "content-type" }) {
                response.headers[field.name] = field.value
            }
            return response
        }
        fields[.contentLength] = String(data.count)
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func badAnswer(_ answers: [JSONValue], from kind: String) -> CouchError {
        CouchError(.internalServerError, "unknown_error", "the \(kind) function's answer was not understood: \(JSONValue.array(answers).jsonText)")
    }

    /// A document's JSON.
    static func documentJSON(_ document: Document) -> JSONValue {
        (try? JSONValue(parsing: String(decoding: document.jsonBytes, as: UTF8.self))) ?? .null
    }

    /// A document as shows and updates receive it (`couch_query_servers:json_doc`):
    /// with `_revisions` before `_attachments`, of its one revision.
    static func functionDocumentJSON(_ document: Document) -> JSONValue {
        guard case .object(var members) = documentJSON(document) else { return .null }
        let text = document.revision.description
        let hash = text.firstIndex(of: "-").map { String(text[text.index(after: $0)...]) } ?? text
        let revisions: JSONValue = ["start": .number(Double(document.revision.generation)), "ids": [.string(hash)]]
        let position = members.firstIndex { $0.key == "_attachments" } ?? members.count
        members.insert(("_revisions", revisions), at: position)
        return .object(members)
    }

    // MARK: The request object

    /// CouchDB's request object (`chttpd_external:json_req_obj`): `info`,
    /// `uuid`, `id`, `method`, `requested_path`, `path`, `raw_path`, `query`,
    /// `headers` (without `Authorization` and `Cookie`, as CouchDB scrubs
    /// them), `body`, `peer`, `form`, `cookie`, `userCtx` and `secObj`.
    /// `body` is the request's, read here, unless given.
    func designRequestObject(_ request: inout CouchRequest, _ design: DesignFunctionCall, id: String?,
                             body given: [UInt8]? = nil, rewrite: Bool = false,
                             requestedPath: [String]? = nil) async throws -> JSONValue {
        var body: [UInt8]
        if let given { body = given } else { body = try await request.bodyBytes() }
        let bodyText = body.isEmpty && given == nil ? "undefined" : String(decoding: body, as: UTF8.self)
        var query: [(String, JSONValue)] = []
        for (name, value) in request.parameters {
            if ["startkey", "endkey", "key", "descending"].contains(name), let decoded = try? JSONValue(parsing: value) {
                query.append((name, decoded))
            } else {
                query.append((name, .string(value)))
            }
        }
        var headers: [(String, JSONValue)] = []
        if let host = request.request.head.authority { headers.append(("Host", .string(host))) }
        for field in request.request.headers where field.name != .authorization && field.name != .cookie {
            headers.append((field.name.rawName, .string(field.value)))
        }
        var form: [(String, JSONValue)] = []
        if let type = request.header(.contentType), type.hasPrefix("application/x-www-form-urlencoded"),
           request.method == .post || request.method == .put {
            form = CouchRequest.parseQuery(String(decoding: body, as: UTF8.self)).map { ($0.name, .string($0.value)) }
        }
        let path = JSONValue.array(request.segments.map(JSONValue.string))
        var rawPath = request.request.uri.path
        if let queryText = request.request.uri.query, !queryText.isEmpty { rawPath += "?" + queryText }
        var members: [(String, JSONValue)] = []
        if !rewrite { members.append(("info", try await databaseInfo(design.database))) }
        if !rewrite { members.append(("uuid", .string(Self.newUUID()))) }
        if !rewrite { members.append(("id", id.map(JSONValue.string) ?? .null)) }
        members += [
            ("method", .string(request.method.rawValue)),
            ("requested_path", (requestedPath ?? Rewriting.requestedPath).map { .array($0.map(JSONValue.string)) } ?? path),
            ("path", path),
            ("raw_path", .string(rawPath)),
            ("query", .object(query)),
            ("headers", .object(headers)),
            ("body", .string(bodyText)),
            ("peer", .string(request.peer)),
        ]
        if !rewrite { members.append(("form", .object(form))) }
        members += [
            ("cookie", [:]),
            ("userCtx", request.user.json(database: design.database)),
            ("secObj", request.securityObject),
        ]
        return .object(members)
    }
}

/// One design document whose functions a request runs.
struct DesignFunctionCall: Sendable {
    var database: String
    var db: Database
    var document: Document

    /// Runs `path` with `arguments` on the shared runner.
    func call(_ path: [String], arguments: JSONValue, input: [String] = []) async throws -> [JSONValue] {
        let key = "\(db.url.path)/\(document.id)@\(document.revision)"
        return try await DesignFunctionRunner.shared.call(key: key, tenant: db.url.path,
                                                          designDocument: String(decoding: document.jsonBytes, as: UTF8.self),
                                                          path: path, arguments: arguments, input: input)
    }

    /// Throws CouchDB's 404 when the design document has no `kind.name`
    /// (`couch_util:get_nested_json_value`'s words).
    func requireFunction(_ kind: String, _ name: String) throws(CouchError) {
        let json = CouchAPI.documentJSON(document)
        guard let functions = json[kind] else { throw CouchError(.notFound, "not_found", "missing json key: \(kind)") }
        guard case .object = functions else { throw CouchError(.notFound, "not_found", "json_mismatch") }
        guard functions[name] != nil else { throw CouchError(.notFound, "not_found", "missing json key: \(name)") }
    }
}

extension Optional {
    func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
