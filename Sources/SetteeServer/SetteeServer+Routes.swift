public import Hummingbird
import HTTPTypes
public import ServiceLifecycle

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
        collection.add(middleware: RequestLogMiddleware<Context>(logger: logger))
        collection.add(middleware: JSONPMiddleware<Context>(config: config))
        collection.add(middleware: CouchErrorMiddleware<Context>(logger: logger, config: nil))
        collection.add(middleware: AuthenticationMiddleware<Context>(api: api))
        let responder = CouchAPIResponder<Context>(api: api, isMounted: true)
        for method in Self.routedMethods {
            _ = collection.on("", method: method, responder: responder)
            _ = collection.on("**", method: method, responder: responder)
        }
        return collection
    }

    /// The methods CouchDB's API answers (COPY among them) when mounted in a router.
    static let routedMethods: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .options, .patch, HTTPRequest.Method("COPY")!]

    /// What serves requests: the API behind its middlewares (request
    /// logging, JSONP, CouchDB's error bodies, authentication), every method on every path.
    func responder<Context: CouchRequestContext>(context: Context.Type) -> MiddlewareStack<Context> {
        MiddlewareStack(log: RequestLogMiddleware(logger: logger), jsonp: JSONPMiddleware(config: config), errors: CouchErrorMiddleware(logger: logger, config: config),
                        authentication: AuthenticationMiddleware(api: api), responder: CouchAPIResponder(api: api, isMounted: false))
    }

    /// The API's endpoints.
    var api: CouchAPI {
        CouchAPI(databases: databases, configuration: configuration, logger: logger, credentials: credentials, replications: replications,
                 config: config, uuids: uuids)
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
        // The folder is given up when the service ends, not when the last reference to the server goes.
        defer { folderLock.release() }
        defer { databases.closeAll() }
        defer { replications.stopAll() }
        let documents = replications.documents
        let scheduler = Task { await documents.follow() }
        defer { scheduler.cancel() }
        try? await gracefulShutdown()
    }
}

/// The API behind its middlewares, composed statically (no existential
/// per middleware and request): logging, then JSONP, then error bodies, then authentication.
struct MiddlewareStack<Context: CouchRequestContext>: HTTPResponder {
    let log: RequestLogMiddleware<Context>
    let jsonp: JSONPMiddleware<Context>
    let errors: CouchErrorMiddleware<Context>
    let authentication: AuthenticationMiddleware<Context>
    let responder: CouchAPIResponder<Context>

    func respond(to request: Request, context: Context) async throws -> Response {
        try await log.handle(request, context: context) { request, context in
            try await jsonp.handle(request, context: context) { request, context in
                try await errors.handle(request, context: context) { request, context in
                    try await authentication.handle(request, context: context) { request, context in
                        try await responder.respond(to: request, context: context)
                    }
                }
            }
        }
    }
}
