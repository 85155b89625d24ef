import HTTPTypes
import Hummingbird
import NIOCore

/// JSONP, when `[chttpd] allow_jsonp` is `true`: a JSON answer to a request
/// with `?callback=NAME` goes as `/* CouchDB */NAME(…);`, typed
/// `application/javascript`, streamed answers (views, `_changes`) and error
/// bodies included, as CouchDB's `chttpd` sends it. A name of other
/// characters than letters, digits, `_`, `.`, `[` and `]` is refused (400
/// `invalid_callback`). Off (CouchDB's default), `callback` is ignored.
struct JSONPMiddleware<Context: CouchRequestContext>: RouterMiddleware {
    let config: ServerConfig

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method != .head, config.value("chttpd", "allow_jsonp") == "true", let callback = request.uri.queryParameters["callback"].map(String.init) else {
            return try await next(request, context)
        }
        guard !callback.isEmpty, callback.utf8.allSatisfy(Self.isCallbackByte) else {
            return CouchErrorMiddleware<Context>.finish(CouchResponse.error(CouchError.badRequest("invalid_callback")), for: request, context: context)
        }
        var response = try await next(request, context)
        guard response.headers[.contentType]?.hasPrefix("application/json") == true else { return response }
        response.headers[.contentType] = "application/javascript"
        response.headers[.contentLength] = nil
        let body = response.body
        let prefix = ByteBuffer(string: "/* CouchDB */\(callback)(")
        response.body = ResponseBody { writer in
            try await writer.write(prefix)
            try await body.write(ClosingWriter(base: writer))
        }
        return response
    }

    private static func isCallbackByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "["), UInt8(ascii: "]"):
            true
        default:
            false
        }
    }

    /// Passes a body through, then closes the call (`);`) before it finishes.
    private struct ClosingWriter: ResponseBodyWriter {
        var base: any ResponseBodyWriter

        mutating func write(_ buffer: ByteBuffer) async throws {
            try await base.write(buffer)
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
            try await base.write(ByteBuffer(string: ");"))
            try await base.finish(trailingHeaders)
        }
    }
}
