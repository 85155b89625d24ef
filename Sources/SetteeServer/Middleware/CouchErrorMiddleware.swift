import HTTPTypes
import Hummingbird
import Logging
import SetteeCore

/// Turns every error of the routes within into CouchDB's error body
/// (`{"error":…,"reason":…}` with its status; an unexpected one is a 500,
/// logged), and gives every answer what CouchDB's has: the `Server` and
/// `X-Couch-Request-ID` headers, no body for `HEAD`, a closed connection
/// after `CONNECT`, and, served at the root, a `Location` that is an
/// absolute URL (``absoluteURL(_:for:config:)``).
struct CouchErrorMiddleware<Context: CouchRequestContext>: RouterMiddleware {
    let logger: Logger
    /// The configuration, for an API served at the root (its `Location`s are
    /// made absolute); nil when mounted, whose paths are the API's own.
    let config: ServerConfig?

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
        if let config, let location = response.headers[.location], location.hasPrefix("/") {
            response.headers[.location] = Self.absoluteURL(location, for: request, config: config)
        }
        return Self.finish(response, for: request, context: context)
    }

    /// `path` as an absolute URL, as `couch_httpd:absolute_uri/2` makes it:
    /// the host from the header `[chttpd] x_forwarded_host` names
    /// (`X-Forwarded-Host`), else the request's `Host`; `https` when `X-Forwarded-Ssl` is
    /// `on` or `X-Forwarded-Proto` says so (the headers `[chttpd]
    /// x_forwarded_ssl` and `x_forwarded_proto` name).
    static func absoluteURL(_ path: String, for request: Request, config: ServerConfig) -> String {
        func header(_ key: String, _ standard: String) -> String? {
            HTTPField.Name(config.value("chttpd", key) ?? standard).flatMap { request.headers[$0] }
        }
        guard let host = header("x_forwarded_host", "X-Forwarded-Host") ?? request.head.authority,
              !host.isEmpty, !host.contains(where: { $0 == "/" || $0 == "\\" || $0 == "@" || $0.isWhitespace }) else { return path }
        let secure = header("x_forwarded_ssl", "X-Forwarded-Ssl") == "on"
        let scheme = secure ? "https" : (header("x_forwarded_proto", "X-Forwarded-Proto").flatMap { $0 == "https" || $0 == "http" ? $0 : nil } ?? "http")
        return "\(scheme)://\(host)\(path)"
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
