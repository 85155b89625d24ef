import Hummingbird
import Logging

/// Turns every error of the routes within into CouchDB's error body
/// (`{"error":…,"reason":…}` with its status; an unexpected one is a 500,
/// logged), and gives every answer what CouchDB's has: the `Server` header,
/// no body for `HEAD`, and a closed connection after `CONNECT`.
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
        response.headers[.server] = CouchResponse.server
        if request.method == .head { response = response.createHeadResponse() }
        if request.method == .connect, let channel = context.couch.channel {
            // The answer goes without a body length: close the connection once it is written.
            response.headers[.connection] = "close"
            channel.eventLoop.scheduleTask(in: .milliseconds(100)) { channel.close(promise: nil) }
        }
        return response
    }
}
