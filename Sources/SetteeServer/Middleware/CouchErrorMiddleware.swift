import HTTPTypes
import Hummingbird
import Logging
import SetteeCore

/// Turns every error of the routes within into CouchDB's error body
/// (`{"error":…,"reason":…}` with its status; an unexpected one is a 500,
/// logged), and gives every answer what CouchDB's has: the `Server` and
/// `X-Couch-Request-ID` headers, no body for `HEAD`, and a closed
/// connection after `CONNECT`.
struct CouchErrorMiddleware<Context: CouchRequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            let couchError = CouchError(from: error)
            if couchError.status == .internalServerError {
                logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            }
            response = CouchResponse.error(couchError)
        }
        return Self.finish(response, for: request, context: context)
    }

    /// `response` with what every answer has: the `Server` and
    /// `X-Couch-Request-ID` headers, no body for `HEAD`, a connection closed after `CONNECT`.
    static func finish(_ response: Response, for request: Request, context: Context) -> Response {
        var response = response
        response.headers[.server] = CouchResponse.server
        response.headers[.couchRequestID] = Self.requestID(of: request)
        if request.method == .head { response = response.createHeadResponse() }
        if request.method == .connect, let channel = context.couch.channel {
            // The answer goes without a body length: close the connection once it is written.
            response.headers[.connection] = "close"
            channel.eventLoop.scheduleTask(in: .milliseconds(100)) { channel.close(promise: nil) }
        }
        return response
    }

    /// The request's id, as `chttpd:nonce/1` takes it: the client's
    /// `X-Couch-Request-ID` when it is at most 36 letters, digits, `-` and
    /// `_`, else ten new hex digits.
    static func requestID(of request: Request) -> String {
        if let given = request.headers[.couchRequestID], !given.isEmpty, given.utf8.count <= 36,
           given.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0)
                                   || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) {
            return given
        }
        return (0..<5).map { _ in UInt8.random(in: 0...255) }.hexString
    }
}

extension HTTPField.Name {
    /// CouchDB's request id header (`chttpd:nonce/1`).
    static let couchRequestID = HTTPField.Name("X-Couch-Request-ID")!
}
