import Hummingbird

/// CouchDB's authentication handlers as middleware: finds who a request
/// speaks for (an `AuthSession` cookie, then HTTP Basic; see
/// ``CouchAPI/authenticate(_:peer:)``), keeps it in the context for the
/// routes within, and sends back a refreshed session cookie. Bad
/// credentials are a 401 before any route runs.
struct AuthenticationMiddleware<Context: CouchRequestContext>: RouterMiddleware {
    let api: CouchAPI

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let authentication = try await api.authenticate(request, peer: context.couch.peer)
        context.couch.authentication = authentication
        var response = try await next(request, context)
        if let cookie = authentication.refreshedCookie, response.headers[.setCookie] == nil { response.headers[.setCookie] = cookie }
        return response
    }
}
