import Hummingbird

/// The CouchDB API as a Hummingbird responder (behind the middlewares that
/// authenticate the request, map errors and log).
struct CouchAPIResponder<Context: CouchRequestContext>: HTTPResponder {
    let api: CouchAPI
    /// Whether a router's catch-all route (`**`) calls it: the API's path
    /// is then what the catch-all matched, not the mount point before it.
    let isMounted: Bool

    func respond(to request: Request, context: Context) async throws -> Response {
        var mountDepth = 0
        if isMounted {
            let segments = request.uri.path.split(separator: "/", omittingEmptySubsequences: true).count
            mountDepth = max(0, segments - context.parameters.getCatchAll().count)
        }
        return try await api.respond(to: request, couch: context.couch, mountDepth: mountDepth)
    }
}
