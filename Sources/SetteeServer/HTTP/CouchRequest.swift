import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Settee
import SetteeCore

/// A request as the endpoints read it: the path's segments percent-decoded
/// one by one (so `%2F` stays inside a segment, as CouchDB reads `_design%2Ffoo`
/// and database names with `/`), the query parameters in order, and the body
/// read up to the server's limit.
struct CouchRequest: Sendable {
    var request: Request
    /// The path's segments, decoded: `/db/_design/foo` → `["db", "_design", "foo"]`.
    var segments: [String]
    /// The query parameters in order, decoded (`+` is a space).
    var parameters: [(name: String, value: String)]
    /// Who made the request.
    var user: UserContext
    /// How they were authenticated (`cookie`, `default`), `nil` when anonymous.
    var authenticatedBy: String?
    /// The client's address (`req.peer` in design functions).
    var peer = "127.0.0.1"
    /// The connection the request came on: a feed that waits ends when it closes.
    var connection: (any Channel)?
    /// The security object of the database requested (`req.secObj`), `{}` for server requests.
    var securityObject: JSONValue = [:]
    /// Whether the user administers the database requested (or the server, for server requests).
    var isDatabaseAdministrator = false
    let limits: ServerLimits
    /// Whether a `+` in the path is a space (`[chttpd] decode_plus_to_space`).
    let plusIsSpace: Bool

    init(_ request: Request, user: UserContext, limits: ServerLimits, plusIsSpace: Bool = false) throws(CouchError) {
        self.request = request
        self.user = user
        self.limits = limits
        self.plusIsSpace = plusIsSpace
        let path = request.uri.path
        var segments: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard let decoded = PercentDecoding.decode(raw, plusIsSpace: plusIsSpace) else {
                throw CouchError.badRequest("invalid URL encoding in \(path)")
            }
            segments.append(decoded)
        }
        self.segments = segments
        self.parameters = Self.parseQuery(request.uri.query ?? "")
    }

    var method: HTTPRequest.Method { request.method }

    /// A header's value.
    func header(_ name: HTTPField.Name) -> String? { request.headers[name] }

    /// Query parameters split as mochiweb splits them, on `&` and `;`.
    static func parseQuery(_ query: String) -> [(name: String, value: String)] {
        query.split(whereSeparator: { $0 == "&" || $0 == ";" }).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                PercentDecoding.decode(text, plusIsSpace: true) ?? text.replacingOccurrences(of: "+", with: " ")
            }
            return (decode(parts[0]), parts.count > 1 ? decode(parts[1]) : "")
        }
    }

    /// The last value of parameter `name`.
    func parameter(_ name: String) -> String? {
        parameters.last { $0.name == name }?.value
    }

    /// A boolean parameter (`true`/`false`), `defaultValue` when absent.
    func flag(_ name: String, default defaultValue: Bool = false) throws(CouchError) -> Bool {
        guard let value = parameter(name) else { return defaultValue }
        switch value.lowercased() {
        case "true": return true
        case "false": return false
        default: throw CouchError(.badRequest, "query_parse_error", "Invalid boolean parameter: \"\(value)\"")
        }
    }

    /// The body's bytes, refused past `max_http_request_size` or past
    /// `limit`, an endpoint's own bound, before more than that is read.
    mutating func bodyBytes(limit: Int? = nil) async throws -> [UInt8] {
        let tooLarge = CouchError(.contentTooLarge, "too_large", "the request entity is too large")
        let maximum = min(limit ?? Int.max, limits.maximumRequestBytes)
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximum { throw tooLarge }
        var bytes: [UInt8] = []
        for try await buffer in request.body {
            guard buffer.readableBytes <= maximum - bytes.count else { throw tooLarge }
            bytes += buffer.readableBytesView
        }
        // Kept, so that a request routed again (a rewrite) can read its body a second time.
        request.body = RequestBody(buffer: ByteBuffer(bytes: bytes))
        return bytes
    }

    /// The body as JSON; CouchDB's `bad_request` when it is not JSON.
    mutating func jsonBody(limit: Int? = nil) async throws -> JSONValue {
        let bytes = try await decodedBodyBytes(limit: limit)
        guard !bytes.isEmpty else { throw CouchError.badRequest("Request body must be a JSON object") }
        return try Self.json(bytes)
    }

    /// The body's bytes as `bodyBytes(limit:)` reads them, inflated first
    /// when sent with `Content-Encoding: gzip` (as CouchDB reads JSON bodies)
    /// and held to the same limit inflated; another encoding is 415.
    mutating func decodedBodyBytes(limit: Int? = nil) async throws -> [UInt8] {
        var bytes = try await bodyBytes(limit: limit)
        switch header(.contentEncoding)?.trimmingCharacters(in: .whitespaces).lowercased() ?? "identity" {
        case "identity", "":
            break
        case "gzip":
            do {
                bytes = try Gzip.decompress(bytes, limit: min(limit ?? Int.max, limits.maximumRequestBytes))
            } catch .tooLarge {
                throw CouchError(.contentTooLarge, "too_large", "the request entity is too large")
            } catch {
                throw CouchError.badRequest("Request body is not properly gzipped.")
            }
        case let other:
            throw CouchError(.unsupportedMediaType, "bad_content_type", "\(other) is not a supported content encoding.")
        }
        return bytes
    }

    /// `bytes` as JSON: CouchDB's `bad_request` "invalid UTF-8 JSON" when
    /// they are not JSON, or not UTF-8 (never repaired into U+FFFD).
    static func json(_ bytes: some Collection<UInt8>) throws(CouchError) -> JSONValue {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw CouchError.invalidJSON }
        do {
            return try JSONValue(parsing: text)
        } catch {
            throw CouchError.invalidJSON
        }
    }

    /// The body of a document write (`id`, when the path names it): refused
    /// with CouchDB's 413 `document_too_large` once it passes
    /// `max_document_size`, before more of it is read.
    mutating func documentBody(id: String?) async throws -> JSONValue {
        do {
            return try await jsonObjectBody(limit: limits.maximumDocumentBytes, otherwise: "Document must be a JSON object")
        } catch let error as CouchError where error.error == "too_large" {
            // Past max_http_request_size it is the request that is too large, as CouchDB says first.
            if let length = request.headers[.contentLength].flatMap(Int.init), length > limits.maximumRequestBytes { throw error }
            throw CouchError(.contentTooLarge, "document_too_large", id ?? "the document is larger than max_document_size")
        }
    }

    /// The body as a JSON object; `bad_request` with `reason` otherwise.
    mutating func jsonObjectBody(limit: Int? = nil, otherwise reason: String = "Request body must be a JSON object") async throws -> JSONValue {
        let body = try await jsonBody(limit: limit)
        guard case .object = body else { throw CouchError.badRequest(reason) }
        return body
    }
}

/// The server's limits on what a request may send.
public struct ServerLimits: Sendable {
    /// The largest request body (CouchDB's `max_http_request_size`, 4 GiB by default).
    public var maximumRequestBytes = 4_294_967_296
    /// The largest document (CouchDB's `max_document_size`, 8,000,000 bytes by default).
    public var maximumDocumentBytes = 8_000_000

    /// CouchDB's defaults.
    public init() {}
}
