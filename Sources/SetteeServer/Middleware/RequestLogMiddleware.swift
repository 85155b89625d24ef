import Hummingbird
import Logging
import Foundation

/// Logs each request once answered: method, URI, status and time taken
/// (at `info`, the level `settee serve --verbose` shows).
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - started
        logger.info("\(request.method) \(request.uri) \(response.status.code) \(elapsed.formatted(.units(allowed: [.milliseconds, .microseconds], width: .narrow)))")
        return response
    }
}
