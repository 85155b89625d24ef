import Foundation
import HTTPTypes
import Hummingbird
import Settee

/// Responses as CouchDB writes them: JSON bodies ending in a newline, with
/// `Content-Type: application/json` and `Cache-Control: must-revalidate`.
enum CouchResponse {
    static let server = "Settee/\(SetteeServer.version) (CouchDB 3.5 API)"

    /// A JSON response.
    static func json(_ status: HTTPResponse.Status, _ value: JSONValue, headers: HTTPFields = [:]) -> Response {
        json(status, text: value.jsonText, headers: headers)
    }

    /// A JSON response with status 200.
    static func json(_ value: JSONValue, headers: HTTPFields = [:]) -> Response {
        json(.ok, text: value.jsonText, headers: headers)
    }

    /// A response whose body is JSON text already written.
    static func json(_ status: HTTPResponse.Status = .ok, text: String, headers: HTTPFields = [:]) -> Response {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(text.utf8.count + 1)
        buffer.writeString(text)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return json(status, buffer: buffer, headers: headers)
    }

    /// A response whose body is JSON bytes already written.
    static func json(_ status: HTTPResponse.Status = .ok, buffer: ByteBuffer, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        if fields[.cacheControl] == nil { fields[.cacheControl] = "must-revalidate" }
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: buffer))
    }

    /// `{"ok": true}`.
    static func ok(_ status: HTTPResponse.Status = .ok) -> Response {
        json(status, ["ok": true])
    }

    /// An error in CouchDB's shape.
    static func error(_ error: CouchError) -> Response {
        // No `WWW-Authenticate` on a 401, as CouchDB's default (`[chttpd] WWW-Authenticate` unset).
        json(error.status, error.json)
    }

    /// An `ETag` value for a revision: the revision in double quotes.
    static func etag(_ revision: Revision) -> String { "\"\(revision)\"" }
}
