import Hummingbird
import HTTPTypes
import ServiceLifecycle

/// CouchDB's API mounted in a Hummingbird application of one's own.
extension SetteeServer {
    /// CouchDB's API as a route collection, to mount next to an
    /// application's own routes; run ``backgroundService()`` in the same
    /// service group.
    ///
    /// Every method on every path under the mount point is the API's:
    /// authentication (a session cookie, HTTP Basic), the authorization gate
    /// every request passes, CouchDB's error bodies and request logging come
    /// with it as middleware.
    ///
    /// ```swift
    /// let settee = try SetteeServer(configuration: .init(dataDirectory: folder))
    /// let router = Router(context: AppContext.self)   // AppContext: CouchRequestContext
    /// router.get("/health") { _, _ in "ok" }
    /// router.addRoutes(settee.routes(context: AppContext.self), atPath: "/couch")
    /// let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 8080)),
    ///                       services: [try settee.backgroundService()])
    /// try await app.runService()
    /// ```
    ///
    /// Paths are the API's below the mount point (`/couch/db/doc` is
    /// document `doc` of database `db`); the `Location` headers and
    /// rewrites of the API name paths from the API's root.
    public func routes<Context: CouchRequestContext>(context: Context.Type = Context.self) -> RouteCollection<Context> {
        let collection = RouteCollection(context: Context.self)
        for middleware in middlewares(context: Context.self) { collection.add(middleware: middleware) }
        let responder = CouchAPIResponder<Context>(api: api, isMounted: true)
        for method in Self.routedMethods {
            collection.on("", method: method, responder: responder)
            collection.on("**", method: method, responder: responder)
        }
        return collection
    }

    /// The methods CouchDB's API answers (COPY among them) when mounted in a router.
    static let routedMethods: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .options, .patch, HTTPRequest.Method("COPY")!]

    /// The middlewares in front of the API, outermost first: request
    /// logging, CouchDB's error bodies, authentication.
    func middlewares<Context: CouchRequestContext>(context: Context.Type) -> [any MiddlewareProtocol<Request, Response, Context>] {
        [RequestLogMiddleware<Context>(logger: logger), CouchErrorMiddleware<Context>(logger: logger), AuthenticationMiddleware<Context>(api: api)]
    }

    /// What serves requests: the API behind its middlewares, every method on every path.
    func responder<Context: CouchRequestContext>(context: Context.Type) -> MiddlewareStack<Context> {
        MiddlewareStack(middlewares: middlewares(context: Context.self), responder: CouchAPIResponder<Context>(api: api, isMounted: false))
    }

    /// The API's endpoints.
    var api: CouchAPI {
        CouchAPI(databases: databases, configuration: configuration, logger: logger, credentials: credentials, replications: replications)
    }

    /// What runs beside the API while it serves: the `_replicator`
    /// database's replications. When the service group shuts down, it stops
    /// them and closes the databases (after the application, when it comes
    /// before it in the group's services).
    ///
    /// - Throws: `data_folder_in_use` when another server (in this process
    ///   or another) serves the same data folder; the folder stays this
    ///   server's while the service lives.
    public func backgroundService() throws -> some Service {
        BackgroundService(folderLock: try DataFolderLock(folder: configuration.dataDirectory), databases: databases,
                          replications: replications)
    }
}

/// ``SetteeServer/backgroundService()``.
private struct BackgroundService: Service {
    let folderLock: DataFolderLock
    let databases: DatabaseFolder
    let replications: ServerReplications

    func run() async throws {
        defer { databases.closeAll() }
        defer { replications.stopAll() }
        let documents = replications.documents
        let scheduler = Task { await documents.follow() }
        defer { scheduler.cancel() }
        try? await gracefulShutdown()
        withExtendedLifetime(folderLock) {}
    }
}

/// A responder behind middlewares, the first outermost.
struct MiddlewareStack<Context: CouchRequestContext>: HTTPResponder {
    let middlewares: [any MiddlewareProtocol<Request, Response, Context>]
    let responder: CouchAPIResponder<Context>

    func respond(to request: Request, context: Context) async throws -> Response {
        try await respond(to: request, context: context, from: 0)
    }

    private func respond(to request: Request, context: Context, from index: Int) async throws -> Response {
        guard index < middlewares.count else { return try await responder.respond(to: request, context: context) }
        return try await middlewares[index].handle(request, context: context) { request, context in
            try await respond(to: request, context: context, from: index + 1)
        }
    }
}
